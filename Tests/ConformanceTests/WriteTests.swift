import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@Suite("Conformance: writes, relations and transactions")
struct WriteTests {
    @Test("persist replaces a record with the same key (upsert)", arguments: allBackends)
    func upsertReplaces(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let users = try store.anyStorage(for: UserRecord.self)
            try users.persist(UserRecord(id: "a", name: "Ann", bio: "x", email: "e", birthDate: .now, gender: .female))
            let replacement = UserRecord(id: "a", name: "Anna", bio: nil, email: nil, birthDate: nil, gender: nil)
            try users.persist(replacement)
            #expect(try users.readAll() == [replacement])
            #expect(try users.count() == 1)
        }
    }

    @Test("in one batch the last record with a key wins", arguments: allBackends)
    func lastWins(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            try dialogs.persist([dialogRecord(1, messageIds: [1, 2]), dialogRecord(1, pinned: true, messageIds: [3])])
            #expect(try dialogs.readAll() == [dialogRecord(1, pinned: true, messageIds: [3])])
            #expect(try store.anyStorage(for: MessageRecord.self).count() == 1)
        }
    }

    @Test("a persisted parent keeps exactly the children it holds: no orphans", arguments: allBackends)
    func noOrphans(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            let messages = try store.anyStorage(for: MessageRecord.self)
            try dialogs.persist([dialogRecord(1, messageIds: [1, 2, 3]), dialogRecord(2, messageIds: [4])])
            var changed = dialogRecord(1, messageIds: [2, 5])
            changed.messages[0].text = "edited"
            try dialogs.persist(changed)

            #expect(try dialogs.read(primaryKey: 1) == changed)
            #expect(try messages.read(primaryKey: 1) == nil)
            #expect(try messages.read(primaryKey: 3) == nil)
            #expect(try messages.read(primaryKey: 2)?.text == "edited")
            #expect(try messages.readAll().map(\.id) == [2, 4, 5])
            #expect(try messages.count(where: #Predicate { $0.dialogId == 1 }) == 2)

            try dialogs.persist(dialogRecord(1, messageIds: []))
            #expect(try messages.readAll().map(\.id) == [4])
        }
    }

    @Test("erasing a parent erases its children, by key and by predicate", arguments: allBackends)
    func eraseCascades(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            let messages = try store.anyStorage(for: MessageRecord.self)
            try dialogs.persist([
                dialogRecord(1, messageIds: [1, 2]), dialogRecord(2, pinned: true, messageIds: [3]),
                dialogRecord(3, messageIds: [4, 5, 6]), dialogRecord(4, pinned: true, messageIds: []),
            ])
            #expect(try dialogs.erase(primaryKeys: [1, 99]) == 1)
            #expect(try messages.readAll().map(\.id) == [3, 4, 5, 6])
            #expect(try dialogs.erase(where: #Predicate { $0.isPinned }) == 2)
            #expect(try messages.readAll().map(\.id) == [4, 5, 6])
            #expect(try dialogs.erase(primaryKey: 3))
            #expect(try !dialogs.erase(primaryKey: 3))
            #expect(try messages.count() == 0)
            #expect(try dialogs.count() == 0)
        }
    }

    @Test("erase all empties the entity and its children", arguments: allBackends)
    func eraseAll(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            try dialogs.persist((1...10).map { dialogRecord($0, messageIds: [$0 * 10, $0 * 10 + 1]) })
            #expect(try dialogs.eraseAll() == 10)
            #expect(try dialogs.count() == 0)
            #expect(try store.anyStorage(for: MessageRecord.self).count() == 0)
            #expect(try dialogs.eraseAll() == 0)
        }
    }

    @Test("children can be written through their own storage", arguments: allBackends)
    func childStorage(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            // The child's storage is asked for first, before its owner's.
            let messages = try store.anyStorage(for: MessageRecord.self)
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            try dialogs.persist([dialogRecord(1, messageIds: [1]), dialogRecord(2, messageIds: [])])

            try messages.persist(messageRecord(2, dialog: 1, text: "added"))
            #expect(try dialogs.read(primaryKey: 1)?.messages.map(\.id) == [1, 2])

            try messages.persist(messageRecord(1, dialog: 2, text: "moved"))
            #expect(try dialogs.read(primaryKey: 1)?.messages.map(\.id) == [2])
            #expect(try dialogs.read(primaryKey: 2)?.messages.map(\.text) == ["moved"])

            #expect(try messages.erase(primaryKey: 2))
            #expect(try dialogs.read(primaryKey: 1)?.messages == [])
        }
    }

    @Test("a child whose owner does not exist is refused, and nothing of its batch is written", arguments: allBackends)
    func missingOwner(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            let messages = try store.anyStorage(for: MessageRecord.self)
            try dialogs.persist(dialogRecord(1, messageIds: [1]))
            let batch = [messageRecord(10, dialog: 1), messageRecord(11, dialog: 404), messageRecord(12, dialog: 1)]
            let error = #expect(throws: StorageError.self) { try messages.persist(batch) }
            #expect(error?.kind == .constraint)
            #expect(error?.entity == "messages")
            #expect(try messages.readAll().map(\.id) == [1])
        }
    }

    @Test("a batch that fails part-way leaves the store as it was", arguments: allBackends)
    func failedBatchIsAtomic(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            let before = [dialogRecord(1, messageIds: [1, 2]), dialogRecord(2, messageIds: [3])]
            try dialogs.persist(before)

            // The third dialog holds a message that names another dialog.
            var bad = dialogRecord(5, messageIds: [50])
            bad.messages[0].dialogId = 1
            let batch = [dialogRecord(1, pinned: true, messageIds: [7]), dialogRecord(4, messageIds: [40]), bad]
            let error = #expect(throws: StorageError.self) { try dialogs.persist(batch) }
            #expect(error?.kind == .constraint)

            #expect(try dialogs.readAll() == before)
            #expect(try store.anyStorage(for: MessageRecord.self).readAll().map(\.id) == [1, 2, 3])
        }
    }

    @Test("a translator's refusal reaches the caller as a translation error, and nothing is written", arguments: allBackends)
    func translationError(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self), translator: DialogTranslator())
            let stray = Message(
                uniqueId: 1, dialogId: 2, date: .now, text: "", senderId: 1, receiverId: 1, type: 0, isIncoming: true,
                isRead: true)
            let good = Dialog(uniqueId: 3, isPinned: false, messages: [])
            let error = #expect(throws: StorageError.self) {
                try dialogs.persist([good, Dialog(uniqueId: 1, isPinned: false, messages: [stray])])
            }
            #expect(error?.kind == .translation)
            #expect(try dialogs.count() == 0)
        }
    }

    @Test("a new store on the same location sees everything committed", arguments: allBackends)
    func reopen(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let data = WorkloadData(dialogs: 6, messagesPerDialog: 4, seed: 11)
        let users = sampleUsers(count: 12)
        do {
            let store = try backend.open(directory.url, .full)
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            let translator = DialogTranslator()
            try dialogs.persist(data.initial.map(translator.record(from:)))
            try dialogs.erase(primaryKeys: [2])
            try store.anyStorage(for: UserRecord.self).persist(users)
        }
        let store = try backend.open(directory.url, .full)
        let expected = try data.initial.filter { $0.uniqueId != 2 }.map(DialogTranslator().record(from:))
        #expect(try store.anyStorage(for: DialogRecord.self).readAll() == expected)
        #expect(try store.anyStorage(for: MessageRecord.self).count() == 5 * 4)
        #expect(try store.anyStorage(for: UserRecord.self).readAll() == users.sorted { $0.id < $1.id })
    }

    @Test("durability none stores the same data", arguments: allBackends)
    func durabilityNone(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        do {
            let store = try backend.open(directory.url, .none)
            try store.anyStorage(for: DialogRecord.self).persist(dialogRecord(1, messageIds: [1, 2]))
        }
        let store = try backend.open(directory.url, .full)
        #expect(try store.anyStorage(for: DialogRecord.self).readAll() == [dialogRecord(1, messageIds: [1, 2])])
    }

    @Test("concurrent tasks writing and reading through one store", arguments: allBackends)
    func concurrentUse(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory()
        let store = try backend.open(directory.url, .none)
        let users = try store.anyStorage(for: UserRecord.self)
        let all = sampleUsers(count: 80)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for slice in 0..<8 {
                let mine = Array(all[(slice * 10)..<(slice * 10 + 10)])
                group.addTask {
                    for user in mine {
                        try users.persist(user)
                        #expect(try users.read(primaryKey: user.id) == user)
                        _ = try users.count()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await users.readAll() == all.sorted { $0.id < $1.id })
    }

    @Test("children stored in interleaved order read back whole, in key order, at every level", arguments: allBackends)
    func interleavedChildren(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let authors = try store.anyStorage(for: CatalogAuthor.self)
            func chapter(_ id: String, _ book: String, _ number: Int64) -> CatalogChapter {
                CatalogChapter(id: id, bookId: book, number: number, text: "text of \(id)", wordCount: number % 2 == 0 ? nil : number)
            }
            func book(_ id: String, _ author: String, _ chapters: [CatalogChapter]) -> CatalogBook {
                CatalogBook(id: id, authorId: author, title: "title of \(id)", subtitle: nil, year: 2000, chapters: chapters)
            }
            // Written out of key order, and in three calls, so that each
            // parent's children lie between another parent's.
            let first = CatalogAuthor(
                id: "a", name: "A", country: nil,
                books: [book("b-2", "a", [chapter("c-3", "b-2", 3), chapter("c-1", "b-2", 1)])])
            let second = CatalogAuthor(
                id: "b", name: "B", country: "FR",
                books: [book("b-1", "b", [chapter("c-2", "b-1", 2)]), book("b-0", "b", [])])
            try authors.persist(first)
            try authors.persist(second)
            let grown = CatalogAuthor(
                id: "a", name: "A", country: nil,
                books: first.books + [book("b-3", "a", [chapter("c-5", "b-3", 5), chapter("c-0", "b-3", 0), chapter("c-4", "b-3", 4)])])
            try authors.persist(grown)
            func inKeyOrder(_ author: CatalogAuthor) -> CatalogAuthor {
                var author = author
                author.books = author.books.map {
                    var book = $0
                    book.chapters.sort { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
                    return book
                }.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
                return author
            }
            let expectedA = inKeyOrder(grown)
            let expectedB = inKeyOrder(second)
            #expect(try authors.readAll() == [expectedA, expectedB])
            #expect(try authors.read(primaryKeys: ["b", "a", "missing", "b"]) == [expectedB, expectedA, expectedB])
            #expect(try authors.read(primaryKey: "a") == expectedA)
            let books = try store.anyStorage(for: CatalogBook.self)
            #expect(try books.read(primaryKeys: ["b-3", "b-1"]) == [expectedA.books[1], expectedB.books[1]])

            let dialogs = try store.anyStorage(for: DialogRecord.self)
            func message(_ id: Int64, _ dialog: Int64) -> MessageRecord {
                MessageRecord(
                    id: id, dialogId: dialog, date: Date(timeIntervalSince1970: Double(100 - id)), text: "m\(id)",
                    senderId: 1, receiverId: 2, type: 0, isIncoming: id % 2 == 0, isRead: id % 3 == 0)
            }
            try dialogs.persist(DialogRecord(id: 1, isPinned: false, messages: [message(9, 1), message(3, 1), message(6, 1)]))
            try dialogs.persist(DialogRecord(id: 2, isPinned: true, messages: [message(4, 2), message(1, 2)]))
            try dialogs.persist(DialogRecord(id: 1, isPinned: false, messages: [9, 3, 6, 2, 8].map { message($0, 1) }))
            let dialog1 = DialogRecord(id: 1, isPinned: false, messages: [2, 3, 6, 8, 9].map { message($0, 1) })
            let dialog2 = DialogRecord(id: 2, isPinned: true, messages: [1, 4].map { message($0, 2) })
            // Dates rising with the keys, read and unread mixed: an index led by
            // the parent key and the read flag yields two runs of keys.
            func dated(_ id: Int64) -> MessageRecord {
                var record = message(id, 3)
                record.date = Date(timeIntervalSince1970: Double(id))
                record.isRead = [102, 103, 107, 110, 111].contains(id)
                return record
            }
            try dialogs.persist(
                DialogRecord(id: 3, isPinned: false, messages: [111, 101, 107, 104, 102, 110, 103, 105].map(dated)))
            let dialog3 = DialogRecord(
                id: 3, isPinned: false, messages: [101, 102, 103, 104, 105, 107, 110, 111].map(dated))
            #expect(try dialogs.readAll() == [dialog1, dialog2, dialog3])
            #expect(try dialogs.read(primaryKeys: [2, 1]) == [dialog2, dialog1])
            #expect(try dialogs.read(primaryKey: 1) == dialog1)
            #expect(try dialogs.read(primaryKey: 3) == dialog3)
        }
    }
}
