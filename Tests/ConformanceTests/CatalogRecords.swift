import DAOCore
import Foundation

// A second domain with other shapes than the example's: String primary keys,
// three levels of relations (authors own books own chapters), optionals of
// several types, and a composite index. Variants with the same entity names
// stand for a record type that changed between two releases of an app.

struct CatalogAuthor: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var country: String?
    var books: [CatalogBook]

    static let entity = Entity<CatalogAuthor>(
        "authors", primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("country", \.country)],
        relations: [Relation("books", \.books, foreignKey: "authorId", \CatalogBook.authorId)])
}

struct CatalogBook: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var authorId: String
    var title: String
    var subtitle: String?
    var year: Int64
    var chapters: [CatalogChapter]

    static let entity = Entity<CatalogBook>(
        "books", primaryKey: "id", \.id,
        fields: [
            Field("authorId", \.authorId), Field("title", \.title), Field("subtitle", \.subtitle),
            Field("year", \.year),
        ],
        indexes: [Index("books_by_author_year", on: ["authorId", "year"])],
        relations: [Relation("chapters", \.chapters, foreignKey: "bookId", \CatalogChapter.bookId)],
        ownedBy: CatalogAuthor.self)
}

struct CatalogChapter: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var bookId: String
    var number: Int64
    var text: String
    var wordCount: Int64?

    static let entity = Entity<CatalogChapter>(
        "chapters", primaryKey: "id", \.id,
        fields: [Field("bookId", \.bookId), Field("number", \.number), Field("text", \.text), Field("wordCount", \.wordCount)],
        ownedBy: CatalogBook.self)
}

/// Three authors with books and chapters, optionals set and unset.
func catalogAuthors() -> [CatalogAuthor] {
    (1...3).map { a in
        CatalogAuthor(
            // Not two spellings of one text: the property-list store refuses the
            // second (docs/SEMANTICS.md); SemanticsTests covers normalization.
            id: "author-\(a)", name: ["Zoë", "Zoe", "李雷"][a - 1], country: a == 2 ? nil : "FR",
            books: (1...2).map { b in
                let bookId = "book-\(a)-\(b)"
                return CatalogBook(
                    id: bookId, authorId: "author-\(a)", title: "Title \(a).\(b)", subtitle: b == 1 ? "A subtitle 🚀" : nil,
                    year: 1990 + Int64(a * 3 + b),
                    chapters: (1...3).map { c in
                        CatalogChapter(
                            id: "\(bookId)-\(c)", bookId: bookId, number: Int64(c), text: String(repeating: "x", count: c * 10),
                            wordCount: c == 2 ? nil : Int64(c * 100))
                    })
            })
    }
}

// MARK: - Changed versions of the same entities

/// `books` without its `subtitle` field; the rest as in ``CatalogBook``.
struct CatalogAuthorOfBookWithoutSubtitle: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var country: String?
    var books: [BookWithoutSubtitle]

    static let entity = Entity<CatalogAuthorOfBookWithoutSubtitle>(
        "authors", primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("country", \.country)],
        relations: [Relation("books", \.books, foreignKey: "authorId", \BookWithoutSubtitle.authorId)])
}

struct BookWithoutSubtitle: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var authorId: String
    var title: String
    var year: Int64
    var chapters: [CatalogChapter]

    static let entity = Entity<BookWithoutSubtitle>(
        "books", primaryKey: "id", \.id,
        fields: [Field("authorId", \.authorId), Field("title", \.title), Field("year", \.year)],
        indexes: [Index("books_by_author_year", on: ["authorId", "year"])],
        relations: [Relation("chapters", \.chapters, foreignKey: "bookId", \CatalogChapter.bookId)],
        ownedBy: CatalogAuthorOfBookWithoutSubtitle.self)
}

/// `chapters` with `wordCount` now a `Double?`, `text` now optional, a new
/// `title` field, and no owner declared.
struct ChapterChanged: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var bookId: String
    var number: Int64
    var text: String?
    var wordCount: Double?
    var title: String

    static let entity = Entity<ChapterChanged>(
        "chapters", primaryKey: "id", \.id,
        fields: [
            Field("bookId", \.bookId), Field("number", \.number), Field("text", \.text), Field("wordCount", \.wordCount),
            Field("title", \.title),
        ])
}

/// A top-level entity with a composite index, and variants of it.
struct CatalogTag: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var label: String
    var weight: Double?

    static let entity = Entity<CatalogTag>(
        "tags", primaryKey: "id", \.id,
        fields: [Field("label", \.label), Field("weight", \.weight)],
        indexes: [Index("tags_by_label_weight", on: ["label", "weight"])])
}

/// ``CatalogTag`` without its index.
struct TagWithoutIndex: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var label: String
    var weight: Double?

    static let entity = Entity<TagWithoutIndex>(
        "tags", primaryKey: "id", \.id, fields: [Field("label", \.label), Field("weight", \.weight)])
}

/// ``CatalogTag`` with the index over other fields, and a second index added.
struct TagWithOtherIndexes: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var label: String
    var weight: Double?

    static let entity = Entity<TagWithOtherIndexes>(
        "tags", primaryKey: "id", \.id,
        fields: [Field("label", \.label), Field("weight", \.weight)],
        indexes: [Index("tags_by_label_weight", on: ["weight", "label"]), Index("tags_by_weight", on: ["weight"])])
}

/// ``CatalogTag`` with its fields declared in another order.
struct TagReordered: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var weight: Double?
    var label: String

    static let entity = Entity<TagReordered>(
        "tags", primaryKey: "id", \.id,
        fields: [Field("weight", \.weight), Field("label", \.label)],
        indexes: [Index("tags_by_label_weight", on: ["label", "weight"])])
}

/// ``CatalogTag`` keyed by its label instead of its id.
struct TagKeyedByLabel: Record, Equatable {
    typealias PrimaryKey = String
    var label: String
    var id: String
    var weight: Double?

    static let entity = Entity<TagKeyedByLabel>(
        "tags", primaryKey: "label", \.label,
        fields: [Field("id", \.id), Field("weight", \.weight)],
        indexes: [Index("tags_by_label_weight", on: ["label", "weight"])])
}
