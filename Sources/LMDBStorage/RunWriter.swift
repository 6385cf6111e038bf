import CLMDB
import DAOCore
import Foundation

/// The runs of one child entity's `#id` database as one storage call writes
/// them, through a cursor kept for the call (closed by ``close()`` before
/// the transaction ends, like ``WriteCursor``).
///
/// Children written in key order after every stored key (a new parent's
/// children with generated ids) extend the last run of the database: that
/// run (the *tail*) is kept here and its entry rewritten once, when another
/// run follows it or the call ends (``flush(in:)``), so such children cost
/// one `#id` write per parent, not per child. Every other change goes
/// through the database, with the tail written first.
final class RunWriter {
    let dbi: MDB_dbi
    let main: MDB_dbi
    private var handle: OpaquePointer?
    /// The last run of the database as this call has made it: its entry
    /// holds `tailFirst` and, unless `tailDirty`, `tailLast`. Read and
    /// written for every new child, by one call on one thread: without the
    /// runtime's exclusivity checks (two `swift_beginAccess` a child cost
    /// about 155 instructions together).
    @exclusivity(unchecked) private var hasTail = false
    @exclusivity(unchecked) private var tailDirty = false
    @exclusivity(unchecked) private var tailFirst: [UInt8] = []
    @exclusivity(unchecked) private var tailLast: [UInt8] = []
    @exclusivity(unchecked) private var tailParent: [UInt8] = []
    /// The runs around `gapKey`, not stored, as ``storageKey(of:in:)`` read
    /// them, while `hasGap` (until the next write or lookup), and whether
    /// each was found. Every lookup reads its runs into these two, whose
    /// arrays keep their memory from call to call (the writer lives with
    /// the table's codecs): a run read into arrays of its own cost three
    /// allocations, and a `persist-single` call looks up its first child.
    @exclusivity(unchecked) private var hasGap = false
    private var gapKey: [UInt8] = []
    @exclusivity(unchecked) private var gapPrevious = IdRun()
    @exclusivity(unchecked) private var gapNext = IdRun()
    @exclusivity(unchecked) private var gapHasPrevious = false
    @exclusivity(unchecked) private var gapHasNext = false
    /// The value of the entry being written (``putRun(_:last:parent:flags:in:)``).
    private var valueBuffer: [UInt8] = []

    init(_ dbi: MDB_dbi, main: MDB_dbi) {
        self.dbi = dbi
        self.main = main
    }

    /// Closes the cursor and forgets the tail; call it before the
    /// transaction ends, after ``flush(in:)`` when the call succeeded.
    func close() {
        if let handle { mdb_cursor_close(handle) }
        handle = nil
        hasTail = false
        tailDirty = false
        hasGap = false
    }

    private func cursor(_ txn: borrowing Transaction) throws -> OpaquePointer {
        if let handle { return handle }
        let cursor = try txn.openCursor(dbi)
        handle = cursor
        return cursor
    }

    /// Writes the tail's entry if the call extended it.
    func flush(in txn: borrowing Transaction) throws {
        guard hasTail, tailDirty else { return }
        try putRun(tailFirst, last: tailLast, parent: tailParent, flags: 0, in: txn)
        tailDirty = false
    }

    /// Writes the tail and forgets it, before a change the tail's fast path
    /// does not cover.
    private func settle(in txn: borrowing Transaction) throws {
        try flush(in: txn)
        hasTail = false
    }

    private func put(_ key: [UInt8], _ value: [UInt8], flags: UInt32, in txn: borrowing Transaction) throws {
        hasGap = false
        let cursor = try cursor(txn)
        let code = key.withUnsafeBytes { key in
            value.withUnsafeBytes { value in
                var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
                var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
                return mdb_cursor_put(cursor, &k, &v, flags)
            }
        }
        try txn.check(code, "mdb_cursor_put")
    }

    /// Writes the run `first`…`last` of `parent`, its value built in a
    /// buffer the writer keeps (not an array per write).
    private func putRun<Last: Collection<UInt8>, Parent: Collection<UInt8>>(
        _ first: [UInt8], last: Last, parent: Parent, flags: UInt32, in txn: borrowing Transaction
    ) throws {
        var value: [UInt8] = []
        swap(&value, &valueBuffer)
        defer { swap(&value, &valueBuffer) }
        value.removeAll(keepingCapacity: true)
        value.append(UInt8(truncatingIfNeeded: last.count >> 8))
        value.append(UInt8(truncatingIfNeeded: last.count))
        value.append(contentsOf: last)
        value.append(contentsOf: parent)
        try put(first, value, flags: flags, in: txn)
    }

    private func delete(_ key: [UInt8], in txn: borrowing Transaction) throws {
        hasGap = false
        try txn.delete(dbi, key)
    }

    /// Whether the parent prefix of `storageKey` (all but its last
    /// `childCount` bytes) is the tail's parent.
    @inline(__always)
    private func tailHasParent(of storageKey: [UInt8], childCount: Int) -> Bool {
        let parentCount = storageKey.count - childCount
        guard parentCount == tailParent.count else { return false }
        guard parentCount > 0 else { return true }
        return storageKey.withUnsafeBytes { key in
            tailParent.withUnsafeBytes { parent in
                guard let key = key.baseAddress, let parent = parent.baseAddress else { return false }
                return memcmp(key, parent, parentCount) == 0
            }
        }
    }

    /// Whether the tail's fast path may be used: not when another writer of
    /// the same call writes this database too (a child entity reached
    /// through two relations), whose runs could follow the tail unseen.
    @exclusivity(unchecked) var keepsTail = true

    /// The storage key of the child with key `key`, if it is stored. When
    /// it is not and the runs around it were read from the database (no
    /// tail kept), they are kept for an ``insert(_:storageKey:in:)`` of the
    /// same key that follows with nothing written in between: read once,
    /// not twice (a new child's first search in a call). Kept in the
    /// writer, not handed back: an optional pair of runs returned and
    /// destroyed for every child cost about 80 instructions a child.
    func storageKey(of key: [UInt8], in txn: borrowing Transaction) throws -> [UInt8]? {
        hasGap = false
        let parent: [UInt8]
        if hasTail, compareKeys(key, tailFirst) >= 0 {
            // The tail is the last run: no other run can hold the key.
            guard compareKeys(key, tailLast) <= 0 else { return nil }
            parent = tailParent
        } else {
            // `next` is left unread only when `previous` starts at the key,
            // which then lies in it: an insert then needs `previous` alone.
            (gapHasPrevious, gapHasNext) = try IdRuns.neighbours(
                of: key, cursor: cursor(txn), in: txn, wantNext: false, into: &gapPrevious, &gapNext)
            if gapHasPrevious, compareKeys(key, gapPrevious.last) <= 0 {
                let storageKey = gapPrevious.parent + key
                if try txn.contains(main, storageKey) { return storageKey }
            }
            if !hasTail {
                hasGap = true
                Self.overwrite(&gapKey, with: key)
            }
            return nil
        }
        let storageKey = parent + key
        return try txn.contains(main, storageKey) ? storageKey : nil
    }

    /// Records the new child `key` stored under `storageKey` (its parent's
    /// key, then `key`), which no run of another parent may then hold: it
    /// joins a run of its parent next to it, or starts one, and a run of
    /// another parent around it is split at it. The child must be stored
    /// under no other parent (a move removes it there first).
    func insert(_ key: [UInt8], storageKey: [UInt8], in txn: borrowing Transaction) throws {
        if hasTail {
            if compareKeys(key, tailLast) > 0 {
                if tailHasParent(of: storageKey, childCount: key.count) {
                    // Overwritten in place when the lengths agree (integer
                    // keys): emptying and refilling the array cost about 170
                    // instructions a child.
                    if tailLast.count == key.count {
                        tailLast.withUnsafeMutableBytes { last in
                            key.withUnsafeBytes { key in last.copyMemory(from: key) }
                        }
                    } else {
                        tailLast = key
                    }
                    tailDirty = true
                    return
                }
                // A run of another parent after the tail: it becomes the
                // tail, appended after every key.
                try flush(in: txn)
                Self.overwrite(&tailFirst, with: key)
                Self.overwrite(&tailLast, with: key)
                Self.overwrite(&tailParent, with: storageKey[..<(storageKey.count - key.count)])
                try putRun(key, last: key, parent: tailParent, flags: UInt32(MDB_APPEND), in: txn)
                return
            }
            if compareKeys(key, tailFirst) >= 0, tailHasParent(of: storageKey, childCount: key.count) { return }
            try settle(in: txn)
        }
        // The parent's key as a slice of the storage key (not an array of
        // its own).
        let parent = storageKey[..<(storageKey.count - key.count)]
        // The runs the lookup of the key just read, or read now, into the
        // writer's own two (copied out below: the writes that follow do
        // not read runs, so the arrays are not copied).
        if !(hasGap && !hasTail && gapKey == key) {
            (gapHasPrevious, gapHasNext) = try IdRuns.neighbours(
                of: key, cursor: cursor(txn), in: txn, into: &gapPrevious, &gapNext)
        }
        let previous = gapHasPrevious ? gapPrevious : nil
        let next = gapHasNext ? gapNext : nil
        if let previous, compareKeys(key, previous.last) <= 0 {
            if previous.parent.elementsEqual(parent) { return }
            // Inside another parent's run: split it around the key, at that
            // parent's children on either side (the run's first and last
            // keys are its children, and the key is not one).
            guard
                let below = try IdRuns.sibling(of: key, parent: previous.parent, after: false, main: main, in: txn),
                let above = try IdRuns.sibling(of: key, parent: previous.parent, after: true, main: main, in: txn),
                compareKeys(below, previous.first) >= 0, compareKeys(above, previous.last) <= 0
            else {
                throw StorageError(
                    .corrupt, txn.operation, path: txn.environment.path,
                    message: "an '#id' run does not start and end with children of its parent")
            }
            try putRun(previous.first, last: below, parent: previous.parent, flags: 0, in: txn)
            try putRun(above, last: previous.last, parent: previous.parent, flags: 0, in: txn)
            try putRun(key, last: key, parent: parent, flags: 0, in: txn)
            return
        }
        // In a gap between runs: joins its parent's run on either side (no
        // other run starts between them, and every child lies in a run).
        let joinsPrevious = previous?.parent.elementsEqual(parent) ?? false
        let joinsNext = next?.parent.elementsEqual(parent) ?? false
        switch (previous, next) {
        case (let previous?, let next?) where joinsPrevious && joinsNext:
            try delete(next.first, in: txn)
            try putRun(previous.first, last: next.last, parent: parent, flags: 0, in: txn)
        case (let previous?, _) where joinsPrevious:
            try putRun(previous.first, last: key, parent: parent, flags: 0, in: txn)
            if next == nil { keepTail(previous.first, key, parent) }
        case (_, let next?) where joinsNext:
            try delete(next.first, in: txn)
            try putRun(key, last: next.last, parent: parent, flags: 0, in: txn)
        default:
            try putRun(key, last: key, parent: parent, flags: 0, in: txn)
            if next == nil { keepTail(key, key, parent) }
        }
    }

    /// Keeps the run `first`…`last` of `parent` as the tail, copied into
    /// the tail's own arrays: sharing the caller's (the call's primary-key
    /// buffer among them) made the next write to either copy it.
    private func keepTail(_ first: [UInt8], _ last: [UInt8], _ parent: ArraySlice<UInt8>) {
        guard keepsTail else { return }
        hasTail = true
        tailDirty = false
        Self.overwrite(&tailFirst, with: first)
        Self.overwrite(&tailLast, with: last)
        Self.overwrite(&tailParent, with: parent)
    }

    /// Replaces `array`'s bytes with `bytes` in its own memory (kept from
    /// one call to the next: the writer lives with the table's codecs).
    @inline(__always)
    private static func overwrite<Bytes: Collection<UInt8>>(_ array: inout [UInt8], with bytes: Bytes) {
        array.removeAll(keepingCapacity: true)
        array.append(contentsOf: bytes)
    }

    /// Records that the child `key` of `parent` is no longer stored there
    /// (its entry in the entity's database is gone): a run it starts or ends
    /// shrinks to the parent's next child inside it, or goes; a child inside
    /// a run leaves it as it is.
    func remove(_ key: [UInt8], parent: [UInt8], in txn: borrowing Transaction) throws {
        try settle(in: txn)
        guard let run = try IdRuns.run(containing: key, cursor: cursor(txn), in: txn), run.parent == parent else {
            return
        }
        let isFirst = run.first == key
        let isLast = run.last == key
        switch (isFirst, isLast) {
        case (true, true):
            try delete(run.first, in: txn)
        case (true, false):
            guard let next = try IdRuns.sibling(of: key, parent: parent, after: true, main: main, in: txn),
                compareKeys(next, run.last) <= 0
            else { throw brokenRun(txn) }
            try delete(run.first, in: txn)
            try putRun(next, last: run.last, parent: parent, flags: 0, in: txn)
        case (false, true):
            guard let previous = try IdRuns.sibling(of: key, parent: parent, after: false, main: main, in: txn),
                compareKeys(previous, run.first) >= 0
            else { throw brokenRun(txn) }
            try putRun(run.first, last: previous, parent: parent, flags: 0, in: txn)
        case (false, false):
            break
        }
    }

    /// Writes the tail and forgets it, before the runs of a parent are
    /// erased (``RunEraser``).
    func prepareForErasure(in txn: borrowing Transaction) throws {
        try settle(in: txn)
    }

    private func brokenRun(_ txn: borrowing Transaction) -> StorageError {
        StorageError(
            .corrupt, txn.operation, path: txn.environment.path,
            message: "an '#id' run does not start and end with children of its parent")
    }
}
