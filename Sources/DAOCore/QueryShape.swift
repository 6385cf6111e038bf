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
struct ShapeWalk {
    let variable: PredicateExpressions.VariableID
    var constants: [StoredValue] = []

    init(variable: PredicateExpressions.VariableID) {
        self.variable = variable
    }

    /// The shape of `predicate` and its constants, or `nil` when some node has
    /// no shape.
    static func shape<R>(of predicate: Predicate<R>) -> (shape: PredicateShape, constants: [StoredValue])? {
        var walk = ShapeWalk(variable: predicate.variable.key)
        guard let shape = walk.shape(of: predicate.expression) else { return nil }
        return (shape, walk.constants)
    }

    mutating func shape<E>(of expression: E) -> PredicateShape? {
        guard let node = expression as? any ShapedExpression else { return nil }
        return node.shape(in: &self)
    }

    /// The key path an operand reads on the predicate's own input.
    func keyPath<E>(_ operand: E) -> KeyPathKey? {
        guard let keyPath = operand as? any KeyPathOperand, keyPath.variableKey == variable else { return nil }
        return KeyPathKey(keyPath.anyKeyPath)
    }

    func constant<E>(_ operand: E) -> StoredValue? {
        (operand as? any ValueOperand)?.storedValue
    }

    /// `lhs <op> rhs` with a key path on one side and a constant on the other,
    /// in the order ``TranslationContext/comparison(_:_:_:)`` tries them.
    mutating func comparison<Left, Right>(_ lhs: Left, _ rhs: Right, _ op: QueryExpression.Comparison) -> PredicateShape? {
        if let keyPath = keyPath(lhs), let value = constant(rhs) {
            constants.append(value)
            return .compare(keyPath, op, ConstantClass(value))
        }
        if let value = constant(lhs), let keyPath = keyPath(rhs) {
            constants.append(value)
            return .compare(keyPath, op.flipped, ConstantClass(value))
        }
        return nil
    }
}

/// A node of a predicate that has a shape.
protocol ShapedExpression {
    func shape(in walk: inout ShapeWalk) -> PredicateShape?
}

extension PredicateExpressions.Value: ShapedExpression {
    func shape(in walk: inout ShapeWalk) -> PredicateShape? {
        guard let constant = value as? Bool else { return nil }
        return .constant(constant)
    }
}

extension PredicateExpressions.KeyPath: ShapedExpression {
    func shape(in walk: inout ShapeWalk) -> PredicateShape? {
        walk.keyPath(self).map { .isTrue($0) }
    }
}

extension PredicateExpressions.Conjunction: ShapedExpression {
    func shape(in walk: inout ShapeWalk) -> PredicateShape? {
        guard let left = walk.shape(of: lhs), let right = walk.shape(of: rhs) else { return nil }
        return .and(left, right)
    }
}

extension PredicateExpressions.Disjunction: ShapedExpression {
    func shape(in walk: inout ShapeWalk) -> PredicateShape? {
        guard let left = walk.shape(of: lhs), let right = walk.shape(of: rhs) else { return nil }
        return .or(left, right)
    }
}

extension PredicateExpressions.Negation: ShapedExpression {
    func shape(in walk: inout ShapeWalk) -> PredicateShape? {
        walk.shape(of: wrapped).map { .not($0) }
    }
}

extension PredicateExpressions.Equal: ShapedExpression {
    func shape(in walk: inout ShapeWalk) -> PredicateShape? {
        walk.comparison(lhs, rhs, .equal)
    }
}

extension PredicateExpressions.NotEqual: ShapedExpression {
    func shape(in walk: inout ShapeWalk) -> PredicateShape? {
        walk.comparison(lhs, rhs, .notEqual)
    }
}

extension PredicateExpressions.Comparison: ShapedExpression {
    func shape(in walk: inout ShapeWalk) -> PredicateShape? {
        let comparison: QueryExpression.Comparison =
            switch op {
            case .lessThan: .less
            case .lessThanOrEqual: .lessOrEqual
            case .greaterThan: .greater
            case .greaterThanOrEqual: .greaterOrEqual
            }
        return walk.comparison(lhs, rhs, comparison)
    }
}

extension PredicateExpressions.CollectionContainsCollection: ShapedExpression {
    func shape(in walk: inout ShapeWalk) -> PredicateShape? {
        guard let keyPath = walk.keyPath(base), let value = walk.constant(other) else { return nil }
        walk.constants.append(value)
        return .contains(keyPath, ConstantClass(value))
    }
}

extension PredicateExpressions.SequenceStartsWith: ShapedExpression {
    func shape(in walk: inout ShapeWalk) -> PredicateShape? {
        guard let keyPath = walk.keyPath(base), let value = walk.constant(self.prefix) else { return nil }
        walk.constants.append(value)
        return .hasPrefix(keyPath, ConstantClass(value))
    }
}

extension PredicateExpressions.SequenceContains: ShapedExpression {
    func shape(in walk: inout ShapeWalk) -> PredicateShape? {
        guard let keyPath = walk.keyPath(element),
            let constant = sequence as? any SequenceValueOperand,
            let values = constant.storedValues
        else { return nil }
        walk.constants.append(contentsOf: values)
        return .isIn(keyPath, values.map(ConstantClass.init))
    }
}
