import CLMDB
import DAOCore
import Foundation

// Writing and erasing records with their index entries and children.
extension EntityTable {
    /// What the caller knows about the parent of a child being persisted.
    enum ParentContext {
        /// Nothing: the child is persisted through its own storage, so its
        /// parent must be looked up.
        case unknown
        /// The parent with this primary key is being persisted; `hadChildren`
        /// says whether any child was stored under it before.
        case persisting(primaryKey: StoredValue, hadChildren: Bool)
    }

    /// Inserts or replaces `record` with its children.
    func persist(_ record: R, in txn: borrowing Transaction, codecs: Codecs, parent: ParentContext = .unknown) throws {
        let encoder = codecs.encoder
        if let writeFields {
            try encoder.encodeFields { try writeFields(record, &$0) }
        } else {
            try encoder.encode(record)
        }
        var pk: [UInt8] = []
        KeyCodec.append(untagged: encoder.value(at: 0), to: &pk)
        let key: [UInt8]
        var oldKey: [UInt8]?
        var existed = false
        var oldIndexKeys: [[UInt8]] = []
        let link = self.link
        if let link {
            let parentValue = encoder.value(at: link.foreignKeyIndex)
            var parentKey: [UInt8] = []
            KeyCodec.append(untagged: parentValue, to: &parentKey)
            var lookUnderParent = true
            switch parent {
            case .unknown:
                guard try txn.contains(link.parentById ?? link.parentMain, parentKey) else {
                    throw StorageError(
                        .constraint, .persist, entity: entity.name, path: environment.path,
                        message: "its parent '\(link.parent)' with key \(parentValue) does not exist",
                        context: "record \(encoder.value(at: 0))")
                }
            case .persisting(let expected, let hadChildren):
                guard parentValue == expected else {
                    throw StorageError(
                        .constraint, .persist, entity: entity.name, path: environment.path,
                        message: "a child of '\(link.parent)' \(expected) names parent \(parentValue) in its foreign key",
                        context: "record \(encoder.value(at: 0))")
                }
                lookUnderParent = hadChildren
            }
            key = parentKey + pk
            // Usually an existing child is stored under this parent already: one
            // lookup. Otherwise the id lookup says whether it moves from another.
            if lookUnderParent, let keys = try txn.withValue(main, key, { try indexKeys(of: $0, codecs) }) {
                oldKey = key
                existed = true
                oldIndexKeys = keys
            } else if let storedKey = try txn.copy(byId, pk) {
                oldKey = storedKey
                if let keys = try txn.withValue(main, storedKey, { try indexKeys(of: $0, codecs) }) {
                    existed = true
                    oldIndexKeys = keys
                }
            }
        } else {
            key = pk
            // The old value matters only for its index entries.
            if !indexes.isEmpty, let keys = try txn.withValue(main, key, { try indexKeys(of: $0, codecs) }) {
                oldKey = key
                existed = true
                oldIndexKeys = keys
            }
        }
        let moved = existed && oldKey != key
        if moved, let oldKey { try txn.delete(main, oldKey) }
        try txn.put(main, key, encoder.bytes)
        for position in indexes.indices {
            let index = indexes[position]
            let newIndexKey = indexKey(index, encoder.value(at:))
            if existed, let oldKey {
                if !moved && oldIndexKeys[position] == newIndexKey { continue }
                try txn.delete(index.dbi, oldIndexKeys[position], value: oldKey)
            }
            try txn.put(index.dbi, newIndexKey, key)
        }
        if link != nil && (!existed || moved) {
            try txn.put(byId, pk, key)
        }
        if hasRelations {
            let primaryKey = encoder.value(at: 0)
            for position in relations.indices {
                try relations[position].replaceChildren(
                    of: record, primaryKey: primaryKey, parentKey: pk, in: txn, codecs: codecs.children[position])
            }
        }
    }

    /// The index keys of the stored value `value` (none when the entity has no
    /// index), read while the transaction lends the value: the buffer is gone
    /// once a write moves its page.
    @inline(__always)
    func indexKeys(of value: UnsafeRawBufferPointer, _ codecs: Codecs) throws -> [[UInt8]] {
        guard !indexes.isEmpty else { return [] }
        let decoder = codecs.decoder
        try decoder.load(value)
        return try indexes.map { try indexKey($0, decoder.value(at:)) }
    }

    /// Erases the record stored under `key` (whose primary key bytes are `pk`)
    /// with its index entries and children. Returns whether there was one.
    @discardableResult
    func erase(storageKey key: [UInt8], pk: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws -> Bool {
        guard let indexKeys = try txn.withValue(main, key, { try indexKeys(of: $0, codecs) }) else { return false }
        try txn.delete(main, key)
        for position in indexes.indices {
            try txn.delete(indexes[position].dbi, indexKeys[position], value: key)
        }
        if link != nil { try txn.delete(byId, pk) }
        for position in relations.indices {
            try relations[position].eraseChildren(parentKey: pk, in: txn, codecs: codecs.children[position])
        }
        return true
    }

    /// Erases every record of the entity and of its descendants.
    func eraseEverything(in txn: borrowing Transaction) throws {
        try txn.empty(main)
        try txn.empty(byId)
        for index in indexes { try txn.empty(index.dbi) }
        for relation in relations { try relation.eraseEverything(in: txn) }
    }
}
