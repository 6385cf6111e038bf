import CLMDB
import DAOCore

/// An open LMDB transaction. It cannot be copied, and it aborts in `deinit`
/// unless it was committed, so no path leaves one open. Obtain one only through
/// ``LMDBEnvironment/read(_:_:)`` or ``LMDBEnvironment/write(_:_:)``.
///
/// Values are lent to a closure (``withValue(_:_:_:)``, ``scan(_:prefix:_:)``)
/// and never returned: they point into the memory map and are valid only
/// until the transaction ends (or, in a write transaction, until the next
/// write), so they are decoded or copied inside the closure.
struct Transaction: ~Copyable {
    let handle: OpaquePointer
    let environment: LMDBEnvironment
    /// The environment's ``ValueBounds``: every value read is checked against them.
    let bounds: ValueBounds
    let operation: StorageError.Operation
    private var isFinished = false
    /// A read-only transaction that is reset and kept for reuse when it ends
    /// (``LMDBEnvironment/read(_:_:)``), rather than aborted.
    private let isReusable: Bool

    init(_ handle: OpaquePointer, environment: LMDBEnvironment, operation: StorageError.Operation, isReusable: Bool = false) {
        self.handle = handle
        self.environment = environment
        self.bounds = environment.valueBounds
        self.operation = operation
        self.isReusable = isReusable
    }

    deinit {
        guard !isFinished else { return }
        if isReusable {
            environment.keepReader(handle)
        } else {
            mdb_txn_abort(handle)
        }
    }

    /// Commits. The transaction is over whether or not this throws.
    mutating func commit() throws {
        isFinished = true
        try check(mdb_txn_commit(handle), "mdb_txn_commit")
    }

    func check(_ code: Int32, _ call: @autoclosure () -> String) throws {
        if code != MDB_SUCCESS {
            throw LMDBError.error(code, operation, path: environment.path, call: call())
        }
    }

    /// Opens a cursor on `dbi` (`mdb_cursor_open`); the caller closes it
    /// before this transaction ends, or lets LMDB free it then (a write
    /// transaction's cursors).
    func openCursor(_ dbi: MDB_dbi) throws -> OpaquePointer {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, dbi, &cursor), "mdb_cursor_open")
        guard let cursor else {
            throw StorageError(.engine, operation, path: environment.path, message: "mdb_cursor_open gave no cursor")
        }
        return cursor
    }

    /// Calls `body` with the value stored under `key` and returns what it
    /// returns, or `nil` when there is no such key.
    ///
    /// The buffer points into the memory map: it is valid only during the
    /// call (a write in the same transaction may move the page), so `body`
    /// decodes or copies what it needs and must not let the buffer escape.
    func withValue<T>(
        _ dbi: MDB_dbi, _ key: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> T
    ) throws -> T? {
        var v = MDB_val()
        let code = key.withUnsafeBytes { key in
            var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            return mdb_get(handle, dbi, &k, &v)
        }
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_get")
        return try body(bounds.lent(v, operation))
    }

    /// Whether `key` is stored.
    func contains(_ dbi: MDB_dbi, _ key: [UInt8]) throws -> Bool {
        try withValue(dbi, key) { _ in true } ?? false
    }

    /// A copy of the value stored under `key`, or `nil`.
    func copy(_ dbi: MDB_dbi, _ key: [UInt8]) throws -> [UInt8]? {
        try withValue(dbi, key) { [UInt8]($0) }
    }

    /// Stores `value` under `key` (for a `MDB_DUPSORT` database: adds it to the
    /// key's values).
    func put(_ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8]) throws {
        let code = key.withUnsafeBytes { key in
            value.withUnsafeBytes { value in
                var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
                var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
                return mdb_put(handle, dbi, &k, &v, 0)
            }
        }
        try check(code, "mdb_put")
    }

    /// Removes `key` (with `value`: only that value of a `MDB_DUPSORT` key).
    /// Returns whether there was something to remove.
    @discardableResult
    func delete(_ dbi: MDB_dbi, _ key: [UInt8], value: [UInt8]? = nil) throws -> Bool {
        let code = key.withUnsafeBytes { key in
            var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            guard let value else { return mdb_del(handle, dbi, &k, nil) }
            return value.withUnsafeBytes { value in
                var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
                return mdb_del(handle, dbi, &k, &v)
            }
        }
        if code == MDB_NOTFOUND { return false }
        try check(code, "mdb_del")
        return true
    }

    /// The number of entries (`mdb_stat`), duplicates counted one by one.
    func entryCount(_ dbi: MDB_dbi) throws -> Int {
        var stat = MDB_stat()
        try check(mdb_stat(handle, dbi, &stat), "mdb_stat")
        return stat.ms_entries
    }

    /// Empties the database (`mdb_drop` without deleting it).
    func empty(_ dbi: MDB_dbi) throws {
        try check(mdb_drop(handle, dbi, 0), "mdb_drop")
    }
}
