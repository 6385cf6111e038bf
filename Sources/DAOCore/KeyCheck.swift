import Foundation

extension Entity {
    /// Checks that `record`, and every child it holds, encodes only the
    /// `Codable` keys its entity declares (its fields and relations), for an
    /// adapter whose encoder would otherwise store an undeclared key, or drop
    /// it, without a word.
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/schemaMismatch``
    ///   naming the key.
    public func checkDeclaredKeys(_ record: Root) throws {
        let encoder = KeyCheckEncoder(declared: declaredKeys)
        do {
            try record.encode(to: encoder)
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(
                .encoding, .persist, entity: name, message: "record \(record.primaryKey) could not be encoded",
                underlying: error)
        }
        if let key = encoder.state.undeclared {
            throw StorageError(
                .schemaMismatch, .persist, entity: name,
                message: "the record encodes the key '\(key)', which the entity does not declare")
        }
        for relation in relations {
            try relation.checkDeclaredKeysOfChildren(of: record)
        }
    }
}

extension ToManyRelation {
    func checkDeclaredKeysOfChildren(of parent: Parent) throws {
        let entity = Child.entity
        for child in parent[keyPath: children] {
            try entity.checkDeclaredKeys(child)
        }
    }
}

/// An encoder that only notes the first top-level key that is not declared;
/// values are not encoded.
private final class KeyCheckEncoder: Encoder {
    final class State {
        let declared: Set<String>
        var undeclared: String?
        init(declared: Set<String>) { self.declared = declared }
    }

    let state: State
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(declared: Set<String>) {
        state = State(declared: declared)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyCheckContainer<Key>(state: state))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        state.undeclared = state.undeclared ?? "(an unkeyed container)"
        return IgnoringUnkeyedContainer()
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        state.undeclared = state.undeclared ?? "(a single value)"
        return IgnoringSingleValueContainer()
    }
}

private struct KeyCheckContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let state: KeyCheckEncoder.State
    var codingPath: [any CodingKey] { [] }

    private func note(_ key: Key) {
        if state.undeclared == nil, !state.declared.contains(key.stringValue) { state.undeclared = key.stringValue }
    }

    mutating func encodeNil(forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: String, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { note(key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { note(key) }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { note(key) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        note(key)
        return KeyedEncodingContainer(IgnoringKeyedContainer<NestedKey>())
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        note(key)
        return IgnoringUnkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { IgnoringEncoder() }
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        note(key)
        return IgnoringEncoder()
    }
}

/// Containers that accept anything and keep nothing: what is nested under a
/// top-level key does not matter to the check.
private struct IgnoringEncoder: Encoder {
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(IgnoringKeyedContainer<Key>())
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { IgnoringUnkeyedContainer() }
    func singleValueContainer() -> any SingleValueEncodingContainer { IgnoringSingleValueContainer() }
}

private struct IgnoringKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    var codingPath: [any CodingKey] { [] }
    mutating func encodeNil(forKey key: Key) throws {}
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {}
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    { KeyedEncodingContainer(IgnoringKeyedContainer<NestedKey>()) }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { IgnoringUnkeyedContainer() }
    mutating func superEncoder() -> any Encoder { IgnoringEncoder() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { IgnoringEncoder() }
}

private struct IgnoringUnkeyedContainer: UnkeyedEncodingContainer {
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }
    mutating func encodeNil() throws {}
    mutating func encode<T: Encodable>(_ value: T) throws {}
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(IgnoringKeyedContainer<NestedKey>())
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { IgnoringUnkeyedContainer() }
    mutating func superEncoder() -> any Encoder { IgnoringEncoder() }
}

private struct IgnoringSingleValueContainer: SingleValueEncodingContainer {
    var codingPath: [any CodingKey] { [] }
    mutating func encodeNil() throws {}
    mutating func encode<T: Encodable>(_ value: T) throws {}
}
