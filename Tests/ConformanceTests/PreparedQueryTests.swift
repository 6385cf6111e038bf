import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

// Prepared queries against the same queries written with constants: on every
// backend, over generated data (the library of the differential test: String
// keys, optionals, a composite index, three levels of relations; and gadgets:
// UUID, Data, Date, Bool, optional fields, a composite index) and generated
// values of the parameters (seeded), every prepared query's answer (read as a
// call, which LMDB, SQLite and the file store answer from the template when it
// fits, and as the call's query), count and
// erase must be identical to the constant query's, to the last bit and
// Unicode scalar. Values include NaN, -0.0, infinities, `nil`, empty text and
// canonically equivalent spellings, so a call may need another template than
// the one before; plans are forgotten now and then between calls.

/// A record with a field of every other type the core stores.
struct GadgetRecord: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var serial: UUID
    var tag: Data
    var seen: Date
    var battery: Double?
    var active: Bool
    var level: Int64
    var note: String?

    static let entity = Entity<GadgetRecord>(
        "gadgets",
        primaryKey: "id", \.id,
        fields: [
            Field("serial", \.serial), Field("tag", \.tag), Field("seen", \.seen), Field("battery", \.battery),
            Field("active", \.active), Field("level", \.level), Field("note", \.note),
        ],
        indexes: [Index("gadgets_by_active_level", on: ["active", "level"]), Index("gadgets_by_serial", on: ["serial"])])
}

private typealias E = PredicateExpressions

/// One prepared query of a round and how to draw values for it: the answer
/// with the values bound and the same query with them written in.
struct PreparedCase<R: Record> {
    let name: String
    let draw: (inout SplitMix64) -> (values: String, prepared: PreparedQueryCall<R>, bound: Predicate<R>, constant: Query<R>)
}

@Suite("Conformance: prepared queries answer as the same queries with constants")
struct PreparedQueryTests {
    static var rounds: Int {
        ProcessInfo.processInfo.environment["DAO_DIFFERENTIAL_ROUNDS"].flatMap(Int.init) ?? 6
    }
    static let firstSeed: UInt64 = 20_261_127

    static let reals: [Double] = AwkwardReal.all + [.nan, -0.0, -.nan]
    static let uuids: [UUID] = [
        UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)),
        UUID(uuid: (255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
        UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)),
    ]
    static let tags: [Data] = [Data(), Data([0]), Data([0, 1]), Data([255]), Data("é".utf8)]

    @Test("generated data, values and prepared queries", arguments: allBackends)
    func prepared(backend: TestBackend) throws {
        var checks = 0
        for round in 0..<Self.rounds {
            checks += try runRound(backend: backend, seed: Self.firstSeed &+ UInt64(round))
        }
        #expect(checks > 400 * Self.rounds)
    }

    private func runRound(backend: TestBackend, seed: UInt64) throws -> Int {
        var random = SplitMix64(seed: seed)
        let texts = Generator.texts(distinctUpToEquivalence: backend.name == "plist")
        var generator = Generator(texts: texts, reals: Generator.reals(for: backend), dates: Generator.dates(for: backend))
        let library = generator.library(&random)
        let gadgets = Self.gadgets(&random, texts: generator.shortTexts)
        var checks = 0
        try withStore(backend) { store, _ in
            let authors = try store.anyStorage(for: AuthorRecord.self)
            let books = try store.anyStorage(for: BookRecord.self)
            let chapters = try store.anyStorage(for: ChapterRecord.self)
            let gadgetStorage = try store.anyStorage(for: GadgetRecord.self)
            try authors.persist(library)
            try gadgetStorage.persist(gadgets)
            func check(_ condition: Bool, _ what: @autoclosure () -> String) {
                checks += 1
                #expect(condition, "seed \(seed) on \(backend.name): \(what())")
            }
            func run<R: Record>(_ storage: some Storage<R>, _ cases: [PreparedCase<R>], calls: Int) throws {
                for _ in 0..<calls {
                    let chosen = cases[Int(random.next() % UInt64(cases.count))]
                    if random.next() % 8 == 0 { R.entity.forgetQueryPlans() }
                    let (values, prepared, bound, constant) = chosen.draw(&random)
                    // The call as a storage answers it (LMDB binds its
                    // plan from the template), and its query.
                    let got = try storage.read(prepared)
                    let viaQuery = try storage.read(prepared.query)
                    let expected = try storage.read(constant)
                    check(identical(got, expected), "\(chosen.name) with \(values): \(difference(got, expected))")
                    check(
                        identical(viaQuery, expected),
                        "\(chosen.name) with \(values), as a query: \(difference(viaQuery, expected))")
                    let count = try storage.count(where: bound)
                    let expectedCount = try storage.count(where: constant.predicate)
                    check(count == expectedCount, "count \(chosen.name) with \(values): \(count) != \(expectedCount)")
                }
            }
            let storedBooks = library.flatMap(\.books)
            try run(books, try Self.bookCases(generator, storedBooks, &random), calls: 160)
            try run(chapters, try Self.chapterCases(generator, storedBooks.flatMap(\.chapters), &random), calls: 80)
            try run(authors, try Self.authorCases(generator, &random), calls: 40)
            try run(gadgetStorage, try Self.gadgetCases(generator, &random), calls: 120)
            // Erasing with a prepared predicate erases what the constant one counts.
            let byTitle = try PreparedQuery(where: #Predicate<BookRecord, String> { book, title in book.title >= title })
            let title = generator.pick(generator.shortTexts, &random)
            let expected = try books.count(where: #Predicate { $0.title >= title })
            let erased = try books.erase(where: byTitle.predicate(title))
            check(erased == expected, "erase title >= \(title.debugDescription): \(erased) != \(expected)")
            check(try books.count(where: #Predicate { $0.title >= title }) == 0, "erased title >= \(title.debugDescription)")
        }
        return checks
    }

    // MARK: Cases

    static func sort<R>(_ options: [[SortDescriptor<R>]], _ random: inout SplitMix64) -> [SortDescriptor<R>] {
        options[Int(random.next() % UInt64(options.count))]
    }

    static func limit(_ random: inout SplitMix64) -> Int? {
        random.next() % 3 == 0 ? Int(random.next() % 6) : nil
    }

    /// `stored`: the books persisted, whose values some cases ask for.
    static func bookCases(
        _ g: Generator, _ stored: [BookRecord], _ random: inout SplitMix64
    ) throws -> [PreparedCase<BookRecord>] {
        let s = sort([[], [SortDescriptor(\BookRecord.year)], [SortDescriptor(\.year, order: .reverse), SortDescriptor(\.price)],
                      [SortDescriptor(\.title)], [SortDescriptor(\.chapters.count, order: .reverse)]], &random)
        let l = limit(&random)
        func key(_ random: inout SplitMix64) -> String {
            g.pick(g.shortTexts, &random) + (random.next() % 2 == 0 ? "" : "\(random.next() % 5)")
        }
        func isbn(_ random: inout SplitMix64) -> String { g.pick(g.shortTexts, &random) + "-\(random.next() % 40)" }
        func year(_ random: inout SplitMix64) -> Int64 { Int64(1989 + random.next() % 10) }
        func price(_ random: inout SplitMix64) -> Double? { random.next() % 4 == 0 ? nil : g.pick(reals, &random) }
        func subtitle(_ random: inout SplitMix64) -> String? { random.next() % 3 == 0 ? nil : g.pick(g.texts, &random) }

        let byAuthor = try PreparedQuery(where: #Predicate<BookRecord, String> { b, a in b.authorId == a }, sortedBy: s, limit: l)
        let byAuthorYear = try PreparedQuery(
            where: #Predicate<BookRecord, String, Int64> { b, a, y in b.authorId == a && b.year == y }, sortedBy: s, limit: l)
        let byYearAuthor = try PreparedQuery(
            where: #Predicate<BookRecord, Int64, String> { b, y, a in y == b.year && a == b.authorId }, sortedBy: s, limit: l)
        let byPrice = try PreparedQuery(where: #Predicate<BookRecord, Double?> { b, p in b.price == p }, sortedBy: s, limit: l)
        // Equalities besides those of the index that leads with the parent's
        // key (LMDB checks them on the parent's range).
        // `#Predicate` with three parameters compared by `==` is more than
        // the type checker takes: the same expressions, written out.
        let authorYearSubtitle = Predicate<BookRecord, String, Int64, String?> { b, a, y, t in
            E.Conjunction(
                lhs: E.Conjunction(
                    lhs: E.Equal(lhs: E.KeyPath(root: b, keyPath: \BookRecord.authorId), rhs: a),
                    rhs: E.Equal(lhs: E.KeyPath(root: b, keyPath: \BookRecord.year), rhs: y)),
                rhs: E.Equal(lhs: E.KeyPath(root: b, keyPath: \BookRecord.subtitle), rhs: t))
        }
        let byAuthorYearSubtitle: PreparedQuery<BookRecord, (String, Int64, String?)> = try PreparedQuery(
            where: authorYearSubtitle, sortedBy: s, limit: l)
        let byAuthorPrice = try PreparedQuery(
            where: #Predicate<BookRecord, Double?, String> { b, p, a in b.price == p && b.authorId == a }, sortedBy: s, limit: l)
        let byPriceBelow = try PreparedQuery(
            where: #Predicate<BookRecord, Double?> { b, p in b.price != p && b.price != nil }, sortedBy: s, limit: l)
        let bySubtitle = try PreparedQuery(
            where: #Predicate<BookRecord, String?> { b, t in b.subtitle == t }, sortedBy: s, limit: l)
        let titleContains = try PreparedQuery(
            where: #Predicate<BookRecord, String> { b, n in b.title.contains(n) }, sortedBy: s, limit: l)
        let titleNotContains = try PreparedQuery(
            where: #Predicate<BookRecord, String> { b, n in !b.title.contains(n) }, sortedBy: s, limit: l)
        let titlePrefix = try PreparedQuery(
            where: #Predicate<BookRecord, String> { b, n in b.title.starts(with: n) }, sortedBy: s, limit: l)
        let titleRange = try PreparedQuery(
            where: #Predicate<BookRecord, String, String> { b, t, u in b.title > t && b.title <= u }, sortedBy: s, limit: l)
        let titleOrYear = try PreparedQuery(
            where: #Predicate<BookRecord, String, Int64> { b, t, y in b.title == t || b.year < y }, sortedBy: s, limit: l)
        let byIsbn = try PreparedQuery(where: #Predicate<BookRecord, String> { b, i in b.isbn == i }, sortedBy: s, limit: l)
        let chapterHeading = try PreparedQuery(
            where: #Predicate<BookRecord, String> { b, t in b.chapters.contains { $0.heading == t } }, sortedBy: s, limit: l)
        let authorAndChapters = try PreparedQuery(
            where: #Predicate<BookRecord, String, Int> { b, a, c in b.authorId == a && b.chapters.count >= c }, sortedBy: s, limit: l)
        let flagOrTitle = try PreparedQuery(
            where: #Predicate<BookRecord, Bool, String> { b, f, t in f || b.title == t }, sortedBy: s, limit: l)
        return [
            PreparedCase(name: "authorId == a") { r in
                let a = key(&r)
                return ("\(a.debugDescription)", byAuthor.call(a), byAuthor.predicate(a),
                        Query(where: #Predicate { $0.authorId == a }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "authorId == a && year == y") { r in
                let a = key(&r), y = year(&r)
                return ("\(a.debugDescription), \(y)", byAuthorYear.call(a, y), byAuthorYear.predicate(a, y),
                        Query(where: #Predicate { $0.authorId == a && $0.year == y }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "y == year && a == authorId") { r in
                let a = key(&r), y = year(&r)
                return ("\(y), \(a.debugDescription)", byYearAuthor.call(y, a), byYearAuthor.predicate(y, a),
                        Query(where: #Predicate { y == $0.year && a == $0.authorId }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "authorId == a && year == y && subtitle == t") { r in
                // Half the time a stored book's values, so that some match.
                var (a, y, t) = (key(&r), year(&r), subtitle(&r))
                if !stored.isEmpty, r.next() % 2 == 0 {
                    let book = stored[Int(r.next() % UInt64(stored.count))]
                    (a, y, t) = (book.authorId, book.year, book.subtitle)
                }
                let constant: Predicate<BookRecord> = #Predicate { $0.authorId == a && $0.year == y && $0.subtitle == t }
                return ("\(a.debugDescription), \(y), \(String(reflecting: t))", byAuthorYearSubtitle.call(a, y, t),
                        byAuthorYearSubtitle.predicate(a, y, t), Query(where: constant, sortedBy: s, limit: l))
            },
            PreparedCase(name: "price == p && authorId == a") { r in
                var (a, p) = (key(&r), price(&r))
                if !stored.isEmpty, r.next() % 2 == 0 {
                    let book = stored[Int(r.next() % UInt64(stored.count))]
                    (a, p) = (book.authorId, book.price)
                }
                return ("\(String(describing: p)), \(a.debugDescription)", byAuthorPrice.call(p, a), byAuthorPrice.predicate(p, a),
                        Query(where: #Predicate { $0.price == p && $0.authorId == a }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "price == p") { r in
                let p = price(&r)
                return ("\(String(describing: p))", byPrice.call(p), byPrice.predicate(p),
                        Query(where: #Predicate { $0.price == p }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "price != p && price != nil") { r in
                let p = price(&r)
                return ("\(String(describing: p))", byPriceBelow.call(p), byPriceBelow.predicate(p),
                        Query(where: #Predicate { $0.price != p && $0.price != nil }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "subtitle == t") { r in
                let t = subtitle(&r)
                return ("\(String(reflecting: t))", bySubtitle.call(t), bySubtitle.predicate(t),
                        Query(where: #Predicate { $0.subtitle == t }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "title contains n") { r in
                let n = g.pick(g.needles, &r)
                return ("\(n.debugDescription)", titleContains.call(n), titleContains.predicate(n),
                        Query(where: #Predicate { $0.title.contains(n) }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "!(title contains n)") { r in
                let n = g.pick(g.needles, &r)
                return ("\(n.debugDescription)", titleNotContains.call(n), titleNotContains.predicate(n),
                        Query(where: #Predicate { !$0.title.contains(n) }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "title starts with n") { r in
                let n = g.pick(g.needles, &r)
                return ("\(n.debugDescription)", titlePrefix.call(n), titlePrefix.predicate(n),
                        Query(where: #Predicate { $0.title.starts(with: n) }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "title in (t, u]") { r in
                let t = g.pick(g.shortTexts, &r), u = g.pick(g.shortTexts, &r)
                return ("\(t.debugDescription), \(u.debugDescription)", titleRange.call(t, u), titleRange.predicate(t, u),
                        Query(where: #Predicate { $0.title > t && $0.title <= u }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "title == t || year < y") { r in
                let t = g.pick(g.shortTexts, &r), y = year(&r)
                return ("\(t.debugDescription), \(y)", titleOrYear.call(t, y), titleOrYear.predicate(t, y),
                        Query(where: #Predicate { $0.title == t || $0.year < y }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "isbn == i") { r in
                let i = isbn(&r)
                return ("\(i.debugDescription)", byIsbn.call(i), byIsbn.predicate(i),
                        Query(where: #Predicate { $0.isbn == i }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "a chapter headed t (via a relation)") { r in
                let t = g.pick(g.texts, &r)
                return ("\(t.debugDescription)", chapterHeading.call(t), chapterHeading.predicate(t),
                        Query(where: #Predicate { $0.chapters.contains { $0.heading == t } }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "authorId == a && chapters >= c") { r in
                let a = key(&r), c = Int(r.next() % 4)
                return ("\(a.debugDescription), \(c)", authorAndChapters.call(a, c), authorAndChapters.predicate(a, c),
                        Query(where: #Predicate { $0.authorId == a && $0.chapters.count >= c }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "f || title == t") { r in
                let f = r.next() % 4 == 0, t = g.pick(g.shortTexts, &r)
                return ("\(f), \(t.debugDescription)", flagOrTitle.call(f, t), flagOrTitle.predicate(f, t),
                        Query(where: #Predicate { f || $0.title == t }, sortedBy: s, limit: l))
            },
        ]
    }

    /// `stored`: the chapters persisted, whose values some cases ask for.
    static func chapterCases(
        _ g: Generator, _ stored: [ChapterRecord], _ random: inout SplitMix64
    ) throws -> [PreparedCase<ChapterRecord>] {
        let s = sort([[], [SortDescriptor(\ChapterRecord.weight)], [SortDescriptor(\.pages, order: .reverse)]], &random)
        let l = limit(&random)
        let below = try PreparedQuery(where: #Predicate<ChapterRecord, Double> { c, w in c.weight < w }, sortedBy: s, limit: l)
        let equal = try PreparedQuery(where: #Predicate<ChapterRecord, Double> { c, w in c.weight == w }, sortedBy: s, limit: l)
        let notEqual = try PreparedQuery(where: #Predicate<ChapterRecord, Double> { c, w in c.weight != w }, sortedBy: s, limit: l)
        let heading = try PreparedQuery(where: #Predicate<ChapterRecord, String> { c, t in c.heading == t }, sortedBy: s, limit: l)
        let threePredicate: Predicate<ChapterRecord, String, Int64, Int64> = #Predicate { c, b, p, q in
            c.bookId == b && c.pages >= p && c.pages < q
        }
        let three: PreparedQuery<ChapterRecord, (String, Int64, Int64)> = try PreparedQuery(
            where: threePredicate, sortedBy: s, limit: l)
        let computed = try PreparedQuery(
            where: #Predicate<ChapterRecord, Int> { c, n in c.heading.count > n }, sortedBy: s, limit: l)
        // The parent's range (no index leads with `bookId`) and two more equalities.
        let draftBookPages = Predicate<ChapterRecord, Bool, String, Int64> { c, d, b, p in
            E.Conjunction(
                lhs: E.Conjunction(
                    lhs: E.Equal(lhs: E.KeyPath(root: c, keyPath: \ChapterRecord.draft), rhs: d),
                    rhs: E.Equal(lhs: E.KeyPath(root: c, keyPath: \ChapterRecord.bookId), rhs: b)),
                rhs: E.Equal(lhs: E.KeyPath(root: c, keyPath: \ChapterRecord.pages), rhs: p))
        }
        let bookDraftPages: PreparedQuery<ChapterRecord, (Bool, String, Int64)> = try PreparedQuery(
            where: draftBookPages, sortedBy: s, limit: l)
        func book(_ r: inout SplitMix64) -> String { g.pick(g.shortTexts, &r) + "-\(r.next() % 40)" }
        return [
            PreparedCase(name: "weight < w") { r in
                let w = g.pick(reals, &r)
                return ("\(w)", below.call(w), below.predicate(w), Query(where: #Predicate { $0.weight < w }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "weight == w") { r in
                let w = g.pick(reals, &r)
                return ("\(w)", equal.call(w), equal.predicate(w), Query(where: #Predicate { $0.weight == w }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "weight != w") { r in
                let w = g.pick(reals, &r)
                return ("\(w)", notEqual.call(w), notEqual.predicate(w),
                        Query(where: #Predicate { $0.weight != w }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "heading == t") { r in
                let t = g.pick(g.texts, &r)
                return ("\(t.debugDescription)", heading.call(t), heading.predicate(t),
                        Query(where: #Predicate { $0.heading == t }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "bookId == b && pages in [p, q)") { r in
                let b = book(&r), p = Int64(r.next() % 9), q = Int64(r.next() % 9)
                let constant: Predicate<ChapterRecord> = #Predicate { $0.bookId == b && $0.pages >= p && $0.pages < q }
                return ("\(b.debugDescription), \(p), \(q)", three.call(b, p, q), three.predicate(b, p, q),
                        Query(where: constant, sortedBy: s, limit: l))
            },
            PreparedCase(name: "draft == d && bookId == b && pages == p") { r in
                var (d, b, p) = (r.next() % 2 == 0, book(&r), Int64(r.next() % 9))
                if !stored.isEmpty, r.next() % 2 == 0 {
                    let chapter = stored[Int(r.next() % UInt64(stored.count))]
                    (d, b, p) = (chapter.draft, chapter.bookId, chapter.pages)
                }
                let constant: Predicate<ChapterRecord> = #Predicate { $0.draft == d && $0.bookId == b && $0.pages == p }
                return ("\(d), \(b.debugDescription), \(p)", bookDraftPages.call(d, b, p), bookDraftPages.predicate(d, b, p),
                        Query(where: constant, sortedBy: s, limit: l))
            },
            PreparedCase(name: "heading length > n (computed)") { r in
                let n = Int(r.next() % 9) * 100
                return ("\(n)", computed.call(n), computed.predicate(n),
                        Query(where: #Predicate { $0.heading.count > n }, sortedBy: s, limit: l))
            },
        ]
    }

    static let epoch = Date(timeIntervalSinceReferenceDate: 0)

    static func authorCases(_ g: Generator, _ random: inout SplitMix64) throws -> [PreparedCase<AuthorRecord>] {
        let s = sort([[], [SortDescriptor(\AuthorRecord.rating, order: .reverse)], [SortDescriptor(\.born)]], &random)
        let l = limit(&random)
        let rating = try PreparedQuery(where: #Predicate<AuthorRecord, Double> { a, r in a.rating >= r }, sortedBy: s, limit: l)
        let born = try PreparedQuery(where: #Predicate<AuthorRecord, Date?> { a, d in a.born == d }, sortedBy: s, limit: l)
        let epoch = Self.epoch
        let bornBefore = try PreparedQuery(
            where: #Predicate<AuthorRecord, Date> { a, d in (a.born ?? epoch) < d }, sortedBy: s, limit: l)
        let id = try PreparedQuery(where: #Predicate<AuthorRecord, String> { a, t in a.id == t }, sortedBy: s, limit: l)
        let name = try PreparedQuery(where: #Predicate<AuthorRecord, String> { a, t in a.name < t }, sortedBy: s, limit: l)
        func date(_ r: inout SplitMix64) -> Date? {
            r.next() % 3 == 0 ? nil : Date(timeIntervalSinceReferenceDate: g.pick(AwkwardReal.all, &r))
        }
        return [
            PreparedCase(name: "rating >= r") { r in
                let v = g.pick(reals, &r)
                return ("\(v)", rating.call(v), rating.predicate(v), Query(where: #Predicate { $0.rating >= v }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "born == d") { r in
                let d = date(&r)
                return ("\(String(describing: d))", born.call(d), born.predicate(d),
                        Query(where: #Predicate { $0.born == d }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "(born ?? epoch) < d (evaluated by Foundation)") { r in
                let d = date(&r) ?? Date(timeIntervalSinceReferenceDate: 0)
                return ("\(d)", bornBefore.call(d), bornBefore.predicate(d),
                        Query(where: #Predicate { ($0.born ?? epoch) < d }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "id == t") { r in
                let t = g.pick(g.shortTexts, &r) + (r.next() % 2 == 0 ? "" : "\(r.next() % 5)")
                return ("\(t.debugDescription)", id.call(t), id.predicate(t), Query(where: #Predicate { $0.id == t }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "name < t") { r in
                let t = g.pick(g.shortTexts, &r)
                return ("\(t.debugDescription)", name.call(t), name.predicate(t),
                        Query(where: #Predicate { $0.name < t }, sortedBy: s, limit: l))
            },
        ]
    }

    static func gadgets(_ random: inout SplitMix64, texts: [String]) -> [GadgetRecord] {
        var gadgets: [String: GadgetRecord] = [:]
        for index in 0..<40 {
            let id = texts[Int(random.next() % UInt64(texts.count))] + "#\(index % 25)"
            gadgets[id] = GadgetRecord(
                id: id, serial: uuids[Int(random.next() % UInt64(uuids.count))],
                tag: tags[Int(random.next() % UInt64(tags.count))],
                seen: Date(timeIntervalSinceReferenceDate: Double(random.next() % 5) * 1000),
                battery: random.next() % 3 == 0 ? nil : AwkwardReal.all[Int(random.next() % UInt64(AwkwardReal.all.count))],
                active: random.next() % 2 == 0, level: Int64(random.next() % 6) - 2,
                note: random.next() % 3 == 0 ? nil : texts[Int(random.next() % UInt64(texts.count))])
        }
        return Array(gadgets.values)
    }

    static func gadgetCases(_ g: Generator, _ random: inout SplitMix64) throws -> [PreparedCase<GadgetRecord>] {
        let s = sort([[], [SortDescriptor(\GadgetRecord.seen)], [SortDescriptor(\.battery, order: .reverse)],
                      [SortDescriptor(\.level), SortDescriptor(\.note)]], &random)
        let l = limit(&random)
        let serial = try PreparedQuery(where: #Predicate<GadgetRecord, UUID> { x, u in x.serial == u }, sortedBy: s, limit: l)
        let tag = try PreparedQuery(where: #Predicate<GadgetRecord, Data> { x, d in x.tag == d }, sortedBy: s, limit: l)
        let seen = try PreparedQuery(
            where: #Predicate<GadgetRecord, Date, Date> { x, a, b in x.seen >= a && x.seen < b }, sortedBy: s, limit: l)
        let activeLevel = try PreparedQuery(
            where: #Predicate<GadgetRecord, Bool, Int64> { x, a, v in x.active == a && x.level == v }, sortedBy: s, limit: l)
        let battery = try PreparedQuery(
            where: #Predicate<GadgetRecord, Double?, String?> { x, b, n in x.battery == b || x.note == n }, sortedBy: s, limit: l)
        let levelAbove = try PreparedQuery(
            where: #Predicate<GadgetRecord, Int64, Bool> { x, v, a in x.level > v && (x.active || a) }, sortedBy: s, limit: l)
        func date(_ r: inout SplitMix64) -> Date { Date(timeIntervalSinceReferenceDate: Double(r.next() % 6) * 1000 - 500) }
        return [
            PreparedCase(name: "serial == u") { r in
                let u = g.pick(uuids, &r)
                return ("\(u)", serial.call(u), serial.predicate(u), Query(where: #Predicate { $0.serial == u }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "tag == d") { r in
                let d = g.pick(tags, &r)
                return ("\(Array(d))", tag.call(d), tag.predicate(d), Query(where: #Predicate { $0.tag == d }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "seen in [a, b)") { r in
                let a = date(&r), b = date(&r)
                return ("\(a), \(b)", seen.call(a, b), seen.predicate(a, b),
                        Query(where: #Predicate { $0.seen >= a && $0.seen < b }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "active == a && level == v") { r in
                let a = r.next() % 2 == 0, v = Int64(r.next() % 6) - 2
                return ("\(a), \(v)", activeLevel.call(a, v), activeLevel.predicate(a, v),
                        Query(where: #Predicate { $0.active == a && $0.level == v }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "battery == b || note == n") { r in
                let b: Double? = r.next() % 3 == 0 ? nil : g.pick(reals, &r)
                let n: String? = r.next() % 3 == 0 ? nil : g.pick(g.texts, &r)
                return ("\(String(describing: b)), \(String(reflecting: n))", battery.call(b, n), battery.predicate(b, n),
                        Query(where: #Predicate { $0.battery == b || $0.note == n }, sortedBy: s, limit: l))
            },
            PreparedCase(name: "level > v && (active || a)") { r in
                let v = Int64(r.next() % 6) - 3, a = r.next() % 2 == 0
                return ("\(v), \(a)", levelAbove.call(v, a), levelAbove.predicate(v, a),
                        Query(where: #Predicate { $0.level > v && ($0.active || a) }, sortedBy: s, limit: l))
            },
        ]
    }
}

@Suite("Conformance: prepared queries through the DAO, from many tasks, across reopening")
struct PreparedDAOTests {
    static let unreadPredicate = #Predicate<MessageRecord, Int64> { message, dialog in
        message.dialogId == dialog && !message.isRead
    }
    static let newestFirst = [SortDescriptor(\MessageRecord.date, order: .reverse)]

    static func dialogs() -> [DialogRecord] {
        var dialogs: [DialogRecord] = []
        for dialog in 1...6 {
            var messages: [MessageRecord] = []
            for index in 0..<12 {
                let minutes = Double((index * 7) % 12) * 60
                let id = Int64(dialog * 100 + index)
                messages.append(
                    messageRecord(
                        id, dialog: Int64(dialog), date: Date(timeIntervalSince1970: 1_700_000_000 + minutes),
                        isRead: index % 3 == 0, type: Int64(index % 4)))
            }
            dialogs.append(DialogRecord(id: Int64(dialog), isPinned: false, messages: messages))
        }
        return dialogs
    }

    static func expected(_ messages: DAO<AnyStorage<MessageRecord>, MessageTranslator>, _ dialog: Int64) throws -> [Message] {
        try messages.read(where: #Predicate { $0.dialogId == dialog && !$0.isRead }, sortedBy: newestFirst)
    }

    @Test("read, count and erase through the DAO", arguments: allBackends)
    func throughTheDAO(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            try store.anyStorage(for: DialogRecord.self).persist(Self.dialogs())
            let messages = DAO(storage: try store.anyStorage(for: MessageRecord.self), translator: MessageTranslator())
            let unread = try messages.prepare(where: Self.unreadPredicate, sortedBy: Self.newestFirst)
            let limited = try messages.prepare(where: Self.unreadPredicate, sortedBy: Self.newestFirst, limit: 3)
            for dialog in Int64(0)...7 {
                let expected = try Self.expected(messages, dialog)
                #expect(try unread.read(dialog) == expected, "dialog \(dialog)")
                #expect(try limited.read(dialog) == Array(expected.prefix(3)), "dialog \(dialog), limit 3")
                #expect(try unread.count(dialog) == expected.count, "count of dialog \(dialog)")
            }
            #expect(try unread.erase(4) == 8)
            #expect(try unread.read(4).isEmpty)
            #expect(try messages.count(where: #Predicate { $0.dialogId == 4 }) == 4)
            #expect(try unread.read(5) == Self.expected(messages, 5))
        }
    }

    @Test("the DAO has its storage prepare a query, and a closed store refuses it", arguments: allBackends)
    func preparedByTheStorage(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let store = try backend.open(directory.url, .full)
        try store.anyStorage(for: DialogRecord.self).persist(Self.dialogs())
        let storage = try store.anyStorage(for: MessageRecord.self)
        let messages = DAO(storage: storage, translator: MessageTranslator())
        // Prepared by the storage (twice: it keeps what it made), the calls
        // answer what the constant query answers.
        let prepared = try PreparedQuery(where: Self.unreadPredicate, sortedBy: Self.newestFirst)
        try storage.prepare(prepared)
        try storage.prepare(prepared)
        let unread = try messages.prepare(where: Self.unreadPredicate, sortedBy: Self.newestFirst)
        for dialog in Int64(0)...7 {
            let constant = try storage.read(
                where: #Predicate { $0.dialogId == dialog && !$0.isRead }, sortedBy: Self.newestFirst)
            #expect(try storage.read(prepared, dialog) == constant, "dialog \(dialog)")
            #expect(try unread.read(dialog) == Self.expected(messages, dialog), "dialog \(dialog) through the DAO")
        }
        try store.close()
        // A storage that prepares refuses when preparing, any other at the call.
        let refused = #expect(throws: StorageError.self) {
            let late = try messages.prepare(where: Self.unreadPredicate, sortedBy: Self.newestFirst)
            _ = try late.read(1)
        }
        #expect(refused?.kind == .closed)
        withExtendedLifetime(directory) {}
    }

    @Test("a negative limit is refused when preparing")
    func negativeLimit() throws {
        #expect(throws: StorageError.self) {
            _ = try PreparedQuery(where: Self.unreadPredicate, limit: -1)
        }
    }

    @Test("many tasks call one prepared query at once", arguments: allBackends)
    func concurrent(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory()
        let store = try backend.open(directory.url, .full)
        try await store.anyStorage(for: DialogRecord.self).persist(Self.dialogs())
        let messages = DAO(storage: try store.anyStorage(for: MessageRecord.self), translator: MessageTranslator())
        let unread = try messages.prepare(where: Self.unreadPredicate, sortedBy: Self.newestFirst)
        var expected: [Int64: [Message]] = [:]
        for dialog in Int64(0)...7 { expected[dialog] = try Self.expected(messages, dialog) }
        let answers = try await withThrowingTaskGroup(of: (Int64, [Message]).self) { group in
            for task in 0..<64 {
                let dialog = Int64(task % 8)
                group.addTask {
                    if task % 16 == 0 { MessageRecord.entity.forgetQueryPlans() }
                    return (dialog, try unread.read(dialog))
                }
            }
            var answers: [(Int64, [Message])] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
        #expect(answers.count == 64)
        for (dialog, answer) in answers { #expect(answer == expected[dialog], "dialog \(dialog)") }
        try store.close()
        withExtendedLifetime(directory) {}
    }

    @Test("a prepared query outlives its store and the entity's plans", arguments: allBackends)
    func acrossReopen(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let prepared = try PreparedQuery(where: Self.unreadPredicate, sortedBy: Self.newestFirst)
        var first = try backend.open(directory.url, .full)
        try first.anyStorage(for: DialogRecord.self).persist(Self.dialogs())
        let before = try first.anyStorage(for: MessageRecord.self).read(prepared, 2)
        try first.close()
        MessageRecord.entity.forgetQueryPlans()
        first = try backend.open(directory.url, .full)
        let storage = try first.anyStorage(for: MessageRecord.self)
        try storage.persist(messageRecord(299, dialog: 2, date: Date(timeIntervalSince1970: 1_800_000_000)))
        let after = try storage.read(prepared, 2)
        let constant = try storage.read(
            where: #Predicate { $0.dialogId == 2 && !$0.isRead }, sortedBy: Self.newestFirst)
        #expect(after == constant)
        #expect(after.count == before.count + 1)
        #expect(after.first?.id == 299)
        try first.close()
        withExtendedLifetime(directory) {}
    }
}
