import DAOCore

// Inserting, replacing and removing records, with their indexes, undo log
// entries and tracked texts.
extension DocumentTable {
    /// Erases every record at once (and what a rollback needs stays in the
    /// saved state): the commit writes an empty document.
    func removeAll() {
        guard state.count > 0 || !sinceBase.isEmpty else { return }
        if inTransaction && !hasSaved {
            saved = state
            hasSaved = true
        }
        state = DocumentTableState()
        state.indexes = Array(repeating: [:], count: indexedFields.count)
        changed = nil
        isDirty = true
    }

    /// Inserts or replaces `record` (relations already emptied).
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``
    ///   when the document is a property list and already holds a text that
    ///   is canonically equivalent to one of the record's but spelled with other
    ///   Unicode scalars; nothing changes then.
    func insert(_ record: R, key: StoredValue) throws {
        var mayHoldSuspects = true
        if tracksTexts { mayHoldSuspects = try checkSpellings(of: record, key: key) }
        insertUnchecked(record, key: key, mayHoldSuspects: mayHoldSuspects)
    }

    /// Inserts or replaces the children `records` of one parent, stored
    /// under `keys`, each holding `parentKey` in the field `foreignKey`
    /// (checked by the caller), as ``insert(_:key:)`` would one by one.
    ///
    /// One call for all the children of a parent: this code runs
    /// unspecialized, and each call of a generic method asks the runtime for
    /// the metadata of the types it uses (the records' dictionary, an
    /// optional record, a field); in one loop they are looked up once.
    ///
    /// `heldByParent` says that every key of `keys` is already stored, held
    /// by the same parent: the foreign key of the record each replaces is
    /// `parentKey` too, and is not read again.
    ///
    /// - Throws: what ``insert(_:key:)`` throws; the records before the one
    ///   refused stay inserted (the transaction rolls back).
    func insert(
        children records: [R], keys: [StoredValue], foreignKey: String, parentKey: StoredValue, heldByParent: Bool
    ) throws {
        let foreignKeyPosition = indexedNames.firstIndex(of: foreignKey) ?? -1
        let checksSpellings = tracksTexts
        // The keys to add under `parentKey` in the foreign key's index, added
        // in one access at the end (also when a record is refused: the
        // records before it are inserted, and a rollback removes them through
        // the index): one dictionary lookup and no rehashing as the set grows,
        // instead of a lookup and a set insert per child.
        var pending: [StoredValue] = []
        defer {
            if !pending.isEmpty { addToIndex(foreignKeyPosition, parentKey, pending) }
        }
        // While the table holds no text that may not be in NFC, whether each
        // record holds one, tested in one loop: ``checkSpellings(of:key:)``
        // tests the same first, and a record that holds none is accepted
        // then. Per call, the runtime was asked for the metadata of a field
        // and an optional (650 instructions a record).
        if !checksSpellings && appendsInOrder(keys) {
            appendNew(records, keys: keys, knownValue: parentKey, at: foreignKeyPosition, pending: &pending)
            return
        }
        let holdsSuspects = checksSpellings && state.suspects.isEmpty ? holdSuspects(records) : []
        for position in 0..<records.count {
            let record = records[position]
            var mayHoldSuspects = true
            if checksSpellings {
                if position < holdsSuspects.count && !holdsSuspects[position] && state.suspects.isEmpty {
                    mayHoldSuspects = false
                } else {
                    mayHoldSuspects = try checkSpellings(of: record, key: keys[position])
                }
            }
            let addsKey = insertUnchecked(
                record, key: keys[position], mayHoldSuspects: mayHoldSuspects, knownValue: parentKey,
                at: foreignKeyPosition, knownBefore: heldByParent, defersKnown: foreignKeyPosition >= 0)
            if addsKey { pending.append(keys[position]) }
        }
    }

    /// Whether `keys` are strictly increasing and all after the table's last
    /// key while its records are in key order: then none of them is stored.
    private func appendsInOrder(_ keys: [StoredValue]) -> Bool {
        guard !keys.isEmpty, state.inKeyOrder else { return false }
        if let last = state.keys.last, !(last < keys[0]) { return false }
        for position in 1..<keys.count where !(keys[position - 1] < keys[position]) {
            return false
        }
        return true
    }

    /// Inserts `records`, none of them stored (``appendsInOrder(_:)``), as
    /// ``insertUnchecked(_:key:mayHoldSuspects:knownValue:at:knownBefore:defersKnown:)``
    /// would one by one with `defersKnown` (their keys go to `pending` for
    /// the index at `knownPosition`), for a table that tracks no texts. The
    /// records are appended in one call: appending one at a time, in code
    /// unspecialized for the record type, asked the runtime for the array's
    /// metadata per record (3.3M of a json `persist` of 10,000 messages).
    private func appendNew(
        _ records: [R], keys: [StoredValue], knownValue: StoredValue, at knownPosition: Int, pending: inout [StoredValue]
    ) {
        let remembers = inTransaction && !hasSaved
        var position = state.keys.count
        for index in 0..<keys.count {
            let key = keys[index]
            state.positions[key] = position
            position += 1
            if remembers { remember(key, nil) }
            track(key)
            for indexPosition in 0..<indexCount {
                if indexPosition == knownPosition {
                    pending.append(key)
                } else {
                    state.indexes[indexPosition][Self.indexKey(indexedFields[indexPosition].value(in: records[index])), default: []]
                        .insert(key)
                }
            }
        }
        state.keys.append(contentsOf: keys)
        state.live.append(contentsOf: repeatElement(true, count: keys.count))
        state.records.append(contentsOf: records)
        isDirty = true
    }

    /// Inserts or replaces `record`, stored under `key` (its primary key's
    /// stored value, computed when `nil`). `mayHoldSuspects: false` says that
    /// none of its texts may change under NFC (``CanonicalText/isSuspect(_:)``),
    /// known already from ``checkSpellings(of:key:)``.
    ///
    /// `knownValue` is the value of the indexed field at `knownPosition` (in
    /// ``indexedFields``) in `record`, known already (a child's foreign key);
    /// -1 when none is. `knownBefore` says that the record replaced, if any,
    /// holds `knownValue` there too. With `defersKnown`, the key is not
    /// added to the entry of `knownValue` in the index at `knownPosition`;
    /// the result says whether the caller must add it.
    @inline(__always)
    @discardableResult
    func insertUnchecked(
        _ record: R, key: StoredValue? = nil, mayHoldSuspects: Bool = true, knownValue: StoredValue = .null,
        at knownPosition: Int = -1, knownBefore: Bool = false, defersKnown: Bool = false
    ) -> Bool {
        let key = key ?? record.primaryKey.storedValue
        // Whether the record replaced is needed: for an index other than
        // the one whose value before is known, or for its texts, or for a
        // rollback. (Binding it copies the record, through the runtime's
        // value witnesses.)
        let readsOld = indexCount > (knownBefore && knownPosition >= 0 ? 1 : 0)
            || (tracksTexts && (state.texts != nil || !state.suspects.isEmpty))
        let remembers = inTransaction && !hasSaved
        var replaced = false
        let old = put(record, key: key, keepingOld: readsOld || remembers, replaced: &replaced)
        if remembers { remember(key, old) }
        track(key)
        var addsKnown = false
        if replaced && !readsOld {
            // Replaced, and nothing to update for the record it replaces.
        } else if let old {
            // Only the indexes whose value changed are touched. (Loops over
            // `0..<count` here: this code runs unspecialized, where iterating
            // a generic array asks the runtime for its iterator's metadata.)
            for position in 0..<indexCount where !(knownBefore && position == knownPosition) {
                let field = indexedFields[position]
                let value = position == knownPosition ? knownValue : field.value(in: record)
                let before = field.value(in: old)
                guard value != before else { continue }
                removeFromIndex(position, before, key)
                if defersKnown && position == knownPosition {
                    addsKnown = true
                } else {
                    state.indexes[position][Self.indexKey(value), default: []].insert(key)
                }
            }
            if tracksTexts { forgetTexts(of: old) }
        } else {
            for position in 0..<indexCount {
                if position == knownPosition {
                    if defersKnown {
                        addsKnown = true
                    } else {
                        state.indexes[position][Self.indexKey(knownValue), default: []].insert(key)
                    }
                } else {
                    state.indexes[position][Self.indexKey(indexedFields[position].value(in: record)), default: []].insert(key)
                }
            }
        }
        if tracksTexts { noteTexts(of: record, mayHoldSuspects: mayHoldSuspects) }
        isDirty = true
        return addsKnown
    }

    /// Stores `record` under `key`, in place of the record stored there or
    /// after the others; sets `replaced` and, with `keepingOld`, returns the
    /// record replaced.
    @inline(__always)
    private func put(_ record: R, key: StoredValue, keepingOld: Bool, replaced: inout Bool) -> R? {
        let count = state.keys.count
        // A key after the last of keys in order is new: no look-up.
        if count > 0 && !(state.inKeyOrder && state.keys[count - 1] < key) {
            if let position = state.positions[key] {
                replaced = true
                let old = keepingOld ? state.records[position] : nil
                state.records[position] = record
                return old
            }
            state.inKeyOrder = false
        }
        state.positions[key] = count
        state.keys.append(key)
        state.live.append(true)
        state.records.append(record)
        return nil
    }

    /// Removes the record with `key`; returns it if there was one.
    @discardableResult
    func remove(_ key: StoredValue) -> R? {
        guard let position = state.positions.removeValue(forKey: key) else { return nil }
        let old = state.records[position]
        state.live[position] = false
        state.holes += 1
        remember(key, old)
        for position in 0..<indexedFields.count {
            removeFromIndex(position, indexedFields[position].value(in: old), key)
        }
        if tracksTexts { forgetTexts(of: old) }
        track(key)
        isDirty = true
        return old
    }
}
