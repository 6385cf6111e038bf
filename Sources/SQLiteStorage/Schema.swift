import DAOCore

/// The foreign key a child table holds to its parent: `column` references
/// `parentTable(parentColumn)` with `ON DELETE CASCADE`.
struct ForeignKey: Sendable, Hashable {
    let column: String
    let parentTable: String
    let parentColumn: String
}

/// The SQL column type of a field type. A real (or date) column is declared
/// without a type, so it has no affinity and keeps every real bit for bit:
/// a column of REAL affinity stores an integral real as an integer, and
/// `-0.0` comes back `0.0`; a NaN is stored as a blob (``bindReal(_:_:_:)``).
func sqlType(_ type: FieldType) -> String {
    switch type {
    case .integer, .bool: "INTEGER"
    case .real, .date: ""
    case .text: "TEXT"
    case .blob: "BLOB"
    }
}

/// The type a real column of a table written before reals were kept bit for
/// bit is declared with: `REAL` (``SQLiteTable/ensureSchema(_:foreignKey:)``
/// rebuilds such a table).
let legacyRealType = "REAL"

/// `name` and its type (``sqlType(_:)``), as a column definition begins.
func columnDefinition(_ name: String, _ type: FieldType) -> String {
    let sql = sqlType(type)
    return sql.isEmpty ? quoted(name) : "\(quoted(name)) \(sql)"
}

/// `CREATE TABLE` for an entity of `schema` under `tableName`: one typed
/// column per field, `NOT NULL` for non-optionals, the primary key (an integer
/// key is `INTEGER PRIMARY KEY`, SQLite's rowid), and the foreign key if any.
func tableDDL(for schema: EntitySchema, named tableName: String, foreignKey: ForeignKey?) -> String {
    var definitions: [String] = []
    for (index, field) in schema.fields.enumerated() {
        var column = columnDefinition(field.name, field.type)
        if index == 0 {
            column += " NOT NULL PRIMARY KEY"
        } else if !field.optional {
            column += " NOT NULL"
        }
        definitions.append(column)
    }
    if let foreignKey {
        definitions.append(
            "FOREIGN KEY (\(quoted(foreignKey.column))) REFERENCES \(quoted(foreignKey.parentTable))"
                + " (\(quoted(foreignKey.parentColumn))) ON DELETE CASCADE")
    }
    return "CREATE TABLE \(quoted(tableName)) (\(definitions.joined(separator: ", ")))"
}

extension SQLiteTable {
    /// `CREATE TABLE` for the entity under `tableName` (see ``tableDDL(for:named:foreignKey:)``).
    func createTableSQL(named tableName: String, foreignKey: ForeignKey?) -> String {
        tableDDL(for: EntitySchema(entity), named: tableName, foreignKey: foreignKey)
    }

    /// Checks the table, its indexes and its relations' child tables against
    /// the declaration and, in ``SchemaSession/Mode/create`` mode, creates
    /// what is missing and records the entity's schema. Runs inside the
    /// caller's transaction. In ``SchemaSession/Mode/check`` mode nothing is
    /// written: the session notes instead that a write is needed.
    ///
    /// The schema recorded in the metadata table is compared first, so a
    /// changed record type is refused before any row is read or written, with
    /// the same error on every backend. A table created before schemas were
    /// recorded is checked by its columns and its schema recorded then.
    ///
    /// A child table first created through its own storage has no foreign key
    /// yet; when its parent's storage is opened, the table is rebuilt with it
    /// (SQLite cannot add a foreign key in place). A table whose real columns
    /// are declared `REAL` (``legacyRealType``, written before reals were kept
    /// bit for bit) is rebuilt the same way with columns without a type
    /// (``sqlType(_:)``), every row copied as it is, in key order; the
    /// rebuild needs foreign keys off (dropping a parent's table would
    /// cascade into its children), so in a transaction that enforces them it
    /// throws ``ForeignKeysMustBeOff`` and ``SQLiteDatabase/storage(for:)``
    /// runs the session again with them off. A table that holds rows
    /// then was written through the child's own storage before its parent's
    /// was opened, and ``SQLiteDatabase/storage(for:)`` refuses the parent
    /// first (``ChildHolders/checkStoredOnTheirOwn(_:recorded:holdsRecordsOnTheirOwn:)``);
    /// should the rebuild still meet a child without a parent, it fails with
    /// ``StorageError/Kind/constraint``.
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` when the stored schema or
    ///   an existing table's columns differ from the entity's declaration, or
    ///   when the entity's relations loop back to it.
    func ensureSchema(_ session: SchemaSession, foreignKey: ForeignKey?) throws {
        // Checked before `validate()`, which itself recurses into the children's
        // declarations and would not come back from a loop.
        if let cycle {
            throw StorageError(
                .schemaMismatch, .open, entity: entity.name,
                message: "'\(entity.name)' cannot be stored in SQLite: \(cycle)")
        }
        try entity.validate()
        if entity.name == SchemaSession.metadataTable {
            throw StorageError(
                .schemaMismatch, .open, entity: entity.name,
                message: "the name '\(entity.name)' is reserved for the store's metadata table")
        }
        // SQLite compares table names ignoring ASCII case: 'Bins' would open
        // the table of an entity 'bins' and share its records.
        if let alike = try session.table(namedAlike: name) {
            throw StorageError(
                .schemaMismatch, .open, entity: entity.name,
                message: "the entity name '\(entity.name)' differs from the stored entity '\(alike)' only in letter case, "
                    + "and SQLite table names ignore case; give one of them another name")
        }
        let connection = session.connection
        let declared = EntitySchema(entity)
        let stored = try session.storedSchema(of: entity.name)
        if let stored { try declared.check(against: stored) }
        let existing = try columns(of: name, connection)
        if existing.isEmpty {
            try session.execute(createTableSQL(named: name, foreignKey: foreignKey))
        } else {
            let realsDeclaredReal = try check(existing)
            if let foreignKey, try !hasForeignKey(foreignKey, connection) {
                try session.write { try rebuild(with: foreignKey, connection) }
            } else if realsDeclaredReal {
                try session.write { try rebuild(with: try storedForeignKey(connection), connection) }
            }
        }
        if stored == nil {
            try session.record(declared)
        }
        // The declared indexes and the one on the foreign key, under names
        // derived from the table's (IndexNames); a store written before
        // those names has its indexes under the declared names and
        // `<table>_by_<column>`, replaced here.
        // A child's table set up through its own storage is given no foreign
        // key here, but may hold one (made through its parent's storage, or
        // just now through its owner's): the index on it stays.
        let foreignKeyColumn = try foreignKey?.column ?? storedForeignKeyColumn(connection)
        let indexes = IndexSet(
            table: name, declared: entity.indexes.map { ($0.name, $0.fields) }, foreignKeyColumn: foreignKeyColumn)
        var legacy = entity.indexes.map { LegacyIndex(name: $0.name, columns: $0.fields) }
        if let foreignKeyColumn {
            legacy.append(
                LegacyIndex(name: IndexNames.legacyForeignKey(table: name, column: foreignKeyColumn), columns: [foreignKeyColumn]))
        }
        try session.reconcile(indexes, legacy: legacy)
        for link in links {
            try link.ensureSchema(session)
        }
    }

    private struct Column: Equatable {
        var name: String
        var type: String
        var notNull: Bool
        var primaryKey: Bool
    }

    private func columns(of table: String, _ connection: Connection) throws -> [Column] {
        let statement = try connection.oneOffStatement("PRAGMA table_info(\(quoted(table)))")
        var columns: [Column] = []
        while try statement.step() {
            columns.append(
                Column(
                    name: statement.text(1) ?? "", type: (statement.text(2) ?? "").uppercased(),
                    notNull: statement.int64(3) != 0, primaryKey: statement.int64(5) != 0))
        }
        return columns
    }

    /// Checks the table's columns against the declaration; `true` when they
    /// match but for real columns declared `REAL` (``legacyRealType``).
    private func check(_ existing: [Column]) throws -> Bool {
        let expected = entity.fields.enumerated().map { index, field in
            Column(name: field.name, type: sqlType(field.type), notNull: index == 0 || !field.isOptional, primaryKey: index == 0)
        }
        guard existing != expected else { return false }
        let legacy = zip(expected, entity.fields).map { column, field in
            var column = column
            if field.type == .real || field.type == .date { column.type = legacyRealType }
            return column
        }
        if existing.count == expected.count,
            zip(existing, zip(expected, legacy)).allSatisfy({ $0 == $1.0 || $0 == $1.1 })
        {
            return true
        }
        func describe(_ columns: [Column]) -> String {
            columns.map { "\($0.name) \($0.type)\($0.notNull ? " NOT NULL" : "")\($0.primaryKey ? " PRIMARY KEY" : "")" }
                .joined(separator: ", ")
        }
        throw StorageError(
            .schemaMismatch, .open, entity: entity.name,
            message: "table '\(name)' has columns (\(describe(existing))) but the record declares (\(describe(expected)))")
    }

    private func hasForeignKey(_ foreignKey: ForeignKey, _ connection: Connection) throws -> Bool {
        let statement = try connection.oneOffStatement("PRAGMA foreign_key_list(\(quoted(name)))")
        while try statement.step() {
            // id, seq, table, from, to, on_update, on_delete, match
            if statement.text(2) == foreignKey.parentTable, statement.text(3) == foreignKey.column,
                statement.text(4) == foreignKey.parentColumn,
                statement.text(6)?.uppercased() == "CASCADE"
            {
                return true
            }
        }
        return false
    }

    /// The foreign key the table holds, if it holds one.
    private func storedForeignKey(_ connection: Connection) throws -> ForeignKey? {
        let statement = try connection.oneOffStatement("PRAGMA foreign_key_list(\(quoted(name)))")
        // id, seq, table, from, to, on_update, on_delete, match
        guard try statement.step(), let parent = statement.text(2), let column = statement.text(3),
            let parentColumn = statement.text(4)
        else { return nil }
        return ForeignKey(column: column, parentTable: parent, parentColumn: parentColumn)
    }

    /// The column of the foreign key the table holds, if it holds one.
    private func storedForeignKeyColumn(_ connection: Connection) throws -> String? {
        let statement = try connection.oneOffStatement("PRAGMA foreign_key_list(\(quoted(name)))")
        // id, seq, table, from, to, on_update, on_delete, match
        return try statement.step() ? statement.text(3) : nil
    }

    /// Rebuilds the table as the declaration makes it, with `foreignKey`:
    /// creates it under another name, copies every row in key order, drops
    /// the old one and renames the new one. With foreign keys enforced, a
    /// table that another table's foreign key names is not rebuilt
    /// (``ForeignKeysMustBeOff``): dropping it would cascade. With them off,
    /// the rows are checked against `foreignKey` afterwards.
    private func rebuild(with foreignKey: ForeignKey?, _ connection: Connection) throws {
        let enforced = try connection.scalarInt("PRAGMA foreign_keys") == 1
        if enforced, try isReferenced(connection) { throw ForeignKeysMustBeOff() }
        let temporary = "\(name)__rebuild"
        try connection.execute(createTableSQL(named: temporary, foreignKey: foreignKey))
        try connection.execute(
            "INSERT INTO \(quoted(temporary)) (\(selectList)) SELECT \(selectList) FROM \(quoted(name))"
                + " ORDER BY \(quoted(entity.fields[0].name))")
        try connection.execute("DROP TABLE \(quoted(name))")
        try connection.execute("ALTER TABLE \(quoted(temporary)) RENAME TO \(quoted(name))")
        if !enforced, foreignKey != nil {
            let check = try connection.oneOffStatement("PRAGMA foreign_key_check(\(quoted(name)))")
            if try check.step() {
                throw StorageError(
                    .constraint, .open, entity: entity.name,
                    message: "table '\(name)' holds a row whose parent is not stored")
            }
        }
    }

    /// Whether another table's foreign key names this table.
    private func isReferenced(_ connection: Connection) throws -> Bool {
        let statement = try connection.oneOffStatement(
            "SELECT 1 FROM sqlite_master AS m, pragma_foreign_key_list(m.name) AS f"
                + " WHERE m.type = 'table' AND f.\"table\" = ?1 COLLATE NOCASE AND m.name <> ?1 LIMIT 1")
        try statement.bind(name, at: 1)
        return try statement.step()
    }
}

/// One pass over the schema of a storage's tables, inside one transaction.
///
/// In `check` mode (a deferred read transaction, which never waits for a
/// writer in WAL mode) it only reads, and notes in ``needsWrite`` what it
/// would have to create; in `create` mode (under the write lock) it creates
/// it. ``SQLiteDatabase/storage(for:)`` runs `check` first and `create` only
/// when something is missing, so opening an existing store never waits
/// behind another process's write.
///
/// The metadata table `_dao_metadata (key TEXT PRIMARY KEY, value BLOB)` holds
/// each entity's schema under ``StoreMetadataKey/schema(_:)``, in the form
/// ``EntitySchema/encoded()`` writes; it is where a schema version and the
/// applied migrations are to be recorded too.
final class SchemaSession {
    enum Mode { case check, create }

    /// The name of the metadata table.
    static let metadataTable = "_dao_metadata"

    let connection: Connection
    let mode: Mode
    /// Set in `check` mode when something would have to be created or recorded.
    private(set) var needsWrite = false
    private var hasMetadataTable: Bool

    init(_ connection: Connection, mode: Mode) throws {
        self.connection = connection
        self.mode = mode
        hasMetadataTable = try Self.exists(table: Self.metadataTable, connection)
        if !hasMetadataTable {
            try execute(
                "CREATE TABLE IF NOT EXISTS \(quoted(Self.metadataTable)) (key TEXT NOT NULL PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
            )
            hasMetadataTable = mode == .create
        }
    }

    /// Runs the DDL `sql` in `create` mode; notes that it is needed in `check` mode.
    func execute(_ sql: String) throws {
        try write { try connection.execute(sql) }
    }

    /// Runs `body` in `create` mode; notes that a write is needed in `check` mode.
    func write(_ body: () throws -> Void) throws {
        switch mode {
        case .create: try body()
        case .check: needsWrite = true
        }
    }

    /// The schema recorded for `entity`, if any.
    func storedSchema(of entity: String) throws -> EntitySchema? {
        guard hasMetadataTable else { return nil }
        let statement = try connection.oneOffStatement("SELECT value FROM \(quoted(Self.metadataTable)) WHERE key = ?1")
        try statement.bind(StoreMetadataKey.schema(entity), at: 1)
        guard try statement.step(), let bytes = statement.blob(0) else { return nil }
        return try EntitySchema.decode(bytes, entity: entity)
    }

    /// Every schema the metadata table records.
    func storedSchemas() throws -> [EntitySchema] {
        guard hasMetadataTable else { return [] }
        let statement = try connection.oneOffStatement(
            "SELECT key, value FROM \(quoted(Self.metadataTable)) WHERE key >= 'schema/' AND key < 'schema0'")
        let prefix = StoreMetadataKey.schema("")
        var schemas: [EntitySchema] = []
        while try statement.step() {
            let entity = String((statement.text(0) ?? "").dropFirst(prefix.count))
            schemas.append(try EntitySchema.decode(statement.blob(1) ?? [], entity: entity))
        }
        return schemas
    }

    /// Records `schema` as the entity's stored schema.
    func record(_ schema: EntitySchema) throws {
        try write {
            let statement = try connection.oneOffStatement(
                "INSERT OR REPLACE INTO \(quoted(Self.metadataTable)) (key, value) VALUES (?1, ?2)")
            try statement.bind(StoreMetadataKey.schema(schema.entity), at: 1)
            try schema.encoded().withUnsafeBytes { try statement.bind(blob: $0, at: 2) }
            try statement.run()
        }
    }

    /// Brings `indexes`' table to its indexes in `create` mode (see
    /// ``IndexSet/reconcile(legacy:connection:apply:)``); notes that a
    /// write is needed in `check` mode when something would change.
    func reconcile(_ indexes: IndexSet, legacy: [LegacyIndex]) throws {
        switch mode {
        case .create: _ = try indexes.reconcile(legacy: legacy, connection: connection, apply: true)
        case .check:
            if try indexes.reconcile(legacy: legacy, connection: connection, apply: false) { needsWrite = true }
        }
    }

    /// Whether the table of the entity `child` holds rows, no foreign key to
    /// the table of `holder`, and `holder`'s table no row: rows written
    /// through the child's own storage, not as `holder`'s children
    /// (``ChildHolders/checkStoredOnTheirOwn(_:recorded:holdsRecordsOnTheirOwn:)``).
    /// A holder's table with rows was made before its schema was recorded
    /// (or outside the store): the rebuild with the foreign key keeps the
    /// children whose parent it holds, as the file stores keep a holder's
    /// document.
    func holdsRowsOnTheirOwn(_ child: String, holder: String) throws -> Bool {
        guard try holdsRows(child) else { return false }
        let foreignKeys = try connection.oneOffStatement("PRAGMA foreign_key_list(\(quoted(child)))")
        // id, seq, table, from, to, on_update, on_delete, match
        while try foreignKeys.step() {
            if foreignKeys.text(2) == holder { return false }
        }
        return try !holdsRows(holder)
    }

    /// Whether `table` exists and holds a row.
    private func holdsRows(_ table: String) throws -> Bool {
        guard try Self.exists(table: table, connection) else { return false }
        let rows = try connection.oneOffStatement("SELECT 1 FROM \(quoted(table)) LIMIT 1")
        return try rows.step()
    }

    /// The table that SQLite takes for `table` (names ignore ASCII case)
    /// under another spelling, if there is one.
    func table(namedAlike table: String) throws -> String? {
        let statement = try connection.oneOffStatement(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?1 COLLATE NOCASE AND name <> ?1")
        try statement.bind(table, at: 1)
        return try statement.step() ? statement.text(0) : nil
    }

    private static func exists(table: String, _ connection: Connection) throws -> Bool {
        let statement = try connection.oneOffStatement("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1")
        try statement.bind(table, at: 1)
        return try statement.step()
    }
}

/// Thrown by a schema session that must rebuild a table other tables' foreign
/// keys name while foreign keys are enforced; ``SQLiteDatabase/storage(for:)``
/// runs the session again with them off.
struct ForeignKeysMustBeOff: Error {}
