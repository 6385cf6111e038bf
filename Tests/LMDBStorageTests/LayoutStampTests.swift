import CLMDB
import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

/// The layout stamp in `__metadata`: written when the store creates an
/// environment, checked on every open; a store written before it is read
/// and stamped, a newer or damaged stamp and an environment the store did
/// not write are refused without a byte of the file changing.
@Suite("LMDB layout stamp")
struct LayoutStampTests {
    /// Runs `body` in a write transaction of a raw liblmdb handle on the
    /// environment in `directory`, as another program (or a later version of
    /// the library) would write it.
    func rawWrite(_ directory: URL, _ body: (OpaquePointer, MDB_dbi) throws -> Void) throws {
        var env: OpaquePointer?
        try #require(mdb_env_create(&env) == MDB_SUCCESS)
        defer { mdb_env_close(env) }
        mdb_env_set_maxdbs(env, 8)
        try #require(mdb_env_open(env, directory.path, UInt32(MDB_NOSYNC), 0o644) == MDB_SUCCESS)
        var txn: OpaquePointer?
        try #require(mdb_txn_begin(env, nil, 0, &txn) == MDB_SUCCESS)
        var main = MDB_dbi()
        try #require(mdb_dbi_open(txn, nil, 0, &main) == MDB_SUCCESS)
        do {
            try body(try #require(txn), main)
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        try #require(mdb_txn_commit(txn) == MDB_SUCCESS)
        try #require(mdb_env_sync(env, 1) == MDB_SUCCESS)
    }

    func put(_ txn: OpaquePointer, _ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8]) throws {
        let code = key.withUnsafeBytes { key in
            value.withUnsafeBytes { value in
                var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
                var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
                return mdb_put(txn, dbi, &k, &v, 0)
            }
        }
        try #require(code == MDB_SUCCESS)
    }

    /// Replaces (or, for `nil`, removes) the stored stamp.
    func setStamp(_ directory: URL, _ stamp: [UInt8]?) throws {
        try rawWrite(directory) { txn, _ in
            var dbi = MDB_dbi()
            try #require(mdb_dbi_open(txn, LMDBEnvironment.metadataDatabase, 0, &dbi) == MDB_SUCCESS)
            if let stamp {
                try put(txn, dbi, LayoutStamp.key, stamp)
            } else {
                let code = LayoutStamp.key.withUnsafeBytes { key in
                    var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
                    return mdb_del(txn, dbi, &k, nil)
                }
                try #require(code == MDB_SUCCESS)
            }
        }
    }

    /// The stamp stored in the environment, read through the store.
    func storedStamp(_ env: LMDBEnvironment) throws -> [UInt8]? {
        let metadata = try #require(try env.database(LMDBEnvironment.metadataDatabase))
        return try env.read(.read) { txn in try txn.copy(metadata, LayoutStamp.key) }
    }

    func dataFile(_ directory: URL) throws -> Data {
        try Data(contentsOf: directory.appendingPathComponent("data.mdb"))
    }

    /// A store with dialogs (two levels, integer keys) and users (text keys,
    /// optionals, NUL and emoji), closed.
    func writeStore(_ directory: URL) throws -> [DialogRecord] {
        let records = try dialogRecords(dialogs: 8, messages: 6)
        let env = try LMDBEnvironment(directory: directory, durability: .none)
        try env.storage(for: DialogRecord.self).persist(records)
        try env.storage(for: UserRecord.self).persist(sampleUsers)
        env.close()
        return records
    }

    func expectReadsEverything(_ env: LMDBEnvironment, _ records: [DialogRecord]) throws {
        #expect(try env.storage(for: DialogRecord.self).readAll() == records)
        #expect(try env.storage(for: MessageRecord.self).verify() == records.map(\.messages.count).reduce(0, +))
        let users = try env.storage(for: UserRecord.self)
        #expect(try users.readAll().sorted { Array($0.id.utf8).lexicographicallyPrecedes($1.id.utf8) }
            == sampleUsers.sorted { Array($0.id.utf8).lexicographicallyPrecedes($1.id.utf8) })
        #expect(try users.verify() == sampleUsers.count)
    }

    @Test("the stamp: 16 bytes that name their version; damage of any byte is detected")
    func encoding() {
        let stamp = LayoutStamp.encoded()
        #expect(stamp.count == LayoutStamp.size)
        #expect(stamp.withUnsafeBytes { LayoutStamp.version(of: $0) } == LayoutStamp.current)
        #expect(LayoutStamp.encoded(version: 7).withUnsafeBytes { LayoutStamp.version(of: $0) } == 7)
        #expect(LayoutStamp.encoded(version: 0).withUnsafeBytes { LayoutStamp.version(of: $0) } == nil)
        for index in stamp.indices {
            var damaged = stamp
            damaged[index] ^= 0x10
            #expect(damaged.withUnsafeBytes { LayoutStamp.version(of: $0) } == nil, "byte \(index)")
        }
        #expect(Array(stamp.dropLast()).withUnsafeBytes { LayoutStamp.version(of: $0) } == nil)
        #expect((stamp + [0]).withUnsafeBytes { LayoutStamp.version(of: $0) } == nil)
    }

    @Test("a new environment is stamped when it is created, and opens again")
    func newEnvironment() throws {
        try withStoreDirectory { directory in
            let records = try writeStore(directory.store)
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            #expect(try storedStamp(env) == LayoutStamp.encoded())
            try expectReadsEverything(env, records)
            env.close()
            // An environment opened and closed before any storage was made.
            let empty = directory.url.appendingPathComponent("empty")
            try LMDBEnvironment(directory: empty).close()
            let reopened = try LMDBEnvironment(directory: empty, readOnly: true)
            #expect(try storedStamp(reopened) == LayoutStamp.encoded())
            reopened.close()
        }
    }

    @Test("a store written before the stamp (layout version 1): refused read-only and left byte-identical; writable it is upgraded and stamped")
    func storeWithoutStamp() throws {
        try withStoreDirectory { directory in
            let records = try writeStore(directory.store)
            // The store as the versions before the stamp left it: `__metadata`
            // with the schemas, an `#id` entry per child, no stamp.
            let written = try LMDBEnvironment(directory: directory.store, durability: .none)
            // Its storages opened, so that every database is known.
            _ = try written.storage(for: DialogRecord.self)
            _ = try written.storage(for: UserRecord.self)
            try writeLayoutVersion1(written)
            written.close()
            try setStamp(directory.store, nil)
            let before = try dataFile(directory.store)

            let error = storageError { _ = try LMDBEnvironment(directory: directory.store, readOnly: true) }
            #expect(error?.kind == .schemaMismatch)
            #expect(error?.message.contains("layout version 1") == true, "\(String(describing: error))")
            #expect(try dataFile(directory.store) == before)

            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            #expect(try storedStamp(env) == LayoutStamp.encoded())
            try expectReadsEverything(env, records)
            env.close()
        }
    }

    @Test("a stamp of a newer layout is refused (schemaMismatch naming both versions), read-only too; the file is unchanged")
    func newerStamp() throws {
        try withStoreDirectory { directory in
            let records = try writeStore(directory.store)
            try setStamp(directory.store, LayoutStamp.encoded(version: LayoutStamp.current + 1))
            let before = try dataFile(directory.store)
            for readOnly in [false, true] {
                let error = storageError {
                    _ = try LMDBEnvironment(directory: directory.store, durability: .none, readOnly: readOnly)
                }
                #expect(error?.kind == .schemaMismatch, "read-only: \(readOnly)")
                #expect(error?.operation == .open)
                #expect(error?.message.contains("layout version \(LayoutStamp.current + 1)") == true, "\(String(describing: error))")
                #expect(error?.message.contains("layout version \(LayoutStamp.current)") == true)
                #expect(error?.path != nil)
            }
            #expect(try dataFile(directory.store) == before)
            // Nothing was lost: with this build's stamp back, everything reads.
            try setStamp(directory.store, LayoutStamp.encoded())
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            try expectReadsEverything(env, records)
            env.close()
        }
    }

    @Test("a damaged stamp is corrupt, read-only too; the file is unchanged")
    func damagedStamp() throws {
        try withStoreDirectory { directory in
            _ = try writeStore(directory.store)
            var flipped = LayoutStamp.encoded()
            flipped[8] ^= 0x01  // the version, so its checksum no longer holds
            var magic = LayoutStamp.encoded()
            magic[0] = UInt8(ascii: "X")
            for damaged in [flipped, magic, Array(LayoutStamp.encoded().prefix(9)), [], LayoutStamp.encoded(version: 0)] {
                try setStamp(directory.store, damaged)
                let before = try dataFile(directory.store)
                for readOnly in [false, true] {
                    let error = storageError {
                        _ = try LMDBEnvironment(directory: directory.store, durability: .none, readOnly: readOnly)
                    }
                    #expect(error?.kind == .corrupt, "\(damaged), read-only: \(readOnly)")
                    #expect(error?.message.contains("layout stamp is damaged") == true, "\(String(describing: error))")
                }
                #expect(try dataFile(directory.store) == before)
            }
        }
    }

    @Test("an environment another program wrote is refused (corrupt) and left byte-identical")
    func foreignEnvironment() throws {
        try withStoreDirectory { directory in
            // Records in the unnamed database, in a named database, and a
            // plain entry named like the store's metadata database.
            let shapes: [(String, (OpaquePointer, MDB_dbi) throws -> Void)] = [
                ("unnamed", { txn, main in try put(txn, main, Array("key".utf8), Array("value".utf8)) }),
                ("named", { txn, _ in
                    var dbi = MDB_dbi()
                    try #require(mdb_dbi_open(txn, "dialogs", UInt32(MDB_CREATE), &dbi) == MDB_SUCCESS)
                    try put(txn, dbi, [0x80, 0, 0, 0, 0, 0, 0, 1], [2, 2])
                }),
                ("metadata entry", { txn, main in
                    try put(txn, main, Array(LMDBEnvironment.metadataDatabase.utf8), LayoutStamp.encoded())
                }),
            ]
            for (name, write) in shapes {
                let store = directory.url.appendingPathComponent(name.replacingOccurrences(of: " ", with: "-"))
                try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
                try rawWrite(store, write)
                let before = try dataFile(store)
                for readOnly in [false, true] {
                    let error = storageError {
                        _ = try LMDBEnvironment(directory: store, durability: .none, readOnly: readOnly)
                    }
                    #expect(error?.kind == .corrupt, "\(name), read-only: \(readOnly)")
                    #expect(error?.message.contains("not written by this store") == true, "\(String(describing: error))")
                }
                #expect(try dataFile(store) == before, "\(name)")
            }
        }
    }
}
