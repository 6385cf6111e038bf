import DAOCore
import DialogGraph
@testable import FileStorage
import Foundation
import TestSupport
import Testing

/// A shelf keyed by its name, owning books keyed by text too.
struct DeltaShelf: Record, Hashable {
    typealias PrimaryKey = String
    var name: String
    var label: String?
    var books: [DeltaBook]

    static let entity = Entity<DeltaShelf>(
        "shelves", primaryKey: "name", \.name,
        fields: [Field("label", \.label)],
        relations: [Relation("books", \.books, foreignKey: "shelf", \DeltaBook.shelf)])
}

/// A book of a ``DeltaShelf``.
struct DeltaBook: Record, Hashable {
    typealias PrimaryKey = String
    var isbn: String
    var shelf: String
    var title: String
    var weight: Double

    static let entity = Entity<DeltaBook>(
        "books", primaryKey: "isbn", \.isbn,
        fields: [Field("shelf", \.shelf), Field("title", \.title), Field("weight", \.weight)],
        ownedBy: DeltaShelf.self)
}

/// Small commits write delta documents; reading applies them; a commit that
/// changes much, or follows many deltas, compacts.
@Suite("File store: delta documents")
struct DeltaTests {
    static func manifest(_ scratch: TemporaryDirectory) throws -> Manifest {
        try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: scratch.file("manifest.json")))
    }

    static func dialog(_ id: Int64, messages: Int, read: Bool = false) -> DialogRecord {
        DialogRecord(
            id: id, isPinned: id % 2 == 0,
            messages: (0..<Int64(messages)).map { index in
                MessageRecord(
                    id: id * 1000 + index, dialogId: id, date: Date(timeIntervalSinceReferenceDate: Double(index)),
                    text: "message \(index) of \(id) é\u{301} 🙂", senderId: 1, receiverId: 2, type: index % 3,
                    isIncoming: index % 2 == 0, isRead: read)
            })
    }

    static func files(_ scratch: TemporaryDirectory) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path))
    }

    @Test("a small commit writes a delta, not the whole document; a reopened store reads it", arguments: FileFormat.allCases)
    func smallCommitWritesDelta(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let expected: [DialogRecord]
        do {
            let store = try FileStore(directory: scratch.url, format: format)
            let dialogs = try store.storage(for: DialogRecord.self)
            try dialogs.persist((1...20).map { Self.dialog($0, messages: 3) })
            let base = try Self.manifest(scratch)
            #expect(base.deltas == nil)
            try dialogs.persist(Self.dialog(21, messages: 2))
            try dialogs.persist(Self.dialog(3, messages: 1, read: true))  // replaces 3 messages with 1
            #expect(try dialogs.erase(primaryKeys: [5]) == 1)
            let after = try Self.manifest(scratch)
            #expect(after.version == Manifest.currentVersion)
            #expect(after.documents == base.documents, "the documents stay; deltas follow them")
            #expect(after.deltas?["dialogs"]?.count == 3)
            #expect(after.deltas?["messages"]?.count == 3)
            #expect(try Self.files(scratch).isSuperset(of: after.referencedFiles))
            expected = try dialogs.readAll()
            store.close()
        }
        #expect(expected.map(\.id) == Array(1...4) + Array(6...21))
        #expect(expected.first { $0.id == 3 }?.messages.map(\.id) == [3000])
        let store = try FileStore(directory: scratch.url, format: format)
        #expect(try store.storage(for: DialogRecord.self).readAll() == expected)
        #expect(try store.storage(for: MessageRecord.self).count() == 19 * 3 + 2 + 1 - 3)
        #expect(try store.storage(for: MessageRecord.self).read(primaryKey: 5000) == nil)
    }

    @Test("many deltas are merged into one; changes past half the records compact", arguments: FileFormat.allCases)
    func mergeAndCompact(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: format)
        let dialogs = try store.storage(for: DialogRecord.self)
        try dialogs.persist((1...100).map { Self.dialog($0, messages: 2) })
        let base = try Self.manifest(scratch).documents
        for id in Int64(101)...Int64(120) {
            try dialogs.persist(Self.dialog(id, messages: 2))
            let deltas = try Self.manifest(scratch).deltas?["dialogs"] ?? []
            #expect(deltas.count <= StoreState.maximumDeltas, "\(id)")
            #expect(!deltas.isEmpty)
        }
        #expect(try Self.manifest(scratch).documents == base)
        // Only the files the manifest names (and the lock) remain.
        let named = try Self.manifest(scratch).referencedFiles
        #expect(try Self.files(scratch) == named.union(["manifest.json", "store.lock"]))
        // Rewriting 70 of 120 dialogs compacts: new documents, no deltas.
        try dialogs.persist((1...70).map { Self.dialog($0, messages: 1) })
        let compacted = try Self.manifest(scratch)
        #expect(compacted.deltas == nil)
        #expect(compacted.documents["dialogs"] != base["dialogs"])
        #expect(try Self.files(scratch) == compacted.referencedFiles.union(["manifest.json", "store.lock"]))
        let all = try dialogs.readAll()
        store.close()
        #expect(all.count == 120)
        let reopened = try FileStore(directory: scratch.url, format: format)
        #expect(try reopened.storage(for: DialogRecord.self).readAll() == all)
    }

    @Test("erasing everything writes empty documents and drops the deltas", arguments: FileFormat.allCases)
    func eraseAllDropsDeltas(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        do {
            let store = try FileStore(directory: scratch.url, format: format)
            let dialogs = try store.storage(for: DialogRecord.self)
            try dialogs.persist((1...10).map { Self.dialog($0, messages: 2) })
            try dialogs.persist(Self.dialog(11, messages: 2))
            #expect(try Self.manifest(scratch).deltas?["messages"]?.count == 1)
            #expect(try dialogs.erase(where: nil) == 11)
            #expect(try store.storage(for: MessageRecord.self).count() == 0)
            #expect(try Self.manifest(scratch).deltas == nil)
            // The store keeps working after the wholesale erase, and a rollback restores it.
            try dialogs.persist(Self.dialog(12, messages: 1))
            var foreign = Self.dialog(13, messages: 2)
            foreign.messages[1].dialogId = 99  // not the dialog's: the call fails and changes nothing
            #expect(throws: StorageError.self) { try dialogs.persist(foreign) }
            #expect(try dialogs.readAll() == [Self.dialog(12, messages: 1)])
            store.close()
        }
        let store = try FileStore(directory: scratch.url, format: format)
        #expect(try store.storage(for: DialogRecord.self).readAll() == [Self.dialog(12, messages: 1)])
    }

    @Test("a failed call on a populated table restores it exactly, in memory and on disk", arguments: FileFormat.allCases)
    func rollbackAfterChanges(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: format)
        let dialogs = try store.storage(for: DialogRecord.self)
        let messages = try store.storage(for: MessageRecord.self)
        try dialogs.persist((1...20).map { Self.dialog($0, messages: 3) })
        let before = try dialogs.readAll()
        let unread = try messages.count(where: #Predicate<MessageRecord> { !$0.isRead })
        var foreign = Self.dialog(31, messages: 2)
        foreign.messages[1].dialogId = 99
        // Dialog 1 loses two messages and gains one, 2 is replaced, 30 is new:
        // all of it applied before dialog 31 fails.
        var changed = Self.dialog(1, messages: 1, read: true)
        changed.messages.append(Self.dialog(1, messages: 9).messages[8])
        #expect(throws: StorageError.self) {
            try dialogs.persist([changed, Self.dialog(2, messages: 5, read: true), Self.dialog(30, messages: 2), foreign])
        }
        #expect(try dialogs.readAll() == before)
        #expect(try messages.count(where: #Predicate<MessageRecord> { !$0.isRead }) == unread)
        #expect(try messages.read(Query(where: #Predicate<MessageRecord> { $0.dialogId == 1 })).map(\.id) == [1000, 1001, 1002])
        #expect(try messages.read(primaryKey: 1008) == nil)
        // Erasures and small writes after the rollback commit as deltas over the same state.
        #expect(try dialogs.erase(primaryKeys: [3, 4]) == 2)
        try dialogs.persist(Self.dialog(3, messages: 3))
        try dialogs.persist(Self.dialog(4, messages: 3))
        #expect(try dialogs.readAll() == before)
        store.close()
        let reopened = try FileStore(directory: scratch.url, format: format)
        #expect(try reopened.storage(for: DialogRecord.self).readAll() == before)
    }

    @Test("erasing every child record leaves the parents", arguments: FileFormat.allCases)
    func eraseAllChildren(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: format)
        try store.storage(for: DialogRecord.self).persist((1...3).map { Self.dialog($0, messages: 2) })
        #expect(try store.storage(for: MessageRecord.self).erase(where: nil) == 6)
        #expect(try store.storage(for: DialogRecord.self).readAll().map(\.messages.count) == [0, 0, 0])
    }

    @Test("text primary keys, optionals and erasures round-trip through deltas", arguments: FileFormat.allCases)
    func textKeys(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let shelves: [DeltaShelf] = (0..<10).map { index in
            DeltaShelf(
                name: "shelf \(index) \u{0}/ü", label: index % 2 == 0 ? nil : String(repeating: "long ", count: 200),
                books: (0..<3).map { book in
                    DeltaBook(
                        isbn: "\(index)-\(book)-🙂", shelf: "shelf \(index) \u{0}/ü", title: "title \(book)",
                        weight: book == 0 ? 0.25 : Double(book) / 3)
                })
        }
        do {
            let store = try FileStore(directory: scratch.url, format: format)
            let storage = try store.storage(for: DeltaShelf.self)
            try storage.persist(shelves)
            var changed = shelves[4]
            changed.books.removeLast()
            changed.label = "changed"
            try storage.persist(changed)
            #expect(try storage.erase(primaryKeys: [shelves[7].name]) == 1)
            #expect(try Self.manifest(scratch).deltas?["books"]?.count == 2)
            store.close()
        }
        var expected = shelves
        expected[4].books.removeLast()
        expected[4].label = "changed"
        expected.remove(at: 7)
        let store = try FileStore(directory: scratch.url, format: format)
        let read = try store.storage(for: DeltaShelf.self).readAll()
        #expect(read == expected.sorted { $0.name < $1.name })
    }

    @Test("a damaged delta is corrupt, and nothing is removed", arguments: FileFormat.allCases)
    func damagedDelta(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        do {
            let store = try FileStore(directory: scratch.url, format: format)
            let dialogs = try store.storage(for: DialogRecord.self)
            try dialogs.persist((1...4).map { Self.dialog($0, messages: 1) })
            try dialogs.persist(Self.dialog(5, messages: 1))
            store.close()
        }
        let manifest = try Self.manifest(scratch)
        let delta = scratch.file(try #require(manifest.deltas?["dialogs"]?.first))
        var bytes = try Data(contentsOf: delta)
        bytes[bytes.count / 2] ^= 0x20
        try bytes.write(to: delta)
        let before = try Self.files(scratch)
        let error = #expect(throws: StorageError.self) {
            let store = try FileStore(directory: scratch.url, format: format)
            _ = try store.storage(for: DialogRecord.self)
        }
        #expect(error?.kind == .corrupt)
        #expect(try Self.files(scratch) == before)
    }

    @Test("a version 2 manifest that lists deltas is corrupt")
    func version2WithDeltas() throws {
        let scratch = try TemporaryDirectory("file-store")
        do {
            let store = try FileStore(directory: scratch.url, format: .json)
            let dialogs = try store.storage(for: DialogRecord.self)
            try dialogs.persist((1...4).map { Self.dialog($0, messages: 1) })
            try dialogs.persist(Self.dialog(5, messages: 1))
            store.close()
        }
        var manifest = try Self.manifest(scratch)
        #expect(manifest.deltas != nil)
        manifest.version = 2
        try JSONEncoder().encode(manifest.sealed()).write(to: scratch.file("manifest.json"))
        let error = #expect(throws: StorageError.self) { try FileStore(directory: scratch.url, format: .json) }
        #expect(error?.kind == .corrupt)
    }

    @Test("a migration reads the deltas and folds them into the documents it writes", arguments: FileFormat.allCases)
    func migrationFoldsDeltas(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        do {
            let store = try FileStore(directory: scratch.url, format: format)
            let dialogs = try store.storage(for: DialogRecord.self)
            try dialogs.persist((1...10).map { Self.dialog($0, messages: 2) })
            try dialogs.persist(Self.dialog(11, messages: 3))
            #expect(try dialogs.erase(primaryKeys: [2]) == 1)
            #expect(try Self.manifest(scratch).deltas?["messages"]?.count == 2)
            store.close()
        }
        let store = try FileStore(directory: scratch.url, format: format)
        #expect(try DialogGraphMigrations.migrator.migrate(store) == [DialogGraphMigrations.reactionCount])
        let manifest = try Self.manifest(scratch)
        #expect(manifest.deltas?["messages"] == nil)
        let messages = try store.storage(for: MessageRecordV2.self)
        #expect(try messages.count() == 9 * 2 + 3)
        #expect(try messages.read(primaryKey: 2000) == nil)
        #expect(try messages.read(primaryKey: 11002)?.reactionCount == 0)
        #expect(try store.storage(for: DialogRecordV2.self).readAll().map(\.id) == [1] + Array(3...11))
        store.close()
        #expect(try Self.files(scratch) == manifest.referencedFiles.union(["manifest.json", "store.lock"]))
    }
}
