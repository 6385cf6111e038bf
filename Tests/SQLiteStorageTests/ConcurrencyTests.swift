import DAOCore
import DialogGraph
import Foundation
import SQLiteStorage
import Testing

@Suite("Concurrency")
struct ConcurrencyTests {
    @Test("many tasks persisting, reading, querying and erasing at once")
    func manyTasks() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appending(path: "sqlite-storage-tests-\(UUID().uuidString)", directoryHint: .isDirectory)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try SQLiteDatabase(path: directory.appending(path: "store.sqlite"), durability: .none)
        let dialogs = try database.storage(for: DialogRecord.self)
        let messages = try database.storage(for: MessageRecord.self)
        let tasks = 16
        let perTask = 25

        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for index in 0..<perTask {
                        let id = Int64(task * 1000 + index + 1)
                        let children = (0..<4).map { message(id * 10 + Int64($0), dialog: id, isRead: $0 % 2 == 0) }
                        let dialog = DialogRecord(id: id, isPinned: index % 3 == 0, messages: children)
                        try dialogs.persist(dialog)
                        #expect(try dialogs.read(primaryKey: id) == dialog)
                        let unread = try messages.read(
                            where: #Predicate { $0.dialogId == id && !$0.isRead },
                            sortedBy: [SortDescriptor(\.date, order: .reverse)])
                        #expect(unread.map(\.id) == [id * 10 + 3, id * 10 + 1])
                        if index % 5 == 4 {
                            #expect(try dialogs.erase(primaryKey: id))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }

        let kept = tasks * (perTask - perTask / 5)
        #expect(try await dialogs.count() == kept)
        #expect(try await messages.count() == kept * 4)
    }
}
