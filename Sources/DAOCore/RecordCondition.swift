import Foundation

/// A predicate over records of `R`, ready to evaluate with the library's one
/// meaning of every comparison (see `docs/SEMANTICS.md`): every adapter that
/// evaluates a predicate in memory evaluates this, never the Foundation
/// predicate's own `evaluate`.
///
/// Comparisons of a declared field with a constant (and of two declared fields)
/// are evaluated on the fields' ``StoredValue``s: text by Unicode scalars
/// (`==`, `<`, `contains` and `starts(with:)` on the UTF-8 bytes, not Swift's
/// canonical equivalence and `Character`s), numbers by value. Everything else
/// (a computed property, a relation such as `$0.chapters.isEmpty`, a method
/// call) is an opaque part evaluated by Foundation on the record, which the
/// caller passes complete, with its children.
public indirect enum RecordCondition<R: Record>: Sendable {
    /// Always true or always false.
    case constant(Bool)
    /// A non-optional `Bool` field is true.
    case isTrue(Field<R>)
    /// `field <op> value`.
    case compare(Field<R>, QueryExpression.Comparison, StoredValue)
    /// `lhs <op> rhs`, two declared fields of the same type.
    case compareFields(Field<R>, QueryExpression.Comparison, Field<R>)
    /// The text field's UTF-8 bytes contain these bytes.
    case contains(Field<R>, [UInt8])
    /// The text field's UTF-8 bytes start with these bytes.
    case hasPrefix(Field<R>, [UInt8])
    /// The field's value is one of these.
    case isIn(Field<R>, StoredValueSet)
    /// Both hold.
    case and(RecordCondition, RecordCondition)
    /// Either holds.
    case or(RecordCondition, RecordCondition)
    /// The condition does not hold.
    case not(RecordCondition)
    /// A part of the predicate only Foundation can evaluate.
    case opaque(OpaqueCondition<R>)

    /// Whether `record` meets the condition.
    /// - Throws: what an opaque part of the predicate throws.
    public func evaluate(_ record: R) throws -> Bool {
        switch self {
        case .constant(let value):
            return value
        case .isTrue(let field):
            return field.value(in: record) == .integer(1)
        case .compare(let field, let comparison, let value):
            return Semantics.compare(field.value(in: record), comparison, value)
        case .compareFields(let lhs, let comparison, let rhs):
            return Semantics.compare(lhs.value(in: record), comparison, rhs.value(in: record))
        case .contains(let field, let bytes):
            guard case .text(let text) = field.value(in: record) else { return false }
            return Semantics.contains(text, bytes)
        case .hasPrefix(let field, let bytes):
            guard case .text(let text) = field.value(in: record) else { return false }
            return text.utf8.starts(with: bytes)
        case .isIn(let field, let values):
            return values.contains(field.value(in: record))
        case .and(let lhs, let rhs):
            return try lhs.evaluate(record) && rhs.evaluate(record)
        case .or(let lhs, let rhs):
            return try lhs.evaluate(record) || rhs.evaluate(record)
        case .not(let wrapped):
            return try !wrapped.evaluate(record)
        case .opaque(let opaque):
            return try opaque.evaluate(record)
        }
    }

    /// Whether some part of the condition is evaluated by Foundation, and so
    /// may read anything on the record, its relations included.
    public var hasOpaqueParts: Bool {
        switch self {
        case .opaque: true
        case .and(let lhs, let rhs), .or(let lhs, let rhs): lhs.hasOpaqueParts || rhs.hasOpaqueParts
        case .not(let wrapped): wrapped.hasOpaqueParts
        default: false
        }
    }

    /// The condition of a translated ``QueryExpression``, or `nil` when it
    /// names a field `R` does not declare.
    static func compile(_ expression: QueryExpression) -> RecordCondition? {
        let entity = R.entity
        switch expression {
        case .constant(let value):
            return .constant(value)
        case .isTrue(let name):
            return entity.field(named: name).map { .isTrue($0) }
        case .compare(let name, let comparison, let value):
            return entity.field(named: name).map { .compare($0, comparison, value) }
        case .contains(let name, let substring):
            return entity.field(named: name).map { .contains($0, Array(substring.utf8)) }
        case .hasPrefix(let name, let prefix):
            return entity.field(named: name).map { .hasPrefix($0, Array(prefix.utf8)) }
        case .isIn(let name, let values):
            return entity.field(named: name).map { .isIn($0, StoredValueSet(values)) }
        case .and(let lhs, let rhs):
            guard let lhs = compile(lhs), let rhs = compile(rhs) else { return nil }
            return .and(lhs, rhs)
        case .or(let lhs, let rhs):
            guard let lhs = compile(lhs), let rhs = compile(rhs) else { return nil }
            return .or(lhs, rhs)
        case .not(let wrapped):
            return compile(wrapped).map { .not($0) }
        }
    }
}

/// The constants of `[constants].contains($0.field)`, looked up in constant
/// time with the meaning of ``Semantics/equal(_:_:)``: numbers by value (an
/// integral real is the integer it equals, `-0.0` is `0.0`, NaN equals
/// nothing), text by Unicode scalars, bytes by bytes, `nil` equals `nil`.
/// A record is checked against thousands of constants without comparing it
/// with each.
public struct StoredValueSet: Sendable {
    /// The constants as given.
    public let values: [StoredValue]
    private let keys: Set<StoredValue>

    /// A set of `values`.
    public init(_ values: [StoredValue]) {
        self.values = values
        var keys = Set<StoredValue>(minimumCapacity: values.count)
        for value in values { if let key = Self.key(value) { keys.insert(key) } }
        self.keys = keys
    }

    /// Whether `value` equals one of the constants, as ``Semantics/equal(_:_:)`` says.
    public func contains(_ value: StoredValue) -> Bool {
        guard let key = Self.key(value) else { return false }
        return keys.contains(key)
    }

    /// One value per class of values that ``Semantics/equal(_:_:)`` takes for
    /// equal (`StoredValue`'s own `==` compares reals by their bits and keeps
    /// integers and reals apart); `nil` for NaN, which equals nothing.
    private static func key(_ value: StoredValue) -> StoredValue? {
        guard case .real(let real) = value else { return value }
        if real.isNaN { return nil }
        if let integer = Int64(exactly: real) { return .integer(integer) }
        return value
    }
}

/// A part of a predicate that only Foundation can evaluate (a computed
/// property, a relation, a method call), with the variable it reads.
public struct OpaqueCondition<R: Record>: Sendable {
    let expression: any StandardPredicateExpression<Bool>
    let variable: PredicateExpressions.Variable<R>
    /// The call of a prepared predicate the part belongs to, which binds the
    /// record and the parameters' values (`nil`: only `variable` is bound).
    let call: PreparedCall<R>?

    init(
        expression: any StandardPredicateExpression<Bool>, variable: PredicateExpressions.Variable<R>,
        call: PreparedCall<R>? = nil
    ) {
        self.expression = expression
        self.variable = variable
        self.call = call
    }

    /// Evaluates the part on `record`.
    /// - Throws: what the expression throws.
    public func evaluate(_ record: R) throws -> Bool {
        if let call { return try expression.evaluate(call.bindings(record)) }
        return try expression.evaluate(PredicateBindings((variable, record)))
    }
}

/// The library's meaning of comparisons between stored values, shared by every
/// in-memory evaluation (and matched by the SQL the SQLite adapter runs).
public enum Semantics {
    /// `lhs <op> rhs` over stored values: `==` and `!=` are null-safe (nil equals
    /// nil); integers and reals compare by value (IEEE 754: `-0.0 == 0.0`, NaN
    /// equals nothing); text by Unicode scalars; blobs by bytes. An ordering
    /// with `nil` on either side, or between values of different kinds, is false.
    @inlinable
    public static func compare(_ lhs: StoredValue, _ comparison: QueryExpression.Comparison, _ rhs: StoredValue) -> Bool {
        switch comparison {
        case .equal: return equal(lhs, rhs)
        case .notEqual: return !equal(lhs, rhs)
        case .less: return ordered(lhs, rhs) { $0 < $1 }
        case .lessOrEqual: return ordered(lhs, rhs) { $0 < $1 || equal($0, $1) }
        case .greater: return ordered(lhs, rhs) { $1 < $0 }
        case .greaterOrEqual: return ordered(lhs, rhs) { $1 < $0 || equal($0, $1) }
        }
    }

    /// Equality as predicates mean it: numbers by value, text by scalars.
    @inlinable
    public static func equal(_ lhs: StoredValue, _ rhs: StoredValue) -> Bool {
        switch (lhs, rhs) {
        case let (.real(a), .real(b)): return a == b
        case let (.integer(a), .real(b)): return Double(a) == b && Int64(exactly: b) == a
        case let (.real(a), .integer(b)): return a == Double(b) && Int64(exactly: a) == b
        default: return lhs == rhs
        }
    }

    @inlinable
    static func ordered(_ lhs: StoredValue, _ rhs: StoredValue, _ test: (StoredValue, StoredValue) -> Bool) -> Bool {
        switch (lhs, rhs) {
        case (.null, _), (_, .null): return false
        case (.real(let a), _) where a.isNaN: return false
        case (_, .real(let b)) where b.isNaN: return false
        case (.integer, .integer), (.integer, .real), (.real, .integer), (.real, .real), (.text, .text), (.blob, .blob):
            return test(lhs, rhs)
        default: return false
        }
    }

    /// Whether `text`'s UTF-8 bytes contain `bytes` (what SQLite's `instr`
    /// finds). Empty `bytes` are contained in every text.
    public static func contains(_ text: String, _ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return true }
        let utf8 = text.utf8
        if let found = utf8.withContiguousStorageIfAvailable({ search($0, bytes) }) { return found }
        return search(Array(utf8), bytes)
    }

    private static func search(_ haystack: some RandomAccessCollection<UInt8>, _ needle: [UInt8]) -> Bool {
        let count = haystack.count
        guard needle.count <= count else { return false }
        let first = needle[0]
        var start = haystack.startIndex
        let last = haystack.index(haystack.startIndex, offsetBy: count - needle.count)
        while start <= last {
            if haystack[start] == first, haystack[start...].starts(with: needle) { return true }
            start = haystack.index(after: start)
        }
        return false
    }
}
