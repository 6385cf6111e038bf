import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

// The differential test: generated libraries (awkward text and reals, optionals,
// three levels, String and integer keys) and generated queries (predicate
// templates over fields and relations with random constants, sorts, limits;
// read, count, erase(where:), re-persisting parents), each answered by every
// backend and by a reference model written here from docs/SEMANTICS.md, not
// from the library's code. Every answer must be identical to the model's, to
// the last bit and Unicode scalar.
//
// `DAO_DIFFERENTIAL_ROUNDS` sets the number of rounds (default 6, a few
// thousand checks); `DAO_DIFFERENTIAL_SEED` the first round's seed. A failure
// names the seed of its round.
//
// Every generated read runs twice: the second is always bound from the plan
// the first kept for its shape; the first is planned cold (the entity's plans
// forgotten) every other time, and otherwise bound from a plan an earlier
// query of the same shape, with other constants, left behind.

@Suite("Conformance: every backend against the documented semantics, on generated data and queries")
struct DifferentialTests {
    static var rounds: Int {
        ProcessInfo.processInfo.environment["DAO_DIFFERENTIAL_ROUNDS"].flatMap(Int.init) ?? 6
    }
    static var firstSeed: UInt64 {
        ProcessInfo.processInfo.environment["DAO_DIFFERENTIAL_SEED"].flatMap { UInt64($0) } ?? 20_261_122
    }

    @Test("generated data and queries", arguments: allBackends)
    func differential(backend: TestBackend) throws {
        var checks = 0
        for round in 0..<Self.rounds {
            let seed = Self.firstSeed &+ UInt64(round)
            checks += try runRound(backend: backend, seed: seed)
        }
        #expect(checks > 300 * Self.rounds)
    }

    private func runRound(backend: TestBackend, seed: UInt64) throws -> Int {
        var random = SplitMix64(seed: seed)
        // Binary property lists store canonically equivalent strings once (a
        // documented limitation): that backend gets one spelling of each text.
        let texts = Generator.texts(distinctUpToEquivalence: backend.name == "plist")
        var generator = Generator(texts: texts, reals: Generator.reals(for: backend), dates: Generator.dates(for: backend))
        var model = Model(authors: generator.library(&random))
        var checks = 0
        try withStore(backend) { store, _ in
            let authors = try store.anyStorage(for: AuthorRecord.self)
            let books = try store.anyStorage(for: BookRecord.self)
            let chapters = try store.anyStorage(for: ChapterRecord.self)
            try authors.persist(model.authorList)
            func check(_ condition: Bool, _ what: @autoclosure () -> String) {
                checks += 1
                #expect(condition, "seed \(seed) on \(backend.name): \(what())")
            }
            // Whether the first read of a query is planned cold; its own
            // generator, so the data and queries stay those of the seed.
            var coldRandom = SplitMix64(seed: seed ^ 0xC01D)
            func readTwice<R: Record>(_ storage: some Storage<R>, _ query: Query<R>) throws -> (first: [R], again: [R]) {
                if coldRandom.next() % 2 == 0 { R.entity.forgetQueryPlans() }
                let first = try storage.read(query)
                return (first, try storage.read(query))
            }
            check(identical(try authors.readAll(), model.authorList), "the library as persisted")
            for step in 0..<400 {
                let choice = random.next() % 100
                switch choice {
                case 0..<40:
                    let query = generator.bookQuery(&random)
                    let (got, again) = try readTwice(books, query.query)
                    let expected = model.answer(query, over: model.books)
                    check(identical(got, expected), "books \(query.name): \(difference(got, expected))")
                    check(identical(again, expected), "books \(query.name), read again: \(difference(again, expected))")
                case 40..<55:
                    let query = generator.chapterQuery(&random)
                    let (got, again) = try readTwice(chapters, query.query)
                    let expected = model.answer(query, over: model.chapters)
                    check(identical(got, expected), "chapters \(query.name): \(difference(got, expected))")
                    check(identical(again, expected), "chapters \(query.name), read again: \(difference(again, expected))")
                case 55..<65:
                    let query = generator.authorQuery(&random)
                    let (got, again) = try readTwice(authors, query.query)
                    let expected = model.answer(query, over: model.authorList)
                    check(identical(got, expected), "authors \(query.name): \(difference(got, expected))")
                    check(identical(again, expected), "authors \(query.name), read again: \(difference(again, expected))")
                case 65..<85:
                    let query = generator.bookQuery(&random)
                    let got = try books.count(where: query.query.predicate)
                    check(got == model.books.filter(query.reference).count, "count books \(query.name)")
                case 85..<90:
                    let query = generator.bookQuery(&random)
                    let erased = try books.erase(where: query.query.predicate ?? #Predicate { _ in true })
                    let expected = model.eraseBooks(where: query.reference)
                    check(erased == expected, "erase books \(query.name): \(erased) instead of \(expected)")
                    check(identical(try authors.readAll(), model.authorList), "after erasing books \(query.name)")
                case 90..<93:
                    let query = generator.chapterQuery(&random)
                    let erased = try chapters.erase(where: query.query.predicate ?? #Predicate { _ in true })
                    let expected = model.eraseChapters(where: query.reference)
                    check(erased == expected, "erase chapters \(query.name): \(erased) instead of \(expected)")
                    check(identical(try authors.readAll(), model.authorList), "after erasing chapters \(query.name)")
                default:
                    // Re-persist an author with some books dropped, added or changed.
                    var author = generator.author(&random, index: step)
                    if let existing = model.authorList.randomElement(using: &random), random.next() % 2 == 0 {
                        author.id = existing.id
                        author.books = existing.books.filter { _ in random.next() % 3 != 0 }
                        for index in author.books.indices { author.books[index].authorId = author.id }
                        author.books += generator.author(&random, index: step, id: author.id).books
                    }
                    try authors.persist(author)
                    model.persist(author)
                    check(identical(try authors.readAll(), model.authorList), "after persisting an author")
                }
            }
        }
        return checks
    }
}

// MARK: - The reference model

/// A query with the reference's answer for one record.
struct ModelQuery<R: Record> {
    let name: String
    let query: Query<R>
    let reference: (R) -> Bool
    /// The reference order: `true` when `a` comes before `b` (ties broken by key).
    let order: ((R, R) -> ComparisonResult)?
}

/// What every backend must hold and answer, computed from the documented
/// semantics: text keys and comparisons by UTF-8 bytes, children in key order.
struct Model {
    private var byId: [[UInt8]: AuthorRecord] = [:]

    init(authors: [AuthorRecord]) {
        for author in authors { persist(author) }
    }

    var authorList: [AuthorRecord] {
        byId.keys.sorted { $0.lexicographicallyPrecedes($1) }.compactMap { byId[$0] }
    }

    var books: [BookRecord] {
        authorList.flatMap(\.books).sorted { bytes($0.isbn).lexicographicallyPrecedes(bytes($1.isbn)) }
    }

    var chapters: [ChapterRecord] {
        books.flatMap(\.chapters).sorted { $0.number < $1.number }
    }

    /// Upserts `author` with exactly its books, one after another as a storage
    /// writes them: a book or chapter whose key is stored under another parent
    /// moves; of duplicate keys the last wins.
    mutating func persist(_ author: AuthorRecord) {
        let id = bytes(author.id)
        var stored = byId[id] ?? author
        stored.name = author.name
        stored.rating = author.rating
        stored.born = author.born
        stored.books = []
        byId[id] = stored
        for book in author.books {
            let isbn = bytes(book.isbn)
            // The book leaves wherever it was.
            for (key, var other) in byId {
                other.books.removeAll { bytes($0.isbn) == isbn }
                byId[key] = other
            }
            var placed = book
            placed.chapters = []
            for chapter in book.chapters {
                for (key, var other) in byId {
                    for index in other.books.indices {
                        other.books[index].chapters.removeAll { $0.number == chapter.number }
                    }
                    byId[key] = other
                }
                placed.chapters.removeAll { $0.number == chapter.number }
                placed.chapters.append(chapter)
            }
            placed.chapters.sort { $0.number < $1.number }
            byId[id]?.books.append(placed)
        }
        byId[id]?.books.sort { bytes($0.isbn).lexicographicallyPrecedes(bytes($1.isbn)) }
    }

    mutating func eraseBooks(where test: (BookRecord) -> Bool) -> Int {
        var erased = 0
        for (id, var author) in byId {
            let before = author.books.count
            author.books.removeAll(where: test)
            erased += before - author.books.count
            byId[id] = author
        }
        return erased
    }

    mutating func eraseChapters(where test: (ChapterRecord) -> Bool) -> Int {
        var erased = 0
        for (id, var author) in byId {
            for index in author.books.indices {
                let before = author.books[index].chapters.count
                author.books[index].chapters.removeAll(where: test)
                erased += before - author.books[index].chapters.count
            }
            byId[id] = author
        }
        return erased
    }

    /// `records` (in key order) filtered, sorted by the query's order then key, limited.
    func answer<R: Record>(_ query: ModelQuery<R>, over records: [R]) -> [R] {
        var matches = records.filter(query.reference)
        if let order = query.order {
            // A stable sort keeps key order among ties.
            matches = stableSorted(matches) { order($0, $1) == .orderedAscending }
        }
        if let limit = query.query.limit { matches = Array(matches.prefix(limit)) }
        return matches
    }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// `records` sorted by `before`, equal elements in their original order.
func stableSorted<T>(_ records: [T], by before: (T, T) -> Bool) -> [T] {
    records.enumerated().sorted { lhs, rhs in
        if before(lhs.element, rhs.element) { return true }
        if before(rhs.element, lhs.element) { return false }
        return lhs.offset < rhs.offset
    }.map(\.element)
}

/// The documented meaning of text comparisons: by Unicode scalars (UTF-8 bytes).
enum Bytes {
    static func equal(_ a: String, _ b: String) -> Bool { bytes(a) == bytes(b) }
    static func less(_ a: String, _ b: String) -> Bool { bytes(a).lexicographicallyPrecedes(bytes(b)) }
    static func contains(_ a: String, _ b: String) -> Bool {
        let haystack = bytes(a)
        let needle = bytes(b)
        guard !needle.isEmpty else { return true }
        guard needle.count <= haystack.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return true
        }
        return false
    }
    static func hasPrefix(_ a: String, _ b: String) -> Bool { bytes(a).starts(with: bytes(b)) }
}

/// Orders two reals the documented way (nil first): by value, `-0.0` tied
/// with `0.0`, every NaN after `+infinity` and tied with every NaN.
func compareReal(_ a: Double?, _ b: Double?) -> ComparisonResult {
    switch (a, b) {
    case (nil, nil): .orderedSame
    case (nil, _): .orderedAscending
    case (_, nil): .orderedDescending
    case let (a?, b?) where a.isNaN || b.isNaN:
        a.isNaN == b.isNaN ? .orderedSame : a.isNaN ? .orderedDescending : .orderedAscending
    case let (a?, b?): a < b ? .orderedAscending : b < a ? .orderedDescending : .orderedSame
    }
}

/// Orders two values the documented way (nil first), as a `ComparisonResult`.
func compare<T: Comparable>(_ a: T?, _ b: T?) -> ComparisonResult {
    switch (a, b) {
    case (nil, nil): .orderedSame
    case (nil, _): .orderedAscending
    case (_, nil): .orderedDescending
    case let (a?, b?): a < b ? .orderedAscending : b < a ? .orderedDescending : .orderedSame
    }
}

func reversed(_ result: ComparisonResult) -> ComparisonResult {
    switch result {
    case .orderedAscending: .orderedDescending
    case .orderedDescending: .orderedAscending
    case .orderedSame: .orderedSame
    }
}

// MARK: - Generating data and queries

struct Generator {
    let texts: [String]
    /// The reals records hold (``reals(for:)``).
    let reals: [Double]
    /// The seconds of the dates records hold: the same reals, but for the
    /// property list's `-0.0`, which it refuses in a date.
    let dates: [Double]
    /// The reals queries compare with: every awkward one, `-0.0` and NaN.
    let constants: [Double] = AwkwardReal.all + [-0.0, .nan]
    /// Short texts for keys and indexed fields (LMDB keys hold at most 511 bytes).
    let shortTexts: [String]
    let needles: [String] = ["", "e", "\u{308}", "\u{EB}", "Zo", "🚀", "\u{0}", "a", "é", "e\u{301}", "long", "👩"]
    var nextChapter: Int64 = 0
    /// The keys of the authors and books generated so far, for queries that
    /// name a parent that exists.
    var authorIds: [String] = []
    var isbns: [String] = []

    init(texts: [String], reals: [Double] = AwkwardReal.all, dates: [Double]? = nil) {
        self.texts = texts
        self.reals = reals
        self.dates = dates ?? reals
        shortTexts = texts.filter { $0.utf8.count <= 64 }
    }

    /// The seconds of a backend's dates: its reals, without `-0.0` on the
    /// property list (docs/SEMANTICS.md, "Limits of one backend").
    static func dates(for backend: TestBackend) -> [Double] {
        let reals = reals(for: backend)
        guard backend.name == "plist" else { return reals }
        return reals.filter { $0.bitPattern != (-0.0).bitPattern }
    }

    /// The reals a backend's records hold: the awkward ones (both infinities,
    /// subnormals of both signs, the greatest magnitudes), `-0.0`, the
    /// canonical NaN and, where the backend keeps a NaN's sign and payload,
    /// other NaNs; each several times, so that ties and NaNs are common.
    static func reals(for backend: TestBackend) -> [Double] {
        var reals = AwkwardReal.all + [.nan, .nan, 0, 0, -0.0, -0.0, -0.0]
        if backend.keepsNaNPayloads { reals += [-Double.nan, Double(bitPattern: 0x7FF0_0000_0000_0001), Double(bitPattern: 0xFFF4_0000_0000_00FF)] }
        return reals
    }

    /// The awkward texts, and for a backend that merges canonically equivalent
    /// strings, only the first spelling of each.
    static func texts(distinctUpToEquivalence: Bool) -> [String] {
        let all = AwkwardText.all + ["Zoë Smith", "Zoe\u{308} Smith", "émile", "e\u{301}mile", "Bob", "bob"]
        guard distinctUpToEquivalence else { return all }
        var kept: [String] = []
        for text in all where !kept.contains(where: { $0 == text }) { kept.append(text) }
        return kept
    }

    func pick<T>(_ values: [T], _ random: inout SplitMix64) -> T {
        values[Int(random.next() % UInt64(values.count))]
    }

    /// A real for a record.
    func real(_ random: inout SplitMix64) -> Double { pick(reals, &random) }

    /// A real for a query's constant.
    func constant(_ random: inout SplitMix64) -> Double { pick(constants, &random) }

    mutating func author(_ random: inout SplitMix64, index: Int, id: String? = nil) -> AuthorRecord {
        let id = id ?? pick(shortTexts, &random) + (random.next() % 2 == 0 ? "" : "\(index % 5)")
        var books: [BookRecord] = []
        for _ in 0..<Int(random.next() % 4) {
            let isbn = pick(shortTexts, &random) + "-\(random.next() % 40)"
            isbns.append(isbn)
            var chapters: [ChapterRecord] = []
            for _ in 0..<Int(random.next() % 4) {
                nextChapter += 1
                let number = random.next() % 10 == 0 ? pick([Int64.min, .max, -1, 0], &random) : nextChapter * 7919 % 100_003 - 50_000
                chapters.append(
                    ChapterRecord(
                        number: number, bookId: isbn, heading: pick(texts, &random), pages: Int64(random.next() % 9),
                        weight: real(&random), draft: random.next() % 2 == 0))
            }
            books.append(
                BookRecord(
                    isbn: isbn, authorId: id, title: pick(shortTexts, &random),
                    subtitle: random.next() % 3 == 0 ? nil : pick(texts, &random),
                    year: Int64(1990 + random.next() % 8), price: random.next() % 4 == 0 ? nil : real(&random),
                    chapters: chapters))
        }
        authorIds.append(id)
        return AuthorRecord(
            id: id, name: pick(shortTexts, &random), rating: real(&random),
            born: random.next() % 2 == 0 ? nil : Date(timeIntervalSinceReferenceDate: pick(dates, &random)),
            books: books)
    }

    mutating func library(_ random: inout SplitMix64) -> [AuthorRecord] {
        // Later duplicates of a key replace earlier ones, as one batch would.
        var model = Model(authors: [])
        for index in 0..<12 { model.persist(author(&random, index: index)) }
        return model.authorList
    }

    // MARK: Queries

    func limit(_ random: inout SplitMix64) -> Int? {
        random.next() % 3 == 0 ? Int(random.next() % 6) : nil
    }

    func bookQuery(_ random: inout SplitMix64) -> ModelQuery<BookRecord> {
        let t = pick(shortTexts, &random)
        let u = pick(shortTexts, &random)
        let n = pick(needles, &random)
        let year = Int64(1990 + random.next() % 8)
        let count = Int(random.next() % 4)
        let price: Double? = random.next() % 4 == 0 ? nil : constant(&random)
        let isbn = pick(shortTexts, &random) + "-\(random.next() % 40)"
        let predicate: (String, Predicate<BookRecord>, (BookRecord) -> Bool)
        // A parent that exists, for equalities besides the parent's key.
        let author = authorIds.isEmpty ? t : pick(authorIds, &random)
        switch random.next() % 25 {
        case 0: predicate = ("authorId == \(t.debugDescription)", #Predicate { $0.authorId == t }, { Bytes.equal($0.authorId, t) })
        case 1: predicate = ("title == \(t.debugDescription)", #Predicate { $0.title == t }, { Bytes.equal($0.title, t) })
        case 2: predicate = ("title != \(t.debugDescription)", #Predicate { $0.title != t }, { !Bytes.equal($0.title, t) })
        case 3: predicate = ("title < \(t.debugDescription)", #Predicate { $0.title < t }, { Bytes.less($0.title, t) })
        case 4: predicate = ("title >= \(t.debugDescription)", #Predicate { $0.title >= t }, { !Bytes.less($0.title, t) })
        case 5: predicate = ("title contains \(n.debugDescription)", #Predicate { $0.title.contains(n) }, { Bytes.contains($0.title, n) })
        case 6: predicate = ("title starts with \(n.debugDescription)", #Predicate { $0.title.starts(with: n) }, { Bytes.hasPrefix($0.title, n) })
        case 7: predicate = ("year in (\(year), \(year + 2)]", #Predicate { $0.year > year && $0.year <= year + 2 }, { $0.year > year && $0.year <= year + 2 })
        case 8: predicate = ("price == \(String(describing: price))", #Predicate { $0.price == price }, { $0.price == price })
        case 9: predicate = ("price != nil", #Predicate { $0.price != nil }, { $0.price != nil })
        case 10: predicate = ("subtitle == \(t.debugDescription)", #Predicate { $0.subtitle == t }, { $0.subtitle.map { Bytes.equal($0, t) } ?? false })
        case 11: predicate = ("authorId == \(t.debugDescription) && year == \(year)", #Predicate { $0.authorId == t && $0.year == year }, { Bytes.equal($0.authorId, t) && $0.year == year })
        case 12: predicate = ("no chapters", #Predicate { $0.chapters.isEmpty }, { $0.chapters.isEmpty })
        case 13: predicate = ("chapters >= \(count)", #Predicate { $0.chapters.count >= count }, { $0.chapters.count >= count })
        case 14: predicate = ("authorId == \(t.debugDescription) && no chapters", #Predicate { $0.authorId == t && $0.chapters.isEmpty }, { Bytes.equal($0.authorId, t) && $0.chapters.isEmpty })
        case 15: predicate = ("title == \(t.debugDescription) || year < \(year)", #Predicate { $0.title == t || $0.year < year }, { Bytes.equal($0.title, t) || $0.year < year })
        case 16: predicate = ("!(title contains \(n.debugDescription))", #Predicate { !$0.title.contains(n) }, { !Bytes.contains($0.title, n) })
        case 17: predicate = ("isbn in [\(isbn.debugDescription), \(t.debugDescription)]", #Predicate { [isbn, t].contains($0.isbn) }, { Bytes.equal($0.isbn, isbn) || Bytes.equal($0.isbn, t) })
        case 18: predicate = ("isbn == \(isbn.debugDescription)", #Predicate { $0.isbn == isbn }, { Bytes.equal($0.isbn, isbn) })
        case 19: predicate = ("title == authorId", #Predicate { $0.title == $0.authorId }, { Bytes.equal($0.title, $0.authorId) })
        case 20: predicate = ("title > \(t.debugDescription) && title <= \(u.debugDescription)", #Predicate { $0.title > t && $0.title <= u }, { Bytes.less(t, $0.title) && !Bytes.less(u, $0.title) })
        case 21: predicate = ("authorId == \(author.debugDescription) && price == \(String(describing: price))", #Predicate { $0.authorId == author && $0.price == price }, { Bytes.equal($0.authorId, author) && $0.price == price })
        case 22: predicate = ("authorId == \(author.debugDescription) && subtitle == nil", #Predicate { $0.authorId == author && $0.subtitle == nil }, { Bytes.equal($0.authorId, author) && $0.subtitle == nil })
        case 23: predicate = ("authorId == \(author.debugDescription) && title == \(t.debugDescription)", #Predicate { $0.authorId == author && $0.title == t }, { Bytes.equal($0.authorId, author) && Bytes.equal($0.title, t) })
        default: predicate = ("a chapter named \(t.debugDescription) (via a relation)", #Predicate { $0.chapters.contains { $0.heading == t } }, { $0.chapters.contains { $0.heading == t } })
        }
        let sorts: [(String, [SortDescriptor<BookRecord>], ((BookRecord, BookRecord) -> ComparisonResult)?)] = [
            ("", [], nil),
            ("by year", [SortDescriptor(\.year)], { compare($0.year, $1.year) }),
            ("by year desc, price", [SortDescriptor(\.year, order: .reverse), SortDescriptor(\.price)],
             { let y = reversed(compare($0.year, $1.year)); return y != .orderedSame ? y : compareReal($0.price, $1.price) }),
            ("by chapter count desc", [SortDescriptor(\.chapters.count, order: .reverse)], { reversed(compare($0.chapters.count, $1.chapters.count)) }),
            // Without a comparator (as on Linux) by scalars; with Foundation's
            // default one (as on macOS) as Foundation compares.
            ("by title", [SortDescriptor(\.title)],
             SortDescriptor<BookRecord>(\.title).stringComparator == nil
                ? { Bytes.less($0.title, $1.title) ? .orderedAscending : Bytes.less($1.title, $0.title) ? .orderedDescending : .orderedSame }
                : { SortDescriptor<BookRecord>(\.title).compare($0, $1) }),
            ("by title, lexical comparator (Foundation)", [SortDescriptor(\.title, comparator: .lexical)],
             { SortDescriptor<BookRecord>(\.title, comparator: .lexical).compare($0, $1) }),
            ("by subtitle desc", [SortDescriptor(\.subtitle, order: .reverse)],
             { lhs, rhs in
                 switch (lhs.subtitle, rhs.subtitle) {
                 case (nil, nil): return .orderedSame
                 case (nil, _): return .orderedDescending
                 case (_, nil): return .orderedAscending
                 case let (a?, b?): return Bytes.less(b, a) ? .orderedAscending : Bytes.less(a, b) ? .orderedDescending : .orderedSame
                 }
             }),
        ]
        let sort = pick(sorts, &random)
        let limit = limit(&random)
        return ModelQuery(
            name: "\(predicate.0) \(sort.0) limit \(String(describing: limit))",
            query: Query(where: predicate.1, sortedBy: sort.1, limit: limit), reference: predicate.2, order: sort.2)
    }

    func chapterQuery(_ random: inout SplitMix64) -> ModelQuery<ChapterRecord> {
        let t = pick(texts, &random)
        let n = pick(needles, &random)
        let w = constant(&random)
        let pages = Int64(random.next() % 9)
        let book = pick(shortTexts, &random) + "-\(random.next() % 40)"
        let predicate: (String, Predicate<ChapterRecord>, (ChapterRecord) -> Bool)
        // A book that exists, for equalities besides the parent's key.
        let known = isbns.isEmpty ? book : pick(isbns, &random)
        switch random.next() % 14 {
        case 0: predicate = ("weight < \(w)", #Predicate { $0.weight < w }, { $0.weight < w })
        case 1: predicate = ("weight == \(w)", #Predicate { $0.weight == w }, { $0.weight == w })
        case 2: predicate = ("weight >= \(w)", #Predicate { $0.weight >= w }, { $0.weight >= w })
        case 11: predicate = ("weight > \(w)", #Predicate { $0.weight > w }, { $0.weight > w })
        case 12: predicate = ("weight != \(w)", #Predicate { $0.weight != w }, { $0.weight != w })
        case 13: predicate = ("!(weight <= \(w))", #Predicate { !($0.weight <= w) }, { !($0.weight <= w) })
        case 3: predicate = ("heading == \(t.debugDescription)", #Predicate { $0.heading == t }, { Bytes.equal($0.heading, t) })
        case 4: predicate = ("heading contains \(n.debugDescription)", #Predicate { $0.heading.contains(n) }, { Bytes.contains($0.heading, n) })
        case 5: predicate = ("bookId == \(book.debugDescription) && draft", #Predicate { $0.bookId == book && $0.draft }, { Bytes.equal($0.bookId, book) && $0.draft })
        case 6: predicate = ("pages >= \(pages) && !draft", #Predicate { $0.pages >= pages && !$0.draft }, { $0.pages >= pages && !$0.draft })
        case 7: predicate = ("number < 0", #Predicate { $0.number < 0 }, { $0.number < 0 })
        case 8: predicate = ("bookId == \(known.debugDescription) && pages == \(pages)", #Predicate { $0.bookId == known && $0.pages == pages }, { Bytes.equal($0.bookId, known) && $0.pages == pages })
        case 9: predicate = ("bookId == \(known.debugDescription) && weight == \(w) && !draft", #Predicate { $0.bookId == known && $0.weight == w && !$0.draft }, { Bytes.equal($0.bookId, known) && $0.weight == w && !$0.draft })
        default:
            let length = Int(pages) * 100
            predicate = ("heading length > \(length) (computed)", #Predicate { $0.heading.count > length }, { $0.heading.count > length })
        }
        let sorts: [(String, [SortDescriptor<ChapterRecord>], ((ChapterRecord, ChapterRecord) -> ComparisonResult)?)] = [
            ("", [], nil),
            ("by weight", [SortDescriptor(\.weight)], { compareReal($0.weight, $1.weight) }),
            ("by weight desc", [SortDescriptor(\.weight, order: .reverse)], { reversed(compareReal($0.weight, $1.weight)) }),
            ("by pages desc", [SortDescriptor(\.pages, order: .reverse)], { reversed(compare($0.pages, $1.pages)) }),
        ]
        let sort = pick(sorts, &random)
        let limit = limit(&random)
        return ModelQuery(
            name: "\(predicate.0) \(sort.0) limit \(String(describing: limit))",
            query: Query(where: predicate.1, sortedBy: sort.1, limit: limit), reference: predicate.2, order: sort.2)
    }

    func authorQuery(_ random: inout SplitMix64) -> ModelQuery<AuthorRecord> {
        let t = pick(shortTexts, &random)
        let r = constant(&random)
        let count = Int(random.next() % 4)
        let predicate: (String, Predicate<AuthorRecord>, (AuthorRecord) -> Bool)
        switch random.next() % 6 {
        case 0: predicate = ("rating >= \(r)", #Predicate { $0.rating >= r }, { $0.rating >= r })
        case 1: predicate = ("name == \(t.debugDescription)", #Predicate { $0.name == t }, { Bytes.equal($0.name, t) })
        case 2: predicate = ("id == \(t.debugDescription)", #Predicate { $0.id == t }, { Bytes.equal($0.id, t) })
        case 3: predicate = ("books > \(count)", #Predicate { $0.books.count > count }, { $0.books.count > count })
        case 4: predicate = ("born == nil", #Predicate { $0.born == nil }, { $0.born == nil })
        default: predicate = ("name < \(t.debugDescription)", #Predicate { $0.name < t }, { Bytes.less($0.name, t) })
        }
        let sorts: [(String, [SortDescriptor<AuthorRecord>], ((AuthorRecord, AuthorRecord) -> ComparisonResult)?)] = [
            ("", [], nil),
            ("by rating desc", [SortDescriptor(\.rating, order: .reverse)], { reversed(compareReal($0.rating, $1.rating)) }),
            ("by born", [SortDescriptor(\.born)], {
                compareReal($0.born?.timeIntervalSinceReferenceDate, $1.born?.timeIntervalSinceReferenceDate)
            }),
        ]
        let sort = pick(sorts, &random)
        let limit = limit(&random)
        return ModelQuery(
            name: "\(predicate.0) \(sort.0) limit \(String(describing: limit))",
            query: Query(where: predicate.1, sortedBy: sort.1, limit: limit), reference: predicate.2, order: sort.2)
    }
}
