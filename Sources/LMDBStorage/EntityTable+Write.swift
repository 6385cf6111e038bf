import CLMDB
import DAOCore
import Foundation

// Writing and erasing records with their index entries and children.
extension EntityTable {
    /// What the caller knows about the parent of a child being persisted.
    enum ParentContext {
        /// Nothing: the child is persisted through its own storage, so its
        /// parent must be looked up.
        case unknown
        /// The parent with this primary key is being persisted, and
        /// `stored` finds its stored children as its children are written
        /// (``StoredChildren``, the fused walk).
        case persisting(primaryKey: StoredValue, stored: LentChildren)
    }

    /// The stored children of a parent being persisted, held without a
    /// reference count: the codecs of the call own them, and the context
    /// that lends them lives only during the parent's children's writes
    /// (a strong reference was retained and released per child). Called
    /// through `_withUnsafeGuaranteedRef`: an `unowned(unsafe)` reference
    /// was still retained and released around each call of `take`, two
    /// atomic operations per child.
    struct LentChildren {
        let children: Unmanaged<StoredChildren>

        init(children: StoredChildren) {
            self.children = Unmanaged.passUnretained(children)
        }

        /// ``StoredChildren/find(_:storageKey:in:codecs:)`` on the lent children.
        @inline(__always)
        func find(_ pk: [UInt8], storageKey: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws
            -> StoredChildren.Place
        {
            try children._withUnsafeGuaranteedRef { try $0.find(pk, storageKey: storageKey, in: txn, codecs: codecs) }
        }
    }

    /// Inserts or replaces `record` with its children.
    ///
    /// Writes per record: its value; for a child new under this parent, a
    /// look through the `#id` runs (which finds a child stored under another
    /// parent, which then moves) and the run it joins or starts
    /// (``RunWriter``; nothing per child while the children extend the last
    /// run); the entries of the indexes kept in their own database, reading
    /// the old value only when there are such indexes.
    ///
    /// The record is lent by a pointer (valid for the call): every use of a
    /// record's value in this code, generic over its type, copied it.
    ///
    /// `writeFields` is this table's ``fieldsWriter``, read once per call
    /// by the caller, and used when ``writesFieldwise``: read here from the
    /// table (or bound from an optional), its closure's context was
    /// retained and released per record, two atomic operations that cost
    /// few instructions but about 5% of `update`'s time.
    func persist(
        _ record: UnsafePointer<R>, in txn: borrowing Transaction, codecs: Codecs, parent: ParentContext = .unknown,
        writeFields: FieldsWriter<R>
    ) throws {
        let encoder = codecs.encoder
        if writesFieldwise {
            try encoder.encodeFields { try writeFields(record, &$0) }
        } else {
            let codable = try codecs.codableFields()
            try encoder.encodeFields { try codable.write(record.pointee, to: &$0) }
        }
        // The primary key's bytes and the storage key are built in buffers
        // the call's codecs keep, moved out and back, so no record allocates
        // its own.
        var pk: [UInt8] = []
        swap(&pk, &codecs.primaryKeyBuffer)
        defer { swap(&pk, &codecs.primaryKeyBuffer) }
        // An integer primary key's 8 bytes are written over the buffer's
        // (without emptying and refilling an array).
        let integerKey = encoder.integer(at: 0)
        if let integerKey {
            KeyCodec.set(integers: integerKey, in: &pk)
        } else {
            pk.removeAll(keepingCapacity: true)
            encoder.appendKey(ofField: 0, to: &pk)
        }
        var key: [UInt8] = []
        swap(&key, &codecs.storageKeyBuffer)
        defer { swap(&key, &codecs.storageKeyBuffer) }
        // The storage key of the record this one replaces, if there is one
        // and its index entries or its move need it; whether the record is
        // stored under `key` already. (Flags and trivially copied fields of
        // the codecs, not their link and index list, which were retained
        // and released per record.)
        var oldKey: [UInt8]?
        var storedAtKey = false
        // Whether the record is the entry the main writer's cursor stands
        // on, matched by the fused walk: replaced there without a step.
        var atCursor = false
        let hasStoredIndexes = codecs.hasStoredIndexes
        let foreignKey = codecs.foreignKeyIndex
        if foreignKey >= 0 {
            // The parent's key, then the child's: the child's storage key,
            // built whole at once when both are integers and the parent is
            // known (no lookup needs the parent's key alone).
            var keyIsWhole = false
            if case .persisting = parent, let integerKey, let parentKey = encoder.integer(at: foreignKey) {
                KeyCodec.set(integers: parentKey, integerKey, in: &key)
                keyIsWhole = true
            } else {
                key.removeAll(keepingCapacity: true)
                encoder.appendKey(ofField: foreignKey, to: &key)
            }
            var storedHere = false
            switch parent {
            case .unknown:
                // A parent that is a child itself is found through the runs
                // of its own `#id` database.
                let parentStored: Bool
                if let link = codecs.link, let parentById = link.parentById {
                    parentStored = try IdRuns.storageKey(of: key, ids: parentById, main: link.parentMain, in: txn) != nil
                } else {
                    parentStored = try txn.contains(codecs.parentDatabase, key)
                }
                guard parentStored else {
                    throw StorageError(
                        .constraint, .persist, entity: entity.name, path: environment.path,
                        message: "its parent '\(codecs.link?.parent ?? "")' with key \(encoder.value(at: foreignKey)) does not exist",
                        context: "record \(encoder.value(at: 0))")
                }
            case .persisting(let expected, let stored):
                // An integer foreign key is compared without a StoredValue.
                let namesParent: Bool
                if case .integer(let parentKey) = expected, let named = encoder.integer(at: foreignKey) {
                    namesParent = named == parentKey
                } else {
                    namesParent = encoder.value(at: foreignKey) == expected
                }
                guard namesParent else {
                    throw StorageError(
                        .constraint, .persist, entity: entity.name, path: environment.path,
                        message: "a child of '\(codecs.link?.parent ?? "")' \(expected) names parent \(encoder.value(at: foreignKey)) in its foreign key",
                        context: "record \(encoder.value(at: 0))")
                }
                // The whole storage key first: the walk compares it with
                // the entry its cursor reaches.
                if !keyIsWhole {
                    key.append(contentsOf: pk)
                    keyIsWhole = true
                }
                switch try stored.find(pk, storageKey: key, in: txn, codecs: codecs) {
                case .atCursor:
                    storedHere = true
                    atCursor = true
                case .listed: storedHere = true
                case .notHere: break
                }
            }
            if !keyIsWhole { key.append(contentsOf: pk) }
            if storedHere {
                storedAtKey = true
                if hasStoredIndexes { oldKey = key }
            } else if let stored = try codecs.idRuns.storageKey(of: pk, in: txn) {
                // Stored already: under this parent (the same key), or under
                // another one, from which it moves (below, once its old
                // entry is read).
                oldKey = stored
                storedAtKey = stored == key
            } else {
                // New: joins its parent's run in `#id`, or starts one, next
                // to the runs the lookup read.
                try codecs.idRuns.insert(pk, storageKey: key, in: txn)
            }
        } else {
            key.removeAll(keepingCapacity: true)
            key.append(contentsOf: pk)
            // The old value matters only for its index entries.
            if hasStoredIndexes {
                oldKey = key
                storedAtKey = true
            }
        }
        var oldIndexKeys: [[UInt8]]?
        if let oldKey, hasStoredIndexes {
            oldIndexKeys = try txn.withValue(main, oldKey) { try indexKeys(of: $0, codecs) }
        }
        let moved = oldKey != nil && !storedAtKey
        if moved, let oldKey {
            // Out of its old parent's run (which shrinks, or is split when
            // the child joins its new parent inside it), into the new one's.
            try txn.delete(main, oldKey)
            try codecs.idRuns.remove(pk, parent: Array(oldKey[..<(oldKey.count - pk.count)]), in: txn)
            try codecs.idRuns.insert(pk, storageKey: key, in: txn)
        }
        if atCursor {
            // The entry the walk's cursor stands on; nothing was written
            // since it was reached (the index keys above are only read).
            try codecs.mainWriter.replaceMatched(key, encoder.encoded, in: txn)
        } else if storedAtKey {
            // Stored under this key (as far as the caller knows): usually
            // the entry after the one the previous record replaced.
            try codecs.mainWriter.replace(key, encoder.encoded, in: txn)
        } else {
            try codecs.mainWriter.put(key, encoder.encoded, in: txn)
        }
        if hasStoredIndexes {
            let storedIndexes = codecs.storedIndexes
            for position in storedIndexes.indices {
                let index = storedIndexes[position]
                let newIndexKey = indexKey(index.fields, encoder.value(at:))
                if let oldIndexKeys, let oldKey {
                    if !moved && oldIndexKeys[position] == newIndexKey { continue }
                    try txn.delete(index.dbi, oldIndexKeys[position], value: oldKey)
                }
                try txn.put(index.dbi, newIndexKey, key)
            }
        }
        if hasRelations {
            // `childWriters`, not `relations`: reading `relations` here looked
            // up the metadata of `[any ChildSet<R>]`, of its element and of
            // its indices (about 1.2k instructions a parent), and lent the
            // parent by copying it.
            let primaryKey = encoder.value(at: 0)
            let writers = childWriters
            for position in writers.indices {
                try writers[position].replaceChildren(
                    ofParentAt: UnsafeRawPointer(record), primaryKey: primaryKey, parentKey: pk, in: txn,
                    codecs: codecs.children[position])
            }
        }
    }

    /// The keys of the stored indexes of the stored value `value` (none when
    /// every index is served by the parent's range), read while the
    /// transaction lends the value: the buffer is gone once a write moves its
    /// page.
    @inline(__always)
    func indexKeys(of value: UnsafeRawBufferPointer, _ codecs: Codecs) throws -> [[UInt8]] {
        let storedIndexes = codecs.storedIndexes
        guard !storedIndexes.isEmpty else { return [] }
        let decoder = codecs.decoder
        try decoder.load(value)
        return try storedIndexes.map { try indexKey($0.fields, decoder.value(at:)) }
    }

    /// Erases the record stored under `key` (whose primary key bytes are `pk`)
    /// with its index entries and children. Returns whether there was one.
    @discardableResult
    func erase(storageKey key: [UInt8], pk: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws -> Bool {
        let storedIndexes = codecs.storedIndexes
        if storedIndexes.isEmpty {
            guard try txn.delete(main, key) else { return false }
        } else {
            guard let indexKeys = try txn.withValue(main, key, { try indexKeys(of: $0, codecs) }) else { return false }
            try txn.delete(main, key)
            for position in storedIndexes.indices {
                try txn.delete(storedIndexes[position].dbi, indexKeys[position], value: key)
            }
        }
        if codecs.link != nil {
            try codecs.idRuns.remove(pk, parent: Array(key[..<(key.count - pk.count)]), in: txn)
        }
        // `hasRelations` first; `childWriters`, not `relations`, whose
        // metadata is looked up at each use.
        if hasRelations {
            let erasers = childWriters
            for position in erasers.indices {
                try erasers[position].eraseChildren(parentKey: pk, in: txn, codecs: codecs.children[position])
            }
        }
        return true
    }

    /// Erases every record stored under `parentKey` (a parent's children),
    /// with their `#id` and index entries and their own children: one cursor
    /// walk over the range, removing as it goes.
    func eraseRange(parentKey: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws {
        let storedIndexes = codecs.storedIndexes
        // The runs of the parent's children in `#id`, deleted through the
        // call's eraser: one entry per run, not per child.
        let hasRuns = codecs.link != nil
        let eraser = codecs.runEraser
        if hasRuns {
            try codecs.idRuns.prepareForErasure(in: txn)
            eraser.startParent()
        }
        let prefixCount = parentKey.count
        // Children with no stored index and no children of their own (the
        // common leaf): a cursor walk with nothing but the run check per
        // child, through the call's kept cursor on the entity's database
        // (one opened per parent cost an allocation each). The general
        // walk's closure and its thunk, called per child, cost about 200
        // instructions a child.
        if storedIndexes.isEmpty && !hasRelations {
            let cursor = try codecs.storedKeys.cursor(in: txn)
            var k = MDB_val()
            var v = MDB_val()
            var code = Cursor.moveToFirst(cursor, withPrefix: parentKey, &k, &v)
            while code == MDB_SUCCESS, k.hasPrefix(parentKey), let start = k.mv_data {
                // The run first: the eraser reads the key before the delete.
                if hasRuns {
                    try eraser.erase(
                        UnsafeRawBufferPointer(start: start + prefixCount, count: k.mv_size - prefixCount), in: txn)
                }
                try txn.check(mdb_cursor_del(cursor, 0), "mdb_cursor_del")
                // After a delete, MDB_NEXT yields the entry that followed it.
                code = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
            }
            if code != MDB_SUCCESS && code != MDB_NOTFOUND { try txn.check(code, "mdb_cursor_get") }
            return
        }
        // Each child's primary-key bytes in one buffer, reused.
        var pk: [UInt8] = []
        swap(&pk, &codecs.primaryKeyBuffer)
        defer { swap(&pk, &codecs.primaryKeyBuffer) }
        try txn.removeRange(main, prefix: parentKey) { key, value in
            // `key` and `value` point into the map: what outlives a write
            // of this transaction is copied before the first one.
            let childKey = UnsafeRawBufferPointer(rebasing: key[prefixCount...])
            // Not read per child without relations: reading `relations`
            // looked up the metadata of `[any ChildSet<R>]` and of `Range`
            // for its indices (about 1.1k instructions per erased child).
            // The child's key is copied out only for its own children.
            if hasRelations {
                pk.removeAll(keepingCapacity: true)
                pk.append(contentsOf: childKey)
            }
            // The `#id` run first: the eraser reads `childKey` before its
            // own delete, and nothing was written since the cursor lent it.
            // Without stored indexes no array is made or released per child
            // (two empty ones cost about 50 instructions per erased child).
            if storedIndexes.isEmpty {
                if hasRuns { try eraser.erase(childKey, in: txn) }
            } else {
                // Read from `value` and `key` before the first write.
                let indexKeys = try self.indexKeys(of: value, codecs)
                let storageKey = [UInt8](key)
                if hasRuns { try eraser.erase(childKey, in: txn) }
                for position in storedIndexes.indices {
                    try txn.delete(storedIndexes[position].dbi, indexKeys[position], value: storageKey)
                }
            }
            guard hasRelations else { return }
            let erasers = childWriters
            for position in erasers.indices {
                try erasers[position].eraseChildren(parentKey: pk, in: txn, codecs: codecs.children[position])
            }
        }
    }

    /// Erases every record of the entity and of its descendants.
    func eraseEverything(in txn: borrowing Transaction) throws {
        try txn.empty(main)
        try txn.empty(byId)
        for index in indexes {
            if let dbi = index.dbi { try txn.empty(dbi) }
        }
        for relation in relations { try relation.eraseEverything(in: txn) }
    }
}

/// The children stored under one parent whose children are being
/// replaced, found as the new children are written (the fused walk,
/// docs/ARCHITECTURE.md, "The LMDB adapter"), and which of them the parent
/// still holds.
///
/// While the children come in the stored order, each is matched against
/// the entry the main writer's cursor reaches next (`MDB_SET_RANGE` on the
/// parent's key for the first, `MDB_NEXT` after), and replaced there: no
/// list is made. At the first child that is not that entry (a child out
/// of key order, new, or moved from another parent), the range's keys are
/// listed through the call's ``RangeKeyReader`` as a separate first pass
/// listed them before, and the children matched so far are marked kept:
/// they are the range's first keys, in order, and matching rewrote values
/// only, so the range holds the keys it held when the parent's children
/// started. From there each child is looked up in that list
/// (``take(_:)``). At the end (``unkept(in:codecs:)``), a walk that never
/// listed takes one more step: a stored key after the last match (or any,
/// when nothing matched) is listed the same way, and what was not matched
/// is erased.
///
/// This holds because, between the first step and the listing, nothing
/// writes the parent's range but the matched children's own values: their
/// index entries, `#id` runs (none for a child stored under its parent
/// already) and own children are other databases, and a child entity
/// belongs to one relation of one owner, so no other writer of the call
/// has a cursor in this range.
///
/// The listed keys:
/// The keys, their ends and the kept flags are memory of its own, written
/// and compared through pointers: appending to arrays (a uniqueness and a
/// capacity check, a generic `append(contentsOf:)`) cost about 250
/// instructions per stored child, comparing through two `withUnsafeBytes`
/// about 110. Used by one call on one thread.
final class StoredChildren {
    /// The keys one after another; `ends[i]` is where key `i` ends.
    private var bytes: UnsafeMutableRawPointer
    private var byteCapacity: Int
    private var byteCount = 0
    private var ends: UnsafeMutablePointer<Int>
    private var kept: UnsafeMutablePointer<Bool>
    private var keyCapacity: Int
    private(set) var count = 0
    /// Where the next child in key order is expected.
    private var next = 0
    /// The parent's key, the prefix of its range: the caller's array
    /// (the parent's codecs' key buffer), held from ``start(parentKey:)``
    /// to the end of ``unkept(in:codecs:)`` only, so that the buffer is
    /// not shared when the next parent's key is written into it (a copy,
    /// an allocation per parent). Only ever assigned: emptied and refilled
    /// in place, it was checked for exclusive access at run time on each
    /// read (`swift_beginAccess`, about 76 instructions per child).
    private var parentKey: [UInt8] = []
    /// Whether the children are still matched at the main writer's cursor
    /// (nothing listed yet), and how many were.
    private var matching = true
    private var matched = 0

    init() {
        byteCapacity = 1024
        bytes = .allocate(byteCount: byteCapacity, alignment: 8)
        keyCapacity = 64
        ends = .allocate(capacity: keyCapacity)
        kept = .allocate(capacity: keyCapacity)
    }

    deinit {
        bytes.deallocate()
        ends.deallocate()
        kept.deallocate()
    }

    /// Forgets every key, keeping the memory (one instance serves every
    /// parent of a call), and starts the walk of the range of `parentKey`.
    func start(parentKey: [UInt8]) {
        byteCount = 0
        count = 0
        next = 0
        self.parentKey = parentKey
        matching = true
        matched = 0
    }

    /// Where a child being written is stored (``find(_:storageKey:in:codecs:)``).
    enum Place {
        /// Under the parent, at the entry the main writer's cursor stands on.
        case atCursor
        /// Under the parent, elsewhere in its range.
        case listed
        /// Not under the parent (new, or under another parent).
        case notHere
    }

    /// Where the child with primary-key bytes `pk` and storage key
    /// `storageKey` (under this parent) is stored, as the next child
    /// written; if under the parent, it is kept.
    @inline(__always)
    func find(_ pk: [UInt8], storageKey: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws -> Place {
        if matching {
            let step = try codecs.mainWriter.step(
                to: storageKey, prefix: parentKey, first: matched == 0, in: txn)
            if step == .match {
                matched += 1
                return .atCursor
            }
            try list(in: txn, codecs: codecs, rangeHoldsMore: step == .otherInRange)
        }
        // An empty list (a new parent's range) holds no child: no lookup.
        return count > 0 && take(pk) ? .listed : .notHere
    }

    /// Ends the walk with a list of the stored keys: read from the range
    /// unless it holds no key but the `matched` ones (`rangeHoldsMore`
    /// false and nothing matched: an empty range), with the first
    /// `matched` marked kept.
    private func list(in txn: borrowing Transaction, codecs: Codecs, rangeHoldsMore: Bool) throws {
        matching = false
        guard rangeHoldsMore || matched > 0 else { return }
        let prefixCount = parentKey.count
        try codecs.storedKeys.forEachKey(withPrefix: parentKey, in: txn) { key in
            append(UnsafeRawBufferPointer(rebasing: key[prefixCount...]))
        }
        // The matched children are the range's first keys; fewer keys than
        // that is a range that changed under the walk.
        guard count >= matched else {
            throw StorageError(
                .corrupt, txn.operation, path: txn.environment.path,
                message: "the range of a parent holds \(count) children where \(matched) were just matched")
        }
        for index in 0..<matched { kept[index] = true }
        next = matched
    }

    /// Adds the next stored key (in key order).
    func append(_ key: UnsafeRawBufferPointer) {
        if byteCount + key.count > byteCapacity {
            var larger = byteCapacity * 2
            while larger < byteCount + key.count { larger *= 2 }
            let grown = UnsafeMutableRawPointer.allocate(byteCount: larger, alignment: 8)
            grown.copyMemory(from: bytes, byteCount: byteCount)
            bytes.deallocate()
            bytes = grown
            byteCapacity = larger
        }
        if count == keyCapacity {
            let larger = keyCapacity * 2
            let grownEnds = UnsafeMutablePointer<Int>.allocate(capacity: larger)
            grownEnds.moveInitialize(from: ends, count: count)
            ends.deallocate()
            ends = grownEnds
            let grownKept = UnsafeMutablePointer<Bool>.allocate(capacity: larger)
            grownKept.moveInitialize(from: kept, count: count)
            kept.deallocate()
            kept = grownKept
            keyCapacity = larger
        }
        if let source = key.baseAddress, !key.isEmpty {
            (bytes + byteCount).copyMemory(from: source, byteCount: key.count)
        }
        byteCount += key.count
        (ends + count).initialize(to: byteCount)
        (kept + count).initialize(to: false)
        count += 1
    }

    /// Whether `pk` is among the listed keys; if so, it is kept. Children
    /// usually come in key order, so the key after the last one found is
    /// tried first, then a binary search.
    private func take(_ pk: [UInt8]) -> Bool {
        pk.withUnsafeBytes { pk in
            if next < count, compare(next, pk) == 0 {
                kept[next] = true
                next += 1
                return true
            }
            var low = 0
            var high = count
            while low < high {
                let middle = (low + high) / 2
                let order = compare(middle, pk)
                if order == 0 {
                    kept[middle] = true
                    next = middle + 1
                    return true
                }
                if order < 0 { low = middle + 1 } else { high = middle }
            }
            return false
        }
    }

    /// The stored keys under the parent that no child written kept (to be
    /// erased): when every child was matched at the cursor, one more step
    /// tells whether stored keys follow the last match, listed then.
    func unkept(in txn: borrowing Transaction, codecs: Codecs) throws -> [[UInt8]] {
        // The walk ends here: the parent's key buffer is let go.
        defer { parentKey = [] }
        if matching {
            let step = try codecs.mainWriter.step(to: [], prefix: parentKey, first: matched == 0, in: txn)
            guard step != .pastRange else {
                matching = false
                return []
            }
            try list(in: txn, codecs: codecs, rangeHoldsMore: true)
        }
        return listedUnkept
    }

    /// The listed keys no call to ``take(_:)`` kept.
    private var listedUnkept: [[UInt8]] {
        var keys: [[UInt8]] = []
        for index in 0..<count where !kept[index] {
            let start = index == 0 ? 0 : ends[index - 1]
            keys.append(Array(UnsafeRawBufferPointer(start: bytes + start, count: ends[index] - start)))
        }
        return keys
    }

    /// Key `index` compared with `pk` bytewise, as LMDB orders keys: < 0,
    /// 0 or > 0.
    @inline(__always)
    private func compare(_ index: Int, _ pk: UnsafeRawBufferPointer) -> Int {
        let start = index == 0 ? 0 : ends[index - 1]
        let length = ends[index] - start
        let common = min(length, pk.count)
        if common > 0, let other = pk.baseAddress {
            let order = memcmp(bytes + start, other, common)
            if order != 0 { return Int(order) }
        }
        return length - pk.count
    }
}
