import CLMDB
import DAOCore
import Foundation

/// Writing and erasing the children of one to-many relation, in terms that
/// do not depend on the parent's type (``EntityTable/childWriters``): code
/// generic over the parent reads an array of these without looking up its
/// metadata.
protocol ChildWriter: Sendable {
    /// Erases the children of a parent.
    func eraseChildren(parentKey: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws
    /// Stores exactly the children the parent at `parent` (a value of the
    /// relation's parent type, lent for the call) holds now; `primaryKey` is
    /// the parent's primary key and `parentKey` its bytes.
    func replaceChildren(
        ofParentAt parent: UnsafeRawPointer, primaryKey: StoredValue, parentKey: [UInt8],
        in txn: borrowing Transaction, codecs: Codecs
    ) throws
}

/// The children of one to-many relation, seen from the parent's table.
protocol ChildSet<Parent>: ChildWriter {
    associatedtype Parent: Record
    func makeCodecs() -> Codecs
    /// The children of the parent with primary key bytes `parentKey`, as `[Child]`.
    func loadChildren(parentKey: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws -> Any
    /// Reads the children of the parent with primary key bytes `parentKey`
    /// into `parent`: as ``loadChildren(parentKey:in:codecs:)`` and then
    /// setting them, without the `Any` between and its dynamic cast back.
    func readChildren(parentKey: [UInt8], into parent: inout Parent, in txn: borrowing Transaction, codecs: Codecs)
        throws
    /// Erases every child (all parents are being erased).
    func eraseEverything(in txn: borrowing Transaction) throws
}

struct RelationChildren<Relation: ToManyRelation>: ChildSet {
    typealias Parent = Relation.Parent
    let relation: Relation
    let table: EntityTable<Relation.Child>

    func makeCodecs() -> Codecs { table.makeCodecs() }

    func loadChildren(parentKey: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws -> Any {
        try table.readRange(prefix: parentKey, in: txn, codecs: codecs)
    }

    func readChildren(parentKey: [UInt8], into parent: inout Parent, in txn: borrowing Transaction, codecs: Codecs)
        throws
    {
        parent[keyPath: relation.children] = try table.readRange(prefix: parentKey, in: txn, codecs: codecs)
    }

    func replaceChildren(
        ofParentAt parent: UnsafeRawPointer, primaryKey: StoredValue, parentKey: [UInt8],
        in txn: borrowing Transaction, codecs: Codecs
    ) throws {
        let children = parent.assumingMemoryBound(to: Parent.self).pointee[keyPath: relation.children]
        // The children stored under the parent are found as the children
        // are written, through the main writer's cursor while they come in
        // the stored order, from a list of the range's keys once one does
        // not (the fused walk, `StoredChildren`). Keys compare as bytes,
        // which is how stored values compare (text by Unicode scalars).
        let stored = codecs.storedChildren
        stored.start(parentKey: parentKey)
        // A new parent's children usually come in key order after every
        // stored key: appended (docs/LMDB.md).
        codecs.mainWriter.expectAppends()
        let context = EntityTable<Relation.Child>.ParentContext.persisting(
            primaryKey: primaryKey, stored: EntityTable<Relation.Child>.LentChildren(children: stored))
        // Each child is lent to `persist` where the array holds it: read out
        // of the array (its subscript, unspecialized for the child type),
        // it was copied. The table is taken out of `self` first: read in
        // the closure, it looked up this generic type's metadata per child.
        let table = self.table
        // Read once per parent, not per child (see `EntityTable.persist`).
        let writeFields = table.fieldsWriter
        try children.withUnsafeBufferPointer { children in
            guard let first = children.baseAddress else { return }
            for index in children.indices {
                do {
                    try table.persist(first + index, in: txn, codecs: codecs, parent: context, writeFields: writeFields)
                } catch let error as StorageError where error.engineCode == MDB_BAD_VALSIZE {
                    // The child whose key is too long, named (see `LMDBRecordStorage.failing`).
                    throw error.namingRecord(first[index].primaryKey.storedValue, of: Relation.Child.entity.name)
                }
            }
        }
        // The children the parent no longer holds. No child just written has
        // their keys, so they are as they were.
        for pk in try stored.unkept(in: txn, codecs: codecs) {
            try table.erase(storageKey: parentKey + pk, pk: pk, in: txn, codecs: codecs)
        }
    }

    func eraseChildren(parentKey: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws {
        try table.eraseRange(parentKey: parentKey, in: txn, codecs: codecs)
    }

    func eraseEverything(in txn: borrowing Transaction) throws {
        try table.eraseEverything(in: txn)
    }
}

extension ToManyRelation {
    /// Builds the child table of this relation, links it to its parent's
    /// databases and records the link in the environment.
    func makeChildSet(
        environment: LMDBEnvironment, parentMain: MDB_dbi, parentById: MDB_dbi?
    ) throws -> any ChildSet<Parent> {
        let childEntity = Child.entity
        guard let foreignKey = childEntity.fields.firstIndex(where: { $0.name == foreignKeyField }) else {
            throw StorageError(
                .schemaMismatch, .open, entity: Parent.entity.name,
                message: "relation '\(name)' names foreign key '\(foreignKeyField)', which is not a field of '\(childEntity.name)'")
        }
        let link = ParentLink(
            parent: Parent.entity.name, foreignKeyIndex: foreignKey, parentMain: parentMain, parentById: parentById)
        let stored = "\(Parent.entity.name)\n\(foreignKeyField)"
        let links = try environment.database(EntityTable<Child>.linksDatabase)
        let childMain = try environment.requireDatabase(childEntity.name)
        let recorded: String? = try links.flatMap { links in
            try environment.read(.open) { txn in
                try txn.withValue(links, Array(childEntity.name.utf8)) { String(decoding: $0, as: UTF8.self) }
            }
        }
        if let recorded, recorded != stored {
            throw StorageError(
                .schemaMismatch, .open, entity: Parent.entity.name, path: environment.path,
                message: "'\(childEntity.name)' is stored as a child through '\(recorded.replacingOccurrences(of: "\n", with: "."))', not '\(Parent.entity.name).\(foreignKeyField)'")
        }
        if recorded == nil, let links, !environment.isReadOnly {
            try environment.write(.open) { txn in
                // Refused before the schemas were recorded
                // (`LMDBEnvironment.checkSchemas`); checked again here, under
                // the write lock, in case another process wrote since.
                guard try txn.entryCount(childMain) == 0 else {
                    throw ChildHolders.storedOnTheirOwn(child: childEntity.name, holder: Parent.entity.name, relation: name)
                        .with(path: environment.path)
                }
                try txn.put(links, Array(childEntity.name.utf8), Array(stored.utf8))
            }
        }
        environment.register(child: childEntity.name, link: link)
        let table = try EntityTable<Child>(environment: environment, link: link)
        return RelationChildren(relation: self, table: table)
    }
}
