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
        /// The parent with this primary key is being persisted, and the
        /// caller read which children it held (`nil`: none).
        case persisting(primaryKey: StoredValue, stored: LentChildren?)
    }

    /// The stored children of a parent being persisted, held without a
    /// reference count: the codecs of the call own them, and the context
    /// that lends them lives only during the parent's children's writes
    /// (a strong reference was retained and released per child). Called
    /// through `_withUnsafeGuaranteedRef`: an `unowned(unsafe)` reference
    /// was still retained and released around each call of `take`, two
    /// atomic operations per child (docs/DESIGN.md, "LMDB, tenth round").
    struct LentChildren {
        let children: Unmanaged<StoredChildren>

        init(children: StoredChildren) {
            self.children = Unmanaged.passUnretained(children)
        }

        /// ``StoredChildren/take(_:)`` on the lent children.
        @inline(__always)
        func take(_ pk: [UInt8]) -> Bool {
            children._withUnsafeGuaranteedRef { $0.take(pk) }
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
    /// few instructions but about 5% of `update`'s time (docs/DESIGN.md,
    /// "LMDB, tenth round").
    func persist(
        _ record: UnsafePointer<R>, in txn: borrowing Transaction, codecs: Codecs, parent: ParentContext = .unknown,
        writeFields: FieldsWriter<R>
    ) throws {
        let encoder = codecs.encoder
        if writesFieldwise {
            try encoder.encodeFields { try writeFields(record, &$0) }
        } else {
            try encoder.encode(record.pointee)
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
                storedHere = stored?.take(pk) ?? false
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
        if storedAtKey {
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
            let primaryKey = encoder.value(at: 0)
            for position in relations.indices {
                try relations[position].replaceChildren(
                    of: record.pointee, primaryKey: primaryKey, parentKey: pk, in: txn,
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
        // `hasRelations` first; `childErasers`, not `relations`, whose
        // metadata is looked up at each use.
        if hasRelations {
            let erasers = childErasers
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
            var code: Int32 = parentKey.withUnsafeBytes { prefix in
                if prefix.isEmpty { return mdb_cursor_get(cursor, &k, &v, MDB_FIRST) }
                k.mv_size = prefix.count
                k.mv_data = UnsafeMutableRawPointer(mutating: prefix.baseAddress)
                return mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
            }
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
            let erasers = childErasers
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

/// The primary-key bytes of the children stored under one parent, in key
/// order (one cursor range), and which of them the parent still holds.
///
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

    var isEmpty: Bool { count == 0 }

    /// Forgets every key, keeping the memory (one instance serves every
    /// parent of a call).
    func reset() {
        byteCount = 0
        count = 0
        next = 0
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

    /// Whether `pk` is stored under the parent; if so, it is kept. Children
    /// usually come in key order, so the key after the last one found is
    /// tried first, then a binary search.
    func take(_ pk: [UInt8]) -> Bool {
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

    /// The stored keys no call to ``take(_:)`` kept.
    var unkept: [[UInt8]] {
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
