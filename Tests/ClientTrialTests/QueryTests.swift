import DAOCore
import Foundation
import TestSupport
import Testing

// Queries: each domain's queries answered by every backend, compared with
// the answer computed in Swift from docs/SEMANTICS.md and with one another
// (QueryTests+Tracker.swift holds the tracker's generated queries; the
// logistics and warehouse queries run in RoundTripTests against their models).

@Suite("Queries: every backend answers as docs/SEMANTICS.md defines")
struct QueryTests {}

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

extension QueryTests {
    @Suite("Client trial: queries answer the same on every backend, as docs/SEMANTICS.md defines")
    struct LibraryDomain {
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
}

extension QueryTests {
    @Suite("Client trial, clinic: queries over optional reals and dates")
    struct ClinicDomain {
        @Test("generated queries over optional reals and dates, ties and limits, answer as docs/SEMANTICS.md says",
              arguments: localBackends)
        func queries(backend: TestBackend) throws {
            for seed: UInt64 in [1, 2, 3] {
                let directory = try TemporaryDirectory()
                let patients = clinicPatients(seed: seed)
                let visits = patients.flatMap(\.visits)
                let labs = visits.flatMap(\.labs)
                let rx = visits.flatMap(\.prescriptions)
                let store = try backend.open(directory.url)
                defer {
                    do { try store.close() } catch { Issue.record("closing failed: \(error)") }
                }
                let clinic = try ClinicStorages(store)
                do {
                    try clinic.patients.persist(patients)
                    func check<R: Record>(_ name: String, _ got: [R], _ expected: [R], sourceLocation: SourceLocation = #_sourceLocation) {
                        #expect(sameBits(got, expected), "seed \(seed) on \(backend.name), \(name): \(firstDifference(got, expected))",
                                sourceLocation: sourceLocation)
                    }
                    let someVisit = visits.first { $0.labs.count > 1 }?.id ?? "none"
                    check("labs of a visit with a time, by time",
                          try clinic.labs.read(Query(
                            where: #Predicate { $0.visitId == someVisit && $0.taken != nil }, sortedBy: [SortDescriptor(\.taken)])),
                          answer(labs, where: { $0.visitId == someVisit && $0.taken != nil },
                                 by: [{ storedLess($0.taken?.timeIntervalSinceReferenceDate, $1.taken?.timeIntervalSinceReferenceDate) }]))
                    check("HB above 0, by value descending, limit 3",
                          try clinic.labs.read(Query(
                            where: #Predicate { $0.code == "HB" && $0.value != nil && $0.value! > 0 },
                            sortedBy: [SortDescriptor(\.value, order: .reverse)], limit: 3)),
                          answer(labs, where: { $0.code == "HB" && ($0.value ?? 0) > 0 },
                                 by: [{ storedLess($1.value, $0.value) }], limit: 3))
                    check("labs without a value",
                          try clinic.labs.read(Query(where: #Predicate { $0.value == nil })),
                          answer(labs, where: { $0.value == nil }))
                    check("labs whose value is not 1.5 (nil included)",
                          try clinic.labs.read(Query(where: #Predicate { !($0.value == 1.5) })),
                          answer(labs, where: { !($0.value == 1.5) }))
                    let cut = day(86_400)
                    check("labs taken before a day, by code then value, limit 4",
                          try clinic.labs.read(Query(
                            where: #Predicate { $0.taken != nil && $0.taken! < cut },
                            sortedBy: [SortDescriptor(\.code), SortDescriptor(\.value)], limit: 4)),
                          answer(labs, where: { $0.taken.map { $0 < cut } ?? false },
                                 by: [{ $0.code == $1.code ? nil : $0.code < $1.code }, { storedLess($0.value, $1.value) }], limit: 4))
                    let infinite = Double.infinity
                    check("labs of infinite value",
                          try clinic.labs.read(Query(where: #Predicate { $0.value == infinite })),
                          answer(labs, where: { $0.value == .infinity }))
                    let high = LabFlag.high, critical = LabFlag.critical
                    check("high or critical labs",
                          try clinic.labs.read(Query(where: #Predicate { $0.flag == high || $0.flag == critical })),
                          answer(labs, where: { $0.flag == .high || $0.flag == .critical }))
                    check("labs of two codes, by code",
                          try clinic.labs.read(Query(where: #Predicate { ["K", "hb"].contains($0.code) }, sortedBy: [SortDescriptor(\.code)])),
                          answer(labs, where: { ["K", "hb"].contains($0.code) }, by: [{ $0.code == $1.code ? nil : $0.code < $1.code }]))
                    let someMrn = patients[2].mrn
                    check("visits of a patient, latest first",
                          try clinic.visits.read(Query(
                            where: #Predicate { $0.patientMrn == someMrn }, sortedBy: [SortDescriptor(\.date, order: .reverse)])),
                          answer(visits, where: { $0.patientMrn == someMrn },
                                 by: [{ $0.date == $1.date ? nil : $0.date > $1.date }]))
                    check("visits with more than two labs",
                          try clinic.visits.read(Query(where: #Predicate { $0.labs.count > 2 })),
                          answer(visits, where: { $0.labs.count > 2 }))
                    check("visits with labs but no prescriptions",
                          try clinic.visits.read(Query(where: #Predicate { !$0.labs.isEmpty && $0.prescriptions.isEmpty })),
                          answer(visits, where: { !$0.labs.isEmpty && $0.prescriptions.isEmpty }))
                    check("urgent visits, by reason then date, limit 2",
                          try clinic.visits.read(Query(
                            where: #Predicate { $0.urgent }, sortedBy: [SortDescriptor(\.reason), SortDescriptor(\.date)], limit: 2)),
                          answer(visits, where: { $0.urgent },
                                 by: [{ a, b in
                                     switch (a.reason, b.reason) {
                                     case (nil, nil): return nil
                                     case (nil, _): return true
                                     case (_, nil): return false
                                     case (let l?, let r?): return l == r ? nil : l < r
                                     }
                                 }, { $0.date == $1.date ? nil : $0.date < $1.date }], limit: 2))
                    check("patients named Ann, by birth then weight descending",
                          try clinic.patients.read(Query(
                            where: #Predicate { $0.name == "Ann" },
                            sortedBy: [SortDescriptor(\.born), SortDescriptor(\.weightKg, order: .reverse)])),
                          answer(patients, where: { $0.name == "Ann" },
                                 by: [{ $0.born == $1.born ? nil : $0.born < $1.born }, { storedLess($1.weightKg, $0.weightKg) }]))
                    check("patients with an allergy",
                          try clinic.patients.read(Query(where: #Predicate { $0.allergies.count > 0 })),
                          answer(patients, where: { !$0.allergies.isEmpty }))
                    check("prescriptions of at least 400 mg without refills, by dose then until",
                          try clinic.rx.read(Query(
                            where: #Predicate { $0.doseMg >= 400 && $0.refills == nil },
                            sortedBy: [SortDescriptor(\.doseMg), SortDescriptor(\.until)])),
                          answer(rx, where: { $0.doseMg >= 400 && $0.refills == nil },
                                 by: [{ $0.doseMg == $1.doseMg ? nil : $0.doseMg < $1.doseMg },
                                      { storedLess($0.until?.timeIntervalSinceReferenceDate, $1.until?.timeIntervalSinceReferenceDate) }]))
                    check("prescriptions until a date in the index's range",
                          try clinic.rx.read(Query(where: #Predicate { $0.drug == "ibuprofen" && $0.doseMg > 300 })),
                          answer(rx, where: { $0.drug == "ibuprofen" && $0.doseMg > 300 }))
                    #expect(try clinic.labs.count(where: #Predicate { $0.value != nil && $0.value! < 1 })
                            == labs.filter { ($0.value ?? 1) < 1 }.count, "seed \(seed) on \(backend.name)")
                }
            }
        }
    }
}
