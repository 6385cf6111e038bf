import DAOCore
import Foundation

/// An author (String key), owning books that own chapters: three levels of
/// relations, optionals, a composite index.
struct AuthorRecord: Record, Hashable {
    typealias PrimaryKey = String
    var handle: String
    var name: String
    var born: Date?
    var rating: Double?
    var books: [CrashBookRecord]

    static let entity = Entity<AuthorRecord>(
        "authors", primaryKey: "handle", \.handle,
        fields: [Field("name", \.name), Field("born", \.born), Field("rating", \.rating)],
        indexes: [Index("authors_by_name", on: ["name"])],
        relations: [Relation("books", \.books, foreignKey: "authorHandle", \CrashBookRecord.authorHandle)])
}

/// A book of an author, keyed by its ISBN.
struct CrashBookRecord: Record, Hashable {
    typealias PrimaryKey = String
    var isbn: String
    var authorHandle: String
    var title: String
    var year: Int64?
    var chapters: [ChapterRecord]

    static let entity = Entity<CrashBookRecord>(
        "books", primaryKey: "isbn", \.isbn,
        fields: [Field("authorHandle", \.authorHandle), Field("title", \.title), Field("year", \.year)],
        relations: [Relation("chapters", \.chapters, foreignKey: "bookIsbn", \ChapterRecord.bookIsbn)],
        ownedBy: AuthorRecord.self)
}

/// A chapter of a book.
struct ChapterRecord: Record, Hashable {
    typealias PrimaryKey = Int64
    var id: Int64
    var bookIsbn: String
    var number: Int64
    var text: String
    var note: String?

    static let entity = Entity<ChapterRecord>(
        "chapters", primaryKey: "id", \.id,
        fields: [
            Field("bookIsbn", \.bookIsbn), Field("number", \.number), Field("text", \.text), Field("note", \.note),
        ],
        indexes: [Index("chapters_by_book_number", on: ["bookIsbn", "number"])],
        ownedBy: CrashBookRecord.self)
}

extension AuthorRecord {
    /// A book with its chapters in key order.
    static func normalizedBook(_ book: CrashBookRecord) -> CrashBookRecord {
        var book = book
        book.chapters.sort { $0.id < $1.id }
        return book
    }

    /// The same author with children in key order at every level, to compare
    /// with what a store returns whatever order it gives children in.
    var normalized: AuthorRecord {
        var copy = self
        copy.books = books.map(Self.normalizedBook).sorted { $0.isbn.unicodeScalars.lexicographicallyPrecedes($1.isbn.unicodeScalars) }
        return copy
    }
}
