import CLMDB
import DAOCore
import Foundation

/// A read cursor on one database kept for the writes of one storage call,
/// which lists the keys of one prefix range at a time (the children
/// stored under a parent a call replaces the children of, when the fused
/// walk of ``StoredChildren`` needs the list): one cursor for every parent
/// of the call, where a cursor opened per parent cost an allocation each
/// in a write transaction (`mdb_cursor_open`).
///
/// Each listing starts with `MDB_SET_RANGE` on the prefix, so what the
/// call wrote through its other cursors since the previous listing is
/// seen (LMDB keeps every cursor of a write transaction on its pages as
/// they change). Like ``WriteCursor``, the cursor is opened on first use
/// and must be closed with ``close()`` before its write transaction ends,
/// and is not closed in `deinit`. Used by one call on one thread.
final class RangeKeyReader {
    let dbi: MDB_dbi
    private var handle: OpaquePointer?

    init(_ dbi: MDB_dbi) {
        self.dbi = dbi
    }

    /// Closes the cursor; call it before the transaction ends.
    func close() {
        if let handle { mdb_cursor_close(handle) }
        handle = nil
    }

    /// The cursor, opened on first use, lent to a walk of the call that
    /// moves it and deletes through it (erasing a parent's children,
    /// ``EntityTable/eraseRange(parentKey:in:codecs:)``): every listing
    /// starts with its own search, so where such a walk leaves the cursor
    /// does not matter. Valid until ``close()``.
    func cursor(in txn: borrowing Transaction) throws -> OpaquePointer {
        if let handle { return handle }
        let cursor = try txn.openCursor(dbi)
        handle = cursor
        return cursor
    }

    /// Calls `body` with every key that starts with `prefix`, in key order
    /// (every key for an empty prefix). The buffer points into the map and
    /// is valid only during the call.
    func forEachKey(
        withPrefix prefix: [UInt8], in txn: borrowing Transaction, _ body: (_ key: UnsafeRawBufferPointer) -> Void
    ) throws {
        let cursor = try cursor(in: txn)
        var k = MDB_val()
        var v = MDB_val()
        var code = Cursor.moveToFirst(cursor, withPrefix: prefix, &k, &v)
        while code == MDB_SUCCESS {
            guard k.hasPrefix(prefix) else { return }
            body(UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size))
            code = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
        }
        if code != MDB_NOTFOUND { try txn.check(code, "mdb_cursor_get") }
    }
}
