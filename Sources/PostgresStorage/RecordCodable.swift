import DAOCore
import Foundation

// The bridge for records that conform only to `Codable` (not to
// `FieldwiseRecord`): writing reads each declared field through its key path
// (`Field.value(in:)`, no encoder); reading decodes the record from its
// row's stored values through this small decoder. It is the only
// `Codable`-specific code of the adapter.

/// Decodes a record from its fields' stored values, in field order: each key
/// reads its field's value; a relation key reads an empty array (the storage
/// attaches the children afterwards).
struct StoredValuesDecoder: Decoder {
    let values: [StoredValue]
    let positions: [String: Int]
    let relations: Set<String>
    let entity: String

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Container<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw shapeError() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw shapeError() }

    func shapeError() -> StorageError {
        StorageError(.decoding, .read, entity: entity, message: "a record must decode from a keyed container")
    }

    func error(_ key: some CodingKey, _ message: String) -> StorageError {
        StorageError(.decoding, .read, entity: entity, message: "field '\(key.stringValue)': \(message)")
    }

    struct Container<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: StoredValuesDecoder
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] {
            (decoder.positions.keys.map { $0 } + decoder.relations.map { $0 }).compactMap { Key(stringValue: $0) }
        }

        func contains(_ key: Key) -> Bool {
            decoder.positions[key.stringValue] != nil || decoder.relations.contains(key.stringValue)
        }

        private func value(_ key: Key) throws -> StoredValue {
            guard let position = decoder.positions[key.stringValue] else {
                throw StorageError(
                    .schemaMismatch, .read, entity: decoder.entity,
                    message: "the record decodes the key '\(key.stringValue)', which the entity does not declare")
            }
            return decoder.values[position]
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            if decoder.relations.contains(key.stringValue) { return false }
            return try value(key) == .null
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            if decoder.relations.contains(key.stringValue) {
                // A relation: empty here, filled by the storage.
                return try T(from: EmptyArrayDecoder(entity: decoder.entity))
            }
            let value = try value(key)
            return try Self.decode(type, value, key: key, decoder: decoder)
        }

        static func decode<T: Decodable>(_ type: T.Type, _ value: StoredValue, key: Key, decoder: StoredValuesDecoder)
            throws -> T
        {
            switch value {
            case .real(let real) where type == Date.self:
                if let date = Date(timeIntervalSinceReferenceDate: real) as? T { return date }
            case .blob(let bytes) where type == Data.self:
                if let data = Data(bytes) as? T { return data }
            case .text(let text) where type == UUID.self:
                guard let uuid = UUID(uuidString: text) else { throw decoder.error(key, "'\(text)' is not a UUID") }
                if let uuid = uuid as? T { return uuid }
            default:
                break
            }
            return try T(from: ValueDecoder(value: value, key: key, parent: decoder))
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        { throw decoder.error(key, "a field holds one value, not a keyed container") }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw decoder.error(key, "a field holds one value, not a list")
        }
        func superDecoder() throws -> any Decoder { throw decoder.shapeError() }
        func superDecoder(forKey key: Key) throws -> any Decoder { throw decoder.shapeError() }
    }

    /// One field's value, for a type that decodes itself from a single value
    /// (an enum from its raw value, a `Float`, an `Int32`).
    struct ValueDecoder<Key: CodingKey>: Decoder, SingleValueDecodingContainer {
        let value: StoredValue
        let key: Key
        let parent: StoredValuesDecoder
        var codingPath: [any CodingKey] { [key] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<K: CodingKey>(keyedBy type: K.Type) throws -> KeyedDecodingContainer<K> {
            throw parent.error(key, "a field holds one value")
        }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw parent.error(key, "a field holds one value") }
        func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

        func decodeNil() -> Bool { value == .null }

        private func integer() throws -> Int64 {
            guard case .integer(let integer) = value else { throw parent.error(key, "expected an integer") }
            return integer
        }

        private func fitting<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
            let integer = try integer()
            guard let fitting = I(exactly: integer) else { throw parent.error(key, "\(integer) does not fit \(type)") }
            return fitting
        }

        func decode(_ type: Bool.Type) throws -> Bool {
            let integer = try integer()
            guard integer == 0 || integer == 1 else { throw parent.error(key, "expected 0 or 1") }
            return integer == 1
        }
        func decode(_ type: String.Type) throws -> String {
            guard case .text(let text) = value else { throw parent.error(key, "expected text") }
            return text
        }
        func decode(_ type: Double.Type) throws -> Double {
            switch value {
            case .real(let real): return real
            case .integer(let integer): return Double(integer)
            default: throw parent.error(key, "expected a number")
            }
        }
        func decode(_ type: Float.Type) throws -> Float {
            let real = try decode(Double.self)
            if real.isNaN { return .nan }
            guard let float = Float(exactly: real) else { throw parent.error(key, "\(real) is not exactly a Float") }
            return float
        }
        func decode(_ type: Int.Type) throws -> Int { try fitting(Int.self) }
        func decode(_ type: Int8.Type) throws -> Int8 { try fitting(Int8.self) }
        func decode(_ type: Int16.Type) throws -> Int16 { try fitting(Int16.self) }
        func decode(_ type: Int32.Type) throws -> Int32 { try fitting(Int32.self) }
        func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
        func decode(_ type: UInt.Type) throws -> UInt { try fitting(UInt.self) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try fitting(UInt8.self) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try fitting(UInt16.self) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try fitting(UInt32.self) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try fitting(UInt64.self) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try Container<Key>.decode(type, value, key: key, decoder: parent)
        }
    }

    /// An empty list, for a relation's key.
    struct EmptyArrayDecoder: Decoder, UnkeyedDecodingContainer {
        let entity: String
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }
        var count: Int? { 0 }
        var isAtEnd: Bool { true }
        var currentIndex: Int { 0 }

        func container<K: CodingKey>(keyedBy type: K.Type) throws -> KeyedDecodingContainer<K> { throw error() }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { self }
        func singleValueContainer() throws -> any SingleValueDecodingContainer { throw error() }
        func error() -> StorageError {
            StorageError(.decoding, .read, entity: entity, message: "a relation decodes as a list of children")
        }
        mutating func decodeNil() throws -> Bool { throw error() }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { throw error() }
        mutating func nestedContainer<N: CodingKey>(keyedBy type: N.Type) throws -> KeyedDecodingContainer<N> {
            throw error()
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw error() }
        mutating func superDecoder() throws -> any Decoder { throw error() }
    }
}
