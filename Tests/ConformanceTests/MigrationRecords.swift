import DAOCore
import Foundation

// Later versions of the catalog's record types, each reached from the first
// version by one kind of migration step. The top-level `authors` entity
// changes while its books and chapters (two more levels) stay as they are,
// so every step is checked with children in the store.

/// `authors` with a non-optional `born` field added last.
struct AuthorBorn: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var country: String?
    var born: Int64
    var books: [CatalogBook]

    static let entity = Entity<AuthorBorn>(
        "authors", primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("country", \.country), Field("born", \.born)],
        relations: [Relation("books", \.books, foreignKey: "authorId", \CatalogBook.authorId)])
}

/// `authors` without `country`.
struct AuthorNoCountry: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var books: [CatalogBook]

    static let entity = Entity<AuthorNoCountry>(
        "authors", primaryKey: "id", \.id,
        fields: [Field("name", \.name)],
        relations: [Relation("books", \.books, foreignKey: "authorId", \CatalogBook.authorId)])
}

/// `authors` with `name` renamed `fullName`.
struct AuthorFullName: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var fullName: String
    var country: String?
    var books: [CatalogBook]

    static let entity = Entity<AuthorFullName>(
        "authors", primaryKey: "id", \.id,
        fields: [Field("fullName", \.fullName), Field("country", \.country)],
        relations: [Relation("books", \.books, foreignKey: "authorId", \CatalogBook.authorId)])
}

/// `authors` with `country` now an optional calling code (an integer).
struct AuthorCountryCode: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var country: Int64?
    var books: [CatalogBook]

    static let entity = Entity<AuthorCountryCode>(
        "authors", primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("country", \.country)],
        relations: [Relation("books", \.books, foreignKey: "authorId", \CatalogBook.authorId)])
}

/// `authors` as lightweight migration can reach it: `country` dropped, an
/// optional `website` added, an index on `name` added.
struct AuthorLight: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var website: String?
    var books: [CatalogBook]

    static let entity = Entity<AuthorLight>(
        "authors", primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("website", \.website)],
        indexes: [Index("authors_by_name", on: ["name"])],
        relations: [Relation("books", \.books, foreignKey: "authorId", \CatalogBook.authorId)])
}

/// ``CatalogTag`` stored under another entity name.
struct LabelTag: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var label: String
    var weight: Double?

    static let entity = Entity<LabelTag>(
        "labels", primaryKey: "id", \.id,
        fields: [Field("label", \.label), Field("weight", \.weight)],
        indexes: [Index("tags_by_label_weight", on: ["label", "weight"])])
}

/// ``CatalogTag`` with a second index.
struct TagWithWeightIndex: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var label: String
    var weight: Double?

    static let entity = Entity<TagWithWeightIndex>(
        "tags", primaryKey: "id", \.id,
        fields: [Field("label", \.label), Field("weight", \.weight)],
        indexes: [Index("tags_by_label_weight", on: ["label", "weight"]), Index("tags_by_weight", on: ["weight"])])
}

// The whole tree in a new version, for the general step: a chapter gains a
// `words` count computed from its text, a book's `year` becomes a `Date`.

struct AuthorV2: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var country: String?
    var books: [BookV2]

    static let entity = Entity<AuthorV2>(
        "authors", primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("country", \.country)],
        relations: [Relation("books", \.books, foreignKey: "authorId", \BookV2.authorId)])
}

struct BookV2: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var authorId: String
    var title: String
    var subtitle: String?
    var published: Date
    var chapters: [ChapterV2]

    static let entity = Entity<BookV2>(
        "books", primaryKey: "id", \.id,
        fields: [
            Field("authorId", \.authorId), Field("title", \.title), Field("subtitle", \.subtitle),
            Field("published", \.published),
        ],
        indexes: [Index("books_by_author_year", on: ["authorId", "published"])],
        relations: [Relation("chapters", \.chapters, foreignKey: "bookId", \ChapterV2.bookId)],
        ownedBy: AuthorV2.self)
}

struct ChapterV2: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var bookId: String
    var number: Int64
    var text: String
    var wordCount: Int64?
    var words: Int64

    static let entity = Entity<ChapterV2>(
        "chapters", primaryKey: "id", \.id,
        fields: [
            Field("bookId", \.bookId), Field("number", \.number), Field("text", \.text),
            Field("wordCount", \.wordCount), Field("words", \.words),
        ],
        ownedBy: BookV2.self)
}
