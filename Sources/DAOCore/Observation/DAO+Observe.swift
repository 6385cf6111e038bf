import Foundation

extension DAO {
    /// The objects whose records meet `predicate`, sorted by `sortedBy` then by
    /// key, at most `limit` of them, as they change: the current results first,
    /// then a snapshot with the changes each time a commit changes them.
    ///
    /// ```swift
    /// let unread = messages.observe(
    ///     where: #Predicate { $0.dialogId == 7 && !$0.isRead },
    ///     sortedBy: [SortDescriptor(\.date, order: .reverse)], limit: 50)
    /// for try await snapshot in unread { … }
    /// ```
    ///
    /// A change to a parent's children is a modification of the parent. See
    /// ``Observation`` for what is guaranteed.
    ///
    /// - Parameter predicate: the records to observe; `nil` for all of them.
    /// - Parameter sortedBy: the order of the results, then primary key.
    /// - Parameter limit: the most results; `nil` for all of them.
    /// - Parameter pollInterval: how often to check for commits made by other
    ///   processes (SQLite, LMDB); `nil` notices only the commits of this store
    ///   instance. The file stores hold their directory exclusively, so no other
    ///   process writes them and they ignore it.
    /// - Returns: a sequence that throws ``StorageError`` when the storage
    ///   cannot be observed (its store reports no commits) or a read fails.
    public func observe(
        where predicate: Predicate<Record>? = nil,
        sortedBy: [SortDescriptor<Record>] = [],
        limit: Int? = nil,
        pollInterval: Duration? = nil
    ) -> Observation<PlainObject> {
        observation(of: .query(Query(where: predicate, sortedBy: sortedBy, limit: limit)), pollInterval: pollInterval)
    }

    /// The object with `uniqueId == key` as it changes: snapshots whose results
    /// hold the object, or nothing when there is none. A change to its children
    /// is a modification.
    ///
    /// - Parameter key: the primary key of the object to observe.
    /// - Parameter pollInterval: as for ``observe(where:sortedBy:limit:pollInterval:)``.
    public func observe(primaryKey key: PlainObject.ID, pollInterval: Duration? = nil) -> Observation<PlainObject> {
        observation(of: .key(key), pollInterval: pollInterval)
    }

    private func observation(of request: ObservedRequest<Record>, pollInterval: Duration?) -> Observation<PlainObject> {
        let dao = self
        return Observation {
            guard let broadcaster = dao.storage.commits else {
                return .failure(
                    StorageError(
                        .invalidArgument, .read, entity: Record.entity.name,
                        message: "this storage's store does not report its commits, so it cannot be observed"))
            }
            let rules = ObservationRules<Record>(request: request)
            return .success(
                ObservationCore(
                    broadcaster: broadcaster, pollInterval: pollInterval,
                    fetch: { try dao.fetch(request, rules: rules) },
                    affects: { rules.affects($0, keys: $1, foreignKeys: $2) }))
        }
    }

    private func fetch(
        _ request: ObservedRequest<Record>, rules: ObservationRules<Record>
    ) throws -> ObservationCore<PlainObject>.Fetched {
        let records: [Record]
        switch request {
        case .query(let query): records = try storage.read(query)
        case .key(let key): records = try storage.read(primaryKey: key).map { [$0] } ?? []
        }
        var fetched = ObservationCore<PlainObject>.Fetched(results: [], keys: [], foreignKeys: [])
        fetched.results.reserveCapacity(records.count)
        fetched.keys.reserveCapacity(records.count)
        for record in records {
            fetched.results.append(try toPlain(record))
            fetched.keys.insert(record.primaryKey.storedValue)
            if let field = rules.ownerForeignKey { fetched.foreignKeys.insert(field.value(in: record)) }
        }
        return fetched
    }
}

/// What an observation reads.
enum ObservedRequest<R: Record>: Sendable {
    case query(Query<R>)
    case key(R.PrimaryKey)
}

/// Decides, from what a commit reports, whether it can change an observed
/// request's results. Every answer errs towards `true`: a needless read costs
/// time, a wrong `false` would lose a change.
struct ObservationRules<R: Record>: Sendable {
    let request: ObservedRequest<R>
    /// The entity and those it owns, transitively.
    let subtree: Set<String>
    /// The child's field holding the owner's key, when the entity is owned.
    let ownerForeignKey: Field<R>?
    /// The `field == value` conditions the predicate requires (its top-level
    /// conjunction), checked before the predicate itself: a written record
    /// that fails one cannot match, and the check costs a field read.
    let requiredEqualities: [(field: Field<R>, value: StoredValue)]

    init(request: ObservedRequest<R>) {
        self.request = request
        subtree = R.subtreeEntityNames()
        ownerForeignKey = R.entity.owner
            .flatMap { $0.ownedRelation(for: R.self)?.foreignKeyField }
            .flatMap { R.entity.field(named: $0) }
        if case .query(let query) = request, let predicate = query.predicate {
            requiredEqualities = QueryExpression.translate(predicate).expression.requiredEqualities.compactMap {
                condition in R.entity.field(named: condition.field).map { ($0, condition.value) }
            }
        } else {
            requiredEqualities = []
        }
    }

    /// Whether `record`, as written, could be among the results.
    private func mayMatch(_ record: R) -> Bool {
        switch request {
        case .key(let key):
            return record.primaryKey == key
        case .query(let query):
            for (field, value) in requiredEqualities {
                let stored = field.value(in: record)
                // Only values of one kind are compared here; the predicate
                // decides the rest.
                if stored.isSameKind(as: value), stored != value { return false }
            }
            do {
                return try query.matches(record)
            } catch {
                return true  // the read that follows meets the error and reports it
            }
        }
    }

    func affects(_ resolved: ResolvedChange, keys: Set<StoredValue>, foreignKeys: Set<StoredValue>) -> Bool {
        guard let payload = resolved.change.payload, let changedSubtree = resolved.subtree else { return true }
        let name = R.entity.name
        if payload.entityName == name {
            // The observed entity itself: a record leaves, enters or changes
            // in the results only if it is among them or now matches.
            switch resolved.effects.effect(of: payload, on: R.self) {
            case .unknown:
                return true
            case .erased(let erased):
                return !erased.isDisjoint(with: keys)
            case .written(let written, let records):
                return !written.isDisjoint(with: keys) || records.contains(where: mayMatch)
            }
        }
        if let child = resolved.effects.childEffect(of: payload, on: R.self) {
            // The owner changed: its children (the observed records) were
            // replaced or erased with it.
            guard let ownerForeignKey, ownerForeignKey.name == child.foreignKey else { return true }
            switch child.effect {
            case .unknown:
                return true
            case .erased(let parents):
                return !parents.isDisjoint(with: foreignKeys)
            case .replaced(let parents, let childKeys, let children):
                // A child may also have moved here from a parent in the results.
                if !parents.isDisjoint(with: foreignKeys) || !childKeys.isDisjoint(with: keys) { return true }
                // Every child written names one of `parents`; a predicate that
                // requires another parent accepts none of them.
                if let required = requiredEqualities.first(where: { $0.field.name == child.foreignKey }),
                    parents.allSatisfy({ $0.isSameKind(as: required.value) && $0 != required.value })
                {
                    return false
                }
                return children.contains(where: mayMatch)
            }
        }
        if changedSubtree.contains(name) {
            return true  // a cascade from further up reaches the observed entity
        }
        if subtree.contains(payload.entityName) {
            // Children changed: their parents are modified. Which parents is
            // not known (a child written under a new parent also left its old
            // one), so the results are read again.
            return true
        }
        return false
    }
}

extension StoredValue {
    /// Whether both values are of the same case (both integers, both text, …).
    fileprivate func isSameKind(as other: StoredValue) -> Bool {
        switch (self, other) {
        case (.null, .null), (.integer, .integer), (.real, .real), (.text, .text), (.blob, .blob): true
        default: false
        }
    }
}
