import DAOCore
import DAOMacros
import Foundation
import PostgresStorage
import TestSupport
import Testing

// Observation of commits made by another store on the same schema (another
// process, as far as the server can tell: its own connections and its own
// broadcaster), through pg_notify and LISTEN.

@StoredRecord("signals")
struct SignalRecord: Equatable, Plain {
    var id: Int64
    var topic: String
    var level: Int64

    var uniqueId: Int64 { id }
}

private struct SameSignal: Translator {
    func record(from plain: SignalRecord) -> SignalRecord { plain }
    func plain(from record: SignalRecord) -> SignalRecord { record }
}

@Suite(.enabled(if: Server.url != nil, "DAO_POSTGRES_URL names no server"), .serialized)
struct NotifyTests {
    /// Two stores on one schema, dropped afterwards.
    func withTwoStores(
        _ configure: (inout PostgresConfiguration) -> Void = { _ in },
        _ body: (PostgresStore, PostgresStore) async throws -> Void
    ) async throws {
        let schema = "dao_pgtest_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var configuration = try Server.configuration(schema)
        configure(&configuration)
        let first = try PostgresStore(configuration)
        let second = try PostgresStore(configuration)
        do {
            try await body(first, second)
        } catch {
            try? first.close()
            try? second.close()
            try? PostgresStore(try Server.configuration(schema)).removeSchema()
            throw error
        }
        try first.close()
        try second.close()
        try PostgresStore(try Server.configuration(schema)).removeSchema()
    }

    @Test("an observer that polls hears the commits of another store on the schema")
    func anotherStoreCommits() async throws {
        try await withTwoStores { first, second in
            let watched = DAO(storage: try first.storage(for: SignalRecord.self), translator: SameSignal())
            let writer = DAO(storage: try second.storage(for: SignalRecord.self), translator: SameSignal())
            let iterator = watched.observe(
                where: #Predicate { $0.topic == "alarm" }, sortedBy: [SortDescriptor(\.id)],
                pollInterval: .milliseconds(20)
            ).makeAsyncIterator()
            #expect(try await nextSnapshot(iterator, within: .seconds(20))?.results == [])
            // The listener's connection, opened as the observer began, listens by now.
            try await Task.sleep(for: .seconds(1))

            // A write of the other store, then an erasure: each reaches the observer.
            try await writer.persist([
                SignalRecord(id: 1, topic: "alarm", level: 3), SignalRecord(id: 2, topic: "calm", level: 0),
            ])
            let inserted = try await nextSnapshot(iterator, within: .seconds(20))
            #expect(inserted?.results == [SignalRecord(id: 1, topic: "alarm", level: 3)])
            try await writer.erase(byPrimaryKey: 1)
            let erased = try await nextSnapshot(iterator, within: .seconds(20))
            #expect(erased?.results == [])
        }
    }

    @Test("without notifications, another store's commits are not heard, and the store's own still are")
    func notificationsOff() async throws {
        try await withTwoStores({ $0.notifiesCommits = false }) { first, second in
            let watched = DAO(storage: try first.storage(for: SignalRecord.self), translator: SameSignal())
            let writer = DAO(storage: try second.storage(for: SignalRecord.self), translator: SameSignal())
            let iterator = watched.observe(pollInterval: .milliseconds(20)).makeAsyncIterator()
            #expect(try await nextSnapshot(iterator, within: .seconds(20))?.results == [])
            // The listener's connection, opened as the observer began, listens by now.
            try await Task.sleep(for: .seconds(1))
            // Had the other store's commit been heard, it would come first, alone.
            try await writer.persist([SignalRecord(id: 1, topic: "alarm", level: 3)])
            try await Task.sleep(for: .milliseconds(500))
            try await watched.persist([SignalRecord(id: 2, topic: "calm", level: 0)])
            #expect(try await nextSnapshot(iterator, within: .seconds(20))?.results.map(\.id) == [1, 2])
        }
    }

    /// The server restarts under an observer: its listener's connection goes
    /// with the server, and the listener connects and listens again, so a
    /// commit made well after the restart still reaches the observer.
    @Test("after a server restart the listener listens again")
    func listensAfterRestart() async throws {
        let cluster = try OwnCluster()
        var configuration = try PostgresConfiguration(url: cluster.url)
        configuration.schema = "dao_notify_restart"
        configuration.poolSize = 2
        let first = try PostgresStore(configuration)
        let second = try PostgresStore(configuration)
        defer {
            try? first.close()
            try? second.close()
        }
        let watched = DAO(storage: try first.storage(for: SignalRecord.self), translator: SameSignal())
        let writer = DAO(storage: try second.storage(for: SignalRecord.self), translator: SameSignal())
        let iterator = watched.observe(sortedBy: [SortDescriptor(\.id)], pollInterval: .milliseconds(20))
            .makeAsyncIterator()
        #expect(try await nextSnapshot(iterator, within: .seconds(20))?.results == [])
        try await Task.sleep(for: .seconds(1))
        try await writer.persist([SignalRecord(id: 1, topic: "alarm", level: 1)])
        #expect(try await nextSnapshot(iterator, within: .seconds(20))?.results.map(\.id) == [1])

        try cluster.control(["restart", "-m", "immediate"])
        // Polls meanwhile find the listener's connection closed and open another.
        try await Task.sleep(for: .seconds(2))
        try await writer.persist([SignalRecord(id: 2, topic: "alarm", level: 2)])
        #expect(try await nextSnapshot(iterator, within: .seconds(20))?.results.map(\.id) == [1, 2])
        // Long after the listener listens again: only a notification tells this one.
        try await Task.sleep(for: .seconds(1))
        try await writer.persist([SignalRecord(id: 3, topic: "alarm", level: 3)])
        #expect(try await nextSnapshot(iterator, within: .seconds(20))?.results.map(\.id) == [1, 2, 3])
    }
}
