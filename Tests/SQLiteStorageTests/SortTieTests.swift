import DAOCore
import DialogGraph
import Foundation
@testable import SQLiteStorage
import Testing

/// A query sorted by numeric fields leaves the primary key out of SQLite's
/// `ORDER BY` and orders rows with equal sort values itself: these check that
/// the answer stays the same (the key decides among equal values, ascending).
@Suite("Sort ties")
struct SortTieTests {
    /// Messages of one dialog, many sharing a date, stored in an order where
    /// the index yields equal dates by descending row id (the key).
    func tiedMessages(dialog: Int64) -> [MessageRecord] {
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        return (1...40).map { id -> MessageRecord in
            var record = message(Int64(id), dialog: dialog, isRead: id % 5 == 0)
            // Ten distinct dates, four messages on each; the type ties too.
            record.date = base.addingTimeInterval(Double(id % 10) * 30)
            record.type = Int64(id % 2)
            return record
        }
    }

    @Test("equal sort values come in primary-key order, ascending and descending")
    func tiesByKey() throws {
        try withDatabase { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            try dialogs.persist([DialogRecord(id: 3, isPinned: false, messages: tiedMessages(dialog: 3))])
            let messages = try database.storage(for: MessageRecord.self)
            let dialog: Int64 = 3
            let all = try messages.readAll()
            for sort in [
                [SortDescriptor(\MessageRecord.date, order: .reverse)],
                [SortDescriptor(\MessageRecord.date)],
                [SortDescriptor(\MessageRecord.date, order: .reverse), SortDescriptor(\MessageRecord.type)],
                [SortDescriptor(\MessageRecord.type, order: .reverse)],
            ] {
                let query = Query<MessageRecord>(where: #Predicate { $0.dialogId == dialog && !$0.isRead }, sortedBy: sort)
                let expected = try query.apply(to: all)
                #expect(expected.count == 32)
                let read = try messages.read(query)
                #expect(read.map(\.id) == expected.map(\.id))
                // Twice: the second call runs the plan kept for the shape.
                #expect(try messages.read(query).map(\.id) == expected.map(\.id))
                #expect(try messages.queryPlan(query).pushedDown)
            }
            // The workload's query no longer sorts in SQLite at all.
            let newestFirst = Query<MessageRecord>(
                where: #Predicate { $0.dialogId == dialog && !$0.isRead },
                sortedBy: [SortDescriptor(\.date, order: .reverse)])
            let details = try messages.queryPlan(newestFirst).details.joined(separator: " | ")
            #expect(!details.contains("TEMP B-TREE"), "\(details)")
            // With a limit the key stays in SQL: the rows at the cut must be the right ones.
            let limited = Query<MessageRecord>(
                where: #Predicate { $0.dialogId == dialog }, sortedBy: [SortDescriptor(\.date, order: .reverse)], limit: 6)
            #expect(try messages.read(limited).map(\.id) == (try limited.apply(to: all)).map(\.id))
        }
    }

    @Test("nil values tie as well, stored out of key order")
    func nilTies() throws {
        try withDatabase { database in
            let users = try database.storage(for: UserRecord.self)
            let day = Date(timeIntervalSince1970: 1_000_000)
            let names = ["zoe", "bob", "mia", "al", "kim", "eve", "dan", "ann"]
            try users.persist(names.enumerated().map { index, name in
                UserRecord(
                    id: name, name: name, bio: nil, email: nil,
                    birthDate: index % 3 == 0 ? nil : day.addingTimeInterval(Double(index % 2)), gender: nil)
            })
            let all = try users.readAll()
            for order in [SortOrder.forward, .reverse] {
                let query = Query<UserRecord>(sortedBy: [SortDescriptor(\.birthDate, order: order)])
                let expected = try query.apply(to: all)
                #expect(expected.count == names.count)
                #expect(try users.read(query).map(\.id) == expected.map(\.id))
            }
        }
    }

    @Test("a parent's children come back in key order, whatever order the index yields them in")
    func childrenInKeyOrder() throws {
        try withDatabase { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            let base = Date(timeIntervalSince1970: 1_700_000_000)
            func messages(dialog: Int64, date: (Int64) -> Double, isRead: (Int64) -> Bool) -> [MessageRecord] {
                (Int64(1)...30).map { id -> MessageRecord in
                    var record = message(dialog * 100 + id, dialog: dialog, isRead: isRead(id))
                    record.date = base.addingTimeInterval(date(id))
                    return record
                }
            }
            let stored = [
                // Dates falling as keys rise: one descending run.
                DialogRecord(id: 1, isPinned: false, messages: messages(dialog: 1, date: { -Double($0) }, isRead: { _ in false })),
                // Unread and read each in key order: two ascending runs.
                DialogRecord(id: 2, isPinned: false, messages: messages(dialog: 2, date: { Double($0) }, isRead: { $0 % 3 == 0 })),
                // Dates going up and down: many runs.
                DialogRecord(id: 3, isPinned: false, messages: messages(dialog: 3, date: { Double(($0 * 7) % 11) }, isRead: { $0 % 2 == 0 })),
            ]
            try dialogs.persist(stored)
            for dialog in stored {
                let expected = dialog.messages.map(\.id).sorted()
                #expect(try dialogs.read(primaryKey: dialog.id)?.messages.map(\.id) == expected)
                #expect(try dialogs.read(primaryKeys: [dialog.id]).first?.messages.map(\.id) == expected)
            }
            #expect(try dialogs.readAll().map { $0.messages.map(\.id) } == stored.map { $0.messages.map(\.id).sorted() })
        }
    }
}
