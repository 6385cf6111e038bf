import CLMDB
import DAOCore
import Foundation

/// Deletes the runs of the parents whose children are erased, walking their
/// children in key order (``EntityTable/eraseRange(parentKey:in:codecs:)``):
/// a child after the end of the current run starts the next run of its
/// parent, whose entry is deleted; the children inside a run cost nothing.
/// The entry under the cursor after a delete (LMDB leaves it on the entry
/// that followed) is read once and compared first; any other key is
/// searched for, so where the cursor stands decides only whether a search
/// is saved, never which entry goes.
///
/// One per entity of a write call (``Codecs/runEraser``), for every parent
/// whose children the call erases: its cursor is opened on first use and,
/// like ``RunWriter``'s, must be closed with ``close()`` before the write
/// transaction ends (an eraser and a cursor made per parent cost about
/// 1,000 instructions and two allocations a parent). Used by one call on
/// one thread.
final class RunEraser {
    let dbi: MDB_dbi
    private var handle: OpaquePointer?
    /// Read and written for every erased child, by one call on one thread:
    /// without the runtime's exclusivity checks (as ``RunWriter``'s).
    @exclusivity(unchecked) private var positioned = false
    /// The last key of the run being walked, and whether there is one. A
    /// last key of 8 bytes (an integer key) is kept as the big-endian word
    /// it spells (`lastWord`, `lastIsWord`), compared with an 8-byte child
    /// key as two words and with any other through its bytes; another is
    /// kept in `last`. Read for every erased child: through the array, the
    /// check cost about 39 instructions a child.
    @exclusivity(unchecked) private var inRun = false
    @exclusivity(unchecked) private var lastIsWord = false
    @exclusivity(unchecked) private var lastWord: UInt64 = 0
    @exclusivity(unchecked) private var last: [UInt8] = []

    init(_ dbi: MDB_dbi) {
        self.dbi = dbi
    }

    /// Closes the cursor; call it before the transaction ends. The eraser
    /// is then as a new one.
    func close() {
        if let handle { mdb_cursor_close(handle) }
        handle = nil
        positioned = false
        inRun = false
    }

    /// Starts the walk of another parent's children. Where the cursor
    /// stands is not trusted from one parent to the next: the call may have
    /// written the database through other cursors in between.
    func startParent() {
        positioned = false
        inRun = false
    }

    /// Notes the erased child `key` (bytes valid during the call): deletes
    /// the run it starts, unless it lies in the run already deleted.
    /// The check for a child inside the run is inlined into the caller's
    /// walk (a call per child cost about 25 instructions a child more).
    @inline(__always)
    func erase(_ key: UnsafeRawBufferPointer, in transaction: borrowing Transaction) throws {
        if inRun {
            if lastIsWord {
                if key.count == 8, let start = key.baseAddress {
                    if start.loadUnaligned(as: UInt64.self).bigEndian <= lastWord { return }
                } else if withUnsafeBytes(of: lastWord.bigEndian, { compareKeys(key, $0) }) <= 0 {
                    return
                }
            } else if last.withUnsafeBytes({ compareKeys(key, $0) }) <= 0 {
                return
            }
        }
        try eraseRun(startingAt: key, in: transaction)
    }

    /// Deletes the run `key` starts, if there is one (``erase(_:in:)``).
    @inline(never)
    private func eraseRun(startingAt key: UnsafeRawBufferPointer, in transaction: borrowing Transaction) throws {
        inRun = false
        let handle: OpaquePointer
        if let open = self.handle {
            handle = open
        } else {
            handle = try transaction.openCursor(dbi)
            self.handle = handle
        }
        var k = MDB_val()
        var v = MDB_val()
        if positioned, mdb_cursor_get(handle, &k, &v, MDB_GET_CURRENT) == MDB_SUCCESS,
            compareKeys(UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size), key) == 0
        {
            // The entry that followed the last run deleted.
        } else {
            k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            let code = mdb_cursor_get(handle, &k, &v, MDB_SET_KEY)
            if code == MDB_NOTFOUND {
                positioned = false
                return
            }
            try transaction.check(code, "mdb_cursor_get")
        }
        // The run's last key, read in place (the entry's key and parent are
        // not needed): three arrays made and freed per run cost about 1,200
        // instructions a parent.
        let lastKey = try IdRuns.lastKey(ofRun: v, transaction)
        if lastKey.count == 8, let start = lastKey.baseAddress {
            lastWord = start.loadUnaligned(as: UInt64.self).bigEndian
            lastIsWord = true
        } else {
            last.removeAll(keepingCapacity: true)
            last.append(contentsOf: lastKey)
            lastIsWord = false
        }
        inRun = true
        positioned = false
        try transaction.check(mdb_cursor_del(handle, 0), "mdb_cursor_del")
        positioned = true
    }
}
