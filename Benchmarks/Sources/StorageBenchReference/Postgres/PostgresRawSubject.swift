import DAOCore
import DialogGraph
import Foundation
import Logging
import NIOCore
import PostgresNIO
import StorageBenchKit
import Synchronization

/// `postgres-raw`: the workload on postgres-nio with SQL written by hand, as
/// an expert would, and no DAO: the limit a Swift program reaches on the
/// same server through the same driver.
///
/// Each subject creates a schema of its own (`storage_bench_…`, first on its
/// connection's search path) with two tables of typed columns (`dialogs`,
/// and `messages` with a foreign key to its dialog, `ON DELETE CASCADE`, and
/// an index on `(dialog_id, date)`), and drops that schema, and nothing else,
/// when it is released. Every statement is a server-side prepared statement
/// (``PostgresRawSQL``), parsed once per connection; every operation is one
/// statement, so one transaction and one round trip: a dialog and its
/// messages are written by one statement with one array per column
/// (`persist`, `persist-single`, and `update` as an upsert), read by one join
/// (`read-by-id`); `erase-by-id` deletes the dialogs by `= ANY` and lets the
/// cascade take their messages; `erase-all` deletes every message, then every
/// dialog (``PostgresRawSQL/EraseAll`` says why not `TRUNCATE`). The
/// durability is the session's `synchronous_commit`: `on` for
/// ``Durability/full``, `off` for ``Durability/none``.
///
/// The harness's calls are synchronous: each runs as a task on the
/// connection's event loop (``EventLoopExecutor``), which the calling thread
/// waits for, so that a round trip costs no hop between threads but the
/// caller's own wake-up.
public final class PostgresRawSubject: WorkloadSubject, Sendable {
    /// The server.
    public let server: PostgresServer
    /// This subject's own schema.
    public let schema: String
    let connection: PostgresConnection
    let bridge: BlockingBridge
    public let settingsDescription: String
    private var logger: Logger { PostgresServer.logger }

    /// Connects to `server`, creates a schema of its own with the tables, and
    /// sets the session's `synchronous_commit` for `durability`.
    ///
    /// - Parameter pool: what the settings line says of the connections (this
    ///   subject's one, or a load subject's pool).
    /// - Throws: ``ReferenceError`` when the server cannot be reached or refuses.
    public init(server: PostgresServer, durability: Durability, pool: String = "1 connection") throws {
        self.server = server
        let schema = PostgresServer.freshSchemaName()
        self.schema = schema
        let loop = PostgresConnection.defaultEventLoopGroup.next()
        let bridge = BlockingBridge(executor: EventLoopExecutor(loop))
        self.bridge = bridge
        let configuration = server.connectionConfiguration(schema: schema, durability: durability)
        let logger = PostgresServer.logger
        let connection: PostgresConnection
        do {
            connection = try bridge.run {
                try await PostgresConnection.connect(on: loop, configuration: configuration, id: 1, logger: logger)
            }
        } catch {
            throw ReferenceError.postgres("connect to \(server.address)", error)
        }
        self.connection = connection
        do {
            try bridge.run {
                try await connection.withTransaction(logger: logger) { connection in
                    try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"), logger: logger)
                    for sql in PostgresRawSQL.createTables {
                        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
                    }
                }
            }
        } catch {
            // The transaction rolled back: there is nothing of this subject's
            // on the server. The creation's error is the one to report.
            Self.close(connection, bridge)
            throw ReferenceError.postgres("create the schema \(schema)", error)
        }
        do {
            settingsDescription = try bridge.run {
                try await PostgresServer.settings(connection, pool: pool, logger: logger)
            }
        } catch {
            // The schema is this subject's own, created above.
            let failure = ReferenceError.postgres("read the settings", error)
            do {
                try bridge.run {
                    try await connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(schema) CASCADE"), logger: logger)
                }
            } catch {
                FileHandle.standardError.write(
                    Data("storage-bench: postgres-raw could not drop its schema \(schema): \(error)\n".utf8))
            }
            Self.close(connection, bridge)
            throw failure
        }
    }

    /// Closes `connection` after a failed init, saying so when even that fails.
    private static func close(_ connection: PostgresConnection, _ bridge: BlockingBridge) {
        do {
            try bridge.run { try await connection.close() }
        } catch {
            FileHandle.standardError.write(Data("storage-bench: postgres-raw could not close a connection: \(error)\n".utf8))
        }
    }

    deinit {
        do {
            try drop()
        } catch {
            FileHandle.standardError.write(Data("storage-bench: postgres-raw: \(error)\n".utf8))
        }
    }

    /// Whether ``drop()`` ran.
    private let dropped = Mutex(false)

    /// Drops this subject's schema (created by its init: nothing else is
    /// dropped) and closes the connection; later calls do nothing. Released
    /// without it, the subject drops its schema then.
    /// - Throws: ``ReferenceError`` when the server fails.
    public func drop() throws {
        guard dropped.withLock({ done in defer { done = true }; return !done }) else { return }
        let schema = schema
        let connection = connection
        let logger = logger
        do {
            try bridge.run {
                try await connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(schema) CASCADE"), logger: logger)
                try await connection.close()
            }
        } catch {
            throw ReferenceError.postgres("drop the schema \(schema)", error)
        }
    }

    // MARK: The workload

    public func persist(_ dialogs: [Dialog]) throws {
        try write("persist", PostgresRawSQL.InsertGraph(dialogs: dialogs))
    }

    public func update(_ dialogs: [Dialog]) throws {
        try write("update", PostgresRawSQL.UpsertGraph(dialogs: dialogs))
    }

    public func persistSingle(_ dialog: Dialog) throws {
        try write("persist-single", PostgresRawSQL.InsertGraph(dialogs: [dialog]))
    }

    public func readAll() throws -> [Dialog] {
        let connection = connection
        let logger = logger
        return try call("read-all") {
            var result: [Dialog] = []
            var messages: [Message] = []
            var current: (id: Int64, pinned: Bool)?
            for try await r in try await connection.execute(PostgresRawSQL.ReadAll(), logger: logger) {
                if current?.id != r.0 {
                    if let current {
                        result.append(Dialog(uniqueId: current.id, isPinned: current.pinned, messages: messages))
                        messages.removeAll(keepingCapacity: true)
                    }
                    current = (r.0, r.1)
                }
                if let id = r.2, let date = r.3, let text = r.4, let sender = r.5, let receiver = r.6, let type = r.7,
                    let incoming = r.8, let read = r.9
                {
                    messages.append(
                        Message(
                            uniqueId: id, dialogId: r.0, date: Date(timeIntervalSince1970: date), text: text,
                            senderId: sender, receiverId: receiver, type: Int(type), isIncoming: incoming,
                            isRead: read))
                }
            }
            if let current { result.append(Dialog(uniqueId: current.id, isPinned: current.pinned, messages: messages)) }
            return result
        }
    }

    public func read(dialogId id: Int64) throws -> Dialog? {
        let connection = connection
        let logger = logger
        return try call("read-by-id") {
            var rows: [PostgresRawSQL.ReadDialog.Row] = []
            for try await row in try await connection.execute(PostgresRawSQL.ReadDialog(id: id), logger: logger) {
                rows.append(row)
            }
            return Dialog.postgresRaw(id: id, rows: rows)
        }
    }

    public func unreadMessages(dialogId id: Int64) throws -> [Message] {
        let connection = connection
        let logger = logger
        return try call("query") {
            var result: [Message] = []
            for try await message in try await connection.execute(PostgresRawSQL.Unread(id: id), logger: logger) {
                result.append(message)
            }
            return result
        }
    }

    public func erase(dialogIds ids: [Int64]) throws -> Int {
        let connection = connection
        let logger = logger
        return try call("erase-by-id") {
            for try await count in try await connection.execute(PostgresRawSQL.EraseDialogs(ids: ids), logger: logger) {
                return Int(count)
            }
            throw ReferenceError(engine: "postgres", operation: "erase-by-id", code: 0, message: "no count")
        }
    }

    public func eraseAll() throws -> Int {
        let connection = connection
        let logger = logger
        return try call("erase-all") {
            for try await count in try await connection.execute(PostgresRawSQL.EraseAll(), logger: logger) {
                return Int(count)
            }
            throw ReferenceError(engine: "postgres", operation: "erase-all", code: 0, message: "no count")
        }
    }

    // MARK: Under load (the load command's initial dialogs)

    /// Writes `dialogs` (new or not) with their messages, in one statement.
    /// - Throws: ``ReferenceError`` when the server fails.
    public func upsert(_ dialogs: [Dialog]) throws {
        try write("load", PostgresRawSQL.UpsertGraph(dialogs: dialogs))
    }

    // MARK: The checks

    public func read(dialogIds ids: [Int64]) throws -> [Dialog] {
        try ids.compactMap { try read(dialogId: $0) }
    }

    public func dialogCount() throws -> Int { try count("SELECT count(*) FROM dialogs") }

    public func messageCount() throws -> Int { try count("SELECT count(*) FROM messages") }

    public func unreadMessageCount() throws -> Int { try count("SELECT count(*) FROM messages WHERE NOT is_read") }

    /// Whether the database has a schema named `name` (for the tests: a
    /// released subject's schema is gone).
    /// - Throws: ``ReferenceError`` when the server fails.
    public func schemaExists(_ name: String) throws -> Bool {
        let connection = connection
        return try call("look up a schema") {
            let rows = try await connection.query(
                "SELECT count(*) FROM pg_namespace WHERE nspname = \(name)", logger: PostgresServer.logger)
            for try await count in rows.decode(Int64.self) { return count > 0 }
            return false
        }
    }

    /// The size of this subject's tables with their indexes and TOAST data,
    /// as the server counts them (`pg_total_relation_size`).
    public func bytesStoredElsewhere() throws -> Int64? {
        let connection = connection
        return try call("table sizes") {
            let rows = try await connection.query(
                """
                SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
                JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'
                """, logger: PostgresServer.logger)
            for try await bytes in rows.decode(Int64.self) { return bytes }
            return nil
        }
    }

    // MARK: Helpers

    /// `body` in a task on the connection's event loop, waited for; its error as a ``ReferenceError`` of `operation`.
    private func call<T: Sendable>(_ operation: String, _ body: @escaping @Sendable () async throws -> T) throws -> T {
        do {
            return try bridge.run(body)
        } catch {
            throw ReferenceError.postgres(operation, error)
        }
    }

    /// Runs a statement that returns no row. (Its rows are awaited to their
    /// end: postgres-nio 1.33's form that returns the command tag can ask for
    /// the tag before the statement has completed, and traps.)
    private func write<S: PostgresPreparedStatement>(_ operation: String, _ statement: S) throws where S.Row == () {
        let connection = connection
        let logger = logger
        try call(operation) {
            for try await _ in try await connection.execute(statement, logger: logger) {}
        }
    }

    private func count(_ sql: String) throws -> Int {
        let connection = connection
        return try call("count") { try await Self.count(sql, connection) }
    }

    private static func count(_ sql: String, _ connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: PostgresServer.logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        throw ReferenceError(engine: "postgres", operation: "count", code: 0, message: "no row", sql: sql)
    }
}
