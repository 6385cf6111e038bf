import CSQLite
import DAOCore
import Foundation

/// Encodes a record straight into the parameters of an upsert statement through
/// its `Codable` conformance: each key binds the parameter of its column. One
/// encoder serves every row of a call.
///
/// A key the entity does not declare throws ``StorageError/Kind/schemaMismatch``;
/// relation keys are skipped (children are written to their own table); a record
/// that leaves a field out throws as well, so no binding of an earlier row leaks.
final class RowEncoder: Encoder {
    let layout: RowLayout
    var statement: Statement?
    var handle: OpaquePointer?
    var next = 0
    var bound = 0
    /// The parameter whose value is kept in ``capturedParent`` (the foreign key
    /// of a relation's child), or 0.
    var parentParameter: Int32 = 0
    /// The primary key bound for the last record, when it was an integer or text
    /// (`.null` otherwise), so writers need not read it through a key path.
    var capturedKey: StoredValue = .null
    /// The value bound to ``parentParameter`` for the last record, likewise.
    var capturedParent: StoredValue = .null

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(layout: RowLayout) {
        self.layout = layout
    }

    /// Binds `record`'s fields to `statement`'s parameters 1…n.
    func encode(_ record: some Encodable, into statement: Statement) throws {
        self.statement = statement
        self.handle = statement.handle
        next = 0
        bound = 0
        capturedKey = .null
        capturedParent = .null
        try record.encode(to: self)
        if bound != layout.names.count {
            throw StorageError(
                .schemaMismatch, .persist, entity: layout.entityName,
                message: "the record encoded \(bound) fields; '\(layout.entityName)' declares \(layout.names.count)")
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RowEncodingContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnsupportedEncodingContainer(entity: layout.entityName)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        UnsupportedEncodingContainer(entity: layout.entityName)
    }

    /// The 1-based parameter of `key`, or `nil` for a relation key.
    @inline(__always)
    func parameter(for key: some CodingKey) throws -> Int32? {
        let name = key.stringValue
        guard let column = layout.column(of: name, guess: next) else {
            if layout.relationPlaceholders[name] != nil { return nil }
            throw layout.unknownKey(name, .persist)
        }
        next = column + 1
        bound += 1
        return Int32(column + 1)
    }

    @inline(__always)
    func capture(_ value: @autoclosure () -> StoredValue, at index: Int32) {
        if index == 1 {
            capturedKey = value()
        } else if index == parentParameter {
            capturedParent = value()
        }
    }

    @inline(__always)
    func check(_ code: Int32) throws {
        if code != SQLITE_OK, let statement { try statement.check(code) }
    }

    func bindInteger(_ value: some BinaryInteger, forKey key: some CodingKey) throws {
        guard let index = try parameter(for: key) else { return }
        guard let value = Int64(exactly: value) else {
            throw StorageError(
                .encoding, .persist, entity: layout.entityName,
                message: "the value \(value) of '\(key.stringValue)' does not fit a 64-bit signed integer")
        }
        capture(.integer(value), at: index)
        try check(sqlite3_bind_int64(handle, index, value))
    }

    func bindNil(forKey key: some CodingKey) throws {
        guard let index = try parameter(for: key) else { return }
        try check(sqlite3_bind_null(handle, index))
    }

    func bindValue<T: Encodable>(_ value: T, forKey key: some CodingKey) throws {
        guard let index = try parameter(for: key) else { return }
        try bindValue(value, at: index, key: key)
    }

    func bindValue<T: Encodable>(_ value: T, at index: Int32, key: some CodingKey) throws {
        guard let handle else { return }
        if T.self == Date.self {
            let date = unsafeBitCast(value, to: Date.self)
            try check(bindReal(handle, index, date.timeIntervalSinceReferenceDate))
        } else if T.self == Data.self {
            let data = unsafeBitCast(value, to: Data.self)
            let code = data.withUnsafeBytes { bytes -> Int32 in
                guard let base = bytes.baseAddress else { return sqlite3_bind_zeroblob(handle, index, 0) }
                return sqlite3_bind_blob64(handle, index, base, UInt64(bytes.count), sqliteTransient)
            }
            try check(code)
        } else {
            try value.encode(to: ColumnEncoder(encoder: self, index: index, key: key.stringValue))
        }
    }
}

/// The keyed container of ``RowEncoder``.
struct RowEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: RowEncoder
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws { try encoder.bindNil(forKey: key) }

    mutating func encode(_ value: Bool, forKey key: Key) throws {
        guard let index = try encoder.parameter(for: key) else { return }
        try encoder.check(sqlite3_bind_int64(encoder.handle, index, value ? 1 : 0))
    }

    mutating func encode(_ value: String, forKey key: Key) throws {
        guard let index = try encoder.parameter(for: key), let statement = encoder.statement else { return }
        encoder.capture(.text(value), at: index)
        try statement.bind(value, at: index)
    }

    mutating func encode(_ value: Double, forKey key: Key) throws {
        guard let index = try encoder.parameter(for: key) else { return }
        try encoder.check(bindReal(encoder.handle, index, value))
    }

    mutating func encode(_ value: Float, forKey key: Key) throws { try encode(Double(value), forKey: key) }

    mutating func encode(_ value: Int64, forKey key: Key) throws {
        guard let index = try encoder.parameter(for: key) else { return }
        encoder.capture(.integer(value), at: index)
        try encoder.check(sqlite3_bind_int64(encoder.handle, index, value))
    }

    mutating func encode(_ value: Int, forKey key: Key) throws { try encode(Int64(value), forKey: key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try encoder.bindInteger(value, forKey: key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try encoder.bindInteger(value, forKey: key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try encoder.bindInteger(value, forKey: key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try encoder.bindInteger(value, forKey: key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try encoder.bindInteger(value, forKey: key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try encoder.bindInteger(value, forKey: key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try encoder.bindInteger(value, forKey: key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try encoder.bindInteger(value, forKey: key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try encoder.bindValue(value, forKey: key)
    }

    // A nil optional binds NULL rather than being skipped, so every field is
    // bound on every row.
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(UnsupportedKeyedEncodingContainer<NestedKey>(entity: encoder.layout.entityName))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        UnsupportedEncodingContainer(entity: encoder.layout.entityName)
    }

    mutating func superEncoder() -> any Encoder { UnsupportedEncoder(entity: encoder.layout.entityName) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { UnsupportedEncoder(entity: encoder.layout.entityName) }
}

/// Encodes a field's custom type (a raw-value enum, a UUID) into one parameter
/// through its single-value container.
struct ColumnEncoder: Encoder, SingleValueEncodingContainer {
    let encoder: RowEncoder
    let index: Int32
    let key: String

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(UnsupportedKeyedEncodingContainer<Key>(entity: encoder.layout.entityName))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnsupportedEncodingContainer(entity: encoder.layout.entityName)
    }
    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    private func int(_ value: some BinaryInteger) throws {
        guard let value = Int64(exactly: value) else {
            throw StorageError(
                .encoding, .persist, entity: encoder.layout.entityName,
                message: "the value \(value) of '\(key)' does not fit a 64-bit signed integer")
        }
        encoder.capture(.integer(value), at: index)
        try encoder.check(sqlite3_bind_int64(encoder.handle, index, value))
    }

    func encodeNil() throws { try encoder.check(sqlite3_bind_null(encoder.handle, index)) }
    func encode(_ value: Bool) throws { try int(value ? 1 : 0) }
    func encode(_ value: String) throws {
        guard let statement = encoder.statement else { return }
        encoder.capture(.text(value), at: index)
        try statement.bind(value, at: index)
    }
    func encode(_ value: Double) throws { try encoder.check(bindReal(encoder.handle, index, value)) }
    func encode(_ value: Float) throws { try encode(Double(value)) }
    func encode(_ value: Int) throws { try int(value) }
    func encode(_ value: Int8) throws { try int(value) }
    func encode(_ value: Int16) throws { try int(value) }
    func encode(_ value: Int32) throws { try int(value) }
    func encode(_ value: Int64) throws { try int(value) }
    func encode(_ value: UInt) throws { try int(value) }
    func encode(_ value: UInt8) throws { try int(value) }
    func encode(_ value: UInt16) throws { try int(value) }
    func encode(_ value: UInt32) throws { try int(value) }
    func encode(_ value: UInt64) throws { try int(value) }
    func encode<T: Encodable>(_ value: T) throws {
        try encoder.bindValue(value, at: index, key: AnyKey(key))
    }
}

/// A coding key made from a string.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

private func unsupported(_ entity: String) -> StorageError {
    StorageError(
        .encoding, .persist, entity: entity,
        message: "a record field must be a single value (a number, string, date, data or raw-value enum); nested containers cannot be stored in a column")
}

/// An encoder for shapes a column cannot hold: every call throws.
struct UnsupportedEncoder: Encoder {
    let entity: String
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(UnsupportedKeyedEncodingContainer<Key>(entity: entity))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { UnsupportedEncodingContainer(entity: entity) }
    func singleValueContainer() -> any SingleValueEncodingContainer { UnsupportedEncodingContainer(entity: entity) }
}

/// A keyed container for shapes a column cannot hold: every call throws.
struct UnsupportedKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let entity: String
    var codingPath: [any CodingKey] { [] }
    mutating func encodeNil(forKey key: Key) throws { throw unsupported(entity) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { throw unsupported(entity) }
    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(UnsupportedKeyedEncodingContainer<NestedKey>(entity: entity))
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        UnsupportedEncodingContainer(entity: entity)
    }
    mutating func superEncoder() -> any Encoder { UnsupportedEncoder(entity: entity) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { UnsupportedEncoder(entity: entity) }
}

/// An unkeyed or single-value container for shapes a column cannot hold: every
/// call throws.
struct UnsupportedEncodingContainer: UnkeyedEncodingContainer, SingleValueEncodingContainer {
    let entity: String
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }
    mutating func encodeNil() throws { throw unsupported(entity) }
    mutating func encode<T: Encodable>(_ value: T) throws { throw unsupported(entity) }
    mutating func encode(_ value: Bool) throws { throw unsupported(entity) }
    mutating func encode(_ value: String) throws { throw unsupported(entity) }
    mutating func encode(_ value: Double) throws { throw unsupported(entity) }
    mutating func encode(_ value: Float) throws { throw unsupported(entity) }
    mutating func encode(_ value: Int) throws { throw unsupported(entity) }
    mutating func encode(_ value: Int8) throws { throw unsupported(entity) }
    mutating func encode(_ value: Int16) throws { throw unsupported(entity) }
    mutating func encode(_ value: Int32) throws { throw unsupported(entity) }
    mutating func encode(_ value: Int64) throws { throw unsupported(entity) }
    mutating func encode(_ value: UInt) throws { throw unsupported(entity) }
    mutating func encode(_ value: UInt8) throws { throw unsupported(entity) }
    mutating func encode(_ value: UInt16) throws { throw unsupported(entity) }
    mutating func encode(_ value: UInt32) throws { throw unsupported(entity) }
    mutating func encode(_ value: UInt64) throws { throw unsupported(entity) }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        KeyedEncodingContainer(UnsupportedKeyedEncodingContainer<NestedKey>(entity: entity))
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
    mutating func superEncoder() -> any Encoder { UnsupportedEncoder(entity: entity) }
}

/// Binds a ``FieldwiseRecord``'s fields to the parameters of an upsert, in
/// order: parameter 1 is the first field. It captures the primary key and the
/// parent key as ``RowEncoder`` does, for the relation writers.
struct ParameterWriter: FieldWriter {
    let encoder: RowEncoder
    let statement: Statement
    private(set) var index: Int32 = 1
    // Read once per record rather than through `encoder` for every field.
    private let handle: OpaquePointer
    private let fieldCount: Int32
    private let parentParameter: Int32

    init(encoder: RowEncoder, statement: Statement) {
        self.encoder = encoder
        self.statement = statement
        handle = statement.handle
        fieldCount = Int32(encoder.layout.names.count)
        parentParameter = encoder.parentParameter
        encoder.capturedKey = .null
        encoder.capturedParent = .null
    }

    @inline(__always)
    private mutating func next() throws -> Int32 {
        guard index <= fieldCount else {
            throw StorageError(
                .schemaMismatch, .persist, entity: encoder.layout.entityName,
                message: "the record writes more fields than the \(encoder.layout.names.count) '\(encoder.layout.entityName)' declares")
        }
        defer { index += 1 }
        return index
    }

    @inline(__always)
    mutating func encode(_ value: Int64) throws {
        let index = try next()
        // Only the primary key and the parent key are kept, for the relation writers.
        if index == 1 {
            encoder.capturedKey = .integer(value)
        } else if index == parentParameter {
            encoder.capturedParent = .integer(value)
        }
        let code = sqlite3_bind_int64(handle, index, value)
        if code != SQLITE_OK { try statement.check(code) }
    }

    /// Binds a real so that it comes back bit for bit (``bindReal(_:_:_:)``).
    @inline(__always)
    mutating func encode(_ value: Double) throws {
        let index = try next()
        let code = bindReal(handle, index, value)
        if code != SQLITE_OK { try statement.check(code) }
    }

    @inline(__always)
    mutating func encode(_ value: String) throws {
        let index = try next()
        if index == 1 {
            encoder.capturedKey = .text(value)
        } else if index == parentParameter {
            encoder.capturedParent = .text(value)
        }
        try statement.bind(value, at: index)
    }

    @inline(__always)
    mutating func encode(_ value: Bool) throws {
        try encode(Int64(value ? 1 : 0))
    }

    @inline(__always)
    mutating func encode(_ value: Date) throws {
        try encode(value.timeIntervalSinceReferenceDate)
    }

    mutating func encode(_ value: Data) throws {
        let index = try next()
        try value.withUnsafeBytes { try statement.bind(blob: $0, at: index) }
    }

    @inline(__always)
    mutating func encodeNil() throws {
        let index = try next()
        try statement.bindNull(at: index)
    }

    // The encode methods are inlined into the protocol witnesses the record's
    // generic `write(fields:)` calls, and the binds into them: one call per
    // field rather than three.

    /// Checks that every declared field was written.
    func finish() throws {
        guard Int(index) - 1 == encoder.layout.names.count else {
            throw StorageError(
                .schemaMismatch, .persist, entity: encoder.layout.entityName,
                message: "the record wrote \(index - 1) fields; '\(encoder.layout.entityName)' declares \(encoder.layout.names.count)")
        }
    }
}
