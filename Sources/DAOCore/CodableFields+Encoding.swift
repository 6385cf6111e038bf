import Foundation

// MARK: - Encoding containers

struct FieldsEncoder: Encoder {
    let bridge: CodableFields
    var fields: CodableFieldState { bridge.state }
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        bridge.keyedEncodingContainer(type)
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        fields.fail("a record encodes one keyed container, not an unkeyed one", topLevel: "(an unkeyed container)")
        return RefusingContainer(fields: fields)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        fields.fail("a record encodes one keyed container, not a single value", topLevel: "(a single value)")
        return RefusingContainer(fields: fields)
    }
}

struct FieldsEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let fields: CodableFieldState
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws { try fields.set(.null, forKey: key.stringValue) }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        try fields.set(.integer(value ? 1 : 0), forKey: key.stringValue)
    }
    mutating func encode(_ value: String, forKey key: Key) throws { try fields.set(.text(value), forKey: key.stringValue) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try fields.set(.real(value), forKey: key.stringValue) }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        try fields.set(.real(Double(value)), forKey: key.stringValue)
    }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try fields.set(.integer(value), forKey: key.stringValue) }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        try fields.set(.integer(Int64(value)), forKey: key.stringValue)
    }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try integer(value, key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try fields.set(value, forKey: key.stringValue) }

    private func integer(_ value: some BinaryInteger, _ key: Key) throws {
        try fields.setInteger(value, forKey: key.stringValue)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        fields.noteNested(key.stringValue)
        return KeyedEncodingContainer(RefusingKeyedContainer<NestedKey>(fields: fields))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        fields.noteNested(key.stringValue)
        return RefusingContainer(fields: fields)
    }

    mutating func superEncoder() -> any Encoder {
        fields.fail("a record encodes no super encoder; a field holds a single value")
        return RefusingContainer(fields: fields)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        fields.noteNested(key.stringValue)
        return RefusingContainer(fields: fields)
    }
}

/// Captures the single value a field type's own `encode(to:)` encodes (a
/// raw-value enum, a `UUID`).
final class SingleValueEncoder: Encoder, SingleValueEncodingContainer {
    let fields: CodableFieldState
    let key: String
    var value: CodableFieldState.Slot?
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(fields: CodableFieldState, key: String) {
        self.fields = fields
        self.key = key
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        fields.fail("'\(key)' encodes a nested container; a field holds a single value")
        return KeyedEncodingContainer(RefusingKeyedContainer<Key>(fields: fields))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        fields.fail("'\(key)' encodes a nested container; a field holds a single value")
        return RefusingContainer(fields: fields)
    }
    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    func encodeNil() throws { value = .null }
    func encode(_ value: Bool) throws { self.value = .integer(value ? 1 : 0) }
    func encode(_ value: String) throws { self.value = .text(value) }
    func encode(_ value: Double) throws { self.value = .real(value) }
    func encode(_ value: Float) throws { self.value = .real(Double(value)) }
    func encode(_ value: Int) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: Int8) throws { self.value = try fields.integer(value, key: key) }
    func encode(_ value: Int16) throws { self.value = try fields.integer(value, key: key) }
    func encode(_ value: Int32) throws { self.value = try fields.integer(value, key: key) }
    func encode(_ value: Int64) throws { self.value = .integer(value) }
    func encode(_ value: UInt) throws { self.value = try fields.integer(value, key: key) }
    func encode(_ value: UInt8) throws { self.value = try fields.integer(value, key: key) }
    func encode(_ value: UInt16) throws { self.value = try fields.integer(value, key: key) }
    func encode(_ value: UInt32) throws { self.value = try fields.integer(value, key: key) }
    func encode(_ value: UInt64) throws { self.value = try fields.integer(value, key: key) }
    func encode<T: Encodable>(_ value: T) throws { self.value = try fields.slot(of: value, key: key) }
}

/// What a record is handed where it asks for a shape a field cannot hold:
/// the bridge has noted the failure (``CodableFieldState/fail(_:topLevel:)``) and
/// throws it when the record is done; every call here throws it too. While
/// the bridge only checks keys, these accept anything and keep nothing.
private struct RefusingContainer: Encoder, UnkeyedEncodingContainer, SingleValueEncodingContainer {
    let fields: CodableFieldState
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var count: Int { 0 }

    private func refuse() -> StorageError? {
        if fields.checkingKeys { return nil }
        return fields.failure ?? fields.encodingError("a field holds a single value")
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RefusingKeyedContainer<Key>(fields: fields))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { self }
    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    mutating func encodeNil() throws { if let error = refuse() { throw error } }
    mutating func encode<T: Encodable>(_ value: T) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: Bool) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: String) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: Double) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: Float) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: Int) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: Int8) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: Int16) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: Int32) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: Int64) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: UInt) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: UInt8) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: UInt16) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: UInt32) throws { if let error = refuse() { throw error } }
    mutating func encode(_ value: UInt64) throws { if let error = refuse() { throw error } }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        KeyedEncodingContainer(RefusingKeyedContainer<NestedKey>(fields: fields))
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
    mutating func superEncoder() -> any Encoder { self }
}

private struct RefusingKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let fields: CodableFieldState
    var codingPath: [any CodingKey] { [] }

    private func refuse() -> StorageError? {
        if fields.checkingKeys { return nil }
        return fields.failure ?? fields.encodingError("a field holds a single value")
    }

    mutating func encodeNil(forKey key: Key) throws { if let error = refuse() { throw error } }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { if let error = refuse() { throw error } }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        KeyedEncodingContainer(RefusingKeyedContainer<NestedKey>(fields: fields))
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        RefusingContainer(fields: fields)
    }
    mutating func superEncoder() -> any Encoder { RefusingContainer(fields: fields) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { RefusingContainer(fields: fields) }
}
