import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

@Suite("LMDB: read transactions kept for reuse")
struct KeptReaderTests {
    @Test("a read after a commit sees it, through a reused read transaction")
    func renewedReaderSeesLaterCommits() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let dialogs = try env.storage(for: DialogRecord.self)
            let records = try dialogRecords(dialogs: 30, messages: 3)
            for (position, record) in records.enumerated() {
                // Each read ends its transaction, which is kept; the next
                // read renews it and must see the commit made in between.
                #expect(try dialogs.count() == position)
                try dialogs.persist(record)
                #expect(try dialogs.read(primaryKey: record.id) == record)
            }
            try dialogs.erase(primaryKeys: [records[0].id])
            #expect(try dialogs.read(primaryKey: records[0].id) == nil)
            #expect(try dialogs.readAll() == Array(records.dropFirst()))
        }
    }

    @Test("more readers at once than are kept; closing with readers kept, then opening again")
    func manyReadersThenClose() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let records = try dialogRecords(dialogs: 20, messages: 5)
        do {
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let dialogs = try env.storage(for: DialogRecord.self)
            try await dialogs.persist(records)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<(LMDBEnvironment.maxKeptReaders * 3) {
                    group.addTask {
                        for _ in 0..<20 {
                            let seen = try dialogs.readAll()
                            #expect(seen == records)
                        }
                    }
                }
                try await group.waitForAll()
            }
            env.close()
            #expect(storageError { _ = try dialogs.readAll() }?.kind == .closed)
        }
        let env = try LMDBEnvironment(directory: directory.store, durability: .none)
        #expect(try await env.storage(for: DialogRecord.self).readAll() == records)
        env.close()
    }

    @Test("codecs kept between read calls serve reads of every kind at once, before and after writes")
    func keptCodecs() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let records = try dialogRecords(dialogs: 12, messages: 6)
        let env = try LMDBEnvironment(directory: directory.store, durability: .none)
        defer { env.close() }
        // The child's storage first: its reads keep codecs before the
        // parent's storage exists.
        let messages = try env.storage(for: MessageRecord.self)
        #expect(try await messages.readAll().isEmpty)
        let dialogs = try env.storage(for: DialogRecord.self)
        try await dialogs.persist(records)
        let all = records.flatMap(\.messages)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<10 {
                        let record = records[(task + round) % records.count]
                        #expect(try dialogs.read(primaryKey: record.id) == record)
                        let message = all[(task * 7 + round) % all.count]
                        #expect(try messages.read(primaryKey: message.id) == message)
                        let dialogId = record.id
                        let unread = try messages.read(
                            Query(where: #Predicate<MessageRecord> { $0.dialogId == dialogId && $0.isRead == false }))
                        #expect(Set(unread) == Set(record.messages.filter { !$0.isRead }))
                        #expect(try dialogs.read(primaryKeys: [record.id, 0]) == [record])
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await messages.readAll().count == all.count)
    }

    @Test("codecs kept between read calls hold no part of a record once its read has returned")
    func keptCodecsHoldNoRecords() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            defer { env.close() }
            // Decoded through `Decodable` (not a FieldwiseRecord): its
            // leaves reach it through the decoder.
            let trees = try env.storage(for: TreeRecord.self)
            let tree = TreeRecord(id: 1, leaves: (1...3).map { LeafRecord(id: $0, treeId: 1, label: "leaf \($0)") })
            try trees.persist(tree)
            var read = try #require(try trees.read(primaryKey: 1))
            #expect(read == tree)
            // The array of leaves is the record's alone: changing it in place
            // does not copy it, so nothing the storage kept refers to it.
            let before = read.leaves.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
            read.leaves[0].label = "changed"
            let after = read.leaves.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
            #expect(before == after)
        }
    }
}
