import DAOCore
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

/// A parent whose child entity does not name it (no `ownedBy`), so a
/// storage of the child can be opened, and written through, before any
/// storage of the parent links the two.
private struct Shelf: Record, Hashable {
    typealias PrimaryKey = Int64
    var id: Int64
    var books: [Book]

    static let entity = Entity<Shelf>(
        "shelves", primaryKey: "id", \.id, fields: [],
        relations: [Relation("books", \.books, foreignKey: "shelfId", \Book.shelfId)])
}

private struct Book: Record, Hashable {
    typealias PrimaryKey = Int64
    var id: Int64
    var shelfId: Int64
    var title: String

    static let entity = Entity<Book>(
        "books", primaryKey: "id", \.id, fields: [Field("shelfId", \.shelfId), Field("title", \.title)])
}

@Suite("LMDB: codecs kept between write calls")
struct KeptWriteCodecsTests {
    /// A write call's codecs hold the parent link in force when they were
    /// made; kept for the next call, they must not write as a top-level
    /// entity once a parent storage has linked it.
    @Test("codecs kept from before a parent storage linked the entity are not reused after")
    func linkMadeSince() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let books = try env.storage(for: Book.self)
            // Write calls while the entity is not a child: their codecs are kept.
            #expect(try books.erase(primaryKeys: [1]) == 0)
            #expect(try books.erase(primaryKeys: [2]) == 0)
            let shelves = try env.storage(for: Shelf.self)
            let shelf = Shelf(id: 7, books: [Book(id: 1, shelfId: 7, title: "a")])
            try shelves.persist(shelf)
            // A child now: its parent must exist, and it is stored under it.
            #expect(storageError { try books.persist(Book(id: 2, shelfId: 8, title: "orphan")) }?.kind == .constraint)
            try books.persist(Book(id: 3, shelfId: 7, title: "b"))
            #expect(try shelves.read(primaryKey: 7)?.books.map(\.id) == [1, 3])
            #expect(try books.erase(primaryKeys: [1]) == 1)
            #expect(try shelves.read(primaryKey: 7)?.books.map(\.id) == [3])
            #expect(try books.count() == 1)
        }
    }

    /// Codecs are kept after each call that returns, and a call that
    /// throws leaves nothing behind for the next one.
    @Test("writes after kept codecs and after a failed write store exactly what they are given")
    func reusedAfterSuccessAndFailure() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let shelves = try env.storage(for: Shelf.self)
            let books = try env.storage(for: Book.self)
            var stored: [Shelf] = []
            for id in Int64(1)...20 {
                let shelf = Shelf(
                    id: id, books: (0..<Int64(5)).map { Book(id: id * 10 + $0, shelfId: id, title: "t\(id)-\($0)") })
                try shelves.persist(shelf)
                stored.append(shelf)
                if id % 5 == 0 {
                    #expect(storageError { try books.persist(Book(id: 999, shelfId: 99, title: "x")) } != nil)
                }
            }
            // Out of key order, and replacing children.
            var changed = stored[3]
            changed.books = [Book(id: 35, shelfId: 4, title: "new"), Book(id: 50, shelfId: 4, title: "moved")]
            try shelves.persist([changed, stored[0]])
            stored[3] = changed
            stored[4].books.removeFirst()  // book 50 moved to shelf 4
            #expect(try shelves.readAll() == stored)
            #expect(try books.count() == stored.reduce(0) { $0 + $1.books.count })
        }
    }
}
