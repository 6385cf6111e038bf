import DAOCore

// The transaction under way: the undo log a rollback replays, and the keys
// the commit's delta will hold.
extension DocumentTable {
    func begin() {
        inTransaction = true
        undo = []
        remembered = []
        hasSaved = state.count == 0
        saved = hasSaved ? state : nil
        isDirty = false
        // An empty table's next document is written whole: nothing to track.
        changed = state.count == 0 && sinceBase.isEmpty ? nil : []
    }

    /// Says that the transaction under way is about to write `count` records:
    /// when that is at least half the table and nothing has changed yet, the
    /// whole state is saved for a rollback instead of each record's value
    /// before. The saved state shares its storage with the table's until the
    /// first change, which then copies the records and indexes once: far
    /// less than a set insert and an array append per record for a
    /// transaction that rewrites most of the table (an update of everything),
    /// and never paid by a small one.
    func expectWrites(_ count: Int) {
        // Into an empty table: the arrays and the map are allocated once,
        // not grown (and the map rehashed) at every doubling.
        if state.records.isEmpty && count > 0 {
            state.records.reserveCapacity(count)
            state.keys.reserveCapacity(count)
            state.live.reserveCapacity(count)
            state.positions.reserveCapacity(count)
        }
        guard inTransaction, !hasSaved, undo.isEmpty, count * 2 >= state.count else { return }
        saved = state
        hasSaved = true
        // Writes past half the table: the commit will write the whole
        // document (``track(_:)`` stops at the same bound), so the keys are
        // not collected on the way there (a set insert per record, 4.4M of
        // a json `update` of 10,000 messages). Only a call that writes the
        // same keys many times over gets a whole document where a delta
        // would have done: the same records either way.
        if inTransaction && count > 64 && count * 2 > state.count { changed = nil }
    }

    func commit() {
        inTransaction = false
        saved = nil
        hasSaved = false
        closeHolesIfAsManyAsRecords()
        undo = []
        remembered = []
        isDirty = false
        changed = []
    }

    func rollback() {
        inTransaction = false
        if let saved { state = saved }
        // Each key once, with its value before the transaction: any order will do.
        for (key, old) in undo {
            remove(key)
            if let old { insertUnchecked(old, key: key) }
        }
        // Each record put back leaves a hole where it stood: closed here
        // too, as at a commit, or calls that keep failing (with none
        // committed in between) would grow the array without bound.
        closeHolesIfAsManyAsRecords()
        saved = nil
        hasSaved = false
        undo = []
        remembered = []
        isDirty = false
        changed = []
    }

    /// Notes `old`, the value of the record with `key` before the transaction
    /// under way first changes it, for ``rollback()``.
    func remember(_ key: StoredValue, _ old: R?) {
        guard inTransaction, !hasSaved, remembered.insert(key).inserted else { return }
        undo.append((key, old))
    }

    func keysSinceBase(merging: Bool) -> Set<StoredValue>? {
        guard let changed else { return nil }
        return merging ? sinceBase.union(changed) : changed
    }

    var changedSinceBaseCount: Int { sinceBase.count }

    /// The commit of the transaction whose keys are `changed` wrote the
    /// whole document (`full`) or a delta of those keys.
    private func didWrite(full: Bool, changed: Set<StoredValue>?) {
        if full {
            sinceBase = []
        } else if let changed {
            sinceBase.formUnion(changed)
        }
    }

    func setAside() {
        let redo: SetAsideChanges<R>.Redo
        let inKeyOrder = state.inKeyOrder
        if hasSaved, let before = saved {
            redo = .state(state)
            // The saved state is the only holder of its storage once
            // `saved` lets it go: putting the undo log back copies nothing.
            saved = nil
            state = before
        } else if undo.count * 2 >= state.count {
            // The transaction changed as many records as the table keeps
            // (half of it erased, or more): the state after is kept whole.
            // It shares its storage with the table's until the first record
            // put back below copies the records and indexes once, which
            // costs less than changing each record again when the commit is
            // finished (and putting the records in key order again).
            redo = .state(state)
        } else {
            // Only each changed record is copied: a copy of the state would
            // share its storage, and the first change below would then copy
            // every record and index.
            var records: [(key: StoredValue, new: R?)] = []
            records.reserveCapacity(undo.count)
            for position in 0..<undo.count {
                let key = undo[position].key
                records.append((key, record(key)))
            }
            redo = .records(records)
        }
        setAsideChanges = SetAsideChanges(redo: redo, changed: changed, inKeyOrder: inKeyOrder)
        inTransaction = false
        // Not tracked while the records are put back (``track(_:)``).
        changed = nil
        hasSaved = false
        saved = nil
        // Last change first: the records the transaction appended come off
        // the end of the arrays, and an erased record goes back to its hole.
        for position in stride(from: undo.count - 1, through: 0, by: -1) {
            let (key, old) = undo[position]
            putBack(old, key: key)
        }
        undo = []
        remembered = []
        isDirty = false
        changed = []
    }

    func restoreSetAside(wroteWhole: Bool) {
        guard let changes = setAsideChanges else { return }
        setAsideChanges = nil
        changed = nil
        switch changes.redo {
        case .state(let after):
            state = after
        case .records(let records):
            for position in 0..<records.count {
                putBack(records[position].new, key: records[position].key)
            }
            // A whole document put the records in key order; keep it so
            // for the next one.
            if changes.inKeyOrder && !state.inKeyOrder { compact() }
        }
        didWrite(full: wroteWhole, changed: changes.changed)
        commit()
    }

    func dropSetAside() {
        setAsideChanges = nil
        commit()
    }

    /// Stores `record` under `key` (or erases the record there when `nil`)
    /// outside a transaction, keeping the layout: a record replaced stays
    /// at its position, an erased one goes back to its own hole while the
    /// keys are in order, and holes at the end of the arrays are dropped.
    private func putBack(_ record: R?, key: StoredValue) {
        guard let record else {
            guard remove(key) != nil else { return }
            while let last = state.live.last, !last {
                state.live.removeLast()
                state.keys.removeLast()
                state.records.removeLast()
                state.holes -= 1
            }
            return
        }
        if state.positions[key] == nil, let position = hole(of: key) {
            state.positions[key] = position
            state.live[position] = true
            state.holes -= 1
            state.records[position] = record
            for index in 0..<indexCount {
                state.indexes[index][Self.indexKey(indexedFields[index].value(in: record)), default: []].insert(key)
            }
            if tracksTexts { noteTexts(of: record, mayHoldSuspects: true) }
            isDirty = true
            return
        }
        insertUnchecked(record, key: key)
    }

    /// The position of the hole that held `key`, found by binary search
    /// while the keys (holes included) are in order.
    private func hole(of key: StoredValue) -> Int? {
        guard state.inKeyOrder else { return nil }
        var low = 0
        var high = state.keys.count
        while low < high {
            let middle = (low + high) / 2
            if state.keys[middle] < key { low = middle + 1 } else { high = middle }
        }
        guard low < state.keys.count, state.keys[low] == key, !state.live[low] else { return nil }
        return low
    }

    /// Notes that the record with `key` changed in the transaction under way;
    /// stops tracking once the changes reach half the table, where a delta
    /// would save little over the whole document.
    func track(_ key: StoredValue) {
        guard changed != nil else { return }
        changed?.insert(key)
        if let count = changed?.count, count > 64, count * 2 > state.count {
            changed = nil
        }
    }

    /// Closes the holes once they are as many as the records (and more than
    /// 64), at the end of a commit or a rollback, so that they never take
    /// more than half the array: a table written by deltas only writes no
    /// whole document that would close them.
    private func closeHolesIfAsManyAsRecords() {
        if state.holes > 64 && state.holes >= state.count { compact() }
    }
}
