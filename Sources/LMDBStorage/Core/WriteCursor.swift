import CLMDB
import DAOCore
import Foundation

/// A cursor on one database kept for the writes of one storage call, so
/// that a write next to the previous one is not a search from the root:
///
/// - a key greater than every stored key is appended (`MDB_APPEND`: the
///   cursor already sits on the last entry after the previous append, so
///   LMDB need not search for it and compares once), and a key that is
///   not greater is refused by LMDB before anything is written and put the
///   ordinary way;
/// - a key known to be stored, which follows the one the previous write
///   replaced, is reached with `MDB_NEXT` and replaced in place
///   (`MDB_CURRENT`), after comparing the key the cursor reached with it.
///
/// The cursor is opened on first use and must be closed with ``close()``
/// before its write transaction ends: LMDB frees the cursors of a write
/// transaction when it ends, so a cursor closed afterwards would be freed
/// twice, and one never closed is freed by LMDB (no leak). It is therefore
/// not closed in `deinit`. Used by one call on one thread.
final class WriteCursor {
    let dbi: MDB_dbi
    private var handle: OpaquePointer?
    /// Whether the cursor sits on the entry the last ``replace(_:_:in:)`` or
    /// ``put(_:_:in:)`` wrote.
    private var onLastWrite = false
    /// Whether appending is tried for the next new key: set again by
    /// ``expectAppends()``, cleared when LMDB refuses an append, so keys
    /// that do not arrive in order pay for one refused append at most per
    /// ``expectAppends()``.
    private var tryAppend = true
    /// The value of the entry the last ``step(to:prefix:first:in:)`` found
    /// to be the key asked for, where the cursor stands; `nil` otherwise.
    /// It points into the map and is valid until the transaction's next
    /// write: only ``replaceMatched(_:_:in:)`` reads it, and the caller
    /// writes nothing between the step and that replace.
    private var matchedValue: MDB_val?

    init(_ dbi: MDB_dbi) {
        self.dbi = dbi
    }

    /// Closes the cursor; call it before the transaction ends. The cursor
    /// is then as a new one: codecs kept for the next write call
    /// (``EntityTable/withWriteCodecs(_:)``) start as new codecs do.
    func close() {
        if let handle { mdb_cursor_close(handle) }
        handle = nil
        onLastWrite = false
        tryAppend = true
        matchedValue = nil
    }

    /// Tries appending again for the keys that follow (a new parent's children).
    func expectAppends() {
        tryAppend = true
    }

    private func cursor(_ txn: borrowing Transaction) throws -> OpaquePointer {
        if let handle { return handle }
        let cursor = try txn.openCursor(dbi)
        handle = cursor
        return cursor
    }

    /// Stores `value` under `key`, replacing what the key held (an append
    /// when the key is greater than every stored key).
    func put(_ key: [UInt8], _ value: UnsafeRawBufferPointer, in txn: borrowing Transaction) throws {
        let cursor = try cursor(txn)
        let code = key.withUnsafeBytes { key in
            var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
            return put(cursor, &k, &v)
        }
        onLastWrite = code == MDB_SUCCESS
        matchedValue = nil
        try txn.check(code, "mdb_cursor_put")
    }

    /// Where one step of the cursor through a prefix range led
    /// (``step(to:prefix:first:in:)``).
    enum RangeStep {
        /// To the key asked for; the cursor stands on it.
        case match
        /// To another key of the range: stored keys are left there.
        case otherInRange
        /// Past the range (or past the last entry): no stored key is left there.
        case pastRange
    }

    /// Moves the cursor to the first entry of the range of `prefix`
    /// (`MDB_SET_RANGE`) when `first`, else to the entry after the one it
    /// stands on (`MDB_NEXT`), and tells whether that entry's key is `key`,
    /// another key of the range, or none (`key` empty: only the latter
    /// two). The caller that walks a parent's range this way knows, at a
    /// match, that every stored key of the range before `key` was matched
    /// before it (docs/LMDB.md, "the fused walk"). After any step the
    /// cursor is no longer taken to stand on the last write.
    func step(to key: [UInt8], prefix: [UInt8], first: Bool, in txn: borrowing Transaction) throws -> RangeStep {
        let cursor = try cursor(txn)
        onLastWrite = false
        matchedValue = nil
        var found = MDB_val()
        var value = MDB_val()
        let code: Int32
        if first {
            code = Cursor.moveToFirst(cursor, withPrefix: prefix, &found, &value)
        } else {
            code = mdb_cursor_get(cursor, &found, &value, MDB_NEXT)
        }
        if code == MDB_NOTFOUND { return .pastRange }
        try txn.check(code, "mdb_cursor_get")
        let isKey = key.withUnsafeBytes { key in
            guard found.mv_size == key.count, !key.isEmpty, let data = found.mv_data, let start = key.baseAddress
            else { return false }
            return memcmp(data, start, key.count) == 0
        }
        if isKey {
            matchedValue = value
            return .match
        }
        return found.hasPrefix(prefix) ? .otherInRange : .pastRange
    }

    /// Replaces the value of the entry the last ``step(to:prefix:first:in:)``
    /// matched, where the cursor stands (`MDB_CURRENT`), or leaves it when
    /// it holds the same bytes already (nothing is written, the page is not
    /// copied). Without such a match (which the caller does not ask for),
    /// ``replace(_:_:in:)``.
    func replaceMatched(_ key: [UInt8], _ value: UnsafeRawBufferPointer, in txn: borrowing Transaction) throws {
        guard let old = matchedValue, let cursor = handle else {
            try replace(key, value, in: txn)
            return
        }
        matchedValue = nil
        if old.mv_size == value.count, let stored = try txn.bounds.lent(old, txn.operation).baseAddress,
            let new = value.baseAddress,
            memcmp(stored, new, value.count) == 0
        {
            onLastWrite = true
            return
        }
        let code = key.withUnsafeBytes { key in
            var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
            return mdb_cursor_put(cursor, &k, &v, UInt32(MDB_CURRENT))
        }
        onLastWrite = code == MDB_SUCCESS
        try txn.check(code, "mdb_cursor_put")
    }

    /// Puts `k` and `v` through `cursor`, as an append first while appends
    /// are expected. LMDB refuses an append whose key is not
    /// greater than the last one with `MDB_KEYEXIST` before writing
    /// anything; appends are then no longer tried until ``expectAppends()``.
    private func put(_ cursor: OpaquePointer, _ k: inout MDB_val, _ v: inout MDB_val) -> Int32 {
        if tryAppend {
            let code = mdb_cursor_put(cursor, &k, &v, UInt32(MDB_APPEND))
            guard code == MDB_KEYEXIST else { return code }
            tryAppend = false
        }
        return mdb_cursor_put(cursor, &k, &v, 0)
    }

    /// Replaces the value of `key`, which the caller knows to be stored:
    /// when it is the entry after the one the previous write wrote, reached
    /// with `MDB_NEXT` and overwritten where it is, or left as it is when it
    /// holds the same bytes; otherwise an ordinary put, which searches for it.
    func replace(_ key: [UInt8], _ value: UnsafeRawBufferPointer, in txn: borrowing Transaction) throws {
        let cursor = try cursor(txn)
        let code = try key.withUnsafeBytes { key in
            var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
            if onLastWrite {
                var found = MDB_val()
                var old = MDB_val()
                let next = mdb_cursor_get(cursor, &found, &old, MDB_NEXT)
                // No next entry is an ordinary put below; any other failure
                // is the engine's and is reported.
                guard next == MDB_SUCCESS || next == MDB_NOTFOUND else { return next }
                if next == MDB_SUCCESS, found.mv_size == key.count,
                    let data = found.mv_data, let start = key.baseAddress, memcmp(data, start, key.count) == 0
                {
                    // The same bytes stored already: nothing to write (the
                    // page is not copied for a write that changes nothing).
                    if old.mv_size == value.count, let stored = try txn.bounds.lent(old, txn.operation).baseAddress,
                        let new = value.baseAddress,
                        memcmp(stored, new, value.count) == 0
                    {
                        return MDB_SUCCESS
                    }
                    return mdb_cursor_put(cursor, &k, &v, UInt32(MDB_CURRENT))
                }
            }
            return mdb_cursor_put(cursor, &k, &v, 0)
        }
        onLastWrite = code == MDB_SUCCESS
        matchedValue = nil
        try txn.check(code, "mdb_cursor_put")
    }
}
