import DAOCore
import DialogGraph
import Foundation
@testable import SQLiteStorage
import Testing

@Suite("Query plans")
struct QueryPlanTests {
    @Test("the workload query runs in SQLite on the declared index, sorted by it")
    func workloadQueryUsesIndex() throws {
        try withDatabase { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            try dialogs.persist(try workloadRecords(dialogs: 30, messages: 20))
            let messages = try database.storage(for: MessageRecord.self)
            let dialog: Int64 = 7
            let query = Query<MessageRecord>(
                where: #Predicate { $0.dialogId == dialog && !$0.isRead },
                sortedBy: [SortDescriptor(\.date, order: .reverse)])
            let plan = try messages.queryPlan(query)
            #expect(plan.pushedDown)
            let detail = plan.details.joined(separator: " | ")
            let index = IndexNames.declared(table: "messages", index: "messages_by_dialog_date")
            #expect(detail.contains("USING INDEX \(index) (dialogId=?)"), "\(detail)")
            // The index order serves ORDER BY date DESC; only the primary-key
            // tie-break may need a small sort.
            #expect(!detail.contains("SCAN messages"), "\(detail)")

            let expected = try query.apply(to: messages.readAll())
            #expect(!expected.isEmpty)
            #expect(try messages.read(query) == expected)
        }
    }

    @Test("a dialog's messages are read through the foreign-key index, not a table scan")
    func childrenByParent() throws {
        try withDatabase { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            try dialogs.persist(try workloadRecords(dialogs: 5, messages: 5))
            let messages = try database.storage(for: MessageRecord.self)
            let dialog: Int64 = 2
            let plan = try messages.queryPlan(Query(where: #Predicate { $0.dialogId == dialog }))
            #expect(plan.details.joined().contains("USING INDEX"), "\(plan.details)")
        }
    }

    @Test("a string prefix runs as an index-usable range")
    func prefixUsesIndex() throws {
        try withDatabase { database in
            let users = try database.storage(for: UserRecord.self)
            try users.persist(sampleUsers())
            let plan = try users.queryPlan(Query(where: #Predicate { $0.email.flatMap { _ in true } ?? false }))
            #expect(!plan.pushedDown)
            let prefix = try users.queryPlan(Query(where: #Predicate { $0.id.starts(with: "al") }))
            #expect(prefix.pushedDown)
            #expect(prefix.details.joined().contains("id>? AND id<?"), "\(prefix.details)")
        }
    }
}
