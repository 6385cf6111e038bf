import Foundation

// The shape of a predicate: its expression tree with the constants taken out.
// Two predicates of one shape translate and plan the same way, so a plan made
// for one serves the other once its constants are bound (see QueryPlanCache).

/// A predicate's tree with its constants abstracted: the key paths, operators
/// and structure, and of each constant only what decides how it translates
/// (its ``ConstantClass``). Only predicates built from the nodes the
/// translator turns exactly into a ``QueryExpression`` have a shape; any other
/// node (a method call, a computed property through an optional chain, a
/// comparison of two fields) leaves the predicate without one, and it is
/// planned afresh on every call.
indirect enum PredicateShape: Hashable, Sendable {
    /// A `Bool` constant as the whole condition (its value is part of the shape).
    case constant(Bool)
    /// A key path used as the condition itself.
    case isTrue(KeyPathKey)
    /// `keyPath <op> constant`, the key path on the left.
    case compare(KeyPathKey, QueryExpression.Comparison, ConstantClass)
    /// The key path's text contains the constant.
    case contains(KeyPathKey, ConstantClass)
    /// The key path's text starts with the constant.
    case hasPrefix(KeyPathKey, ConstantClass)
    /// The key path's value is one of the constants.
    case isIn(KeyPathKey, [ConstantClass])
    case and(PredicateShape, PredicateShape)
    case or(PredicateShape, PredicateShape)
    case not(PredicateShape)
}

/// What of a constant decides how a predicate translates and plans: its stored
/// kind and the properties the translator, the access-path choice and the SQL
/// compiler branch on (`nil`, NaN, whether a real is a whole number, whether an
/// integer survives the trip through `Double`, whether text is empty). Two
/// constants of one class translate into the same expression with only the
/// value differing.
enum ConstantClass: Hashable, Sendable {
    case null
    case integer(exactInDouble: Bool)
    case real(RealClass)
    case text(isEmpty: Bool)
    case blob

    enum RealClass: Hashable, Sendable {
        case nan
        case whole
        case fractional
    }

    init(_ value: StoredValue) {
        switch value {
        case .null: self = .null
        case .integer(let integer): self = .integer(exactInDouble: Int64(exactly: Double(integer)) == integer)
        case .real(let real):
            self = .real(real.isNaN ? .nan : Int64(exactly: real) != nil ? .whole : .fractional)
        case .text(let text): self = .text(isEmpty: text.isEmpty)
        case .blob: self = .blob
        }
    }

    var isNaN: Bool { self == .real(.nan) }
}

/// One walk of a predicate's expression tree: its shape and its constants, in
/// the order the shape's nodes hold them (depth first, left operand first).
///
/// A prepared query's predicate is walked with its parameters bound
/// (``parameters``): a parameter stands where a constant may, and the walk
/// notes which slots its values fill (``parameterSlots``), so that a later
/// call puts its own values there without walking again.
struct ShapeWalk {
    let variable: PredicateExpressions.VariableID
    var constants: [StoredValue] = []
    /// The parameter variables of a prepared query and their values now.
    let parameters: ParameterValues?
    /// For each slot a parameter fills, in slot order: the slot and the
    /// parameter's position.
    var parameterSlots: [(slot: Int, parameter: Int)] = []
    /// The parameter the constant read last came from, until it is appended.
    private var pendingParameter: Int?

    init(variable: PredicateExpressions.VariableID, parameters: ParameterValues? = nil) {
        self.variable = variable
        self.parameters = parameters
    }

    mutating func append(_ value: StoredValue) -> ConstantClass {
        if let parameter = pendingParameter {
            parameterSlots.append((constants.count, parameter))
            pendingParameter = nil
        }
        constants.append(value)
        return ConstantClass(value)
    }

    /// The value of the parameter variable `key`, noted for the next
    /// ``append(_:)``; `nil` when `key` is no parameter.
    mutating func parameter(_ key: PredicateExpressions.VariableID) -> StoredValue? {
        guard let parameters, let position = parameters.keys.firstIndex(of: key) else { return nil }
        pendingParameter = position
        return parameters.values[position]
    }
}

/// Reads the shape and constants of an expression of type `E`. Made once per
/// type, with every protocol conformance it needs looked up then: reading a
/// predicate casts nothing (a conformance lookup costs the runtime thousands
/// of instructions). Readers are plain closures over metatypes and other
/// readers: they hold no state.
typealias ShapeReader<E> = (E, inout ShapeWalk) -> PredicateShape?

/// The key path an operand of type `E` reads, when its root is the variable given.
typealias KeyPathReader<E> = (E, PredicateExpressions.VariableID) -> KeyPathKey?

/// The constant an operand of type `E` holds, in stored form (`nil`: none);
/// for a parameter of a prepared query, its value in the walk.
typealias ConstantReader<E> = (E, inout ShapeWalk) -> StoredValue?

/// The readers of a predicate's expression types, found by casting metatypes.
enum ShapeReaders {
    /// The reader of `type`, or `nil` when expressions of that type have no shape.
    static func reader<E>(for type: E.Type) -> ShapeReader<E>? {
        guard let shaped = type as? any ShapedExpression.Type else { return nil }
        return opened(shaped, as: type)
    }

    private static func opened<S: ShapedExpression, E>(_ shaped: S.Type, as type: E.Type) -> ShapeReader<E>? {
        guard let reader = S.shapeReader() else { return nil }
        // `S` is `E`, found by the cast above.
        return { expression, walk in reader(unsafeBitCast(expression, to: S.self), &walk) }
    }

    static func keyPath<E>(for type: E.Type) -> KeyPathReader<E>? {
        guard let operand = type as? any KeyPathOperand.Type else { return nil }
        return opened(operand, as: type)
    }

    private static func opened<K: KeyPathOperand, E>(_ operand: K.Type, as type: E.Type) -> KeyPathReader<E>? {
        guard let reader = K.keyPathReader() else { return nil }
        return { operand, variable in reader(unsafeBitCast(operand, to: K.self), variable) }
    }

    static func constant<E>(for type: E.Type) -> ConstantReader<E>? {
        // The common case first: a conformance looked up in vain scans
        // every conformance record (once per type).
        if let operand = type as? any ValueOperand.Type { return opened(operand, as: type) }
        guard let parameter = type as? any VariableOperand.Type else { return nil }
        return openedParameter(parameter, as: type)
    }

    private static func opened<V: ValueOperand, E>(_ operand: V.Type, as type: E.Type) -> ConstantReader<E>? {
        let reader = V.constantReader()
        return { operand, _ in reader(unsafeBitCast(operand, to: V.self)) }
    }

    /// A variable operand: a constant only when it is a parameter of the
    /// prepared query walked (never the record's own variable).
    private static func openedParameter<V: VariableOperand, E>(_ operand: V.Type, as type: E.Type) -> ConstantReader<E>? {
        { operand, walk in walk.parameter(unsafeBitCast(operand, to: V.self).key) }
    }

    static func constants<E>(for type: E.Type) -> ((E) -> [StoredValue]?)? {
        guard let operand = type as? any SequenceValueOperand.Type else { return nil }
        return opened(operand, as: type)
    }

    private static func opened<V: SequenceValueOperand, E>(
        _ operand: V.Type, as type: E.Type
    ) -> ((E) -> [StoredValue]?)? {
        let reader = V.constantsReader()
        return { operand in reader(unsafeBitCast(operand, to: V.self)) }
    }

    /// The stored form of values of `type`: by its `FieldValue` conformance,
    /// found once; otherwise cast per value (`nil` of an optional that is no
    /// field value is `.null`).
    static func storedValue<V>(of type: V.Type) -> (V) -> StoredValue? {
        guard let field = type as? any FieldValue.Type else { return { DAOCore.storedValue(of: $0) } }
        return opened(field, as: type)
    }

    private static func opened<F: FieldValue, V>(_ field: F.Type, as type: V.Type) -> (V) -> StoredValue? {
        { value in unsafeBitCast(value, to: F.self).storedValue }
    }

    /// `lhs <op> rhs` with a key path on one side and a constant on the other,
    /// in the order ``TranslationContext/comparison(_:_:_:)`` tries them;
    /// `nil` when neither order is possible for these operand types.
    static func comparison<E, Left, Right>(
        _ lhs: @escaping (E) -> Left, _ rhs: @escaping (E) -> Right,
        _ op: @escaping (E) -> QueryExpression.Comparison
    ) -> ShapeReader<E>? {
        // An operand type is a key path or a constant, never both (only
        // `PredicateExpressions.KeyPath` is a `KeyPathOperand`, only `Value`,
        // `NilLiteral` and a prepared query's parameter `Variable` read as
        // constants): a left key path rules the
        // constant-first order out, and its absence the key-path-first
        // order. The lookups of the order ruled out are not made: the first
        // lookup of a type's conformance scans every conformance record
        // loaded (about 270k instructions, met or not).
        let leftKeyPath = keyPath(for: Left.self)
        let rightConstant = leftKeyPath == nil ? nil : constant(for: Right.self)
        let leftConstant = leftKeyPath == nil ? constant(for: Left.self) : nil
        let rightKeyPath = leftConstant == nil ? nil : keyPath(for: Right.self)
        let keyPathFirst = leftKeyPath != nil && rightConstant != nil
        let constantFirst = leftConstant != nil && rightKeyPath != nil
        guard keyPathFirst || constantFirst else { return nil }
        return { expression, walk in
            if let leftKeyPath, let rightConstant, let keyPath = leftKeyPath(lhs(expression), walk.variable),
                let value = rightConstant(rhs(expression), &walk)
            {
                return .compare(keyPath, op(expression), walk.append(value))
            }
            if let leftConstant, let rightKeyPath, let value = leftConstant(lhs(expression), &walk),
                let keyPath = rightKeyPath(rhs(expression), walk.variable)
            {
                return .compare(keyPath, op(expression).flipped, walk.append(value))
            }
            return nil
        }
    }
}

/// A node of a predicate that may have a shape.
protocol ShapedExpression {
    /// The reader of this type's expressions, or `nil` when they have no shape.
    static func shapeReader() -> ShapeReader<Self>?
}

extension PredicateExpressions.Value: ShapedExpression {
    static func shapeReader() -> ShapeReader<Self>? {
        guard Output.self == Bool.self else { return nil }
        return { expression, _ in .constant(unsafeBitCast(expression.value, to: Bool.self)) }
    }
}

extension PredicateExpressions.KeyPath: ShapedExpression {
    static func shapeReader() -> ShapeReader<Self>? {
        guard let keyPath = keyPathReader() else { return nil }
        return { expression, walk in keyPath(expression, walk.variable).map { .isTrue($0) } }
    }
}

extension PredicateExpressions.Conjunction: ShapedExpression {
    static func shapeReader() -> ShapeReader<Self>? {
        guard let left = ShapeReaders.reader(for: LHS.self), let right = ShapeReaders.reader(for: RHS.self) else { return nil }
        return { expression, walk in
            guard let lhs = left(expression.lhs, &walk), let rhs = right(expression.rhs, &walk) else { return nil }
            return .and(lhs, rhs)
        }
    }
}

extension PredicateExpressions.Disjunction: ShapedExpression {
    static func shapeReader() -> ShapeReader<Self>? {
        guard let left = ShapeReaders.reader(for: LHS.self), let right = ShapeReaders.reader(for: RHS.self) else { return nil }
        return { expression, walk in
            guard let lhs = left(expression.lhs, &walk), let rhs = right(expression.rhs, &walk) else { return nil }
            return .or(lhs, rhs)
        }
    }
}

extension PredicateExpressions.Negation: ShapedExpression {
    static func shapeReader() -> ShapeReader<Self>? {
        guard let wrapped = ShapeReaders.reader(for: Wrapped.self) else { return nil }
        return { expression, walk in wrapped(expression.wrapped, &walk).map { .not($0) } }
    }
}

extension PredicateExpressions.Equal: ShapedExpression {
    static func shapeReader() -> ShapeReader<Self>? {
        ShapeReaders.comparison({ $0.lhs }, { $0.rhs }, { _ in .equal })
    }
}

extension PredicateExpressions.NotEqual: ShapedExpression {
    static func shapeReader() -> ShapeReader<Self>? {
        ShapeReaders.comparison({ $0.lhs }, { $0.rhs }, { _ in .notEqual })
    }
}

extension PredicateExpressions.Comparison: ShapedExpression {
    static func shapeReader() -> ShapeReader<Self>? {
        ShapeReaders.comparison({ $0.lhs }, { $0.rhs }) { expression in
            switch expression.op {
            case .lessThan: .less
            case .lessThanOrEqual: .lessOrEqual
            case .greaterThan: .greater
            case .greaterThanOrEqual: .greaterOrEqual
            }
        }
    }
}

extension PredicateExpressions.CollectionContainsCollection: ShapedExpression {
    static func shapeReader() -> ShapeReader<Self>? {
        guard let keyPath = ShapeReaders.keyPath(for: Base.self), let constant = ShapeReaders.constant(for: Other.self)
        else { return nil }
        return { expression, walk in
            guard let field = keyPath(expression.base, walk.variable), let value = constant(expression.other, &walk) else {
                return nil
            }
            return .contains(field, walk.append(value))
        }
    }
}

extension PredicateExpressions.SequenceStartsWith: ShapedExpression {
    static func shapeReader() -> ShapeReader<Self>? {
        guard let keyPath = ShapeReaders.keyPath(for: Base.self), let constant = ShapeReaders.constant(for: Prefix.self)
        else { return nil }
        return { expression, walk in
            guard let field = keyPath(expression.base, walk.variable), let value = constant(expression.prefix, &walk) else {
                return nil
            }
            return .hasPrefix(field, walk.append(value))
        }
    }
}

extension PredicateExpressions.SequenceContains: ShapedExpression {
    static func shapeReader() -> ShapeReader<Self>? {
        guard let keyPath = ShapeReaders.keyPath(for: RHS.self), let constants = ShapeReaders.constants(for: LHS.self)
        else { return nil }
        return { expression, walk in
            guard let field = keyPath(expression.element, walk.variable), let values = constants(expression.sequence) else {
                return nil
            }
            var classes: [ConstantClass] = []
            classes.reserveCapacity(values.count)
            for value in values { classes.append(walk.append(value)) }
            return .isIn(field, classes)
        }
    }
}
