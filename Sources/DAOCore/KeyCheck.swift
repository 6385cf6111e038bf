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
        try checkDeclaredKeys(record, with: KeyCheckEncoder(declared: declaredKeys, order: declaredOrder))
    }

    /// ``checkDeclaredKeys(_:)`` for each of `records`, with one encoder.
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/schemaMismatch``.
    public func checkDeclaredKeys(_ records: [Root]) throws {
        let encoder = KeyCheckEncoder(declared: declaredKeys, order: declaredOrder)
        // By position: `for … in` copies each record (unspecialized).
        for index in records.indices { try checkDeclaredKeys(records[index], with: encoder) }
    }

    fileprivate func checkDeclaredKeys(_ record: Root, with encoder: KeyCheckEncoder) throws {
        encoder.state.reset()
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
        // Iterating even an empty `relations` asks the runtime for the
        // metadata of its constrained existential, once per record.
        guard hasRelations else { return }
        for relation in relations {
            try relation.checkDeclaredKeysOfChildren(of: record)
        }
    }
}

extension ToManyRelation {
    func checkDeclaredKeysOfChildren(of parent: Parent) throws {
        let children = parent[keyPath: children]
        guard !children.isEmpty else { return }
        try Child.entity.checkDeclaredKeys(children)
    }
}

/// An encoder that only notes the first top-level key that is not declared;
/// values are not encoded.
final class KeyCheckEncoder: Encoder {
    final class State {
        let declared: Set<String>
        /// The keys in declaration order, which synthesized `Codable` follows:
        /// a key at its expected position is checked without hashing.
        let order: [String]
        // Noted once per key of every record written: no run-time
        // exclusivity checks (nothing else accesses the state meanwhile).
        @exclusivity(unchecked) var position = 0
        @exclusivity(unchecked) var undeclared: String?

        init(declared: Set<String>, order: [String]) {
            self.declared = declared
            self.order = order
        }

        func reset() {
            position = 0
            undeclared = nil
        }

        @inline(__always)
        func note(_ name: String) {
            if position < order.count, order[position] == name {
                position += 1
            } else {
                noteOutOfOrder(name)
            }
        }

        private func noteOutOfOrder(_ name: String) {
            if undeclared == nil, !declared.contains(name) { undeclared = name }
        }
    }

    /// The container handed out last, for records whose keys are `keyType`.
    class CachedContainer {
        let keyType: ObjectIdentifier
        init(keyType: ObjectIdentifier) { self.keyType = keyType }
    }

    final class TypedContainer<Key: CodingKey>: CachedContainer {
        let container: KeyedEncodingContainer<Key>
        init(_ container: KeyedEncodingContainer<Key>) {
            self.container = container
            super.init(keyType: ObjectIdentifier(Key.self))
        }
    }

    let state: State
    /// The container of the last key type asked for: a container holds
    /// nothing but ``state``, so every record of one type is checked with
    /// the same one. Building one per record asked the runtime for the
    /// metadata of the container and of the standard library's box around
    /// it, and allocated and freed the box: about 1,200 instructions.
    @exclusivity(unchecked) private var cached: CachedContainer?
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(declared: Set<String>, order: [String]) {
        state = State(declared: declared, order: order)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if let cached, cached.keyType == ObjectIdentifier(Key.self) {
            // The identifier of `Key` says the cached container's type.
            return unsafeDowncast(cached, to: TypedContainer<Key>.self).container
        }
        let container = KeyedEncodingContainer(KeyCheckContainer<Key>(state: state))
        cached = TypedContainer(container)
        return container
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

    @inline(__always)
    private func note(_ key: Key) { state.note(key.stringValue) }

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
