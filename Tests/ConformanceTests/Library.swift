import DAOCore
import Testing
import TestSupport
import DialogGraph
import Foundation

// A second domain, of another shape than the dialog graph: authors own books own
// chapters (three levels), String keys at the top two levels, optionals, a
// composite index, reals that use the whole range of a double.

struct AuthorRecord: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var rating: Double
    var born: Date?
    var books: [BookRecord]

    static let entity = Entity<AuthorRecord>(
        "authors",
        primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("rating", \.rating), Field("born", \.born)],
        indexes: [Index("authors_by_name", on: ["name"])],
        relations: [Relation("books", \.books, foreignKey: "authorId", \BookRecord.authorId)])
}

struct BookRecord: Record, Equatable {
    typealias PrimaryKey = String
    var isbn: String
    var authorId: String
    var title: String
    var subtitle: String?
    var year: Int64
    var price: Double?
    var chapters: [ChapterRecord]

    static let entity = Entity<BookRecord>(
        "books",
        primaryKey: "isbn", \.isbn,
        fields: [
            Field("authorId", \.authorId), Field("title", \.title), Field("subtitle", \.subtitle),
            Field("year", \.year), Field("price", \.price),
        ],
        indexes: [
            Index("books_by_author_year", on: ["authorId", "year"]), Index("books_by_title", on: ["title"]),
            // A real (optional) indexed: -0.0, NaN and nil through an index.
            Index("books_by_price", on: ["price"]),
        ],
        relations: [Relation("chapters", \.chapters, foreignKey: "bookId", \ChapterRecord.bookId)],
        ownedBy: AuthorRecord.self)
}

struct ChapterRecord: Record, Equatable {
    typealias PrimaryKey = Int64
    var number: Int64
    var bookId: String
    var heading: String
    var pages: Int64
    var weight: Double
    var draft: Bool

    static let entity = Entity<ChapterRecord>(
        "chapters",
        primaryKey: "number", \.number,
        fields: [
            Field("bookId", \.bookId), Field("heading", \.heading), Field("pages", \.pages),
            Field("weight", \.weight), Field("draft", \.draft),
        ],
        indexes: [Index("chapters_by_weight", on: ["weight"])],
        ownedBy: BookRecord.self)
}

/// Whether two values are the same to the last bit and Unicode scalar, walked
/// through their reflections (``sameBits(_:_:)``: Foundation cannot describe a
/// date whose time is NaN). (Synthesized `==` would compare text by canonical
/// equivalence, `-0.0 == 0.0` and a NaN unequal to itself.)
func identical<T>(_ a: T, _ b: T) -> Bool {
    sameBits(a, b)
}

/// ``identical(_:_:)`` and `==`: a reflection prints a date to the second, so
/// `==` adds the exact time (and the reflection the exact text and sign of zero).
func identical<T: Equatable>(_ a: T, _ b: T) -> Bool {
    // A NaN is unequal to itself under `==`: then the bits decide (Foundation
    // cannot describe a date whose time is NaN).
    guard a == b else { return sameBits(a, b) }
    return Array(String(reflecting: a).utf8) == Array(String(reflecting: b).utf8)
}

/// Whether two values are the same, walked through their reflections: reals
/// and dates by their bits (a NaN is the same as a NaN of the same bits),
/// text by UTF-8 bytes, anything without parts by its reflection.
func sameBits(_ a: Any, _ b: Any) -> Bool {
    switch (a, b) {
    case let (x as Double, y as Double): return x.bitPattern == y.bitPattern
    case let (x as Float, y as Float): return x.bitPattern == y.bitPattern
    case let (x as Date, y as Date):
        return x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern
    case let (x as String, y as String): return Array(x.utf8) == Array(y.utf8)
    case let (x as Data, y as Data): return x == y
    default: break
    }
    let left = Mirror(reflecting: a)
    let right = Mirror(reflecting: b)
    guard left.displayStyle == right.displayStyle, left.children.count == right.children.count else { return false }
    if left.children.isEmpty { return String(reflecting: a) == String(reflecting: b) }
    return zip(left.children, right.children).allSatisfy { $0.label == $1.label && sameBits($0.value, $1.value) }
}

/// Texts that are hard to keep apart or to keep at all.
enum AwkwardText {
    static let nfc = "Zo\u{EB}"
    static let nfd = "Zoe\u{308}"
    static let all: [String] = [
        "", "a", "A", "Zo\u{EB}", "Zoe\u{308}", "e\u{301}", "\u{E9}", "ae", "b", "nul\u{0}inside", "\u{0}",
        "🚀", "👩‍👩‍👧", "🇩🇪", "caf\u{E9}", "cafe\u{301}", "ß", "SS", "ı", "İ", "\u{FFFF}", "𝔘", "z",
        String(repeating: "long ", count: 3000), "tab\tnew\nline", "'\"; DROP TABLE books; --",
    ]
}

/// Reals every backend stores exactly.
enum AwkwardReal {
    static let all: [Double] = [
        0, 1, -1, 0.1, -2.5, 1e-300, Double.leastNonzeroMagnitude, -Double.leastNonzeroMagnitude,
        Double.leastNormalMagnitude, Double.greatestFiniteMagnitude, -Double.greatestFiniteMagnitude,
        .infinity, -.infinity, 9_007_199_254_740_992, 1e15 + 0.5, 0x1.fffffffffffffp-1,
    ]
}

/// A store of a generated library for a generated-query test: its three
/// storages, the generator and random source that made it (for the
/// queries), and `check`, which records a named expectation with the
/// round's seed and counts it.
final class GeneratedLibrary {
    let authors: AnyStorage<AuthorRecord>
    let books: AnyStorage<BookRecord>
    let chapters: AnyStorage<ChapterRecord>
    var generator: Generator
    var random: SplitMix64
    private let label: String
    private(set) var checks = 0

    init(_ store: any Store, generator: Generator, random: SplitMix64, label: String) throws {
        authors = try store.anyStorage(for: AuthorRecord.self)
        books = try store.anyStorage(for: BookRecord.self)
        chapters = try store.anyStorage(for: ChapterRecord.self)
        self.generator = generator
        self.random = random
        self.label = label
    }

    func check(_ condition: Bool, _ what: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
        checks += 1
        #expect(condition, "\(label): \(what())", sourceLocation: sourceLocation)
    }
}

/// Runs `body` `rounds` times, each on a fresh store of `backend` holding a
/// library generated from seed `seed + round`; returns how many checks ran.
func withGeneratedLibraries(
    _ backend: TestBackend, rounds: Int, seed: UInt64, _ body: (GeneratedLibrary) throws -> Void
) throws -> Int {
    var checks = 0
    for round in 0..<rounds {
        let roundSeed = seed &+ UInt64(round)
        var random = SplitMix64(seed: roundSeed)
        var generator = Generator(texts: Generator.texts(distinctUpToEquivalence: backend.name == "plist"))
        let library = generator.library(&random)
        try withStore(backend) { store, _ in
            let generated = try GeneratedLibrary(
                store, generator: generator, random: random, label: "seed \(roundSeed) on \(backend.name)")
            try generated.authors.persist(library)
            try body(generated)
            checks += generated.checks
        }
    }
    return checks
}
