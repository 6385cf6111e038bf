import DAOCore
import Foundation
import NIOCore
import PostgresNIO

/// The rows of one table gathered for one statement, a column at a time:
/// each column's values written once, as the elements of a one-dimensional
/// array in PostgreSQL's binary form, which the statement binds and
/// `unnest`s (one parameter per column, whatever the number of rows).
///
/// A row is written field by field (it is the ``FieldWriter`` of a
/// ``FieldwiseRecord``'s `write(fields:)` and of DAOCore's ``CodableFields``
/// for a record that only conforms to `Codable`), with the conversions
/// ``PostgresValue`` documents; a value of another type than its column's
/// is refused with ``StorageError/Kind/encoding`` when the row ends.
struct ColumnArrays: FieldWriter {
    let types: [FieldType]
    let entity: String
    private var columns: [ByteBuffer]
    private var hasNull: [Bool]
    /// The rows ended.
    private(set) var count = 0
    /// The column the next value goes to.
    private var position = 0
    /// Why the row being written is refused, if it is.
    private var refusal: String?

    /// The size of the header each column's buffer starts with: dimensions,
    /// flags, element type, then the length and lower bound of the one dimension.
    private static let headerSize = 20

    /// The most bytes a text or bytes value may hold: ``fieldLimit``, or less
    /// in tests.
    private let limit: Int

    init(types: [FieldType], entity: String, rows: Int, fieldLimit limit: Int = Self.fieldLimit) {
        self.limit = limit
        self.types = types
        self.entity = entity
        hasNull = Array(repeating: false, count: types.count)
        columns = types.map { type in
            var buffer = PostgresValue.allocator.buffer(capacity: Self.headerSize + rows * Self.elementSize(type))
            buffer.writeRepeatingByte(0, count: Self.headerSize)
            return buffer
        }
    }

    private static func elementSize(_ type: FieldType) -> Int {
        switch type {
        case .integer, .real, .date: 12
        case .bool: 5
        case .text, .blob: 24
        }
    }

    // MARK: Rows

    /// Ends the row written since the last one ended.
    /// - Throws: ``StorageError/Kind/encoding`` when a value did not fit its
    ///   column or the row wrote another number of fields than the columns.
    mutating func endRow() throws {
        defer {
            position = 0
            refusal = nil
        }
        if let refusal { throw StorageError(.encoding, .persist, entity: entity, message: refusal) }
        guard position == types.count else {
            throw StorageError(
                .encoding, .persist, entity: entity,
                message: "the record wrote \(position) fields where its entity declares \(types.count)")
        }
        count += 1
    }

    /// The arrays, one a column, as the statement's parameters. The
    /// columns' buffers are handed over (the value holds none afterwards):
    /// each header is written in place, without a copy of the column.
    mutating func arrays() -> [PostgresData] {
        var columns = self.columns
        self.columns = []
        var arrays: [PostgresData] = []
        arrays.reserveCapacity(columns.count)
        for column in columns.indices {
            let type = types[column]
            let element = PostgresValue.dataType(type)
            if count == 0 {
                // An empty array has no dimension.
                var empty = PostgresValue.allocator.buffer(capacity: 12)
                empty.writeInteger(Int32(0))
                empty.writeInteger(Int32(0))
                empty.writeInteger(Int32(bitPattern: element.rawValue))
                arrays.append(PostgresData(type: PostgresValue.arrayType(type), formatCode: .binary, value: empty))
                continue
            }
            // The header's five integers, stored through one access to the buffer.
            let header = (Int32(1), Int32(hasNull[column] ? 1 : 0), Int32(bitPattern: element.rawValue), Int32(count), Int32(1))
            columns[column].withUnsafeMutableReadableBytes { raw in
                raw.storeBytes(of: header.0.bigEndian, toByteOffset: 0, as: Int32.self)
                raw.storeBytes(of: header.1.bigEndian, toByteOffset: 4, as: Int32.self)
                raw.storeBytes(of: header.2.bigEndian, toByteOffset: 8, as: Int32.self)
                raw.storeBytes(of: header.3.bigEndian, toByteOffset: 12, as: Int32.self)
                raw.storeBytes(of: header.4.bigEndian, toByteOffset: 16, as: Int32.self)
            }
            arrays.append(PostgresData(type: PostgresValue.arrayType(type), formatCode: .binary, value: columns[column]))
        }
        return arrays
    }

    // MARK: Values

    /// The column of the next value, or `nil` (noted) when the row has no more columns.
    private mutating func next() -> FieldType? {
        guard position < types.count else {
            position += 1
            return nil
        }
        return types[position]
    }

    private mutating func refuse(_ what: String, _ column: FieldType) {
        if refusal == nil {
            refusal = "field \(position) holds \(what), which is not a \(column.rawValue)"
        }
        position += 1
    }

    /// The most bytes PostgreSQL stores in one field (1 GiB less one).
    static let fieldLimit = (1 << 30) - 1

    /// Refuses a text or bytes value of `count` bytes, more than a field holds.
    private mutating func refuseSize(_ what: String, _ count: Int) {
        if refusal == nil {
            refusal = "field \(position) holds \(count) bytes of \(what), more than PostgreSQL stores in a field "
                + "(\(limit))"
        }
        position += 1
    }

    // Each element is written as its length and its bytes by one reservation
    // of the buffer (one check of its capacity and uniqueness), the bytes
    // stored through its pointer.

    /// Appends the element `value` (its 4-byte length, then its bytes, big-endian).
    private mutating func writeFixed<T: FixedWidthInteger>(_ value: T) {
        let size = MemoryLayout<T>.size
        columns[position].writeWithUnsafeMutableBytes(minimumWritableBytes: 4 + size) { raw in
            raw.storeBytes(of: Int32(size).bigEndian, toByteOffset: 0, as: Int32.self)
            raw.storeBytes(of: value.bigEndian, toByteOffset: 4, as: T.self)
            return 4 + size
        }
        position += 1
    }

    private mutating func writeInt64(_ value: Int64) {
        writeFixed(value)
    }

    private mutating func writeDouble(_ value: Double) {
        writeFixed((value.isNaN ? Double.nan : value).bitPattern)
    }

    private mutating func writeBool(_ value: Bool) {
        writeFixed(value ? 1 as UInt8 : 0)
    }

    private mutating func writeText(_ value: String) {
        guard value.utf8.count <= limit else { return refuseSize("text", value.utf8.count) }
        var value = value
        // Text without U+0000 and U+0001 (nearly all) is its UTF-8 bytes, copied at once.
        let copied = value.withUTF8 { bytes -> Bool in
            guard !bytes.contains(where: { $0 <= 1 }) else { return false }
            columns[position].writeWithUnsafeMutableBytes(minimumWritableBytes: 4 + bytes.count) { raw in
                raw.storeBytes(of: Int32(bytes.count).bigEndian, toByteOffset: 0, as: Int32.self)
                UnsafeMutableRawBufferPointer(rebasing: raw[4...]).copyMemory(from: UnsafeRawBufferPointer(bytes))
                return 4 + bytes.count
            }
            return true
        }
        if copied {
            position += 1
            return
        }
        let start = columns[position].writerIndex
        columns[position].writeInteger(Int32(0))
        TextEscape.write(value, to: &columns[position])
        let length = columns[position].writerIndex - start - 4
        guard length <= limit else { return refuseSize("escaped text", length) }
        columns[position].setInteger(Int32(length), at: start)
        position += 1
    }

    private mutating func writeBytes(_ value: some Collection<UInt8>) {
        guard value.count <= limit else { return refuseSize("bytes", value.count) }
        columns[position].writeInteger(Int32(value.count))
        columns[position].writeBytes(value)
        position += 1
    }

    mutating func encode(_ value: Int64) throws {
        guard let column = next() else { return }
        switch column {
        case .integer: writeInt64(value)
        // A field declared bool but written as an integer is stored as the column's type.
        case .bool: writeBool(value != 0)
        case .real, .date:
            guard let real = Double(exactly: value) else { return refuse("\(value)", column) }
            writeDouble(real)
        case .text, .blob: refuse("the integer \(value)", column)
        }
    }

    mutating func encode(_ value: Double) throws {
        guard let column = next() else { return }
        switch column {
        case .real, .date: writeDouble(value)
        default: refuse("the real \(value)", column)
        }
    }

    mutating func encode(_ value: String) throws {
        guard let column = next() else { return }
        guard column == .text else { return refuse("text", column) }
        writeText(value)
    }

    mutating func encode(_ value: Bool) throws {
        guard let column = next() else { return }
        switch column {
        case .bool: writeBool(value)
        case .integer: writeInt64(value ? 1 : 0)
        default: refuse("the boolean \(value)", column)
        }
    }

    mutating func encode(_ value: Date) throws {
        guard let column = next() else { return }
        switch column {
        case .real, .date: writeDouble(value.timeIntervalSinceReferenceDate)
        default: refuse("a date", column)
        }
    }

    mutating func encode(_ value: Data) throws {
        guard let column = next() else { return }
        guard column == .blob else { return refuse("bytes", column) }
        writeBytes(value)
    }

    /// Writes a stored value (a row a migration read) as the next field,
    /// with the conversions of ``PostgresValue/bind(_:as:)``: an integer goes
    /// into a bool column only as 0 or 1.
    mutating func write(_ value: StoredValue) throws {
        switch value {
        case .null: try encodeNil()
        case .integer(let integer):
            if position < types.count, types[position] == .bool, integer != 0, integer != 1 {
                return refuse("the integer \(integer)", .bool)
            }
            try encode(integer)
        case .real(let real): try encode(real)
        case .text(let text): try encode(text)
        case .blob(let bytes):
            guard let column = next() else { return }
            guard column == .blob else { return refuse("bytes", column) }
            writeBytes(bytes)
        }
    }

    mutating func encodeNil() throws {
        guard next() != nil else { return }
        hasNull[position] = true
        columns[position].writeInteger(Int32(-1))
        position += 1
    }
}

extension PostgresValue {
    /// The array type of a field type's column.
    static func arrayType(_ type: FieldType) -> PostgresDataType {
        switch type {
        case .integer: .int8Array
        case .bool: .boolArray
        case .real, .date: .float8Array
        case .text: .textArray
        case .blob: .byteaArray
        }
    }

    /// The SQL array type a field type's column binds as (`bigint[]`).
    static func sqlArrayType(_ type: FieldType) -> String {
        catalogueType(type) + "[]"
    }

    /// The identity of a key as the column's unique index sees it: reals
    /// equal as numbers (`-0.0` and `0.0`, every NaN, an integer and the real
    /// of its value) are one key there, so one key here.
    static func keyIdentity(_ key: StoredValue, _ type: FieldType) -> StoredValue {
        switch (key, type) {
        case (.real(let real), .real), (.real(let real), .date):
            if real.isNaN { return .real(.nan) }
            return .real(real == 0 ? 0 : real)
        case (.integer(let integer), .real), (.integer(let integer), .date):
            guard let real = Double(exactly: integer) else { return key }
            return .real(real == 0 ? 0 : real)
        default:
            return key
        }
    }
}
