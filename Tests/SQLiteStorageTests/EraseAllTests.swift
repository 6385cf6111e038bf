import DAOCore
import Foundation
import SQLiteStorage
import Testing

/// Three levels of owned records: shelves own books, books own pages.
struct ShelfRecord: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var books: [BookRecord]

    static let entity = Entity<ShelfRecord>(
        "shelves", primaryKey: "id", \.id, fields: [],
        relations: [Relation("books", \.books, foreignKey: "shelfId", \BookRecord.shelfId)])
}

struct BookRecord: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var shelfId: Int64
    var pages: [PageRecord]

    static let entity = Entity<BookRecord>(
        "books", primaryKey: "id", \.id, fields: [Field("shelfId", \.shelfId)],
        relations: [Relation("pages", \.pages, foreignKey: "bookId", \PageRecord.bookId)], ownedBy: ShelfRecord.self)
}

struct PageRecord: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var bookId: Int64
    var text: String

    static let entity = Entity<PageRecord>(
        "pages", primaryKey: "id", \.id, fields: [Field("bookId", \.bookId), Field("text", \.text)],
        ownedBy: BookRecord.self)
}

@Suite("SQLite: erasing every parent empties the tables below it, at every depth")
struct EraseAllTests {
    static func shelf(_ id: Int64) -> ShelfRecord {
        ShelfRecord(id: id, books: (Int64(1)...3).map { b in
            let bookId = id * 10 + b
            return BookRecord(id: bookId, shelfId: id, pages: (Int64(1)...4).map { p in
                PageRecord(id: bookId * 10 + p, bookId: bookId, text: "page \(p)")
            })
        })
    }

    @Test("erase all removes grandchildren too, and counts only the parents")
    func eraseAllThreeLevels() throws {
        try withDatabase { database in
            let shelves = try database.storage(for: ShelfRecord.self)
            let books = try database.storage(for: BookRecord.self)
            let pages = try database.storage(for: PageRecord.self)
            try shelves.persist([Self.shelf(1), Self.shelf(2)])
            #expect(try pages.count() == 24)
            #expect(try shelves.eraseAll() == 2)
            #expect(try shelves.count() == 0)
            #expect(try books.count() == 0)
            #expect(try pages.count() == 0)
            // The tables still work afterwards.
            try shelves.persist(Self.shelf(3))
            #expect(try shelves.readAll() == [Self.shelf(3)])
        }
    }

    @Test("erasing every book leaves the shelves and removes every page")
    func eraseAllMiddleLevel() throws {
        try withDatabase { database in
            let shelves = try database.storage(for: ShelfRecord.self)
            let books = try database.storage(for: BookRecord.self)
            let pages = try database.storage(for: PageRecord.self)
            try shelves.persist([Self.shelf(1), Self.shelf(2)])
            #expect(try books.eraseAll() == 6)
            #expect(try pages.count() == 0)
            #expect(try shelves.readAll() == [ShelfRecord(id: 1, books: []), ShelfRecord(id: 2, books: [])])
        }
    }
}
