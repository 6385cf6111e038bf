import DAOCore
import DialogGraph
import Dispatch
import Foundation
@testable import SQLiteStorage
import Synchronization
import Testing
import TestSupport

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

    /// With one reader connection, held on a thread of the test's as a long
    /// read would hold it, 64 async reads find it taken: each must leave the
    /// awaiting task's thread (the read in place gives up, and the read runs
    /// again on a reader thread of the store's, where it waits) rather than
    /// wait on a thread of the cooperative pool. A task on the pool still
    /// runs while they wait; once the reader is free they all answer.
    @Test("async reads that find the only reader connection taken wait off the cooperative pool, then answer")
    func readsWaitOffThePool() async throws {
        let directory = try TemporaryDirectory("sqlite-held-reader")
        let database = try SQLiteDatabase(path: directory.url.appending(path: "store.sqlite"), durability: .none, readers: 1)
        let users = try database.storage(for: UserRecord.self)
        let stored = sampleUsers()
        try await users.persist(stored)
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holderDone = DispatchSemaphore(value: 0)
        Thread {
            // Holds the only reader connection, as a long read would.
            do {
                try database.withReader(.read, entity: "users") { _ in
                    inside.signal()
                    release.wait()
                }
            } catch {
                Issue.record(error, "holding the reader connection")
                inside.signal()
            }
            holderDone.signal()
        }.start()
        try await withWatchdog(seconds: 600, "async reads beside a held reader connection") {
            await waitOffThePool(inside)
            let answered = AnswerCount()
            let reads = Task {
                try await withThrowingTaskGroup(of: UserRecord?.self) { group in
                    for index in 0..<64 {
                        let key = stored[index % stored.count].id
                        group.addTask {
                            let user = try await users.read(primaryKey: key)
                            answered.count.add(1, ordering: .relaxed)
                            return user
                        }
                    }
                    var answers: [UserRecord?] = []
                    for try await answer in group { answers.append(answer) }
                    return answers
                }
            }
            // Give the reads time to start and find the connection taken.
            try await Task.sleep(for: .milliseconds(200))
            // The pool still runs work: no read waits on one of its threads.
            let ran = await Task.detached { 42 }.value
            #expect(ran == 42)
            // Nothing could answer while the only reader is held.
            #expect(answered.count.load(ordering: .relaxed) == 0)
            release.signal()
            let answers = try await reads.value
            #expect(answers.count == 64)
            #expect(answers.allSatisfy { answer in stored.contains { $0 == answer } })
            await waitOffThePool(holderDone)
        }
        withExtendedLifetime(directory) {}
    }
}

/// How many reads have answered, shared by the tasks that make them.
private final class AnswerCount: Sendable {
    let count = Atomic<Int>(0)
}
