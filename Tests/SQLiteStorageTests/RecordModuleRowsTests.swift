import DAOCore
import Foundation
import SQLiteStorage
import Testing

// Records read and written by position go through the copies of
// `FieldwiseRecord.readRows(_:into:)` and `writeRows(_:to:_:)` specialized in
// the record's module: every row of a statement in one call, runs of rows by
// parent on a read of every record, a parent's children put in key order,
// reals checked as they are bound, and the writer's way with children stored
// elsewhere or no longer held. These check the answers those paths give.

private struct Shelf: Record, FieldwiseRecord, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var label: String
    var books: [Book]

    static let entity = Entity<Shelf>(
        "shelves", primaryKey: "id", \.id, fields: [Field("label", \.label)],
        relations: [Relation("books", \.books, foreignKey: "shelfId", \Book.shelfId)])

    init(id: Int64, label: String, books: [Book]) {
        (self.id, self.label, self.books) = (id, label, books)
    }

    init(fields: inout some FieldReader) throws {
        self.init(id: try fields.decode(), label: try fields.decode(), books: [])
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encode(label)
    }
}

private struct Book: Record, FieldwiseRecord, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var shelfId: Int64
    var title: String
    var pages: Int64
    var price: Double
    var read: Bool
    var added: Date
    var cover: Data?
    var note: String?
    var weight: Double?

    static let entity = Entity<Book>(
        "books", primaryKey: "id", \.id,
        fields: [
            Field("shelfId", \.shelfId), Field("title", \.title), Field("pages", \.pages), Field("price", \.price),
            Field("read", \.read), Field("added", \.added), Field("cover", \.cover), Field("note", \.note),
            Field("weight", \.weight),
        ],
        indexes: [Index("books_by_shelf_title", on: ["shelfId", "title"])],
        ownedBy: Shelf.self)

    init(
        id: Int64, shelfId: Int64, title: String, pages: Int64 = 0, price: Double = 0, read: Bool = false,
        added: Date = Date(timeIntervalSinceReferenceDate: 0), cover: Data? = nil, note: String? = nil,
        weight: Double? = nil
    ) {
        (self.id, self.shelfId, self.title, self.pages, self.price) = (id, shelfId, title, pages, price)
        (self.read, self.added, self.cover, self.note, self.weight) = (read, added, cover, note, weight)
    }

    init(fields: inout some FieldReader) throws {
        self.init(
            id: try fields.decode(), shelfId: try fields.decode(), title: try fields.decode(),
            pages: try fields.decode(), price: try fields.decode(), read: try fields.decode(),
            added: try fields.decode(), cover: try fields.decodeIfPresent(), note: try fields.decodeIfPresent(),
            weight: try fields.decodeIfPresent())
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encode(shelfId)
        try fields.encode(title)
        try fields.encode(pages)
        try fields.encode(price)
        try fields.encode(read)
        try fields.encode(added)
        try fields.encodeIfPresent(cover)
        try fields.encodeIfPresent(note)
        try fields.encodeIfPresent(weight)
    }
}

@Suite("Rows read and written in the record's module")
struct RecordModuleRowsTests {
    /// Three shelves whose books' keys interleave (shelf `s` holds keys
    /// `s, s + 3, s + 6, …`), so that every row of the books table in key
    /// order names another shelf than the row before; titles fall as keys
    /// rise, so the index by (shelf, title) yields a shelf's books in
    /// descending key order.
    fileprivate func shelves() -> [Shelf] {
        var shelves: [Shelf] = []
        for shelf in Int64(1)...3 {
            var books: [Book] = []
            for id in stride(from: shelf, through: 30, by: 3) {
                books.append(book(id, shelf: shelf))
            }
            shelves.append(Shelf(id: shelf, label: "shelf \(shelf)", books: books))
        }
        return shelves
    }

    /// Book `id`: zeros, NULLs, empty and absent bytes, empty text and text
    /// with NUL and emoji, by turns.
    fileprivate func book(_ id: Int64, shelf: Int64) -> Book {
        let cover: Data?
        switch id % 3 {
        case 0: cover = nil
        case 1: cover = Data()
        default: cover = Data([0, UInt8(id), 0xFF])
        }
        let note: String?
        switch id % 4 {
        case 0: note = nil
        case 1: note = ""
        default: note = "note 🚀 \(id)\u{0}end"
        }
        let weight: Double?
        switch id % 5 {
        case 0: weight = nil
        case 1: weight = 0
        default: weight = -Double(id)
        }
        let pages: Int64 = id % 4 == 0 ? 0 : id
        let price: Double = id % 5 == 0 ? 0 : Double(id) / 8
        let added = Date(timeIntervalSinceReferenceDate: id % 3 == 0 ? 0 : Double(id) * 1.5)
        return Book(
            id: id, shelfId: shelf, title: "t\(100 - id)", pages: pages, price: price, read: id % 2 == 0,
            added: added, cover: cover, note: note, weight: weight)
    }

    @Test("zeros, NULLs, empty bytes and interleaved parents read back as written, children in key order")
    func roundTrip() throws {
        try withDatabase(durability: .none) { database in
            let storage = try database.storage(for: Shelf.self)
            let stored = shelves()
            try storage.persist(stored)
            #expect(try storage.readAll() == stored)
            for shelf in stored {
                #expect(try storage.read(primaryKey: shelf.id) == shelf)
            }
            #expect(try storage.read(primaryKeys: [3, 1]) == [stored[2], stored[0]])
            let books = try database.storage(for: Book.self)
            #expect(try books.readAll() == stored.flatMap(\.books).sorted { $0.id < $1.id })
        }
    }

    @Test("a child stored under another parent moves; an update drops the children no longer held")
    func movesAndUpdates() throws {
        try withDatabase(durability: .none) { database in
            let storage = try database.storage(for: Shelf.self)
            try storage.persist([
                Shelf(id: 1, label: "a", books: [Book(id: 1, shelfId: 1, title: "x"), Book(id: 3, shelfId: 1, title: "y")])
            ])
            // Shelf 2 has no book stored: its books are inserted, and book 3,
            // stored under shelf 1, fails the insert and is upserted.
            let second = Shelf(id: 2, label: "b", books: [Book(id: 3, shelfId: 2, title: "moved", pages: 7)])
            try storage.persist([second])
            #expect(try storage.read(primaryKey: 2) == second)
            #expect(try storage.read(primaryKey: 1)?.books.map(\.id) == [1])
            // Shelf 1 holds book 1 (changed) and a new book 10, stored nowhere;
            // then only book 10.
            let changed = Shelf(
                id: 1, label: "a2",
                books: [Book(id: 1, shelfId: 1, title: "x2", price: 2.5, note: "n"), Book(id: 10, shelfId: 1, title: "z")])
            try storage.persist([changed])
            #expect(try storage.read(primaryKey: 1) == changed)
            let fewer = Shelf(id: 1, label: "a3", books: [Book(id: 10, shelfId: 1, title: "z")])
            try storage.persist([fewer])
            #expect(try storage.readAll() == [fewer, second])
            #expect(try database.storage(for: Book.self).count(where: nil) == 2)
        }
    }

    @Test("a child naming another parent, or a refused real, writes nothing")
    func refusedWrites() throws {
        try withDatabase(durability: .none) { database in
            let storage = try database.storage(for: Shelf.self)
            let stored = shelves()
            try storage.persist(stored)
            var wrongParent = stored[0]
            wrongParent.label = "changed"
            wrongParent.books[2].shelfId = 2
            #expect {
                try storage.persist([wrongParent])
            } throws: { error in
                (error as? StorageError)?.kind == .constraint
            }
            #expect(try storage.readAll() == stored)
            var negativeZero = stored[1]
            negativeZero.label = "changed"
            negativeZero.books[4].weight = -0.0
            try storage.persist([negativeZero])
            let weight = try storage.readAll().first { $0.id == negativeZero.id }?.books[4].weight
            #expect(weight?.bitPattern == (-0.0).bitPattern)
        }
    }
}
