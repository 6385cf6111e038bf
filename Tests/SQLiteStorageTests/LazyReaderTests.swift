import DAOCore
import DialogGraph
import Dispatch
import Foundation
@testable import SQLiteStorage
import Synchronization
import TestSupport
import Testing

/// The reader connections are opened as reads need them, up to the pool's
/// size, and closed with the database.
@Suite("Reader connections opened on first use")
struct LazyReaderTests {
    @Test("no reader open until a read; reads one at a time keep to one; a read that finds every open one busy opens the next")
    func readersOpenAsNeeded() throws {
        let directory = FileManager.default.temporaryDirectory
            .appending(path: "sqlite-lazy-readers-\(UUID().uuidString)", directoryHint: .isDirectory)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try SQLiteDatabase(path: directory.appending(path: "store.sqlite"), durability: .none, readers: 3)
        #expect(database.openReaderCount == 0)
        // Opening a storage reads the table's recorded schema: one reader.
        let dialogs = try database.storage(for: DialogRecord.self)
        try dialogs.persist((1...3).map { DialogRecord(id: $0, isPinned: false, messages: []) })
        #expect(database.openReaderCount == 1)

        // Reads one after another take the first reader each time.
        for _ in 0..<3 { #expect(try dialogs.readAll().map(\.id) == [1, 2, 3]) }
        #expect(database.openReaderCount == 1)

        // A read while the first reader is held opens the second; one while
        // both are held, the third; each reads what was committed.
        let counts = try database.withReader(.read, entity: "dialogs") { _ in
            try database.withReader(.read, entity: "dialogs") { _ in
                (database.openReaderCount, try dialogs.read(primaryKeys: [1, 2, 3]).count)
            }
        }
        #expect(counts.0 == 2)
        #expect(counts.1 == 3)
        #expect(database.openReaderCount == 3)

        try database.close()
        #expect(database.openReaderCount == 0)
        #expect(throws: StorageError.self) { try dialogs.readAll() }
    }

    @Test("a thread reads again with the connection it read with last, though another is free before it")
    func threadKeepsItsConnection() throws {
        try withTemporaryDirectory("sqlite-lazy-readers") { directory in
            let database = try SQLiteDatabase(path: directory.appending(path: "store.sqlite"), durability: .none, readers: 2)
            let dialogs = try database.storage(for: DialogRecord.self)
            try dialogs.persist((1...3).map { DialogRecord(id: $0, isPinned: false, messages: []) })
            @Sendable func connection() throws -> ObjectIdentifier {
                try database.withReader(.read, entity: "dialogs") { ObjectIdentifier($0) }
            }
            // Another thread reads twice: first while this one holds the first
            // reader, so it opens and takes the second; then with both free.
            let seen = Mutex<[Result<ObjectIdentifier, any Error>]>([])
            let firstDone = DispatchSemaphore(value: 0)
            let again = DispatchSemaphore(value: 0)
            let secondDone = DispatchSemaphore(value: 0)
            let held = try database.withReader(.read, entity: "dialogs") { held in
                Thread {
                    seen.withLock { $0.append(Result { try connection() }) }
                    firstDone.signal()
                    again.wait()
                    seen.withLock { $0.append(Result { try connection() }) }
                    secondDone.signal()
                }.start()
                firstDone.wait()
                return ObjectIdentifier(held)
            }
            again.signal()
            secondDone.wait()
            let reads = try seen.withLock { try $0.map { try $0.get() } }
            #expect(reads.count == 2)
            #expect(reads.first != held, "the other thread read with the held connection")
            #expect(reads.first == reads.last, "the other thread's second read took the first free connection instead of its own")
            #expect(try connection() == held)
            #expect(database.openReaderCount == 2)
        }
    }

    @Test("a read after close throws and opens no reader")
    func closedUnread() throws {
        let directory = FileManager.default.temporaryDirectory
            .appending(path: "sqlite-lazy-readers-\(UUID().uuidString)", directoryHint: .isDirectory)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try SQLiteDatabase(path: directory.appending(path: "store.sqlite"), durability: .none, readers: 2)
        let dialogs = try database.storage(for: DialogRecord.self)
        try database.close()
        #expect(database.openReaderCount == 0)
        #expect(throws: StorageError.self) { try dialogs.read(primaryKey: 1) }
        #expect(database.openReaderCount == 0)
    }
}

@Suite("Reader connections opened on first use: a file replaced or removed")
struct LazyReaderFileTests {
    @Test("a reader that cannot open the writer's file (removed, or another file renamed over it) creates none, reads no other file, and fails no read while an open one will do",
          arguments: ["removed", "replaced"])
    func removedFile(change: String) throws {
        let directory = FileManager.default.temporaryDirectory
            .appending(path: "sqlite-lazy-readers-\(UUID().uuidString)", directoryHint: .isDirectory)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appending(path: "store.sqlite")
        let database = try SQLiteDatabase(path: path, durability: .none, readers: 2)
        let dialogs = try database.storage(for: DialogRecord.self)
        try dialogs.persist([DialogRecord(id: 1, isPinned: true, messages: [])])
        #expect(database.openReaderCount == 1)
        try FileManager.default.removeItem(at: path)
        if change == "replaced" {
            let otherPath = directory.appending(path: "other.sqlite")
            let other = try SQLiteDatabase(path: otherPath, durability: .none, readers: 1)
            try other.storage(for: DialogRecord.self).persist([DialogRecord(id: 2, isPinned: false, messages: [])])
            try other.close()
            try FileManager.default.moveItem(at: otherPath, to: path)
            for side in ["-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: otherPath.path + side)
            }
        }

        // Another thread holds the open reader for a moment; a read meanwhile
        // finds the second one unopenable (no file, and a reader never
        // creates one) and waits for the first instead of failing.
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let holder = Mutex<Result<Void, any Error>?>(nil)
        DispatchQueue.global().async {
            let result = Result {
                try database.withReader(.read, entity: "dialogs") { _ in
                    held.signal()
                    _ = release.wait(timeout: .now() + 10)
                }
            }
            holder.withLock { $0 = result }
            done.signal()
        }
        held.wait()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { release.signal() }
        let read = try dialogs.read(primaryKey: 1)
        done.wait()
        #expect(read?.isPinned == true)
        #expect(throws: Never.self) { try holder.withLock { $0 }?.get() }
        #expect(database.openReaderCount == 1)
        #expect(FileManager.default.fileExists(atPath: path.path) == (change == "replaced"))
        try database.close()
    }
}
