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
        if let checkReals = realChecker {
            // A record that writes its fields by position: one pass, without key paths.
            if let position = try checkReals(record) { throw unstorable(record, fields[position]) }
        } else {
            for field in realFields {
                guard case .real(let value) = field.value(in: record) else { continue }
                if !Self.isStorable(value) { throw unstorable(record, field) }
            }
        }
        guard hasRelations else { return }
        for relation in relations {
            try relation.checkStorableChildren(of: record)
        }
    }

    static func isStorable(_ value: Double) -> Bool {
        !(value.isNaN || (value == 0 && value.sign == .minus))
    }

    private func unstorable(_ record: Root, _ field: Field<Root>) -> StorageError {
        let value = field.value(in: record)
        return StorageError(
            .invalidArgument, .persist, entity: name,
            message: "field '\(field.name)' of record \(record.primaryKey) is \(value), which no backend stores as given (NaN has no equality or order; SQLite keeps no sign of zero); store nil or 0.0 instead")
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

/// Finds, by position, the first real a fieldwise record writes that no backend
/// stores; ignores every other field.
struct RealCheckWriter: FieldWriter {
    var position = 0
    var unstorable: Int?

    mutating func encode(_ value: Int64) throws { position += 1 }
    mutating func encode(_ value: Double) throws {
        if unstorable == nil && (value.isNaN || (value == 0 && value.sign == .minus)) { unstorable = position }
        position += 1
    }
    mutating func encode(_ value: String) throws { position += 1 }
    mutating func encode(_ value: Bool) throws { position += 1 }
    mutating func encode(_ value: Date) throws { try encode(value.timeIntervalSinceReferenceDate) }
    mutating func encode(_ value: Data) throws { position += 1 }
    mutating func encodeNil() throws { position += 1 }
}

/// The real check of `F`, which is `Root` (found by casting `Root.self`), so a
/// record converts to it without a cast per record.
func makeRealChecker<Root, F: FieldwiseRecord>(_ type: F.Type, for root: Root.Type) -> @Sendable (Root) throws -> Int? {
    { record in
        var writer = RealCheckWriter()
        try unsafeBitCast(record, to: F.self).write(fields: &writer)
        return writer.unstorable
    }
}
