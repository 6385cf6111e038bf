import DAOCore
import DAOMacros
import Dispatch
import Foundation
import PostgresNIO
import PostgresStorage
import Synchronization
import Testing

// A read of records with children reads two tables: were it two statements
// (the parents', then the children's) at READ COMMITTED, each would take a
// snapshot of its own. Books hold no children, so the read is one statement
// (TreeSQL); BatchWriteTests' shelves, whose boxes hold items, read by several.

@StoredRecord("snapshot_shelves")
struct SnapshotShelf: Equatable {
    var id: Int64
    var version: Int64
    @Children(foreignKey: "shelfId") var books: [SnapshotBook]
}

@StoredRecord("snapshot_books", ownedBy: SnapshotShelf.self)
struct SnapshotBook: Equatable {
    var id: Int64
    var shelfId: Int64
    var version: Int64
}

@Suite(.enabled(if: Server.url != nil, "DAO_POSTGRES_URL names no server"), .serialized)
struct ReadSnapshotTests {
    /// Another client locks the children's table, so the read's second
    /// statement waits after its first has run, then commits a new version
    /// of the parent and its children: the read must answer the state its
    /// first statement saw, parent and children alike, never the parent of
    /// one commit with the children of the next.
    @Test("a parent and its children come from one snapshot at READ COMMITTED", arguments: [
        PostgresConfiguration.IsolationLevel.readCommitted, .repeatableRead, .serializable,
    ])
    func oneSnapshot(isolation: PostgresConfiguration.IsolationLevel) throws {
        try Server.withStore({ $0.isolation = isolation }) { database, schema in
            let shelves = try database.storage(for: SnapshotShelf.self)
            let books = (1...3).map { SnapshotBook(id: $0, shelfId: 1, version: 1) }
            try shelves.persist([SnapshotShelf(id: 1, version: 1, books: books)])
            let answer = Answer()
            let done = DispatchSemaphore(value: 0)
            try Server.rawSession { other in
                func run(_ sql: String) throws {
                    _ = try other.query(PostgresQuery(unsafeSQL: sql), logger: Server.logger).wait()
                }
                try run("BEGIN")
                try run("LOCK TABLE \"\(schema)\".\"snapshot_books\" IN ACCESS EXCLUSIVE MODE")
                DispatchQueue.global().async {
                    let result = Result { try shelves.read(primaryKeys: [1]) }
                    answer.result.withLock { $0 = result }
                    done.signal()
                }
                // Wait until the read's statement on the books waits for the lock.
                let waiting = try Server.waitsForLock(schema, "snapshot_books")
                #expect(waiting, "the read never waited for the lock on the books")
                try run("UPDATE \"\(schema)\".\"snapshot_shelves\" SET \"version\" = 2 WHERE \"id\" = 1")
                try run("UPDATE \"\(schema)\".\"snapshot_books\" SET \"version\" = 2 WHERE \"shelfId\" = 1")
                try run("COMMIT")
            }
            done.wait()
            let read = try #require(try answer.result.withLock { $0 }?.get())
            #expect(read.count == 1)
            let versions = Set([read.first?.version] + (read.first?.books.map(\.version) ?? []))
            #expect(versions.count == 1, "parent and children of different commits: \(versions)")
            #expect(read.first?.books.count == 3)
            // The commit is whole afterwards.
            let after = try shelves.read(primaryKeys: [1])
            #expect(after.first?.version == 2)
            #expect(after.first?.books.map(\.version) == [2, 2, 2])
        }
    }
}

/// What the read on another thread answered.
private final class Answer: Sendable {
    let result = Mutex<Result<[SnapshotShelf], any Error>?>(nil)
}
