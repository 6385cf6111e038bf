import DAOCore
import DialogGraph
import FileStorage
import Foundation
import TestSupport
import Testing

@Suite("File store: what is written is what was committed")
struct DocumentTests {
    @Test("after many small commits (upserts, edits, moves, erases) a reopened store holds exactly the same records",
          arguments: FileFormat.allCases)
    func smallCommitsRoundTrip(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let data = WorkloadData(dialogs: 30, messagesPerDialog: 6, seed: 9)
        let translator = DialogTranslator()
        var expected: [DialogRecord]
        do {
            let store = try FileStore(directory: scratch.url, format: format, durability: .none)
            let dialogs = try store.storage(for: DialogRecord.self)
            let messages = try store.storage(for: MessageRecord.self)
            try dialogs.persist(try data.initial.map(translator.record(from:)))
            for dialog in data.extra.prefix(5) { try dialogs.persist(try translator.record(from: dialog)) }
            // Edit a few messages in place, move one, erase some dialogs.
            var edited = try #require(try messages.read(primaryKey: 7))
            edited.text = "edited, with \"quotes\" and a\nnewline"
            try messages.persist(edited)
            var moved = try #require(try messages.read(primaryKey: 8))
            moved.dialogId = 30
            try messages.persist(moved)
            try dialogs.erase(primaryKeys: [3, 31])
            expected = try dialogs.readAll()
        }
        let reopened = try FileStore(directory: scratch.url, format: format)
        let read = try reopened.storage(for: DialogRecord.self).readAll()
        #expect(read == expected)
        #expect(read.count == 33)
        #expect(read.first { $0.id == 2 }?.messages.first { $0.id == 7 }?.text == "edited, with \"quotes\" and a\nnewline")
        #expect(read.first { $0.id == 30 }?.messages.contains { $0.id == 8 } == true)
    }
}
