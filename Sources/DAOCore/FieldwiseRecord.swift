import Foundation

/// A record that reads and writes its stored fields one after another, in the
/// order of its entity's ``Entity/fields``, without `Codable`.
///
/// Adapters read and write a record this way when its type adopts the
/// protocol, and through `Codable` otherwise. Going by position costs a few
/// dozen instructions a field, where `Codable`'s keyed containers cost hundreds,
/// so a record stored in bulk (a dialog's messages) is worth the two
/// hand-written members:
///
/// ```swift
/// extension NoteRecord: FieldwiseRecord {
///     init(fields: inout some FieldReader) throws {
///         self.init(id: try fields.decode(), text: try fields.decode(), pinned: try fields.decode())
///     }
///     func write(fields: inout some FieldWriter) throws {
///         try fields.encode(id)
///         try fields.encode(text)
///         try fields.encode(pinned)
///     }
/// }
/// ```
///
/// For such a record the declared fields are its whole stored shape.
/// Relations are not fields: the initializer leaves them empty and the adapter
/// fills them; `write(fields:)` skips them. A test in the project checks that
/// each adopting record writes and reads its fields in declaration order.
public protocol FieldwiseRecord: Record {
    /// Creates the record from its fields, read in the order of `entity.fields`.
    /// - Throws: the reader's ``StorageError`` when a field is missing, null
    ///   where it may not be, or of another type.
    init(fields: inout some FieldReader) throws

    /// Writes the record's fields in the order of `entity.fields`.
    /// - Throws: the writer's ``StorageError``.
    func write(fields: inout some FieldWriter) throws

    /// Reads a record from each row of `rows` (a statement's rows, one
    /// column per field) and appends it to `records`: every row, or with
    /// ``ColumnRows/groupColumn`` the rows of one run (the rows with the same
    /// integer in that column; a row with no integer there is read and
    /// dropped). With ``ColumnRows/inKeyOrder`` the records come in the order
    /// of the integers in column 0. Stops at the end of the rows or at a step
    /// that fails (``ColumnRows/status`` says which).
    ///
    /// Provided by the protocol (records do not implement it): the default
    /// implementation is inlinable, so each record type's conformance holds a
    /// copy specialized for the record, which reads each field with one call
    /// into the engine and builds the array without generic dispatch.
    /// - Throws: the reader's ``StorageError`` for a row that does not read
    ///   as a record.
    static func readRows(_ rows: inout ColumnRows, into records: inout [Self]) throws

    /// Binds the fields of each of `records` in turn to `writer`'s
    /// parameters (``ColumnRowWriter/rewind()``, `write(fields:)`,
    /// ``ColumnRowWriter/finish()``), and after each calls `row` with the
    /// writer and the record's index, to run the statement.
    ///
    /// Provided by the protocol (records do not implement it), for the same
    /// reason as ``readRows(_:into:)``: each record type's conformance holds a
    /// copy specialized for it, which binds each field with one call into the
    /// engine and does not copy the records.
    /// - Throws: the writer's error or `row`'s, stopping there.
    static func writeRows(
        _ records: [Self], to writer: inout ColumnRowWriter, _ row: (inout ColumnRowWriter, Int) throws -> Void
    ) throws

    /// Writes the record's fields to `writer`, in the packed value format
    /// (the LMDB adapter's values).
    ///
    /// Provided by the protocol (records do not implement it): the default
    /// implementation is inlinable, so each record type's conformance holds a
    /// copy of `write(fields:)` specialized for ``PackedFieldWriter``, which
    /// writes each field without a call through a witness table.
    /// - Throws: the writer's ``StorageError``.
    func writePacked(to writer: inout PackedFieldWriter) throws

    /// ``writePacked(to:)`` of the record `record` points to, read where it
    /// is: code generic over the record type (an adapter's) calling the
    /// instance method copied the record first (a value-witness copy and
    /// destroy per record).
    ///
    /// Provided by the protocol (records do not implement it), for the same
    /// reason as ``writePacked(to:)``.
    /// - Throws: the writer's ``StorageError``.
    static func writePacked(at record: UnsafePointer<Self>, to writer: inout PackedFieldWriter) throws

    /// Reads a record from `reader`, a value in the packed format.
    ///
    /// Provided by the protocol (records do not implement it), for the same
    /// reason as ``writePacked(to:)``.
    /// - Throws: the reader's ``StorageError``.
    static func readPacked(from reader: inout PackedFieldReader) throws -> Self

    /// Reads a record from each value `rows` hands over
    /// (``PackedRows/next()``), in order, calling ``PackedRows/finish(_:)``
    /// after each, and returns them.
    ///
    /// Provided by the protocol (records do not implement it): the default
    /// implementation is inlinable, so each record type's conformance holds a
    /// copy specialized for it, which builds each record in the array it
    /// returns. Read one at a time from an adapter's code, which is not
    /// specialized for the record type, a record cost a call through the
    /// conformance, a copy into the adapter's buffer and that buffer's
    /// moves, and generic metadata look-ups for the array.
    /// - Throws: the reader's ``StorageError``, or what `rows` throws.
    static func readPacked(rows: PackedRows) throws -> [Self]

    /// Writes the record's fields to `scanner` (see ``FieldScanWriter``):
    /// the first `Date` of `-0.0` seconds, whether a real is `-0.0` or a
    /// NaN, and the stored values at the positions it keeps.
    ///
    /// Provided by the protocol (records do not implement it), for the same
    /// reason as ``writePacked(to:)``: the check of every record written
    /// runs in the adapters' unspecialized code, where a pass through a
    /// generic writer costs a witness call per field.
    /// - Throws: what `write(fields:)` throws.
    func scanFields(_ scanner: inout FieldScanWriter) throws

    /// Scans each of `records` in turn (``scanFields(_:)``): appends the
    /// stored value at position `first` of each to `firsts` and at `second`
    /// to `seconds` (-1 for none); notes whether a real is `-0.0` or a NaN;
    /// with `stoppingAtNegativeZeroDate`, stops at the first record that
    /// holds a `Date` of `-0.0` seconds
    /// (``Entity/checkRealsForPropertyList(_:)-(Root)``), noting its index
    /// and the field's position.
    ///
    /// Provided by the protocol (records do not implement it), for the same
    /// reason as ``scanFields(_:)``; for many records (a parent's children)
    /// the loop itself is specialized too, where a call per record through a
    /// closure copied the record and the scanner.
    /// - Throws: what `write(fields:)` throws, stopping there.
    static func scanFields(
        of records: [Self], keeping first: Int, and second: Int, into firsts: inout [StoredValue],
        _ seconds: inout [StoredValue], stoppingAtNegativeZeroDate: Bool
    ) throws -> RealsScan
}

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

extension FieldwiseRecord {
    /// The values `write(fields:)` writes, in order.
    public func writtenFields() throws -> [StoredValue] {
        var writer = StoredValueWriter()
        try write(fields: &writer)
        return writer.values
    }

    /// The record rebuilt from its own field values: equal to it, relations
    /// emptied, when `init(fields:)` reads the fields in declaration order.
    public func rebuiltFromFields() throws -> Self {
        var reader = StoredValueReader(Self.entity.fields.map { $0.value(in: self) }, entity: Self.entity.name)
        return try Self(fields: &reader)
    }
}
