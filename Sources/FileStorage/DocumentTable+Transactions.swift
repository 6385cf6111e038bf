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

    func didWrite(full: Bool) {
        if full {
            sinceBase = []
        } else if let changed {
            sinceBase.formUnion(changed)
        }
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
