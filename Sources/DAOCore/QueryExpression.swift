import Foundation

/// An engine-neutral form of the part of a Foundation `Predicate` that an engine
/// can run itself: comparisons of declared fields with constants, joined by
/// `&&`, `||` and `!`.
///
/// The SQLite adapter compiles it into a `WHERE` clause with bound parameters;
/// the LMDB and file adapters read its top-level equalities to pick a key range
/// or an index. Build one with ``QueryExpression/translate(_:)``.
///
/// Semantics follow Swift, not SQL: `.compare(f, .equal, .null)` is true when
/// the optional field `f` is `nil`, and `==` / `!=` on optional fields are
/// null-safe (SQL `IS` / `IS NOT`), so `!(bio == "x")` holds for a `nil` bio.
public indirect enum QueryExpression: Sendable, Hashable {
    /// Always true or always false.
    case constant(Bool)
    /// A `Bool` field used as the condition itself (`$0.isRead`).
    case isTrue(field: String)
    /// `field <op> value`; `==` and `!=` are null-safe.
    case compare(field: String, Comparison, StoredValue)
    /// The text field contains `substring` (case- and diacritic-sensitive).
    case contains(field: String, substring: String)
    /// The text field starts with `prefix` (case- and diacritic-sensitive).
    case hasPrefix(field: String, prefix: String)
    /// The field equals one of `values` (`[1, 2].contains($0.id)`).
    case isIn(field: String, values: [StoredValue])
    /// Both hold.
    case and(QueryExpression, QueryExpression)
    /// Either holds.
    case or(QueryExpression, QueryExpression)
    /// The expression does not hold.
    case not(QueryExpression)

    /// A comparison operator.
    public enum Comparison: String, Sendable, Hashable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="

        /// The operator with its operands swapped (`a < b` is `b > a`).
        public var flipped: Comparison {
            switch self {
            case .equal, .notEqual: self
            case .less: .greater
            case .lessOrEqual: .greaterOrEqual
            case .greater: .less
            case .greaterOrEqual: .lessOrEqual
            }
        }
    }

    /// The result of translating a predicate.
    public struct Translation: Sendable, Hashable {
        init(_ partial: PartialTranslation) {
            switch partial {
            case .exact(let expression): self.init(expression: expression, isExact: true)
            case .superset(let expression): self.init(expression: expression, isExact: false)
            case .none: self.init(expression: .constant(true), isExact: false)
            }
        }

        init(expression: QueryExpression, isExact: Bool) {
            self.expression = expression
            self.isExact = isExact
        }

        /// The condition an engine can run.
        public let expression: QueryExpression
        /// `true` when `expression` holds exactly for the records the predicate
        /// accepts; `false` when it holds for a superset of them, so the engine
        /// must still evaluate the predicate on each candidate (and apply a limit
        /// only after that).
        public let isExact: Bool
    }

    /// The condition that evaluates `predicate` with the library's semantics:
    /// every translatable part (see ``translate(_:)``) by the library, the rest
    /// by Foundation.
    public static func condition<R: Record>(_ predicate: Predicate<R>) -> RecordCondition<R> {
        analyze(predicate).condition
    }

    /// ``translate(_:)`` and ``condition(_:)`` in one walk of the predicate.
    public static func analyze<R: Record>(_ predicate: Predicate<R>) -> (translation: Translation, condition: RecordCondition<R>) {
        if let call = PreparedCondition<R>.call(of: predicate) {
            // A prepared predicate: its own expression, with the call's values.
            let context = call.context(record: predicate.variable)
            let expression = call.prepared.expression
            let analysis = context.analyze(expression)
            let condition = analysis.condition
                ?? .opaque(OpaqueCondition(expression: expression, variable: predicate.variable, call: call))
            return (Translation(analysis.translation), condition)
        }
        let context = TranslationContext<R>(predicate.variable)
        let analysis = context.analyze(predicate.expression)
        let condition = analysis.condition
            ?? .opaque(OpaqueCondition(expression: predicate.expression, variable: predicate.variable))
        return (Translation(analysis.translation), condition)
    }

    /// Translates the parts of `predicate` that name declared fields of `R`.
    ///
    /// A part it cannot translate (a computed property, a method call, an
    /// optional chain) makes the result inexact: under `&&` the rest still
    /// narrows the candidates; under `||` or `!` the whole branch is dropped. A
    /// predicate with nothing translatable gives `.constant(true)`, inexact.
    public static func translate<R: Record>(_ predicate: Predicate<R>) -> Translation {
        if let call = PreparedCondition<R>.call(of: predicate) {
            return Translation(call.context(record: predicate.variable).translate(call.prepared.expression))
        }
        return Translation(TranslationContext<R>(predicate.variable).translate(predicate.expression))
    }

    /// The `field == value` conditions that must all hold for the expression to
    /// hold (its top-level conjunction of equalities), for picking a key range
    /// or an index.
    public var requiredEqualities: [(field: String, value: StoredValue)] {
        switch self {
        case .compare(let field, .equal, let value): [(field, value)]
        case .isTrue(let field): [(field, .integer(1))]
        case .not(.isTrue(let field)): [(field, .integer(0))]
        case .and(let lhs, let rhs): lhs.requiredEqualities + rhs.requiredEqualities
        default: []
        }
    }

    /// The names of the fields the expression reads.
    public var fieldNames: Set<String> {
        switch self {
        case .constant: []
        case .isTrue(let field), .compare(let field, _, _), .contains(let field, _),
            .hasPrefix(let field, _), .isIn(let field, _):
            [field]
        case .and(let lhs, let rhs), .or(let lhs, let rhs): lhs.fieldNames.union(rhs.fieldNames)
        case .not(let wrapped): wrapped.fieldNames
        }
    }
}

// MARK: - Walking the predicate's expression tree

enum PartialTranslation {
    case exact(QueryExpression)
    case superset(QueryExpression)
    case none

    var expression: QueryExpression? {
        switch self {
        case .exact(let expression), .superset(let expression): expression
        case .none: nil
        }
    }
}

struct TranslationContext<R: Record> {
    let variable: PredicateExpressions.VariableID
    let input: PredicateExpressions.Variable<R>
    /// The call of a prepared predicate being translated: the values of its
    /// parameter variables, which stand where constants may.
    let call: PreparedCall<R>?

    init(_ input: PredicateExpressions.Variable<R>) {
        self.input = input
        self.variable = input.key
        call = nil
    }

    /// The context of a prepared predicate, whose record variable is `key`
    /// (`input` only names the record for Foundation's evaluation of opaque
    /// parts, which the call binds itself).
    init(_ input: PredicateExpressions.Variable<R>, key: PredicateExpressions.VariableID, call: PreparedCall<R>) {
        self.input = input
        variable = key
        self.call = call
    }

    func translate<E>(_ expression: E) -> PartialTranslation {
        guard let node = expression as? any TranslatableExpression else { return .none }
        return node.translate(in: self)
    }

    /// The declared field a key-path operand reads, if the operand is a key path
    /// on the predicate's own input.
    func field<E>(_ operand: E) -> Field<R>? {
        guard let keyPath = operand as? any KeyPathOperand else { return nil }
        return field(keyPath)
    }

    func field(_ keyPath: some KeyPathOperand) -> Field<R>? {
        guard keyPath.variableKey == variable else { return nil }
        return R.entity.field(for: keyPath.anyKeyPath)
    }

    /// The constant a value operand holds, in stored form.
    func value<E>(_ operand: E) -> StoredValue? {
        if let constant = operand as? any ValueOperand { return constant.storedValue }
        guard let call, let variable = operand as? any VariableOperand else { return nil }
        return call.value(of: variable.key)
    }

    func comparison<Left, Right>(_ lhs: Left, _ rhs: Right, _ op: QueryExpression.Comparison) -> PartialTranslation {
        if let field = field(lhs), let value = value(rhs) {
            return Self.compare(field.name, op, value)
        }
        if let value = value(lhs), let field = field(rhs) {
            return Self.compare(field.name, op.flipped, value)
        }
        return .none
    }

    /// `field <op> value`, with the constants no engine stores decided here: a
    /// comparison with NaN is false (`!=` true), as in Swift; `-0.0` is `0.0`,
    /// which it equals.
    static func compare(_ field: String, _ op: QueryExpression.Comparison, _ value: StoredValue) -> PartialTranslation {
        if case .real(let real) = value {
            if real.isNaN { return .exact(.constant(op == .notEqual)) }
            if real == 0 { return .exact(.compare(field: field, op, .real(0))) }
        }
        return .exact(.compare(field: field, op, value))
    }

    /// What an engine can run of `expression` and the condition that evaluates
    /// it with the library's semantics (`nil` when a part cannot be evaluated
    /// at all), in one walk.
    func analyze<E>(_ expression: E) -> Analysis<R> {
        if let logical = expression as? any LogicalExpression {
            return logical.analyze(in: self)
        }
        let translation = translate(expression)
        if case .exact(let translated) = translation, let condition = RecordCondition<R>.compile(translated) {
            return Analysis(translation: translation, condition: condition)
        }
        if let pair = expression as? any FieldPairExpression, let condition = pair.fieldCondition(in: self) {
            return Analysis(translation: translation, condition: condition)
        }
        guard let standard = expression as? any StandardPredicateExpression<Bool> else {
            return Analysis(translation: translation, condition: nil)
        }
        return Analysis(
            translation: translation, condition: .opaque(OpaqueCondition(expression: standard, variable: input, call: call)))
    }

    /// `lhs <op> rhs` for two declared fields of one type, else `nil`.
    func fieldComparison<Left, Right>(_ lhs: Left, _ rhs: Right, _ op: QueryExpression.Comparison) -> RecordCondition<R>? {
        guard let left = field(lhs), let right = field(rhs), left.type == right.type else { return nil }
        if op != .equal && op != .notEqual && (left.isOptional || right.isOptional) { return nil }
        return .compareFields(left, op, right)
    }
}

/// A part of a predicate analyzed: what an engine can run, and its condition.
struct Analysis<R: Record> {
    var translation: PartialTranslation
    var condition: RecordCondition<R>?
}

/// `&&`, `||` and `!`: analyzed from their operands.
protocol LogicalExpression {
    func analyze<R>(in context: TranslationContext<R>) -> Analysis<R>
}

extension PredicateExpressions.Conjunction: LogicalExpression {
    func analyze<R>(in context: TranslationContext<R>) -> Analysis<R> {
        let lhs = context.analyze(lhs)
        let rhs = context.analyze(rhs)
        var condition: RecordCondition<R>?
        if let left = lhs.condition, let right = rhs.condition { condition = .and(left, right) }
        return Analysis(translation: .conjunction(lhs.translation, rhs.translation), condition: condition)
    }
}

extension PredicateExpressions.Disjunction: LogicalExpression {
    func analyze<R>(in context: TranslationContext<R>) -> Analysis<R> {
        let lhs = context.analyze(lhs)
        let rhs = context.analyze(rhs)
        var condition: RecordCondition<R>?
        if let left = lhs.condition, let right = rhs.condition { condition = .or(left, right) }
        return Analysis(translation: .disjunction(lhs.translation, rhs.translation), condition: condition)
    }
}

extension PredicateExpressions.Negation: LogicalExpression {
    func analyze<R>(in context: TranslationContext<R>) -> Analysis<R> {
        let wrapped = context.analyze(wrapped)
        return Analysis(translation: .negation(wrapped.translation), condition: wrapped.condition.map { .not($0) })
    }
}

/// A comparison whose operands may both be declared fields.
protocol FieldPairExpression {
    func fieldCondition<R>(in context: TranslationContext<R>) -> RecordCondition<R>?
}

extension PredicateExpressions.Equal: FieldPairExpression {
    func fieldCondition<R>(in context: TranslationContext<R>) -> RecordCondition<R>? {
        context.fieldComparison(lhs, rhs, .equal)
    }
}

extension PredicateExpressions.NotEqual: FieldPairExpression {
    func fieldCondition<R>(in context: TranslationContext<R>) -> RecordCondition<R>? {
        context.fieldComparison(lhs, rhs, .notEqual)
    }
}

extension PredicateExpressions.Comparison: FieldPairExpression {
    func fieldCondition<R>(in context: TranslationContext<R>) -> RecordCondition<R>? {
        let comparison: QueryExpression.Comparison =
            switch op {
            case .lessThan: .less
            case .lessThanOrEqual: .lessOrEqual
            case .greaterThan: .greater
            case .greaterThanOrEqual: .greaterOrEqual
            }
        return context.fieldComparison(lhs, rhs, comparison)
    }
}

protocol TranslatableExpression {
    func translate<R>(in context: TranslationContext<R>) -> PartialTranslation
}

protocol KeyPathOperand {
    var variableKey: PredicateExpressions.VariableID? { get }
    var anyKeyPath: AnyKeyPath { get }
    /// ``variableKey`` and ``anyKeyPath`` for operands of this type, with the
    /// root's conformance looked up once (`nil`: the root is no variable).
    static func keyPathReader() -> KeyPathReader<Self>?
}

protocol ValueOperand {
    var storedValue: StoredValue? { get }
    /// ``storedValue`` for operands of this type, conformances looked up once.
    static func constantReader() -> (Self) -> StoredValue?
}

private protocol OptionalValue {
    var isNil: Bool { get }
}

extension Optional: OptionalValue {
    fileprivate var isNil: Bool { self == nil }
}

/// `value` in stored form, `.null` for a `nil` optional, `nil` when it is not a
/// field value at all.
func storedValue<V>(of value: V) -> StoredValue? {
    if let value = value as? any FieldValue { return value.storedValue }
    if let optional = value as? any OptionalValue, optional.isNil { return .null }
    return nil
}

extension PredicateExpressions.KeyPath: KeyPathOperand {
    var variableKey: PredicateExpressions.VariableID? {
        (root as? any VariableOperand)?.key
    }
    var anyKeyPath: AnyKeyPath { keyPath }

    static func keyPathReader() -> KeyPathReader<Self>? {
        guard let variable = Root.self as? any VariableOperand.Type else { return nil }
        return keyPathReader(variable)
    }

    private static func keyPathReader<V: VariableOperand>(_ variable: V.Type) -> KeyPathReader<Self> {
        // `V` is `Root`, found by the cast above.
        { operand, key in
            unsafeBitCast(operand.root, to: V.self).key == key ? KeyPathKey(operand.keyPath) : nil
        }
    }
}

protocol VariableOperand {
    var key: PredicateExpressions.VariableID { get }
}

extension PredicateExpressions.Variable: VariableOperand {}

extension PredicateExpressions.Value: ValueOperand {
    var storedValue: StoredValue? { DAOCore.storedValue(of: value) }

    static func constantReader() -> (Self) -> StoredValue? {
        let stored = ShapeReaders.storedValue(of: Output.self)
        return { operand in stored(operand.value) }
    }
}

extension PredicateExpressions.NilLiteral: ValueOperand {
    var storedValue: StoredValue? { .null }

    static func constantReader() -> (Self) -> StoredValue? { { _ in .null } }
}

extension PredicateExpressions.Value: TranslatableExpression {
    func translate<R>(in context: TranslationContext<R>) -> PartialTranslation {
        guard let constant = value as? Bool else { return .none }
        return .exact(.constant(constant))
    }
}

extension PredicateExpressions.Variable: TranslatableExpression {
    /// A `Bool` parameter of a prepared predicate used as a condition: the
    /// constant it holds in this call.
    func translate<R>(in context: TranslationContext<R>) -> PartialTranslation {
        guard Output.self == Bool.self, case .integer(let value)? = context.call?.value(of: key) else { return .none }
        return .exact(.constant(value != 0))
    }
}

extension PredicateExpressions.KeyPath: TranslatableExpression {
    func translate<R>(in context: TranslationContext<R>) -> PartialTranslation {
        guard let field = context.field(self), field.type == .bool, !field.isOptional else { return .none }
        return .exact(.isTrue(field: field.name))
    }
}

extension PartialTranslation {
    /// `a && b`: exact when both are; otherwise what is translated still narrows.
    static func conjunction(_ a: PartialTranslation, _ b: PartialTranslation) -> PartialTranslation {
        switch (a, b) {
        case let (.exact(a), .exact(b)): .exact(.and(a, b))
        case let (.exact(a), .superset(b)), let (.superset(a), .exact(b)), let (.superset(a), .superset(b)):
            .superset(.and(a, b))
        case let (.exact(a), .none), let (.superset(a), .none), let (.none, .exact(a)), let (.none, .superset(a)):
            .superset(a)
        case (.none, .none): .none
        }
    }

    /// `a || b`: nothing narrows unless both sides are translated.
    static func disjunction(_ a: PartialTranslation, _ b: PartialTranslation) -> PartialTranslation {
        switch (a, b) {
        case let (.exact(a), .exact(b)): .exact(.or(a, b))
        case let (.exact(a), .superset(b)), let (.superset(a), .exact(b)), let (.superset(a), .superset(b)):
            .superset(.or(a, b))
        default: .none
        }
    }

    /// `!a`: only an exact translation can be negated.
    static func negation(_ a: PartialTranslation) -> PartialTranslation {
        guard case .exact(let wrapped) = a else { return .none }
        return .exact(.not(wrapped))
    }
}

extension PredicateExpressions.Conjunction: TranslatableExpression {
    func translate<R>(in context: TranslationContext<R>) -> PartialTranslation {
        .conjunction(context.translate(lhs), context.translate(rhs))
    }
}

extension PredicateExpressions.Disjunction: TranslatableExpression {
    func translate<R>(in context: TranslationContext<R>) -> PartialTranslation {
        .disjunction(context.translate(lhs), context.translate(rhs))
    }
}

extension PredicateExpressions.Negation: TranslatableExpression {
    func translate<R>(in context: TranslationContext<R>) -> PartialTranslation {
        .negation(context.translate(wrapped))
    }
}

extension PredicateExpressions.Equal: TranslatableExpression {
    func translate<R>(in context: TranslationContext<R>) -> PartialTranslation {
        context.comparison(lhs, rhs, .equal)
    }
}

extension PredicateExpressions.NotEqual: TranslatableExpression {
    func translate<R>(in context: TranslationContext<R>) -> PartialTranslation {
        context.comparison(lhs, rhs, .notEqual)
    }
}

extension PredicateExpressions.Comparison: TranslatableExpression {
    func translate<R>(in context: TranslationContext<R>) -> PartialTranslation {
        let comparison: QueryExpression.Comparison =
            switch op {
            case .lessThan: .less
            case .lessThanOrEqual: .lessOrEqual
            case .greaterThan: .greater
            case .greaterThanOrEqual: .greaterOrEqual
            }
        return context.comparison(lhs, rhs, comparison)
    }
}

extension PredicateExpressions.CollectionContainsCollection: TranslatableExpression {
    func translate<R>(in context: TranslationContext<R>) -> PartialTranslation {
        guard let field = context.field(base), field.type == .text, !field.isOptional,
            case .text(let substring)? = context.value(other)
        else { return .none }
        return .exact(.contains(field: field.name, substring: substring))
    }
}

extension PredicateExpressions.SequenceStartsWith: TranslatableExpression {
    func translate<R>(in context: TranslationContext<R>) -> PartialTranslation {
        guard let field = context.field(base), field.type == .text, !field.isOptional,
            case .text(let prefix)? = context.value(self.prefix)
        else { return .none }
        return .exact(.hasPrefix(field: field.name, prefix: prefix))
    }
}

extension PredicateExpressions.SequenceContains: TranslatableExpression {
    func translate<R>(in context: TranslationContext<R>) -> PartialTranslation {
        guard let field = context.field(element),
            let constant = sequence as? any SequenceValueOperand,
            let values = constant.storedValues
        else { return .none }
        var normalized: [StoredValue] = []
        normalized.reserveCapacity(values.count)
        for value in values {
            // NaN equals nothing; -0.0 equals 0.0 (see `TranslationContext.compare`).
            if case .real(let real) = value {
                if real.isNaN { continue }
                if real == 0 {
                    normalized.append(.real(0))
                    continue
                }
            }
            normalized.append(value)
        }
        return .exact(.isIn(field: field.name, values: normalized))
    }
}

protocol SequenceValueOperand {
    var storedValues: [StoredValue]? { get }
    /// ``storedValues`` for operands of this type, conformances looked up once.
    static func constantsReader() -> (Self) -> [StoredValue]?
}

extension PredicateExpressions.Value: SequenceValueOperand where Output: Sequence {
    static func constantsReader() -> (Self) -> [StoredValue]? {
        let stored = ShapeReaders.storedValue(of: Output.Element.self)
        return { operand in
            var values: [StoredValue] = []
            for element in operand.value {
                guard let value = stored(element) else { return nil }
                values.append(value)
            }
            return values
        }
    }

    var storedValues: [StoredValue]? {
        var values: [StoredValue] = []
        for element in value {
            guard let stored = DAOCore.storedValue(of: element) else { return nil }
            values.append(stored)
        }
        return values
    }
}
