import Foundation
import Synchronization

/// A query plan with its constants left open: binding a query's constants
/// gives the plan ``QueryPlan/init(fresh:parts:)`` would make for it.
///
/// Adapters keep what they derive from a plan's shape (SQL text) in
/// `memo(_:)`.
public final class PlanTemplate<R: Record>: Sendable {
    let expression: ExpressionTemplate<R>?
    let slotCount: Int
    let parts: QueryPlanParts
    /// The access path's choice: which required equalities bind it, in
    /// terms that do not depend on the record type (``AccessValues``).
    let access: AccessValues
    let accessIsExact: Bool
    /// The required equalities the access path does not bind, when the
    /// predicate is exactly a conjunction of equalities on distinct fields
    /// (``QueryPlan/equalities(besides:)``), each with the field it is
    /// checked on; `nil` otherwise (or when the access path is exact).
    let otherEqualities: [OtherEquality]?
    package let sort: SortPlan<R>
    /// The fields of `otherEqualities`, in the order of a bound call's
    /// ``BoundPlan/otherEqualities``; `nil` when the template has none.
    /// An adapter resolves them once per template.
    public var otherEqualityFields: [String]? { otherEqualities?.map(\.field) }
    /// Made with room for one memo: the first dictionary storage of its type
    /// in a process instantiates the type's metadata, whose check of the
    /// key's `Hashable` conformance scans every conformance record (about
    /// 560k instructions, once). Templates are made when a query is prepared
    /// or first planned, so that is paid there and not in an adapter's first
    /// `memo(_:_:)`.
    private let memos = BargingMutex<[ObjectIdentifier: AnyObject & Sendable]>(Dictionary(minimumCapacity: 1))
    /// The first memo made (a retained ``MemoEntry``'s address; 0: none yet),
    /// read without the lock, which cost a call about 500 instructions: set
    /// once, under the lock, and released with the template.
    private let firstMemo = Atomic<UInt>(0)
    /// Whether the last call that chose the direction of its candidates
    /// found them in the order asked for when read in descending key order
    /// (``QueryPlan/prefersDescendingCandidates``).
    let descendingCandidates = Atomic<Bool>(false)
    /// The classes a call bound from this template makes, kept as values:
    /// made from a metatype at hand, an instance of a generic class needs no
    /// look-up of its metadata, which code not specialized for the record
    /// type (the core's, an adapter's) did for every call (about 350
    /// instructions each).
    let boundPlanType: BoundPlan<R>.Type = BoundPlan<R>.self
    let boundConditionType: BoundCondition<R>.Type = BoundCondition<R>.self

    /// The template of `fresh`, or `nil` when its predicate does not translate
    /// exactly or the template does not reproduce `fresh` for its own constants.
    init?(_ fresh: QueryPlan<R>, shape: PredicateShape?, constants: [StoredValue], parts: QueryPlanParts) {
        self.parts = parts
        sort = fresh.sort
        accessIsExact = fresh.accessIsExact
        guard let shape else {
            guard fresh.query.predicate == nil else { return nil }
            expression = nil
            slotCount = 0
            access = .all
            otherEqualities = nil
            return
        }
        guard fresh.conditionIsExact, let engineCondition = fresh.engineCondition,
            !(fresh.condition?.hasOpaqueParts ?? false)
        else { return nil }
        var slot = 0
        guard let expression = ExpressionTemplate<R>(shape, entity: R.entity, slot: &slot), slot == constants.count
        else { return nil }
        self.expression = expression
        slotCount = slot
        // The template must give the fresh plan back for the constants it was made from.
        guard let bound = expression.instantiate(constants, condition: false), bound.expression == engineCondition
        else { return nil }
        if parts.contains(.accessPath) {
            let equalities = expression.requiredEqualities
            let values = equalities.map { (field: $0.field.name, value: $0.value(in: constants)) }
            let translated = engineCondition.requiredEqualities
            guard values.count == translated.count,
                zip(values, translated).allSatisfy({ $0.field == $1.field && $0.value == $1.value })
            else { return nil }
            let (choice, _) = QueryPlan<R>.chooseAccess(values)
            access = AccessValues(choice, equalities: equalities)
            guard access.instantiate(constants) == fresh.access else { return nil }
            otherEqualities = Self.otherEqualities(fresh, choice: choice, equalities: equalities, constants: constants)
        } else {
            access = .all
            otherEqualities = nil
        }
    }

    /// The equalities of `fresh` that `choice` does not bind, as template
    /// values, when the predicate is exactly a conjunction of equalities and
    /// they give `fresh`'s own values back for its constants; else `nil`.
    private static func otherEqualities(
        _ fresh: QueryPlan<R>, choice: QueryPlan<R>.AccessChoice, equalities: [EqualityTemplate<R>],
        constants: [StoredValue]
    ) -> [OtherEquality]? {
        guard !fresh.accessIsExact else { return nil }
        let bound = choice.fieldNames
        guard let others = fresh.equalities(besides: bound), !others.isEmpty else { return nil }
        let kept = equalities.filter { !bound.contains($0.field.name) }.map { equality in
            OtherEquality(
                field: equality.field.name,
                value: AccessValue(source: equality.source, type: equality.field.type, optional: equality.field.isOptional))
        }
        guard kept.count == others.count,
            zip(kept, others).allSatisfy({ kept, other in
                kept.field == other.field.name && kept.value.value({ constants[$0] }) == other.value
            })
        else { return nil }
        return kept
    }

    /// The plan of `query`, whose predicate has this template's shape and
    /// these constants; `nil` if a constant does not fit after all.
    func bind(_ query: Query<R>, _ constants: [StoredValue]) -> QueryPlan<R>? {
        guard constants.count == slotCount else { return nil }
        guard let expression else {
            return QueryPlan(
                query: query, access: .all, engineCondition: nil, conditionIsExact: true, accessIsExact: true,
                condition: nil, sort: sort, template: self, constants: constants)
        }
        // Without the condition asked for, the expression is built only if
        // the adapter reads it (``QueryPlan/engineCondition``); whether the
        // constants fit is checked now, as building it would.
        let engineCondition: QueryExpression?
        let condition: RecordCondition<R>?
        let deferred: DeferredExpression<R>?
        if parts.contains(.exactCondition) {
            guard let bound = expression.instantiate(constants, condition: true) else { return nil }
            engineCondition = bound.expression
            condition = bound.condition
            deferred = nil
        } else {
            guard expression.fits(constants) else { return nil }
            engineCondition = nil
            condition = nil
            deferred = DeferredExpression(expression: expression, constants: constants)
        }
        let access: QueryPlan<R>.Access
        if parts.contains(.accessPath) {
            guard let instantiated = self.access.instantiate(constants) else { return nil }
            access = instantiated
        } else {
            access = .all
        }
        return QueryPlan(
            query: query, access: access, engineCondition: engineCondition, conditionIsExact: true,
            accessIsExact: accessIsExact, condition: condition, sort: sort, template: self, deferred: deferred,
            constants: constants)
    }

    /// Records the order a call's candidates came in when read in the
    /// direction `readDescending` says (``QueryPlan/prefersDescendingCandidates``):
    /// reversed, the other direction yields the asked order; in order, this
    /// one does; neither, or no direction given: the hint is left as it is.
    func learn(_ order: SortKeyRows.Order, readDescending: Bool?) {
        guard let readDescending else { return }
        switch order {
        case .descending: descendingCandidates.store(!readDescending, ordering: .relaxed)
        case .ascending: descendingCandidates.store(readDescending, ordering: .relaxed)
        case .neither: break
        }
    }

    /// The object of class `T` kept with this template, made by `build` the
    /// first time it is asked for. `T` names the memo: an adapter keeps what
    /// it derives from the plan's shape (never from its constants) under a
    /// class of its own. A class, so that a memo is found without a dynamic
    /// cast (which, from an existential, cost hundreds of instructions a call).
    public func memo<T: AnyObject & Sendable>(_ type: T.Type = T.self, _ build: () -> T) -> T {
        unsafeDowncast(memo(of: T.self, build), to: T.self)
    }

    /// ``memo(_:_:)`` for code not specialized for the memo's class, which
    /// has it as a value (`type`, the class `build` makes): the generic form
    /// takes the class's metadata, looked up at every call there. What is
    /// kept under `type` is what `build` made, unchecked, so the caller casts
    /// it back without a check: the package's adapters only, where each
    /// caller passes the class its builder makes; other adapters use the
    /// type-checked generic form.
    package func memo(of type: any AnyObject.Type, _ build: () -> AnyObject & Sendable) -> AnyObject & Sendable {
        let key = ObjectIdentifier(type)
        if let first = UnsafeRawPointer(bitPattern: firstMemo.load(ordering: .acquiring)) {
            // Set once and released with the template, so not retained here.
            let entry = Unmanaged<MemoEntry>.fromOpaque(first).takeUnretainedValue()
            if entry.key == key { return entry.value }
        }
        if let kept = memos.withLock({ $0[key] }) { return kept }
        let value = build()
        return memos.withLock { memos in
            // Another call may have made one meanwhile: keep the first.
            if let kept = memos[key] { return kept }
            memos[key] = value
            // The first memo is also found without the lock from now on.
            if memos.count == 1 {
                let entry = Unmanaged.passRetained(MemoEntry(key: key, value: value)).toOpaque()
                firstMemo.store(UInt(bitPattern: entry), ordering: .releasing)
            }
            return value
        }
    }

    deinit {
        if let first = UnsafeRawPointer(bitPattern: firstMemo.load(ordering: .acquiring)) {
            Unmanaged<MemoEntry>.fromOpaque(first).release()
        }
    }
}

/// A template's first memo and its key (``PlanTemplate/memo(of:_:)``).
private final class MemoEntry: Sendable {
    let key: ObjectIdentifier
    let value: AnyObject & Sendable

    init(key: ObjectIdentifier, value: AnyObject & Sendable) {
        self.key = key
        self.value = value
    }
}

extension StoredValue {
    /// `-0.0` as `0.0`, which it equals (the translator's rule); any other
    /// value as it is.
    package var zeroNormalized: StoredValue {
        if case .real(let real) = self, real == 0 { return .real(0) }
        return self
    }
}

/// One value of an access path bound from a template, in terms that do not
/// depend on the record type: where it comes from and the field type it is
/// coerced to.
struct AccessValue: Sendable {
    let source: ValueSource
    let type: FieldType
    let optional: Bool

    /// The value, the constant in slot `s` being `constant(s)`.
    @inline(__always)
    func value(_ constant: (Int) -> StoredValue) -> StoredValue? {
        let value: StoredValue
        switch source {
        case .slot(let slot): value = constant(slot).zeroNormalized
        case .fixed(let fixed): value = fixed
        }
        return value.coerced(to: type, optional: optional)
    }
}

/// The access path of a template: which required equalities bind it, each
/// with the field type its value is coerced to, in terms that do not depend
/// on the record type: what a plan template keeps and binds
/// (``PlanTemplate/bind(_:_:)``, ``PreparedQueryCall/boundPlan()``).
enum AccessValues: Sendable {
    case all
    case primaryKey(AccessValue)
    case index(Index, [AccessValue])
    case parent(AccessValue)

    /// The access path `choice` chose, by positions in `equalities`, each
    /// value coerced to the field it binds.
    init<R: Record>(_ choice: QueryPlan<R>.AccessChoice, equalities: [EqualityTemplate<R>]) {
        func value(_ position: (equality: Int, target: Field<R>)) -> AccessValue {
            AccessValue(
                source: equalities[position.equality].source, type: position.target.type,
                optional: position.target.isOptional)
        }
        switch choice {
        case .all: self = .all
        case .primaryKey(let position): self = .primaryKey(value(position))
        case .index(let index, let positions): self = .index(index, positions.map(value))
        case .parent(let position): self = .parent(value(position))
        }
    }

    /// The access path for these constants; `nil` when a value does not
    /// coerce to its field.
    func instantiate(_ constants: [StoredValue]) -> AccessPath? {
        instantiate { constants[$0] }
    }

    /// The access path, the constant in slot `s` being `constant(s)`;
    /// `nil` when a value does not coerce to its field.
    @inline(__always)
    func instantiate(_ constant: (Int) -> StoredValue) -> AccessPath? {
        switch self {
        case .all:
            return .all
        case .primaryKey(let value):
            return value.value(constant).map { .primaryKey($0) }
        case .index(let index, let values):
            var bound: [StoredValue] = []
            bound.reserveCapacity(values.count)
            for value in values {
                guard let one = value.value(constant) else { return nil }
                bound.append(one)
            }
            return .index(index, values: bound)
        case .parent(let value):
            return value.value(constant).map { .parent($0) }
        }
    }
}

/// A required equality that a template's access path does not bind: the
/// field it is checked on and where its value comes from
/// (``PlanTemplate/otherEqualities``).
struct OtherEquality: Sendable {
    let field: String
    let value: AccessValue
}

/// Where a value of a plan comes from: a constant of the predicate (by its
/// position), or a value the expression fixes (`true` of a `Bool` field).
enum ValueSource: Sendable {
    case slot(Int)
    case fixed(StoredValue)
}

/// A required equality of a template: a field and where its value comes from.
struct EqualityTemplate<R: Record>: Sendable {
    let field: Field<R>
    let source: ValueSource

    func value(in constants: [StoredValue]) -> StoredValue {
        switch source {
        case .slot(let slot): constants[slot].zeroNormalized
        case .fixed(let value): value
        }
    }
}


/// A translated predicate with its constants left open, its fields resolved:
/// instantiating it with a predicate's constants gives what
/// ``QueryExpression/translate(_:)`` and ``RecordCondition/compile(_:)`` give
/// for that predicate. Each rule here is the translator's, in
/// `TranslationContext` and the `TranslatableExpression` conformances.
indirect enum ExpressionTemplate<R: Record>: Sendable {
    case constant(Bool)
    case isTrue(Field<R>)
    case compare(Field<R>, QueryExpression.Comparison, ConstantClass, slot: Int)
    case contains(Field<R>, slot: Int)
    case hasPrefix(Field<R>, slot: Int)
    case isIn(Field<R>, count: Int, slot: Int)
    case and(ExpressionTemplate, ExpressionTemplate)
    case or(ExpressionTemplate, ExpressionTemplate)
    case not(ExpressionTemplate)

    /// The template of `shape`, numbering its constants from `slot`; `nil` when
    /// the translator would not translate some node exactly.
    init?(_ shape: PredicateShape, entity: Entity<R>, slot: inout Int) {
        switch shape {
        case .constant(let value):
            self = .constant(value)
        case .isTrue(let keyPath):
            guard let field = entity.field(for: keyPath.keyPath), field.type == .bool, !field.isOptional else { return nil }
            self = .isTrue(field)
        case .compare(let keyPath, let comparison, let constant):
            guard let field = entity.field(for: keyPath.keyPath) else { return nil }
            self = .compare(field, comparison, constant, slot: slot)
            slot += 1
        case .contains(let keyPath, let constant), .hasPrefix(let keyPath, let constant):
            guard let field = entity.field(for: keyPath.keyPath), field.type == .text, !field.isOptional,
                case .text = constant
            else { return nil }
            if case .contains = shape { self = .contains(field, slot: slot) } else { self = .hasPrefix(field, slot: slot) }
            slot += 1
        case .isIn(let keyPath, let constants):
            guard let field = entity.field(for: keyPath.keyPath) else { return nil }
            self = .isIn(field, count: constants.count, slot: slot)
            slot += constants.count
        case .and(let lhs, let rhs):
            guard let left = ExpressionTemplate(lhs, entity: entity, slot: &slot),
                let right = ExpressionTemplate(rhs, entity: entity, slot: &slot)
            else { return nil }
            self = .and(left, right)
        case .or(let lhs, let rhs):
            guard let left = ExpressionTemplate(lhs, entity: entity, slot: &slot),
                let right = ExpressionTemplate(rhs, entity: entity, slot: &slot)
            else { return nil }
            self = .or(left, right)
        case .not(let wrapped):
            guard let inner = ExpressionTemplate(wrapped, entity: entity, slot: &slot) else { return nil }
            self = .not(inner)
        }
    }

    /// `-0.0` as `0.0`, which it equals (the translator's rule).
    static func normalized(_ value: StoredValue) -> StoredValue { value.zeroNormalized }

    /// The `count` constants of an `isIn` from `slot` on, normalized, without
    /// the NaNs (which equal nothing).
    static func memberValues(_ constants: [StoredValue], slot: Int, count: Int) -> [StoredValue] {
        var values: [StoredValue] = []
        values.reserveCapacity(count)
        for value in constants[slot..<(slot + count)] {
            if case .real(let real) = value, real.isNaN { continue }
            values.append(normalized(value))
        }
        return values
    }

    /// The expression and (with `condition`) the record condition for these
    /// constants; `nil` when a constant does not fit its place.
    func instantiate(
        _ constants: [StoredValue], condition: Bool
    ) -> (expression: QueryExpression, condition: RecordCondition<R>?)? {
        switch self {
        case .constant(let value):
            return (.constant(value), condition ? .constant(value) : nil)
        case .isTrue(let field):
            return (.isTrue(field: field.name), condition ? .isTrue(field) : nil)
        case .compare(let field, let comparison, _, let slot):
            let value = Self.normalized(constants[slot])
            // NaN equals nothing: the comparison is a constant.
            if case .real(let real) = value, real.isNaN {
                let constant = comparison == .notEqual
                return (.constant(constant), condition ? .constant(constant) : nil)
            }
            return (.compare(field: field.name, comparison, value), condition ? .compare(field, comparison, value) : nil)
        case .contains(let field, let slot):
            guard case .text(let substring) = constants[slot] else { return nil }
            return (
                .contains(field: field.name, substring: substring),
                condition ? .contains(field, Array(substring.utf8)) : nil
            )
        case .hasPrefix(let field, let slot):
            guard case .text(let prefix) = constants[slot] else { return nil }
            return (.hasPrefix(field: field.name, prefix: prefix), condition ? .hasPrefix(field, Array(prefix.utf8)) : nil)
        case .isIn(let field, let count, let slot):
            let values = Self.memberValues(constants, slot: slot, count: count)
            return (.isIn(field: field.name, values: values), condition ? .isIn(field, StoredValueSet(values)) : nil)
        case .and(let lhs, let rhs):
            guard let left = lhs.instantiate(constants, condition: condition),
                let right = rhs.instantiate(constants, condition: condition)
            else { return nil }
            return (.and(left.expression, right.expression), Self.both(left.condition, right.condition) { .and($0, $1) })
        case .or(let lhs, let rhs):
            guard let left = lhs.instantiate(constants, condition: condition),
                let right = rhs.instantiate(constants, condition: condition)
            else { return nil }
            return (.or(left.expression, right.expression), Self.both(left.condition, right.condition) { .or($0, $1) })
        case .not(let wrapped):
            guard let inner = wrapped.instantiate(constants, condition: condition) else { return nil }
            return (.not(inner.expression), inner.condition.map { .not($0) })
        }
    }

    /// The expression alone for these constants, as
    /// ``instantiate(_:condition:)`` gives it without a condition; `nil`
    /// when a constant does not fit its place. It names no record
    /// condition, whose metadata code not specialized for the record type
    /// looked up at every call (about 320 instructions).
    func instantiateExpression(_ constants: [StoredValue]) -> QueryExpression? {
        switch self {
        case .constant(let value):
            return .constant(value)
        case .isTrue(let field):
            return .isTrue(field: field.name)
        case .compare(let field, let comparison, _, let slot):
            let value = Self.normalized(constants[slot])
            // NaN equals nothing: the comparison is a constant.
            if case .real(let real) = value, real.isNaN { return .constant(comparison == .notEqual) }
            return .compare(field: field.name, comparison, value)
        case .contains(let field, let slot):
            guard case .text(let substring) = constants[slot] else { return nil }
            return .contains(field: field.name, substring: substring)
        case .hasPrefix(let field, let slot):
            guard case .text(let prefix) = constants[slot] else { return nil }
            return .hasPrefix(field: field.name, prefix: prefix)
        case .isIn(let field, let count, let slot):
            let values = Self.memberValues(constants, slot: slot, count: count)
            return .isIn(field: field.name, values: values)
        case .and(let lhs, let rhs):
            guard let left = lhs.instantiateExpression(constants), let right = rhs.instantiateExpression(constants)
            else { return nil }
            return .and(left, right)
        case .or(let lhs, let rhs):
            guard let left = lhs.instantiateExpression(constants), let right = rhs.instantiateExpression(constants)
            else { return nil }
            return .or(left, right)
        case .not(let wrapped):
            return wrapped.instantiateExpression(constants).map { .not($0) }
        }
    }

    /// The slots whose constants must be text for ``fits(_:)``.
    var textSlots: [Int] {
        switch self {
        case .constant, .isTrue, .compare, .isIn: []
        case .contains(_, let slot), .hasPrefix(_, let slot): [slot]
        case .and(let lhs, let rhs), .or(let lhs, let rhs): lhs.textSlots + rhs.textSlots
        case .not(let wrapped): wrapped.textSlots
        }
    }

    /// Whether ``instantiate(_:condition:)`` gives a result for these
    /// constants (a text operation's constant must be text), without
    /// building it.
    func fits(_ constants: [StoredValue]) -> Bool {
        switch self {
        case .constant, .isTrue, .compare, .isIn:
            return true
        case .contains(_, let slot), .hasPrefix(_, let slot):
            guard case .text = constants[slot] else { return false }
            return true
        case .and(let lhs, let rhs), .or(let lhs, let rhs):
            return lhs.fits(constants) && rhs.fits(constants)
        case .not(let wrapped):
            return wrapped.fits(constants)
        }
    }

    private static func both(
        _ lhs: RecordCondition<R>?, _ rhs: RecordCondition<R>?,
        _ join: (RecordCondition<R>, RecordCondition<R>) -> RecordCondition<R>
    ) -> RecordCondition<R>? {
        guard let lhs, let rhs else { return nil }
        return join(lhs, rhs)
    }

    /// The required equalities of the instantiated expression
    /// (``QueryExpression/requiredEqualities``), in the same order, with
    /// where each value comes from.
    var requiredEqualities: [EqualityTemplate<R>] {
        switch self {
        case .compare(let field, .equal, let constant, let slot) where !constant.isNaN:
            [EqualityTemplate(field: field, source: .slot(slot))]
        case .isTrue(let field): [EqualityTemplate(field: field, source: .fixed(.integer(1)))]
        case .not(.isTrue(let field)): [EqualityTemplate(field: field, source: .fixed(.integer(0)))]
        case .and(let lhs, let rhs): lhs.requiredEqualities + rhs.requiredEqualities
        default: []
        }
    }
}

/// A plan's expression template and the constants bound to it, whose
/// expression is built when it is read (``QueryPlan/engineCondition``).
struct DeferredExpression<R: Record>: Sendable {
    let expression: ExpressionTemplate<R>
    let constants: [StoredValue]
}

/// A predicate expression type and its shape reader (`nil`: the type has no shape).
struct KnownReader: Sendable {
    let type: ObjectIdentifier
    let reader: RootShapeReader?
}
