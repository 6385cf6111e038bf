import DAOCore
import DialogGraph
import Foundation
import Testing
import TestSupport

// `forEach` lends the records of a read to a closure instead of returning an
// array. On every backend it must lend exactly what `read` returns, in its
// order and number, for generated data and queries of several record shapes
// (String and integer keys, three levels, optionals, records read through
// `Decodable` and by position), through the storage, the DAO, prepared
// queries and the async forms; an error of the closure stops the read and
// reaches the caller as thrown.

private struct Stop: Error {}

/// What `forEach` lends for `query`, each record copied as it is lent.
private func lent<R: Record>(_ storage: some Storage<R>, _ query: Query<R>) throws -> [R] {
    var records: [R] = []
    try storage.forEach(query) { record in records.append(copy record) }
    return records
}

/// Collects what an async `forEach` lends, from the reader thread it runs on.
private final class Collected<T: Sendable>: @unchecked Sendable {
    // @unchecked: appended to from one reader thread at a time, read after
    // the call returned.
    private let lock = NSLock()
    private var items: [T] = []
    func append(_ item: T) { lock.withLock { items.append(item) } }
    var all: [T] { lock.withLock { items } }
}

@Suite("Conformance: the borrowing read path lends what read returns")
struct BorrowingReadTests {
    @Test("generated data and queries: forEach lends what read returns, in its order", arguments: allBackends)
    func generatedQueries(backend: TestBackend) throws {
        let checks = try withGeneratedLibraries(backend, rounds: 3, seed: 20_261_129) { library in
            let (authors, books, chapters) = (library.authors, library.books, library.chapters)
            func check(_ condition: Bool, _ what: @autoclosure () -> String) { library.check(condition, what()) }
            check(identical(try lent(authors, Query()), try authors.read(Query())), "every author")
            for _ in 0..<60 {
                let book = library.generator.bookQuery(&library.random)
                let got = try lent(books, book.query)
                let expected = try books.read(book.query)
                check(identical(got, expected), "books \(book.name): \(difference(got, expected))")
                let chapter = library.generator.chapterQuery(&library.random)
                check(
                    identical(try lent(chapters, chapter.query), try chapters.read(chapter.query)),
                    "chapters \(chapter.name)")
                let author = library.generator.authorQuery(&library.random)
                check(
                    identical(try lent(authors, author.query), try authors.read(author.query)),
                    "authors \(author.name)")
            }
            // A prepared query, with each author's key and one that is
            // not stored.
            let byAuthor = try PreparedQuery(
                where: #Predicate<BookRecord, String> { book, author in book.authorId == author },
                sortedBy: [SortDescriptor(\.year, order: .reverse)])
            for id in library.generator.authorIds + ["nobody"] {
                var got: [BookRecord] = []
                try books.forEach(byAuthor, id) { book in got.append(copy book) }
                check(identical(got, try books.read(byAuthor, id)), "prepared books of \(id)")
            }
        }
        #expect(checks > 3 * 180)
    }

    @Test("records read by position and the dialog graph, through the storage and the DAO", arguments: allBackends)
    func positionalRecordsAndTheDAO(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            // Three levels, written by position.
            let libraries = try store.anyStorage(for: LibraryRecord.self)
            let translator = LibraryTranslator()
            let corpus = TestSupport.Sample.corpus()
            try libraries.persist(corpus.map(translator.record(from:)))
            let libraryQueries: [Query<LibraryRecord>] = [
                Query(), Query(sortedBy: [SortDescriptor(\.name, order: .reverse)]), Query(limit: 1), Query(limit: 0),
            ]
            for query in libraryQueries {
                #expect(identical(try lent(libraries, query), try libraries.read(query)))
            }
            let dao = DAO(storage: libraries, translator: translator)
            var plains: [Library] = []
            try dao.forEach { library in plains.append(copy library) }
            #expect(plains == (try dao.read()))
            #expect(plains.count == corpus.count)

            // The dialog graph: integer keys (negative ones too), a parent
            // with children, the workload's query prepared.
            var random = SplitMix64(seed: 37)
            let ids: [Int64] = [7, -3, 0, Int64.min, 12, -1, Int64.max]
            let texts = ["", "naïve", "привет 🚀", String(repeating: "long text ", count: 40), "e\u{301}", "\u{0}"]
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            let messages = try store.anyStorage(for: MessageRecord.self)
            try dialogs.persist(
                ids.enumerated().map { position, id in
                    DialogRecord(
                        id: id, isPinned: id < 0,
                        messages: (0..<Int(random.next() % 6)).map { n in
                            MessageRecord(
                                id: Int64(position * 10 + n), dialogId: id,
                                date: Date(timeIntervalSinceReferenceDate: Double(random.next() % 5)),
                                text: texts[Int(random.next() % UInt64(texts.count))], senderId: 1, receiverId: 2,
                                type: Int64(n), isIncoming: n % 2 == 1, isRead: random.next() % 2 == 0)
                        })
                })
            #expect(identical(try lent(dialogs, Query()), try dialogs.read(Query())))
            let unread = try PreparedQuery(
                where: #Predicate<MessageRecord, Int64> { message, dialog in
                    message.dialogId == dialog && !message.isRead
                },
                sortedBy: [SortDescriptor(\.date, order: .reverse)])
            let messageDAO = DAO(storage: messages, translator: MessageTranslator())
            let preparedObjects = PreparedObjectQuery(dao: messageDAO, prepared: unread)
            for id in ids + [99] {
                var got: [MessageRecord] = []
                try messages.forEach(unread, id) { message in got.append(copy message) }
                #expect(identical(got, try messages.read(unread, id)), "dialog \(id)")
                var objects: [Message] = []
                try preparedObjects.forEach(id) { message in objects.append(copy message) }
                #expect(objects == (try preparedObjects.read(id)), "dialog \(id)")
                var where_: [Message] = []
                try messageDAO.forEach(
                    where: #Predicate { $0.dialogId == id }, sortedBy: [SortDescriptor(\.date)], limit: 3
                ) { message in where_.append(copy message) }
                #expect(
                    where_
                        == (try messageDAO.read(
                            where: #Predicate { $0.dialogId == id }, sortedBy: [SortDescriptor(\.date)], limit: 3)))
            }
        }
    }

    @Test("forEach by primary key lends what read by primary key returns", arguments: allBackends)
    func byPrimaryKey(backend: TestBackend) throws {
        var random = SplitMix64(seed: 20_261_130)
        var generator = Generator(texts: Generator.texts(distinctUpToEquivalence: backend.name == "plist"))
        let library = generator.library(&random)
        try withStore(backend) { store, _ in
            // String keys, three levels: each author with its books and their chapters.
            let authors = try store.anyStorage(for: AuthorRecord.self)
            let books = try store.anyStorage(for: BookRecord.self)
            try authors.persist(library)
            let keys = generator.authorIds + ["nobody"]
            for key in keys {
                var got: [AuthorRecord] = []
                let found = try authors.forEach(primaryKey: key) { author in got.append(copy author) }
                let expected = try authors.read(primaryKey: key)
                #expect(identical(got, expected.map { [$0] } ?? []), "author \(key)")
                #expect(found == (expected != nil), "author \(key)")
            }
            // Keys out of order, repeated and missing, as read(primaryKeys:) takes them.
            let mixed = Array(keys.reversed()) + keys.prefix(2) + ["nobody", keys[0]]
            var lentAuthors: [AuthorRecord] = []
            try authors.forEach(primaryKeys: mixed) { author in lentAuthors.append(copy author) }
            #expect(identical(lentAuthors, try authors.read(primaryKeys: mixed)))
            #expect(lentAuthors.count == mixed.count - 2)
            // A child entity, by its own keys.
            let bookKeys = try books.read(Query()).map(\.isbn) + ["no-such-book"]
            var lentBooks: [BookRecord] = []
            try books.forEach(primaryKeys: bookKeys.reversed()) { book in lentBooks.append(copy book) }
            #expect(identical(lentBooks, try books.read(primaryKeys: bookKeys.reversed())))

            // Integer keys through the DAO, into plain objects.
            let dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self), translator: DialogTranslator())
            let ids: [Int64] = [5, -2, 0, Int64.max]
            try dialogs.persist(
                ids.map { id in
                    Dialog(
                        uniqueId: id, isPinned: id < 0,
                        messages: (0..<Int(id & 3)).map { n in
                            Message(
                                uniqueId: id &* 10 &+ Int64(n), dialogId: id,
                                date: Date(timeIntervalSinceReferenceDate: Double(n)), text: "m\(n) привет",
                                senderId: 1, receiverId: 2, type: n, isIncoming: n % 2 == 0, isRead: n == 1)
                        })
                })
            for id in ids + [7] {
                var got: [Dialog] = []
                let found = try dialogs.forEach(byPrimaryKey: id) { dialog in got.append(copy dialog) }
                let expected = try dialogs.read(byPrimaryKey: id)
                #expect(got == (expected.map { [$0] } ?? []), "dialog \(id)")
                #expect(found == (expected != nil), "dialog \(id)")
            }
            let someIds: [Int64] = [Int64.max, 7, -2, 5, -2]
            var lentDialogs: [Dialog] = []
            try dialogs.forEach(byPrimaryKeys: someIds) { dialog in lentDialogs.append(copy dialog) }
            #expect(lentDialogs == (try dialogs.read(byPrimaryKeys: someIds)))
            #expect(lentDialogs.count == 4)

            // The closure's error stops the lending and reaches the caller.
            var seen = 0
            #expect(throws: Stop.self) {
                try dialogs.forEach(byPrimaryKeys: ids) { _ in
                    seen += 1
                    if seen == 2 { throw Stop() }
                }
            }
            #expect(seen == 2)
        }
    }

    @Test("the async forms lend what the synchronous ones do", arguments: allBackends)
    func asyncForms(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            // Ledgers (String keys) owning accounts (integer keys, an optional note).
            let ledgers = try store.anyStorage(for: LedgerRecord.self)
            let accounts = try store.anyStorage(for: AccountRecord.self)
            try await ledgers.persist(makeLedgers(5, accounts: 4))
            let records = Collected<LedgerRecord>()
            try await ledgers.forEach(sortedBy: [SortDescriptor(\.name, order: .reverse)]) { record in
                records.append(copy record)
            }
            let ledgersRead = try await ledgers.read(sortedBy: [SortDescriptor(\.name, order: .reverse)])
            #expect(records.all == ledgersRead)
            #expect(records.all.count == 5)
            let dao = DAO(storage: accounts, translator: Same<AccountRecord>())
            let plains = Collected<AccountRecord>()
            try await dao.forEach(where: #Predicate { $0.ledgerId == "ledger-2" }, limit: 3) { account in
                plains.append(copy account)
            }
            let accountsRead = try await dao.read(where: #Predicate { $0.ledgerId == "ledger-2" }, limit: 3)
            #expect(plains.all == accountsRead)
            #expect(plains.all.count == 3)
            let byLedger = try dao.prepare(where: #Predicate<AccountRecord, String> { account, ledger in
                account.ledgerId == ledger
            })
            let prepared = Collected<AccountRecord>()
            try await byLedger.forEach("ledger-4") { account in prepared.append(copy account) }
            let preparedRead = try await byLedger.read("ledger-4")
            #expect(prepared.all == preparedRead)
            #expect(prepared.all.count == 4)
            let one = Collected<LedgerRecord>()
            let found = try await ledgers.forEach(primaryKey: "ledger-3") { record in one.append(copy record) }
            let oneRead = try await ledgers.read(primaryKey: "ledger-3")
            #expect(found)
            #expect(one.all == (oneRead.map { [$0] } ?? []))
            let several = Collected<LedgerRecord>()
            try await ledgers.forEach(primaryKeys: ["ledger-4", "nobody", "ledger-1"]) { record in
                several.append(copy record)
            }
            let severalRead = try await ledgers.read(primaryKeys: ["ledger-4", "nobody", "ledger-1"])
            #expect(several.all == severalRead)
            #expect(several.all.count == 2)
            let byKey = Collected<AccountRecord>()
            let accountKeys = accountsRead.map(\.id)
            #expect(try await dao.forEach(byPrimaryKey: accountKeys[0]) { account in byKey.append(copy account) })
            try await dao.forEach(byPrimaryKeys: accountKeys.reversed()) { account in byKey.append(copy account) }
            let byKeyRead = try await dao.read(byPrimaryKeys: accountKeys.reversed())
            #expect(byKey.all == [accountsRead[0]] + byKeyRead)
        }
    }

    @Test("an error of the closure stops the read and reaches the caller; the store goes on", arguments: allBackends)
    func closuresErrorStopsTheRead(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let authors = try store.anyStorage(for: CatalogAuthor.self)
            try authors.persist(catalogAuthors())
            var seen: [String] = []
            #expect(throws: Stop.self) {
                try authors.forEach { author in
                    seen.append(author.id)
                    if seen.count == 2 { throw Stop() }
                }
            }
            #expect(seen == ["author-1", "author-2"])
            try authors.persist(CatalogAuthor(id: "author-4", name: "Four", country: nil, books: []))
            var again: [String] = []
            try authors.forEach { author in again.append(author.id) }
            #expect(again == ["author-1", "author-2", "author-3", "author-4"])
        }
    }
}
