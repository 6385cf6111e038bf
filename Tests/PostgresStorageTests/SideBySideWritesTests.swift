import DAOCore
import DAOMacros
import Dispatch
import Foundation
import NIOPosix
import PostgresNIO
import Testing

@testable import PostgresStorage

// The server runs write transactions side by side, and so do the store's
// awaited writes: a write waiting for a row lock that another client holds
// does not hold back an awaited write of another row (on one writer thread
// it would, until the lock was released).

@StoredRecord("sbs_counters")
struct SbsCounter: Equatable {
    var id: Int64
    var value: Int64
}

@Suite(.enabled(if: Server.url != nil, "DAO_POSTGRES_URL names no server"), .serialized)
struct SideBySideWritesTests {
    /// `body`, which blocks, run on a thread outside Swift's cooperative pool.
    func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }

    @Test func anAwaitedWriteIsNotHeldBackByOneWaitingForALock() async throws {
        let schema = "dao_pgtest_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let database = try PostgresStore(try Server.configuration(schema))
        defer {
            do {
                try PostgresStore(try Server.configuration(schema)).removeSchema()
            } catch {
                print("schema \(schema) was not dropped: \(error)")
            }
        }
        #expect(database.executor.writerCount == 2)
        let counters = try database.storage(for: SbsCounter.self)
        try await counters.persist([SbsCounter(id: 1, value: 0), SbsCounter(id: 2, value: 0)])

        let configuration = try Server.configuration("public")
        let other = try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(),
            configuration: PostgresConnection.Configuration(
                host: configuration.host, port: configuration.port, username: configuration.user,
                password: configuration.password, database: configuration.database, tls: .disable),
            id: 2, logger: Server.logger)
        func run(_ sql: String) async throws {
            _ = try await other.query(PostgresQuery(unsafeSQL: sql), logger: Server.logger)
        }
        try await run("BEGIN")
        try await run("UPDATE \"\(schema)\".\"sbs_counters\" SET \"value\" = 10 WHERE \"id\" = 1")
        // An awaited write of counter 1 waits for the other client's row lock.
        let blocked = Task { try await counters.persist(SbsCounter(id: 1, value: 1)) }
        let waiting = try await offPool { try Server.waitsForLock(schema, "sbs_counters") }
        #expect(waiting, "the write of counter 1 never waited for the row lock")
        // An awaited write of counter 2 goes through beside it, or is found
        // held back after 60 s.
        let heldBack = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await counters.persist(SbsCounter(id: 2, value: 2))
                return false
            }
            group.addTask {
                try await Task.sleep(for: .seconds(60))
                return true
            }
            let first = try await group.next() ?? true
            // Held back, it waits for the lock too: released before the
            // group waits for its tasks.
            if first { try await run("COMMIT") }
            group.cancelAll()
            return first
        }
        #expect(!heldBack, "the write of counter 2 waited for the write of counter 1")
        if !heldBack { try await run("COMMIT") }
        try await blocked.value
        try await other.close()
        if !heldBack {
            #expect(try await counters.readAll() == [SbsCounter(id: 1, value: 1), SbsCounter(id: 2, value: 2)])
        }
    }
}
