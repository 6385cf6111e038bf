import DAOCore
import DialogGraph
import Foundation
@testable import SQLiteStorage
import TestSupport
import Testing

@Suite("Hostile input")
struct HostileInputTests {
    static let strings = [
        "'); DROP TABLE messages; --",
        "\"; DELETE FROM dialogs; --",
        "a\u{0}b\u{0}",
        "\u{0}",
        "it's \"quoted\" `twice`",
        "emoji 🚀👩‍👩‍👧 and flags 🇺🇦",
        "Zürich — привет — 你好",
        "?1 ?2 :name @x $y",
        "",
        String(repeating: "long ", count: 10_000),
    ]

    @Test("hostile strings round-trip as data, as values and as keys")
    func roundTrip() throws {
        try withDatabase { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            let messages = try database.storage(for: MessageRecord.self)
            let users = try database.storage(for: UserRecord.self)
            let records = Self.strings.enumerated().map { offset, text in message(Int64(offset + 1), dialog: 1, text: text) }
            try dialogs.persist(DialogRecord(id: 1, isPinned: false, messages: records))
            #expect(try dialogs.read(primaryKey: 1)?.messages == records)
            #expect(try messages.count() == Self.strings.count)

            for (offset, text) in Self.strings.enumerated() {
                let found = try messages.read(where: #Predicate { $0.text == text })
                #expect(found.map(\.id) == [Int64(offset + 1)], "\(text.prefix(40).debugDescription)")
                try users.persist(UserRecord(id: text, name: text, bio: text, email: nil, birthDate: nil, gender: nil))
                #expect(try users.read(primaryKey: text)?.bio == text)
            }
            #expect(try users.count() == Self.strings.count)
            #expect(try messages.read(where: #Predicate { $0.text.contains("\u{0}b") }).map(\.id) == [3])
        }
    }

    @Test("a file that is not an SQLite database is a corrupt-store error at open",
          arguments: ["this is not a database, just text\n", String(repeating: "\u{0}garbage", count: 1000)])
    func notADatabase(contents: String) throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            try Data(contents.utf8).write(to: url)
            let error = #expect(throws: StorageError.self) { try SQLiteDatabase(path: url) }
            #expect(error?.kind == .corrupt)
            #expect(error?.operation == .open)
            #expect(error?.path == url.path(percentEncoded: false))
        }
    }

    @Test("a damaged database file gives a StorageError, not a crash")
    func damagedDatabase() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            do {
                let database = try SQLiteDatabase(path: url)
                try database.storage(for: DialogRecord.self).persist(try workloadRecords(dialogs: 30, messages: 30))
            }
            // Fold the WAL in, then overwrite everything past the header page.
            var bytes = try [UInt8](Data(contentsOf: url))
            for index in 100..<bytes.count { bytes[index] = UInt8(truncatingIfNeeded: index &* 31) }
            try Data(bytes).write(to: url)
            try? FileManager.default.removeItem(at: url.appendingPathExtension("wal"))
            do {
                let database = try SQLiteDatabase(path: url)
                _ = try database.storage(for: DialogRecord.self).readAll()
                Issue.record("reading a damaged database succeeded")
            } catch let error as StorageError {
                #expect([.corrupt, .schemaMismatch].contains(error.kind), "\(error)")
            }
        }
    }

    @Test("a truncated database file is corrupt at open, not an empty or shorter database",
          arguments: [50, 1000, 4096, -4096, -1])
    func truncated(cut: Int) throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            do {
                let database = try SQLiteDatabase(path: url)
                try database.storage(for: DialogRecord.self).persist(try workloadRecords(dialogs: 30, messages: 30))
            }
            #expect(!FileManager.default.fileExists(atPath: url.path(percentEncoded: false) + "-wal"))
            let bytes = try Data(contentsOf: url)
            #expect(bytes.count > 4 * 4096)
            // A cut below zero counts from the end.
            try bytes.prefix(cut > 0 ? cut : bytes.count + cut).write(to: url)
            let error = #expect(throws: StorageError.self) { try SQLiteDatabase(path: url) }
            #expect(error?.kind == .corrupt)
            #expect(error?.operation == .open)
            #expect(error?.message.contains("truncated") == true)
        }
    }

    @Test("a path whose directory cannot be created is an io error")
    func unopenablePath() throws {
        try withTemporaryDirectory { directory in
            let file = directory.appending(path: "plain-file")
            try Data("x".utf8).write(to: file)
            let error = #expect(throws: StorageError.self) {
                try SQLiteDatabase(path: file.appending(path: "sub").appending(path: "store.sqlite"))
            }
            #expect(error?.kind == .io)
        }
    }
}

@Suite("A directory where SQLite's side files go")
struct SideFileDirectoryTests {
    /// A directory in place of the `-wal` or the `-shm` file: one typed
    /// error for both, naming the directory and what to do, and the
    /// directory and the records left as they were.
    @Test("refused alike for the -wal and the -shm file", arguments: ["-wal", "-shm"])
    func directory(suffix: String) throws {
        try withTemporaryDirectory { directory in
            let file = directory.appending(path: "store.sqlite")
            do {
                let database = try SQLiteDatabase(path: file)
                try database.storage(for: UserRecord.self).persist(sampleUsers())
                try database.close()
            }
            let blocker = URL(fileURLWithPath: file.path(percentEncoded: false) + suffix)
            try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: false)
            try Data("mine".utf8).write(to: blocker.appending(path: "inside.txt"))
            let error = #expect(throws: StorageError.self) { try SQLiteDatabase(path: file) }
            #expect(error?.kind == .io)
            #expect(error?.operation == .open)
            #expect(error?.path == blocker.path(percentEncoded: false))
            let message = error?.message ?? ""
            #expect(message.contains(blocker.path(percentEncoded: false)), "\(message)")
            #expect(message.contains("is a directory"), "\(message)")
            #expect(message.contains("move or remove the directory"), "\(message)")
            #expect(try Data(contentsOf: blocker.appending(path: "inside.txt")) == Data("mine".utf8))
            try FileManager.default.removeItem(at: blocker)
            let database = try SQLiteDatabase(path: file)
            #expect(try database.storage(for: UserRecord.self).count() == sampleUsers().count)
            try database.close()
        }
    }
}

@Suite("A file where SQLite's rollback journal goes")
struct JournalNamedFileTests {
    /// A store's database is in write-ahead-log mode, which never writes a
    /// rollback journal: a file at that name is not SQLite's, and opening
    /// would let SQLite delete it or play it back. Refused, the file and the
    /// records left as they were.
    @Test("beside a database in write-ahead-log mode: refused, the file left in place")
    func besideWALDatabase() throws {
        try withTemporaryDirectory { directory in
            let file = directory.appending(path: "store.sqlite")
            do {
                let database = try SQLiteDatabase(path: file)
                try database.storage(for: UserRecord.self).persist(sampleUsers())
                try database.close()
            }
            let journal = URL(fileURLWithPath: file.path(percentEncoded: false) + "-journal")
            let bytes = Data(repeating: 1, count: 100)
            try bytes.write(to: journal)
            let error = #expect(throws: StorageError.self) { try SQLiteDatabase(path: file) }
            #expect(error?.kind == .io)
            #expect(error?.operation == .open)
            #expect(error?.path == journal.path(percentEncoded: false))
            let message = error?.message ?? ""
            #expect(message.contains("write-ahead-log mode"), "\(message)")
            #expect(message.contains("move or remove it"), "\(message)")
            #expect(FileManager.default.contents(atPath: journal.path(percentEncoded: false)) == bytes)
            try FileManager.default.removeItem(at: journal)
            let database = try SQLiteDatabase(path: file)
            #expect(try database.storage(for: UserRecord.self).count() == sampleUsers().count)
            try database.close()
        }
    }

    /// Beside a database not yet created, SQLite deletes whatever is at the
    /// journal's name: a file that is not a journal is refused and kept; one
    /// that starts as a rollback journal (left by a store whose creation was
    /// cut short) is left to SQLite.
    @Test("beside a new database: a file that is not a journal is refused, a journal is SQLite's")
    func besideNewDatabase() throws {
        try withTemporaryDirectory { directory in
            let file = directory.appending(path: "store.sqlite")
            let journal = URL(fileURLWithPath: file.path(percentEncoded: false) + "-journal")
            let notes = Data("my notes\n".utf8)
            try notes.write(to: journal)
            let error = #expect(throws: StorageError.self) { try SQLiteDatabase(path: file) }
            #expect(error?.kind == .io)
            #expect(error?.path == journal.path(percentEncoded: false))
            #expect(error?.message.contains("not a rollback journal of this database") == true, "\(String(describing: error))")
            #expect(FileManager.default.contents(atPath: journal.path(percentEncoded: false)) == notes)

            let header: [UInt8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7] + [UInt8](repeating: 0, count: 20)
            try Data(header).write(to: journal)
            let database = try SQLiteDatabase(path: file)
            try database.storage(for: UserRecord.self).persist(sampleUsers())
            #expect(try database.storage(for: UserRecord.self).count() == sampleUsers().count)
            try database.close()
        }
    }
}
