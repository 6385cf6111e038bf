import CLMDB
import DAOCore
import Foundation

/// One entry of a child entity's `#id` database (layout version 2): a run of
/// one parent's consecutive child keys. The entry's key is the run's first
/// child key; its value is the length of the run's last child key (2 bytes,
/// big-endian), that key, then the parent's key (the prefix of its
/// children's storage keys).
///
/// Invariants (checked by `verify()`): the run's first and last keys are
/// children of its parent, first ≤ last; runs do not overlap; no child of
/// another parent has a key inside a run; every child lies in a run of its
/// parent. A child is found by the run whose first key is the greatest not
/// above its own, and confirmed by its entry in the entity's database
/// (keys in between that are not stored are gaps, not children).
struct IdRun {
    var first: [UInt8]
    var last: [UInt8]
    var parent: [UInt8]

    /// The entry's value for a run ending at `last` under `parent`.
    static func value<Last: Collection<UInt8>, Parent: Collection<UInt8>>(last: Last, parent: Parent) -> [UInt8] {
        var value: [UInt8] = []
        value.reserveCapacity(2 + last.count + parent.count)
        value.append(UInt8(truncatingIfNeeded: last.count >> 8))
        value.append(UInt8(truncatingIfNeeded: last.count))
        value.append(contentsOf: last)
        value.append(contentsOf: parent)
        return value
    }

    var value: [UInt8] { Self.value(last: last, parent: parent) }

    /// The run an entry holds, in arrays of its own made at their size;
    /// `nil` when the value is not one.
    init?(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard value.count >= 2 else { return nil }
        let lastCount = Int(value[0]) << 8 | Int(value[1])
        guard lastCount > 0, 2 + lastCount <= value.count else { return nil }
        first = [UInt8](key)
        last = [UInt8](value[2..<(2 + lastCount)])
        parent = [UInt8](value[(2 + lastCount)...])
    }

    init(first: [UInt8], last: [UInt8], parent: [UInt8]) {
        self.first = first
        self.last = last
        self.parent = parent
    }

    /// An empty run, to be filled by ``assign(key:value:)``.
    init() {
        first = []
        last = []
        parent = []
    }

    /// Makes this the run the entry `key`, `value` holds, its bytes copied
    /// into the arrays' own memory (kept from one entry to the next: a
    /// writer reads runs into the same three arrays call after call, where
    /// new arrays cost three allocations per lookup); `false`, with the run
    /// left undefined, when the value is not one.
    mutating func assign(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
        guard value.count >= 2 else { return false }
        let lastCount = Int(value[0]) << 8 | Int(value[1])
        guard lastCount > 0, 2 + lastCount <= value.count else { return false }
        Self.overwrite(&first, with: key)
        Self.overwrite(&last, with: UnsafeRawBufferPointer(rebasing: value[2..<(2 + lastCount)]))
        Self.overwrite(&parent, with: UnsafeRawBufferPointer(rebasing: value[(2 + lastCount)...]))
        return true
    }

    @inline(__always)
    private static func overwrite(_ array: inout [UInt8], with bytes: UnsafeRawBufferPointer) {
        array.removeAll(keepingCapacity: true)
        array.append(contentsOf: bytes)
    }

    /// Whether `key` lies within the run (between its first and last keys).
    func contains(_ key: [UInt8]) -> Bool {
        compareKeys(key, first) >= 0 && compareKeys(key, last) <= 0
    }

    /// The runs that hold the children `pairs` (child key, parent key) with
    /// as few entries as the keys allow: the pairs in child-key order, each
    /// run the longest stretch of one parent's children. `pairs` need not
    /// be sorted.
    static func runs(of pairs: [(child: [UInt8], parent: [UInt8])]) -> [IdRun] {
        let sorted = pairs.sorted { compareKeys($0.child, $1.child) < 0 }
        var runs: [IdRun] = []
        for pair in sorted {
            if let lastRun = runs.last, lastRun.parent == pair.parent {
                runs[runs.count - 1].last = pair.child
            } else {
                runs.append(IdRun(first: pair.child, last: pair.child, parent: pair.parent))
            }
        }
        return runs
    }
}

/// Keys compared as LMDB compares them by default: bytewise, a prefix first.
@inline(__always)
func compareKeys(_ a: [UInt8], _ b: [UInt8]) -> Int {
    a.withUnsafeBytes { a in b.withUnsafeBytes { b in compareKeys(a, b) } }
}

@inline(__always)
func compareKeys(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
    // Two integer keys (8 bytes each) as two big-endian words: a call of
    // `memcmp` cost about 45 instructions.
    if a.count == 8, b.count == 8, let x = a.baseAddress, let y = b.baseAddress {
        let left = x.loadUnaligned(as: UInt64.self).bigEndian
        let right = y.loadUnaligned(as: UInt64.self).bigEndian
        return left == right ? 0 : (left < right ? -1 : 1)
    }
    let common = min(a.count, b.count)
    if common > 0, let x = a.baseAddress, let y = b.baseAddress {
        let order = memcmp(x, y, common)
        if order != 0 { return Int(order) }
    }
    return a.count - b.count
}

/// Reading the runs of an `#id` database through a cursor.
enum IdRuns {
    /// The run whose first key is the greatest not above `key`, and the run
    /// that follows it (the one whose first key is the least above `key`).
    /// Leaves the cursor wherever its reads took it.
    static func neighbours(
        of key: [UInt8], cursor: OpaquePointer, in txn: borrowing Transaction, wantNext: Bool = true
    ) throws -> (previous: IdRun?, next: IdRun?) {
        var previous = IdRun()
        var next = IdRun()
        let found = try neighbours(of: key, cursor: cursor, in: txn, wantNext: wantNext, into: &previous, &next)
        return (found.previous ? previous : nil, found.next ? next : nil)
    }

    /// ``neighbours(of:cursor:in:wantNext:)`` read into `previous` and
    /// `next`, whose arrays' memory is reused (``IdRun/assign(key:value:)``);
    /// returns which of them were found (a run not found is left undefined).
    static func neighbours(
        of key: [UInt8], cursor: OpaquePointer, in txn: borrowing Transaction, wantNext: Bool = true,
        into previous: inout IdRun, _ next: inout IdRun
    ) throws -> (previous: Bool, next: Bool) {
        var k = MDB_val()
        var v = MDB_val()
        let code = key.withUnsafeBytes { key in
            k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            return mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
        }
        if code == MDB_SUCCESS {
            let startsAtKey = key.withUnsafeBytes { key in
                compareKeys(UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size), key) == 0
            }
            if startsAtKey {
                try run(k, v, txn, into: &previous)
                return (true, wantNext ? try step(cursor, MDB_NEXT, txn, into: &next) : false)
            }
            try run(k, v, txn, into: &next)
            return (try step(cursor, MDB_PREV, txn, into: &previous), true)
        } else if code == MDB_NOTFOUND {
            return (try step(cursor, MDB_LAST, txn, into: &previous), false)
        }
        try txn.check(code, "mdb_cursor_get")
        return (false, false)
    }

    /// The run that holds `key` between its first and last keys, if any.
    static func run(containing key: [UInt8], cursor: OpaquePointer, in txn: borrowing Transaction) throws -> IdRun? {
        let previous = try neighbours(of: key, cursor: cursor, in: txn, wantNext: false).previous
        guard let previous, compareKeys(key, previous.last) <= 0 else { return nil }
        return previous
    }

    /// The storage key of the child with key `key`, found through the runs
    /// of `ids` and confirmed in `main`; `nil` when it is not stored.
    static func storageKey(
        of key: [UInt8], ids: MDB_dbi, main: MDB_dbi, in txn: borrowing Transaction
    ) throws -> [UInt8]? {
        let cursor = try txn.openCursor(ids)
        defer { mdb_cursor_close(cursor) }
        guard let run = try run(containing: key, cursor: cursor, in: txn) else { return nil }
        let storageKey = run.parent + key
        return try txn.contains(main, storageKey) ? storageKey : nil
    }

    /// Moves `cursor` by `op` and reads the run it reaches into `run`;
    /// `false` when there is none.
    private static func step(
        _ cursor: OpaquePointer, _ op: MDB_cursor_op, _ txn: borrowing Transaction, into run: inout IdRun
    ) throws -> Bool {
        var k = MDB_val()
        var v = MDB_val()
        let code = mdb_cursor_get(cursor, &k, &v, op)
        if code == MDB_NOTFOUND { return false }
        try txn.check(code, "mdb_cursor_get")
        try Self.run(k, v, txn, into: &run)
        return true
    }

    static func run(_ k: MDB_val, _ v: MDB_val, _ txn: borrowing Transaction) throws -> IdRun {
        // Arrays made at their size: filling empty ones
        // (`IdRun.assign(key:value:)`) cost about 460 instructions more per
        // run the eraser reads.
        guard
            let run = try IdRun(
                key: UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
                value: txn.bounds.lent(v, txn.operation))
        else { throw notARun(v, txn) }
        return run
    }

    /// The last key of the run the entry's value `v` holds, pointing into
    /// `v` (valid while it is).
    /// - Throws: ``StorageError/Kind/corrupt`` when the value is not a run's
    ///   (the checks of ``IdRun/init(key:value:)``).
    @inline(__always)
    static func lastKey(ofRun v: MDB_val, _ txn: borrowing Transaction) throws -> UnsafeRawBufferPointer {
        let value = try txn.bounds.lent(v, txn.operation)
        guard value.count >= 2 else { throw notARun(v, txn) }
        let lastCount = Int(value[0]) << 8 | Int(value[1])
        guard lastCount > 0, 2 + lastCount <= value.count else { throw notARun(v, txn) }
        return UnsafeRawBufferPointer(rebasing: value[2..<(2 + lastCount)])
    }

    private static func notARun(_ v: MDB_val, _ txn: borrowing Transaction) -> StorageError {
        StorageError(
            .corrupt, txn.operation, path: txn.environment.path,
            message: "an '#id' entry is not a run of child keys (\(v.mv_size) bytes)")
    }

    /// Reads the run of the entry `k`, `v` into `run`.
    /// - Throws: ``StorageError/Kind/corrupt`` when the entry is not a run.
    static func run(_ k: MDB_val, _ v: MDB_val, _ txn: borrowing Transaction, into run: inout IdRun) throws {
        guard
            try run.assign(
                key: UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
                value: txn.bounds.lent(v, txn.operation))
        else { throw notARun(v, txn) }
    }

    /// The key of `parent`'s child that follows `key` (`after`) or precedes
    /// it in `main`, without the parent's prefix; `nil` when there is none.
    static func sibling(
        of key: [UInt8], parent: [UInt8], after: Bool, main: MDB_dbi, in txn: borrowing Transaction
    ) throws -> [UInt8]? {
        let cursor = try txn.openCursor(main)
        defer { mdb_cursor_close(cursor) }
        let storageKey = parent + key
        var k = MDB_val()
        var v = MDB_val()
        var code = storageKey.withUnsafeBytes { bytes in
            k = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            return mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
        }
        guard code == MDB_SUCCESS || code == MDB_NOTFOUND else {
            try txn.check(code, "mdb_cursor_get")
            return nil
        }
        if after {
            if code == MDB_SUCCESS {
                let found = k
                let isKey = storageKey.withUnsafeBytes { bytes in
                    compareKeys(UnsafeRawBufferPointer(start: found.mv_data, count: found.mv_size), bytes) == 0
                }
                if isKey { code = mdb_cursor_get(cursor, &k, &v, MDB_NEXT) }
            }
        } else {
            code = mdb_cursor_get(cursor, &k, &v, code == MDB_NOTFOUND ? MDB_LAST : MDB_PREV)
        }
        if code == MDB_NOTFOUND { return nil }
        try txn.check(code, "mdb_cursor_get")
        guard k.hasPrefix(parent), k.mv_size > parent.count else { return nil }
        let found = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
        return [UInt8](found[parent.count...])
    }
}

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
