import DAOCore
import DAOMacros
import Foundation

// The domain of an outside client, declared the README's way (@StoredRecord and
// @Children from DAOMacros, plain objects and translators beside them): a
// library (String key) owns shelves (String key) own books (Int64 key). Optional
// text, reals and dates, bytes, a Bool, composite indexes at both lower levels.
// Shared by the trial's tests and by StoreHelper, which writes it in a second
// process that the tests kill.

/// A library, keyed by a String code; owns its shelves.
@StoredRecord("trial_libraries", primaryKey: "code", indexes: [Index("trial_libraries_by_city", on: ["city"])])
public struct LibraryRecord: Equatable {
    /// The `code` field.
    public var code: String
    /// The `name` field.
    public var name: String
    /// The `city` field.
    public var city: String?
    /// The `opened` field.
    public var opened: Date
    /// The `rating` field.
    public var rating: Double?
    /// The children.
    @Children(foreignKey: "libraryCode") public var shelves: [ShelfRecord]
}

/// A shelf of a library (String key); owns its books. Indexed by library and floor.
@StoredRecord(
    "trial_shelves", indexes: [Index("trial_shelves_by_library_floor", on: ["libraryCode", "floor"])],
    ownedBy: LibraryRecord.self)
public struct ShelfRecord: Equatable {
    /// The `id` field.
    public var id: String
    /// The `libraryCode` field.
    public var libraryCode: String
    /// The `floor` field.
    public var floor: Int64
    /// The `label` field.
    public var label: String
    /// The `capacity` field.
    public var capacity: Int64?
    /// The children.
    @Children(foreignKey: "shelfId") public var books: [BookRecord]
}

/// A book on a shelf (Int64 key), with optionals of every storage class; two composite indexes.
@StoredRecord(
    "trial_books",
    indexes: [
        Index("trial_books_by_shelf_author_year", on: ["shelfId", "author", "year"]),
        Index("trial_books_by_author_price", on: ["author", "price"]),
    ],
    ownedBy: ShelfRecord.self)
public struct BookRecord: Equatable {
    /// The `id` field.
    public var id: Int64
    /// The `shelfId` field.
    public var shelfId: String
    /// The `title` field.
    public var title: String
    /// The `author` field.
    public var author: String
    /// The `year` field.
    public var year: Int64?
    /// The `price` field.
    public var price: Double
    /// The `weight` field.
    public var weight: Double?
    /// The `acquired` field.
    public var acquired: Date?
    /// The `summary` field.
    public var summary: String
    /// The `cover` field.
    public var cover: Data?
    /// The `onLoan` field.
    public var onLoan: Bool
}

// MARK: - Plain objects and translators

/// The plain object of a library, with its shelves.
public struct Library: Plain {
    /// The identity: the record's primary key.
    public let uniqueId: String
    /// The `name` field.
    public let name: String
    /// The `city` field.
    public let city: String?
    /// The `opened` field.
    public let opened: Date
    /// The `rating` field.
    public let rating: Double?
    /// The `shelves` field.
    public let shelves: [Shelf]

    /// A library with `shelves` (give them in key order).
    public init(uniqueId: String, name: String, city: String?, opened: Date, rating: Double?, shelves: [Shelf]) {
        self.uniqueId = uniqueId
        self.name = name
        self.city = city
        self.opened = opened
        self.rating = rating
        self.shelves = shelves
    }
}

/// The plain object of a shelf, with its books.
public struct Shelf: Plain {
    /// The identity: the record's primary key.
    public let uniqueId: String
    /// The `libraryCode` field.
    public let libraryCode: String
    /// The `floor` field.
    public let floor: Int64
    /// The `label` field.
    public let label: String
    /// The `capacity` field.
    public let capacity: Int64?
    /// The `books` field.
    public let books: [Book]

    /// A shelf of library `libraryCode` with `books` (give them in key order).
    public init(uniqueId: String, libraryCode: String, floor: Int64, label: String, capacity: Int64?, books: [Book]) {
        self.uniqueId = uniqueId
        self.libraryCode = libraryCode
        self.floor = floor
        self.label = label
        self.capacity = capacity
        self.books = books
    }
}

/// The plain object of a book.
public struct Book: Plain {
    /// The identity: the record's primary key.
    public let uniqueId: Int64
    /// The `shelfId` field.
    public let shelfId: String
    /// The `title` field.
    public let title: String
    /// The `author` field.
    public let author: String
    /// The `year` field.
    public let year: Int64?
    /// The `price` field.
    public let price: Double
    /// The `weight` field.
    public let weight: Double?
    /// The `acquired` field.
    public let acquired: Date?
    /// The `summary` field.
    public let summary: String
    /// The `cover` field.
    public let cover: Data?
    /// The `onLoan` field.
    public let onLoan: Bool

    /// A book on shelf `shelfId`.
    public init(
        uniqueId: Int64, shelfId: String, title: String, author: String, year: Int64?, price: Double, weight: Double?,
        acquired: Date?, summary: String, cover: Data?, onLoan: Bool
    ) {
        self.uniqueId = uniqueId
        self.shelfId = shelfId
        self.title = title
        self.author = author
        self.year = year
        self.price = price
        self.weight = weight
        self.acquired = acquired
        self.summary = summary
        self.cover = cover
        self.onLoan = onLoan
    }
}

/// Books to records and back.
public struct BookTranslator: Translator {
    /// The translator.
    public init() {}

    /// The record of `plain`.
    public func record(from plain: Book) -> BookRecord {
        BookRecord(
            id: plain.uniqueId, shelfId: plain.shelfId, title: plain.title, author: plain.author, year: plain.year,
            price: plain.price, weight: plain.weight, acquired: plain.acquired, summary: plain.summary,
            cover: plain.cover, onLoan: plain.onLoan)
    }

    /// The plain object of `record`.
    public func plain(from record: BookRecord) -> Book {
        Book(
            uniqueId: record.id, shelfId: record.shelfId, title: record.title, author: record.author,
            year: record.year, price: record.price, weight: record.weight, acquired: record.acquired,
            summary: record.summary, cover: record.cover, onLoan: record.onLoan)
    }
}

/// Shelves to records and back, with their books.
public struct ShelfTranslator: Translator {
    /// The translator.
    public init() {}

    /// The record of `plain`.
    public func record(from plain: Shelf) -> ShelfRecord {
        ShelfRecord(
            id: plain.uniqueId, libraryCode: plain.libraryCode, floor: plain.floor, label: plain.label,
            capacity: plain.capacity, books: plain.books.map(BookTranslator().record(from:)))
    }

    /// The plain object of `record`.
    public func plain(from record: ShelfRecord) -> Shelf {
        Shelf(
            uniqueId: record.id, libraryCode: record.libraryCode, floor: record.floor, label: record.label,
            capacity: record.capacity, books: record.books.map(BookTranslator().plain(from:)))
    }
}

/// Libraries to records and back, with their shelves and books.
public struct LibraryTranslator: Translator {
    /// The translator.
    public init() {}

    /// The record of `plain`.
    public func record(from plain: Library) -> LibraryRecord {
        LibraryRecord(
            code: plain.uniqueId, name: plain.name, city: plain.city, opened: plain.opened, rating: plain.rating,
            shelves: plain.shelves.map(ShelfTranslator().record(from:)))
    }

    /// The plain object of `record`.
    public func plain(from record: LibraryRecord) -> Library {
        Library(
            uniqueId: record.code, name: record.name, city: record.city, opened: record.opened,
            rating: record.rating, shelves: record.shelves.map(ShelfTranslator().plain(from:)))
    }
}

// MARK: - The second version, for the migration

/// The second version of `trial_libraries`: an optional `website` added last.
@StoredRecord("trial_libraries", primaryKey: "code", indexes: [Index("trial_libraries_by_city", on: ["city"])])
public struct LibraryRecordV2: Equatable {
    /// The `code` field.
    public var code: String
    /// The `name` field.
    public var name: String
    /// The `city` field.
    public var city: String?
    /// The `opened` field.
    public var opened: Date
    /// The `rating` field.
    public var rating: Double?
    /// The `website` field.
    public var website: String?
    /// The children.
    @Children(foreignKey: "libraryCode") public var shelves: [ShelfRecord]
}

// MARK: - Sample data

/// Builders of the trial's data.
public enum Sample {
    /// 2001-01-01, the reference date.
    public static let epoch = Date(timeIntervalSinceReferenceDate: 0)
    /// About 200 KB of text: several scripts, NUL, emoji, combining marks.
    public static let longText = String(
        repeating: "Il était une fois \u{0} 📚 Zoe\u{308} — Ελληνικά — 漢字 — ", count: 3_500)

    /// A book with defaults for what a test does not care about.
    public static func book(
        _ id: Int64, shelf: String, title: String = "Title", author: String = "Anon", year: Int64? = 1999,
        price: Double = 10, weight: Double? = nil, acquired: Date? = nil, summary: String = "",
        cover: Data? = nil, onLoan: Bool = false
    ) -> Book {
        Book(
            uniqueId: id, shelfId: shelf, title: title, author: author, year: year, price: price, weight: weight,
            acquired: acquired, summary: summary, cover: cover, onLoan: onLoan)
    }

    /// ``corpus()`` in key order (by Unicode scalars), as `read()` returns it.
    public static func sortedCorpus() -> [Library] {
        corpus().sorted { $0.uniqueId.utf8.lexicographicallyPrecedes($1.uniqueId.utf8) }
    }

    /// Three libraries, seven shelves, about forty books: the query corpus.
    /// Text values here are all in NFC, so Swift's `==` and the stored
    /// meaning (Unicode scalars) agree on them.
    public static func corpus() -> [Library] {
        let authors = ["Austen", "Borges", "Čapek", "Dostoevsky", "", "Ōe"]
        var nextBook: Int64 = 1
        func books(on shelf: String, count: Int, salt: Int) -> [Book] {
            (0..<count).map { index in
                defer { nextBook += 1 }
                let n = index + salt
                return book(
                    nextBook, shelf: shelf, title: "Book \(n % 5)", author: authors[n % authors.count],
                    year: n % 4 == 0 ? nil : Int64(1900 + n * 7 % 120),
                    price: [0, 1.5, .infinity, -.infinity, .greatestFiniteMagnitude, Double.leastNonzeroMagnitude, 12.25][n % 7],
                    weight: n % 3 == 0 ? nil : Double(n) / 4,
                    acquired: n % 5 == 0 ? nil : Date(timeIntervalSinceReferenceDate: Double(n) * 86_400.5),
                    summary: n % 6 == 0 ? "" : "Summary \(n) café", cover: n % 2 == 0 ? nil : Data([UInt8(n), 0, 255]),
                    onLoan: n % 3 == 1)
            }
        }
        return [
            Library(
                uniqueId: "central", name: "Central", city: "Zürich", opened: epoch, rating: 4.5,
                shelves: [
                    Shelf(uniqueId: "central-a", libraryCode: "central", floor: 0, label: "A", capacity: 40,
                          books: books(on: "central-a", count: 8, salt: 0)),
                    Shelf(uniqueId: "central-b", libraryCode: "central", floor: 1, label: "B", capacity: nil,
                          books: books(on: "central-b", count: 6, salt: 3)),
                    Shelf(uniqueId: "central-c", libraryCode: "central", floor: 1, label: "", capacity: 0,
                          books: []),
                ]),
            Library(
                uniqueId: "east", name: "East branch", city: nil, opened: .distantPast, rating: nil,
                shelves: [
                    Shelf(uniqueId: "east-1", libraryCode: "east", floor: -1, label: "Basement", capacity: 12,
                          books: books(on: "east-1", count: 11, salt: 5)),
                    Shelf(uniqueId: "east-2", libraryCode: "east", floor: 2, label: "Top", capacity: nil,
                          books: books(on: "east-2", count: 4, salt: 1)),
                ]),
            Library(
                uniqueId: "", name: "", city: "", opened: .distantFuture, rating: -.infinity,
                shelves: [
                    Shelf(uniqueId: "x", libraryCode: "", floor: 0, label: "🚀", capacity: nil,
                          books: books(on: "x", count: 9, salt: 2)),
                    Shelf(uniqueId: "y", libraryCode: "", floor: 3, label: "y", capacity: 1,
                          books: books(on: "y", count: 3, salt: 7)),
                ]),
        ]
    }
}

// MARK: - A sequence of writes, for the kill tests

/// The transactions StoreHelper's `trial-write` makes, one DAO call each, and
/// the state they leave: so a test that kills the writer knows what the store
/// must hold after the calls that returned.
public enum TrialWrites {
    /// One transaction.
    public enum Step: Sendable {
        /// `persist` of a whole library tree (an upsert: its shelves and books replaced).
        case persist(Library)
        /// `erase(byPrimaryKey:)` of a library, cascading to its shelves and books.
        case erase(String)
    }

    /// The `index`th transaction (from 0): mostly persists of one of five
    /// libraries in a new version, each fourth an erase.
    public static func step(_ index: Int) -> Step {
        let code = "lib-\(index % 5)-\u{E9}"
        if index % 4 == 3 { return .erase("lib-\((index / 2) % 5)-\u{E9}") }
        let authors = ["", "Ōe", "Zoe\u{308}"]
        let shelves = (0..<(index % 3 + 1)).map { (shelf: Int) -> Shelf in
            let shelfId = "\(code)/s\(shelf)"
            let books = (0..<(index % 4 + 2)).map { (book: Int) -> Book in
                let id = Int64(index * 100 + shelf * 10 + book)
                let year: Int64? = book == 0 ? nil : Int64(index)
                let summary = String(repeating: "text \(index) ", count: 50 * (book + 1))
                let cover: Data? = book % 2 == 0 ? nil : Data(repeating: UInt8(index % 256), count: 300)
                return Sample.book(
                    id, shelf: shelfId, title: "v\(index)", author: authors[book % 3], year: year,
                    price: Double(book) + 0.5, summary: summary, cover: cover)
            }
            return Shelf(uniqueId: shelfId, libraryCode: code, floor: Int64(shelf), label: "v\(index)", capacity: nil, books: books)
        }
        return .persist(Library(
            uniqueId: code, name: "version \(index)", city: index % 2 == 0 ? nil : "Zürich",
            opened: Date(timeIntervalSinceReferenceDate: Double(index)), rating: Double(index) / 3, shelves: shelves))
    }

    /// The libraries after the first `count` transactions, in key order.
    public static func state(after count: Int) -> [Library] {
        var libraries: [String: Library] = [:]
        for index in 0..<count {
            switch step(index) {
            case .persist(let library): libraries[library.uniqueId] = library
            case .erase(let code): libraries[code] = nil
            }
        }
        return libraries.values.sorted { $0.uniqueId.utf8.lexicographicallyPrecedes($1.uniqueId.utf8) }
    }
}
