import DAOCore
import DAOMacros
import Dispatch
import Foundation
import PostgresNIO
import Synchronization
import TestSupport
import Testing

@testable import PostgresStorage

// A record whose relations' children hold none is read by key, and written
// in a call of one batch, by one statement (TreeSQL): no BEGIN and COMMIT,
// one wait for the server. These tests check what that statement keeps of
// the adapter's promises: the children come in key order, of every
// relation, a parent without children has none; a write replaces the
// children, moves them between parents and writes nothing when refused; a
// read by key sees what another client committed; a conflicting write at
// REPEATABLE READ or SERIALIZABLE is run again whole; and another store's
// observer hears a write of one record.

@StoredRecord("one_folders")
struct OneFolder: Equatable, Plain {
    var id: Int64
    var title: String
    @Children(foreignKey: "folderId") var notes: [OneNote]
    @Children(foreignKey: "folderId") var labels: [OneLabel]

    var uniqueId: Int64 { id }
}

@StoredRecord("one_notes", ownedBy: OneFolder.self)
struct OneNote: Equatable {
    var id: Int64
    var folderId: Int64
    var body: String
    var weight: Double?
}

@StoredRecord("one_labels", primaryKey: "name", ownedBy: OneFolder.self)
struct OneLabel: Equatable {
    var name: String
    var folderId: Int64
}

private struct SameFolder: Translator {
    func record(from plain: OneFolder) -> OneFolder { plain }
    func plain(from record: OneFolder) -> OneFolder { record }
}

private func note(_ id: Int64, _ folder: Int64, _ body: String = "n") -> OneNote {
    OneNote(id: id, folderId: folder, body: body, weight: id % 2 == 0 ? Double(id) / 4 : nil)
}

@Suite(.enabled(if: Server.url != nil, "DAO_POSTGRES_URL names no server"), .serialized)
struct OneStatementTreeTests {
    @Test func onlyLeafChildrenMakeOneStatement() throws {
        try Server.withStore { database, _ in
            let folders = try database.storage(for: OneFolder.self)
            #expect(folders.table.tree != nil)
            // Boxes hold items: their reads and writes stay a transaction of several statements.
            let shelves = try database.storage(for: ShelfRecord.self)
            #expect(shelves.table.tree == nil)
            let notes = try database.storage(for: OneNote.self)
            #expect(notes.table.tree == nil)
        }
    }

    @Test func readsEveryRelationInKeyOrderAndWritesOutsideATransaction() throws {
        try Server.withStore { database, _ in
            let folders = try database.storage(for: OneFolder.self)
            let first = OneFolder(
                id: 1, title: "first", notes: [note(3, 1), note(1, 1), note(2, 1, "Zo\u{EB}")],
                labels: [OneLabel(name: "b", folderId: 1), OneLabel(name: "a\u{0}", folderId: 1)])
            let tree = try #require(folders.table.tree)
            try database.transaction(.persist, entity: "one_folders") { connection in
                try folders.table.sendTree([first], tree, connection)
                #expect(!connection.inTransaction, "the write of one batch began a transaction")
            }
            try folders.persist([
                OneFolder(id: 2, title: "empty", notes: [], labels: []),
                OneFolder(id: 3, title: "third", notes: [note(7, 3)], labels: [OneLabel(name: "c", folderId: 3)]),
            ])
            var sorted = first
            sorted.notes = [note(1, 1), note(2, 1, "Zo\u{EB}"), note(3, 1)]
            sorted.labels = [OneLabel(name: "a\u{0}", folderId: 1), OneLabel(name: "b", folderId: 1)]
            #expect(try folders.read(primaryKey: 1) == sorted)
            #expect(try folders.read(primaryKey: 2) == OneFolder(id: 2, title: "empty", notes: [], labels: []))
            #expect(try folders.read(primaryKey: 99) == nil)
            let some = try folders.read(primaryKeys: [3, 99, 1, 2])
            #expect(some.map(\.id) == [3, 1, 2])
            #expect(some[1] == sorted)
            #expect(some[0].notes == [note(7, 3)])
            #expect(some[2].notes.isEmpty && some[2].labels.isEmpty)

            // Folder 1 keeps note 2, gains note 4, loses notes 1 and 3 (3 moves to folder 3) and its labels.
            try folders.persist([
                OneFolder(id: 1, title: "first again", notes: [note(4, 1), note(2, 1, "kept")], labels: []),
                OneFolder(id: 3, title: "third", notes: [note(3, 3, "moved"), note(7, 3)], labels: []),
            ])
            let after = try folders.read(primaryKeys: [1, 3])
            #expect(after.first == OneFolder(id: 1, title: "first again", notes: [note(2, 1, "kept"), note(4, 1)], labels: []))
            #expect(after.last?.notes == [note(3, 3, "moved"), note(7, 3)])
            #expect(after.last?.labels == [])
            let notes = try database.storage(for: OneNote.self)
            #expect(try notes.readAll().map(\.id) == [2, 3, 4, 7])
            #expect(try database.storage(for: OneLabel.self).count(where: nil) == 0)
        }
    }

    @Test func aRefusedWriteWritesNothing() throws {
        try Server.withStore { database, schema in
            let folders = try database.storage(for: OneFolder.self)
            try folders.persist([OneFolder(id: 1, title: "kept", notes: [note(1, 1)], labels: [])])
            // A note held by folder 2 that names folder 1.
            #expect(throws: StorageError.self) {
                try folders.persist([
                    OneFolder(id: 1, title: "changed", notes: [], labels: []),
                    OneFolder(id: 2, title: "new", notes: [note(5, 1)], labels: []),
                ])
            }
            #expect(try folders.readAll() == [OneFolder(id: 1, title: "kept", notes: [note(1, 1)], labels: [])])
            // Refused by the server in the middle of the statement: the notes' check fails after the folder's upsert.
            try Server.raw("ALTER TABLE \"\(schema)\".\"one_notes\" ADD CONSTRAINT no_bad CHECK (\"body\" <> 'bad')")
            do {
                try folders.persist([OneFolder(id: 1, title: "changed", notes: [note(2, 1, "bad")], labels: [])])
                Issue.record("a note the check refuses was written")
            } catch let error as StorageError {
                #expect(error.kind == .constraint, "\(error)")
            }
            #expect(try folders.readAll() == [OneFolder(id: 1, title: "kept", notes: [note(1, 1)], labels: [])])
        }
    }

    @Test("a read by key sees what another client committed", arguments: [
        PostgresConfiguration.IsolationLevel.readCommitted, .repeatableRead, .serializable,
    ])
    func seesCommittedWrites(isolation: PostgresConfiguration.IsolationLevel) throws {
        try Server.withStore({ $0.isolation = isolation; $0.poolSize = 1 }) { database, schema in
            let folders = try database.storage(for: OneFolder.self)
            try folders.persist([OneFolder(id: 1, title: "before", notes: [note(1, 1)], labels: [])])
            #expect(try folders.read(primaryKey: 1)?.title == "before")
            // Another client's transaction, which changes all three tables.
            try Server.raw(
                """
                WITH folder AS (UPDATE "\(schema)"."one_folders" SET "title" = 'after' WHERE "id" = 1),
                notes AS (UPDATE "\(schema)"."one_notes" SET "body" = 'after' WHERE "folderId" = 1)
                INSERT INTO "\(schema)"."one_labels" ("name", "folderId") VALUES ('new', 1)
                """)
            let read = try folders.read(primaryKey: 1)
            #expect(read == OneFolder(id: 1, title: "after", notes: [note(1, 1, "after")], labels: [OneLabel(name: "new", folderId: 1)]))
        }
    }

    /// Another client updates folder 1 and holds its row lock while the
    /// store writes folder 1: the store's statement waits, and when the
    /// other commits, the upsert fails to serialize (its snapshot predates
    /// that commit) and the whole write runs again, which then succeeds.
    /// Sent as a plain INSERT first (InsertFirst), the statement waits too,
    /// then fails on the stored key or to serialize, and the upsert after it
    /// or the write run again succeeds.
    @Test("a write that fails to serialize is run again whole", arguments: [
        PostgresConfiguration.IsolationLevel.repeatableRead, .serializable,
    ], [false, true])
    func conflictIsRetried(isolation: PostgresConfiguration.IsolationLevel, insertingFirst: Bool) throws {
        try Server.withStore({ $0.isolation = isolation }) { database, schema in
            let folders = try database.storage(for: OneFolder.self)
            try folders.persist([OneFolder(id: 1, title: "before", notes: [note(1, 1), note(2, 1)], labels: [])])
            // After a collision the table's next calls go straight to the upsert.
            if insertingFirst {
                while !folders.table.insertFirst.tries() {}
            } else {
                folders.table.insertFirst.collided()
            }
            let written = OneFolder(id: 1, title: "store", notes: [note(3, 1)], labels: [OneLabel(name: "x", folderId: 1)])
            let outcome = Mutex<Result<Void, any Error>?>(nil)
            let done = DispatchSemaphore(value: 0)
            try Server.rawSession { other in
                func run(_ sql: String) throws {
                    _ = try other.query(PostgresQuery(unsafeSQL: sql), logger: Server.logger).wait()
                }
                try run("BEGIN")
                try run("UPDATE \"\(schema)\".\"one_folders\" SET \"title\" = 'other' WHERE \"id\" = 1")
                DispatchQueue.global().async {
                    let result = Result { try folders.persist([written]) }
                    outcome.withLock { $0 = result }
                    done.signal()
                }
                let waiting = try Server.waitsForLock(schema, "one_folders")
                #expect(waiting, "the store's write never waited for the row lock")
                try run("COMMIT")
            }
            done.wait()
            try #require(outcome.withLock { $0 }).get()
            if !insertingFirst { #expect(database.retryCount >= 1, "the write was not run again") }
            #expect(try folders.read(primaryKey: 1) == written)
            #expect(try database.storage(for: OneNote.self).readAll().map(\.id) == [3])
        }
    }

    @Test("another store's observer hears a write of one record and an erasure")
    func observerHearsOneRecord() async throws {
        let schema = "dao_pgtest_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let configuration = try Server.configuration(schema)
        let first = try PostgresStore(configuration)
        let second = try PostgresStore(configuration)
        defer {
            try? first.close()
            try? second.close()
        }
        let watched = DAO(storage: try first.storage(for: OneFolder.self), translator: SameFolder())
        let writer = DAO(storage: try second.storage(for: OneFolder.self), translator: SameFolder())
        let iterator = watched.observe(sortedBy: [SortDescriptor(\.id)], pollInterval: .milliseconds(20))
            .makeAsyncIterator()
        #expect(try await nextSnapshot(iterator, within: .seconds(20))?.results == [])
        // The listener's connection, opened as the observer began, listens by now.
        try await Task.sleep(for: .seconds(1))
        let folder = OneFolder(id: 1, title: "heard", notes: [note(1, 1)], labels: [OneLabel(name: "l", folderId: 1)])
        try await writer.persist(folder)
        #expect(try await nextSnapshot(iterator, within: .seconds(20))?.results == [folder])
        try await writer.erase(byPrimaryKey: 1)
        #expect(try await nextSnapshot(iterator, within: .seconds(20))?.results == [])
        try first.close()
        try second.close()
        try PostgresStore(try Server.configuration(schema)).removeSchema()
    }
}
