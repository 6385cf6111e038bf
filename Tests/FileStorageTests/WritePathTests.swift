import DAOCore
import DialogGraph
@testable import FileStorage
import Foundation
import TestSupport
import Testing

/// A note with a declared index on a text field that updates change, and an
/// optional real.
struct TaggedNote: Record, Hashable {
    typealias PrimaryKey = Int64
    var id: Int64
    var tag: String
    var score: Double?

    static let entity = Entity<TaggedNote>(
        "tagged_notes", primaryKey: "id", \.id,
        fields: [Field("tag", \.tag), Field("score", \.score)],
        indexes: [Index("tagged_notes_by_tag", on: ["tag", "score"])])
}

/// The table's write path: indexes kept by position and updated only where a
/// value changed, children inserted per parent in one call, and a rollback
/// from a saved state when a call rewrites most of a table.
@Suite("File store: the write path")
struct WritePathTests {
    static func tagged(_ storage: FileRecordStorage<TaggedNote>, _ tag: String) throws -> [Int64] {
        try storage.read(Query(where: #Predicate<TaggedNote> { $0.tag == tag })).map(\.id).sorted()
    }

    @Test("an update moves a record between the entries of an index; an unchanged value stays", arguments: FileFormat.allCases)
    func updateReindexes(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: format)
        let notes = try store.storage(for: TaggedNote.self)
        try notes.persist((1...10).map { TaggedNote(id: $0, tag: $0 % 2 == 0 ? "even" : "odd", score: nil) })
        // 2 and 4 change their tag (NFD text), 6 only its score, 1 stays.
        try notes.persist([
            TaggedNote(id: 2, tag: "cafe\u{301}", score: nil), TaggedNote(id: 4, tag: "cafe\u{301}", score: 1),
            TaggedNote(id: 6, tag: "even", score: 2.5), TaggedNote(id: 1, tag: "odd", score: nil),
        ])
        #expect(try Self.tagged(notes, "even") == [6, 8, 10])
        #expect(try Self.tagged(notes, "cafe\u{301}") == [2, 4])
        #expect(try Self.tagged(notes, "odd") == [1, 3, 5, 7, 9])
        #expect(try notes.erase(primaryKeys: [4]) == 1)
        #expect(try Self.tagged(notes, "cafe\u{301}") == [2])
        store.close()
        let reopened = try FileStore(directory: scratch.url, format: format).storage(for: TaggedNote.self)
        #expect(try Self.tagged(reopened, "even") == [6, 8, 10])
        #expect(try Self.tagged(reopened, "cafe\u{301}") == [2])
    }

    @Test("a failed call that rewrites most of a table restores it exactly, indexes included", arguments: FileFormat.allCases)
    func rollbackOfALargeWrite(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: format)
        let dialogs = try store.storage(for: DialogRecord.self)
        let messages = try store.storage(for: MessageRecord.self)
        try dialogs.persist((1...10).map { DeltaTests.dialog($0, messages: 4) })
        let before = try dialogs.readAll()
        // Every dialog again: read, with fewer or more messages; the last one
        // names another dialog in a message, so the call fails after
        // everything else was applied.
        var rewritten = (1...10).map { DeltaTests.dialog($0, messages: $0 % 2 == 0 ? 2 : 6, read: true) }
        rewritten[9].messages[1].dialogId = 3
        #expect(throws: StorageError.self) { try dialogs.persist(rewritten) }
        #expect(try dialogs.readAll() == before)
        #expect(try messages.count(where: #Predicate<MessageRecord> { !$0.isRead }) == 40)
        #expect(try messages.read(Query(where: #Predicate<MessageRecord> { $0.dialogId == 2 })).map(\.id) == [2000, 2001, 2002, 2003])
        #expect(try messages.read(primaryKey: 1005) == nil)
        // The same write without the faulty message commits, and reads back.
        rewritten[9].messages[1].dialogId = 10
        try dialogs.persist(rewritten)
        #expect(try dialogs.readAll() == rewritten)
        #expect(try messages.read(Query(where: #Predicate<MessageRecord> { $0.dialogId == 2 })).map(\.id) == [2000, 2001])
        store.close()
        let reopened = try FileStore(directory: scratch.url, format: format)
        #expect(try reopened.storage(for: DialogRecord.self).readAll() == rewritten)
    }

    @Test("a property list refuses a child spelled otherwise than a stored text, and keeps the rest as it was")
    func spellingConflictAmongChildren() throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: .propertyList)
        let dialogs = try store.storage(for: DialogRecord.self)
        var first = DeltaTests.dialog(1, messages: 2)
        first.messages[0].text = "caf\u{E9}"
        first.messages[1].text = "один 🙂"
        try dialogs.persist(first)
        // Only NFC texts stored so far; the second child of a new dialog holds
        // the NFD spelling of one of them.
        var second = DeltaTests.dialog(2, messages: 3)
        second.messages[0].text = "plain"
        second.messages[1].text = "cafe\u{301}"
        second.messages[2].text = "three"
        #expect(throws: StorageError.self) { try dialogs.persist(second) }
        #expect(try dialogs.readAll() == [first])
        second.messages[1].text = "caf\u{E9}"
        try dialogs.persist(second)
        #expect(try dialogs.readAll() == [first, second])
    }

    @Test("a parent that holds the same children again, in another order, twice over or moved, stores exactly them", arguments: FileFormat.allCases)
    func childrenHeldAgain(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: format)
        let dialogs = try store.storage(for: DialogRecord.self)
        let messages = try store.storage(for: MessageRecord.self)
        try dialogs.persist([DeltaTests.dialog(1, messages: 3), DeltaTests.dialog(2, messages: 2)])
        // The same keys, edited: every child replaced in place.
        var same = DeltaTests.dialog(1, messages: 3, read: true)
        try dialogs.persist(same)
        #expect(try dialogs.read(primaryKey: 1) == same)
        // The same keys in decreasing order.
        same.messages.reverse()
        same.messages[0].text = "reversed"
        try dialogs.persist(same)
        #expect(try dialogs.read(primaryKey: 1)?.messages.map(\.text).last == "reversed")
        // As many children as stored, but one of them twice and another
        // missing: the missing one is erased, the later copy is kept.
        var twice = DeltaTests.dialog(1, messages: 3)
        twice.messages[2] = twice.messages[0]
        twice.messages[2].text = "second copy"
        try dialogs.persist(twice)
        #expect(try dialogs.read(primaryKey: 1)?.messages.map(\.id) == [1000, 1001])
        #expect(try messages.read(primaryKey: 1000)?.text == "second copy")
        #expect(try messages.read(primaryKey: 1002) == nil)
        #expect(try messages.count(where: #Predicate<MessageRecord> { $0.dialogId == 1 }) == 2)
        // A child moved to another parent (erased from the first, then stored
        // under the second) and one naming the wrong parent.
        var first = try #require(try dialogs.read(primaryKey: 1))
        var second = try #require(try dialogs.read(primaryKey: 2))
        var moved = first.messages.removeLast()
        moved.dialogId = 2
        second.messages.append(moved)
        try dialogs.persist([first, second])
        #expect(try messages.read(Query(where: #Predicate<MessageRecord> { $0.dialogId == 2 })).map(\.id).sorted() == [1001, 2000, 2001])
        #expect(try messages.read(Query(where: #Predicate<MessageRecord> { $0.dialogId == 1 })).map(\.id) == [1000])
        second.messages[0].dialogId = 1
        #expect {
            try dialogs.persist(second)
        } throws: { error in
            guard let error = error as? StorageError else { return false }
            return error.kind == .constraint
                && error.message
                    == "a child in relation 'messages' names parent \(StoredValue.integer(1)) in 'dialogId' but is held by parent \(StoredValue.integer(2))"
        }
        store.close()
        let reopened = try FileStore(directory: scratch.url, format: format)
        #expect(try reopened.storage(for: DialogRecord.self).readAll().map { $0.messages.map(\.id).sorted() } == [[1000], [1001, 2000, 2001]])
    }

    @Test("the byte scan finds the same suspect texts as a scan of the Unicode scalars")
    func suspectTexts() {
        func byScalars(_ text: String) -> Bool {
            text.unicodeScalars.contains { $0.value >= 0x300 && CanonicalText.isFlagged($0.value) }
        }
        var texts = [
            "", "plain ASCII", "caf\u{E9}", "cafe\u{301}", "\u{2FF}", "\u{300}", "\u{0}", "один", "漢字", "🙂👩‍👩‍👧",
            "\u{1D15E}", "\u{1F1E6}", "\u{FB1D}", "\u{AC00}", "\u{1100}\u{1161}", "Zoe\u{308}", Sample.longText,
        ]
        // Every scalar of the basic plane and a sample above it, alone and
        // between ASCII, two-byte and four-byte neighbours.
        var scalars: [Unicode.Scalar] = (0x80...0xFFFF).compactMap(Unicode.Scalar.init(_:))
        scalars += stride(from: 0x10000, through: 0x10FFFF, by: 97).compactMap(Unicode.Scalar.init(_:))
        scalars += (0x1D100...0x1D250).compactMap(Unicode.Scalar.init(_:))
        for scalar in scalars {
            texts.append(String(scalar))
            texts.append("a\(scalar)\u{E9}b🙂")
        }
        var mismatches: [String] = []
        for text in texts where CanonicalText.isSuspect(text) != byScalars(text) {
            mismatches.append(text.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " "))
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
        #expect(CanonicalText.isSuspect("cafe\u{301}") && !CanonicalText.isSuspect("caf\u{E9}"))
    }
}
