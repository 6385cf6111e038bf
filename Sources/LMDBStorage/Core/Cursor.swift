import CLMDB
import DAOCore
import Foundation

/// An open LMDB cursor on one database of a transaction. It cannot be copied
/// and closes in `deinit`; it is only made inside ``Transaction/scan(_:prefix:_:)``,
/// so it never outlives its transaction.
struct Cursor: ~Copyable {
    let handle: OpaquePointer

    init(_ transaction: borrowing Transaction, _ dbi: MDB_dbi) throws {
        handle = try transaction.openCursor(dbi)
    }

    deinit {
        mdb_cursor_close(handle)
    }

    /// Moves the cursor (`mdb_cursor_get`) and returns its result code.
    func move(_ key: inout MDB_val, _ value: inout MDB_val, _ operation: MDB_cursor_op) -> Int32 {
        mdb_cursor_get(handle, &key, &value, operation)
    }

    /// Moves the cursor to the first entry whose key is at or after `prefix`
    /// (the first entry of the database for an empty prefix) and returns the
    /// result code; the caller checks that the key found starts with `prefix`.
    func moveToFirst(withPrefix prefix: [UInt8], _ key: inout MDB_val, _ value: inout MDB_val) -> Int32 {
        Cursor.moveToFirst(handle, withPrefix: prefix, &key, &value)
    }

    /// ``moveToFirst(withPrefix:_:_:)`` for a cursor handle kept elsewhere
    /// (a cursor kept for a write call, ``WriteCursor``, ``RangeKeyReader``).
    @inline(__always)
    static func moveToFirst(
        _ cursor: OpaquePointer, withPrefix prefix: [UInt8], _ key: inout MDB_val, _ value: inout MDB_val
    ) -> Int32 {
        prefix.withUnsafeBytes { prefix in
            if prefix.isEmpty { return mdb_cursor_get(cursor, &key, &value, MDB_FIRST) }
            key.mv_size = prefix.count
            key.mv_data = UnsafeMutableRawPointer(mutating: prefix.baseAddress)
            return mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE)
        }
    }

    /// Moves the cursor to the last entry whose key is before every key
    /// that starts with `prefix` and comes after it, that is to the last key
    /// starting with `prefix` when there is one (the last entry of the
    /// database for an empty prefix), and returns the result code; the caller
    /// checks that the key found starts with `prefix`. Finds the first key
    /// after the prefix's range (`MDB_SET_RANGE` on the prefix's successor,
    /// the prefix with its last byte below 0xFF raised by one and the bytes
    /// after it dropped) and steps back (`MDB_PREV`), or goes to the last
    /// entry when no key follows the range.
    func moveToLast(withPrefix prefix: [UInt8], _ key: inout MDB_val, _ value: inout MDB_val) -> Int32 {
        Cursor.moveToLast(handle, withPrefix: prefix, &key, &value)
    }

    /// ``moveToLast(withPrefix:_:_:)`` for a cursor handle kept elsewhere
    /// (``RangeRows``).
    static func moveToLast(
        _ cursor: OpaquePointer, withPrefix prefix: [UInt8], _ key: inout MDB_val, _ value: inout MDB_val
    ) -> Int32 {
        guard let last = prefix.lastIndex(where: { $0 != 0xFF }) else {
            return mdb_cursor_get(cursor, &key, &value, MDB_LAST)
        }
        // The successor of the prefix in a buffer on the stack (for a short
        // prefix): an array made for it was an allocation a call.
        let length = last + 1
        let code = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { successor in
            prefix.withUnsafeBufferPointer { prefix in
                for position in 0..<length { successor.initializeElement(at: position, to: prefix[position]) }
            }
            successor[last] += 1
            key.mv_size = length
            key.mv_data = UnsafeMutableRawPointer(successor.baseAddress)
            return mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE)
        }
        if code == MDB_NOTFOUND { return mdb_cursor_get(cursor, &key, &value, MDB_LAST) }
        guard code == MDB_SUCCESS else { return code }
        return mdb_cursor_get(cursor, &key, &value, MDB_PREV)
    }

    /// ``moveToFirst(withPrefix:_:_:)`` or, when `backwards`,
    /// ``moveToLast(withPrefix:_:_:)``.
    @inline(__always)
    func moveToEnd(withPrefix prefix: [UInt8], backwards: Bool, _ key: inout MDB_val, _ value: inout MDB_val) -> Int32 {
        backwards ? moveToLast(withPrefix: prefix, &key, &value) : moveToFirst(withPrefix: prefix, &key, &value)
    }
}

/// A cursor on one database kept by a read call's codecs from one read-only
/// transaction to the next: opened in the first (`mdb_cursor_open`), renewed
/// in each after it (`mdb_cursor_renew`, which LMDB allows a read-only
/// transaction's cursor), so its memory is allocated once rather than at
/// each call; closed when the codecs let it go (a read-only transaction
/// does not free its cursors when it ends). Used by one call at a time.
final class KeptReadCursor {
    let dbi: MDB_dbi
    @exclusivity(unchecked) private var handle: OpaquePointer?

    init(_ dbi: MDB_dbi) {
        self.dbi = dbi
    }

    deinit {
        if let handle { mdb_cursor_close(handle) }
    }

    /// The cursor, renewed in `txn` (a read-only transaction, as
    /// ``LMDBEnvironment/read(_:_:)`` gives), or opened in it the first time.
    /// Valid until `txn` ends; the caller does not close it.
    func renewed(in txn: borrowing Transaction) throws -> OpaquePointer {
        if let handle {
            try txn.check(mdb_cursor_renew(txn.handle, handle), "mdb_cursor_renew")
            return handle
        }
        let opened = try txn.openCursor(dbi)
        handle = opened
        return opened
    }
}

extension Transaction {
    /// Calls `body` with every key and value whose key starts with `prefix`, in
    /// key order, or in descending key order when `backwards` (for an
    /// `MDB_DUPSORT` database every value of every key; for an empty prefix
    /// every entry); `body` returns `false` to stop. The buffers point into
    /// the map and are valid only during the call.
    func scan(
        _ dbi: MDB_dbi, prefix: [UInt8], backwards: Bool = false,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let cursor = try Cursor(self, dbi)
        var k = MDB_val()
        var v = MDB_val()
        let step = backwards ? MDB_PREV : MDB_NEXT
        var code = cursor.moveToEnd(withPrefix: prefix, backwards: backwards, &k, &v)
        while code == MDB_SUCCESS {
            guard k.hasPrefix(prefix) else { return }
            let key = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
            guard try body(key, bounds.lent(v, operation)) else { return }
            code = cursor.move(&k, &v, step)
        }
        if code != MDB_NOTFOUND { try check(code, "mdb_cursor_get") }
    }

    /// ``scan(_:prefix:_:)`` that calls `body` only for the values `filter`
    /// does not find failing on their bytes (``RangeFilter/verdict(_:)``),
    /// telling it whether they were found passing (`passed`): the check
    /// runs in the loop, so a child that fails costs no call of `body` (its
    /// prologue, the set-up of a generic caller's frame, about 45
    /// instructions a child).
    func scan(
        _ dbi: MDB_dbi, prefix: [UInt8], backwards: Bool = false, skipping filter: RangeFilter,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, _ passed: Bool) throws -> Bool
    ) throws {
        let cursor = try Cursor(self, dbi)
        var k = MDB_val()
        var v = MDB_val()
        let step = backwards ? MDB_PREV : MDB_NEXT
        var code = cursor.moveToEnd(withPrefix: prefix, backwards: backwards, &k, &v)
        while code == MDB_SUCCESS {
            guard k.hasPrefix(prefix) else { return }
            let value = try bounds.lent(v, operation)
            let verdict = filter.verdict(value)
            if verdict != .fails {
                let key = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
                guard try body(key, value, verdict == .passes) else { return }
            }
            code = cursor.move(&k, &v, step)
        }
        if code != MDB_NOTFOUND { try check(code, "mdb_cursor_get") }
    }
}

extension Transaction {
    /// Removes every entry whose key starts with `prefix` (not empty), in key
    /// order, with one cursor. `body` sees each key and value first (valid
    /// only during the call, before the entry is removed) and may write to
    /// other databases of the transaction. Returns how many were removed.
    @discardableResult
    func removeRange(
        _ dbi: MDB_dbi, prefix: [UInt8],
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int {
        let cursor = try Cursor(self, dbi)
        var k = MDB_val()
        var v = MDB_val()
        var removed = 0
        var code: Int32 = prefix.withUnsafeBytes { prefix in
            k.mv_size = prefix.count
            k.mv_data = UnsafeMutableRawPointer(mutating: prefix.baseAddress)
            return cursor.move(&k, &v, MDB_SET_RANGE)
        }
        while code == MDB_SUCCESS {
            guard k.hasPrefix(prefix) else { return removed }
            let key = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
            try body(key, bounds.lent(v, operation))
            try check(mdb_cursor_del(cursor.handle, 0), "mdb_cursor_del")
            removed += 1
            // After a delete, MDB_NEXT yields the entry that followed it.
            code = cursor.move(&k, &v, MDB_NEXT)
        }
        if code != MDB_NOTFOUND { try check(code, "mdb_cursor_get") }
        return removed
    }
}

extension MDB_val {
    /// Whether these bytes start with `prefix`: one `memcmp`, or, for a
    /// prefix of 8 bytes (an integer parent key), one comparison of two
    /// words, which a range's scan makes for every entry it reads (the call
    /// of `memcmp` cost about 25 instructions an entry).
    @inline(__always)
    func hasPrefix(_ prefix: [UInt8]) -> Bool {
        guard mv_size >= prefix.count else { return false }
        guard !prefix.isEmpty, let data = mv_data else { return true }
        return prefix.withUnsafeBytes { prefix in
            guard let start = prefix.baseAddress else { return true }
            if prefix.count == 8 {
                return UnsafeRawPointer(data).loadUnaligned(as: UInt64.self) == start.loadUnaligned(as: UInt64.self)
            }
            return memcmp(data, start, prefix.count) == 0
        }
    }
}
