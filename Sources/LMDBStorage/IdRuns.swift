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
