import CLMDB
import DAOCore
import Foundation
import Synchronization

// Named databases, the schemas recorded in the metadata database, and which entities are children of which.
extension LMDBEnvironment {
    // MARK: - Named databases

    /// The handle of the named database `name`, opened (and created, unless
    /// read-only) once and cached. `nil` when it does not exist in a read-only
    /// environment.
    func database(_ name: String, duplicateSort: Bool = false) throws -> MDB_dbi? {
        handleLock.lock()
        if let dbi = handles[DatabaseName(name)] {
            handleLock.unlock()
            return dbi
        }
        handleLock.unlock()
        // mdb_dbi_open must not run in two transactions at once, so handles are
        // opened under the write lock, each in a transaction of its own.
        if StoreExecutor.readsMustNotWait {
            guard writeLock.try() else { throw StoreExecutor.wouldWait() }
        } else {
            writeLock.lock()
        }
        defer { writeLock.unlock() }
        guard !isClosed else { throw StorageError.closed(.open, path: path) }
        handleLock.lock()
        if let dbi = handles[DatabaseName(name)] {
            handleLock.unlock()
            return dbi
        }
        handleLock.unlock()
        var flags: UInt32 = duplicateSort ? UInt32(MDB_DUPSORT) : 0
        if !isReadOnly { flags |= UInt32(MDB_CREATE) }
        var dbi: MDB_dbi = 0
        while true {
            var txn: OpaquePointer?
            let begun = mdb_txn_begin(handle, nil, isReadOnly ? UInt32(MDB_RDONLY) : 0, &txn)
            if begun == MDB_MAP_RESIZED {
                // Another process grew the map since this one was opened.
                try adoptGrownMap(.open)
                continue
            }
            try LMDBError.check(begun, .open, path: path, call: "mdb_txn_begin")
            var code = mdb_dbi_open(txn, name, flags, &dbi)
            if code == MDB_NOTFOUND && isReadOnly {
                mdb_txn_abort(txn)
                return nil
            }
            if code == MDB_SUCCESS {
                code = mdb_txn_commit(txn)
            } else {
                mdb_txn_abort(txn)
            }
            if code == MDB_MAP_FULL {
                try grow(.open)
                continue
            }
            try LMDBError.check(code, .open, path: path, call: "mdb_dbi_open", context: "database '\(name)'")
            break
        }
        handleLock.lock()
        handles[DatabaseName(name)] = dbi
        handleLock.unlock()
        return dbi
    }

    /// Deletes the `MDB_DUPSORT` database `name` when it exists and this
    /// process holds no handle on it: the database of an index that leads
    /// with a child's foreign key, which earlier versions of the layout kept
    /// and which the parent's range now serves (docs/LMDB.md). Its entries
    /// would only go stale. Does nothing in a read-only environment.
    ///
    /// - Throws: ``StorageError`` when LMDB fails.
    func dropStaleIndexDatabase(_ name: String) throws {
        guard !isReadOnly else { return }
        handleLock.lock()
        let isOpen = handles[DatabaseName(name)] != nil
        handleLock.unlock()
        guard !isOpen else { return }
        try write(.open) { txn in
            var dbi = MDB_dbi()
            let code = mdb_dbi_open(txn.handle, name, UInt32(MDB_DUPSORT), &dbi)
            if code == MDB_NOTFOUND { return }
            try txn.check(code, "mdb_dbi_open")
            try txn.check(mdb_drop(txn.handle, dbi, 1), "mdb_drop")
        }
    }

    /// Caches the handles of databases a committed transaction opened itself
    /// (a migration's), so later users find them.
    func adopt(handles opened: [DatabaseName: MDB_dbi]) {
        handleLock.lock()
        for (name, dbi) in opened { handles[name] = dbi }
        handleLock.unlock()
    }

    /// The number of entries in every named database of the environment, by name
    /// (`mdb_stat`), for checks that nothing is left behind.
    public func entryCounts() throws -> [String: Int] {
        handleLock.lock()
        let known = handles
        handleLock.unlock()
        return try read(.count) { txn in
            var counts: [String: Int] = [:]
            for (name, dbi) in known {
                counts[name.text] = try txn.entryCount(dbi)
            }
            return counts
        }
    }

    /// The handle of the named database `name`, which must exist in a
    /// read-only environment.
    ///
    /// - Throws: ``StorageError/Kind/readOnly`` when it does not exist and the
    ///   environment is read-only.
    func requireDatabase(_ name: String, duplicateSort: Bool = false) throws -> MDB_dbi {
        guard let dbi = try database(name, duplicateSort: duplicateSort) else {
            throw StorageError(
                .readOnly, .open, path: path, engineCode: MDB_NOTFOUND,
                message: "the database '\(name)' does not exist and the environment is read-only")
        }
        return dbi
    }

    // MARK: - Schemas

    /// The name of the database that holds the environment's metadata: each
    /// entity's schema under ``StoreMetadataKey/schema(_:)``, in the form
    /// ``EntitySchema/encoded()`` writes (and, later, a schema version and the
    /// migrations applied).
    static var metadataDatabase: String { "__metadata" }

    /// Checks the schema recorded for every entity a storage for `type` sets
    /// up against its declaration, then records the schemas not recorded yet
    /// (in one write transaction, which checks again what another process may
    /// have recorded meanwhile). A read-only environment only checks.
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` naming every difference
    ///   of the first entity that differs, before any record is read or written.
    func checkSchemas<R: Record>(of type: R.Type) throws {
        let declared = EntitySchema.tree(for: type)
        // The names every backend refuses (among them the '__' of the
        // environment's own databases and the '#' of `E#id` and `E#<index>`).
        for schema in declared { try EntityName.check(schema.entity) }
        // An entity's own databases are named `E#id` and `E#<index>`: an
        // index named 'id' would share one.
        for schema in declared where schema.indexes.contains(where: { $0.name == "id" }) {
            throw StorageError(
                .schemaMismatch, .open, entity: schema.entity,
                message: "the index name 'id' is reserved: the entity's database of child keys is named '\(schema.entity)#id'")
        }
        handleLock.lock()
        let opened = Array(openedSchemas.values)
        handleLock.unlock()
        guard let metadata = try database(Self.metadataDatabase) else {
            try ChildHolders.checkOpening(type, recorded: opened)
            return
        }
        func stored(_ entity: String, _ txn: borrowing Transaction) throws -> EntitySchema? {
            try txn.withValue(metadata, Array(StoreMetadataKey.schema(entity).utf8)) {
                try EntitySchema.decode($0, entity: entity)
            }
        }
        let (missing, recorded): ([EntitySchema], [EntitySchema]) = try read(.open) { txn in
            var missing: [EntitySchema] = []
            for schema in declared {
                if let recorded = try stored(schema.entity, txn) {
                    try schema.check(against: recorded)
                } else {
                    missing.append(schema)
                }
            }
            // A child entity held by another entity's relation too.
            let schemas = try Self.recordedSchemas(metadata, txn) + opened
            try ChildHolders.checkOpening(type, recorded: schemas)
            return (missing, schemas)
        }
        // A child entity holding records written on their own before its
        // holder (the databases are looked up outside the read transaction:
        // a handle is opened in a transaction of its own).
        try ChildHolders.checkStoredOnTheirOwn(type, recorded: recorded) { child, _ in
            try holdsRecordsOnTheirOwn(child, links: EntityTable<R>.linksDatabase)
        }
        guard !missing.isEmpty, !isReadOnly else { return }
        try write(.open) { txn in
            // Again in the write transaction: another process may have
            // recorded a holder since.
            try ChildHolders.checkOpening(type, recorded: try Self.recordedSchemas(metadata, txn))
            for schema in missing {
                if let recorded = try stored(schema.entity, txn) {
                    try schema.check(against: recorded)
                } else {
                    try txn.put(metadata, Array(StoreMetadataKey.schema(schema.entity).utf8), schema.encoded())
                }
            }
        }
    }

    /// Whether the entity `child` holds records and the links database
    /// (`links`) records no parent for it: records written through the
    /// child's own storage, not as children
    /// (``ChildHolders/checkStoredOnTheirOwn(_:recorded:holdsRecordsOnTheirOwn:)``).
    private func holdsRecordsOnTheirOwn(_ child: String, links: String) throws -> Bool {
        guard let links = try database(links), let main = try database(child) else { return false }
        return try read(.open) { txn in
            let linked = try txn.withValue(links, Array(child.utf8)) { _ in true } ?? false
            return try !linked && txn.entryCount(main) > 0
        }
    }

    /// Every schema recorded in `metadata`, in key order.
    private static func recordedSchemas(_ metadata: MDB_dbi, _ txn: borrowing Transaction) throws -> [EntitySchema] {
        let prefix = Array(StoreMetadataKey.schema("").utf8)
        let cursor = try txn.openCursor(metadata)
        defer { mdb_cursor_close(cursor) }
        var schemas: [EntitySchema] = []
        var code = prefix.withUnsafeBytes { bytes in
            var k = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            var v = MDB_val()
            return mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
        }
        while code == MDB_SUCCESS {
            var k = MDB_val()
            var v = MDB_val()
            try txn.check(mdb_cursor_get(cursor, &k, &v, MDB_GET_CURRENT), "mdb_cursor_get")
            let key = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
            guard key.starts(with: prefix) else { break }
            let entity = String(decoding: key.dropFirst(prefix.count), as: UTF8.self)
            schemas.append(try EntitySchema.decode(txn.bounds.lent(v, txn.operation), entity: entity))
            code = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
        }
        if code != MDB_SUCCESS, code != MDB_NOTFOUND { try txn.check(code, "mdb_cursor_get") }
        return schemas
    }

    // MARK: - Parents and children

    /// Records that `child` entities are owned by `link.parent`, so a storage of
    /// the child used on its own keys, checks and moves children the same way.
    func register(child: String, link: ParentLink) {
        handleLock.lock()
        let name = DatabaseName(child)
        let changed = parentLinks[name] != link
        if changed { parentLinks[name] = link }
        handleLock.unlock()
        // Every storage of the parent registers its children's links when
        // it is opened: counted only when a link is new or another, so
        // that opening one again does not make every table derive its
        // prepared reads again.
        if changed { linkChanges.add(1, ordering: .relaxed) }
    }

    /// The parent of `entity`, if a parent storage declared it as a child.
    func parentLink(of entity: String) -> ParentLink? {
        handleLock.lock()
        defer { handleLock.unlock() }
        return parentLinks[DatabaseName(entity)]
    }
}

/// How a child entity finds its parent: the parent's databases and the child's
/// foreign-key field.
struct ParentLink: Sendable, Equatable {
    /// The parent entity's name.
    var parent: String
    /// The position of the foreign key among the child's fields.
    var foreignKeyIndex: Int
    /// The parent's main database.
    var parentMain: MDB_dbi
    /// The parent's own id → storage-key lookup, when the parent is a child too.
    var parentById: MDB_dbi?
}
