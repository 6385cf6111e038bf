import DAOCore
import Foundation
import NIOCore
import PostgresNIO

/// How each stored value is a typed PostgreSQL value, in binary form:
///
/// | field type | column | bound and read as |
/// | --- | --- | --- |
/// | integer | `bigint` | int8 |
/// | bool | `boolean` | bool |
/// | real | `double precision` | float8, its 8 bytes: `-0.0` kept; a NaN stored as the canonical NaN |
/// | date | `double precision` | float8: seconds since 2001-01-01 UTC, bit for bit (a `timestamptz` keeps microseconds only) |
/// | text | `text COLLATE "C"` | UTF-8; U+0000 and U+0001 escaped (``TextEscape``) |
/// | blob | `bytea` | bytes |
enum PostgresValue {
    static let allocator = ByteBufferAllocator()

    /// The column type of a field type.
    static func columnType(_ type: FieldType) -> String {
        switch type {
        case .integer: "bigint"
        case .bool: "boolean"
        case .real, .date: "double precision"
        case .text: "text COLLATE \"C\""
        case .blob: "bytea"
        }
    }

    /// The catalogue's name of a field type's column type (`format_type`).
    static func catalogueType(_ type: FieldType) -> String {
        switch type {
        case .integer: "bigint"
        case .bool: "boolean"
        case .real, .date: "double precision"
        case .text: "text"
        case .blob: "bytea"
        }
    }

    static func int8(_ value: Int64) -> PostgresData {
        var buffer = allocator.buffer(capacity: 8)
        buffer.writeInteger(value)
        return PostgresData(type: .int8, formatCode: .binary, value: buffer)
    }

    static func float8(_ value: Double) -> PostgresData {
        var buffer = allocator.buffer(capacity: 8)
        buffer.writeInteger((value.isNaN ? Double.nan : value).bitPattern)
        return PostgresData(type: .float8, formatCode: .binary, value: buffer)
    }

    static func bool(_ value: Bool) -> PostgresData {
        var buffer = allocator.buffer(capacity: 1)
        buffer.writeInteger(value ? 1 as UInt8 : 0)
        return PostgresData(type: .bool, formatCode: .binary, value: buffer)
    }

    static func text(_ value: String) -> PostgresData {
        var buffer = allocator.buffer(capacity: value.utf8.count)
        TextEscape.write(value, to: &buffer)
        return PostgresData(type: .text, formatCode: .binary, value: buffer)
    }

    static func bytea(_ bytes: some Collection<UInt8>) -> PostgresData {
        var buffer = allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        return PostgresData(type: .bytea, formatCode: .binary, value: buffer)
    }

    static func null(_ type: FieldType) -> PostgresData {
        PostgresData(type: dataType(type), formatCode: .binary, value: nil)
    }

    static func dataType(_ type: FieldType) -> PostgresDataType {
        switch type {
        case .integer: .int8
        case .bool: .bool
        case .real, .date: .float8
        case .text: .text
        case .blob: .bytea
        }
    }

    /// `value` bound to a column of `type`, or `nil` when it is not a value
    /// of that type (the caller evaluates such a comparison in memory).
    static func bind(_ value: StoredValue, as type: FieldType) -> PostgresData? {
        switch (value, type) {
        case (.null, _): return null(type)
        case (.integer(let integer), .integer): return int8(integer)
        case (.integer(let integer), .bool): return integer == 0 || integer == 1 ? bool(integer == 1) : nil
        case (.integer(let integer), .real), (.integer(let integer), .date):
            return Double(exactly: integer).map(float8)
        case (.real(let real), .real), (.real(let real), .date): return float8(real)
        case (.text(let text), .text): return PostgresValue.text(text)
        case (.blob(let bytes), .blob): return bytea(bytes)
        default: return nil
        }
    }

    /// The stored value of a cell of a column of `type`.
    static func storedValue(_ cell: PostgresCell, _ type: FieldType, entity: String) throws -> StoredValue {
        guard var bytes = cell.bytes else { return .null }
        switch type {
        case .integer:
            guard let value = bytes.readInteger(as: Int64.self) else { throw corrupt(cell, entity) }
            return .integer(value)
        case .bool:
            guard let value = bytes.readInteger(as: UInt8.self) else { throw corrupt(cell, entity) }
            return .integer(value == 0 ? 0 : 1)
        case .real, .date:
            guard let bits = bytes.readInteger(as: UInt64.self) else { throw corrupt(cell, entity) }
            return .real(Double(bitPattern: bits))
        case .text:
            return .text(TextEscape.read(&bytes))
        case .blob:
            return .blob(bytes.readBytes(length: bytes.readableBytes) ?? [])
        }
    }

    static func corrupt(_ cell: PostgresCell, _ entity: String) -> StorageError {
        StorageError(
            .corrupt, .read, entity: entity,
            message: "column '\(cell.columnName)' holds a value of type \(cell.dataType) that does not read as declared")
    }
}

/// PostgreSQL's text cannot hold U+0000. Text is stored with U+0000 written
/// as the bytes 01 01 and U+0001 as 01 02; every other byte is itself. The
/// escape keeps the order of UTF-8 bytes (the order of `COLLATE "C"`),
/// equality, and prefixes, so comparisons, sorts, indexes and
/// `starts(with:)` run on the stored text unchanged; text without those
/// two characters is stored as it is.
enum TextEscape {
    static func needsEscape(_ text: String) -> Bool {
        // A native string's bytes are contiguous: scanned as a buffer, the
        // test is a plain loop over bytes rather than a walk of the view's indices.
        if let found = text.utf8.withContiguousStorageIfAvailable({ bytes in bytes.contains { $0 <= 1 } }) {
            return found
        }
        return text.utf8.contains { $0 <= 1 }
    }

    static func escaped(_ text: String) -> String {
        guard needsEscape(text) else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 4)
        for byte in text.utf8 {
            if byte <= 1 {
                bytes.append(1)
                bytes.append(byte + 1)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func write(_ text: String, to buffer: inout ByteBuffer) {
        guard needsEscape(text) else {
            buffer.writeString(text)
            return
        }
        for byte in text.utf8 {
            if byte <= 1 {
                buffer.writeInteger(1 as UInt8)
                buffer.writeInteger(byte + 1)
            } else {
                buffer.writeInteger(byte)
            }
        }
    }

    static func read(_ buffer: inout ByteBuffer) -> String {
        let escaped = buffer.readableBytesView.contains(1)
        guard escaped else { return buffer.readString(length: buffer.readableBytes) ?? "" }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(buffer.readableBytes)
        var pending = false
        for byte in buffer.readableBytesView {
            if pending {
                bytes.append(byte - 1)
                pending = false
            } else if byte == 1 {
                pending = true
            } else {
                bytes.append(byte)
            }
        }
        buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Reads a record's fields from the cells of a row, in field order.
struct CellReader: FieldReader {
    private var iterator: PostgresRow.Iterator
    private let entity: String
    private var position = 0
    private var peeked: PostgresCell?

    /// A reader of `row`'s cells from the one after the first `skipping`.
    init(_ row: PostgresRow, entity: String, skipping: Int = 0) {
        iterator = row.makeIterator()
        self.entity = entity
        for _ in 0..<skipping { _ = iterator.next() }
    }

    private mutating func next() throws -> PostgresCell {
        position += 1
        if let cell = peeked {
            peeked = nil
            return cell
        }
        guard let cell = iterator.next() else { throw error("the row has fewer columns than the record reads") }
        return cell
    }

    private mutating func bytes() throws -> ByteBuffer {
        let cell = try next()
        guard let bytes = cell.bytes else { throw error("column '\(cell.columnName)' is null") }
        return bytes
    }

    mutating func decode(_ type: Int64.Type) throws -> Int64 {
        var bytes = try bytes()
        if bytes.readableBytes == 1, let flag = bytes.readInteger(as: UInt8.self) { return flag == 0 ? 0 : 1 }
        guard let value = bytes.readInteger(as: Int64.self) else { throw error("expected an integer") }
        return value
    }

    mutating func decode(_ type: Double.Type) throws -> Double {
        var bytes = try bytes()
        guard bytes.readableBytes == 8, let bits = bytes.readInteger(as: UInt64.self) else { throw error("expected a real") }
        return Double(bitPattern: bits)
    }

    mutating func decode(_ type: String.Type) throws -> String {
        var bytes = try bytes()
        return TextEscape.read(&bytes)
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        var bytes = try bytes()
        if bytes.readableBytes == 8, let value = bytes.readInteger(as: Int64.self), value == 0 || value == 1 { return value == 1 }
        guard bytes.readableBytes == 1, let flag = bytes.readInteger(as: UInt8.self) else { throw error("expected a boolean") }
        return flag != 0
    }

    mutating func decode(_ type: Date.Type) throws -> Date {
        try Date(timeIntervalSinceReferenceDate: decode(Double.self))
    }

    mutating func decode(_ type: Data.Type) throws -> Data {
        let bytes = try bytes()
        return Data(bytes.readableBytesView)
    }

    mutating func decodeNil() throws -> Bool {
        if peeked == nil { peeked = iterator.next() }
        guard let cell = peeked, cell.bytes == nil else { return false }
        peeked = nil
        position += 1
        return true
    }

    func error(_ message: String) -> StorageError {
        StorageError(.decoding, .read, entity: entity, message: "field \(position): \(message)")
    }
}
