import DAOCore
import Foundation
import TestSupport
import Testing

// Queries a client writes: composite-index prefixes, optionals, text
// functions, relations one and two levels down, sorts over optionals and
// relations, limits. Each is answered by every backend and compared with the
// answer computed here in Swift (the meaning of docs/SEMANTICS.md: sort keys,
// then primary key; `nil` first, last when reversed) and with the other
// backends' answers.

/// One query of the trial: the predicate and sort given to the DAO, and the
/// same meaning in Swift over the plain objects.
struct TrialQuery<Record: DAOCore.Record, Value: Plain> {
    let name: String
    let predicate: Predicate<Record>?
    let sort: [SortDescriptor<Record>]
    let limit: Int?
    let accepts: (Value) -> Bool
    let order: (Value, Value) -> ComparisonResult

    init(
        _ name: String, _ predicate: Predicate<Record>?, sort: [SortDescriptor<Record>] = [], limit: Int? = nil,
        accepts: @escaping (Value) -> Bool, order: @escaping (Value, Value) -> ComparisonResult = { _, _ in .orderedSame }
    ) {
        self.name = name
        self.predicate = predicate
        self.sort = sort
        self.limit = limit
        self.accepts = accepts
        self.order = order
    }

    /// The answer of docs/SEMANTICS.md over `values`, keyed by `key`.
    func expected<K: Comparable>(_ values: [Value], key: (Value) -> K) -> [Value] {
        let sorted = values.filter(accepts).sorted { a, b in
            switch order(a, b) {
            case .orderedAscending: return true
            case .orderedDescending: return false
            case .orderedSame: return key(a) < key(b)
            }
        }
        return limit.map { Array(sorted.prefix($0)) } ?? sorted
    }
}

/// `a` against `b` with `nil` first.
func compare<T: Comparable>(_ a: T?, _ b: T?) -> ComparisonResult {
    switch (a, b) {
    case (nil, nil): return .orderedSame
    case (nil, _): return .orderedAscending
    case (_, nil): return .orderedDescending
    case let (a?, b?): return a < b ? .orderedAscending : (b < a ? .orderedDescending : .orderedSame)
    }
}

/// The first of `results` that is not `.orderedSame`.
func then(_ results: ComparisonResult...) -> ComparisonResult {
    results.first { $0 != .orderedSame } ?? .orderedSame
}

/// Text keys compared as stored: by Unicode scalars.
struct ScalarKey: Comparable {
    let text: String
    static func < (a: ScalarKey, b: ScalarKey) -> Bool { a.text.unicodeScalars.lexicographicallyPrecedes(b.text.unicodeScalars) { $0.value < $1.value } }
    static func == (a: ScalarKey, b: ScalarKey) -> Bool { a.text.unicodeScalars.elementsEqual(b.text.unicodeScalars) }
}


func bookQueries() -> [TrialQuery<BookRecord, Book>] {
    let infinity = Double.infinity
    return [
    TrialQuery(
        "composite index, all three fields", #Predicate { $0.shelfId == "east-1" && $0.author == "Borges" && $0.year != nil },
        accepts: { $0.shelfId == "east-1" && $0.author == "Borges" && $0.year != nil }),
    TrialQuery(
        "composite index prefix, sorted by price descending",
        #Predicate { $0.shelfId == "central-a" && $0.author == "Austen" }, sort: [SortDescriptor(\.price, order: .reverse)],
        accepts: { $0.shelfId == "central-a" && $0.author == "Austen" }, order: { compare($1.price, $0.price) }),
    TrialQuery(
        "second index with a range on its second field, sorted by title then year",
        #Predicate { $0.author == "Čapek" && $0.price > 1 }, sort: [SortDescriptor(\.title), SortDescriptor(\.year)],
        accepts: { $0.author == "Čapek" && $0.price > 1 },
        order: { then(compare(ScalarKey(text: $0.title), ScalarKey(text: $1.title)), compare($0.year, $1.year)) }),
    TrialQuery(
        "optional is nil, sorted by an optional date", #Predicate { $0.weight == nil }, sort: [SortDescriptor(\.acquired)],
        accepts: { $0.weight == nil }, order: { compare($0.acquired, $1.acquired) }),
    TrialQuery(
        "in a list, sorted by an optional descending, limited",
        #Predicate { ["Austen", "Ōe"].contains($0.author) }, sort: [SortDescriptor(\.year, order: .reverse)], limit: 4,
        accepts: { ["Austen", "Ōe"].contains($0.author) }, order: { compare($1.year, $0.year) }),
    TrialQuery(
        "text contains, and not", #Predicate { $0.summary.contains("café") && !$0.onLoan },
        accepts: { $0.summary.contains("café") && !$0.onLoan }),
    TrialQuery(
        "starts(with:) or bytes are nil", #Predicate { $0.title.starts(with: "Book 1") || $0.cover == nil },
        accepts: { $0.title.hasPrefix("Book 1") || $0.cover == nil }),
    TrialQuery(
        "an infinite constant", #Predicate { $0.price == infinity }, accepts: { $0.price == .infinity }),
    TrialQuery(
        "a range over reals with subnormals and infinities, sorted by price",
        #Predicate { $0.price > 0 && $0.price < 1e300 }, sort: [SortDescriptor(\.price)],
        accepts: { $0.price > 0 && $0.price < 1e300 }, order: { compare($0.price, $1.price) }),
    TrialQuery("the empty string", #Predicate { $0.author == "" }, accepts: { $0.author.isEmpty }),
    TrialQuery(
        "a String comparator (Foundation's order, in memory), descending",
        #Predicate { $0.year != nil }, sort: [SortDescriptor(\.author, comparator: .lexical, order: .reverse)],
        accepts: { $0.year != nil }, order: { String.StandardComparator.lexical.compare($1.author, $0.author) }),
    TrialQuery(
        "a computed property (Foundation's meaning)", #Predicate { $0.summary.count > 10 },
        accepts: { $0.summary.count > 10 }),
    TrialQuery(
        "nil-coalescing over an optional", #Predicate { ($0.year ?? 0) > 1990 }, sort: [SortDescriptor(\.author)], limit: 7,
        accepts: { ($0.year ?? 0) > 1990 }, order: { compare(ScalarKey(text: $0.author), ScalarKey(text: $1.author)) }),
    TrialQuery(
        "everything, sorted by a Bool-free optional real, limited",
        nil, sort: [SortDescriptor(\.weight, order: .reverse), SortDescriptor(\.shelfId)], limit: 10, accepts: { _ in true },
        order: { then(compare($1.weight, $0.weight), compare(ScalarKey(text: $0.shelfId), ScalarKey(text: $1.shelfId))) }),
    ]
}

func shelfQueries() -> [TrialQuery<ShelfRecord, Shelf>] {
    [
    TrialQuery(
        "a relation's count, sorted by floor descending", #Predicate { $0.books.count > 5 },
        sort: [SortDescriptor(\.floor, order: .reverse)],
        accepts: { $0.books.count > 5 }, order: { compare($1.floor, $0.floor) }),
    TrialQuery(
        "a child matching a condition", #Predicate { $0.books.contains { $0.author == "Borges" } },
        accepts: { $0.books.contains { $0.author == "Borges" } }),
    TrialQuery(
        "the composite index of the owned entity", #Predicate { $0.libraryCode == "central" && $0.floor == 1 },
        accepts: { $0.libraryCode == "central" && $0.floor == 1 }),
    TrialQuery(
        "optional integer is nil", #Predicate { $0.capacity == nil }, accepts: { $0.capacity == nil }),
    TrialQuery(
        "sorted by a relation's count", nil, sort: [SortDescriptor(\.books.count)], accepts: { _ in true },
        order: { compare($0.books.count, $1.books.count) }),
    ]
}

func libraryQueries() -> [TrialQuery<LibraryRecord, Library>] {
    [
    TrialQuery("a relation's count", #Predicate { $0.shelves.count == 2 }, accepts: { $0.shelves.count == 2 }),
    TrialQuery(
        "an optional index field", #Predicate { $0.city == nil || $0.city == "Zürich" },
        accepts: { $0.city == nil || $0.city == "Zürich" }),
    TrialQuery(
        "two levels of relations", #Predicate { $0.shelves.contains { $0.books.contains { $0.price == 12.25 } } },
        accepts: { $0.shelves.contains { $0.books.contains { $0.price == 12.25 } } }),
    TrialQuery(
        "sorted by an optional real with -infinity", nil, sort: [SortDescriptor(\.rating)], accepts: { _ in true },
        order: { compare($0.rating, $1.rating) }),
    ]
}

@Suite("Client trial: queries answer the same on every backend, as docs/SEMANTICS.md defines")
struct QueryTrialTests {
    @Test("every query, every backend, against the answer computed in Swift and against each other")
    func sameAnswersEverywhere() throws {
        let corpus = Sample.corpus()
        let shelves = corpus.flatMap(\.shelves)
        let books = shelves.flatMap(\.books)
        var answers: [String: [String]] = [:]  // query → the answer of each backend, described
        for backend in localBackends {
            let directory = try TemporaryDirectory()
            try withLibrary(backend, in: directory.url) { daos, _ in
                try daos.libraries.persist(corpus)
                for query in bookQueries() {
                    let read = try daos.books.read(where: query.predicate, sortedBy: query.sort, limit: query.limit)
                    let expected = query.expected(books, key: \.uniqueId)
                    #expect(read.map(\.uniqueId) == expected.map(\.uniqueId), "\(backend.name): books, \(query.name)")
                    #expect(read == expected, "\(backend.name): books, \(query.name)")
                    #expect(try daos.books.count(where: query.predicate) == books.filter(query.accepts).count,
                            "\(backend.name): count books, \(query.name)")
                    answers["books: " + query.name, default: []].append("\(read.map(\.uniqueId))")
                }
                for query in shelfQueries() {
                    let read = try daos.shelves.read(where: query.predicate, sortedBy: query.sort, limit: query.limit)
                    let expected = query.expected(shelves) { ScalarKey(text: $0.uniqueId) }
                    #expect(read == expected, "\(backend.name): shelves, \(query.name)")
                    answers["shelves: " + query.name, default: []].append("\(read.map(\.uniqueId))")
                }
                for query in libraryQueries() {
                    let read = try daos.libraries.read(where: query.predicate, sortedBy: query.sort, limit: query.limit)
                    let expected = query.expected(corpus) { ScalarKey(text: $0.uniqueId) }
                    #expect(read == expected, "\(backend.name): libraries, \(query.name)")
                    answers["libraries: " + query.name, default: []].append("\(read.map(\.uniqueId))")
                }
                // erase(where:) with a predicate over a relation removes what read(where:) finds, with its children.
                let doomed = try daos.shelves.read(where: #Predicate { $0.books.count > 5 })
                #expect(try daos.shelves.erase(where: #Predicate { $0.books.count > 5 }) == doomed.count)
                #expect(try daos.books.count() == books.count - doomed.flatMap(\.books).count)
            }
        }
        for (query, perBackend) in answers {
            #expect(Set(perBackend).count == 1, "backends differ on \(query): \(perBackend)")
        }
        // The corpus has something for every query to find, so a wrong empty answer would show.
        #expect(bookQueries().allSatisfy { query in books.contains(where: query.accepts) })
        #expect(shelfQueries().allSatisfy { query in shelves.contains(where: query.accepts) })
        #expect(libraryQueries().allSatisfy { query in corpus.contains(where: query.accepts) })
    }
}
