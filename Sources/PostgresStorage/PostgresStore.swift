import DAOCore
import Foundation
import PostgresNIO
import Synchronization

/// A pooled connection found dead when a transaction began on it.
struct StaleConnection: Error {
    let underlying: any Error
}

/// A PostgreSQL database (one schema of it) as a ``Store``: one table per
/// entity, with typed columns, relations as foreign keys that cascade, the
/// declared indexes, and the entities' schemas recorded in a
/// `_dao_metadata` table beside them.
///
/// ```swift
/// let database = try PostgresStore(url: "postgres://app@localhost:5432/app?schema=chat")
/// let dialogs = DAO(storage: try database.storage(for: DialogRecord.self), translator: DialogTranslator())
/// ```
///
/// Every storage call is one transaction at the configured isolation level,
/// run again as a whole when the server reports a serialization failure or
/// a deadlock (SQLSTATE 40001, 40P01). The synchronous calls block their
/// thread until the server answers; the `async` calls run them on the
/// store's own threads (``executor``), never on Swift's cooperative pool.
public final class PostgresStore: Store, Sendable {
    /// What the store was opened with.
    public let configuration: PostgresConfiguration
    let pool: ConnectionPool
    /// The store's broadcaster: the store's own commits, and those of other
    /// stores on the schema that an observer with a poll interval hears.
    public let commits = CommitBroadcaster()
    /// Hears other stores' commits (their `pg_notify`) while an observer polls.
    let listener: CommitListener
    /// The threads of the `async` calls: a reader and a writer thread per
    /// pooled connection, writes running side by side
    /// (``StoreExecutor/writerCount``).
    public let executor: StoreExecutor
    /// The schemas of the storages opened, by entity (for the child-holder rule).
    private let opened = Mutex<[String: EntitySchema]>([:])
    private let handedOutStorage = Mutex(false)
    private let closed = Atomic<Bool>(false)
    private let retries = Atomic<Int>(0)
    /// `"namespace"`, quoted.
    let namespace: String
    let metadataTable: String

    /// Opens the database at `url` (see ``PostgresConfiguration/init(url:)``).
    /// - Throws: as ``init(_:)``.
    public convenience init(url: String, durability: Durability = .full) throws {
        var configuration = try PostgresConfiguration(url: url)
        configuration.durability = durability
        try self.init(configuration)
    }

    /// Connects to the server, creates the schema and the metadata table when
    /// missing, and keeps the connection for later calls.
    ///
    /// - Throws: ``StorageError/Kind/io`` naming host and port when the server
    ///   cannot be reached within the connect timeout or refuses the login;
    ///   ``StorageError/Kind/invalidArgument`` for a bad configuration.
    public init(_ configuration: PostgresConfiguration) throws {
        guard !configuration.schema.isEmpty, !configuration.schema.unicodeScalars.contains("\u{0}") else {
            throw StorageError(.invalidArgument, .open, path: configuration.description, message: "the schema name is empty or holds U+0000")
        }
        self.configuration = configuration
        pool = try ConnectionPool(configuration)
        // The server runs write transactions side by side: one writer
        // thread would make each awaited write wait for the round trips of
        // every write queued before it.
        let threads = max(1, configuration.poolSize)
        executor = StoreExecutor(readers: threads, name: "postgres", writers: threads)
        namespace = identifier(configuration.schema)
        metadataTable = namespace + "." + identifier("_dao_metadata")
        listener = CommitListener(schema: configuration.schema, configuration: try configuration.connectionConfiguration())
        commits.setVersionSource { [listener] in listener.version() }
        try pool.withConnection(.open, entity: nil) { connection in
            do {
                try connection.run("CREATE SCHEMA IF NOT EXISTS \(namespace)")
                try connection.run(
                    "CREATE TABLE IF NOT EXISTS \(metadataTable) (key text COLLATE \"C\" PRIMARY KEY, value bytea NOT NULL)")
            } catch {
                // Two stores creating the same schema at once: one of them wins, the other finds it made.
                if PostgresErrors.sqlState(error) == "23505" || PostgresErrors.sqlState(error) == "42P06" {
                    return
                }
                throw PostgresErrors.thrown(error, .open, entity: nil, configuration)
            }
        }
    }

    /// The URL the store was opened with (without its password).
    public var location: URL {
        URL(string: configuration.description) ?? URL(fileURLWithPath: "/")
    }

    /// The settings in force, read from the server.
    public var settingsDescription: String {
        do {
            return try pool.withConnection(.read, entity: nil) { connection in
                let rows = try connection.once(
                    "SELECT current_setting('server_version'), current_setting('synchronous_commit'), current_setting('shared_buffers'), current_setting('statement_timeout')"
                )
                guard let row = rows.first else { return "" }
                var reader = CellReader(row, entity: "settings")
                let values = try (0..<4).map { _ in try reader.decode(String.self) }
                return "server_version=\(values[0]) synchronous_commit=\(values[1]) shared_buffers=\(values[2]) statement_timeout=\(values[3]) pool_size=\(configuration.poolSize) isolation=\(configuration.isolation.rawValue.lowercased().replacingOccurrences(of: " ", with: "_"))"
            }
        } catch {
            return "settings unavailable: \(error)"
        }
    }

    /// The bytes the store's tables take on the server: the sum of
    /// `pg_total_relation_size` over every table in the store's schema (the
    /// entities' tables and `_dao_metadata`), each with its indexes and its
    /// TOAST table and index, as the server's files hold them now.
    ///
    /// The figure is the size of those files, which grow when a table or
    /// index is extended, before its pages are written out: no `CHECKPOINT`
    /// is needed for it to count what was committed. It is taken as the
    /// files are, without a `VACUUM`: space held by rows that updates and
    /// erasures left behind is counted until the server reuses it or a
    /// `VACUUM` returns trailing empty pages (autovacuum may do so at any
    /// time). It leaves out the cluster's write-ahead log and catalogues,
    /// which all the server's databases share.
    ///
    /// - Throws: ``StorageError`` when the server fails;
    ///   ``StorageError/Kind/closed`` after ``close()``.
    public func bytesOnServer() throws -> Int64 {
        try transaction(.read, entity: nil, readOnly: true, oneStatement: true) { connection in
            let rows = try connection.rows(
                """
                SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_catalog.pg_class c
                JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')
                """, [PostgresValue.text(configuration.schema)])
            guard let row = rows.first else { return 0 }
            var reader = CellReader(row, entity: "pg_class")
            return try reader.decode(Int64.self)
        }
    }

    /// Closes every connection after the calls in progress; later calls throw
    /// ``StorageError/Kind/closed``. Closing twice does nothing.
    public func close() throws {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        commits.close()
        listener.close()
        pool.close()
    }

    /// Drops the store's schema with everything in it, then closes the
    /// store: for a schema made for one test or one tenant. Refused, with
    /// nothing dropped, when the schema holds anything the store did not
    /// create (a table it did not record, a view, a sequence, a function).
    ///
    /// - Throws: ``StorageError/Kind/invalidArgument`` naming what the store
    ///   did not create; ``StorageError`` from the server.
    public func removeSchema() throws {
        try transaction(.erase, entity: nil) { connection in
            let recorded = Set(try recordedSchemas(connection).keys.map(tableName))
            let rows = try connection.rows(
                """
                SELECT c.relname::text, c.relkind::text FROM pg_catalog.pg_class c
                JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = $1 AND c.relkind NOT IN ('i', 't')
                UNION ALL SELECT p.proname::text, 'function' FROM pg_catalog.pg_proc p
                JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1
                UNION ALL SELECT t.typname::text, 'type' FROM pg_catalog.pg_type t
                JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
                WHERE n.nspname = $1 AND t.typtype NOT IN ('c', 'b') AND t.typrelid = 0
                """, [PostgresValue.text(configuration.schema)])
            for row in rows {
                var reader = CellReader(row, entity: "_dao_metadata")
                let name = try reader.decode(String.self)
                let kind = try reader.decode(String.self)
                guard kind == "r", name == "_dao_metadata" || recorded.contains(name) else {
                    throw StorageError(
                        .invalidArgument, .erase, path: configuration.description,
                        message: "schema '\(configuration.schema)' holds '\(name)' (\(kind)), which this store did not create; nothing was dropped")
                }
            }
            try connection.run("DROP SCHEMA \(namespace) CASCADE")
        }
        try close()
    }

    public func anyStorage<R: Record>(for type: R.Type) throws -> AnyStorage<R> {
        AnyStorage(try storage(for: type))
    }

    // MARK: Transactions

    /// Runs `body` in one transaction on a pooled connection, and runs it
    /// again as a whole (after a pause that grows, with jitter) while the
    /// server reports a serialization failure or a deadlock, up to
    /// ``PostgresConfiguration/retries`` times.
    ///
    /// `BEGIN` is sent with the first statement `body` sends (none when it
    /// sends nothing), `COMMIT` after its last, without waiting in between
    /// (see ``ServerConnection``). `oneStatement`: `body` sends one
    /// statement, which runs without `BEGIN` and `COMMIT` (a statement is a
    /// transaction of its own, at the session's isolation level, which is
    /// the configured one).
    /// - Throws: ``StorageError``; nothing of `body` is kept then.
    func transaction<T>(
        _ operation: StorageError.Operation, entity: String?, readOnly: Bool = false, oneStatement: Bool = false,
        _ body: (ServerConnection) throws -> T
    ) throws -> T {
        var attempt = 0
        var staleTries = 0
        let begin = oneStatement ? nil : (readOnly ? beginReadOnly : beginReadWrite)
        let notice =
            !readOnly && operation != .open && configuration.notifiesCommits
            ? (sql: "SELECT pg_notify($1, $2)", binds: [PostgresValue.text(listener.channel), PostgresValue.text(listener.token)])
            : nil
        while true {
            do {
                return try pool.withConnection(operation, entity: entity) { connection in
                    connection.startCall(begin: begin, notice: notice)
                    do {
                        let result = try body(connection)
                        try connection.commit()
                        return result
                    } catch {
                        if !connection.isBroken { connection.rollback() }
                        throw error
                    }
                }
            } catch let stale as StaleConnection {
                // Every idle connection may be stale after a restart: at most one try per pooled connection, and one new.
                staleTries += 1
                if staleTries <= configuration.poolSize { continue }
                throw PostgresErrors.thrown(stale.underlying, operation, entity: entity, configuration)
            } catch {
                if PostgresErrors.isRetryable(error), attempt < configuration.retries {
                    attempt += 1
                    retries.add(1, ordering: .relaxed)
                    // 2, 4, 8 … ms, at most 200 ms, with jitter so that the conflicting writers do not meet again.
                    let base = min(200.0, 2.0 * pow(2.0, Double(attempt - 1)))
                    Thread.sleep(forTimeInterval: Double.random(in: base / 2...base) / 1000)
                    continue
                }
                throw PostgresErrors.thrown(error, operation, entity: entity, configuration)
            }
        }
    }

    private var beginReadWrite: String { "BEGIN ISOLATION LEVEL \(configuration.isolation.rawValue)" }
    /// A read of several statements (a record with its children) runs at
    /// `REPEATABLE READ` at least, so that all of them see one snapshot: at
    /// `READ COMMITTED` each statement takes its own, and a commit between
    /// them would give a parent of one state with children of another. A
    /// read-only transaction at `REPEATABLE READ` never fails to serialize.
    private var beginReadOnly: String {
        let level = configuration.isolation == .readCommitted ? .repeatableRead : configuration.isolation
        return "BEGIN ISOLATION LEVEL \(level.rawValue) READ ONLY"
    }

    // MARK: Storages

    /// The storage for records of type `type`, creating its tables, foreign
    /// keys and indexes (and those of its owners and children) when missing.
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` when the declaration is
    ///   invalid, differs from the schema recorded for it, or a table was
    ///   changed by someone else; ``StorageError/Kind/closed`` after ``close()``.
    public func storage<R: Record>(for type: R.Type) throws -> PostgresRecordStorage<R> {
        let name = R.entity.name
        let tree = EntitySchema.tree(for: R.self)
        let recorded: [String: EntitySchema] = try transaction(.open, entity: name) { connection in
            // One store at a time sets up tables in this schema.
            _ = try connection.rows("SELECT pg_advisory_xact_lock(hashtext($1))", [PostgresValue.text(configuration.schema)])
            try EntitySchema.checkTree(for: R.self) { try recordedSchema($0, connection) }
            var recorded = try recordedSchemas(connection)
            let others = opened.withLock { $0 }
            let known = Array(recorded.values) + others.values.filter { recorded[$0.entity] == nil }
            try ChildHolders.checkOpening(R.self, recorded: known)
            try ChildHolders.checkStoredOnTheirOwn(R.self, recorded: known) { child, holder in
                try holdsRowsOnTheirOwn(child: child, holder: holder, recorded: recorded, connection)
            }
            for schema in tree {
                try setUp(schema, in: tree, recorded: &recorded, connection)
            }
            return recorded
        }
        opened.withLock { opened in
            for schema in tree { opened[schema.entity] = schema }
        }
        handedOutStorage.withLock { $0 = true }
        return PostgresRecordStorage(store: self, table: RecordTable<R>(R.entity, database: self, schemas: recorded))
    }

    /// The holder of `entity` (its table and key column), among the tree being
    /// set up and the recorded schemas.
    func holder(of entity: String, in schemas: [String: EntitySchema]) -> (entity: String, foreignKey: String)? {
        ChildHolders.holder(of: entity, recorded: schemas.values)
    }

    /// Creates `schema`'s table (or checks the one there), records it.
    private func setUp(
        _ schema: EntitySchema, in tree: [EntitySchema], recorded: inout [String: EntitySchema], _ connection: ServerConnection
    ) throws {
        var known = recorded
        for declared in tree { known[declared.entity] = declared }
        let holder = self.holder(of: schema.entity, in: known)
        let table = TableSQL(schema, namespace: configuration.schema, foreignKeyField: holder?.foreignKey)
        let holderReference = holder.flatMap { holder -> (table: String, key: String)? in
            guard let key = known[holder.entity]?.primaryKey else { return nil }
            return (namespace + "." + identifier(holder.entity), identifier(key))
        }
        if recorded[schema.entity] == nil {
            if try tableExists(schema.entity, connection) {
                throw StorageError(
                    .schemaMismatch, .open, entity: schema.entity, path: configuration.description,
                    message: "a table named '\(tableName(schema.entity))' exists in schema '\(configuration.schema)' but this library did not record it; it is left as it is")
            }
            try connection.run(table.createTable(holder: holderReference))
            for index in table.createIndexes() { try connection.run(index) }
            try setMetadata(StoreMetadataKey.schema(schema.entity), schema.encoded(), connection)
            recorded[schema.entity] = schema
            return
        }
        try checkColumns(table, connection)
        if let holderReference, table.foreignKey != nil, try !hasForeignKey(schema.entity, connection) {
            // A child stored on its own before its holder's first storage
            // (empty: checked above) gets its foreign key now.
            if let statement = table.addForeignKey(holder: holderReference) {
                try connection.run(statement)
                if let index = table.createForeignKeyIndex { try connection.run(index) }
            }
        }
    }

    /// Whether the entity `child` holds rows written through its own storage,
    /// with no foreign key to `holder` checking them.
    private func holdsRowsOnTheirOwn(
        child: String, holder: String, recorded: [String: EntitySchema], _ connection: ServerConnection
    ) throws -> Bool {
        guard recorded[child] != nil, try tableExists(child, connection), try !hasForeignKey(child, connection) else {
            return false
        }
        let rows = try connection.once("SELECT EXISTS (SELECT 1 FROM \(namespace).\(identifier(child)))")
        return try firstBool(rows, entity: child)
    }

    func tableExists(_ entity: String, _ connection: ServerConnection) throws -> Bool {
        let rows = try connection.rows(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = $1 AND tablename = $2)",
            [PostgresValue.text(configuration.schema), PostgresValue.text(tableName(entity))])
        return try firstBool(rows, entity: entity)
    }

    private func hasForeignKey(_ entity: String, _ connection: ServerConnection) throws -> Bool {
        let rows = try connection.rows(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint WHERE conrelid = to_regclass($1) AND contype = 'f')",
            [PostgresValue.text(namespace + "." + identifier(entity))])
        return try firstBool(rows, entity: entity)
    }

    /// Checks that the table's columns are the declared ones, in order, with
    /// their types and nullability: a table someone else altered is refused.
    func checkColumns(_ table: TableSQL, _ connection: ServerConnection) throws {
        let rows = try connection.rows(
            """
            SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull FROM pg_catalog.pg_attribute a
            WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
            """, [PostgresValue.text(table.qualified)])
        var found: [(name: String, type: String, notNull: Bool)] = []
        for row in rows {
            var reader = CellReader(row, entity: table.schema.entity)
            found.append((try reader.decode(String.self), try reader.decode(String.self), try reader.decode(Bool.self)))
        }
        let expected = table.schema.fields.map {
            (name: tableName($0.name), type: PostgresValue.catalogueType($0.type), notNull: !$0.optional)
        }
        let matches =
            found.count == expected.count
            && zip(found, expected).allSatisfy { $0.name == $1.name && $0.type == $1.type && $0.notNull == $1.notNull }
        guard matches else {
            let describe = { (columns: [(name: String, type: String, notNull: Bool)]) in
                columns.map { "\($0.name) \($0.type)\($0.notNull ? " not null" : "")" }.joined(separator: ", ")
            }
            throw StorageError(
                .schemaMismatch, .open, entity: table.schema.entity, path: configuration.description,
                message: "the table '\(tableName(table.schema.entity))' was changed outside the library: it has columns (\(describe(found))) where the recorded schema declares (\(describe(expected)))")
        }
    }

    /// The boolean in the first column of the first row (`false` without a row).
    private func firstBool(_ rows: [PostgresRow], entity: String) throws -> Bool {
        guard let row = rows.first else { return false }
        var reader = CellReader(row, entity: entity)
        return try reader.decode(Bool.self)
    }

    // MARK: Metadata

    func recordedSchema(_ entity: String, _ connection: ServerConnection) throws -> EntitySchema? {
        guard let bytes = try metadata(StoreMetadataKey.schema(entity), connection) else { return nil }
        return try EntitySchema.decode(bytes, entity: entity)
    }

    func recordedSchemas(_ connection: ServerConnection) throws -> [String: EntitySchema] {
        let rows = try connection.rows(
            "SELECT key, value FROM \(metadataTable) WHERE starts_with(key, 'schema/') ORDER BY key")
        var schemas: [String: EntitySchema] = [:]
        for row in rows {
            var reader = CellReader(row, entity: "_dao_metadata")
            let key = try reader.decode(String.self)
            let entity = String(key.dropFirst("schema/".count))
            schemas[entity] = try EntitySchema.decode(try reader.decode(Data.self), entity: entity)
        }
        return schemas
    }

    func metadata(_ key: String, _ connection: ServerConnection) throws -> [UInt8]? {
        let rows = try connection.rows("SELECT value FROM \(metadataTable) WHERE key = $1", [PostgresValue.text(key)])
        guard let row = rows.first else { return nil }
        var reader = CellReader(row, entity: "_dao_metadata")
        return [UInt8](try reader.decode(Data.self))
    }

    func setMetadata(_ key: String, _ value: [UInt8], _ connection: ServerConnection) throws {
        _ = try connection.rows(
            "INSERT INTO \(metadataTable) (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            [PostgresValue.text(key), PostgresValue.bytea(value)])
    }

    func removeMetadata(_ key: String, _ connection: ServerConnection) throws {
        _ = try connection.rows("DELETE FROM \(metadataTable) WHERE key = $1", [PostgresValue.text(key)])
    }

    var hasHandedOutStorage: Bool { handedOutStorage.withLock { $0 } }

    /// How many times a transaction was run again after a serialization
    /// failure or a deadlock, since the store was opened.
    public var retryCount: Int { retries.load(ordering: .relaxed) }
}
