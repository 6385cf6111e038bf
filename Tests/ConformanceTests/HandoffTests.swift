import DAOCore
import Dispatch
import Foundation
import Synchronization
import Testing
import TestSupport

// `DAO.persist` hands its records to the storage one at a time, translated
// inside the storage's transaction (`Storage.persist(handingOver:)`). These
// tests hold every backend to the answers of the array the DAO built before
// every write: a failure mid-stream writes nothing, a translation error comes
// before any record's refusal and a refused real before what the engine
// refused, and the last record with a key wins, moving children between
// parents within one call.

/// A plain object that stands for a ready record; its translator refuses
/// the keys it is told to.
private struct Held<R: Record & Equatable>: Plain {
    let uniqueId: R.PrimaryKey
    let record: R
    init(_ record: R) {
        uniqueId = record.primaryKey
        self.record = record
    }
}

private struct Refused: Error {}

private struct HeldTranslator<R: Record & Equatable>: Translator {
    var refusing: Set<R.PrimaryKey> = []
    func record(from plain: Held<R>) throws -> R {
        if refusing.contains(plain.uniqueId) { throw Refused() }
        return plain.record
    }
    func plain(from record: R) throws -> Held<R> { Held(record) }
}

/// A station (String key) with samples (Int64 key) that hold reals, written
/// through `Codable` (not by position): each record is checked before it is
/// written.
private struct Station: Record, Equatable {
    typealias PrimaryKey = String
    var code: String
    var name: String
    var samples: [Sample]
    static let entity = Entity<Station>(
        "handoff_stations", primaryKey: "code", \.code, fields: [Field("name", \.name)],
        relations: [Relation("samples", \.samples, foreignKey: "stationCode", \Sample.stationCode)])
}

private struct Sample: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var stationCode: String
    var value: Double
    var note: String?
    static let entity = Entity<Sample>(
        "handoff_samples", primaryKey: "id", \.id,
        fields: [Field("stationCode", \.stationCode), Field("value", \.value), Field("note", \.note)],
        indexes: [Index("handoff_samples_by_value", on: ["value"])],
        ownedBy: Station.self)
}

private func station(_ code: String, _ name: String = "north", samples: [Int64]) -> Station {
    Station(
        code: code, name: name,
        samples: samples.map { Sample(id: $0, stationCode: code, value: Double($0) / 4, note: $0 % 2 == 0 ? nil : "é🚀\u{0}") })
}

private func library(_ code: String, shelves: [(id: String, books: [Int64])]) -> TestSupport.LibraryRecord {
    LibraryTranslator().record(
        from: Library(
            uniqueId: code, name: "Library \(code)", city: code == "b" ? nil : "Zoë",
            opened: Date(timeIntervalSince1970: 1_600_000_000), rating: 4.5,
            shelves: shelves.map { shelf in
                Shelf(
                    uniqueId: shelf.id, libraryCode: code, floor: 1, label: "shelf \(shelf.id)", capacity: nil,
                    books: shelf.books.map { id in
                        Book(
                            uniqueId: id, shelfId: shelf.id, title: "Title \(id)", author: "Author \(id % 3)",
                            year: 2000 + id, price: Double(id) + 0.25, weight: nil, acquired: nil,
                            summary: String(repeating: "s", count: Int(id)), cover: nil, onLoan: id % 2 == 0)
                    })
            }))
}

/// Everything stored of the catalog's three levels.
private func catalogState(_ store: any Store) throws -> ([CatalogAuthor], [CatalogBook], [CatalogChapter]) {
    (
        try store.anyStorage(for: CatalogAuthor.self).readAll(), try store.anyStorage(for: CatalogBook.self).readAll(),
        try store.anyStorage(for: CatalogChapter.self).readAll()
    )
}

private func libraryState(_ store: any Store) throws -> ([TestSupport.LibraryRecord], [TestSupport.ShelfRecord], [TestSupport.BookRecord]) {
    (
        try store.anyStorage(for: TestSupport.LibraryRecord.self).readAll(), try store.anyStorage(for: TestSupport.ShelfRecord.self).readAll(),
        try store.anyStorage(for: TestSupport.BookRecord.self).readAll()
    )
}

@Suite("Conformance: records handed to the storage one at a time")
struct HandoffTests {
    @Test("a translation that fails mid-stream writes nothing, at any level, by Codable or by position", arguments: allBackends)
    func translationFailsMidStream(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let authors = try store.anyStorage(for: CatalogAuthor.self)
            let initial = catalogAuthors()
            try authors.persist(initial)
            let before = try catalogState(store)
            // The first author replaced (one book fewer, a chapter changed),
            // a new one, then one that fails, then one more.
            var changed = initial[0]
            changed.books.removeLast()
            changed.books[0].chapters[0].text = "changed"
            let fresh = CatalogAuthor(id: "author-9", name: "Nine", country: nil, books: [])
            let dao = DAO(storage: authors, translator: HeldTranslator<CatalogAuthor>(refusing: ["author-2"]))
            let error = #expect(throws: StorageError.self) {
                try dao.persist([changed, fresh, initial[1], initial[2]].map { Held($0) })
            }
            #expect(error?.kind == .translation)
            #expect(error?.operation == .translate)
            #expect(error?.path == nil)
            #expect(error?.underlying is Refused)
            #expect(error?.message.contains("plain object author-2 could not be translated") == true)
            #expect(try catalogState(store) == before)
            let single = #expect(throws: StorageError.self) { try dao.persist(Held(initial[1])) }
            #expect(single?.kind == .translation)
            #expect(try catalogState(store) == before)

            let libraries = try store.anyStorage(for: TestSupport.LibraryRecord.self)
            try libraries.persist([library("a", shelves: [("s1", [1, 2]), ("s2", [3])]), library("b", shelves: [])])
            let shelvedBefore = try libraryState(store)
            let positional = DAO(storage: libraries, translator: HeldTranslator<TestSupport.LibraryRecord>(refusing: ["c"]))
            let failed = #expect(throws: StorageError.self) {
                try positional.persist(
                    [library("a", shelves: [("s1", [1])]), library("b", shelves: [("s2", [3, 4])]), library("c", shelves: [])]
                        .map { Held($0) })
            }
            #expect(failed?.kind == .translation)
            #expect(try libraryState(store) == shelvedBefore)
        }
    }

    @Test("a translation error comes before a record's refusal earlier in the call", arguments: allBackends)
    func translationErrorComesFirst(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let stations = try store.anyStorage(for: Station.self)
            try stations.persist(station("n", samples: [1, 2]))
            let before = try stations.readAll()
            let dao = DAO(storage: stations, translator: HeldTranslator<Station>(refusing: ["z"]))
            // The first record holds a sample that names another station (a
            // constraint), the second a NaN (stored), the third fails to
            // translate: the array the DAO built before any write never
            // reached the storage.
            var stray = station("m", samples: [5])
            stray.samples[0].stationCode = "n"
            var unstorable = station("o", samples: [6])
            unstorable.samples[0].value = .nan
            for batch in [[stray, station("z", samples: [])], [unstorable, station("z", samples: [])]] {
                let error = #expect(throws: StorageError.self) { try dao.persist(batch.map { Held($0) }) }
                #expect(error?.kind == .translation)
                #expect(try stations.readAll() == before)
            }

            let libraries = try store.anyStorage(for: TestSupport.LibraryRecord.self)
            let positional = DAO(storage: libraries, translator: HeldTranslator<TestSupport.LibraryRecord>(refusing: ["z"]))
            var negativeZero = library("a", shelves: [("s1", [1])])
            negativeZero.shelves[0].books[0].price = -0.0
            let error = #expect(throws: StorageError.self) {
                try positional.persist([negativeZero, library("z", shelves: [])].map { Held($0) })
            }
            #expect(error?.kind == .translation)
            #expect(try libraries.readAll() == [])
        }
    }

    @Test("a NaN or -0.0 is written as any real; the engine's refusal of another record is the answer", arguments: allBackends)
    func realsDoNotChangeEngineFailure(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let stations = try store.anyStorage(for: Station.self)
            try stations.persist(station("n", samples: [1]))
            let before = try stations.readAll()
            let dao = DAO(storage: stations, translator: HeldTranslator<Station>())
            var stray = station("m", samples: [5])
            stray.samples[0].stationCode = "n"
            var unstorable = station("o", samples: [6, 7])
            unstorable.samples[1].value = .nan
            let error = #expect(throws: StorageError.self) {
                try dao.persist([station("p", samples: [8]), stray, unstorable].map { Held($0) })
            }
            #expect(error?.kind == .constraint)
            #expect(try stations.readAll() == before)
            let constraint = #expect(throws: StorageError.self) {
                try dao.persist([station("p", samples: [8]), stray, station("o", samples: [6])].map { Held($0) })
            }
            #expect(constraint?.kind == .constraint)
            #expect(try stations.readAll() == before)
            // The NaN alone is stored, and read back as a NaN.
            try dao.persist([unstorable].map { Held($0) })
            let stored = try stations.read(primaryKey: "o")
            #expect(stored?.samples.map(\.value.isNaN) == [false, true])

            // By position: the shelf of the first library names another one.
            let libraries = try store.anyStorage(for: TestSupport.LibraryRecord.self)
            try libraries.persist(library("a", shelves: [("s1", [1])]))
            let shelvedBefore = try libraryState(store)
            let positional = DAO(storage: libraries, translator: HeldTranslator<TestSupport.LibraryRecord>())
            var misplaced = library("b", shelves: [("s2", [2])])
            misplaced.shelves[0].libraryCode = "a"
            var negativeZero = library("c", shelves: [("s3", [3, 4])])
            negativeZero.shelves[0].books[1].weight = -0.0
            negativeZero.shelves[0].books[1].acquired = Date(timeIntervalSinceReferenceDate: -0.0)
            let refused = #expect(throws: StorageError.self) {
                try positional.persist([misplaced, negativeZero].map { Held($0) })
            }
            if backend.keepsNegativeZeroDates {
                #expect(refused?.kind == .constraint)
            } else {
                // The property-list store checks every record's reals first
                // (a -0.0 weight is stored; a date of -0.0 is not).
                #expect(refused?.kind == .invalidArgument)
                #expect(refused?.message.contains("field 'acquired' of record 4") == true)
            }
            #expect(try libraryState(store) == shelvedBefore)
        }
    }

    @Test("in one call the last record with a key wins and children move between parents", arguments: allBackends)
    func duplicatesAndMoves(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let authors = try store.anyStorage(for: CatalogAuthor.self)
            let dao = DAO(storage: authors, translator: HeldTranslator<CatalogAuthor>())
            let initial = catalogAuthors()
            try dao.persist(initial.map { Held($0) })
            // Book 1-2 moves to author 2 (with its chapters), then author 1
            // comes again, with book 1-1 only: the last one wins.
            var first = initial[0]
            var second = initial[1]
            var moved = first.books.removeLast()
            moved.authorId = second.id
            for index in moved.chapters.indices { moved.chapters[index].text += " moved" }
            second.books.insert(moved, at: 0)  // children come back in key order
            var firstAgain = first
            firstAgain.name = "again"
            firstAgain.books[0].title = "again"
            try dao.persist([first, second, firstAgain].map { Held($0) })
            let expected = [firstAgain, second, initial[2]]
            #expect(try authors.readAll() == expected)
            #expect(try store.anyStorage(for: CatalogBook.self).readAll().count == 6)
            #expect(try store.anyStorage(for: CatalogChapter.self).read(where: #Predicate { $0.bookId == "book-1-2" }).map(\.text)
                == moved.chapters.map(\.text))

            // Moved back within one call: first taken from author 2 by the
            // first record, then held by the last one again.
            var back = moved
            back.authorId = first.id
            first.books.append(back)
            try dao.persist([first, initial[1], second].map { Held($0) })
            #expect(try authors.readAll() == [first.withoutBook(back.id), second, initial[2]])

            // The same through the positional records: a book moves between
            // shelves of two libraries, and a library comes twice.
            let libraries = try store.anyStorage(for: TestSupport.LibraryRecord.self)
            let positional = DAO(storage: libraries, translator: HeldTranslator<TestSupport.LibraryRecord>())
            try positional.persist([library("a", shelves: [("s1", [1, 2])]), library("b", shelves: [("s2", [3])])].map { Held($0) })
            let a = library("a", shelves: [("s1", [1])])
            var b = library("b", shelves: [("s2", [2, 3])])
            b.shelves[0].books[0].title = "moved"
            try positional.persist([library("a", shelves: [("s1", [1, 2, 9])]), b, a].map { Held($0) })
            #expect(try libraries.readAll() == [a, b])
            #expect(try store.anyStorage(for: TestSupport.BookRecord.self).readAll().map(\.id) == [1, 2, 3])
        }
    }
}

/// Boards as their own plain objects; the translation of `waitAt` waits
/// until the test lets it go on, after telling it that it started.
private struct PausingTranslator: Translator {
    let waitAt: String
    let started: DispatchSemaphore
    let resume: DispatchSemaphore
    func record(from plain: BoardRecord) -> BoardRecord {
        if plain.id == waitAt {
            started.signal()
            resume.wait()
        }
        return plain
    }
    func plain(from record: BoardRecord) -> BoardRecord { record }
}

extension HandoffTests {
    @Test("an observer that registers while a call hands its records over still gets the commit", arguments: allBackends)
    func observerJoinsMidCall(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let boards = try store.anyStorage(for: BoardRecord.self)
            let commits = try #require(boards.commits)
            let cards = DAO(storage: try store.anyStorage(for: CardRecord.self), translator: Same<CardRecord>())
            func board(_ id: String, cards: [String]) -> BoardRecord {
                BoardRecord(
                    id: id, title: "Zoë \(id)",
                    cards: cards.map {
                        CardRecord(
                            id: $0, boardId: id, title: "é🚀", rank: 1, done: false, estimate: 0.5,
                            items: [ItemRecord(id: Int64($0.count), cardId: $0, text: "a\u{0}b", checked: true)])
                    })
            }
            try await boards.persist(board("b-1", cards: ["c-1"]))
            let started = DispatchSemaphore(value: 0)
            let resume = DispatchSemaphore(value: 0)
            let dao = DAO(storage: boards, translator: PausingTranslator(waitAt: "b-2", started: started, resume: resume))
            // The write runs on a thread of its own and stops in the
            // translation of its second board: nobody observed the store
            // when it began.
            let written = Mutex<(any Error)??>(nil)
            let done = DispatchSemaphore(value: 0)
            let batch = [board("b-1", cards: ["c-1", "c-2"]), board("b-2", cards: ["c-3"])]
            DispatchQueue.global().async {
                do {
                    try dao.persist(batch)
                    written.withLock { $0 = .some(nil) }
                } catch {
                    written.withLock { $0 = .some(error) }
                }
                done.signal()
            }
            await waitOffThePool(started)
            // Now an observer of the children registers and reads: the
            // store as it was before the call.
            let iterator = cards.observe(sortedBy: [SortDescriptor(\.id)]).makeAsyncIterator()
            let first = try #require(try await nextSnapshot(iterator))
            #expect(first.results.map(\.id) == ["c-1"])
            let rereads = commits.rereadCount
            resume.signal()
            await waitOffThePool(done)
            let outcome = written.withLock { $0 }
            #expect(outcome.map { $0 == nil } == true, "the call failed: \(String(describing: outcome))")
            await commits.drained()
            // The commit is reported (without its records, which were let
            // go) and the observer reads again.
            #expect(commits.rereadCount > rereads)
            guard commits.rereadCount > rereads else { return }
            let next = try #require(try await nextSnapshot(iterator))
            #expect(next.results.map(\.id) == ["c-1", "c-2", "c-3"])
            #expect(next.results == (try await cards.read(sortedBy: [SortDescriptor(\.id)])))
        }
    }
}

extension CatalogAuthor {
    /// This author without the book `id`.
    fileprivate func withoutBook(_ id: String) -> CatalogAuthor {
        var copy = self
        copy.books.removeAll { $0.id == id }
        return copy
    }
}
