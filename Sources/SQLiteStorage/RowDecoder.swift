import CSQLite
import DAOCore
import Foundation

/// Decodes records straight from the current row of a statement through their
/// `Codable` conformance: each key reads the column of its field. One decoder
/// serves every row of a call.
///
/// A relation key decodes as an empty array; the storage attaches the children
/// read from the child table afterwards. A key the entity does not declare throws
/// ``StorageError/Kind/schemaMismatch``.
final class RowDecoder: Decoder {
    let layout: RowLayout
    let statement: Statement
    let handle: OpaquePointer
    /// The number of columns of a row (the entity's fields).
    let columnCount: Int32
    var next = 0

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(layout: RowLayout, statement: Statement) {
        self.layout = layout
        self.statement = statement
        self.handle = statement.handle
        self.columnCount = Int32(layout.names.count)
    }

    /// The record type last decoded, and whether it reads its fields by position.
    private var decodedType: Any.Type?
    private var fieldwiseType: (any FieldwiseRecord.Type)?

    /// Decodes the statement's current row as a `T` into the uninitialized
    /// `slot`: by position when `T` is a ``FieldwiseRecord``, through
    /// `Decodable` otherwise. The slot is left uninitialized when it throws.
    ///
    /// The record is built in place: returning it from generic code and
    /// storing it again copied it (retaining its strings) and destroyed the
    /// original, once per row.
    ///
    /// Returns the integer the record read from column 0 (the primary key)
    /// by position, if it read one, so a caller that needs the row's key
    /// need not ask SQLite for it again.
    @inline(__always) @discardableResult
    func decodeRow<T: Decodable>(_ type: T.Type, into slot: UnsafeMutablePointer<T>) throws -> Int64? {
        if decodedType != T.self {
            decodedType = T.self
            fieldwiseType = T.self as? any FieldwiseRecord.Type
        }
        if let fieldwiseType {
            return try decodeFieldwise(fieldwiseType, into: slot)
        }
        next = 0
        slot.initialize(to: try T(from: self))
        return nil
    }

    private func decodeFieldwise<F: FieldwiseRecord, T>(_ type: F.Type, into slot: UnsafeMutablePointer<T>) throws -> Int64? {
        // `F` is `T` (the caller found `F` by casting `T.self`): compare the
        // metatypes and build the record in the slot as an `F`, where `as? T`
        // ran a dynamic cast through `Optional<T>`'s metadata on every record.
        guard F.self == T.self else {
            throw StorageError(.decoding, .read, entity: layout.entityName, message: "\(F.self) is not \(T.self)")
        }
        var reader = ColumnReader(decoder: self)
        UnsafeMutableRawPointer(slot).assumingMemoryBound(to: F.self).initialize(to: try F(fields: &reader))
        return reader.readsKey ? reader.key : nil
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RowDecodingContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw shapeError() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw shapeError() }

    func shapeError() -> StorageError {
        StorageError(
            .decoding, .read, entity: layout.entityName,
            message: "a record must decode from a keyed container, one key per column")
    }

    /// The 0-based column of `key`.
    @inline(__always)
    func column(for key: some CodingKey) throws -> Int32 {
        let name = key.stringValue
        guard let column = layout.column(of: name, guess: next) else { throw layout.unknownKey(name, .read) }
        next = column + 1
        return Int32(column)
    }

    func rangeError(_ column: Int32, _ type: Any.Type) -> StorageError {
        StorageError(
            .decoding, .read, entity: layout.entityName,
            message: "the value \(sqlite3_column_int64(handle, column)) of column '\(layout.names[Int(column)])' does not fit \(type)")
    }

    // Each read takes the column's value object once and checks its storage
    // class (see ``ColumnRowReader``): NULL, or text in an integer column,
    // read as 0 through `sqlite3_column_int64`; here it is `corrupt`.

    @inline(__always)
    func int64(_ column: Int32) throws -> Int64 {
        let value = sqlite3_column_value(handle, column)
        let type = sqlite3_value_type(value)
        guard type == SQLITE_INTEGER else { throw layout.storageClassError(column, type) }
        return sqlite3_value_int64(value)
    }

    @inline(__always)
    func integer<I: FixedWidthInteger>(_ column: Int32, as type: I.Type) throws -> I {
        guard let value = I(exactly: try int64(column)) else { throw rangeError(column, type) }
        return value
    }

    @inline(__always)
    func double(_ column: Int32) throws -> Double {
        let value = sqlite3_column_value(handle, column)
        let type = sqlite3_value_type(value)
        guard type == SQLITE_FLOAT || type == SQLITE_INTEGER else {
            if let nan = sqliteNaN(value) { return nan }
            throw layout.storageClassError(column, type)
        }
        return sqlite3_value_double(value)
    }

    @inline(__always)
    func string(_ column: Int32) throws -> String {
        let value = sqlite3_column_value(handle, column)
        let type = sqlite3_value_type(value)
        guard type == SQLITE_TEXT, let bytes = sqlite3_value_text(value) else {
            throw layout.storageClassError(column, type)
        }
        return UTF8Text.string(UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value))))
    }

    @inline(__always)
    func bytes(_ column: Int32) throws -> Data {
        let value = sqlite3_column_value(handle, column)
        let type = sqlite3_value_type(value)
        guard type == SQLITE_BLOB else { throw layout.storageClassError(column, type) }
        guard let bytes = sqlite3_value_blob(value) else { return Data() }
        return Data(bytes: bytes, count: Int(sqlite3_value_bytes(value)))
    }

    func value<T: Decodable>(_ type: T.Type, at column: Int32) throws -> T {
        if T.self == Date.self {
            return unsafeBitCast(Date(timeIntervalSinceReferenceDate: try double(column)), to: T.self)
        }
        if T.self == Data.self {
            return unsafeBitCast(try bytes(column), to: T.self)
        }
        return try T(from: ColumnDecoder(decoder: self, column: column))
    }
}

/// The keyed container of ``RowDecoder``.
/// Reads the columns of the current row one after another, for a
/// ``FieldwiseRecord``: the fields are the columns, in the same order.
struct ColumnReader: FieldReader {
    /// Not retained: a reader lives only while its decoder decodes one row
    /// (``RowDecoder/decodeRow(_:into:)``), and retaining and releasing the
    /// decoder for every row cost about 80 instructions a row. Used only off
    /// the common paths (errors, blobs), which read the row through
    /// ``handle``: each use of an `unowned(unsafe)` reference as a strong one
    /// retains and releases it.
    unowned(unsafe) let decoder: RowDecoder
    let handle: OpaquePointer
    let count: Int32
    var column: Int32 = 0
    /// The integer read from column 0 (the primary key), when one was.
    var key: Int64 = 0
    var readsKey = false

    init(decoder: RowDecoder) {
        self.decoder = decoder
        self.handle = decoder.handle
        self.count = decoder.columnCount
    }

    /// The next column; reading past the last one is an error, never a call
    /// into SQLite with an index out of range.
    @inline(__always)
    private mutating func advance() throws -> Int32 {
        guard column < count else { throw error("the row has only \(count) columns") }
        defer { column += 1 }
        return column
    }

    // Inlined into the protocol witnesses, which the record's generic
    // `init(fields:)` calls: one call per field rather than two.
    @inline(__always)
    mutating func decode(_ type: Int64.Type) throws -> Int64 {
        let column = try advance()
        let value = try int64(column)
        if column == 0 {
            key = value
            readsKey = true
        }
        return value
    }
    @inline(__always)
    mutating func decode(_ type: Double.Type) throws -> Double { try double(advance()) }
    @inline(__always)
    mutating func decode(_ type: Bool.Type) throws -> Bool { try int64(advance()) != 0 }

    @inline(__always)
    mutating func decode(_ type: Date.Type) throws -> Date {
        Date(timeIntervalSinceReferenceDate: try double(advance()))
    }

    @inline(__always)
    mutating func decode(_ type: String.Type) throws -> String {
        let column = try advance()
        let value = sqlite3_column_value(handle, column)
        let type = sqlite3_value_type(value)
        guard type == SQLITE_TEXT, let bytes = sqlite3_value_text(value) else { throw classError(column, type) }
        return UTF8Text.string(UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value))))
    }

    /// The column as an integer; any other storage class (NULL among them,
    /// which SQLite reads as 0) is `corrupt`.
    @inline(__always)
    private func int64(_ column: Int32) throws -> Int64 {
        let value = sqlite3_column_value(handle, column)
        let type = sqlite3_value_type(value)
        guard type == SQLITE_INTEGER else { throw classError(column, type) }
        return sqlite3_value_int64(value)
    }

    /// The column as a double (a real, or an integer taken as its value);
    /// any other storage class is `corrupt`.
    @inline(__always)
    private func double(_ column: Int32) throws -> Double {
        let value = sqlite3_column_value(handle, column)
        let type = sqlite3_value_type(value)
        guard type == SQLITE_FLOAT || type == SQLITE_INTEGER else {
            if let nan = sqliteNaN(value) { return nan }
            throw classError(column, type)
        }
        return sqlite3_value_double(value)
    }

    private func classError(_ column: Int32, _ type: Int32) -> StorageError {
        decoder.layout.storageClassError(column, type)
    }

    mutating func decode(_ type: Data.Type) throws -> Data {
        try decoder.bytes(advance())
    }

    mutating func decodeNil() throws -> Bool {
        guard column < count else { return false }
        guard sqlite3_column_type(handle, column) == SQLITE_NULL else { return false }
        column += 1
        return true
    }

    func error(_ message: String) -> StorageError {
        let index = Int(max(column - 1, 0))
        let name = index < decoder.layout.names.count ? decoder.layout.names[index] : "#\(index)"
        return StorageError(.decoding, .read, entity: decoder.layout.entityName, message: "column '\(name)': \(message)")
    }
}

struct RowDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: RowDecoder
    var codingPath: [any CodingKey] { [] }

    var allKeys: [Key] {
        (decoder.layout.names + decoder.layout.relationPlaceholders.keys).compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool {
        let name = key.stringValue
        return decoder.layout.indexByName[name] != nil || decoder.layout.relationPlaceholders[name] != nil
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        if decoder.layout.relationPlaceholders[key.stringValue] != nil { return false }
        let column = try decoder.column(for: key)
        // A second lookup of the same key (decodeIfPresent asks decodeNil, then
        // decode) should find it by the guess again.
        decoder.next = Int(column)
        return sqlite3_column_type(decoder.handle, column) == SQLITE_NULL
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try decoder.int64(decoder.column(for: key)) != 0
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try decoder.string(decoder.column(for: key))
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try decoder.double(decoder.column(for: key))
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        Float(try decoder.double(decoder.column(for: key)))
    }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
        try decoder.int64(decoder.column(for: key))
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
        try decoder.integer(decoder.column(for: key), as: Int.self)
    }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
        try decoder.integer(decoder.column(for: key), as: Int8.self)
    }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
        try decoder.integer(decoder.column(for: key), as: Int16.self)
    }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
        try decoder.integer(decoder.column(for: key), as: Int32.self)
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
        try decoder.integer(decoder.column(for: key), as: UInt.self)
    }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
        try decoder.integer(decoder.column(for: key), as: UInt8.self)
    }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
        try decoder.integer(decoder.column(for: key), as: UInt16.self)
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try decoder.integer(decoder.column(for: key), as: UInt32.self)
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try decoder.integer(decoder.column(for: key), as: UInt64.self)
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let name = key.stringValue
        if let column = decoder.layout.column(of: name, guess: decoder.next) {
            decoder.next = column + 1
            return try decoder.value(type, at: Int32(column))
        }
        if let placeholder = decoder.layout.relationPlaceholders[name] {
            guard let empty = placeholder as? T else {
                throw StorageError(
                    .decoding, .read, entity: decoder.layout.entityName,
                    message: "relation '\(name)' does not decode as \(T.self)")
            }
            return empty
        }
        throw decoder.layout.unknownKey(name, .read)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        throw decoder.shapeError()
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw decoder.shapeError()
    }
    func superDecoder() throws -> any Decoder { throw decoder.shapeError() }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw decoder.shapeError() }
}

/// Decodes a field's custom type (a raw-value enum, a UUID) from one column
/// through its single-value container.
struct ColumnDecoder: Decoder, SingleValueDecodingContainer {
    let decoder: RowDecoder
    let column: Int32

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw decoder.shapeError()
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw decoder.shapeError() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { sqlite3_column_type(decoder.handle, column) == SQLITE_NULL }
    func decode(_ type: Bool.Type) throws -> Bool { try decoder.int64(column) != 0 }
    func decode(_ type: String.Type) throws -> String { try decoder.string(column) }
    func decode(_ type: Double.Type) throws -> Double { try decoder.double(column) }
    func decode(_ type: Float.Type) throws -> Float { Float(try decoder.double(column)) }
    func decode(_ type: Int.Type) throws -> Int { try decoder.integer(column, as: Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(column, as: Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(column, as: Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(column, as: Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.int64(column) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(column, as: UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(column, as: UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(column, as: UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(column, as: UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(column, as: UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.value(type, at: column) }
}

/// Reads a primary key from a column without going through `Codable` for the
/// common key types.
@inline(__always)
func readKey<K: PrimaryKeyValue>(_ type: K.Type, from statement: Statement, column: Int32) throws -> K {
    if K.self == Int64.self { return unsafeBitCast(statement.int64(column), to: K.self) }
    if K.self == Int.self { return unsafeBitCast(Int(statement.int64(column)), to: K.self) }
    guard let text = statement.text(column) else {
        throw StorageError(.decoding, .read, message: "a primary key column is NULL", context: statement.sql)
    }
    if K.self == String.self { return unsafeBitCast(text, to: K.self) }
    throw StorageError(.decoding, .read, message: "primary keys of type \(K.self) are not supported", context: statement.sql)
}
