import CLMDB
import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

@Suite("LMDB environment: no orphans, map growth, concurrency")
struct EnvironmentTests {
    /// Every database's entry count, without the bookkeeping databases (`__links`, `__metadata`).
    func counts(_ env: LMDBEnvironment) throws -> [String: Int] {
        try env.entryCounts().filter { !$0.key.hasPrefix("__") }
    }

    @Test("erasing and replacing parents leaves no child, lookup or index entry behind")
    func noOrphans() throws {
        try withStoreDirectory { directory in
            var records = try dialogRecords(dialogs: 20, messages: 10)
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let dialogs = try env.storage(for: DialogRecord.self)
            let messages = try env.storage(for: MessageRecord.self)
            try dialogs.persist(records)

            func expectCounts(_ dialogCount: Int, _ messageCount: Int, _ comment: Comment) throws {
                let counts = try counts(env)
                #expect(counts["dialogs"] == dialogCount, comment)
                #expect(counts["dialogs#id"] == 0, comment)
                #expect(counts["messages"] == messageCount, comment)
                // One run of child keys per dialog that holds messages (the
                // workload's ids grow with their dialogs').
                let dialogsWithMessages = Set(try messages.readAll().map(\.dialogId)).count
                #expect(counts["messages#id"] == dialogsWithMessages, comment)
                #expect(try messages.verify() == messageCount, comment)
                // The messages' index leads with their foreign key: the
                // dialog's range serves it, so it has no database.
                #expect(counts["messages#messages_by_dialog_date"] == nil, comment)
                #expect(counts.count == 4, comment)
            }
            try expectCounts(20, 200, "after persist")

            // Replacing a dialog with fewer messages removes the others.
            records[0].messages.removeLast(4)
            records[0].messages = records[0].messages.map { var m = $0; m.isRead.toggle(); return m }
            try dialogs.persist(records[0])
            try expectCounts(20, 196, "after replacing children")

            #expect(try dialogs.erase(primaryKeys: [2, 3]) == 2)
            try expectCounts(18, 176, "after erase by key")
            #expect(try dialogs.erase(where: #Predicate { $0.isPinned }) == records.dropFirst(3).filter(\.isPinned).count)
            let left = records.filter { ![2, 3].contains($0.id) && ($0.id == 1 || !$0.isPinned) }
            try expectCounts(left.count, left.map(\.messages.count).reduce(0, +), "after erase by predicate")
            #expect(try messages.erase(where: #Predicate { $0.dialogId == 1 }) == 6)
            try expectCounts(left.count, left.map(\.messages.count).reduce(0, +) - 6, "after erasing children")
            #expect(try dialogs.eraseAll() == left.count)
            try expectCounts(0, 0, "after erase all")
        }
    }

    @Test("a store whose index on the foreign key has a database (the earlier layout) is read right, and the database dropped")
    func earlierIndexLayout() throws {
        try withStoreDirectory { directory in
            var records = try dialogRecords(dialogs: 6, messages: 5)
            let indexName = "messages#messages_by_dialog_date"
            do {
                let env = try LMDBEnvironment(directory: directory.store, durability: .none)
                try env.storage(for: DialogRecord.self).persist(records)
                // The index database as the earlier layout kept it: one entry
                // per message, index key to storage key.
                let index = try #require(try env.database(indexName, duplicateSort: true))
                try env.write(.persist) { txn in
                    for message in records.flatMap(\.messages) {
                        var key: [UInt8] = []
                        for value: StoredValue in [.integer(message.dialogId), .integer(message.isRead ? 1 : 0), .real(message.date.timeIntervalSinceReferenceDate)] {
                            KeyCodec.append(indexed: value, to: &key)
                        }
                        try txn.put(index, key, KeyCodec.encode(primaryKey: message.dialogId) + KeyCodec.encode(primaryKey: message.id))
                    }
                }
                #expect(try env.entryCounts()[indexName] == 30)
                env.close()
            }
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let dialogs = try env.storage(for: DialogRecord.self)
            let messages = try env.storage(for: MessageRecord.self)
            #expect(try dialogs.readAll() == records)
            let unread = #Predicate<MessageRecord> { $0.dialogId == 2 && !$0.isRead }
            #expect(try messages.read(where: unread) == records[1].messages.filter { !$0.isRead })
            // The stale database is gone, so no later write leaves it behind.
            let opened = try env.read(.read) { txn -> Bool in
                var dbi = MDB_dbi()
                return mdb_dbi_open(txn.handle, indexName, UInt32(MDB_DUPSORT), &dbi) == MDB_SUCCESS
            }
            #expect(!opened)
            records[1].messages = records[1].messages.map { var m = $0; m.isRead = false; return m }
            try dialogs.persist(records[1])
            #expect(try messages.read(where: unread) == records[1].messages)
            #expect(try messages.verify() == 30)
        }
    }

    @Test("a tiny map grows as writes need it, while data stays readable")
    func mapGrowth() throws {
        try withStoreDirectory { directory in
            let records = try dialogRecords(dialogs: 60, messages: 50)
            do {
                let env = try LMDBEnvironment(directory: directory.store, durability: .none, mapSize: 64 << 10)
                #expect(try env.mapSize == 64 << 10)
                let dialogs = try env.storage(for: DialogRecord.self)
                try dialogs.persist(Array(records.prefix(30)))  // one large transaction
                for record in records.dropFirst(30) {  // many small ones
                    try dialogs.persist(record)
                }
                #expect(try env.mapSize >= 1 << 20)
                #expect(try dialogs.readAll() == records)
            }
            let env = try LMDBEnvironment(directory: directory.store, mapSize: 64 << 10)
            #expect(try env.storage(for: DialogRecord.self).readAll() == records)
        }
    }

    @Test("many readers and serialized writers at once; readers see whole transactions")
    func concurrency() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let records = try dialogRecords(dialogs: 80, messages: 20)
        // A small map, so that it grows while readers are reading.
        let env = try LMDBEnvironment(directory: directory.store, durability: .none, mapSize: 128 << 10)
        let dialogs = try env.storage(for: DialogRecord.self)
        let messages = try env.storage(for: MessageRecord.self)
        let writers = 4
        try await withThrowingTaskGroup(of: Int.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for record in records where Int(record.id) % writers == writer {
                        try dialogs.persist(record)
                    }
                    return 0
                }
            }
            for _ in 0..<8 {
                group.addTask {
                    var reads = 0
                    for _ in 0..<40 {
                        let seen = try dialogs.readAll()
                        for dialog in seen {
                            // A dialog is committed with all its messages or not at all.
                            #expect(dialog.messages.count == 20)
                        }
                        let count = try messages.count()
                        #expect(count % 20 == 0)
                        #expect(try messages.read(where: #Predicate { $0.dialogId == 5 && !$0.isRead }).count <= 20)
                        reads += 1
                    }
                    return reads
                }
            }
            var total = 0
            for try await reads in group { total += reads }
            #expect(total == 8 * 40)
        }
        #expect(try await dialogs.readAll() == records)
        #expect(try env.mapSize > 128 << 10)
    }
}
