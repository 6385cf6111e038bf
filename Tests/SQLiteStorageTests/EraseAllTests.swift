import CSQLite
import DAOCore
import Foundation
@testable import SQLiteStorage
import Testing
import TestSupport

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

    /// Whether the store's writer connection enforces foreign keys.
    static func enforcesForeignKeys(_ database: SQLiteDatabase) throws -> Bool {
        try database.withConnection(.read, entity: "shelves") { try $0.scalarInt("PRAGMA foreign_keys") } == 1
    }

    /// A store holding shelves 1 and 2 and a table of another program,
    /// `loans`, declared with `references`, holding a loan of book 11.
    func withLoans(_ references: String, _ body: (SQLiteDatabase) throws -> Void) throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            let database = try SQLiteDatabase(path: url)
            try database.storage(for: ShelfRecord.self).persist([Self.shelf(1), Self.shelf(2)])
            let other = try Connection(path: url.path(percentEncoded: false), flags: SQLITE_OPEN_READWRITE)
            try other.execute("PRAGMA foreign_keys = ON")
            try other.execute("CREATE TABLE loans(id INTEGER PRIMARY KEY, book INTEGER NOT NULL \(references))")
            try other.execute("INSERT INTO loans VALUES (1, 11)")
            try other.close()
            try body(database)
        }
    }

    @Test("erase all leaves foreign keys enforced, and the statements prepared before it work after it")
    func enforcedAfterwards() throws {
        try withDatabase { database in
            let shelves = try database.storage(for: ShelfRecord.self)
            try shelves.persist([Self.shelf(1), Self.shelf(2)])
            #expect(try shelves.read(primaryKeys: [1]) == [Self.shelf(1)])
            #expect(try Self.enforcesForeignKeys(database))
            #expect(try shelves.eraseAll() == 2)
            #expect(try Self.enforcesForeignKeys(database))
            try shelves.persist([Self.shelf(1), Self.shelf(3)])
            try shelves.persist(ShelfRecord(id: 3, books: []))
            #expect(try shelves.readAll() == [Self.shelf(1), ShelfRecord(id: 3, books: [])])
            #expect(try database.storage(for: PageRecord.self).count() == 12)
            #expect(try shelves.eraseAll() == 2)
            #expect(try shelves.eraseAll() == 0)
            #expect(try Self.enforcesForeignKeys(database))
        }
    }

    @Test(
        "a table of another program referring to a table below keeps erase all to what enforced foreign keys allow",
        arguments: ["REFERENCES books(id)", "REFERENCES BOOKS(id)", "REFERENCES \"Books\"(id)"])
    func otherProgramsTableRefuses(references: String) throws {
        try withLoans(references) { database in
            let shelves = try database.storage(for: ShelfRecord.self)
            do {
                let erased = try shelves.eraseAll()
                Issue.record("erase all returned \(erased) though a loan refers to book 11")
            } catch let error as StorageError {
                #expect(error.kind == .constraint, "\(error)")
            }
            #expect(try shelves.readAll() == [Self.shelf(1), Self.shelf(2)])
            #expect(try database.withConnection(.read, entity: "loans") { try $0.scalarInt("SELECT count(*) FROM loans") } == 1)
            #expect(try Self.enforcesForeignKeys(database))
        }
    }

    @Test("a table of another program whose foreign key cascades loses the rows that referred to the erased ones")
    func otherProgramsTableCascades() throws {
        try withLoans("REFERENCES books(id) ON DELETE CASCADE") { database in
            let shelves = try database.storage(for: ShelfRecord.self)
            #expect(try shelves.eraseAll() == 2)
            #expect(try database.storage(for: PageRecord.self).count() == 0)
            #expect(try database.withConnection(.read, entity: "loans") { try $0.scalarInt("SELECT count(*) FROM loans") } == 0)
            #expect(try Self.enforcesForeignKeys(database))
        }
    }
}
