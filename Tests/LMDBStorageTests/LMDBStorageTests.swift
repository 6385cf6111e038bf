import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

@Suite("LMDB storage: records, relations, queries")
struct LMDBStorageTests {
    @Test("dialogs round-trip with their messages, in key order")
    func roundTrip() throws {
        try withStoreDirectory { directory in
            let records = try dialogRecords(dialogs: 20, messages: 10)
            let env = try LMDBEnvironment(directory: directory.store)
            let dialogs = try env.storage(for: DialogRecord.self)
            try dialogs.persist(records.shuffled())
            #expect(try dialogs.readAll() == records)
            #expect(try dialogs.count() == 20)
            #expect(try dialogs.read(primaryKey: 7) == records[6])
            #expect(try dialogs.read(primaryKey: 99) == nil)
            #expect(try dialogs.read(primaryKeys: [3, 99, 1, 3]) == [records[2], records[0], records[2]])
            let messages = try env.storage(for: MessageRecord.self)
            #expect(try messages.count() == 200)
            #expect(try messages.read(primaryKey: 55) == records[5].messages[4])
            #expect(try messages.readAll() == records.flatMap(\.messages))
        }
    }

    @Test("data survives closing and reopening the environment")
    func reopen() throws {
        try withStoreDirectory { directory in
            let records = try dialogRecords(dialogs: 5, messages: 4)
            do {
                let env = try LMDBEnvironment(directory: directory.store, durability: .none)
                try env.storage(for: DialogRecord.self).persist(records)
            }
            let env = try LMDBEnvironment(directory: directory.store)
            // The child storage, opened first, knows its parent from the environment.
            let messages = try env.storage(for: MessageRecord.self)
            #expect(try messages.count() == 20)
            let orphan = MessageRecord(
                id: 1000, dialogId: 77, date: Date(), text: "x", senderId: 1, receiverId: 2, type: 0,
                isIncoming: true, isRead: false)
            #expect(storageError { try messages.persist(orphan) }?.kind == .constraint)
            #expect(try env.storage(for: DialogRecord.self).readAll() == records)
        }
    }

    @Test("users: string keys, optionals, enums and dates round-trip; keys sort by UTF-8")
    func users() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            let users = try env.storage(for: UserRecord.self)
            try users.persist(sampleUsers)
            let sorted = sampleUsers.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
            #expect(try users.readAll() == sorted)
            #expect(try users.read(primaryKey: "") == sampleUsers[2])
            #expect(try users.read(primaryKey: "zoë\u{0}x") == sampleUsers[3])
            #expect(try users.read(where: #Predicate { $0.bio == nil }) == [sampleUsers[1]])
            let byEmail = try users.read(where: #Predicate { $0.email == "ada@example.com" })
            #expect(byEmail == [sampleUsers[0], sampleUsers[3]])
            #expect(users.table.plan(for: #Predicate { $0.email == "ada@example.com" }) != .everything)
            // Nil is indexed too, sorting first.
            let noEmail = #Predicate<UserRecord> { $0.email == nil }
            #expect(users.table.planWithExactness(for: noEmail).isExact)
            #expect(try users.read(where: noEmail) == [sampleUsers[1]])
            #expect(try users.count(where: noEmail) == 1)
            #expect(try users.count(where: #Predicate { $0.email != nil }) == 3)
        }
    }

    @Test("upsert replaces a parent's children exactly; the last duplicate in a batch wins")
    func upsert() throws {
        try withStoreDirectory { directory in
            var records = try dialogRecords(dialogs: 3, messages: 5)
            let env = try LMDBEnvironment(directory: directory.store)
            let dialogs = try env.storage(for: DialogRecord.self)
            try dialogs.persist(records)
            var changed = records[1]
            changed.isPinned.toggle()
            changed.messages.removeFirst(2)
            changed.messages[0].isRead.toggle()
            changed.messages[0].text = "changed"
            var first = changed
            first.messages = []
            try dialogs.persist([first, changed])
            records[1] = changed
            #expect(try dialogs.readAll() == records)
            let messages = try env.storage(for: MessageRecord.self)
            #expect(try messages.count() == 13)
            let isRead = changed.messages[0].isRead
            let dialogId = changed.id
            let matching = try messages.read(where: #Predicate { $0.dialogId == dialogId && $0.isRead == isRead })
            #expect(matching == changed.messages.filter { $0.isRead == isRead })
        }
    }

    @Test("a child persisted with another foreign key moves to that parent")
    func moveChild() throws {
        try withStoreDirectory { directory in
            let records = try dialogRecords(dialogs: 2, messages: 3)
            let env = try LMDBEnvironment(directory: directory.store)
            let dialogs = try env.storage(for: DialogRecord.self)
            let messages = try env.storage(for: MessageRecord.self)
            try dialogs.persist(records)
            var moved = records[0].messages[1]
            moved.dialogId = 2
            try messages.persist(moved)
            #expect(try dialogs.read(primaryKey: 1)?.messages == [records[0].messages[0], records[0].messages[2]])
            #expect(try dialogs.read(primaryKey: 2)?.messages == [moved] + records[1].messages)
            #expect(try messages.read(where: #Predicate { $0.dialogId == 2 }).count == 4)
            #expect(try messages.count() == 6)
        }
    }

    @Test("a parent's range is filtered on the predicate's other equalities, and answers exactly")
    func parentRangeFilteredOnOtherEqualities() throws {
        try withStoreDirectory { directory in
            let records = try dialogRecords(dialogs: 12, messages: 40)
            let env = try LMDBEnvironment(directory: directory.store)
            try env.storage(for: DialogRecord.self).persist(records)
            let messages = try env.storage(for: MessageRecord.self)
            let all = records.flatMap(\.messages)
            var matched = 0
            for dialog in records.prefix(6) {
                let d = dialog.id
                let sample = try #require(dialog.messages.dropFirst(7).first)
                let (t, s, text, date) = (sample.type, sample.senderId, sample.text, sample.date)
                // Fields outside the index that serves the dialog's range:
                // integers, booleans, text, a date, with and without the
                // index's own next field.
                let exact: [(Predicate<MessageRecord>, (MessageRecord) -> Bool)] = [
                    (#Predicate { $0.dialogId == d && $0.type == t }, { $0.dialogId == d && $0.type == t }),
                    (
                        #Predicate { $0.dialogId == d && !$0.isRead && $0.type == t && $0.isIncoming },
                        { $0.dialogId == d && !$0.isRead && $0.type == t && $0.isIncoming }
                    ),
                    (
                        #Predicate { $0.senderId == s && $0.dialogId == d && $0.type == t },
                        { $0.senderId == s && $0.dialogId == d && $0.type == t }
                    ),
                    (#Predicate { $0.dialogId == d && $0.text == text }, { $0.dialogId == d && $0.text == text }),
                    // The index's next field (`date`) with one outside it.
                    (
                        #Predicate { $0.dialogId == d && $0.date == date && $0.type == t },
                        { $0.dialogId == d && $0.date == date && $0.type == t }
                    ),
                ]
                for (predicate, expected) in exact {
                    let plan = messages.table.plan(for: QueryPlan(Query(where: predicate), parts: [.accessPath]))
                    guard case .parentFilteredRange = plan.plan else {
                        Issue.record("planned as \(plan.plan)")
                        continue
                    }
                    #expect(plan.isExact)
                    let answer = all.filter(expected).sorted { $0.id < $1.id }
                    #expect(try messages.read(where: predicate) == answer)
                    #expect(try messages.count(where: predicate) == answer.count)
                    matched += answer.count
                }
                // Not only equalities: each child is still checked whole.
                let ranged = #Predicate<MessageRecord> { $0.dialogId == d && $0.type >= 1 }
                #expect(!messages.table.planWithExactness(for: ranged).isExact)
                #expect(try messages.read(where: ranged) == all.filter { $0.dialogId == d && $0.type >= 1 })
            }
            #expect(matched > 30)
            // Erasing by such a predicate erases exactly those children.
            let d = records[0].id
            let t = records[0].messages[3].type
            let erased = try messages.erase(where: #Predicate { $0.dialogId == d && $0.type == t })
            #expect(erased == records[0].messages.filter { $0.type == t }.count)
            #expect(try messages.read(where: #Predicate { $0.dialogId == d }) == records[0].messages.filter { $0.type != t })
        }
    }

    @Test("the workload query reads one dialog's range, filtered on isRead, and answers exactly")
    func workloadQuery() throws {
        try withStoreDirectory { directory in
            let records = try dialogRecords(dialogs: 30, messages: 40)
            let env = try LMDBEnvironment(directory: directory.store)
            try env.storage(for: DialogRecord.self).persist(records)
            let messages = try env.storage(for: MessageRecord.self)
            for dialogId: Int64 in [1, 17, 30, 31] {
                let predicate = #Predicate<MessageRecord> { $0.dialogId == dialogId && !$0.isRead }
                let plan = messages.table.plan(for: predicate)
                // The index leads with the foreign key: the dialog's range,
                // filtered on `isRead`, which the index does not hold, on
                // the stored bytes.
                guard case .parentFilteredRange(_, let fields, let values) = plan else {
                    Issue.record("the query is planned as \(plan)")
                    continue
                }
                #expect(fields.map { messages.table.schema.names[$0] } == ["isRead"])
                #expect(values.count == 1)
                #expect(messages.table.planWithExactness(for: predicate).isExact)
                let result = try messages.read(where: predicate, sortedBy: [SortDescriptor(\.date, order: .reverse)])
                let expected = records.flatMap(\.messages).filter { $0.dialogId == dialogId && !$0.isRead }
                    .sorted { ($0.date, $0.id) > ($1.date, $1.id) }
                #expect(result.map(\.id) == expected.map(\.id))
                #expect(result == expected)
                let limited = try messages.read(where: predicate, sortedBy: [SortDescriptor(\.date, order: .reverse)], limit: 3)
                #expect(limited == Array(expected.prefix(3)))
            }
            // A predicate with more than the key range can answer is checked on each record.
            let partly = #Predicate<MessageRecord> { $0.dialogId == 3 && !$0.isRead && $0.text.count > 100 }
            #expect(!messages.table.planWithExactness(for: partly).isExact)
            #expect(
                try messages.read(where: partly).map(\.id)
                    == records[2].messages.filter { !$0.isRead && $0.text.count > 100 }.map(\.id))
            let twice = #Predicate<MessageRecord> { $0.dialogId == 3 && $0.dialogId == 4 }
            #expect(!messages.table.planWithExactness(for: twice).isExact)
            #expect(try messages.read(where: twice).isEmpty)
            // The quick sort orders exactly as the sort descriptors do.
            let all = records.flatMap(\.messages)
            for descriptors: [SortDescriptor<MessageRecord>] in [
                [SortDescriptor(\.type), SortDescriptor(\.date, order: .reverse)],
                [SortDescriptor(\.senderId, order: .reverse)],
                [SortDescriptor(\.text), SortDescriptor(\.id, order: .reverse)],
            ] {
                #expect(messages.table.sorted(all.shuffled(), by: descriptors) == Query.sorted(all, by: descriptors))
            }
            // A parent-key equality alone reads that parent's cursor range.
            #expect(messages.table.plan(for: #Predicate { $0.dialogId == 3 }) != .everything)
            #expect(try messages.count(where: #Predicate { $0.dialogId == 3 }) == 40)
            // A primary-key equality is one lookup.
            guard case .primaryKey = messages.table.plan(for: #Predicate { $0.id == 5 && $0.isRead }) else {
                Issue.record("a primary-key equality is not a lookup")
                return
            }
            #expect(try messages.read(where: #Predicate { $0.id == 5 }) == [records[0].messages[4]])
            // Predicates with nothing to narrow are still answered, in memory.
            let long = try messages.read(where: #Predicate { $0.text.count > 200 || $0.type == 3 }, limit: 5)
            let expectedLong = records.flatMap(\.messages).filter { $0.text.count > 200 || $0.type == 3 }.prefix(5)
            #expect(long == Array(expectedLong))
            #expect(storageError { _ = try messages.read(where: nil, limit: -1) }?.kind == .invalidArgument)
        }
    }

    @Test("erase by key, by predicate and everything, returning top-level counts")
    func erase() throws {
        try withStoreDirectory { directory in
            let records = try dialogRecords(dialogs: 10, messages: 5)
            let env = try LMDBEnvironment(directory: directory.store)
            let dialogs = try env.storage(for: DialogRecord.self)
            let messages = try env.storage(for: MessageRecord.self)
            try dialogs.persist(records)
            #expect(try dialogs.erase(primaryKeys: [2, 4, 4, 99]) == 2)
            #expect(try messages.count() == 40)
            #expect(try dialogs.erase(where: #Predicate { $0.id > 8 }) == 2)
            #expect(try messages.erase(where: #Predicate { $0.dialogId == 1 && $0.id <= 3 }) == 3)
            #expect(try dialogs.read(primaryKey: 1)?.messages.count == 2)
            #expect(try messages.erase(primaryKeys: [4, 4]) == 1)
            #expect(try dialogs.eraseAll() == 6)
            #expect(try messages.count() == 0)
            #expect(try dialogs.count() == 0)
        }
    }
}
