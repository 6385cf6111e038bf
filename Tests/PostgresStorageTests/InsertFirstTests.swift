import DAOCore
import Dispatch
import Foundation
import PostgresNIO
import Synchronization
import TestSupport
import Testing

@testable import PostgresStorage

// A call whose records go in one statement sends a plain INSERT first and
// the upsert when that meets a stored key (InsertFirst). These tests check
// that both ways store what the upsert alone stores: a record written again
// replaces its fields and its children, a new parent takes a child stored
// under another, a table without relations is overwritten, and two clients
// writing the same new keys at once both succeed, one of them whole; and
// that the table's count of recent collisions sends the next calls
// straight to the upsert.

/// Makes the next call of `table` try the plain `INSERT` first.
private func tryInsertNext<R: Record>(_ table: RecordTable<R>) {
    while !table.insertFirst.tries() {}
}

private func note(_ id: Int64, _ folder: Int64, _ body: String = "n") -> OneNote {
    OneNote(id: id, folderId: folder, body: body, weight: id % 2 == 0 ? Double(id) / 4 : nil)
}

@Suite(.enabled(if: Server.url != nil, "DAO_POSTGRES_URL names no server"), .serialized)
struct InsertFirstTests {
    @Test func collisionsSendTheNextCallsToTheUpsert() {
        let policy = InsertFirst()
        #expect(policy.tries())
        policy.collided()
        #expect(policy.callsToSkip == 2)
        #expect(!policy.tries() && !policy.tries())
        #expect(policy.tries())
        // Each collision in a row doubles the calls skipped, up to the most.
        policy.collided()
        #expect(policy.callsToSkip == 4)
        for _ in 0..<8 { policy.collided() }
        #expect(policy.callsToSkip == InsertFirst.mostSkipped)
        for _ in 0..<InsertFirst.mostSkipped { #expect(!policy.tries()) }
        #expect(policy.tries())
        // An INSERT that succeeds starts the count again.
        policy.inserted()
        policy.collided()
        #expect(policy.callsToSkip == 2)
    }

    @Test func aWriteOverStoredKeysReplacesFieldsAndChildren() throws {
        try Server.withStore { database, _ in
            let folders = try database.storage(for: OneFolder.self)
            try folders.persist([OneFolder(id: 1, title: "first", notes: [note(1, 1), note(2, 1)], labels: [])])
            #expect(folders.table.insertFirst.callsToSkip == 0, "the INSERT of a new folder collided")
            // Folder 1 again: the INSERT meets its key, and the upsert replaces its children.
            tryInsertNext(folders.table)
            let again = OneFolder(
                id: 1, title: "again", notes: [note(2, 1, "changed"), note(3, 1)],
                labels: [OneLabel(name: "l", folderId: 1)])
            try folders.persist([again])
            #expect(folders.table.insertFirst.callsToSkip > 0, "the INSERT over a stored folder did not collide")
            #expect(try folders.read(primaryKey: 1) == again)
            #expect(try database.storage(for: OneNote.self).readAll().map(\.id) == [2, 3])

            // A new folder holding a note stored under folder 1: the note's key collides, and the upsert moves it.
            tryInsertNext(folders.table)
            try folders.persist([OneFolder(id: 2, title: "new", notes: [note(3, 2, "moved")], labels: [])])
            #expect(try folders.read(primaryKey: 1)?.notes == [note(2, 1, "changed")])
            #expect(try folders.read(primaryKey: 2)?.notes == [note(3, 2, "moved")])

            // New folders with new notes: the INSERT stores them as the upsert would.
            tryInsertNext(folders.table)
            let fresh = [
                OneFolder(id: 3, title: "third", notes: [note(4, 3)], labels: [OneLabel(name: "m", folderId: 3)]),
                OneFolder(id: 4, title: "empty", notes: [], labels: []),
            ]
            try folders.persist(fresh)
            #expect(folders.table.insertFirst.callsToSkip == 0, "the INSERT of new folders collided")
            #expect(try folders.read(primaryKeys: [3, 4]) == fresh)
        }
    }

    @Test func aWriteOverAStoredKeyOfATableWithoutRelations() throws {
        try Server.withStore { database, _ in
            let gauges = try database.storage(for: GaugeRecord.self)
            let taken = Date(timeIntervalSince1970: 1_700_000_000)
            try gauges.persist([GaugeRecord(id: 1, label: "first", reading: 1, taken: taken, note: "x")])
            tryInsertNext(gauges.table)
            let records = [
                GaugeRecord(id: 2, label: "new", reading: 2, taken: taken, note: nil),
                GaugeRecord(id: 1, label: "again", reading: 3, taken: taken, note: nil),
            ]
            try gauges.persist(records)
            #expect(gauges.table.insertFirst.callsToSkip > 0, "the INSERT over a stored gauge did not collide")
            #expect(try gauges.read(primaryKeys: [1, 2]) == [records[1], records[0]])
        }
    }

    /// Two clients write the same new folder with the same notes at once,
    /// each trying the INSERT first: one INSERT waits for the other's and
    /// fails when it commits, and its upsert then writes over it. Both
    /// succeed and the folder is one client's whole.
    @Test("two clients writing the same new keys at once", arguments: [
        PostgresConfiguration.IsolationLevel.readCommitted, .serializable,
    ])
    func concurrentInsertsOfOneKey(isolation: PostgresConfiguration.IsolationLevel) throws {
        try Server.withStore({ $0.isolation = isolation; $0.poolSize = 2 }) { database, _ in
            let writers = [try database.storage(for: OneFolder.self), try database.storage(for: OneFolder.self)]
            let failures = Mutex<[String]>([])
            for round in Int64(1)...20 {
                let written = ["a", "b"].map { body in
                    OneFolder(
                        id: round, title: body, notes: [note(round * 10 + 1, round, body), note(round * 10 + 2, round, body)],
                        labels: [OneLabel(name: "label \(round)", folderId: round)])
                }
                for writer in writers { tryInsertNext(writer.table) }
                DispatchQueue.concurrentPerform(iterations: 2) { index in
                    do {
                        try writers[index].persist([written[index]])
                    } catch {
                        failures.withLock { $0.append("round \(round): \(error)") }
                    }
                }
                // The later INSERT met the earlier one's key, whichever committed first.
                #expect(writers.contains { $0.table.insertFirst.callsToSkip > 0 }, "round \(round): no INSERT collided")
                let stored = try writers[0].read(primaryKey: round)
                #expect(stored == written[0] || stored == written[1], "round \(round): \(String(describing: stored))")
            }
            #expect(failures.withLock { $0 } == [])
        }
    }
}
