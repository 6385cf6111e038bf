import Foundation

/// Writes the fields of one record, one after another. Each adapter has its own
/// (binding an SQLite statement, building an LMDB value); ``StoredValueWriter``
/// collects ``StoredValue``s.
public protocol FieldWriter {
    /// Writes the next field as an integer.
    mutating func encode(_ value: Int64) throws
    /// Writes the next field as a double.
    mutating func encode(_ value: Double) throws
    /// Writes the next field as text.
    mutating func encode(_ value: String) throws
    /// Writes the next field as a boolean.
    mutating func encode(_ value: Bool) throws
    /// Writes the next field as a date.
    mutating func encode(_ value: Date) throws
    /// Writes the next field as bytes.
    mutating func encode(_ value: Data) throws
    /// Writes the next field as null.
    mutating func encodeNil() throws
}

/// A type a ``FieldWriter`` can write.
public protocol WritableField {
    /// Writes the value as the writer's next field.
    func write(to writer: inout some FieldWriter) throws
}

extension FieldWriter {
    /// Writes `value` as the next field.
    @inlinable
    public mutating func encode<T: WritableField>(_ value: T) throws {
        try value.write(to: &self)
    }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable
    public mutating func encodeIfPresent<T: WritableField>(_ value: T?) throws {
        if let value { try value.write(to: &self) } else { try encodeNil() }
    }
}

// Concrete overloads of `encode(_:)` and `encodeIfPresent(_:)` for optionals
// of the common field types. A record's `write(fields:)` runs unspecialized
// inside an adapter (generic over the adapter's private writer), and there the
// generic `encodeIfPresent<T>` has to look up the metadata of `Optional<T>` at
// run time on every call (about 300 instructions), and the generic `encode<T>`
// with an optional goes through `Optional`'s conformance. The compiler prefers
// these non-generic overloads when the field's type is exactly one of them: a
// test of the optional and one call to the writer's requirement. Writing is the
// same either way.
extension FieldWriter {
    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encodeIfPresent(_ value: Int64?) throws {
        if let value { try encode(value) } else { try encodeNil() }
    }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encodeIfPresent(_ value: Int?) throws {
        if let value { try encode(Int64(value)) } else { try encodeNil() }
    }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encodeIfPresent(_ value: Double?) throws {
        if let value { try encode(value) } else { try encodeNil() }
    }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encodeIfPresent(_ value: String?) throws {
        if let value { try encode(value) } else { try encodeNil() }
    }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encodeIfPresent(_ value: Bool?) throws {
        if let value { try encode(value) } else { try encodeNil() }
    }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encodeIfPresent(_ value: Date?) throws {
        if let value { try encode(value) } else { try encodeNil() }
    }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encodeIfPresent(_ value: Data?) throws {
        if let value { try encode(value) } else { try encodeNil() }
    }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Int64?) throws { try encodeIfPresent(value) }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Int?) throws { try encodeIfPresent(value) }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Double?) throws { try encodeIfPresent(value) }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encode(_ value: String?) throws { try encodeIfPresent(value) }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Bool?) throws { try encodeIfPresent(value) }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Date?) throws { try encodeIfPresent(value) }

    /// Writes `value` as the next field, or null when it is `nil`.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Data?) throws { try encodeIfPresent(value) }
}

extension Int64: WritableField {
    @inlinable
    public func write(to writer: inout some FieldWriter) throws { try writer.encode(self) }
}

extension Int: WritableField {
    @inlinable
    public func write(to writer: inout some FieldWriter) throws { try writer.encode(Int64(self)) }
}

extension Int32: WritableField {
    @inlinable
    public func write(to writer: inout some FieldWriter) throws { try writer.encode(Int64(self)) }
}

extension Double: WritableField {
    @inlinable
    public func write(to writer: inout some FieldWriter) throws { try writer.encode(self) }
}

extension String: WritableField {
    @inlinable
    public func write(to writer: inout some FieldWriter) throws { try writer.encode(self) }
}

extension Bool: WritableField {
    @inlinable
    public func write(to writer: inout some FieldWriter) throws { try writer.encode(self) }
}

extension Date: WritableField {
    @inlinable
    public func write(to writer: inout some FieldWriter) throws { try writer.encode(self) }
}

extension Data: WritableField {
    @inlinable
    public func write(to writer: inout some FieldWriter) throws { try writer.encode(self) }
}

extension Int16: WritableField {
    @inlinable
    public func write(to writer: inout some FieldWriter) throws { try writer.encode(Int64(self)) }
}

extension Int8: WritableField {
    @inlinable
    public func write(to writer: inout some FieldWriter) throws { try writer.encode(Int64(self)) }
}

extension UInt32: WritableField {
    @inlinable
    public func write(to writer: inout some FieldWriter) throws { try writer.encode(Int64(self)) }
}

extension Float: WritableField {
    @inlinable
    public func write(to writer: inout some FieldWriter) throws { try writer.encode(Double(self)) }
}

extension UUID: WritableField {
    /// Writes the UUID as its text (`uuidString`), as ``FieldValue`` stores it.
    @inlinable
    public func write(to writer: inout some FieldWriter) throws { try writer.encode(uuidString) }
}

extension Optional: WritableField where Wrapped: WritableField {
    /// Writes the wrapped value, or null.
    @inlinable
    public func write(to writer: inout some FieldWriter) throws {
        if let self { try self.write(to: &writer) } else { try writer.encodeNil() }
    }
}

extension WritableField where Self: RawRepresentable, RawValue: WritableField {
    /// Writes the raw value.
    public func write(to writer: inout some FieldWriter) throws { try rawValue.write(to: &writer) }
}

/// A ``FieldWriter`` that collects ``StoredValue``s, in field order.
public struct StoredValueWriter: FieldWriter {
    /// The values written so far.
    public private(set) var values: [StoredValue] = []

    /// An empty writer.
    public init() {}

    public mutating func encode(_ value: Int64) throws { values.append(.integer(value)) }
    public mutating func encode(_ value: Double) throws { values.append(.real(value)) }
    public mutating func encode(_ value: String) throws { values.append(.text(value)) }
    public mutating func encode(_ value: Bool) throws { values.append(.integer(value ? 1 : 0)) }
    public mutating func encode(_ value: Date) throws { values.append(.real(value.storedSeconds)) }
    public mutating func encode(_ value: Data) throws { values.append(.blob([UInt8](value))) }
    public mutating func encodeNil() throws { values.append(.null) }
}
