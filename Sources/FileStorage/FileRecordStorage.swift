import DAOCore
import Foundation

/// The ``Storage`` of one record type in a ``FileStore``.
///
/// Reads are answered from memory: a primary-key lookup is a dictionary lookup,
/// a query narrows its candidates by the primary key or an indexed field its
/// predicate fixes (a foreign key, the leading field of a declared index), then
/// evaluates the predicate in memory. Writes change the in-memory tables and
/// rewrite the documents of the entities they touched, in one atomic commit.
public struct FileRecordStorage<R: Record>: Storage {
    public typealias Record = R

    let store: FileStore

    /// The store's broadcaster.
    public var commits: CommitBroadcaster? { store.commits }
    /// The store's threads for `async` calls (``FileStore/executor``).
    public var executor: StoreExecutor { store.executor }

    public func persist(_ records: [R]) throws {
        try store.write(.persist, R.entity.name) { state in
            try state.persist(records, checkOwner: true)
        }
        store.commits.didCommit(.persisted(records))
    }

    public func read(primaryKey key: R.PrimaryKey) throws -> R? {
        // The record comes out through a variable and the closure returns
        // nothing: `Optional.map` with `attachChildren` went through three
        // reabstraction thunks, and a closure returning `R?` looked up the
        // optional's metadata.
        var found: R?
        try store.read(.read, R.entity.name) { state in
            let table = try state.readTable(R.self)
            guard let record = table.record(key.storedValue) else { return }
            found = try state.attachChildren(record)
        }
        return found
    }

    public func read(primaryKeys keys: [R.PrimaryKey]) throws -> [R] {
        try store.read(.read, R.entity.name) { state in
            let table = try state.readTable(R.self)
            var records: [R] = []
            records.reserveCapacity(keys.count)
            for key in keys {
                if let record = table.record(key.storedValue) { records.append(try state.attachChildren(record)) }
            }
            return records
        }
    }

    public func read(_ query: Query<R>) throws -> [R] {
        try store.read(.read, R.entity.name) { state in
            try query.validate()
            let table = try state.readTable(R.self)
            let plan = QueryPlan(query)
            // The candidates are filtered as they are collected, and found in
            // the key order (ascending or descending) that gave the asked
            // order at the last call of this shape: a dialog's messages by
            // date, newest first, come from their keys in descending order,
            // and need no reversing then.
            let descending = plan.prefersDescendingCandidates
            let candidates = try state.candidates(
                in: table, for: plan, filtering: !(plan.accessIsExact && table.walksExactly(plan)), descending: descending)
            // The sort keys read by position where the record allows it,
            // else through the fields' key paths.
            let matches =
                if let keys = try table.sortKeys(of: candidates, for: plan.sort) {
                    try plan.finish(candidates, sortKeys: keys, filtered: true, descending: descending)
                } else {
                    try plan.finish(candidates, filtered: true, descending: descending)
                }
            // Records without relations are complete as stored.
            return plan.needsCompleteRecords || !table.hasRelations ? matches : try matches.map(state.attachChildren)
        }
    }

    /// The records that answer one call of a prepared query, as
    /// ``read(_:)-(Query<R>)`` answers its query. When the prepared query
    /// keeps a template for the call's values whose access path, with the
    /// equalities the path does not bind, is the whole predicate (the
    /// workload's query: a dialog's messages, unread), the call is answered
    /// from the bound plan (``PreparedQueryCall/boundPlan()``): no predicate,
    /// query or `QueryPlan` is made for it, and the candidates are tested
    /// where they are stored by one matcher kept with the template
    /// (`BoundReads`). Any other call reads its query.
    ///
    /// - Throws: ``StorageError``.
    public func read(_ call: PreparedQueryCall<R>) throws -> [R] {
        guard let bound = call.boundPlan(), !bound.sort.readsOpaqueValues else { return try read(call.query) }
        // The records come out through variables and the closure returns
        // nothing: a closure returning `[R]?` looked up the metadata of the
        // array and of its optional on every call.
        var records: [R] = []
        var answered = false
        try store.read(.read, R.entity.name) { state in
            let table = try state.readTable(R.self)
            answered = try table.answer(bound, into: &records)
            // Records without relations are complete as stored.
            if answered && table.hasRelations {
                for index in records.indices { records[index] = try state.attachChildren(records[index]) }
            }
        }
        return answered ? records : try read(call.query)
    }

    public func count(where predicate: Predicate<R>?) throws -> Int {
        try store.read(.count, R.entity.name) { state in
            let table = try state.readTable(R.self)
            guard predicate != nil else { return table.recordCount }
            let plan = QueryPlan(Query(where: predicate))
            return try plan.count(state.candidates(in: table, for: plan), filtered: plan.accessIsExact && table.walksExactly(plan))
        }
    }

    @discardableResult
    public func erase(primaryKeys keys: [R.PrimaryKey]) throws -> Int {
        let erased = try store.write(.erase, R.entity.name) { state in
            let table = try state.table(R.self)
            var erased = 0
            for key in keys where try state.erase(key.storedValue, from: table) {
                erased += 1
            }
            return erased
        }
        if erased > 0 { store.commits.didCommit(.erased(R.self, primaryKeys: keys)) }
        return erased
    }

    @discardableResult
    public func erase(where predicate: Predicate<R>?) throws -> Int {
        let erased = try store.write(.erase, R.entity.name) { state in
            let table = try state.table(R.self)
            guard predicate != nil else { return try state.eraseAll(from: table) }
            let plan = QueryPlan(Query(where: predicate))
            var erased = 0
            for record in try state.candidates(in: table, for: plan) where try plan.matches(record) {
                if try state.erase(record.primaryKey.storedValue, from: table) { erased += 1 }
            }
            return erased
        }
        if erased > 0 { store.commits.didCommit(.erased(R.self)) }
        return erased
    }
}
