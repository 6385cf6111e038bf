import CLMDB
import DAOCore

extension EntityTable {
    /// Checks every stored record of the entity against its own bytes and the
    /// entity's other databases, and returns how many there are.
    ///
    /// For each record: its value decodes and its checksum holds; its storage
    /// key is its primary key (a top-level record) or its foreign key (the
    /// parent's primary key) followed by its primary key, and that parent is
    /// stored (a child); its `#id` lookup names it. Then every
    /// index holds exactly one entry per record, the one its fields give.
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` naming the first inconsistency.
    func verify(in txn: borrowing Transaction, codecs: Codecs) throws -> Int {
        let decoder = codecs.decoder
        let link = codecs.link
        var count = 0
        // The indexes the parent's range serves have no entries to check.
        let storedIndexes = codecs.storedIndexes
        let storedNames = indexes.filter { $0.dbi != nil && !isServedByParent($0, link: link) }.map(\.index.name)
        var expectedIndexEntries = [Set<[UInt8]>](repeating: [], count: storedIndexes.count)
        try txn.scan(main, prefix: []) { key, value in
            let storageKey = [UInt8](key)
            try decoder.load(value)
            var pk: [UInt8] = []
            KeyCodec.append(untagged: try decoder.value(at: 0), to: &pk)
            if let link {
                guard storageKey.count > pk.count, storageKey.suffix(pk.count).elementsEqual(pk) else {
                    throw inconsistent("a record's key does not end with its primary key")
                }
                var foreignKey: [UInt8] = []
                KeyCodec.append(untagged: try decoder.value(at: link.foreignKeyIndex), to: &foreignKey)
                // Children are keyed under their parent's primary key; the parent
                // is found by it directly, or through its '#id' lookup when it is
                // a child itself.
                let parentStorageKey =
                    try link.parentById.map {
                        try IdRuns.storageKey(of: foreignKey, ids: $0, main: link.parentMain, in: txn)
                    } ?? foreignKey
                guard storageKey.prefix(storageKey.count - pk.count).elementsEqual(foreignKey),
                    let parentStorageKey, try lookup(link.parentMain, parentStorageKey, in: txn) != nil
                else {
                    throw inconsistent("a record is not stored under the '\(link.parent)' record its foreign key names")
                }
                guard try IdRuns.storageKey(of: pk, ids: byId, main: main, in: txn) == storageKey else {
                    throw inconsistent("a record's '#id' lookup does not name it")
                }
            } else if storageKey != pk {
                throw inconsistent("a record's key is not its primary key")
            }
            for position in storedIndexes.indices {
                // The entry as one byte string: index key, storage key, then the
                // storage key's length, so two different entries never match.
                var entry = try indexKey(storedIndexes[position].fields, decoder.value(at:))
                entry += storageKey
                entry += withUnsafeBytes(of: UInt32(storageKey.count).bigEndian) { [UInt8]($0) }
                expectedIndexEntries[position].insert(entry)
            }
            count += 1
            return true
        }
        if link != nil { try verifyRuns(records: count, in: txn) }
        for position in storedIndexes.indices {
            let index = storedIndexes[position]
            let name = storedNames[position]
            let entries = try txn.entryCount(index.dbi)
            guard entries == count else {
                throw inconsistent("index '\(name)' has \(entries) entries for \(count) records")
            }
            try txn.scan(index.dbi, prefix: []) { key, value in
                var entry = [UInt8](key)
                entry += value
                entry += withUnsafeBytes(of: UInt32(value.count).bigEndian) { [UInt8]($0) }
                guard expectedIndexEntries[position].contains(entry) else {
                    throw inconsistent("index '\(name)' has an entry no record gives")
                }
                return true
            }
        }
        return count
    }

    /// Checks the runs of the `#id` database (``IdRun``) beyond what finding
    /// each record through them checked: each run's first and last keys are
    /// children of its parent, in order, and each run starts after the one
    /// before ends, so no run is stale and none overlaps another; and there
    /// are no more runs than records.
    private func verifyRuns(records: Int, in txn: borrowing Transaction) throws {
        var previousLast: [UInt8]?
        var runs = 0
        var malformed = false
        var runsToCheck: [IdRun] = []
        try txn.scan(byId, prefix: []) { key, value in
            guard let run = IdRun(key: key, value: value) else {
                malformed = true
                return false
            }
            runsToCheck.append(run)
            return true
        }
        if malformed { throw inconsistent("an '#id' entry is not a run of child keys") }
        for run in runsToCheck {
            runs += 1
            guard compareKeys(run.first, run.last) <= 0 else {
                throw inconsistent("an '#id' run ends before it starts")
            }
            if let previousLast, compareKeys(run.first, previousLast) <= 0 {
                throw inconsistent("two '#id' runs overlap")
            }
            guard try txn.contains(main, run.parent + run.first), try txn.contains(main, run.parent + run.last) else {
                throw inconsistent("an '#id' run does not start and end with children of its parent")
            }
            previousLast = run.last
        }
        guard runs <= records else {
            throw inconsistent("the '#id' database has \(runs) runs for \(records) records")
        }
    }

    /// A copy of the value stored under exactly `key`, or `nil`.
    private func lookup(_ dbi: MDB_dbi, _ key: [UInt8], in txn: borrowing Transaction) throws -> [UInt8]? {
        var found: [UInt8]?
        // The exact key sorts first among the keys it prefixes.
        try txn.scan(dbi, prefix: key) { stored, value in
            if stored.count == key.count { found = [UInt8](value) }
            return false
        }
        return found
    }

    private func inconsistent(_ message: String) -> StorageError {
        StorageError(.corrupt, .read, entity: entity.name, path: environment.path, message: "verify: \(message)")
    }
}
