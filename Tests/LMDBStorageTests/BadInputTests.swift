import CLMDB
import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

/// `users` with a free-text gender, to store a value `UserRecord` cannot decode.
struct LooseUserRecord: Record {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var bio: String?
    var email: String?
    var birthDate: Date?
    var gender: String?

    static let entity = Entity<LooseUserRecord>(
        "users", primaryKey: "id", \.id,
        fields: [
            Field("name", \.name), Field("bio", \.bio), Field("email", \.email), Field("birthDate", \.birthDate),
            Field("gender", \.gender),
        ],
        indexes: [Index("users_by_email", on: ["email"])])
}

/// A record whose entity name is another entity's `#id` database name.
struct HashNamedRecord: Record {
    typealias PrimaryKey = String
    var id: String
    var value: String
    static let entity = Entity<HashNamedRecord>("users#id", primaryKey: "id", \.id, fields: [Field("value", \.value)])
}

/// A record with an index named `id`, which would be the entity's `#id` database.
struct IndexNamedIdRecord: Record {
    typealias PrimaryKey = String
    var id: String
    var value: String
    static let entity = Entity<IndexNamedIdRecord>(
        "notes", primaryKey: "id", \.id, fields: [Field("value", \.value)], indexes: [Index("id", on: ["value"])])
}

@Suite("LMDB bad input: foreign files, damaged values, read-only writes")
struct BadInputTests {
    @Test("a non-LMDB data file in the directory is corrupt")
    func garbageDataFile() throws {
        try withStoreDirectory { directory in
            try FileManager.default.createDirectory(at: directory.store, withIntermediateDirectories: true)
            let garbage = Data((0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
            try garbage.write(to: directory.store.appendingPathComponent("data.mdb"))
            let error = storageError { _ = try LMDBEnvironment(directory: directory.store) }
            #expect(error?.kind == .corrupt)
            #expect(error?.operation == .open)
            #expect(error?.path == directory.store.standardizedFileURL.appendingPathComponent("data.mdb").path)
            #expect(error?.engineCode == MDB_INVALID)
        }
    }

    @Test("an empty lock file and no data file (a first open that failed, as on a full disk) is a new environment")
    func failedFirstOpen() throws {
        try withStoreDirectory { directory in
            try FileManager.default.createDirectory(at: directory.store, withIntermediateDirectories: true)
            // What liblmdb leaves when it cannot size its lock file: the file,
            // empty, and no data file. No environment was ever opened here.
            let lock = directory.store.appendingPathComponent("lock.mdb")
            try Data().write(to: lock)
            let env = try LMDBEnvironment(directory: directory.store)
            let storage = try env.storage(for: LooseUserRecord.self)
            try storage.persist([LooseUserRecord(id: "u", name: "after a failed first open")])
            #expect(try storage.readAll().map(\.name) == ["after a failed first open"])
            env.close()
            // Beside an empty data file too (the first open failed once it had created it).
            try FileManager.default.removeItem(at: directory.store)
            try FileManager.default.createDirectory(at: directory.store, withIntermediateDirectories: true)
            try Data().write(to: lock)
            try Data().write(to: directory.store.appendingPathComponent("data.mdb"))
            let again = try LMDBEnvironment(directory: directory.store)
            #expect(try again.storage(for: LooseUserRecord.self).readAll().isEmpty)
            again.close()
        }
    }

    @Test("an entity or index name that would be another database's name is refused before anything is written")
    func databaseNameClash() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            let users = try env.storage(for: LooseUserRecord.self)
            try users.persist(LooseUserRecord(id: "u", name: "kept"))
            // 'users#id' is the name of the users' #id database.
            let error = storageError { _ = try env.storage(for: HashNamedRecord.self) }
            #expect(error?.kind == .schemaMismatch)
            #expect(error?.entity == "users#id")
            let index = storageError { _ = try env.storage(for: IndexNamedIdRecord.self) }
            #expect(index?.kind == .schemaMismatch)
            #expect(try users.readAll().map(\.name) == ["kept"])
            env.close()
        }
    }

    @Test("a changed byte in a stored value is corrupt, not a wrong value")
    func flippedValueByte() throws {
        try withStoreDirectory { directory in
            let store = try StoredDialogs(in: directory, dialogs: 2)
            let (env, dialogs, messages, messageKey) = (store.env, store.dialogs, store.messages, store.messageKey)
            let stored = try store.messageValue()
            // Every byte of the fields, changed in turn: each is caught.
            for index in 1..<(stored.count - ValueSchema.checksumSize) {
                var damaged = stored
                damaged[index] ^= 0x01
                try env.write(.persist) { txn in try txn.put(messages.table.main, messageKey, damaged) }
                let error = storageError { _ = try messages.read(primaryKey: 1) }
                #expect(error?.kind == .corrupt, "byte \(index)")
                #expect(error?.message.contains("CRC-32C") == true, "byte \(index)")
            }
            try env.write(.persist) { txn in try txn.put(messages.table.main, messageKey, stored) }
            #expect(try dialogs.readAll() == store.records)
        }
    }

    @Test("a read handing out records: a damaged later record's error comes before the caller's, and ends the read")
    func handOutDamagedLaterRecord() throws {
        try withStoreDirectory { directory in
            let store = try StoredDialogs(in: directory, dialogs: 3)
            let (records, env, dialogs, messages) = (store.records, store.env, store.dialogs, store.messages)
            #expect(dialogs.handsOutWhileReading)
            // A message of the last dialog, which is decoded last.
            let last = try #require(records.last)
            let message = try #require(last.messages.last)
            let key = KeyCodec.encode(primaryKey: last.id) + KeyCodec.encode(primaryKey: message.id)
            let stored = try env.read(.read) { txn in try storedValue(txn, messages.table.main, key) }
            try #require(stored.count > ValueSchema.checksumSize + 1)
            var damaged = stored
            damaged[1] ^= 0x01
            try env.write(.persist) { txn in try txn.put(messages.table.main, key, damaged) }

            // The caller throws at the first record: the store's error wins.
            struct Refused: Error {}
            var handed: [Int64] = []
            let error = storageError {
                try dialogs.read(Query(), handingOut: { dialog in
                    handed.append(dialog.id)
                    throw Refused()
                })
            }
            #expect(error?.kind == .corrupt)
            #expect(error?.entity == "messages")
            #expect(error?.operation == .read)
            #expect(handed == [records[0].id])

            // The caller takes every record: those before the damaged one
            // were handed out, then the read ends with its error.
            handed = []
            let second = storageError { try dialogs.read(Query(), handingOut: { handed.append($0.id) }) }
            #expect(second?.kind == .corrupt)
            #expect(handed == records.dropLast().map(\.id))

            // Put back, the same read hands out every record.
            try env.write(.persist) { txn in try txn.put(messages.table.main, key, stored) }
            var all: [DialogRecord] = []
            try dialogs.read(Query(), handingOut: { all.append($0) })
            #expect(all == records)
        }
    }

    @Test("verify() finds a record under the wrong parent, a lost index entry and a stray lookup; reads do not")
    func verifyFindsInconsistencies() throws {
        try withStoreDirectory { directory in
            let store = try StoredDialogs(in: directory, dialogs: 3)
            let (records, env, dialogs, messages) = (store.records, store.env, store.dialogs, store.messages)
            #expect(try dialogs.verify() == 3)
            #expect(try messages.verify() == 6)
            let first = records[0].messages[0]
            let key = KeyCodec.encode(primaryKey: records[0].id) + KeyCodec.encode(primaryKey: first.id)
            let movedKey = KeyCodec.encode(primaryKey: records[1].id) + KeyCodec.encode(primaryKey: first.id)
            let value: [UInt8] = try env.read(.read) { txn in try storedValue(txn, messages.table.main, key) }
            #expect(!value.isEmpty)

            // The message's key now names another dialog (as a damaged key byte
            // would): a read shows it under the wrong dialog, without an error.
            try env.write(.persist) { txn in
                try txn.delete(messages.table.main, key)
                try txn.put(messages.table.main, movedKey, value)
            }
            #expect(try dialogs.read(primaryKey: records[1].id)?.messages.contains { $0.id == first.id } == true)
            var error = storageError { _ = try messages.verify() }
            #expect(error?.kind == .corrupt)
            #expect(error?.entity == "messages")
            try env.write(.persist) { txn in
                try txn.delete(messages.table.main, movedKey)
                try txn.put(messages.table.main, key, value)
            }
            #expect(try messages.verify() == 6)

            // The messages' index leads with their foreign key: the dialog's
            // range serves it, and it has no database to damage.
            #expect(messages.table.indexes.allSatisfy { $0.dbi == nil })
            // An index entry lost, in an index with a database of its own.
            let users = try env.storage(for: UserRecord.self)
            try users.persist(sampleUsers)
            #expect(try users.verify() == sampleUsers.count)
            let index = try #require(users.table.indexes.first)
            let indexDatabase = try #require(index.dbi)
            let indexEntry: ([UInt8], [UInt8])? = try env.read(.read) { txn in
                var entry: ([UInt8], [UInt8])?
                try txn.scan(indexDatabase, prefix: []) { k, v in
                    entry = ([UInt8](k), [UInt8](v))
                    return false
                }
                return entry
            }
            let (indexKey, indexValue) = try #require(indexEntry)
            #expect(try env.write(.persist) { txn in try txn.delete(indexDatabase, indexKey, value: indexValue) })
            error = storageError { _ = try users.verify() }
            #expect(error?.kind == .corrupt)
            #expect(error?.message.contains(index.index.name) == true)
            try env.write(.persist) { txn in try txn.put(indexDatabase, indexKey, indexValue) }
            #expect(try users.verify() == sampleUsers.count)

            // A '#id' run that names no record.
            try env.write(.persist) { txn in
                let missing = KeyCodec.encode(primaryKey: Int64(999))
                try txn.put(
                    messages.table.byId, missing,
                    IdRun.value(last: missing, parent: KeyCodec.encode(primaryKey: records[1].id)))
            }
            #expect(storageError { _ = try messages.verify() }?.kind == .corrupt)
        }
    }

    @Test("a value of format version 1 (no checksum) is still read")
    func version1Value() throws {
        try withStoreDirectory { directory in
            let store = try StoredDialogs(in: directory, dialogs: 2)
            let stored = try store.messageValue()
            let version1 = [ValueSchema.uncheckedFormatVersion] + stored.dropFirst().dropLast(ValueSchema.checksumSize)
            try store.env.write(.persist) { txn in try txn.put(store.messages.table.main, store.messageKey, Array(version1)) }
            #expect(try store.dialogs.readAll() == store.records)
        }
    }

    @Test("a non-LMDB file at the path is corrupt")
    func garbageFileAtPath() throws {
        try withStoreDirectory { directory in
            let file = directory.url.appendingPathComponent("store.mdb")
            try Data(repeating: 0x41, count: 20000).write(to: file)
            let error = storageError { _ = try LMDBEnvironment(directory: file) }
            #expect(error?.kind == .corrupt)
            #expect(error?.path == file.standardizedFileURL.path)
        }
    }

    @Test("values with a wrong format version or cut short are corrupt, not crashes")
    func damagedValues() throws {
        try withStoreDirectory { directory in
            let store = try StoredDialogs(in: directory, dialogs: 3)
            let (records, env, dialogs, messages, messageKey) =
                (store.records, store.env, store.dialogs, store.messages, store.messageKey)
            let stored: [UInt8] = try env.read(.read) { txn in
                try txn.copy(messages.table.main, messageKey) ?? []
            }
            #expect(stored.first == ValueSchema.formatVersion)

            try env.write(.persist) { txn in try txn.put(messages.table.main, messageKey, [9] + stored.dropFirst()) }
            var error = storageError { _ = try messages.read(primaryKey: 1) }
            #expect(error?.kind == .corrupt)
            #expect(error?.entity == "messages")
            #expect(error?.message.contains("version is 9") == true)
            #expect(storageError { _ = try dialogs.readAll() }?.kind == .corrupt)

            try env.write(.persist) { txn in try txn.put(messages.table.main, messageKey, Array(stored.dropLast(3))) }
            error = storageError { _ = try messages.read(primaryKey: 1) }
            #expect(error?.kind == .corrupt)
            try env.write(.persist) { txn in try txn.put(messages.table.main, messageKey, stored + [0]) }
            #expect(storageError { _ = try messages.read(primaryKey: 1) }?.kind == .corrupt)
            try env.write(.persist) { txn in try txn.put(messages.table.main, messageKey, []) }
            #expect(storageError { _ = try messages.read(primaryKey: 1) }?.kind == .corrupt)

            try env.write(.persist) { txn in try txn.put(messages.table.main, messageKey, stored) }
            #expect(try dialogs.readAll() == records)
        }
    }

    @Test("a value the record type refuses is a decoding error")
    func undecodableValue() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store)
            let loose = try env.storage(for: LooseUserRecord.self)
            try loose.persist(LooseUserRecord(id: "x", name: "X", gender: "robot"))
            let users = try env.storage(for: UserRecord.self)
            let error = storageError { _ = try users.read(primaryKey: "x") }
            #expect(error?.kind == .decoding)
            #expect(error?.entity == "users")
            #expect(error?.underlying is DecodingError)
        }
    }

    @Test("a read-only environment reads, and refuses every write")
    func readOnly() throws {
        try withStoreDirectory { directory in
            let records = try dialogRecords(dialogs: 3, messages: 2)
            do {
                let env = try LMDBEnvironment(directory: directory.store)
                try env.storage(for: DialogRecord.self).persist(records)
            }
            let env = try LMDBEnvironment(directory: directory.store, readOnly: true)
            let dialogs = try env.storage(for: DialogRecord.self)
            #expect(try dialogs.readAll() == records)
            let messages = try env.storage(for: MessageRecord.self)
            #expect(try messages.count() == 6)
            let error = storageError { try dialogs.persist(records[0]) }
            #expect(error?.kind == .readOnly)
            #expect(error?.entity == "dialogs")
            #expect(error?.path == directory.store.standardizedFileURL.path)
            #expect(storageError { try dialogs.erase(primaryKeys: [1]) }?.kind == .readOnly)
            #expect(storageError { try messages.eraseAll() }?.kind == .readOnly)
            #expect(storageError { _ = try env.storage(for: UserRecord.self) }?.kind == .readOnly)
            #expect(try dialogs.readAll() == records)
        }
    }

    @Test("opening an environment twice in one process is refused until the first closes")
    func doubleOpen() throws {
        try withStoreDirectory { directory in
            do {
                let env = try LMDBEnvironment(directory: directory.store)
                #expect(storageError { _ = try LMDBEnvironment(directory: directory.store) }?.kind == .busy)
                _ = env
            }
            _ = try LMDBEnvironment(directory: directory.store)
        }
    }

    @Test("a child whose parent does not exist is refused, the whole batch with it")
    func orphanChild() throws {
        try withStoreDirectory { directory in
            let records = try dialogRecords(dialogs: 2, messages: 2)
            let env = try LMDBEnvironment(directory: directory.store)
            try env.storage(for: DialogRecord.self).persist(records)
            let messages = try env.storage(for: MessageRecord.self)
            var fine = records[0].messages[0]
            fine.text = "changed"
            var orphan = fine
            orphan.id = 99
            orphan.dialogId = 42
            let error = storageError { try messages.persist([fine, orphan]) }
            #expect(error?.kind == .constraint)
            #expect(error?.entity == "messages")
            #expect(try messages.read(primaryKey: fine.id) == records[0].messages[0])
            // A parent holding a child that names another parent is refused too.
            var foreign = records[1]
            foreign.messages[0].dialogId = 1
            let mismatch = storageError { try env.storage(for: DialogRecord.self).persist(foreign) }
            #expect(mismatch?.kind == .constraint)
            #expect(try env.storage(for: DialogRecord.self).readAll() == records)
        }
    }
}

@Suite("LMDB key codec")
struct KeyCodecTests {
    @Test("integer keys sort bytewise as the numbers do")
    func integers() {
        let values: [Int64] = [.min, -1_000_000, -2, -1, 0, 1, 2, 255, 256, 1 << 40, .max]
        let encoded = values.map { KeyCodec.encode(primaryKey: $0) }
        #expect(encoded == encoded.sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test("reals, texts and null-tagged index values sort as StoredValue does")
    func storedValues() {
        let reals: [StoredValue] = [-.infinity, -1e300, -2.5, -0.0, 0.0, 1e-300, 3, .infinity].map { .real($0) }
        let texts: [StoredValue] = ["", "\u{0}", "\u{0}a", "a", "a\u{0}", "ab", "b", "é", "🚀"].map { .text($0) }
        for group in [reals, texts] {
            let encoded = ([StoredValue.null] + group).map { value -> [UInt8] in
                var bytes: [UInt8] = []
                KeyCodec.append(indexed: value, to: &bytes)
                return bytes
            }
            for (a, b) in zip(encoded, encoded.dropFirst()) {
                #expect(!b.lexicographicallyPrecedes(a))
            }
        }
        // Prefix-free: no text's encoding is a prefix of another's.
        let encodedTexts = texts.map { value -> [UInt8] in
            var bytes: [UInt8] = []
            KeyCodec.append(untagged: value, to: &bytes)
            return bytes
        }
        for a in encodedTexts {
            for b in encodedTexts where a != b {
                #expect(!b.starts(with: a))
            }
        }
    }
}

/// A fresh environment holding `count` dialogs of two messages each, and the
/// key under which message 1 (of dialog 1) is stored, for tests that damage it.
struct StoredDialogs {
    let records: [DialogRecord]
    let env: LMDBEnvironment
    let dialogs: LMDBRecordStorage<DialogRecord>
    let messages: LMDBRecordStorage<MessageRecord>
    /// Message 1's key in `messages.table.main`: its dialog's key, then its own.
    let messageKey = KeyCodec.encode(primaryKey: Int64(1)) + KeyCodec.encode(primaryKey: Int64(1))

    init(in directory: TemporaryDirectory, dialogs count: Int) throws {
        let records = try dialogRecords(dialogs: count, messages: 2)
        let env = try LMDBEnvironment(directory: directory.store)
        let dialogs = try env.storage(for: DialogRecord.self)
        let messages = try env.storage(for: MessageRecord.self)
        try dialogs.persist(records)
        (self.records, self.env, self.dialogs, self.messages) = (records, env, dialogs, messages)
    }

    /// A copy of message 1's stored value, read through a cursor.
    func messageValue() throws -> [UInt8] {
        try env.read(.read) { txn in try storedValue(txn, messages.table.main, messageKey) }
    }
}

/// A copy of the value stored under exactly `key`, or no bytes, read through a
/// cursor.
func storedValue(_ txn: borrowing Transaction, _ dbi: MDB_dbi, _ key: [UInt8]) throws -> [UInt8] {
    var found: [UInt8] = []
    try txn.scan(dbi, prefix: key) { stored, value in
        if stored.count == key.count { found = [UInt8](value) }
        return false
    }
    return found
}
