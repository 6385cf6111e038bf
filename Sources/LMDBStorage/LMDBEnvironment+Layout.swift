import CLMDB
import DAOCore
import Foundation

/// The version of the store's layout (which databases it keeps and what
/// their keys and values hold), stamped into every environment the store
/// writes, so that a build whose layout differs does not misread it.
///
/// The stamp is the value of ``key`` in the `__metadata` database, 16 bytes:
/// the magic `DAOLMDB` and a zero byte, the version (UInt32, little-endian),
/// and the CRC-32C of those 12 bytes (little-endian). A stamp that is not
/// 16 bytes long, has another magic, a checksum that does not match or
/// version 0 is damaged (`corrupt`); a sound stamp of a version greater than
/// ``current`` was written by a newer build (`schemaMismatch`).
enum LayoutStamp {
    /// The layout this build reads and writes. Version 1: per entity its own
    /// database, an `#id` database with one entry per child (its key → its
    /// storage key), an index database per index that does not lead with a
    /// foreign key; values of format 2, format 1 still read. Version 2: the
    /// same, but `#id` holds one entry per run of a parent's consecutive
    /// child keys (``IdRun``; docs/LMDB.md). A writable open upgrades a
    /// store of version 1 in one write transaction (``upgradeFromVersion1(in:)``).
    static let current: UInt32 = 2
    /// The stamp's key in the `__metadata` database. The other keys there
    /// (`schema/<entity>`, `migrations`) never take this form.
    static let key = Array("lmdb/layout".utf8)
    /// The first 8 bytes of every stamp.
    static let magic = Array("DAOLMDB\0".utf8)
    /// The stamp's length in bytes.
    static let size = 16

    /// The stamp of layout `version`.
    static func encoded(version: UInt32 = current) -> [UInt8] {
        var bytes = magic
        withUnsafeBytes(of: version.littleEndian) { bytes.append(contentsOf: $0) }
        let checksum = bytes.withUnsafeBytes { CRC32C.checksum($0) }
        withUnsafeBytes(of: checksum.littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// The version a stored stamp names, or `nil` when it is damaged.
    static func version(of bytes: UnsafeRawBufferPointer) -> UInt32? {
        guard bytes.count == size, bytes.prefix(magic.count).elementsEqual(magic) else { return nil }
        let body = UnsafeRawBufferPointer(rebasing: bytes.prefix(12))
        let stored = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
        guard CRC32C.checksum(body) == stored else { return nil }
        let version = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        return version == 0 ? nil : version
    }
}

extension LMDBEnvironment {
    /// What an open finds in the environment before it reads any record.
    enum LayoutState {
        /// A stamp of this build's layout.
        case stamped
        /// A stamp of layout version 1, or no stamp but the `__metadata`
        /// database every store has kept since it recorded schemas (a store
        /// written before the stamp existed, in layout version 1): upgraded
        /// now, when writable, and refused read-only.
        case version1
        /// No stamp, and nothing in the environment (a new one): stamped
        /// now, when writable.
        case empty
    }

    /// Checks the layout stamp at open, before any database of an entity is
    /// opened or created, and stamps an environment that has none: a new
    /// (empty) one, or one that holds the `__metadata` database, which every
    /// store of this layout has kept since it recorded schemas. The stamp is
    /// written in a write transaction that looks again first (another process
    /// may have stamped it meanwhile). A read-only environment is checked and
    /// never written: one without a stamp is read as this layout.
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` for a stamp of a newer
    ///   layout (naming both versions); ``StorageError/Kind/corrupt`` for a
    ///   damaged stamp, for a `__metadata` entry that is not a database, and for
    ///   an environment that holds entries but no `__metadata` database (not
    ///   one this store wrote: it is left as it is).
    func checkLayout() throws {
        let state = try read(.open) { txn in try layoutState(in: txn) }
        if state == .stamped { return }
        if isReadOnly {
            guard state == .version1 else { return }
            throw StorageError(
                .schemaMismatch, .open, path: path,
                message: "the environment has layout version 1, which this version of the library reads only after upgrading it to layout version \(LayoutStamp.current); open it once without readOnly to upgrade it")
        }
        var opened: [DatabaseName: MDB_dbi] = [:]
        try write(.open) { txn in
            let state = try layoutState(in: txn)
            guard state != .stamped else { return }
            var dbi = MDB_dbi()
            try txn.check(
                mdb_dbi_open(txn.handle, LMDBEnvironment.metadataDatabase, UInt32(MDB_CREATE), &dbi), "mdb_dbi_open")
            if state == .version1 { opened = try upgradeFromVersion1(in: txn) }
            try txn.put(dbi, LayoutStamp.key, LayoutStamp.encoded())
            opened[DatabaseName(LMDBEnvironment.metadataDatabase)] = dbi
        }
        if !opened.isEmpty { adopt(handles: opened) }
    }

    /// Rewrites every `#id` database of a store of layout version 1 (an
    /// entry per child: its key → its storage key, the parent's key then
    /// its own) as runs (``IdRun``), inside the write transaction that
    /// stamps the new version: a store is either upgraded whole or, should
    /// the process die or any step fail, left as it was. Returns the
    /// databases it opened.
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` for an entry whose storage
    ///   key does not end with its key (nothing is written then).
    private func upgradeFromVersion1(in txn: borrowing Transaction) throws -> [DatabaseName: MDB_dbi] {
        // The named databases are the keys of the unnamed one.
        var unnamed = MDB_dbi()
        try txn.check(mdb_dbi_open(txn.handle, nil, 0, &unnamed), "mdb_dbi_open")
        var names: [String] = []
        try txn.scan(unnamed, prefix: []) { key, _ in
            let name = String(decoding: key, as: UTF8.self)
            if name.hasSuffix("#id") { names.append(name) }
            return true
        }
        var opened: [DatabaseName: MDB_dbi] = [:]
        for name in names {
            var dbi = MDB_dbi()
            let code = mdb_dbi_open(txn.handle, name, 0, &dbi)
            if code == MDB_INCOMPATIBLE { continue }  // a plain entry, not a database: not the store's
            try txn.check(code, "mdb_dbi_open")
            opened[DatabaseName(name)] = dbi
            var children: [(child: [UInt8], parent: [UInt8])] = []
            var damaged = false
            try txn.scan(dbi, prefix: []) { key, value in
                guard value.count > key.count, value.suffix(key.count).elementsEqual(key) else {
                    damaged = true
                    return false
                }
                children.append(([UInt8](key), [UInt8](value.prefix(value.count - key.count))))
                return true
            }
            if damaged {
                throw StorageError(
                    .corrupt, .open, path: path,
                    message: "an entry of '\(name)' does not name a storage key that ends with its key: the store cannot be upgraded to layout version \(LayoutStamp.current) and is left as it was")
            }
            try txn.empty(dbi)
            for run in IdRun.runs(of: children) { try txn.put(dbi, run.first, run.value) }
        }
        return opened
    }

    /// What `txn` sees of the layout (see ``checkLayout()``).
    private func layoutState(in txn: borrowing Transaction) throws -> LayoutState {
        var dbi = MDB_dbi()
        let code = mdb_dbi_open(txn.handle, LMDBEnvironment.metadataDatabase, 0, &dbi)
        if code == MDB_NOTFOUND {
            var main = MDB_dbi()
            try txn.check(mdb_dbi_open(txn.handle, nil, 0, &main), "mdb_dbi_open")
            guard try txn.entryCount(main) == 0 else {
                throw StorageError(
                    .corrupt, .open, path: path,
                    message: "the environment holds databases but no '\(LMDBEnvironment.metadataDatabase)' database: it was not written by this store, which leaves it as it is")
            }
            return .empty
        }
        if code == MDB_INCOMPATIBLE {
            throw StorageError(
                .corrupt, .open, path: path, engineCode: code,
                message: "the environment's '\(LMDBEnvironment.metadataDatabase)' entry is not a database: it was not written by this store, or is damaged")
        }
        try txn.check(code, "mdb_dbi_open")
        let version = try txn.withValue(dbi, LayoutStamp.key) { bytes in
            guard let version = LayoutStamp.version(of: bytes) else {
                throw StorageError(
                    .corrupt, .open, path: path,
                    message: "the environment's layout stamp is damaged (\(bytes.count) bytes that are not a stamp this store writes)",
                    context: "\(LMDBEnvironment.metadataDatabase)/\(String(decoding: LayoutStamp.key, as: UTF8.self))")
            }
            return version
        }
        guard let version else { return .version1 }
        if version == 1 { return .version1 }
        guard version <= LayoutStamp.current else {
            throw StorageError(
                .schemaMismatch, .open, path: path,
                message: "the environment has layout version \(version), written by a newer version of the library; this one reads layout version \(LayoutStamp.current)")
        }
        return .stamped
    }
}
