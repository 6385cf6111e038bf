import Foundation

extension Entity {
    /// Checks that `record`, and every child it holds, encodes only the
    /// `Codable` keys its entity declares (its fields and relations), for an
    /// adapter whose encoder would otherwise store an undeclared key, or drop
    /// it, without a word (``CodableFields/checkDeclaredKeys(_:)``).
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/schemaMismatch``
    ///   naming the key.
    public func checkDeclaredKeys(_ record: Root) throws {
        try checkDeclaredKeys(record, with: CodableFields(self))
    }

    /// ``checkDeclaredKeys(_:)`` for each of `records`, with one bridge.
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/schemaMismatch``.
    public func checkDeclaredKeys(_ records: [Root]) throws {
        let fields = CodableFields(self)
        // By position: `for … in` copies each record (unspecialized).
        for index in records.indices { try checkDeclaredKeys(records[index], with: fields) }
    }

    fileprivate func checkDeclaredKeys(_ record: Root, with fields: CodableFields) throws {
        do {
            try fields.checkDeclaredKeys(record)
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(
                .encoding, .persist, entity: name, message: "record \(record.primaryKey) could not be encoded",
                underlying: error)
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
