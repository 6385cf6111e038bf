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

/// Two levels under names spelled in NFD, with text keys: a shelf
/// (`e\u{301}tage\u{300}res`) owns leaves (`pa\u{301}ginas`).
struct NFDShelf: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var leaves: [NFDLeaf]

    static let entity = Entity<NFDShelf>(
        "e\u{301}tage\u{300}res", primaryKey: "id", \.id, fields: [],
        relations: [Relation("leaves", \.leaves, foreignKey: "shelf", \NFDLeaf.shelf)])
}

struct NFDLeaf: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var shelf: String
    var note: String?

    static let entity = Entity<NFDLeaf>(
        "pa\u{301}ginas", primaryKey: "id", \.id, fields: [Field("shelf", \.shelf), Field("note", \.note)],
        ownedBy: NFDShelf.self)
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

    /// A fresh database with the storages of its three levels.
    func withShelves(
        _ body: (SQLiteDatabase, SQLiteRecordStorage<ShelfRecord>, SQLiteRecordStorage<BookRecord>, SQLiteRecordStorage<PageRecord>) throws -> Void
    ) throws {
        try withDatabase { database in
            try body(
                database, database.storage(for: ShelfRecord.self), database.storage(for: BookRecord.self),
                database.storage(for: PageRecord.self))
        }
    }

    @Test("erase all removes grandchildren too, and counts only the parents")
    func eraseAllThreeLevels() throws {
        try withShelves { database, shelves, books, pages in
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
        try withShelves { database, shelves, books, pages in
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

    /// How many virtual-machine steps the writer's `DELETE FROM "<table>"`
    /// has run since the last call (which sets the count back to zero).
    static func deleteSteps(_ database: SQLiteDatabase, _ table: String) throws -> Int32 {
        try database.withConnection(.read, entity: table) { connection in
            let statement = try connection.statement("DELETE FROM \"\(table)\"")
            return sqlite3_stmt_status(statement.handle, Int32(SQLITE_STMTSTATUS_VM_STEP), 1)
        }
    }

    /// A store holding shelves 1 and 2 (24 pages) and, made by another
    /// program, `sql` (tables, rows, triggers).
    func withOtherProgram(_ sql: String, _ body: (SQLiteDatabase) throws -> Void) throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            let database = try SQLiteDatabase(path: url)
            try database.storage(for: ShelfRecord.self).persist([Self.shelf(1), Self.shelf(2)])
            let other = try Connection(path: url.path(percentEncoded: false), flags: SQLITE_OPEN_READWRITE)
            try other.execute("PRAGMA foreign_keys = ON")
            try other.execute(sql)
            try other.close()
            try body(database)
        }
    }

    /// A count of rows of another program's table, through the writer.
    static func count(_ database: SQLiteDatabase, _ table: String) throws -> Int64? {
        try database.withConnection(.read, entity: table) { try $0.scalarInt("SELECT count(*) FROM \(table)") }
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
            // A statement prepared before, run after: the writer refuses a
            // page of a book that is not stored.
            #expect(throws: StorageError.self) {
                try database.withConnection(.persist, entity: "pages") { connection in
                    try connection.execute("INSERT INTO \"pages\" VALUES (999, 999, 'orphan')")
                }
            }
            #expect(try shelves.eraseAll() == 2)
            #expect(try shelves.eraseAll() == 0)
            #expect(try Self.enforcesForeignKeys(database))
        }
    }

    @Test("erase all frees the tables whole: SQLite runs fewer steps than there are rows")
    func freedWhole() throws {
        try withShelves { database, shelves, books, pages in
            let erasures: [(erase: () throws -> Int, erased: Int)] = [
                ({ try shelves.eraseAll() }, 2), ({ try books.eraseAll() }, 6), ({ try pages.eraseAll() }, 24),
            ]
            for (storage, erased) in erasures {
                try shelves.persist([Self.shelf(1), Self.shelf(2)])
                _ = try Self.deleteSteps(database, "pages")
                #expect(try storage() == erased)
                #expect(try Self.deleteSteps(database, "pages") < 24)
                #expect(try pages.count() == 0)
            }
        }
    }

    static let refusingReferences: [(sql: String, what: String)] = [
        ("CREATE TABLE loans(id INTEGER PRIMARY KEY, book INTEGER NOT NULL REFERENCES books(id)); INSERT INTO loans VALUES (1, 11)", "loans"),
        ("CREATE TABLE loans(id INTEGER PRIMARY KEY, book INTEGER NOT NULL REFERENCES BOOKS(id)); INSERT INTO loans VALUES (1, 11)", "loans"),
        ("CREATE TABLE loans(id INTEGER PRIMARY KEY, book INTEGER NOT NULL REFERENCES \"Books\"(id)); INSERT INTO loans VALUES (1, 11)", "loans"),
        ("CREATE TABLE marks(id INTEGER PRIMARY KEY, page INTEGER NOT NULL REFERENCES pages(id)); INSERT INTO marks VALUES (1, 111)", "marks"),
        (
            """
            CREATE TABLE authors(id INTEGER PRIMARY KEY);
            CREATE TABLE reviews(id INTEGER PRIMARY KEY, author INTEGER NOT NULL REFERENCES authors(id));
            INSERT INTO authors VALUES (1); INSERT INTO reviews VALUES (1, 1);
            CREATE TRIGGER books_gone AFTER DELETE ON books BEGIN DELETE FROM authors; END;
            """,
            "reviews"
        ),
    ]

    @Test(
        "another program's table referring to a table below, or its trigger on one, keeps erase all to what enforced foreign keys allow",
        arguments: Self.refusingReferences.indices)
    func otherProgramRefuses(index: Int) throws {
        let (sql, table) = Self.refusingReferences[index]
        try withOtherProgram(sql) { database in
            let shelves = try database.storage(for: ShelfRecord.self)
            do {
                let erased = try shelves.eraseAll()
                Issue.record("erase all returned \(erased) though a row of \(table) refers to what it would erase")
            } catch let error as StorageError {
                #expect(error.kind == .constraint, "\(error)")
            }
            #expect(try shelves.readAll() == [Self.shelf(1), Self.shelf(2)])
            #expect(try Self.count(database, table) == 1)
            #expect(try Self.enforcesForeignKeys(database))
        }
    }

    @Test("another program's table whose foreign key cascades loses the rows that referred to the erased ones")
    func otherProgramsTableCascades() throws {
        try withOtherProgram(
            "CREATE TABLE loans(id INTEGER PRIMARY KEY, book INTEGER NOT NULL REFERENCES books(id) ON DELETE CASCADE); INSERT INTO loans VALUES (1, 11)"
        ) { database in
            let shelves = try database.storage(for: ShelfRecord.self)
            _ = try Self.deleteSteps(database, "pages")
            #expect(try shelves.eraseAll() == 2)
            // Row by row, with foreign keys enforced.
            #expect(try Self.deleteSteps(database, "pages") >= 24)
            #expect(try database.storage(for: PageRecord.self).count() == 0)
            #expect(try Self.count(database, "loans") == 0)
            #expect(try Self.enforcesForeignKeys(database))
        }
    }

    @Test("another program's table referring to a table above the one erased leaves erase all freeing whole tables")
    func otherProgramAbove() throws {
        try withOtherProgram(
            "CREATE TABLE loans(id INTEGER PRIMARY KEY, shelf INTEGER NOT NULL REFERENCES shelves(id)); INSERT INTO loans VALUES (1, 1)"
        ) { database in
            let books = try database.storage(for: BookRecord.self)
            _ = try Self.deleteSteps(database, "pages")
            #expect(try books.eraseAll() == 6)
            #expect(try Self.deleteSteps(database, "pages") < 24)
            #expect(try database.storage(for: ShelfRecord.self).readAll() == [ShelfRecord(id: 1, books: []), ShelfRecord(id: 2, books: [])])
            #expect(try Self.count(database, "loans") == 1)
            #expect(try Self.enforcesForeignKeys(database))
        }
    }

    @Test("erasing by key deletes the record's descendants first, at every depth, and nothing of its neighbours")
    func eraseByKeyThreeLevels() throws {
        try withShelves { database, shelves, books, pages in
            try shelves.persist([Self.shelf(1), Self.shelf(2), Self.shelf(3)])
            #expect(try shelves.erase(primaryKeys: [1, 3, 9]) == 2)
            #expect(try shelves.readAll() == [Self.shelf(2)])
            #expect(try books.count() == 3)
            #expect(try pages.count() == 12)
            #expect(try books.erase(primaryKeys: [22]) == 1)
            #expect(try pages.count() == 8)
            #expect(try pages.read(where: #Predicate { $0.bookId == 22 }).isEmpty)
        }
    }

    /// The virtual-machine steps run by the writer's prepared statement whose
    /// text starts with `prefix` (the first one found), since it was last
    /// asked (which sets the count back to zero); `nil` when there is none.
    static func steps(_ database: SQLiteDatabase, startingWith prefix: String) throws -> Int32? {
        try database.withConnection(.read, entity: "shelves") { connection in
            var statement = sqlite3_next_stmt(connection.handle, nil)
            while let current = statement {
                if let text = sqlite3_sql(current), String(cString: text).hasPrefix(prefix) {
                    return sqlite3_stmt_status(current, Int32(SQLITE_STMTSTATUS_VM_STEP), 1)
                }
                statement = sqlite3_next_stmt(connection.handle, current)
            }
            return nil
        }
    }

    @Test("an exact erase(where:) deletes the descendants of the records it matches first, at every depth, and nothing of the others")
    func eraseWhereThreeLevels() throws {
        try withShelves { database, shelves, books, pages in
            try shelves.persist([Self.shelf(1), Self.shelf(2), Self.shelf(3)])
            #expect(try shelves.erase(where: #Predicate { $0.id != 2 }) == 2)
            #expect(try shelves.readAll() == [Self.shelf(2)])
            #expect(try books.count() == 3)
            #expect(try pages.count() == 12)
            // The shelves' own DELETE found no book left to cascade to: a
            // cascade runs a trigger program over each of the 6 books and
            // 24 pages, counted in the statement's steps (885 then, against
            // 67 when it finds nothing).
            let shelfSteps = try #require(try Self.steps(database, startingWith: "DELETE FROM \"shelves\" WHERE"))
            #expect(shelfSteps < 200, "the shelves' DELETE ran \(shelfSteps) steps")
            #expect(try books.erase(where: #Predicate { $0.shelfId == 2 && $0.id > 21 }) == 2)
            #expect(try pages.count() == 4)
            #expect(try pages.readAll().map(\.bookId) == [21, 21, 21, 21])
            #expect(try shelves.readAll() == [ShelfRecord(id: 2, books: [Self.shelf(2).books[0]])])
            // A predicate that holds for every record empties the tables below.
            #expect(try shelves.erase(where: #Predicate<ShelfRecord> { _ in true }) == 1)
            #expect(try books.count() == 0)
            #expect(try pages.count() == 0)
        }
    }

    @Test(
        "another program's table referring to a grandchild makes erasing by key or by an exact condition fail and erase nothing",
        arguments: [false, true])
    func eraseRefused(byCondition: Bool) throws {
        // Shelves 1 and 2, or shelf 2 alone; mark 1 refers to page 111, on shelf 1.
        func erase(_ shelves: SQLiteRecordStorage<ShelfRecord>, from first: Int64) throws -> Int {
            byCondition
                ? try shelves.erase(where: #Predicate { $0.id >= first })
                : try shelves.erase(primaryKeys: Array((first...2).reversed()))
        }
        try withOtherProgram(
            "CREATE TABLE marks(id INTEGER PRIMARY KEY, page INTEGER NOT NULL REFERENCES pages(id)); INSERT INTO marks VALUES (1, 111)"
        ) { database in
            let shelves = try database.storage(for: ShelfRecord.self)
            #expect {
                try erase(shelves, from: 1)
            } throws: { error in
                (error as? StorageError)?.kind == .constraint
            }
            #expect(try shelves.readAll() == [Self.shelf(1), Self.shelf(2)])
            #expect(try erase(shelves, from: 2) == 1)
            #expect(try shelves.readAll() == [Self.shelf(1)])
        }
    }

    /// Another program's table whose foreign key names the leaves' table as
    /// `spelling`, holding one row that refers to leaf `Zoe\u{308}-1`
    /// (made with foreign keys off: a name SQLite takes for another table
    /// refers to no table).
    static func nfdStore(referring spelling: String, _ body: (SQLiteDatabase) throws -> Void) throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            let database = try SQLiteDatabase(path: url)
            let shelves = try database.storage(for: NFDShelf.self)
            try shelves.persist((1...3).map { n in
                NFDShelf(id: "Zoe\u{308} \(n)", leaves: (1...10).map {
                    NFDLeaf(id: "Zoe\u{308}-\(n * 100 + $0)", shelf: "Zoe\u{308} \(n)", note: $0 % 2 == 0 ? nil : "caf\u{E9}")
                })
            })
            let other = try Connection(path: url.path(percentEncoded: false), flags: SQLITE_OPEN_READWRITE)
            try other.execute(
                "CREATE TABLE marks(id INTEGER PRIMARY KEY, leaf TEXT NOT NULL REFERENCES \"\(spelling)\"(id));"
                    + " INSERT INTO marks VALUES (1, 'Zoe\u{308}-101')")
            try other.close()
            try body(database)
        }
    }

    @Test(
        "names compared as SQLite compares them: ASCII case folded, NFC and NFD two names",
        arguments: [("pa\u{301}ginas", true), ("PA\u{301}GINAS", true), ("p\u{E1}ginas", false), ("pA\u{301}ginaS", true)])
    func nonASCIINames(spelling: String, refersToLeaves: Bool) throws {
        try Self.nfdStore(referring: spelling) { database in
            let shelves = try database.storage(for: NFDShelf.self)
            let leaves = try database.storage(for: NFDLeaf.self)
            if refersToLeaves {
                #expect(throws: StorageError.self) { try shelves.eraseAll() }
                #expect(try leaves.count() == 30)
                #expect(try shelves.count() == 3)
            } else {
                _ = try Self.deleteSteps(database, "pa\u{301}ginas")
                #expect(try shelves.eraseAll() == 3)
                #expect(try Self.deleteSteps(database, "pa\u{301}ginas") < 30)
                #expect(try leaves.count() == 0)
            }
            #expect(try Self.count(database, "marks") == 1)
            #expect(try Self.enforcesForeignKeys(database))
        }
    }

    @Test("erasing by text keys spelled in NFD deletes those records' leaves only")
    func nfdKeys() throws {
        try Self.nfdStore(referring: "p\u{E1}ginas") { database in
            let shelves = try database.storage(for: NFDShelf.self)
            let leaves = try database.storage(for: NFDLeaf.self)
            #expect(try shelves.erase(primaryKeys: ["Zoe\u{308} 2", "Zo\u{EB} 3"]) == 1)
            #expect(try shelves.readAll().map(\.id) == ["Zoe\u{308} 1", "Zoe\u{308} 3"])
            #expect(try leaves.count() == 20)
            #expect(try leaves.read(where: #Predicate { $0.shelf == "Zoe\u{308} 2" }).isEmpty)
        }
    }
}
