import CLMDB
import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

#if canImport(Glibc)
import Glibc
#endif

/// liblmdb does not write the pages a transaction allocated and freed again,
/// so a sound data file can end before the last page its meta page names: the
/// pages past the end are on the free list. The open check must take such a
/// file for what it is, and still refuse a file cut short of a page in use.
@Suite("LMDB open check: a data file that ends in free pages")
struct FreeTailTests {
    /// A raw environment written by seeded rounds of puts, erasures, large
    /// values and dropped databases until liblmdb leaves the file shorter
    /// than its last page; `nil` if no seed gets there.
    func environmentWithUnwrittenTail(in directory: URL) throws -> (entries: [UInt32: Int], size: Int, needed: Int)? {
        for seed in UInt64(1)...64 {
            try? FileManager.default.removeItem(at: directory)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var random = SplitMix64(seed: seed)
            var env: OpaquePointer?
            try #require(mdb_env_create(&env) == 0)
            defer { mdb_env_close(env) }
            mdb_env_set_mapsize(env, 1 << 28)
            mdb_env_set_maxdbs(env, 4)
            try #require(mdb_env_open(env, directory.path, UInt32(MDB_NOSYNC), 0o644) == 0)
            var entries: [UInt32: Int] = [:]
            let value = [UInt8](repeating: 0x5A, count: 6000)
            for _ in 0..<200 {
                var txn: OpaquePointer?
                try #require(mdb_txn_begin(env, nil, 0, &txn) == 0)
                var dbi: MDB_dbi = 0
                try #require(mdb_dbi_open(txn, "a", UInt32(MDB_CREATE), &dbi) == 0)
                func put(_ key: UInt32, _ size: Int) throws {
                    var bigEndian = key.bigEndian
                    try value.withUnsafeBytes { bytes in
                        try withUnsafeMutableBytes(of: &bigEndian) { keyBytes in
                            var k = MDB_val(mv_size: 4, mv_data: keyBytes.baseAddress)
                            var v = MDB_val(mv_size: size, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
                            try #require(mdb_put(txn, dbi, &k, &v, 0) == 0)
                        }
                    }
                    entries[key] = size
                }
                func erase(_ key: UInt32) {
                    var bigEndian = key.bigEndian
                    withUnsafeMutableBytes(of: &bigEndian) { keyBytes in
                        var k = MDB_val(mv_size: 4, mv_data: keyBytes.baseAddress)
                        _ = mdb_del(txn, dbi, &k, nil)
                    }
                    entries[key] = nil
                }
                for _ in 0..<Int(random.next() % 300) {
                    let key = UInt32(random.next() % 3000)
                    if random.next() % 3 == 0 {
                        erase(key)
                    } else {
                        try put(key, Int(random.next() % (random.next() % 2 == 0 ? 300 : 6000)) + 1)
                    }
                }
                if random.next() % 10 == 0 {
                    try #require(mdb_drop(txn, dbi, 0) == 0)
                    entries = [:]
                }
                if random.next() % 7 == 0 {
                    for key in UInt32(5000)..<7000 { try put(key, 400) }
                    for key in UInt32(5000)..<7000 { erase(key) }
                }
                try #require(mdb_txn_commit(txn) == 0)
                var info = MDB_envinfo()
                var stat = MDB_stat()
                mdb_env_info(env, &info)
                mdb_env_stat(env, &stat)
                let needed = (info.me_last_pgno + 1) * Int(stat.ms_psize)
                let size = try FileManager.default.attributesOfItem(
                    atPath: directory.appendingPathComponent("data.mdb").path)[.size] as? Int ?? 0
                if size < needed { return (entries, size, needed) }
            }
        }
        return nil
    }

    @Test("free pages past the end of the file: opens, every entry reads back; a page in use cut off: corrupt")
    func freeTail() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("lmdb-free-tail-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let found = try environmentWithUnwrittenTail(in: directory)
        let (entries, size, needed) = try #require(found, "liblmdb left no unwritten tail in 64 seeds of 200 rounds")
        #expect(size < needed)
        try DataFileCheck.check(path: directory.path, isFile: false)

        // liblmdb reads the same store: every entry, at its size.
        var env: OpaquePointer?
        try #require(mdb_env_create(&env) == 0)
        mdb_env_set_mapsize(env, 1 << 28)
        mdb_env_set_maxdbs(env, 4)
        try #require(mdb_env_open(env, directory.path, UInt32(MDB_RDONLY), 0o644) == 0)
        var txn: OpaquePointer?
        try #require(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn) == 0)
        var dbi: MDB_dbi = 0
        var found2: [UInt32: Int] = [:]
        if mdb_dbi_open(txn, "a", 0, &dbi) == 0 {
            var cursor: OpaquePointer?
            try #require(mdb_cursor_open(txn, dbi, &cursor) == 0)
            var key = MDB_val()
            var value = MDB_val()
            while mdb_cursor_get(cursor, &key, &value, MDB_NEXT) == 0 {
                let raw = UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size).loadUnaligned(as: UInt32.self)
                found2[UInt32(bigEndian: raw)] = value.mv_size
            }
            mdb_cursor_close(cursor)
        }
        mdb_txn_abort(txn)
        mdb_env_close(env)
        #expect(found2 == entries)

        // Cut the file at half its size: pages in use go, and the check says so.
        let data = directory.appendingPathComponent("data.mdb").path
        #expect(truncate(data, off_t(size / 2 / 4096 * 4096)) == 0)
        #expect {
            try DataFileCheck.check(path: directory.path, isFile: false)
        } throws: { error in
            (error as? StorageError)?.kind == .corrupt
        }
    }
}
