import CSQLite
import DAOCore
import Foundation

extension SQLiteDatabase: MigratableStore {
    /// Runs a migration in one `BEGIN IMMEDIATE` transaction on the writer
    /// connection, with foreign keys off for its length (so a rebuilt parent
    /// table does not cascade into its children) and checked with
    /// `PRAGMA foreign_key_check` before the commit.
    ///
    /// - Throws: ``StorageError/Kind/closed`` after ``close()``;
    ///   ``StorageError/Kind/invalidArgument`` once a storage was handed
    ///   out (migrate before `storage(for:)`); ``StorageError/Kind/constraint``
    ///   when the migrated rows break a foreign key; what `body` throws.
    public func withMigrationTransaction<T>(_ body: (any MigrationTransaction) throws -> T) throws -> T {
        // Inside the connection's lock, so that a closed database says `closed`.
        return try withConnection(.open, entity: "") { connection in
            guard !handedOutStorage.withLock({ $0 }) else {
                throw StorageError(
                    .invalidArgument, .open, path: path, message: "a migration must run before the database hands out storages")
            }
            // `PRAGMA foreign_keys` has no effect inside a transaction.
            try connection.execute("PRAGMA foreign_keys = OFF")
            let result: T
            do {
                result = try connection.transaction(immediate: true) {
                    let txn = try SQLiteMigrationTransaction(connection)
                    let result = try body(txn)
                    try txn.checkForeignKeys()
                    return result
                }
            } catch {
                connection.dropCachedStatements()
                try connection.execute("PRAGMA foreign_keys = ON")
                throw error
            }
            connection.dropCachedStatements()
            try connection.execute("PRAGMA foreign_keys = ON")
            return result
        }
    }
}

/// A migration inside one SQLite transaction: `ALTER TABLE` where SQLite can
/// (add, drop and rename a column, rename a table), `CREATE`/`DROP INDEX`,
/// and a table rebuild (create, copy, drop, rename) where it must.
final class SQLiteMigrationTransaction: MigrationTransaction {
    let connection: Connection
    private var metadataTable: String { quoted(SchemaSession.metadataTable) }

    init(_ connection: Connection) throws {
        self.connection = connection
        try connection.execute(
            "CREATE TABLE IF NOT EXISTS \(quoted(SchemaSession.metadataTable)) (key TEXT NOT NULL PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
        )
    }

    func recordedSchemas() throws -> [String: EntitySchema] {
        let statement = try Statement(
            db: connection.handle, sql: "SELECT key, value FROM \(metadataTable) WHERE key >= 'schema/' AND key < 'schema0'",
            persistent: false)
        var schemas: [String: EntitySchema] = [:]
        let prefix = StoreMetadataKey.schema("")
        while try statement.step() {
            let entity = String((statement.text(0) ?? "").dropFirst(prefix.count))
            schemas[entity] = try EntitySchema.decode(statement.blob(1) ?? [], entity: entity)
        }
        return schemas
    }

    func metadata(_ key: String) throws -> [UInt8]? {
        let statement = try Statement(
            db: connection.handle, sql: "SELECT value FROM \(metadataTable) WHERE key = ?1", persistent: false)
        try statement.bind(key, at: 1)
        guard try statement.step() else { return nil }
        return statement.blob(0)
    }

    func setMetadata(_ key: String, _ value: [UInt8]) throws {
        let statement = try Statement(
            db: connection.handle, sql: "INSERT OR REPLACE INTO \(metadataTable) (key, value) VALUES (?1, ?2)",
            persistent: false)
        try statement.bind(key, at: 1)
        try value.withUnsafeBytes { try statement.bind(blob: $0, at: 2) }
        try statement.run()
    }

    private func removeMetadata(_ key: String) throws {
        let statement = try Statement(
            db: connection.handle, sql: "DELETE FROM \(metadataTable) WHERE key = ?1", persistent: false)
        try statement.bind(key, at: 1)
        try statement.run()
    }

    func record(_ schema: EntitySchema) throws {
        try setMetadata(StoreMetadataKey.schema(schema.entity), schema.encoded())
    }

    func rows(of schema: EntitySchema, in schemas: [String: EntitySchema]) throws -> [[StoredValue]] {
        guard try tableExists(schema.entity) else { return [] }
        let columns = schema.fields.map { quoted($0.name) }.joined(separator: ", ")
        let statement = try Statement(
            db: connection.handle,
            sql: "SELECT \(columns) FROM \(quoted(schema.entity)) ORDER BY \(quoted(schema.fields[0].name))",
            persistent: false)
        var rows: [[StoredValue]] = []
        while try statement.step() {
            rows.append(schema.fields.indices.map { statement.storedValue(Int32($0)) })
        }
        return rows
    }

    func rewrite(
        from old: EntitySchema?, to new: EntitySchema, rows: [[StoredValue]], in schemas: [String: EntitySchema]
    ) throws {
        let temporary = new.entity + "__migrating"
        try connection.execute(
            tableDDL(for: new, named: temporary, foreignKey: foreignKey(of: new, in: schemas)))
        let placeholders = (1...new.fields.count).map { "?\($0)" }.joined(separator: ", ")
        let columns = new.fields.map { quoted($0.name) }.joined(separator: ", ")
        let insert = try Statement(
            db: connection.handle, sql: "INSERT INTO \(quoted(temporary)) (\(columns)) VALUES (\(placeholders))",
            persistent: false)
        for row in rows {
            try insert.bind(row)
            try insert.run()
        }
        if let old, try tableExists(old.entity) {
            try connection.execute("DROP TABLE \(quoted(old.entity))")
        }
        if try tableExists(new.entity) {
            try connection.execute("DROP TABLE \(quoted(new.entity))")
        }
        try connection.execute("ALTER TABLE \(quoted(temporary)) RENAME TO \(quoted(new.entity))")
        try reconcileIndexes(of: old, new, in: schemas)
        if let old, old.entity != new.entity { try removeMetadata(StoreMetadataKey.schema(old.entity)) }
        try record(new)
    }

    func alter(
        _ change: NativeAlteration, from old: EntitySchema, to new: EntitySchema, in schemas: [String: EntitySchema]
    ) throws -> Bool {
        let table = quoted(old.entity)
        switch change {
        case .addField(let field, let value):
            var column = columnDefinition(field.name, field.type)
            var update = false
            if !field.optional {
                // SQLite adds a NOT NULL column only with a constant default;
                // a value that has no exact SQL literal is set by an UPDATE.
                switch value {
                case .integer(let number): column += " NOT NULL DEFAULT \(number)"
                case .text(let text) where !text.utf8.contains(0):
                    column += " NOT NULL DEFAULT '\(text.replacingOccurrences(of: "'", with: "''"))'"
                default:
                    column += " NOT NULL DEFAULT 0"
                    update = true
                }
            } else if value != .null {
                update = true
            }
            try connection.execute("ALTER TABLE \(table) ADD COLUMN \(column)")
            if update {
                let statement = try Statement(
                    db: connection.handle, sql: "UPDATE \(table) SET \(quoted(field.name)) = ?1", persistent: false)
                try statement.bind(value, at: 1)
                try statement.run()
            }
        case .dropField(let name):
            try connection.execute("ALTER TABLE \(table) DROP COLUMN \(quoted(name))")
        case .renameField(let from, let to):
            try connection.execute("ALTER TABLE \(table) RENAME COLUMN \(quoted(from)) TO \(quoted(to))")
            // A store written before index names were derived per table
            // named the foreign-key index after the column.
            try reconcileIndexes(
                of: old, new, in: schemas,
                legacy: [LegacyIndex(name: IndexNames.legacyForeignKey(table: old.entity, column: from), columns: [to])])
        case .renameEntity(let from, let to):
            // The table's indexes move with it under names derived from `from`:
            // replaced by names derived from `to` (and the old name is free
            // for a new entity's indexes).
            try connection.execute("ALTER TABLE \(table) RENAME TO \(quoted(to))")
            try reconcileIndexes(of: old, new, in: schemas)
            try removeMetadata(StoreMetadataKey.schema(from))
        case .addIndex, .dropIndex:
            try reconcileIndexes(of: old, new, in: schemas)
        }
        try record(new)
        return true
    }

    func drop(_ schema: EntitySchema, in schemas: [String: EntitySchema]) throws {
        // The table is the store's (its schema is recorded); its indexes go with it.
        if try tableExists(schema.entity) {
            try connection.execute("DROP TABLE \(quoted(schema.entity))")
        }
        try removeMetadata(StoreMetadataKey.schema(schema.entity))
    }

    /// Fails when a row's foreign key names no parent.
    func checkForeignKeys() throws {
        let statement = try Statement(db: connection.handle, sql: "PRAGMA foreign_key_check", persistent: false)
        if try statement.step() {
            throw StorageError(
                .constraint, .open, entity: statement.text(0),
                message: "after the migration, a row of '\(statement.text(0) ?? "")' names a parent in '\(statement.text(2) ?? "")' that does not exist")
        }
    }

    /// The foreign key `schema`'s table holds to its owner, from the owner's relation.
    private func foreignKey(of schema: EntitySchema, in schemas: [String: EntitySchema]) -> ForeignKey? {
        guard let owner = schema.owner, let ownerSchema = schemas[owner],
            let relation = ownerSchema.relations.first(where: { $0.child == schema.entity }),
            let parentKey = ownerSchema.primaryKey
        else { return nil }
        return ForeignKey(column: relation.foreignKey, parentTable: owner, parentColumn: parentKey)
    }

    /// Brings `new`'s table to the indexes `new` declares and the one on its
    /// foreign key, under the names derived per table (``IndexNames``): drops
    /// what this adapter made that `new` no longer declares (or that kept the
    /// name of the table's old name), and the indexes of a store written
    /// before those names, whose names were the declared ones (of `old` and
    /// `new`), `<table>_by_<column>`, and `given` (see
    /// ``IndexSet/reconcile(legacy:connection:apply:)``).
    private func reconcileIndexes(
        of old: EntitySchema?, _ new: EntitySchema, in schemas: [String: EntitySchema], legacy given: [LegacyIndex] = []
    ) throws {
        let foreignKey = foreignKey(of: new, in: schemas)
        let indexes = IndexSet(
            table: new.entity, declared: new.indexes.map { ($0.name, $0.fields) }, foreignKeyColumn: foreignKey?.column)
        // An index keeps its columns through a renamed field (SQLite renames
        // them in the index too): `new`'s fields where it declares the index.
        var legacy = given + new.indexes.map { LegacyIndex(name: $0.name, columns: $0.fields) }
        for index in old?.indexes ?? [] where !new.indexes.contains(where: { $0.name == index.name }) {
            legacy.append(LegacyIndex(name: index.name, columns: index.fields))
        }
        if let foreignKey {
            for entity in Set([new.entity, old?.entity ?? new.entity]) {
                legacy.append(
                    LegacyIndex(
                        name: IndexNames.legacyForeignKey(table: entity, column: foreignKey.column), columns: [foreignKey.column]))
            }
        }
        _ = try indexes.reconcile(legacy: legacy, connection: connection, apply: true)
    }

    private func tableExists(_ name: String) throws -> Bool {
        try exists("table", name)
    }

    private func exists(_ type: String, _ name: String) throws -> Bool {
        let statement = try Statement(
            db: connection.handle, sql: "SELECT 1 FROM sqlite_master WHERE type = ?1 AND name = ?2", persistent: false)
        try statement.bind(type, at: 1)
        try statement.bind(name, at: 2)
        return try statement.step()
    }
}
