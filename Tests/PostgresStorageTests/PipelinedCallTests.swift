import DAOCore
import Foundation
import PostgresNIO
import Testing

@testable import PostgresStorage

// The pipelined call (ServerConnection): a transaction's statements are
// written without waiting for one another, `BEGIN` with the first and
// `COMMIT` after the last, and their answers collected once. These tests
// drive it directly with statements whose outcome is known in advance: the
// statement that fails is the error thrown (not the "transaction is
// aborted" of those after it, nor the silent rollback a `COMMIT` of an
// aborted transaction answers with), nothing of the call is kept, and the
// pool's one connection serves the next call outside any transaction.

/// What a call's body throws on its own.
private struct BodyFailure: Error {}

@Suite(.enabled(if: Server.url != nil, "DAO_POSTGRES_URL names no server"), .serialized)
struct PipelinedCallTests {
    /// Runs `body` with a store of one pooled connection holding gauge 1, and
    /// the insert of a gauge by its id.
    private func withOneConnection(_ body: (PostgresStore, PostgresRecordStorage<GaugeRecord>, String) throws -> Void) throws {
        try Server.withStore({ $0.poolSize = 1 }) { database, schema in
            let gauges = try database.storage(for: GaugeRecord.self)
            try gauges.persist(GaugeRecord(id: 1, label: "kept", reading: 1, taken: Date(timeIntervalSinceReferenceDate: 0), note: nil))
            let insert = "INSERT INTO \"\(schema)\".gauges (id, label, reading, taken) VALUES ($1, 'piped', 0, 0)"
            try body(database, gauges, insert)
            // Closing ends whatever a connection left open, which would
            // otherwise hold the locks that dropping the schema waits for.
            try database.close()
        }
    }

    /// The ids stored, and a check that the pooled connection is outside a
    /// transaction: left in an aborted one, it fails every statement
    /// (SQLSTATE 25P02); left in one that wrote, a read there has a
    /// transaction id, which a read on its own never has.
    private func idsAfterwards(_ database: PostgresStore, _ gauges: PostgresRecordStorage<GaugeRecord>) throws -> [Int64] {
        let outside = try database.transaction(.read, entity: nil, oneStatement: true) { connection in
            #expect(!connection.inTransaction)
            let rows = try connection.rows("SELECT pg_current_xact_id_if_assigned() IS NULL")
            var reader = CellReader(try #require(rows.first), entity: "gauges")
            return try reader.decode(Bool.self)
        }
        #expect(outside, "the call's transaction is still open on the pooled connection")
        return try gauges.readAll().map(\.id)
    }

    @Test(arguments: [0, 1, 2])
    func theFailingStatementIsTheErrorAndNothingIsKept(failing position: Int) throws {
        try withOneConnection { database, gauges, insert in
            var ids: [Int64] = [2, 3, 4]
            ids[position] = 1  // the key gauge 1 holds: a unique violation
            do {
                try database.transaction(.persist, entity: "gauges") { connection in
                    for id in ids { try connection.send(insert, [PostgresValue.int8(id)]) }
                    #expect(connection.inTransaction)
                }
                Issue.record("a call whose statement \(position) failed was committed")
            } catch let error as StorageError {
                #expect(error.kind == .constraint, "\(error)")
                #expect(error.context == "SQLSTATE 23505", "\(error)")
            }
            let afterFailure = try idsAfterwards(database, gauges)
            #expect(afterFailure == [1])
            // The connection commits the next call.
            try database.transaction(.persist, entity: "gauges") { connection in
                try connection.send(insert, [PostgresValue.int8(5)])
                try connection.send(insert, [PostgresValue.int8(6)])
            }
            let afterCommit = try idsAfterwards(database, gauges)
            #expect(afterCommit == [1, 5, 6])
        }
    }

    @Test func aBodyFailingAfterSendingRollsBackWhatItSent() throws {
        try withOneConnection { database, gauges, insert in
            #expect(throws: BodyFailure.self) {
                try database.transaction(.persist, entity: "gauges") { connection in
                    try connection.send(insert, [PostgresValue.int8(7)])
                    try connection.send(insert, [PostgresValue.int8(8)])
                    throw BodyFailure()
                }
            }
            let ids = try idsAfterwards(database, gauges)
            #expect(ids == [1])
        }
    }

    @Test func aStatementAloneThatFailsIsTheErrorAndLeavesNoTransaction() throws {
        try withOneConnection { database, gauges, insert in
            do {
                try database.transaction(.persist, entity: "gauges", oneStatement: true) { connection in
                    try connection.sendAlone(insert, [PostgresValue.int8(1)])
                    #expect(!connection.inTransaction)
                    _ = try connection.collect()
                }
                Issue.record("a duplicate key was written")
            } catch let error as StorageError {
                #expect(error.context == "SQLSTATE 23505", "\(error)")
            }
            let ids = try idsAfterwards(database, gauges)
            #expect(ids == [1])
        }
    }
}
