import CSQLite
import DAOCore
import DialogGraph
import Foundation
@testable import SQLiteStorage
import Testing
import TestSupport

@Suite("SQLite storage")
struct StorageTests {
    @Test("opening reads back WAL, foreign keys and the synchronous level of the durability",
          arguments: [(Durability.full, "FULL"), (Durability.none, "OFF")])
    func settings(durability: Durability, synchronous: String) throws {
        try withDatabase(durability: durability) { database in
            #expect(database.settings.journalMode == "wal")
            #expect(database.settings.synchronous == synchronous)
            #expect(database.settings.foreignKeys)
            #expect(database.settings.busyTimeoutMilliseconds == Int(SQLiteDatabase.busyTimeoutMilliseconds))
        }
    }

    @Test("the workload round-trips through the DAO: persist, read, update, erase")
    func workloadRoundTrip() throws {
        try withDatabase { database in
            let data = WorkloadData(dialogs: 20, messagesPerDialog: 10)
            let dialogs = DAO(storage: try database.storage(for: DialogRecord.self), translator: DialogTranslator())
            let messages = try database.storage(for: MessageRecord.self)

            try dialogs.persist(data.initial)
            #expect(try dialogs.read() == data.initial)
            #expect(try messages.count() == 200)
            for id in data.readIds {
                #expect(try dialogs.read(byPrimaryKey: id) == data.initial[Int(id) - 1])
            }

            try dialogs.persist(data.updated)
            #expect(try dialogs.read() == data.updated)
            #expect(try messages.count(where: #Predicate { !$0.isRead }) == 0)

            for dialog in data.extra { try dialogs.persist(dialog) }
            #expect(try dialogs.count() == 40)

            let erased = try dialogs.erase(byPrimaryKeys: data.eraseIds)
            #expect(erased == 20)
            #expect(try messages.count() == 200)
            #expect(try dialogs.erase() == 20)
            #expect(try messages.count() == 0)
        }
    }

    @Test("tables are created natively: typed columns, integer primary key, index, foreign key with cascade")
    func nativeSchema() throws {
        try withDatabase { database in
            _ = try database.storage(for: DialogRecord.self)
            _ = try database.storage(for: UserRecord.self)
            let connection = try Connection(path: database.location.path(percentEncoded: false), flags: SQLITE_OPEN_READONLY)
            let messages = try #require(try connection.scalarText("SELECT sql FROM sqlite_master WHERE name = 'messages'"))
            #expect(messages.contains("\"id\" INTEGER NOT NULL PRIMARY KEY"))
            // A real column has no type, so no affinity: it keeps -0.0.
            #expect(messages.contains("\"date\" NOT NULL"))
            #expect(messages.contains("\"text\" TEXT NOT NULL"))
            #expect(messages.contains("\"isRead\" INTEGER NOT NULL"))
            #expect(messages.contains("REFERENCES \"dialogs\" (\"id\") ON DELETE CASCADE"))
            let index = try connection.scalarText(
                "SELECT sql FROM sqlite_master WHERE name = '\(IndexNames.declared(table: "messages", index: "messages_by_dialog_date"))'")
            #expect(index?.contains("(\"dialogId\", \"date\")") == true)
            let users = try #require(try connection.scalarText("SELECT sql FROM sqlite_master WHERE name = 'users'"))
            #expect(users.contains("\"bio\" TEXT,"))
            #expect(users.contains("\"gender\" TEXT)"))
            #expect(users.contains("\"birthDate\","))
        }
    }

    @Test("persisting a parent keeps exactly its children; erasing it erases them")
    func relations() throws {
        try withDatabase { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            let messages = try database.storage(for: MessageRecord.self)
            try dialogs.persist([
                DialogRecord(id: 1, isPinned: false, messages: [message(3, dialog: 1), message(1, dialog: 1), message(2, dialog: 1)]),
                DialogRecord(id: 2, isPinned: true, messages: [message(10, dialog: 2)]),
            ])
            // Children come back in primary-key order.
            #expect(try dialogs.read(primaryKey: 1)?.messages.map(\.id) == [1, 2, 3])

            try dialogs.persist(DialogRecord(id: 1, isPinned: true, messages: [message(2, dialog: 1, text: "edited"), message(4, dialog: 1)]))
            let one = try #require(try dialogs.read(primaryKey: 1))
            #expect(one.isPinned)
            #expect(one.messages.map(\.id) == [2, 4])
            #expect(one.messages[0].text == "edited")
            #expect(try messages.count() == 3)
            #expect(try messages.read(primaryKeys: [1, 3]).isEmpty)

            // A child persisted with another parent key moves.
            try messages.persist(message(4, dialog: 2))
            #expect(try dialogs.read(primaryKey: 1)?.messages.map(\.id) == [2])
            #expect(try dialogs.read(primaryKey: 2)?.messages.map(\.id) == [4, 10])

            // A child whose parent does not exist is refused.
            let orphan = #expect(throws: StorageError.self) { try messages.persist(message(99, dialog: 404)) }
            #expect(orphan?.kind == .constraint)
            #expect(orphan?.entity == "messages")
            #expect(orphan?.operation == .persist)
            #expect(orphan?.engineCode == 787)  // SQLITE_CONSTRAINT_FOREIGNKEY
            #expect(orphan?.message.contains("FOREIGN KEY constraint failed") == true)
            #expect(orphan?.context?.hasPrefix("COMMIT") == true || orphan?.context?.hasPrefix("INSERT INTO \"messages\"") == true)
            #expect(orphan?.path == database.location.path(percentEncoded: false))

            // Duplicate keys in one batch: the last wins.
            try dialogs.persist([
                DialogRecord(id: 3, isPinned: false, messages: [message(30, dialog: 3)]),
                DialogRecord(id: 3, isPinned: true, messages: [message(31, dialog: 3)]),
            ])
            #expect(try dialogs.read(primaryKey: 3) == DialogRecord(id: 3, isPinned: true, messages: [message(31, dialog: 3)]))
            #expect(try messages.read(primaryKey: 30) == nil)

            #expect(try dialogs.erase(primaryKeys: [2, 2, 77]) == 1)
            #expect(try messages.read(primaryKeys: [4, 10]).isEmpty)
            #expect(try dialogs.erase(where: #Predicate { $0.isPinned }) == 2)
            #expect(try messages.count() == 0)
        }
    }

    @Test("a child held by a parent with another key is refused and nothing is written")
    func childWithWrongParent() throws {
        try withDatabase { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            let error = #expect(throws: StorageError.self) {
                try dialogs.persist([
                    DialogRecord(id: 1, isPinned: false, messages: []),
                    DialogRecord(id: 2, isPinned: false, messages: [message(5, dialog: 1)]),
                ])
            }
            #expect(error?.kind == .constraint)
            #expect(try dialogs.count() == 0)
        }
    }

    @Test("reads by keys follow the keys given, one per occurrence, skipping missing ones")
    func readByKeys() throws {
        try withDatabase { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            let records = try workloadRecords()
            try dialogs.persist(records)
            let read = try dialogs.read(primaryKeys: [5, 99, 2, 5])
            #expect(read == [records[4], records[1], records[4]])
            #expect(try dialogs.read(primaryKey: 99) == nil)
        }
    }

    @Test("texts of every length round-trip when one statement binds them row after row, and again in later calls")
    func textsBoundRowAfterRow() throws {
        try withDatabase { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            let users = try database.storage(for: UserRecord.self)
            // Lengths that grow, shrink after a long one (the bytes left over
            // from the longer text must not show), cross the size SQLite is
            // left to copy itself, and hold NUL, emoji and decomposed accents.
            let texts = [
                "", "a", "short", String(repeating: "ab", count: 40), "x", String(repeating: "é", count: 300),
                "e\u{301}\u{0}tail", String(repeating: "🚀", count: 20_000), "after the long one",
                String(repeating: "z", count: 70_000), "", "last",
            ]
            func records(offset: Int64) -> [DialogRecord] {
                (0..<3).map { dialog in
                    let id = offset + Int64(dialog)
                    let messages = texts.indices.map { index in
                        message(id * 100 + Int64(index), dialog: id, text: texts[(index + dialog) % texts.count])
                    }
                    return DialogRecord(id: id, isPinned: dialog % 2 == 0, messages: messages)
                }
            }
            let first = records(offset: 1)
            try dialogs.persist(first)
            #expect(try dialogs.read(primaryKeys: first.map(\.id)) == first)
            // The same statements again: the update in place, then inserts.
            var changed = first
            for index in changed.indices {
                changed[index].messages = changed[index].messages.map {
                    var message = $0
                    message.text = texts[((texts.firstIndex(of: $0.text) ?? 0) + 5) % texts.count]
                    return message
                }
            }
            try dialogs.persist(changed)
            let second = records(offset: 10)
            try dialogs.persist(second)
            #expect(try dialogs.read(primaryKeys: changed.map(\.id) + second.map(\.id)) == changed + second)
            // Text keys and optional text through the Codable path.
            let sample = texts.indices.map { index in
                UserRecord(
                    id: "user \(index) " + texts[index].prefix(10), name: texts[index],
                    bio: index % 2 == 0 ? nil : texts[texts.count - 1 - index], email: nil, birthDate: nil, gender: nil)
            }
            try users.persist(sample)
            for user in sample {
                #expect(try users.read(primaryKey: user.id) == user)
            }
        }
    }

    @Test("users with optional fields and a string-backed enum round-trip; nil stays nil")
    func optionalFields() throws {
        try withDatabase { database in
            let users = try database.storage(for: UserRecord.self)
            let sample = sampleUsers()
            try users.persist(sample)
            #expect(try users.readAll() == sample.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) })
            #expect(try users.read(primaryKey: "bob")?.bio == nil)
            #expect(try users.read(primaryKey: "dora")?.bio == "")
        }
    }

    @Test("a negative limit is an invalid argument; a limit of zero reads nothing")
    func limits() throws {
        try withDatabase { database in
            let messages = try database.storage(for: MessageRecord.self)
            let error = #expect(throws: StorageError.self) { try messages.read(Query(limit: -1)) }
            #expect(error?.kind == .invalidArgument)
            #expect(try messages.read(Query(limit: 0)).isEmpty)
        }
    }

    @Test("a child table opened first gains its foreign key when its parent is opened")
    func childOpenedFirst() throws {
        try withDatabase { database in
            let messages = try database.storage(for: MessageRecord.self)
            let dialogs = try database.storage(for: DialogRecord.self)
            try dialogs.persist(DialogRecord(id: 1, isPinned: false, messages: [message(1, dialog: 1)]))
            let error = #expect(throws: StorageError.self) { try messages.persist(message(2, dialog: 9)) }
            #expect(error?.kind == .constraint)
            #expect(try dialogs.erase(primaryKey: 1))
            #expect(try messages.count() == 0)
        }
    }

    @Test("a child table created without its owner gains the foreign key when the owner is opened")
    func foreignKeyAddedLater() throws {
        try withDatabase { database in
            let leaves = try database.storage(for: LeafRecord.self)
            try leaves.persist([LeafRecord(id: 1, treeId: 1, label: "kept"), LeafRecord(id: 2, treeId: 1, label: "kept too")])
            try leaves.persist(LeafRecord(id: 3, treeId: 42, label: "no tree yet"))
            // The leaves were written on their own, no tree checked for them:
            // the trees are refused (docs/SEMANTICS.md), as on every backend.
            let refused = #expect(throws: StorageError.self) { try database.storage(for: TreeRecord.self) }
            #expect(refused?.kind == .schemaMismatch)
            #expect(try leaves.erase(primaryKey: 3))
            #expect(try leaves.erase(where: #Predicate { $0.treeId == 1 }) == 2)
            try leaves.persist([LeafRecord(id: 1, treeId: 1, label: "a")])
            let failed = #expect(throws: StorageError.self) { try database.storage(for: TreeRecord.self) }
            #expect(failed?.kind == .schemaMismatch)
            #expect(try leaves.eraseAll() == 1)

            let trees = try database.storage(for: TreeRecord.self)
            try trees.persist(TreeRecord(id: 1, leaves: [LeafRecord(id: 5, treeId: 1, label: "leaf")]))
            let orphan = #expect(throws: StorageError.self) { try leaves.persist(LeafRecord(id: 6, treeId: 9, label: "x")) }
            #expect(orphan?.kind == .constraint)
            #expect(try trees.erase(primaryKey: 1))
            #expect(try leaves.count() == 0)
        }
    }

    @Test("a child table with rows whose parents exist is rebuilt with its foreign key, keeping the rows")
    func foreignKeyRebuildKeepsRows() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            do {
                let database = try SQLiteDatabase(path: url)
                let leaves = try database.storage(for: LeafRecord.self)
                try leaves.persist([LeafRecord(id: 2, treeId: 7, label: "b"), LeafRecord(id: 1, treeId: 7, label: "a")])
                // The parent row exists before the owner's storage is opened.
                let connection = try Connection(path: url.path(percentEncoded: false), flags: SQLITE_OPEN_READWRITE)
                try connection.execute("CREATE TABLE trees (id INTEGER NOT NULL PRIMARY KEY); INSERT INTO trees VALUES (7)")
            }
            let database = try SQLiteDatabase(path: url)
            let trees = try database.storage(for: TreeRecord.self)
            #expect(try trees.read(primaryKey: 7)?.leaves.map(\.label) == ["a", "b"])
            #expect(try trees.erase(primaryKey: 7))
            #expect(try database.storage(for: LeafRecord.self).count() == 0)
        }
    }

    @Test("an IN list longer than SQLite's parameter limit is answered in memory")
    func hugeInList() throws {
        try withDatabase { database in
            let users = try database.storage(for: UserRecord.self)
            try users.persist(sampleUsers())
            let names = (0..<40_000).map { "user\($0)" } + ["bob", "zoë"]
            let found = try users.read(where: #Predicate { names.contains($0.id) })
            #expect(found.map(\.id) == ["bob", "zoë"])
            #expect(try users.count(where: #Predicate { names.contains($0.id) }) == 2)
        }
    }

    @Test("a table whose columns differ from the record is a schema mismatch")
    func schemaMismatch() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            do {
                let connection = try Connection(path: url.path(percentEncoded: false), flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
                try connection.execute("CREATE TABLE users (id TEXT NOT NULL PRIMARY KEY, name TEXT NOT NULL)")
            }
            let database = try SQLiteDatabase(path: url)
            let error = #expect(throws: StorageError.self) { try database.storage(for: UserRecord.self) }
            #expect(error?.kind == .schemaMismatch)
            #expect(error?.entity == "users")
            #expect(error?.path == url.path(percentEncoded: false))
        }
    }

}
