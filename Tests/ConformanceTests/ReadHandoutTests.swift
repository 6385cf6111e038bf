import DAOCore
import DialogGraph
import Foundation
import Testing
import TestSupport

// `Storage.read(_:handingOut:)` hands the records of a read to the caller one
// at a time (the DAO translates each as it comes). Every backend must hand out
// exactly what `read(_:)` returns, in its order, for every kind of query and
// record shape; an error of the caller's stops the read and reaches it as it
// was thrown, and leaves the store as usable as before.

private struct Stop: Error {}

/// Authors translated to plain objects, refusing the keys it is told to.
private struct AuthorNames: Plain {
    let uniqueId: String
    let books: [String]
}

private struct AuthorNamesTranslator: Translator {
    var refusing: Set<String> = []
    func record(from plain: AuthorNames) throws -> CatalogAuthor {
        CatalogAuthor(id: plain.uniqueId, name: "", country: nil, books: [])
    }
    func plain(from record: CatalogAuthor) throws -> AuthorNames {
        if refusing.contains(record.id) { throw Stop() }
        return AuthorNames(uniqueId: record.id, books: record.books.map(\.id))
    }
}

/// What `read(_:handingOut:)` hands out for `query`.
private func handedOut<R: Record>(_ storage: AnyStorage<R>, _ query: Query<R>) throws -> [R] {
    var handed: [R] = []
    try storage.read(query, handingOut: { handed.append($0) })
    return handed
}

@Suite("Conformance: records handed out by a read")
struct ReadHandoutTests {
    @Test("a read hands out what read(_:) returns, in its order, for every kind of query", arguments: allBackends)
    func handsOutWhatReadReturns(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            // Three levels, String keys, optionals, a composite index.
            let authors = try store.anyStorage(for: CatalogAuthor.self)
            try authors.persist(catalogAuthors().reversed())
            // A book whose key comes last under the author whose key comes
            // first: the books' own order is not their parents'.
            try authors.persist(
                CatalogAuthor(
                    id: "author-0", name: "Null", country: nil,
                    books: [
                        CatalogBook(
                            id: "book-9", authorId: "author-0", title: "Last", subtitle: nil, year: 2001,
                            chapters: [CatalogChapter(id: "chapter-0", bookId: "book-9", number: 1, text: "t", wordCount: nil)])
                    ]))
            let books = try store.anyStorage(for: CatalogBook.self)
            let authorQueries: [Query<CatalogAuthor>] = [
                Query(),
                Query(where: #Predicate { $0.country == "FR" }),
                Query(sortedBy: [SortDescriptor(\.name, order: .reverse)]),
                Query(limit: 2),
                Query(where: #Predicate { $0.id != "author-2" }, sortedBy: [SortDescriptor(\.name)], limit: 1),
                Query(where: #Predicate { $0.id == "nobody" }),
            ]
            for query in authorQueries {
                #expect(try handedOut(authors, query) == authors.read(query))
            }
            #expect(try handedOut(authors, Query()).map(\.id) == ["author-0", "author-1", "author-2", "author-3"])
            #expect(try handedOut(authors, Query()).flatMap(\.books).flatMap(\.chapters).count == 19)
            #expect(try handedOut(books, Query()).last?.id == "book-9")
            let bookQueries: [Query<CatalogBook>] = [
                Query(),
                Query(where: #Predicate { $0.authorId == "author-2" }, sortedBy: [SortDescriptor(\.year, order: .reverse)]),
                Query(where: #Predicate { $0.subtitle == nil }, limit: 2),
            ]
            for query in bookQueries {
                #expect(try handedOut(books, query) == books.read(query))
            }

            // Written by position, three levels.
            let libraries = try store.anyStorage(for: LibraryRecord.self)
            let translator = LibraryTranslator()
            try libraries.persist(TestSupport.Sample.corpus().map(translator.record(from:)))
            let libraryQueries: [Query<LibraryRecord>] = [
                Query(), Query(sortedBy: [SortDescriptor(\.name, order: .reverse)]), Query(limit: 1),
            ]
            for query in libraryQueries {
                #expect(try handedOut(libraries, query) == libraries.read(query))
            }
            #expect(try handedOut(libraries, Query()).count == TestSupport.Sample.corpus().count)

            // Integer keys, negative ones included, under a parent with children.
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            let ids: [Int64] = [7, -3, 0, Int64.min, 12, -1, Int64.max]
            try dialogs.persist(
                ids.enumerated().map { position, id in
                    DialogRecord(
                        id: id, isPinned: id < 0,
                        messages: (0..<3).map { n in
                            MessageRecord(
                                id: Int64(position * 10 + n), dialogId: id, date: Date(timeIntervalSinceReferenceDate: Double(n)),
                                text: "m \(n) é", senderId: 1, receiverId: 2, type: 0, isIncoming: n == 1, isRead: n == 2)
                        })
                })
            #expect(try handedOut(dialogs, Query()) == dialogs.read(Query()))
            #expect(try handedOut(dialogs, Query()).map(\.id) == ids.sorted())
        }
    }

    @Test("only LMDB hands out while reading, and only a record type with children and no parent", arguments: allBackends)
    func handsOutWhileReadingOnlyWhereItCan(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            // The child entities first: a child asked for before its owner.
            let chapters = try store.anyStorage(for: CatalogChapter.self)
            let books = try store.anyStorage(for: CatalogBook.self)
            let authors = try store.anyStorage(for: CatalogAuthor.self)
            let users = try store.anyStorage(for: UserRecord.self)
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            let messages = try store.anyStorage(for: MessageRecord.self)
            let isLMDB = backend.name == "lmdb"
            #expect(authors.handsOutWhileReading == isLMDB)
            #expect(dialogs.handsOutWhileReading == isLMDB)
            // A child entity's records are not stored in their own key order;
            // a record type without children is read in place.
            #expect(!books.handsOutWhileReading)
            #expect(!chapters.handsOutWhileReading)
            #expect(!messages.handsOutWhileReading)
            #expect(!users.handsOutWhileReading)
            // What a read hands out does not depend on it.
            try authors.persist(catalogAuthors())
            #expect(try handedOut(books, Query()) == books.read(Query()))
            #expect(try handedOut(authors, Query()) == authors.read(Query()))
        }
    }

    @Test("an error of the caller's stops the read and reaches it as thrown; the store goes on", arguments: allBackends)
    func callersErrorStopsTheRead(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let authors = try store.anyStorage(for: CatalogAuthor.self)
            try authors.persist(catalogAuthors())
            var handed: [String] = []
            #expect(throws: Stop.self) {
                try authors.read(
                    Query(),
                    handingOut: { author in
                        handed.append(author.id)
                        if handed.count == 2 { throw Stop() }
                    })
            }
            #expect(handed == ["author-1", "author-2"])
            // The read's transaction ended: a write and a read go through.
            try authors.persist(CatalogAuthor(id: "author-4", name: "Four", country: nil, books: []))
            #expect(try authors.readAll().map(\.id) == ["author-1", "author-2", "author-3", "author-4"])

            // Through the DAO: a translator's failure is the same error as
            // when the whole array was read first.
            let dao = DAO(storage: authors, translator: AuthorNamesTranslator(refusing: ["author-3"]))
            let error = #expect(throws: StorageError.self) { try dao.read() }
            #expect(error?.kind == .translation)
            #expect(error?.operation == .translate)
            #expect(error?.underlying is Stop)
            #expect(error?.message.contains("record author-3 could not be translated") == true)
            let names = DAO(storage: authors, translator: AuthorNamesTranslator())
            #expect(try names.read().map(\.uniqueId) == ["author-1", "author-2", "author-3", "author-4"])
            #expect(try names.read().map(\.books) == authors.readAll().map { $0.books.map(\.id) })
        }
    }
}
