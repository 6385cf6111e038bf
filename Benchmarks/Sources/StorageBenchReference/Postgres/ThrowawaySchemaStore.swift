import DAOCore
import Foundation
import PostgresStorage
import StorageBenchKit
import Synchronization

/// `postgres`: the library's PostgreSQL adapter (``PostgresStore``) through
/// the DAO, in a schema of its own on the server (`storage_bench_…`, as
/// `postgres-raw`'s), which it drops, and nothing else, when it is closed or
/// released. Its pool holds ``PostgresServer/poolSize`` connections, as the
/// reference's load pool does; `durability` is the sessions' `synchronous_commit`.
/// Its `bytes_on_disk` is the size of its schema's tables on the server
/// (``PostgresStore/bytesOnServer()``), as `postgres-raw`'s is of its own.
public final class ThrowawaySchemaStore: StoreSizedElsewhere {
    /// The adapter's store.
    public let store: PostgresStore
    private let removed = Atomic<Bool>(false)

    /// Opens a ``PostgresStore`` on `server` in a fresh schema.
    /// - Throws: ``StorageError`` when the server cannot be reached or refuses.
    public init(server: PostgresServer, durability: Durability) throws {
        var configuration = try PostgresConfiguration(url: server.url)
        configuration.schema = PostgresServer.freshSchemaName()
        configuration.poolSize = PostgresServer.poolSize
        configuration.durability = durability
        store = try PostgresStore(configuration)
    }

    public var location: URL { store.location }

    public func anyStorage<R: Record>(for type: R.Type) throws -> AnyStorage<R> {
        try store.anyStorage(for: type)
    }

    public var settingsDescription: String { store.settingsDescription }

    /// The size of the schema's tables with their indexes and TOAST data
    /// (``PostgresStore/bytesOnServer()``).
    public func bytesStoredElsewhere() throws -> Int64 { try store.bytesOnServer() }

    /// Drops the schema with its tables and closes the store.
    public func close() throws {
        guard !removed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        try store.removeSchema()
    }

    deinit {
        do {
            try close()
        } catch {
            FileHandle.standardError.write(Data("storage-bench: postgres: schema \(store.configuration.schema) not dropped: \(error)\n".utf8))
        }
    }
}
