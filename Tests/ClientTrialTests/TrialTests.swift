import DAOCore
import Foundation
import TestSupport
import Testing

// An outside client's trial of the library, following the README literally:
// records declared with @StoredRecord, plain objects and translators, one DAO
// per type, on every backend. What the docs promise is checked against a
// reference computed here in Swift, and the backends against each other.

@Suite("Client trial: a library domain through the README's API on every backend")
struct TrialTests {
    @Test("a three-level tree with extreme values comes back exactly, also after reopening", arguments: localBackends)
    func roundTrip(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let corpus = Sample.corpus()
        let extreme = Library(
            uniqueId: "a\u{0}b 🚀", name: Sample.longText, city: "Malmö", opened: Date(timeIntervalSinceReferenceDate: -.infinity),
            rating: .greatestFiniteMagnitude,
            shelves: [
                Shelf(
                    uniqueId: "s\u{0}", libraryCode: "a\u{0}b 🚀", floor: .min, label: Sample.longText, capacity: .max,
                    books: [
                        Sample.book(
                            .min, shelf: "s\u{0}", title: "", author: "", year: .max, price: -.greatestFiniteMagnitude,
                            weight: Double.leastNonzeroMagnitude, acquired: Date(timeIntervalSinceReferenceDate: .infinity),
                            summary: Sample.longText, cover: Data(), onLoan: true),
                        Sample.book(
                            .max, shelf: "s\u{0}", year: .min, price: -Double.leastNonzeroMagnitude, weight: -.infinity,
                            acquired: .distantPast, summary: "\u{0}", cover: Data(repeating: 0, count: 70_000)),
                    ]),
            ])
        let all = (corpus + [extreme]).sorted { $0.uniqueId.utf8.lexicographicallyPrecedes($1.uniqueId.utf8) }
        let bookCount = all.flatMap(\.shelves).flatMap(\.books).count
        try withLibrary(backend, in: directory.url) { daos, _ in
            try daos.libraries.persist(corpus + [extreme])
            #expect(try daos.libraries.read() == all)
            #expect(try daos.libraries.read(byPrimaryKey: extreme.uniqueId) == extreme)
            #expect(try daos.counts() == [all.count, all.flatMap(\.shelves).count, bookCount])
            // The empty string is a key like any other.
            #expect(try daos.libraries.read(byPrimaryKey: "")?.shelves.map(\.uniqueId) == ["x", "y"])
            #expect(try daos.shelves.read(byPrimaryKey: "central-c")?.books == [])
        }
        try withLibrary(backend, in: directory.url) { daos, _ in
            let read = try daos.libraries.read()
            #expect(read == all)
            #expect(allScalars(read) == allScalars(all))
            // Bit for bit, where `==` would not tell: the sign of the smallest subnormal.
            let books = try daos.books.read(byPrimaryKeys: [.min, .max])
            #expect(books.map { $0.price.bitPattern } == [(-Double.greatestFiniteMagnitude).bitPattern, (-Double.leastNonzeroMagnitude).bitPattern])
            #expect(books.map(\.cover) == [Data(), Data(repeating: 0, count: 70_000)])
        }
    }

    @Test("NFC and NFD spellings are two keys (the property list refuses the second, as documented)", arguments: localBackends)
    func normalization(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let nfc = "Zo\u{EB}", nfd = "Zoe\u{308}"
        let libraries = [nfc, nfd].map {
            Library(uniqueId: $0, name: $0, city: $0, opened: Sample.epoch, rating: nil, shelves: [
                Shelf(uniqueId: "shelf-" + $0, libraryCode: $0, floor: 0, label: $0, capacity: nil,
                      books: [Sample.book(Int64($0.unicodeScalars.count), shelf: "shelf-" + $0, author: $0)]),
            ])
        }
        try withLibrary(backend, in: directory.url) { daos, _ in
            try daos.libraries.persist(libraries[0])
            if backend.name == "plist" {
                expectStorageError(.invalidArgument) { try daos.libraries.persist(libraries[1]) }
                #expect(try daos.counts() == [1, 1, 1])
                return
            }
            try daos.libraries.persist(libraries[1])
            #expect(try daos.counts() == [2, 2, 2])
            let byNFD = try daos.libraries.read(byPrimaryKey: nfd)
            #expect(byNFD.map { scalars($0.uniqueId) } == scalars(nfd))
            #expect(byNFD.map { scalars($0.name) } == scalars(nfd))
            #expect(try daos.books.read(where: #Predicate { $0.author == nfc }).map { scalars($0.author) } == [scalars(nfc)])
            #expect(try daos.shelves.read(where: #Predicate { $0.libraryCode == nfd }).map(\.uniqueId).map(scalars) == [scalars("shelf-" + nfd)])
            // Key order is scalar order: "Zoe\u{308}" < "Zo\u{EB}".
            #expect(try daos.libraries.read().map { scalars($0.uniqueId) } == [scalars(nfd), scalars(nfc)])
        }
        if backend.name == "plist" { return }
        try withLibrary(backend, in: directory.url) { daos, _ in
            let read = try daos.libraries.read()
            #expect(read.map { allScalars([$0]) } == [allScalars([libraries[1]]), allScalars([libraries[0]])])
        }
    }

    @Test("NaN and -0.0 are stored at every level and compare as IEEE 754", arguments: localBackends)
    func nanAndNegativeZero(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        try withLibrary(backend, in: directory.url) { daos, _ in
            try daos.libraries.persist(Sample.corpus())
            let before = try daos.libraries.read()
            let good = before[1]
            var nanBook = good.shelves[0].books[0]
            nanBook = Sample.book(nanBook.uniqueId, shelf: nanBook.shelfId, price: .nan)
            let shelf = good.shelves[0]
            let nanDeep = Library(
                uniqueId: good.uniqueId, name: "changed", city: good.city, opened: good.opened, rating: good.rating,
                shelves: [Shelf(uniqueId: shelf.uniqueId, libraryCode: shelf.libraryCode, floor: shelf.floor,
                                label: shelf.label, capacity: shelf.capacity, books: [nanBook])])
            try daos.libraries.persist(nanDeep)
            #expect(try daos.books.read(byPrimaryKey: nanBook.uniqueId)?.price.isNaN == true)
            let zeroLibrary = Library(uniqueId: "new", name: "", city: nil, opened: Sample.epoch, rating: -0.0, shelves: [])
            let zeroBook = Sample.book(999, shelf: "central-a", weight: -0.0)
            try daos.libraries.persist(zeroLibrary)
            #expect(try daos.libraries.read(byPrimaryKey: "new")?.rating?.bitPattern == (-0.0).bitPattern)
            try daos.books.persist(zeroBook)
            #expect(try daos.books.read(byPrimaryKey: 999)?.weight?.bitPattern == (-0.0).bitPattern)
            try daos.books.persist(Sample.book(998, shelf: "central-a", acquired: Date(timeIntervalSinceReferenceDate: .nan)))
            #expect(try daos.books.read(byPrimaryKey: 998)?.acquired?.timeIntervalSinceReferenceDate.isNaN == true)
            // A NaN compares false, as in Swift, as a constant and as a stored value.
            let nan = Double.nan
            let books = try daos.books.read()
            #expect(try daos.books.count(where: #Predicate { $0.price == nan }) == 0)
            #expect(try daos.books.count(where: #Predicate { $0.price != nan }) == books.count)
            #expect(try daos.books.count(where: #Predicate { $0.price > 0 }) == books.filter { $0.price > 0 }.count)
            #expect(try daos.books.count(where: #Predicate { !($0.price <= 5) }) == books.filter { !($0.price <= 5) }.count)
            let zero = 0.0
            #expect(try daos.books.count(where: #Predicate { $0.weight == zero }) == books.filter { $0.weight == 0 }.count)
        }
    }

    @Test("updates, moves between parents at two levels, and erases follow docs/SEMANTICS.md", arguments: localBackends)
    func updateMoveErase(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        var expected: [Library] = []
        try withLibrary(backend, in: directory.url) { daos, _ in
            try daos.libraries.persist(Sample.corpus())
            let counts = try daos.counts()

            // A parent persisted without one of its books: the book is gone.
            let shelfA = try #require(try daos.shelves.read(byPrimaryKey: "central-a"))
            let dropped = shelfA.books[0]
            try daos.shelves.persist(shelf(shelfA, books: Array(shelfA.books.dropFirst())))
            #expect(try daos.books.read(byPrimaryKey: dropped.uniqueId) == nil)
            #expect(try daos.counts() == [counts[0], counts[1], counts[2] - 1])

            // A book moved by persisting the shelf that now holds it.
            let moved = shelfA.books[1]
            let shelfB = try #require(try daos.shelves.read(byPrimaryKey: "central-b"))
            let movedToB = Sample.book(
                moved.uniqueId, shelf: "central-b", title: moved.title, author: moved.author, year: moved.year,
                price: moved.price, weight: moved.weight, acquired: moved.acquired, summary: moved.summary,
                cover: moved.cover, onLoan: moved.onLoan)
            try daos.shelves.persist(shelf(shelfB, books: (shelfB.books + [movedToB]).sorted { $0.uniqueId < $1.uniqueId }))
            #expect(try daos.books.read(byPrimaryKey: moved.uniqueId)?.shelfId == "central-b")
            #expect(try daos.shelves.read(byPrimaryKey: "central-a")?.books.map(\.uniqueId).contains(moved.uniqueId) == false)
            #expect(try daos.shelves.read(byPrimaryKey: "central-b")?.books.map(\.uniqueId).contains(moved.uniqueId) == true)
            #expect(try daos.books.count(where: #Predicate { $0.shelfId == "central-a" }) == shelfA.books.count - 2)
            #expect(try daos.counts() == [counts[0], counts[1], counts[2] - 1])

            // A book moved through its own storage.
            try daos.books.persist(Sample.book(moved.uniqueId, shelf: "east-2", title: "moved again"))
            #expect(try daos.shelves.read(byPrimaryKey: "central-b")?.books.map(\.uniqueId).contains(moved.uniqueId) == false)
            // Children come back in key order: book \(moved.uniqueId) is the first of east-2's.
            #expect(try daos.shelves.read(byPrimaryKey: "east-2")?.books.first?.title == "moved again")

            // A shelf moved, with its books, to another library.
            let east2 = try #require(try daos.shelves.read(byPrimaryKey: "east-2"))
            try daos.shelves.persist(shelf(east2, library: "central"))
            #expect(try daos.libraries.read(byPrimaryKey: "central")?.shelves.map(\.uniqueId) == ["central-a", "central-b", "central-c", "east-2"])
            #expect(try daos.libraries.read(byPrimaryKey: "east")?.shelves.map(\.uniqueId) == ["east-1"])
            #expect(try daos.shelves.read(byPrimaryKey: "east-2")?.books == east2.books)

            // A child naming no existing owner, or held by a parent it does not name: constraint, nothing written.
            let before = try daos.libraries.read()
            expectStorageError(.constraint) { try daos.books.persist(Sample.book(5_000, shelf: "nowhere")) }
            expectStorageError(.constraint) { try daos.shelves.persist(shelf(east2, library: "nowhere")) }
            expectStorageError(.constraint) {
                try daos.shelves.persist(shelf(east2, books: [Sample.book(5_001, shelf: "central-a")]))
            }
            #expect(try daos.libraries.read() == before)

            // Updating a parent's own fields keeps its children.
            let central = try #require(try daos.libraries.read(byPrimaryKey: "central"))
            try daos.libraries.persist(Library(
                uniqueId: "central", name: "Renamed", city: nil, opened: central.opened, rating: nil,
                shelves: central.shelves))
            #expect(try daos.libraries.read(byPrimaryKey: "central")?.shelves == central.shelves)
            #expect(try daos.libraries.count(where: #Predicate { $0.city == nil }) == 2)

            // Erases cascade at every level; erase(where:) on the lowest level.
            let eastBooks = try daos.books.count(where: #Predicate { $0.shelfId == "east-1" })
            let afterMove = try daos.counts()
            #expect(try daos.libraries.erase(byPrimaryKey: "east"))
            #expect(try daos.counts() == [afterMove[0] - 1, afterMove[1] - 1, afterMove[2] - eastBooks])
            #expect(try daos.books.count(where: #Predicate { $0.shelfId == "east-1" }) == 0)
            let onLoan = try daos.books.count(where: #Predicate { $0.onLoan })
            #expect(try daos.books.erase(where: #Predicate { $0.onLoan }) == onLoan)
            #expect(try daos.books.count(where: #Predicate { $0.onLoan }) == 0)
            #expect(try daos.libraries.erase(byPrimaryKey: "east") == false)
            expected = try daos.libraries.read()
        }
        try withLibrary(backend, in: directory.url) { daos, _ in
            let read = try daos.libraries.read()
            #expect(read == expected)
        }
    }

    @Test("calls after close are .closed; the store opens again with everything", arguments: localBackends)
    func closeAndReopen(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let store = try backend.open(directory.url)
        let daos = try LibraryDAOs(store)
        try daos.libraries.persist(Sample.corpus())
        try store.close()
        try store.close()
        expectStorageError(.closed) { _ = try daos.books.read() }
        expectStorageError(.closed) { try daos.libraries.persist(Sample.corpus()) }
        expectStorageError(.closed) { _ = try store.anyStorage(for: BookRecord.self) }
        try withLibrary(backend, in: directory.url) { daos, _ in
            let read = try daos.libraries.read()
            #expect(read == Sample.sortedCorpus())
        }
    }

    @Test("a lightweight migration adds an optional field; the old type is refused after it", arguments: localBackends)
    func migration(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        try withLibrary(backend, in: directory.url) { daos, _ in try daos.libraries.persist(Sample.corpus()) }
        // Without the migration, the new type is refused, naming the field.
        do {
            let store = try backend.open(directory.url)
            defer { try? store.close() }  // test clean-up
            let error = expectStorageError(.schemaMismatch) { _ = try store.anyStorage(for: LibraryRecordV2.self) }
            #expect(error?.message.contains("website") == true)
        }
        var migrator = Migrator()
        migrator.register("v2: libraries have a website", [.lightweight(to: LibraryRecordV2.self)])
        let store = try backend.open(directory.url)
        #expect(try migrator.migrate(store) == ["v2: libraries have a website"])
        let v2 = try store.anyStorage(for: LibraryRecordV2.self)
        let read = try v2.readAll()
        #expect(read.map(\.code) == Sample.corpus().map(\.uniqueId).sorted())
        #expect(read.allSatisfy { $0.website == nil })
        #expect(read.map { $0.shelves.map(ShelfTranslator().plain(from:)) } == Sample.corpus().sorted { $0.uniqueId < $1.uniqueId }.map(\.shelves))
        var central = try #require(read.first { $0.code == "central" })
        central.website = "https://example.org/ö"
        try v2.persist(central)
        #expect(try v2.read(where: #Predicate { $0.website != nil }).map(\.code) == ["central"])
        try store.close()

        let reopened = try backend.open(directory.url)
        defer { try? reopened.close() }  // test clean-up
        #expect(try migrator.migrate(reopened) == [])
        #expect(try Migrator.state(of: reopened).applied == ["v2: libraries have a website"])
        expectStorageError(.schemaMismatch) { _ = try reopened.anyStorage(for: LibraryRecord.self) }
        #expect(try reopened.anyStorage(for: LibraryRecordV2.self).read(primaryKey: "central")?.website == "https://example.org/ö")
    }

    func shelf(_ shelf: Shelf, library: String? = nil, books: [Book]? = nil) -> Shelf {
        Shelf(
            uniqueId: shelf.uniqueId, libraryCode: library ?? shelf.libraryCode, floor: shelf.floor, label: shelf.label,
            capacity: shelf.capacity, books: books ?? shelf.books)
    }
}
