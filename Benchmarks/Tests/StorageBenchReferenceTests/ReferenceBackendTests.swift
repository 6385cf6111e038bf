import CLMDB
import DAOCore
import DialogGraph
import Foundation
import StorageBenchKit
import StorageBenchReference
import TestSupport
import Testing

@Suite("Reference backends: the same workload and checks as the DAO backends")
struct ReferenceBackendTests {
    /// Every reference backend runs the whole workload at a small size, passes
    /// the harness's checks and counts the units of WORKLOAD.md.
    @Test(arguments: BackendRegistry.reference.names, [Durability.none, .full])
    func aReferenceBackendRunsTheWorkload(_ name: String, _ durability: Durability) throws {
        let backend = try #require(BackendRegistry.reference.backend(named: name))
        let size = try BenchSize(dialogs: 30, messagesPerDialog: 7)
        let job = IterationJob(
            backend: name, size: size, seed: 42, durability: durability, operations: BenchOperation.allCases)
        let result = WorkloadRunner.run(job, backend: backend, data: WorkloadData(dialogs: 30, messagesPerDialog: 7))
        #expect(result.error == nil, "\(result.error ?? "")")
        #expect(result.measurements.map(\.operation) == BenchOperation.allCases)
        #expect((result.bytesOnDisk ?? 0) > 0)
        for measurement in result.measurements {
            var expected = measurement.operation.expectedUnits(for: size)
            if measurement.operation == .persistSingle, let limit = backend.singleCallLimit {
                expected = min(expected, limit)  // json-raw and plist-raw time 10 calls
            }
            #expect(measurement.units == expected, "\(measurement.operation)")
        }
        let settings = try #require(result.settings)
        let onLMDB = name.hasPrefix("lmdb")
        #expect(settings.contains("NOSYNC") == (durability == .none && onLMDB), "\(settings)")
        if name.hasSuffix("-raw") && name != "sqlite-raw" && name != "lmdb-raw" {
            #expect(settings.contains(durability == .full ? "sync=fsync+rename+dirsync" : "sync=none"), "\(settings)")
        } else if !onLMDB {
            #expect(settings.contains("journal_mode=wal"), "\(settings)")
            #expect(settings.contains(durability == .full ? "synchronous=FULL" : "synchronous=OFF"), "\(settings)")
        }
    }

    /// `dialogs` with every date rounded to the millisecond: the precision
    /// WORKLOAD.md asks for (GRDB stores dates as text with milliseconds).
    static func ms(_ dialogs: [Dialog?]) -> [Dialog?] {
        dialogs.map { dialog in
            dialog.map { Dialog(uniqueId: $0.uniqueId, isPinned: $0.isPinned, messages: ms($0.messages)) }
        }
    }

    static func ms(_ messages: [Message]) -> [Message] {
        messages.map {
            Message(
                uniqueId: $0.uniqueId, dialogId: $0.dialogId,
                date: Date(timeIntervalSince1970: ($0.date.timeIntervalSince1970 * 1000).rounded() / 1000),
                text: $0.text, senderId: $0.senderId, receiverId: $0.receiverId, type: $0.type,
                isIncoming: $0.isIncoming, isRead: $0.isRead)
        }
    }

    /// Each call gives back exactly the data written (dates to the
    /// millisecond): every dialog, every lookup and every query of the
    /// workload, field by field, and the counts the checks use.
    @Test(arguments: BackendRegistry.reference.names)
    func aReferenceBackendAnswersEveryCallLikeTheData(_ name: String) throws {
        let backend = try #require(BackendRegistry.reference.backend(named: name))
        let scratch = try TemporaryDirectory("reference")
        let directory = scratch.url
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = WorkloadData(dialogs: 25, messagesPerDialog: 9, seed: 7)
        let subject = try backend.open(directory, .none)
        try subject.persist(data.initial)
        #expect(Self.ms(try subject.readAll()) == Self.ms(data.initial))
        for id in data.readIds {
            #expect(Self.ms([try subject.read(dialogId: id)]) == Self.ms([data.initial[Int(id) - 1]]))
        }
        #expect(try subject.read(dialogId: 9999) == nil)
        for id in data.queryIds {
            let expected = data.initial[Int(id) - 1].messages.filter { !$0.isRead }.sorted { $0.date > $1.date }
            #expect(Self.ms(try subject.unreadMessages(dialogId: id)) == Self.ms(expected))
        }
        #expect(try subject.unreadMessageCount() == data.initial.flatMap(\.messages).filter { !$0.isRead }.count)
        try subject.update(data.updated)
        #expect(Self.ms(try subject.readAll()) == Self.ms(data.updated))
        #expect(try subject.unreadMessageCount() == 0)
        #expect(try subject.unreadMessages(dialogId: 1).isEmpty)
        for dialog in data.extra { try subject.persistSingle(dialog) }
        #expect(
            Self.ms(try subject.read(dialogIds: [26, 3, 9999, 50])) == Self.ms([data.extra[0], data.updated[2], data.extra[24]]))
        #expect(try subject.dialogCount() == 50)
        #expect(try subject.messageCount() == 450)
        #expect(try subject.erase(dialogIds: [2, 4, 4, 9999]) == 2)
        #expect(try subject.messageCount() == 48 * 9)
        #expect(try subject.read(dialogId: 2) == nil)
        #expect(Self.ms([try subject.read(dialogId: 3)]) == Self.ms([data.updated[2]]))
        #expect(try subject.eraseAll() == 48)
        #expect(try subject.dialogCount() == 0)
        #expect(try subject.messageCount() == 0)
        #expect(try subject.readAll().isEmpty)
    }

    /// Text of every kind, an empty text and a very long one round-trip byte for
    /// byte, with the other fields at their extremes.
    @Test(arguments: BackendRegistry.reference.names)
    func textRoundTrips(_ name: String) throws {
        let backend = try #require(BackendRegistry.reference.backend(named: name))
        let scratch = try TemporaryDirectory("reference")
        let directory = scratch.url
        defer { try? FileManager.default.removeItem(at: directory) }
        let texts = ["", "caf\u{E9}", "cafe\u{301}", "a\u{0}b", "🚀👩‍👩‍👧", String(repeating: "Zürich ", count: 5000)]
        let messages = texts.enumerated().map { index, text in
            Message(
                uniqueId: Int64(index + 1), dialogId: 1, date: Date(timeIntervalSince1970: 1_700_000_000.5 + Double(index)),
                text: text, senderId: -5, receiverId: Int64.max, type: 4, isIncoming: index % 2 == 0, isRead: false)
        }
        let dialog = Dialog(uniqueId: 1, isPinned: true, messages: messages)
        let subject = try backend.open(directory, .none)
        try subject.persist([dialog])
        let read = try #require(try subject.read(dialogId: 1))
        // GRDB reads SQLite text as a C string, so a text with NUL comes back
        // cut at the NUL (the workload's texts have none); the raw backends
        // keep every byte.
        let expected = name == "grdb" ? texts.map { $0 == "a\u{0}b" ? "a" : $0 } : texts
        #expect(read.messages.map { Array($0.text.utf8) } == expected.map { Array($0.utf8) })
        #expect(read.messages.map(\.uniqueId) == dialog.messages.map(\.uniqueId))
        #expect(Self.ms(read.messages).map(\.date) == Self.ms(dialog.messages).map(\.date))
        #expect(read.messages.map(\.receiverId) == dialog.messages.map(\.receiverId))
        #expect(read.messages.map(\.isIncoming) == dialog.messages.map(\.isIncoming))
        #expect(read.isPinned)
    }

    /// Erasing tens of thousands of ids in one call, most of them absent, erases
    /// and counts only the dialogs that were there.
    @Test(arguments: BackendRegistry.reference.names)
    func erasingManyIdsAtOnce(_ name: String) throws {
        let backend = try #require(BackendRegistry.reference.backend(named: name))
        let scratch = try TemporaryDirectory("reference")
        let directory = scratch.url
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = WorkloadData(dialogs: 3, messagesPerDialog: 2)
        let subject = try backend.open(directory, .none)
        try subject.persist(data.initial)
        #expect(try subject.erase(dialogIds: Array(2...40_000)) == 2)
        #expect(try subject.dialogCount() == 1)
        #expect(try subject.messageCount() == 2)
    }

    /// A second `persist` of an existing id is the engine's constraint error, typed and explained.
    @Test func sqliteRawReportsTheEnginesError() throws {
        let scratch = try TemporaryDirectory("reference")
        let directory = scratch.url
        defer { try? FileManager.default.removeItem(at: directory) }
        let subject = try SQLiteRawSubject(directory: directory, durability: .none)
        let data = WorkloadData(dialogs: 2, messagesPerDialog: 2)
        try subject.persist(data.initial)
        let error = try #require(throws: ReferenceError.self) { try subject.persist(data.initial) }
        #expect(error.engine == "sqlite")
        #expect(error.description.contains("UNIQUE constraint failed"))
        // The failed call was rolled back: the store holds what it held.
        #expect(try subject.messageCount() == 4)
        try subject.update(data.updated)
        #expect(try subject.unreadMessageCount() == 0)
    }

    /// A message entry too short for its fields is an error in every read,
    /// the unread-only scan of a query included, never skipped.
    @Test(arguments: ["lmdb-raw", "lmdb-c"])
    func anLMDBReferenceRefusesAMessageEntryTooShort(_ name: String) throws {
        let backend = try #require(BackendRegistry.reference.backend(named: name))
        let scratch = try TemporaryDirectory("reference")
        let directory = scratch.url
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let subject = try backend.open(directory, .none)
            try subject.persist(WorkloadData(dialogs: 1, messagesPerDialog: 2).initial)
        }
        // Write a 3-byte value under (dialog 1, message 99) with liblmdb itself.
        var env: OpaquePointer?
        #expect(mdb_env_create(&env) == MDB_SUCCESS)
        let handle = try #require(env)
        #expect(mdb_env_set_maxdbs(handle, 2) == MDB_SUCCESS)
        #expect(mdb_env_open(handle, directory.path, 0, 0o644) == MDB_SUCCESS)
        var txn: OpaquePointer?
        #expect(mdb_txn_begin(handle, nil, 0, &txn) == MDB_SUCCESS)
        let transaction = try #require(txn)
        var dbi = MDB_dbi()
        #expect(mdb_dbi_open(transaction, "messages", 0, &dbi) == MDB_SUCCESS)
        var keyBytes = (UInt64(1).bigEndian, UInt64(99).bigEndian)
        var valueBytes: (UInt8, UInt8, UInt8) = (0, 0, 0)
        let put = withUnsafeMutableBytes(of: &keyBytes) { k in
            withUnsafeMutableBytes(of: &valueBytes) { v in
                var key = MDB_val(mv_size: 16, mv_data: k.baseAddress)
                var value = MDB_val(mv_size: 3, mv_data: v.baseAddress)
                return mdb_put(transaction, dbi, &key, &value, 0)
            }
        }
        #expect(put == MDB_SUCCESS)
        #expect(mdb_txn_commit(transaction) == MDB_SUCCESS)
        mdb_env_close(handle)  // before the subject opens the same environment

        let subject = try backend.open(directory, .none)
        #expect(throws: ReferenceError.self) { try subject.unreadMessages(dialogId: 1) }
        #expect(throws: ReferenceError.self) { try subject.read(dialogId: 1) }
        #expect(throws: ReferenceError.self) { try subject.readAll() }
    }

    /// The registry of `storage-bench` places each reference beside what it measures.
    @Test func referencesStandBesideTheirAdapters() throws {
        let names = BackendRegistry.withReferences.names
        #expect(
            names == [
                "json", "json-raw", "plist", "plist-raw", "sqlite", "grdb", "sqlite-raw", "lmdb", "lmdb-raw", "sqlite-c",
                "lmdb-c",
            ])
        let sqlite = try #require(names.firstIndex(of: "sqlite"))
        let lmdb = try #require(names.firstIndex(of: "lmdb"))
        #expect(names[sqlite + 1 ..< lmdb].contains("sqlite-raw"))
        #expect(names[lmdb + 1] == "lmdb-raw")
        #expect(BackendRegistry.withReferences.backend(named: "sqlite")?.reference == "sqlite-raw")
        #expect(BackendRegistry.withReferences.backend(named: "lmdb")?.reference == "lmdb-raw")
        #expect(BackendRegistry.withReferences.backend(named: "grdb")?.reference == "sqlite-raw")
        #expect(BackendRegistry.withReferences.backend(named: "json")?.reference == "json-raw")
        #expect(BackendRegistry.withReferences.backend(named: "plist")?.reference == "plist-raw")
        #expect(BackendRegistry.withReferences.backend(named: "sqlite-raw")?.reference == nil)
        for name in BackendRegistry.standard.names {
            #expect(names.contains(name))
        }
    }
}
