import DAOCore
import DialogGraph
import Foundation
import PostgresNIO
import StorageBenchKit

/// `postgres-raw` under load: postgres-nio's `PostgresClient`, a pool of up
/// to ``PostgresServer/poolSize`` connections (each opened on first need),
/// awaited from a task per client; every call leases a connection for one
/// prepared statement (``PostgresRawSQL``): one round trip, one transaction.
/// The schema, and the initial dialogs, come from a ``PostgresRawSubject``,
/// whose release drops that schema.
final class PostgresRawLoadSubject: LoadSubject {
    let setup: PostgresRawSubject
    let pool: PostgresClient
    let running: Task<Void, Never>

    init(server: PostgresServer, durability: Durability) throws {
        let size = PostgresServer.poolSize
        setup = try PostgresRawSubject(
            server: server, durability: durability, pool: "a PostgresClient of up to \(size) connections")
        let pool = PostgresClient(
            configuration: server.clientConfiguration(schema: setup.schema, durability: durability, poolSize: size),
            backgroundLogger: PostgresServer.logger)
        self.pool = pool
        running = Task { await pool.run() }
    }

    var settingsDescription: String { setup.settingsDescription }

    var apiDescription: String { "postgres-nio PostgresClient, a task per client on a thread of its own" }

    func load(_ dialogs: [Dialog]) throws { try setup.upsert(dialogs) }

    func client(index: Int, scanLength: Int, pageSize: Int) throws -> LoadClientHandle { .async(Client(pool: pool)) }

    func observe(dialogIds: [Int64], pageSize: Int) throws -> (any LoadObservers)? { nil }

    /// Stops the pool (closing its connections), then drops the schema.
    func close() throws {
        let running = running
        try setup.bridge.run {
            running.cancel()
            await running.value
        }
        try setup.drop()
    }

    /// One client: the pool's calls.
    struct Client: AsyncLoadClient {
        let pool: PostgresClient

        func read(dialogId id: Int64) async throws -> Int {
            var rows: [PostgresRawSQL.ReadDialog.Row] = []
            for try await row in try await pool.execute(PostgresRawSQL.ReadDialog(id: id)) { rows.append(row) }
            guard let dialog = Dialog.postgresRaw(id: id, rows: rows) else { return 0 }
            return 1 + dialog.messages.count
        }

        func write(_ dialog: Dialog) async throws -> Int {
            for try await _ in try await pool.execute(PostgresRawSQL.UpsertGraph(dialogs: [dialog])) {}
            return 1 + dialog.messages.count
        }

        func messages(dialogId id: Int64, limit: Int, newestFirst: Bool) async throws -> Int {
            var result: [Message] = []
            result.reserveCapacity(limit)
            if newestFirst {
                for try await message in try await pool.execute(PostgresRawSQL.Newest(id: id, limit: Int64(limit))) {
                    result.append(message)
                }
            } else {
                for try await message in try await pool.execute(PostgresRawSQL.Oldest(id: id, limit: Int64(limit))) {
                    result.append(message)
                }
            }
            return result.count
        }

        func append(_ message: Message) async throws -> Int {
            for try await _ in try await pool.execute(PostgresRawSQL.AppendMessage(message: message)) {}
            return 1
        }
    }
}
