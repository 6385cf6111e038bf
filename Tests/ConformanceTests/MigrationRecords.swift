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

// The tree with its leaf entity renamed `sections` and the leaf's foreign key
// renamed `book`.

struct AuthorS: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var country: String?
    var books: [BookS]

    static let entity = Entity<AuthorS>(
        "authors", primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("country", \.country)],
        relations: [Relation("books", \.books, foreignKey: "authorId", \BookS.authorId)])
}

struct BookS: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var authorId: String
    var title: String
    var subtitle: String?
    var year: Int64
    var chapters: [SectionS]

    static let entity = Entity<BookS>(
        "books", primaryKey: "id", \.id,
        fields: [
            Field("authorId", \.authorId), Field("title", \.title), Field("subtitle", \.subtitle),
            Field("year", \.year),
        ],
        indexes: [Index("books_by_author_year", on: ["authorId", "year"])],
        relations: [Relation("chapters", \.chapters, foreignKey: "book", \SectionS.book)],
        ownedBy: AuthorS.self)
}

struct SectionS: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var book: String
    var number: Int64
    var text: String
    var wordCount: Int64?

    static let entity = Entity<SectionS>(
        "sections", primaryKey: "id", \.id,
        fields: [Field("book", \.book), Field("number", \.number), Field("text", \.text), Field("wordCount", \.wordCount)],
        ownedBy: BookS.self)
}

// Every storage class, in two versions: a Bool added, a field renamed.

struct SampleV1: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var flag: Bool
    var amount: Double
    var at: Date
    var payload: Data
    var note: String?
    var extra: Data?

    static let entity = Entity<SampleV1>(
        "samples", primaryKey: "id", \.id,
        fields: [
            Field("flag", \.flag), Field("amount", \.amount), Field("at", \.at), Field("payload", \.payload),
            Field("note", \.note), Field("extra", \.extra),
        ],
        indexes: [Index("samples_by_amount", on: ["amount", "flag"])])
}

struct SampleV2: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var flag: Bool
    var amount: Double
    var at: Date
    var payload: Data
    var memo: String?
    var extra: Data?
    var checked: Bool

    static let entity = Entity<SampleV2>(
        "samples", primaryKey: "id", \.id,
        fields: [
            Field("flag", \.flag), Field("amount", \.amount), Field("at", \.at), Field("payload", \.payload),
            Field("memo", \.memo), Field("extra", \.extra), Field("checked", \.checked),
        ],
        indexes: [Index("samples_by_amount", on: ["amount", "flag"])])
}

/// Samples with zero, subnormal and huge doubles, fractional dates, empty and
/// binary data, NFC/NFD text, NUL, emoji and a long text.
func samples() -> [SampleV1] {
    let notes: [String?] = ["caf\u{E9}", "ange\u{301}", "a\u{0}b", "🚀👩‍👩‍👧", String(repeating: "long ", count: 5000), nil]
    let amounts: [Double] = [-1e-300, 0.0, Double.leastNonzeroMagnitude, 1.7976931348623157e308, -0.1, 42]
    var result: [SampleV1] = []
    for i in 0..<6 {
        let at = Date(timeIntervalSinceReferenceDate: 123_456.789_012_345 * Double(i) - 1e9)
        let payload = Data((0..<(i * 3)).map { UInt8(truncatingIfNeeded: $0 * 85) })
        let extra: Data? = i == 2 ? Data() : (i == 4 ? Data([0, 255, 0]) : nil)
        result.append(
            SampleV1(
                id: Int64(i) - 3, flag: i % 2 == 0, amount: amounts[i], at: at, payload: payload, note: notes[i],
                extra: extra))
    }
    return result
}

// The tree with its middle entity renamed `volumes`.

struct AuthorOfVolumes: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var country: String?
    var books: [Volume]

    static let entity = Entity<AuthorOfVolumes>(
        "authors", primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("country", \.country)],
        relations: [Relation("books", \.books, foreignKey: "authorId", \Volume.authorId)])
}

struct Volume: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var authorId: String
    var title: String
    var subtitle: String?
    var year: Int64
    var chapters: [ChapterOfVolume]

    static let entity = Entity<Volume>(
        "volumes", primaryKey: "id", \.id,
        fields: [
            Field("authorId", \.authorId), Field("title", \.title), Field("subtitle", \.subtitle),
            Field("year", \.year),
        ],
        indexes: [Index("books_by_author_year", on: ["authorId", "year"])],
        relations: [Relation("chapters", \.chapters, foreignKey: "bookId", \ChapterOfVolume.bookId)],
        ownedBy: AuthorOfVolumes.self)
}

struct ChapterOfVolume: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var bookId: String
    var number: Int64
    var text: String
    var wordCount: Int64?

    static let entity = Entity<ChapterOfVolume>(
        "chapters", primaryKey: "id", \.id,
        fields: [Field("bookId", \.bookId), Field("number", \.number), Field("text", \.text), Field("wordCount", \.wordCount)],
        ownedBy: Volume.self)
}

/// ``CatalogTag`` with an optional `color` added last.
struct TagColored: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var label: String
    var weight: Double?
    var color: String?

    static let entity = Entity<TagColored>(
        "tags", primaryKey: "id", \.id,
        fields: [Field("label", \.label), Field("weight", \.weight), Field("color", \.color)],
        indexes: [Index("tags_by_label_weight", on: ["label", "weight"])])
}
