import Foundation

// MARK: - Decoding containers

struct FieldsDecoder: Decoder {
    let bridge: CodableFields
    var fields: CodableFieldState { bridge.state }
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        bridge.keyedDecodingContainer(type)
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw fields.nestedShape() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw fields.nestedShape() }
}

struct FieldsDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let fields: CodableFieldState
    var codingPath: [any CodingKey] { [] }

    var allKeys: [Key] { fields.order.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool {
        fields.shape.positionByName[key.stringValue] != nil
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        let name = key.stringValue
        guard let position = fields.position(of: name) else { throw fields.undeclared(name, .read) }
        // The value itself is asked for next, by the same key.
        fields.guess = position
        guard position < fields.slots.count, case .null? = fields.slots[position] else { return false }
        return true
    }

    private func slot(_ key: Key) throws -> CodableFieldState.Slot { try fields.readSlot(forKey: key.stringValue) }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try fields.bool(slot(key), key: key.stringValue) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try fields.text(slot(key), key: key.stringValue)
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try fields.real(slot(key), key: key.stringValue)
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        Float(try fields.real(slot(key), key: key.stringValue))
    }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
        try fields.integer(type, slot(key), key: key.stringValue)
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try fields.integer(type, slot(key), key: key.stringValue) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
        try fields.integer(type, slot(key), key: key.stringValue)
    }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
        try fields.integer(type, slot(key), key: key.stringValue)
    }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
        try fields.integer(type, slot(key), key: key.stringValue)
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
        try fields.integer(type, slot(key), key: key.stringValue)
    }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
        try fields.integer(type, slot(key), key: key.stringValue)
    }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
        try fields.integer(type, slot(key), key: key.stringValue)
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try fields.integer(type, slot(key), key: key.stringValue)
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try fields.integer(type, slot(key), key: key.stringValue)
    }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try fields.value(type, forKey: key.stringValue)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        throw fields.nestedShape()
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw fields.nestedShape() }
    func superDecoder() throws -> any Decoder { throw fields.nestedShape() }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw fields.nestedShape() }
}

/// Hands one field's value to a field type's own `init(from:)` (a raw-value
/// enum, a `UUID`).
struct SingleValueDecoder: Decoder, SingleValueDecodingContainer {
    let fields: CodableFieldState
    let slot: CodableFieldState.Slot
    let key: String
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw fields.nestedShape()
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw fields.nestedShape() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool {
        if case .null = slot { return true }
        return false
    }
    func decode(_ type: Bool.Type) throws -> Bool { try fields.bool(slot, key: key) }
    func decode(_ type: String.Type) throws -> String { try fields.text(slot, key: key) }
    func decode(_ type: Double.Type) throws -> Double { try fields.real(slot, key: key) }
    func decode(_ type: Float.Type) throws -> Float { Float(try fields.real(slot, key: key)) }
    func decode(_ type: Int.Type) throws -> Int { try fields.integer(type, slot, key: key) }
    func decode(_ type: Int8.Type) throws -> Int8 { try fields.integer(type, slot, key: key) }
    func decode(_ type: Int16.Type) throws -> Int16 { try fields.integer(type, slot, key: key) }
    func decode(_ type: Int32.Type) throws -> Int32 { try fields.integer(type, slot, key: key) }
    func decode(_ type: Int64.Type) throws -> Int64 { try fields.integer(type, slot, key: key) }
    func decode(_ type: UInt.Type) throws -> UInt { try fields.integer(type, slot, key: key) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try fields.integer(type, slot, key: key) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try fields.integer(type, slot, key: key) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try fields.integer(type, slot, key: key) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try fields.integer(type, slot, key: key) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try fields.value(type, from: slot, key: key) }
}
