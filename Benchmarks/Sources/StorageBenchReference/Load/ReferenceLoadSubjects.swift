import DAOCore
import DialogGraph
import Foundation
import GRDB
import StorageBenchKit
import Synchronization

extension LoadBackendRegistry {
    /// The references under load: each engine's C API with its own concurrency
    /// (`sqlite-raw`: a read connection per client in WAL beside one writer
    /// connection; `lmdb-raw`: a read-only transaction per call on the
    /// client's thread), and GRDB with a `DatabasePool`.
    public static let reference = LoadBackendRegistry([
        LoadBackend(name: "sqlite-raw") { try SQLiteRawLoadSubject(directory: $0, durability: $1) },
        LoadBackend(name: "grdb", reference: "sqlite-raw") {
            try GRDBLoadSubject(directory: $0, durability: $1, async: DAOLoadSubject.callsAsync)
        },
        LoadBackend(name: "lmdb-raw") { try LMDBRawLoadSubject(directory: $0, durability: $1) },
    ])

    /// The backends `storage-bench load` runs: the library's, each followed by its references.
    public static let withReferences = standard.followed(by: reference)

    /// The backends under load on a PostgreSQL server: `postgres`, the
    /// library's adapter through the DAO's `async` calls
    /// (``ThrowawaySchemaStore``), and `postgres-raw`
    /// (``PostgresRawLoadSubject``), each in a schema of its own on `server`
    /// (a malformed URL's error, which it then fails with at open).
    public static func postgres(_ server: Result<PostgresServer, any Error>) -> LoadBackendRegistry {
        LoadBackendRegistry([
            LoadBackend(name: "postgres", reference: "postgres-raw") { _, durability in
                try DAOLoadSubject(store: ThrowawaySchemaStore(server: server.get(), durability: durability))
            },
            LoadBackend(name: "postgres-raw") { _, durability in
                try PostgresRawLoadSubject(server: server.get(), durability: durability)
            }
        ])
    }

    /// The backends `storage-bench load` offers: ``withReferences``, then the
    /// server backends (``postgres(_:)``) when `DAO_POSTGRES_URL` names a
    /// server (`--postgres-url` sets it).
    public static var withServers: LoadBackendRegistry {
        switch Result(catching: { try PostgresServer.fromEnvironment() }) {
        case .success(nil): return withReferences
        case .success(let found?): return LoadBackendRegistry(withReferences.backends + postgres(.success(found)).backends)
        case .failure(let error): return LoadBackendRegistry(withReferences.backends + postgres(.failure(error)).backends)
        }
    }
}

// MARK: - sqlite-raw

/// `sqlite-raw` under load: one writer connection (``SQLiteRawSubject``, the
/// same statements as `run`'s) that every client's writes take in turn, and a
/// read connection of each client's own, in WAL mode, so that readers never
/// wait for the writer.
final class SQLiteRawLoadSubject: LoadSubject {
    /// The writer connection, used by one client at a time.
    final class Writer: Sendable {
        let connection: Mutex<SQLiteRawSubject>
        init(_ connection: sending SQLiteRawSubject) { self.connection = Mutex(connection) }
    }

    let directory: URL
    let durability: Durability
    let writer: Writer
    let settingsDescription: String

    init(directory: URL, durability: Durability) throws {
        self.directory = directory
        self.durability = durability
        let connection = try SQLiteRawSubject(directory: directory, durability: durability)
        settingsDescription = connection.settingsDescription + " readers=a connection per client"
        writer = Writer(connection)
    }

    var apiDescription: String { "C API, a thread and a read connection per client" }

    func load(_ dialogs: [Dialog]) throws {
        try writer.connection.withLock { try $0.persist(dialogs) }
    }

    func client(index: Int, scanLength: Int, pageSize: Int) throws -> LoadClientHandle {
        .sync(
            Client(
                reader: try SQLiteRawSubject(directory: directory, durability: durability, createSchema: false),
                writer: writer))
    }

    func observe(dialogIds: [Int64], pageSize: Int) throws -> (any LoadObservers)? { nil }

    func close() throws {}

    /// One client: its own read connection (used only on its thread) and the shared writer.
    final class Client: LoadClient, @unchecked Sendable {
        let reader: SQLiteRawSubject
        let writer: Writer

        init(reader: SQLiteRawSubject, writer: Writer) {
            self.reader = reader
            self.writer = writer
        }

        func read(dialogId id: Int64) throws -> Int {
            guard let dialog = try reader.read(dialogId: id) else { return 0 }
            return 1 + dialog.messages.count
        }

        func write(_ dialog: Dialog) throws -> Int {
            try writer.connection.withLock { try $0.update([dialog]) }
            return 1 + dialog.messages.count
        }

        func messages(dialogId id: Int64, limit: Int, newestFirst: Bool) throws -> Int {
            try reader.messages(dialogId: id, limit: limit, newestFirst: newestFirst).count
        }

        func append(_ message: Message) throws -> Int {
            try writer.connection.withLock { try $0.append(message) }
            return 1
        }
    }
}

// MARK: - lmdb-raw

/// `lmdb-raw` under load: one environment; each call a transaction of its own
/// on the client's thread (read-only ones in parallel, write ones one at a
/// time, as LMDB serializes them).
final class LMDBRawLoadSubject: LoadSubject, LoadClient, @unchecked Sendable {
    // @unchecked: LMDBRawSubject keeps only the environment and its database
    // handles, set once; every call begins and ends its own transaction, which
    // LMDB allows from any number of threads at once.
    let subject: LMDBRawSubject

    init(directory: URL, durability: Durability) throws {
        subject = try LMDBRawSubject(directory: directory, durability: durability)
    }

    var settingsDescription: String { subject.settingsDescription + " readers=a read-only transaction per call" }

    var apiDescription: String { "C API, a thread per client" }

    func load(_ dialogs: [Dialog]) throws { try subject.persist(dialogs) }

    func client(index: Int, scanLength: Int, pageSize: Int) throws -> LoadClientHandle { .sync(self) }

    func observe(dialogIds: [Int64], pageSize: Int) throws -> (any LoadObservers)? { nil }

    func close() throws {}

    func read(dialogId id: Int64) throws -> Int {
        guard let dialog = try subject.read(dialogId: id) else { return 0 }
        return 1 + dialog.messages.count
    }

    func write(_ dialog: Dialog) throws -> Int {
        try subject.update([dialog])
        return 1 + dialog.messages.count
    }

    func messages(dialogId id: Int64, limit: Int, newestFirst: Bool) throws -> Int {
        try subject.messages(dialogId: id, limit: limit, newestFirst: newestFirst).count
    }

    func append(_ message: Message) throws -> Int {
        try subject.append(message)
        return 1
    }
}

// MARK: - grdb

/// GRDB under load: a `DatabasePool` (WAL, readers in parallel beside one
/// writer), its query interface as in `run`'s `grdb`, and either its `async`
/// reads and writes from a task per client or its synchronous ones from a
/// thread per client: the same form as the DAO's clients, so the two compare.
final class GRDBLoadSubject: LoadSubject, LoadClient, AsyncLoadClient {
    typealias DialogRow = GRDBSubject.DialogRow
    typealias MessageRow = GRDBSubject.MessageRow

    let pool: DatabasePool
    let callsAsync: Bool
    let settingsDescription: String

    init(directory: URL, durability: Durability, async: Bool) throws {
        // The schema, made by `run`'s subject (its migrator), then a pool on the same file.
        do {
            _ = try GRDBSubject(directory: directory, durability: durability)
        }
        var configuration = Configuration()
        // A writer that finds the database locked waits, as the DAO's store and
        // sqlite-raw do (busy_timeout 5000 ms), instead of failing at once.
        configuration.busyMode = .timeout(5)
        let synchronous = durability == .full ? "FULL" : "OFF"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
        }
        let pool = try DatabasePool(
            path: directory.appendingPathComponent("store.sqlite").path, configuration: configuration)
        self.pool = pool
        callsAsync = async
        let readers = configuration.maximumReaderCount
        settingsDescription = try pool.read { db in
            let names = ["0": "OFF", "1": "NORMAL", "2": "FULL", "3": "EXTRA"]
            let level = try String.fetchOne(db, sql: "PRAGMA synchronous") ?? "?"
            let journalMode = try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "?"
            let foreignKeys = try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") == true ? "ON" : "OFF"
            let version = try String.fetchOne(db, sql: "SELECT sqlite_version()") ?? "?"
            return "journal_mode=\(journalMode) synchronous=\(names[level] ?? level) foreign_keys=\(foreignKeys) "
                + "busy_timeout=5000ms sqlite=\(version) grdb=7.10.0 readers=\(readers) (DatabasePool)"
        }
    }

    var apiDescription: String {
        callsAsync ? "GRDB async calls, a task per client on a thread of its own" : "GRDB synchronous calls, a thread per client"
    }

    func load(_ dialogs: [Dialog]) throws {
        try pool.write { db in try Self.upsert(dialogs, db) }
    }

    func client(index: Int, scanLength: Int, pageSize: Int) throws -> LoadClientHandle {
        callsAsync ? .async(self) : .sync(self)
    }

    func observe(dialogIds: [Int64], pageSize: Int) throws -> (any LoadObservers)? { nil }

    func close() throws { try pool.close() }

    static func upsert(_ dialogs: [Dialog], _ db: Database) throws {
        for dialog in dialogs {
            try DialogRow(dialog).upsert(db)
            for message in dialog.messages { try MessageRow(message).upsert(db) }
        }
    }

    static func dialog(_ id: Int64, _ db: Database) throws -> Int {
        guard
            let info = try DialogRow
                .filter(key: id)
                .including(all: DialogRow.messages.order(MessageRow.Columns.id))
                .asRequest(of: GRDBSubject.DialogInfo.self)
                .fetchOne(db)
        else { return 0 }
        return 1 + Dialog(info).messages.count
    }

    static func messages(_ id: Int64, limit: Int, newestFirst: Bool, _ db: Database) throws -> Int {
        try MessageRow
            .filter(MessageRow.Columns.dialogId == id)
            .order(newestFirst ? MessageRow.Columns.date.desc : MessageRow.Columns.date.asc)
            .limit(limit)
            .fetchAll(db)
            .map(Message.init)
            .count
    }

    // Synchronous.

    func read(dialogId id: Int64) throws -> Int { try pool.read { db in try Self.dialog(id, db) } }

    func write(_ dialog: Dialog) throws -> Int {
        try pool.write { db in try Self.upsert([dialog], db) }
        return 1 + dialog.messages.count
    }

    func messages(dialogId id: Int64, limit: Int, newestFirst: Bool) throws -> Int {
        try pool.read { db in try Self.messages(id, limit: limit, newestFirst: newestFirst, db) }
    }

    func append(_ message: Message) throws -> Int {
        try pool.write { db in try MessageRow(message).insert(db) }
        return 1
    }

    // Asynchronous.

    func read(dialogId id: Int64) async throws -> Int { try await pool.read { db in try Self.dialog(id, db) } }

    func write(_ dialog: Dialog) async throws -> Int {
        try await pool.write { db in try Self.upsert([dialog], db) }
        return 1 + dialog.messages.count
    }

    func messages(dialogId id: Int64, limit: Int, newestFirst: Bool) async throws -> Int {
        try await pool.read { db in try Self.messages(id, limit: limit, newestFirst: newestFirst, db) }
    }

    func append(_ message: Message) async throws -> Int {
        try await pool.write { db in try MessageRow(message).insert(db) }
        return 1
    }
}
