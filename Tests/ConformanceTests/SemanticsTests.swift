import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

/// A small library: two authors whose keys differ only in normalization, books
/// with and without chapters, chapters given out of key order.
///
/// On the property-list backend, which refuses a second spelling of stored text
/// (see `withPlistTextLimitation`), pass it as `backend` to get a second author
/// spelled "Zed" for tests that are not about normalization.
func sampleLibrary(_ backend: TestBackend? = nil) -> [AuthorRecord] {
    let second = backend?.name == "plist" ? "Zed" : AwkwardText.nfd
    func book(_ isbn: String, _ author: String, year: Int64, chapters: [Int64]) -> BookRecord {
        BookRecord(
            isbn: isbn, authorId: author, title: "T \(isbn)", subtitle: year % 2 == 0 ? nil : "s", year: year,
            price: year % 3 == 0 ? nil : Double(year) / 10,
            chapters: chapters.map {
                ChapterRecord(number: $0, bookId: isbn, heading: "h\($0)", pages: $0 % 7, weight: 0.5, draft: $0 % 2 == 0)
            })
    }
    return [
        AuthorRecord(
            id: AwkwardText.nfc, name: AwkwardText.nfc, rating: 4.5, born: nil,
            books: [
                book("b1", AwkwardText.nfc, year: 2001, chapters: [30, 10, 20]),
                book("b2", AwkwardText.nfc, year: 2002, chapters: []),
                book("b3", AwkwardText.nfc, year: 2003, chapters: [40]),
            ]),
        AuthorRecord(
            id: second, name: second, rating: -.infinity, born: Date(timeIntervalSince1970: 0),
            books: [
                book("b4", second, year: 2004, chapters: []),
                book("b5", second, year: 2005, chapters: [50, 51]),
            ]),
    ]
}

@Suite("Conformance: one meaning on every backend")
struct SemanticsTests {
    @Test("keys that differ only in Unicode normalization are different keys, with their own children", arguments: allBackends)
    func normalizationDistinctKeys(backend: TestBackend) throws {
        let library = sampleLibrary()
        try withPlistTextLimitation(backend) {
            try withReopenedStore(backend) { store in
                try store.anyStorage(for: AuthorRecord.self).persist(library)
            } then: { store in
                let authors = try store.anyStorage(for: AuthorRecord.self)
                let all = try authors.readAll()
                #expect(all.count == 2)
                // "Zoe\u{308}" sorts before "Zo\u{EB}" by bytes.
                #expect(identical(all, [sortedLibrary(library[1]), sortedLibrary(library[0])]))
                #expect(identical(try authors.read(primaryKey: AwkwardText.nfd), sortedLibrary(library[1])))
                #expect(identical(try authors.read(primaryKey: AwkwardText.nfc), sortedLibrary(library[0])))
                #expect(try authors.count(where: #Predicate { $0.name == "Zo\u{EB}" }) == 1)
                let chapters = try store.anyStorage(for: ChapterRecord.self)
                #expect(try chapters.count() == 6)
            }
            try withStore(backend) { store, _ in
                let authors = try store.anyStorage(for: AuthorRecord.self)
                try authors.persist(library)
                // Replacing one author's books leaves the other's alone.
                var nfd = library[1]
                nfd.books.removeLast()
                try authors.persist(nfd)
                let books = try store.anyStorage(for: BookRecord.self)
                #expect(try books.count() == 4)
                #expect(try books.count(where: #Predicate { $0.authorId == "Zo\u{EB}" }) == 3)
            }
        }
    }

    @Test("text canonically equivalent to stored text: kept apart, or refused by the property list", arguments: allBackends)
    func equivalentSpellings(backend: TestBackend) throws {
        try withReopenedStore(backend) { store in
            let chapters = try store.anyStorage(for: ChapterRecord.self)
            let authors = try store.anyStorage(for: AuthorRecord.self)
            try authors.persist(sampleLibrary()[0])
            let first = ChapterRecord(number: 1, bookId: "b2", heading: "caf\u{E9}", pages: 1, weight: 1, draft: false)
            try chapters.persist(first)
            // Replacing a record's own spelling is no conflict.
            try chapters.persist(ChapterRecord(number: 1, bookId: "b2", heading: "cafe\u{301}", pages: 1, weight: 1, draft: false))
            try chapters.persist(first)
            // In both orders: the NFD spelling after the NFC one, the NFC one after
            // the NFD one; and an ASCII text after its equivalent, the Kelvin sign.
            let conflicting = [
                ChapterRecord(number: 2, bookId: "b2", heading: "cafe\u{301}", pages: 2, weight: 1, draft: false),
                ChapterRecord(number: 4, bookId: "b3", heading: "Zo\u{EB}", pages: 2, weight: 1, draft: false),
                ChapterRecord(number: 6, bookId: "b3", heading: "K", pages: 2, weight: 1, draft: false),
            ]
            try chapters.persist([
                ChapterRecord(number: 3, bookId: "b3", heading: "Zoe\u{308}", pages: 1, weight: 1, draft: false),
                ChapterRecord(number: 5, bookId: "b3", heading: "\u{212A}", pages: 1, weight: 1, draft: false),
            ])
            for chapter in conflicting {
                if backend.name == "plist" {
                    #expect {
                        try chapters.persist([chapter])
                    } throws: { ($0 as? StorageError)?.kind == .invalidArgument }
                } else {
                    try chapters.persist(chapter)
                }
            }
            // Two fields of one record.
            let book = BookRecord(isbn: "b9", authorId: AwkwardText.nfc, title: "e\u{301}", subtitle: "\u{E9}", year: 1, price: nil, chapters: [])
            if backend.name == "plist" {
                #expect {
                    try store.anyStorage(for: BookRecord.self).persist(book)
                } throws: { ($0 as? StorageError)?.kind == .invalidArgument }
            } else {
                try store.anyStorage(for: BookRecord.self).persist(book)
            }
        } then: { store in
            let headings = try store.anyStorage(for: ChapterRecord.self).read(where: #Predicate { $0.number < 10 })
                .map { Array($0.heading.utf8) }
            var expected = ["caf\u{E9}", "cafe\u{301}", "Zoe\u{308}", "Zo\u{EB}", "\u{212A}", "K"]
            if backend.name == "plist" { expected = ["caf\u{E9}", "Zoe\u{308}", "\u{212A}"] }
            #expect(headings == expected.map { Array($0.utf8) })
            #expect(try store.anyStorage(for: BookRecord.self).count() == (backend.name == "plist" ? 3 : 4))
        }
    }

    @Test("a child held by a parent must name that parent's key by the same scalars", arguments: allBackends)
    func childNamesParentExactly(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let authors = try store.anyStorage(for: AuthorRecord.self)
            var author = sampleLibrary()[0]
            author.books[0].authorId = AwkwardText.nfd  // canonically equivalent, not the same key
            #expect {
                try authors.persist(author)
            } throws: { ($0 as? StorageError)?.kind == .constraint }
            #expect(try authors.count() == 0)
        }
    }

    @Test("predicates and sorts over relations see every child", arguments: allBackends)
    func relationPredicates(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let authors = try store.anyStorage(for: AuthorRecord.self)
            try authors.persist(sampleLibrary(backend))
            let books = try store.anyStorage(for: BookRecord.self)
            #expect(try books.count(where: #Predicate { $0.chapters.isEmpty }) == 2)
            #expect(try books.count(where: #Predicate { $0.chapters.count > 1 }) == 2)
            let byChapters = try books.read(sortedBy: [SortDescriptor(\.chapters.count, order: .reverse)])
            #expect(byChapters.map(\.isbn) == ["b1", "b5", "b3", "b2", "b4"])
            let nfc = AwkwardText.nfc
            let erased = try books.erase(where: #Predicate { $0.authorId == nfc && $0.chapters.isEmpty })
            #expect(erased == 1)
            #expect(try books.readAll().map(\.isbn) == ["b1", "b3", "b4", "b5"])
            #expect(try authors.count(where: #Predicate { $0.books.count == 2 }) == 2)
            #expect(try authors.count(where: #Predicate { $0.books.count == 3 }) == 0)
        }
    }

    @Test("text compares by Unicode scalars in every predicate", arguments: allBackends)
    func textByScalars(backend: TestBackend) throws {
        try withPlistTextLimitation(backend) {
            try withStore(backend) { store, _ in
                let authors = try store.anyStorage(for: AuthorRecord.self)
                try authors.persist(sampleLibrary())
                let nfd = AwkwardText.nfd
                #expect(try authors.read(where: #Predicate { $0.name == nfd }).map(\.id) == [nfd])
                #expect(try authors.read(where: #Predicate { $0.id != nfd }).map(\.id) == [AwkwardText.nfc])
                #expect(try authors.read(where: #Predicate { $0.name.contains("e") }).map(\.id) == [nfd])
                #expect(try authors.read(where: #Predicate { $0.name.contains("\u{308}") }).map(\.id) == [nfd])
                #expect(try authors.read(where: #Predicate { $0.name.starts(with: "Zoe") }).map(\.id) == [nfd])
                // "Zoe\u{308}" < "Zo\u{EB}" by bytes (0x65 < 0xC3).
                #expect(try authors.read(where: #Predicate { $0.name < "Zo\u{EB}" }).map(\.id) == [nfd])
                #expect(try authors.read(where: #Predicate { ["Zo\u{EB}"].contains($0.id) }).map(\.id) == [AwkwardText.nfc])
                let chapters = try store.anyStorage(for: ChapterRecord.self)
                // Two fields compared with each other follow the same rules.
                #expect(try chapters.count(where: #Predicate { $0.heading == $0.bookId }) == 0)
            }
        }
    }

    @Test("-0.0 and NaN are stored as given, compare as IEEE 754 and sort in one total order", arguments: allBackends)
    func negativeZeroAndNaN(backend: TestBackend) throws {
        let negativeNaN = -Double.nan
        let payloadNaN = Double(bitPattern: 0x7FF0_0000_0000_1234)
        // Chapter weights (a real field of the third level) and book prices
        // (an optional real, in a composite index's entity).
        let weights: [Double] = [-0.0, .nan, 0.0, 1, -1, .infinity, -.infinity, negativeNaN, payloadNaN, -0.0]
        var library = sampleLibrary(backend)
        library[0].books[0].chapters = weights.enumerated().map { index, weight in
            ChapterRecord(number: Int64(index), bookId: "b1", heading: "h", pages: 0, weight: weight, draft: false)
        }
        library[0].books[1].price = -0.0
        library[0].books[2].price = .nan
        library[1].rating = -0.0
        func bits(_ value: Double?) -> UInt64? { value?.bitPattern }
        // What the backend gives back for `value`: a NaN's sign and payload
        // only where the backend keeps them (a file store, until it is
        // opened again).
        var reopened = false
        func expected(_ value: Double) -> UInt64 {
            let keeps = backend.keepsNaNPayloads || (backend.isFileStore && !reopened)
            return value.isNaN && !keeps ? Double.nan.bitPattern : value.bitPattern
        }
        let stored = library
        func check(_ store: any Store) throws {
            let authors = try store.anyStorage(for: AuthorRecord.self)
            let read = try authors.readAll()
            let expectedChapters = stored[0].books[0].chapters.map { expected($0.weight) }
            let first = read.first { Array($0.id.utf8) == Array(stored[0].id.utf8) }
            func book(_ isbn: String) -> BookRecord? { first?.books.first { $0.isbn == isbn } }
            #expect(first?.books.map(\.isbn) == ["b1", "b2", "b3"])
            #expect(book("b1")?.chapters.map(\.weight.bitPattern) == expectedChapters)
            #expect(bits(book("b2")?.price) == stored[0].books[1].price.map(expected))
            #expect(bits(book("b3")?.price) == Double.nan.bitPattern)
            #expect(read.first { Array($0.id.utf8) == Array(stored[1].id.utf8) }?.rating.bitPattern == expected(stored[1].rating))

            // IEEE 754 in predicates: -0.0 == 0.0, NaN equal to nothing, not
            // less, not greater; `!=` true for NaN, as in Swift.
            let chapters = try store.anyStorage(for: ChapterRecord.self)
            func numbers(_ predicate: Predicate<ChapterRecord>) throws -> [Int64] {
                try chapters.read(where: predicate).map(\.number).filter { $0 < 10 }.sorted()
            }
            let zero = 0.0
            let minusZero = -0.0
            let nan = Double.nan
            let zeros = stored[0].books[0].chapters.filter { $0.weight == 0 }.map(\.number)
            #expect(try numbers(#Predicate { $0.weight == zero }) == zeros)
            #expect(try numbers(#Predicate { $0.weight == minusZero }) == zeros)
            #expect(try numbers(#Predicate { $0.weight > 0.5 }) == [3, 5])
            #expect(try numbers(#Predicate { $0.weight >= 1 }) == [3, 5])
            #expect(try numbers(#Predicate { $0.weight < -0.5 }) == [4, 6])
            #expect(try numbers(#Predicate { $0.weight == nan }) == [])
            #expect(try numbers(#Predicate { $0.weight != nan }) == Array(0...9))
            #expect(try numbers(#Predicate { $0.weight != 1 }) == [0, 1, 2, 4, 5, 6, 7, 8, 9])
            #expect(try numbers(#Predicate { !($0.weight > 0.5) }) == [0, 1, 2, 4, 6, 7, 8, 9])

            // One total order: -inf < … < -0.0 = 0.0 < … < +inf < NaN, ties
            // (-0.0 and 0.0, every NaN) by primary key.
            let sorted = try chapters.read(sortedBy: [SortDescriptor(\ChapterRecord.weight)])
                .filter { $0.bookId == "b1" && $0.number < 10 }.map(\.number)
            #expect(sorted == [6, 4, 0, 2, 9, 3, 5, 1, 7, 8])
            let reversed = try chapters.read(sortedBy: [SortDescriptor(\ChapterRecord.weight, order: .reverse)])
                .filter { $0.bookId == "b1" && $0.number < 10 }.map(\.number)
            #expect(reversed == [1, 7, 8, 5, 3, 0, 2, 9, 4, 6])
            let books = try store.anyStorage(for: BookRecord.self)
            // b1 and b4 have no price (nil first, by key), b2 -0.0, b5 200.5, b3 NaN.
            #expect(try books.read(sortedBy: [SortDescriptor(\BookRecord.price)]).map(\.isbn) == ["b1", "b4", "b2", "b5", "b3"])
        }
        try withReopenedStore(backend) { store in
            try store.anyStorage(for: AuthorRecord.self).persist(stored)
            try check(store)
        } then: { store in
            reopened = true
            try check(store)
        }
    }

    @Test("every value a field can hold comes back bit for bit, after reopening too", arguments: allBackends)
    func extremeValues(backend: TestBackend) throws {
        // The property list refuses a second spelling of equivalent text (tested above).
        let texts = Generator.texts(distinctUpToEquivalence: backend.name == "plist")
        var chapters: [ChapterRecord] = []
        let keys: [Int64] = [.min, .max, 0, -1, 1, .min + 1, .max - 1]
        // -0.0 and the canonical NaN too, on every backend.
        let reals = AwkwardReal.all + [-0.0, -1e-300, .nan]
        for (index, weight) in reals.enumerated() {
            chapters.append(
                ChapterRecord(
                    number: index < keys.count ? keys[index] : Int64(index * 1000), bookId: "b",
                    heading: texts[index % texts.count], pages: keys[index % keys.count],
                    weight: weight, draft: index % 2 == 0))
        }
        var books: [BookRecord] = []
        for (index, text) in texts.enumerated() {
            // Keys and indexed fields stay short: LMDB keys hold at most 511 bytes.
            let short = String(text.utf8.prefix(64)) ?? "x"
            books.append(
                BookRecord(
                    isbn: short + "#\(index)", authorId: "a", title: short, subtitle: index % 2 == 0 ? text : nil,
                    year: Int64(index), price: index % 3 == 0 ? nil : AwkwardReal.all[index % AwkwardReal.all.count],
                    chapters: []))
        }
        books[0].chapters = chapters.map {
            var chapter = $0
            chapter.bookId = books[0].isbn
            return chapter
        }
        let author = AuthorRecord(
            id: "a", name: "\u{0}", rating: .leastNonzeroMagnitude,
            born: Date(timeIntervalSinceReferenceDate: -.infinity), books: books)
        let expected = sortedLibrary(author)
        try withReopenedStore(backend) { store in
            let authors = try store.anyStorage(for: AuthorRecord.self)
            try authors.persist(author)
            let read = try authors.read(primaryKey: "a")
            #expect(identical(read, expected), "\(difference(read, expected))")
        } then: { store in
            let read = try store.anyStorage(for: AuthorRecord.self).read(primaryKey: "a")
            #expect(identical(read, expected), "\(difference(read, expected))")
        }
    }

    @Test("children come back in primary-key order, whatever order they were given in", arguments: allBackends)
    func childrenInKeyOrder(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let authors = try store.anyStorage(for: AuthorRecord.self)
            let library = sampleLibrary(backend)
            try authors.persist(library)
            let read = try authors.read(primaryKey: AwkwardText.nfc)
            #expect(read?.books[0].chapters.map(\.number) == [10, 20, 30])
            #expect(identical(read, sortedLibrary(library[0])))
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            try dialogs.persist(dialogRecord(1, messageIds: [5, -3, 9, 1]))
            #expect(try dialogs.read(primaryKey: 1)?.messages.map(\.id) == [-3, 1, 5, 9])
        }
    }

    @Test("a child moves to a parent that had no children, in one persist", arguments: allBackends)
    func childMovesToNewParent(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            try dialogs.persist([dialogRecord(1, messageIds: [1, 2, 3])])
            // Dialog 2 is new; message 2 is stored under dialog 1.
            try dialogs.persist([dialogRecord(2, messageIds: [4, 2])])
            #expect(try dialogs.read(primaryKey: 1)?.messages.map(\.id) == [1, 3])
            #expect(try dialogs.read(primaryKey: 2)?.messages.map(\.id) == [2, 4])
            let messages = try store.anyStorage(for: MessageRecord.self)
            #expect(try messages.read(primaryKey: 2)?.dialogId == 2)
            #expect(try messages.readAll().map(\.id) == [1, 2, 3, 4])
        }
    }

    @Test("persisting a parent again updates its stored children, adds new ones and takes moved ones", arguments: allBackends)
    func childrenUpdatedAddedAndMoved(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            try dialogs.persist([dialogRecord(1, messageIds: [1, 2, 3]), dialogRecord(2, messageIds: [7, 8])])
            // Message 1 changes every field but its keys, 3 is dropped, 5 is
            // new and 7 moves here from dialog 2, which keeps 8.
            let changed = messageRecord(
                1, dialog: 1, text: "changed", date: Date(timeIntervalSince1970: 5), isRead: true, type: 9)
            let again = DialogRecord(
                id: 1, isPinned: true,
                messages: [changed, messageRecord(2, dialog: 1), messageRecord(5, dialog: 1), messageRecord(7, dialog: 1)])
            try dialogs.persist([again])
            #expect(try dialogs.read(primaryKey: 1) == again)
            #expect(try dialogs.read(primaryKey: 2)?.messages.map(\.id) == [8])
            let messages = try store.anyStorage(for: MessageRecord.self)
            #expect(try messages.read(primaryKey: 1) == changed)
            #expect(try messages.readAll().map(\.id) == [1, 2, 5, 7, 8])
        }
    }
}

/// `author` as every backend gives it back: children in primary-key order
/// (text keys by UTF-8 bytes), at every level.
func sortedLibrary(_ author: AuthorRecord) -> AuthorRecord {
    var author = author
    author.books.sort { Array($0.isbn.utf8).lexicographicallyPrecedes(Array($1.isbn.utf8)) }
    for index in author.books.indices {
        author.books[index].chapters.sort { $0.number < $1.number }
    }
    return author
}

/// Opens `backend` in a fresh directory, runs `first`, releases the store,
/// opens the directory again and runs `then`.
func withReopenedStore(
    _ backend: TestBackend, _ first: (any Store) throws -> Void, then: (any Store) throws -> Void
) throws {
    let directory = try TemporaryDirectory()
    try withExtendedLifetime(directory) {
        do {
            let store = try backend.open(directory.url, .full)
            try first(store)
        }
        let store = try backend.open(directory.url, .full)
        try then(store)
    }
}

/// The first line where the reflections of `a` and `b` differ, for a failure message.
func difference<T>(_ a: T, _ b: T) -> String {
    let left = String(reflecting: a).split(separator: ",")
    let right = String(reflecting: b).split(separator: ",")
    for (x, y) in zip(left, right) where !Array(x.utf8).elementsEqual(Array(y.utf8)) {
        return "got \(x.debugDescription) expected \(y.debugDescription)"
    }
    return left.count == right.count ? "identical" : "lengths differ"
}

/// Runs `body`; on the property-list backend, expects it to fail with the
/// refusal of a text canonically equivalent to a stored one but spelled
/// differently: Foundation's binary property-list writer would store the two
/// spellings once (docs/SEMANTICS.md).
func withPlistTextLimitation(_ backend: TestBackend, _ body: () throws -> Void) throws {
    guard backend.name == "plist" else { return try body() }
    #expect {
        try body()
    } throws: { error in
        guard let error = error as? StorageError else { return false }
        return error.kind == .invalidArgument && error.message.contains("canonically equivalent")
    }
}
