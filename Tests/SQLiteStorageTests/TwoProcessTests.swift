import DAOCore
import DialogGraph
import Foundation
@testable import SQLiteStorage
import Testing
import TestSupport

@Suite("SQLite with another process holding the write lock")
struct TwoProcessTests {
    @Test("opening a store whose tables exist does not wait for another process's write transaction")
    func openWhileAnotherProcessWrites() throws {
        try withTemporaryDirectory { directory in
            let file = directory.appending(path: "store.sqlite")
            do {
                let database = try SQLiteDatabase(path: file)
                try database.storage(for: DialogRecord.self).persist(DialogRecord(id: 1, isPinned: false, messages: []))
                _ = try database.storage(for: UserRecord.self)
                try database.close()
            }
            let writer = try HelperProcess(["sqlite-hold-write", file.path, "2"])
            #expect(writer.readLine() == "locked")

            // The other process holds the write lock (BEGIN IMMEDIATE) until told.
            // Opening and reading must not wait for it: before, storage(for:)
            // took the write lock itself and failed with `busy` after the
            // busy timeout.
            let database = try SQLiteDatabase(path: file)
            let dialogs = try database.storage(for: DialogRecord.self)
            let messages = try database.storage(for: MessageRecord.self)
            let users = try database.storage(for: UserRecord.self)
            #expect(try dialogs.readAll().map(\.id) == [1])
            #expect(try messages.count() == 0)
            #expect(try users.count() == 0)

            try writer.closeInput()
            #expect(writer.readLine() == "committed")
            let (status, errors) = writer.wait()
            #expect(status == 0, "\(errors)")
            #expect(try dialogs.readAll().map(\.id) == [1, 2])
            try dialogs.persist(DialogRecord(id: 3, isPinned: false, messages: []))
            #expect(try dialogs.count() == 3)
            try database.close()
        }
    }

    @Test("a refused real is reported with the core's error when BEGIN fails because another process writes")
    func refusedRealWhenBeginFails() throws {
        try withTemporaryDirectory { directory in
            let file = directory.appending(path: "store.sqlite")
            let database = try SQLiteDatabase(path: file)
            let dialogs = try database.storage(for: DialogRecord.self)
            try dialogs.persist(DialogRecord(id: 1, isPinned: false, messages: []))
            let writer = try HelperProcess(["sqlite-hold-write", file.path, "2"])
            #expect(writer.readLine() == "locked")

            // The other process holds the write lock until told, so this
            // store's BEGIN IMMEDIATE fails with `busy` after the busy timeout,
            // before a record is bound: without a bad value, that is the error.
            let message = { (id: Int64, date: Date) in
                MessageRecord(
                    id: id, dialogId: 3, date: date, text: "x", senderId: 1, receiverId: 2, type: 0,
                    isIncoming: false, isRead: false)
            }
            var batch = DialogRecord(id: 3, isPinned: false, messages: [
                message(31, Date(timeIntervalSinceReferenceDate: 1)), message(32, Date(timeIntervalSinceReferenceDate: 2)),
            ])
            #expect {
                try dialogs.persist(batch)
            } throws: { ($0 as? StorageError)?.kind == .busy }
            // A NaN changes nothing about it: the store is busy.
            batch.messages[1].date = Date(timeIntervalSinceReferenceDate: .nan)
            #expect {
                try dialogs.persist(batch)
            } throws: { ($0 as? StorageError)?.kind == .busy }

            try writer.closeInput()
            #expect(writer.readLine() == "committed")
            let (status, errors) = writer.wait()
            #expect(status == 0, "\(errors)")
            #expect(try dialogs.readAll().map(\.id) == [1, 2])
            try database.close()
        }
    }
}
