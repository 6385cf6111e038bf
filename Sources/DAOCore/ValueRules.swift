import Foundation

// What every backend stores, and the rules of relations, decided once here and
// checked by every adapter before it writes (see docs/SEMANTICS.md).

extension Entity {
    /// Checks that every value of `record`, and of the children it holds, is
    /// one every backend stores exactly: a real (a `Double`, `Float` or `Date`
    /// field) may not be NaN or `-0.0`. SQLite stores NaN as NULL and `-0.0` as
    /// `0.0`, a binary property list merges `-0.0` with `0.0`; rather than give
    /// back another value on some backends, every backend refuses them.
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``
    ///   naming the field and the record; the adapter then writes nothing.
    public func checkStorable(_ record: Root) throws {
        for field in realFields {
            guard case .real(let value) = field.value(in: record) else { continue }
            if value.isNaN || (value == 0 && value.sign == .minus) {
                throw StorageError(
                    .invalidArgument, .persist, entity: name,
                    message: "field '\(field.name)' of record \(record.primaryKey) is \(value), which no backend stores as given (NaN has no equality or order; SQLite keeps no sign of zero); store nil or 0.0 instead")
            }
        }
        for relation in relations {
            try relation.checkStorableChildren(of: record)
        }
    }

    /// ``checkStorable(_:)`` for each of `records`.
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``.
    public func checkStorable(_ records: [Root]) throws {
        guard hasRealFieldsOrRelations else { return }
        for record in records { try checkStorable(record) }
    }
}

extension ToManyRelation {
    func checkStorableChildren(of parent: Parent) throws {
        let entity = Child.entity
        for child in parent[keyPath: children] {
            try entity.checkStorable(child)
        }
    }

    /// Checks the rule every parent obeys: each child it holds names it, by the
    /// same stored key (text keys compare by Unicode scalars), in its foreign key.
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/constraint``.
    public func checkChild(_ child: Child, isHeldBy parentKey: StoredValue) throws {
        let named = child[keyPath: self.parentKey].storedValue
        guard named == parentKey else {
            throw StorageError(
                .constraint, .persist, entity: Child.entity.name,
                message: "a child in relation '\(name)' names parent \(named) in '\(foreignKeyField)' but is held by parent \(parentKey)")
        }
    }
}
