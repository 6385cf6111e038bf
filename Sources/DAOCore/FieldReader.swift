import Foundation

/// Reads the fields of one stored record, one after another. Each adapter has
/// its own (over an SQLite row, over an LMDB value); ``StoredValueReader`` reads
/// from ``StoredValue``s.
public protocol FieldReader {
    /// Reads the next field as an integer.
    mutating func decode(_ type: Int64.Type) throws -> Int64
    /// Reads the next field as a double.
    mutating func decode(_ type: Double.Type) throws -> Double
    /// Reads the next field as text.
    mutating func decode(_ type: String.Type) throws -> String
    /// Reads the next field as a boolean.
    mutating func decode(_ type: Bool.Type) throws -> Bool
    /// Reads the next field as a date.
    mutating func decode(_ type: Date.Type) throws -> Date
    /// Reads the next field as bytes.
    mutating func decode(_ type: Data.Type) throws -> Data
    /// Whether the next field is null; a null field is consumed, any other is not.
    mutating func decodeNil() throws -> Bool
    /// An error about the field last read (for a value out of range, say).
    func error(_ message: String) -> StorageError
}

/// A type a ``FieldReader`` can read.
public protocol ReadableField {
    /// Reads a value of this type as the reader's next field.
    static func read(from reader: inout some FieldReader) throws -> Self
}

extension FieldReader {
    /// Reads the next field as a `T`.
    @inlinable
    public mutating func decode<T: ReadableField>(_ type: T.Type = T.self) throws -> T {
        try T.read(from: &self)
    }

    /// Reads the next field as a `T`, or `nil` when it is null.
    @inlinable
    public mutating func decodeIfPresent<T: ReadableField>(_ type: T.Type = T.self) throws -> T? {
        try decodeNil() ? nil : T.read(from: &self)
    }
}

// Concrete overloads of `decode()` and `decodeIfPresent()` for the common field
// types. A record's `init(fields:)` is generic over its reader and runs
// unspecialized inside an adapter (the adapter's reader type is private to
// it), so `fields.decode()` through the generic version above is four calls
// per field: `decode<T>`, `T.read`'s witness, `T.read`, and the reader's
// witness. The compiler prefers a non-generic overload when the field's type
// matches it exactly, and these go straight to the reader's requirement: one
// call per field. A field of another type (an optional through `decode()`, an
// enum, `Int32`, …) still matches only the generic version; reading is the
// same either way.
extension FieldReader {
    /// Reads the next field as an `Int64`.
    @inlinable @inline(__always)
    public mutating func decode() throws -> Int64 { try decode(Int64.self) }

    /// Reads the next field as an `Int`; a value that does not fit is an error.
    @inlinable @inline(__always)
    public mutating func decode() throws -> Int {
        let value = try decode(Int64.self)
        guard let int = Int(exactly: value) else { throw error("\(value) does not fit Int") }
        return int
    }

    /// Reads the next field as a `Double`.
    @inlinable @inline(__always)
    public mutating func decode() throws -> Double { try decode(Double.self) }

    /// Reads the next field as a `String`.
    @inlinable @inline(__always)
    public mutating func decode() throws -> String { try decode(String.self) }

    /// Reads the next field as a `Bool`.
    @inlinable @inline(__always)
    public mutating func decode() throws -> Bool { try decode(Bool.self) }

    /// Reads the next field as a `Date`.
    @inlinable @inline(__always)
    public mutating func decode() throws -> Date { try decode(Date.self) }

    /// Reads the next field as `Data`.
    @inlinable @inline(__always)
    public mutating func decode() throws -> Data { try decode(Data.self) }

    /// Reads the next field as an `Int64`, or `nil` when it is null.
    @inlinable @inline(__always)
    public mutating func decodeIfPresent() throws -> Int64? { try decodeNil() ? nil : decode(Int64.self) }

    /// Reads the next field as an `Int`, or `nil` when it is null.
    @inlinable @inline(__always)
    public mutating func decodeIfPresent() throws -> Int? { try decodeNil() ? nil : decode() as Int }

    /// Reads the next field as a `Double`, or `nil` when it is null.
    @inlinable @inline(__always)
    public mutating func decodeIfPresent() throws -> Double? { try decodeNil() ? nil : decode(Double.self) }

    /// Reads the next field as a `String`, or `nil` when it is null.
    @inlinable @inline(__always)
    public mutating func decodeIfPresent() throws -> String? { try decodeNil() ? nil : decode(String.self) }

    /// Reads the next field as a `Bool`, or `nil` when it is null.
    @inlinable @inline(__always)
    public mutating func decodeIfPresent() throws -> Bool? { try decodeNil() ? nil : decode(Bool.self) }

    /// Reads the next field as a `Date`, or `nil` when it is null.
    @inlinable @inline(__always)
    public mutating func decodeIfPresent() throws -> Date? { try decodeNil() ? nil : decode(Date.self) }

    /// Reads the next field as `Data`, or `nil` when it is null.
    @inlinable @inline(__always)
    public mutating func decodeIfPresent() throws -> Data? { try decodeNil() ? nil : decode(Data.self) }
}

extension Int64: ReadableField {
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> Int64 { try reader.decode(Int64.self) }
}

extension Int: ReadableField {
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> Int {
        let value = try reader.decode(Int64.self)
        guard let int = Int(exactly: value) else { throw reader.error("\(value) does not fit Int") }
        return int
    }
}

extension Int32: ReadableField {
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> Int32 {
        let value = try reader.decode(Int64.self)
        guard let int = Int32(exactly: value) else { throw reader.error("\(value) does not fit Int32") }
        return int
    }
}

extension Double: ReadableField {
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> Double { try reader.decode(Double.self) }
}

extension String: ReadableField {
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> String { try reader.decode(String.self) }
}

extension Bool: ReadableField {
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> Bool { try reader.decode(Bool.self) }
}

extension Date: ReadableField {
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> Date { try reader.decode(Date.self) }
}

extension Data: ReadableField {
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> Data { try reader.decode(Data.self) }
}

extension Int16: ReadableField {
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> Int16 {
        let value = try reader.decode(Int64.self)
        guard let int = Int16(exactly: value) else { throw reader.error("\(value) does not fit Int16") }
        return int
    }
}

extension Int8: ReadableField {
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> Int8 {
        let value = try reader.decode(Int64.self)
        guard let int = Int8(exactly: value) else { throw reader.error("\(value) does not fit Int8") }
        return int
    }
}

extension UInt32: ReadableField {
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> UInt32 {
        let value = try reader.decode(Int64.self)
        guard let int = UInt32(exactly: value) else { throw reader.error("\(value) does not fit UInt32") }
        return int
    }
}

extension Float: ReadableField {
    /// Reads a double and narrows it; a value that is no `Float` is an error,
    /// except NaN, which narrows to NaN.
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> Float {
        let value = try reader.decode(Double.self)
        if value.isNaN { return .nan }
        guard let float = Float(exactly: value) else { throw reader.error("\(value) is not exactly a Float") }
        return float
    }
}

extension UUID: ReadableField {
    /// Reads the UUID's text; text that is no UUID is an error.
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> UUID {
        let text = try reader.decode(String.self)
        guard let uuid = UUID(uuidString: text) else { throw reader.error("'\(text)' is not a UUID") }
        return uuid
    }
}

extension Optional: ReadableField where Wrapped: ReadableField {
    /// Reads `nil` for a null field, else the wrapped value.
    @inlinable
    public static func read(from reader: inout some FieldReader) throws -> Wrapped? {
        try reader.decodeNil() ? nil : Wrapped.read(from: &reader)
    }
}

extension ReadableField where Self: RawRepresentable, RawValue: ReadableField {
    /// Reads the raw value and makes the case; an unknown raw value is an error.
    public static func read(from reader: inout some FieldReader) throws -> Self {
        let raw = try reader.decode(RawValue.self)
        guard let value = Self(rawValue: raw) else { throw reader.error("'\(raw)' is not a case of \(Self.self)") }
        return value
    }
}

/// A ``FieldReader`` over stored values, in field order: what a record's fields
/// hold, as ``Field/value(in:)`` reads them.
public struct StoredValueReader: FieldReader {
    private let values: [StoredValue]
    private let entity: String
    private var position = 0

    /// Reads `values` as the fields of a record of entity `entity`.
    public init(_ values: [StoredValue], entity: String) {
        self.values = values
        self.entity = entity
    }

    private mutating func next() throws -> StoredValue {
        guard position < values.count else { throw error("the record has only \(values.count) fields") }
        defer { position += 1 }
        return values[position]
    }

    public mutating func decode(_ type: Int64.Type) throws -> Int64 {
        guard case .integer(let value) = try next() else { throw error("expected an integer") }
        return value
    }

    public mutating func decode(_ type: Double.Type) throws -> Double {
        switch try next() {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: throw error("expected a number")
        }
    }

    public mutating func decode(_ type: String.Type) throws -> String {
        guard case .text(let value) = try next() else { throw error("expected text") }
        return value
    }

    public mutating func decode(_ type: Bool.Type) throws -> Bool {
        guard case .integer(let value) = try next(), value == 0 || value == 1 else { throw error("expected 0 or 1") }
        return value == 1
    }

    public mutating func decode(_ type: Date.Type) throws -> Date {
        guard case .real(let value) = try next() else { throw error("expected a date (a double)") }
        return Date(storedSeconds: value)
    }

    public mutating func decode(_ type: Data.Type) throws -> Data {
        guard case .blob(let value) = try next() else { throw error("expected bytes") }
        return Data(value)
    }

    public mutating func decodeNil() throws -> Bool {
        guard position < values.count, values[position] == .null else { return false }
        position += 1
        return true
    }

    public func error(_ message: String) -> StorageError {
        StorageError(.decoding, .read, entity: entity, message: "field \(position): \(message)")
    }
}
