import DAOCore
import DialogGraph
import Foundation
@testable import SQLiteStorage
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
