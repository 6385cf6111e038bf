/// A prepared call's access path read value by value (``BoundSlots``), for
/// an adapter of this package that walks the path itself and derives, once
/// per template, how (LMDB: a parent's range and the filter on its
/// children): the values ``PreparedQueryCall/boundPlan()`` binds into a
/// ``BoundPlan``, without the plan, its access path and its other
/// equalities made for each call (three allocations and about 1.7k
/// instructions a call, with the plan's release).
extension BoundSlots {
    /// How many values the template's access path binds: none for every
    /// record, one for a primary key or a parent, the leading fields' for
    /// an index.
    package var accessValueCount: Int {
        switch entry.access {
        case .all: 0
        case .primaryKey, .parent: 1
        case .index(_, let values): values.count
        }
    }

    /// The `position`th value of the access path, coerced to its field as
    /// ``BoundPlan/access`` holds it; `nil` when it does not coerce (the
    /// call reads its plan or its query then) or there is no such value.
    package func accessValue(_ position: Int) -> StoredValue? {
        switch entry.access {
        case .all:
            return nil
        case .primaryKey(let value), .parent(let value):
            guard position == 0 else { return nil }
            return value.value { constant($0) }
        case .index(_, let values):
            guard position >= 0, position < values.count else { return nil }
            return values[position].value { constant($0) }
        }
    }

    /// How many other equalities the template has (``BoundPlan/otherEqualities``);
    /// `nil` when it has none.
    package var otherEqualityCount: Int? { entry.otherEqualities?.count }

    /// The value of the `position`th other equality, coerced to its field
    /// as ``BoundPlan/otherEqualities`` holds it; `nil` when it does not
    /// coerce or there is no such equality.
    package func otherEqualityValue(_ position: Int) -> StoredValue? {
        guard let others = entry.otherEqualities, position >= 0, position < others.count else { return nil }
        return others[position].value.value { constant($0) }
    }
}

extension PlanTemplate {
    /// Whether the records the access path finds are exactly the answer's
    /// (``BoundPlan/accessIsExact``).
    package var isAccessExact: Bool { accessIsExact }

    /// As ``BoundPlan/prefersDescendingCandidates``.
    package var prefersDescendingCandidates: Bool { descendingCandidates.load(ordering: .relaxed) }

    /// The answer of a call bound from this template limited to `limit`,
    /// from `candidates` (exactly the records that meet the predicate)
    /// with their sort keys in ordered form: as
    /// ``BoundPlan/finish(_:orderedKeys:descending:)``.
    /// The keys are read where the adapter holds them, not copied into an
    /// array (an allocation and a copy a call).
    package func finishCall(
        _ candidates: [R], orderedKeys: UnsafeBufferPointer<UInt64>, limit: Int?, descending: Bool
    ) -> [R] {
        QueryPlan<R>.finishMatched(
            candidates, orderedKeys: orderedKeys, sort: sort, limit: limit, template: self, descending: descending)
    }

    /// Whether a call's candidates can be put in order by sort keys in
    /// ordered form `width` wide (``answerOrder(orderedKeys:count:descending:)``):
    /// the sort compares stored values, one column per field and one for
    /// the primary key.
    package func ordersByKeys(width: Int) -> Bool { sort.ascendingKeys?.count == width }

    /// The order in which `count` candidates of a call bound from this
    /// template, exactly the records that meet its predicate, read in
    /// descending key order or not (`descending`), answer it: their sort
    /// keys in ordered form, a row per candidate, put in order as
    /// ``finishCall(_:orderedKeys:limit:descending:)`` puts the candidates
    /// (sort fields, then primary key ascending), and learnt from as it
    /// learns. For an adapter that hands out each candidate where it lies
    /// (a view) rather than an array of records; keys of another width
    /// than ``ordersByKeys(width:)`` allows leave them as read.
    package func answerOrder(orderedKeys keys: UnsafeBufferPointer<UInt64>, count: Int, descending: Bool)
        -> AnswerOrder
    {
        guard count > 1, let ascending = sort.ascendingKeys, keys.count == ascending.count * count else {
            return .asRead
        }
        let order = SortKeyRows.order(of: keys, width: ascending.count, ascending: ascending)
        learn(order, readDescending: descending)
        switch order {
        case .ascending: return .asRead
        case .descending: return .reversed
        case .neither: return .positions(SortKeyRows.sortedPositions(keys, width: ascending.count, ascending: ascending))
        }
    }

    /// As ``finishCall(_:orderedKeys:limit:descending:)`` with the sort keys
    /// as stored values: ``BoundPlan/finish(_:sortKeys:descending:)``.
    package func finishCall(_ candidates: [R], sortKeys: [StoredValue], limit: Int?, descending: Bool) -> [R] {
        QueryPlan<R>.finishMatched(
            candidates, keys: sortKeys, sort: sort, limit: limit, template: self, descending: descending)
    }

    /// As ``finishCall(_:orderedKeys:limit:descending:)`` without sort keys:
    /// ``BoundPlan/finish(_:)``.
    package func finishCall(_ candidates: [R], limit: Int?) -> [R] {
        var records = sort.sorted(candidates)
        if let limit, records.count > limit { records.removeSubrange(limit...) }
        return records
    }
}

extension BoundSlots {
    /// The plan ``PreparedQueryCall/boundPlan()`` binds for this call, from
    /// `template` (``template``): `nil` when a value of the access path does
    /// not coerce to its field.
    package func boundPlan<R: Record>(_ template: PlanTemplate<R>) -> BoundPlan<R>? {
        guard let access = entry.access(with: values) else { return nil }
        return template.boundPlanType.init(
            template: template, access: access, otherEqualities: entry.otherEqualities(with: values), limit: limit)
    }
}

/// The order of a call's candidates in its answer
/// (``PlanTemplate/answerOrder(orderedKeys:count:descending:)``).
package enum AnswerOrder {
    /// The order they were read in.
    case asRead
    /// The reverse of it.
    case reversed
    /// The candidates at these positions, in turn.
    case positions([Int])

    /// The position among the `count` candidates of the `rank`th of the answer.
    @inline(__always)
    package func position(_ rank: Int, of count: Int) -> Int {
        switch self {
        case .asRead: rank
        case .reversed: count - 1 - rank
        case .positions(let positions): positions[rank]
        }
    }
}
