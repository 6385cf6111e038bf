import Foundation

/// A field's value in the engine-neutral shape every adapter understands.
///
/// Adapters use it for keys, index entries and bound query parameters. It orders
/// values the way SQLite does: `null` first, then numbers (integers and reals
/// compared by value: `-0.0` ties with `0.0`, and every NaN comes after
/// `+infinity`, all NaNs tied), then text (by UTF-8 bytes), then blobs (by
/// bytes). This is the one total order of sorts and indexes; predicates
/// compare reals as IEEE 754 does (``Semantics/compare(_:_:_:)``).
///
/// Two stored values are equal (`==`, and so the same dictionary key) only when
/// they are the same value: text with the same Unicode scalars (not Swift's
/// canonical equivalence, which makes NFC `"Zoë"` equal to NFD `"Zoe\u{308}"`),
/// reals with the same bits. This is the identity every engine keys by; see
/// `docs/SEMANTICS.md`.
public enum StoredValue: Sendable {
    /// No value (an optional field that is `nil`).
    case null
    /// A signed 64-bit integer (integers, `Bool` as 0/1, integer-backed enums).
    case integer(Int64)
    /// A double (floating-point fields, and `Date` as seconds since 2001-01-01 UTC).
    case real(Double)
    /// UTF-8 text (strings, string-backed enums, UUIDs).
    case text(String)
    /// Raw bytes (`Data`).
    case blob([UInt8])
}

extension StoredValue: Hashable {
    /// Whether `lhs` and `rhs` are the same stored value: the same case and the
    /// same integer, the same bits of a real, the same Unicode scalars of text,
    /// the same bytes of a blob.
    public static func == (lhs: StoredValue, rhs: StoredValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.integer(a), .integer(b)): a == b
        case let (.real(a), .real(b)): a.bitPattern == b.bitPattern
        case let (.text(a), .text(b)): Self.sameScalars(a, b)
        case let (.blob(a), .blob(b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0 as UInt8)
        case .integer(let value):
            hasher.combine(1 as UInt8)
            hasher.combine(value)
        case .real(let value):
            hasher.combine(2 as UInt8)
            hasher.combine(value.bitPattern)
        case .text(let value):
            hasher.combine(3 as UInt8)
            let hashed: Void? = value.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            if hashed == nil {
                for byte in value.utf8 { hasher.combine(byte) }
            }
            hasher.combine(value.utf8.count)
        case .blob(let value):
            hasher.combine(4 as UInt8)
            hasher.combine(value)
        }
    }

    /// Whether two strings hold the same Unicode scalars (the same UTF-8 bytes).
    public static func sameScalars(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        let compared: Bool? = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right in
                guard let leftBytes = left.baseAddress, let rightBytes = right.baseAddress else { return left.isEmpty }
                return memcmp(leftBytes, rightBytes, left.count) == 0
            }
        } ?? nil
        return compared ?? a.utf8.elementsEqual(b.utf8)
    }
}

extension StoredValue: Comparable {
    private var typeRank: Int {
        switch self {
        case .null: 0
        case .integer, .real: 1
        case .text: 2
        case .blob: 3
        }
    }

    public static func < (lhs: StoredValue, rhs: StoredValue) -> Bool {
        switch (lhs, rhs) {
        case let (.integer(a), .integer(b)): return a < b
        // NaN is after every other number, and ties with every NaN.
        case let (.real(a), .real(b)): return a < b || (b.isNaN && !a.isNaN)
        case let (.integer(a), .real(b)): return Double(a) < b || b.isNaN
        case let (.real(a), .integer(b)): return a < Double(b)
        case let (.text(a), .text(b)): return a.utf8.lexicographicallyPrecedes(b.utf8)
        case let (.blob(a), .blob(b)): return a.lexicographicallyPrecedes(b)
        default: return lhs.typeRank < rhs.typeRank
        }
    }
}

/// The storage class of a field, as declared in its record's ``Entity``.
public enum FieldType: String, Sendable, Hashable, CaseIterable {
    /// A signed 64-bit integer.
    case integer
    /// A double.
    case real
    /// UTF-8 text.
    case text
    /// Raw bytes.
    case blob
    /// A boolean, stored as an integer 0 or 1.
    case bool
    /// A date, stored as a double: seconds since 2001-01-01 00:00:00 UTC, which
    /// round-trips every `Date` bit for bit.
    case date
}

/// A Swift type that can be a record's field: it names its storage class,
/// converts itself to a ``StoredValue``, and a ``FieldReader`` or
/// ``FieldWriter`` reads or writes it by position (``ReadableField``,
/// ``WritableField``; a `RawRepresentable` type gets both from its raw value).
///
/// The integer types, `Bool`, `Double`, `Float`, `String`, `Date`, `Data`, `UUID`
/// and optionals of them conform. A `RawRepresentable` enum whose raw value conforms
/// gets the conformance by declaring it:
///
/// ```swift
/// enum Gender: String, Codable, Sendable, FieldValue { case female, male, other }
/// ```
public protocol FieldValue: Sendable, ReadableField, WritableField {
    /// The storage class of the (unwrapped) value.
    static var fieldType: FieldType { get }
    /// Whether the field may hold `nil`. `false` for everything but `Optional`.
    static var isOptional: Bool { get }
    /// The value in engine-neutral form.
    var storedValue: StoredValue { get }
}

extension FieldValue {
    public static var isOptional: Bool { false }
}

extension Int64: FieldValue {
    public static var fieldType: FieldType { .integer }
    public var storedValue: StoredValue { .integer(self) }
}

extension Int: FieldValue {
    public static var fieldType: FieldType { .integer }
    public var storedValue: StoredValue { .integer(Int64(self)) }
}

extension Int32: FieldValue {
    public static var fieldType: FieldType { .integer }
    public var storedValue: StoredValue { .integer(Int64(self)) }
}

extension Int16: FieldValue {
    public static var fieldType: FieldType { .integer }
    public var storedValue: StoredValue { .integer(Int64(self)) }
}

extension Int8: FieldValue {
    public static var fieldType: FieldType { .integer }
    public var storedValue: StoredValue { .integer(Int64(self)) }
}

extension UInt32: FieldValue {
    public static var fieldType: FieldType { .integer }
    public var storedValue: StoredValue { .integer(Int64(self)) }
}

extension Bool: FieldValue {
    public static var fieldType: FieldType { .bool }
    public var storedValue: StoredValue { .integer(self ? 1 : 0) }
}

extension Double: FieldValue {
    public static var fieldType: FieldType { .real }
    public var storedValue: StoredValue { .real(self) }
}

extension Float: FieldValue {
    public static var fieldType: FieldType { .real }
    public var storedValue: StoredValue { .real(Double(self)) }
}

extension String: FieldValue {
    public static var fieldType: FieldType { .text }
    public var storedValue: StoredValue { .text(self) }
}

extension Date: FieldValue {
    public static var fieldType: FieldType { .date }
    public var storedValue: StoredValue { .real(storedSeconds) }
}

extension Data: FieldValue {
    public static var fieldType: FieldType { .blob }
    public var storedValue: StoredValue { .blob([UInt8](self)) }
}

extension UUID: FieldValue {
    public static var fieldType: FieldType { .text }
    public var storedValue: StoredValue { .text(uuidString) }
}

extension Optional: FieldValue where Wrapped: FieldValue {
    public static var fieldType: FieldType { Wrapped.fieldType }
    public static var isOptional: Bool { true }
    public var storedValue: StoredValue {
        switch self {
        case .none: .null
        case .some(let wrapped): wrapped.storedValue
        }
    }
}

extension FieldValue where Self: RawRepresentable, RawValue: FieldValue {
    public static var fieldType: FieldType { RawValue.fieldType }
    public var storedValue: StoredValue { rawValue.storedValue }
}
