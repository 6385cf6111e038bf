import Foundation

/// How a ``Query`` runs, decided once for every adapter: the access path its
/// predicate allows, what an engine may run of it, what remains to evaluate in
/// memory, and how to sort.
///
/// ```swift
/// let plan = QueryPlan(query)
/// switch plan.access {
/// case .primaryKey(let key): …       // one lookup
/// case .index(let index, let values): …  // the index range of these leading values
/// case .parent(let value): …          // the children of one parent
/// case .all: …                        // every record
/// }
/// let answer = try plan.finish(candidates)  // filter, sort, limit
/// ```
///
/// Adapters keep only what is engine-specific: how to walk the access path,
/// how to run ``QueryPlan/engineCondition`` (SQL), how to commit.
/// How a query's candidates are found: ``QueryPlan/access``. Not nested in
/// the generic ``QueryPlan``, so code that is not specialized for the record
/// type handles it without looking up its metadata.
public enum AccessPath: Sendable, Equatable {
    /// Every record of the entity.
    case all
    /// The record with this primary key (of the key's field type).
    case primaryKey(StoredValue)
    /// The records whose leading fields of `index` hold `values`, in order
    /// (at least one value).
    case index(Index, values: [StoredValue])
    /// The children of the parent with this key (the entity is owned through
    /// a relation; the value is the foreign key's).
    case parent(StoredValue)
}

public struct QueryPlan<R: Record>: Sendable {
    /// How the candidates are found (``AccessPath``).
    public typealias Access = AccessPath

    /// The query planned.
    public let query: Query<R>
    /// The access path.
    public let access: Access
    /// The translatable part of the predicate, for an engine that runs
    /// conditions itself (`nil` when there is no predicate). When
    /// ``conditionIsExact`` is false it holds for a superset of the answer.
    ///
    /// A plan bound from a template with ``QueryPlanParts/exactCondition``
    /// left out builds it when it is read (each read builds it again): LMDB,
    /// whose exact access path needs no condition, never reads it.
    public var engineCondition: QueryExpression? {
        if let deferred { return deferred.expression.instantiate(deferred.constants, condition: false)?.expression }
        return builtEngineCondition
    }
    private let builtEngineCondition: QueryExpression?
    /// The template's expression and the constants bound to it, when
    /// ``engineCondition`` is built on reading.
    private let deferred: DeferredExpression<R>?
    /// Whether ``engineCondition`` holds exactly for the records the predicate accepts.
    public let conditionIsExact: Bool
    /// Whether the records the access path finds are exactly the answer's (before
    /// sort and limit), so no record needs evaluating.
    public let accessIsExact: Bool
    /// The whole predicate with the library's semantics (`nil`: every record,
    /// or left out by ``Parts``).
    public let condition: RecordCondition<R>?
    /// The sort: by declared fields' stored values, or by Foundation's descriptors.
    public let sort: SortPlan<R>

    /// What an adapter needs planned beyond the translation and the sort.
    public typealias Parts = QueryPlanParts

    /// The template this plan was bound from (or made), kept for its shape by
    /// the entity's plan cache; `nil` when the query's shape is planned afresh
    /// each time. Adapters keep what they derive from the shape alone (SQL
    /// text) with ``PlanTemplate/memo(_:_:)``.
    public let template: PlanTemplate<R>?
    /// The constants bound to ``template`` for this plan (the predicate's
    /// own, for the plan that made the template); `nil` without a template.
    private let constants: [StoredValue]?

    /// Plans `query`; `parts` leaves out what the adapter does not use (SQLite,
    /// which runs an exact condition as SQL, needs neither part).
    ///
    /// A query whose shape (predicate without its constants, sort descriptors,
    /// whether it has a limit) was planned before is not translated and
    /// planned again: its constants are bound to the plan kept for the shape
    /// (see ``PlanTemplate``), which gives the plan ``init(fresh:parts:)`` gives.
    public init(_ query: Query<R>, parts: Parts = .all) {
        self = R.entity.queryPlans.plan(query, parts: parts)
    }

    init(
        query: Query<R>, access: Access, engineCondition: QueryExpression?, conditionIsExact: Bool,
        accessIsExact: Bool, condition: RecordCondition<R>?, sort: SortPlan<R>, template: PlanTemplate<R>?,
        deferred: DeferredExpression<R>? = nil, constants: [StoredValue]? = nil
    ) {
        self.query = query
        self.access = access
        builtEngineCondition = engineCondition
        self.deferred = deferred
        self.conditionIsExact = conditionIsExact
        self.accessIsExact = accessIsExact
        self.condition = condition
        self.sort = sort
        self.template = template
        self.constants = constants
    }

    /// This plan, kept with `template`, which was made from it and its
    /// predicate's `constants`.
    func with(template: PlanTemplate<R>, constants: [StoredValue]) -> QueryPlan {
        QueryPlan(
            query: query, access: access, engineCondition: builtEngineCondition, conditionIsExact: conditionIsExact,
            accessIsExact: accessIsExact, condition: condition, sort: sort, template: template, deferred: deferred,
            constants: constants)
    }

    /// The values of the template's other equalities
    /// (``PlanTemplate/otherEqualityFields``, the required equalities the
    /// access path does not bind, when the predicate is nothing but
    /// equalities) for this plan's constants, in that order, each coerced
    /// to its field as ``equalities(besides:)`` gives it; `nil` without a
    /// template, when the template has none, or when a value does not
    /// coerce. Bound from the kept template, without walking the condition.
    public var otherEqualityValues: [StoredValue]? {
        guard let template, let others = template.otherEqualities, let constants,
            constants.count == template.slotCount
        else { return nil }
        var values: [StoredValue] = []
        values.reserveCapacity(others.count)
        for other in others {
            guard let value = other.value.value({ constants[$0] }) else { return nil }
            values.append(value)
        }
        return values
    }

    /// Plans `query` from scratch, without the entity's plan cache: translates
    /// the predicate and chooses the access path again.
    public init(fresh query: Query<R>, parts: Parts = .all) {
        self.query = query
        template = nil
        constants = nil
        deferred = nil
        sort = SortPlan(query.sortedBy)
        guard let predicate = query.predicate else {
            access = .all
            builtEngineCondition = nil
            conditionIsExact = true
            accessIsExact = true
            condition = nil
            return
        }
        // An exact translation is the whole predicate: its condition compiles from
        // it without walking the predicate again. Otherwise one walk finds what
        // only Foundation can evaluate.
        var translation = QueryExpression.translate(predicate)
        var condition: RecordCondition<R>?
        if translation.isExact {
            if parts.contains(.exactCondition) { condition = RecordCondition<R>.compile(translation.expression) }
        } else {
            let analysis = QueryExpression.analyze(predicate)
            translation = analysis.translation
            condition = analysis.condition
        }
        self.condition = condition
        builtEngineCondition = translation.expression
        conditionIsExact = translation.isExact
        if parts.contains(.accessPath) {
            let (access, bound) = Self.access(for: translation.expression.requiredEqualities)
            self.access = access
            accessIsExact = Self.isExact(translation, boundFields: bound)
        } else {
            access = .all
            accessIsExact = false
        }
    }

    /// Whether evaluating the predicate or the sort may read the record's
    /// relations (or anything else Foundation evaluates), so candidates must be
    /// complete, with their children, before ``matches(_:)`` and ``finish(_:filtered:)``.
    public var needsCompleteRecords: Bool {
        (condition?.hasOpaqueParts ?? false) || sort.readsOpaqueValues
    }

    /// Whether the candidates need evaluating at all.
    public var needsFiltering: Bool { !accessIsExact }

    /// Whether `record` meets the predicate, with the library's semantics.
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``
    ///   when a part evaluated by Foundation throws.
    @inlinable
    public func matches(_ record: R) throws -> Bool {
        guard let predicate = query.predicate else { return true }
        do {
            // Left out by `parts`: correct, if slow; no adapter gets here.
            let condition = condition ?? QueryExpression.condition(predicate)
            return try condition.evaluate(record)
        } catch {
            throw StorageError(
                .invalidArgument, .read, entity: R.entity.name, message: "the predicate could not be evaluated",
                underlying: error)
        }
    }

    /// The answer from `candidates`: filtered (unless `filtered` says they
    /// all meet the predicate already), sorted, limited.
    ///
    /// - Parameter candidates: the records the access path gave.
    /// - Parameter filtered: `true` when the adapter found exactly the records
    ///   that meet the predicate (an exact access path walked in full, or an
    ///   engine that ran the whole ``engineCondition``).
    /// - Throws: ``StorageError`` when the predicate throws or the limit is negative.
    public func finish(_ candidates: [R], filtered: Bool) throws -> [R] {
        try query.validate()
        var records: [R]
        if filtered {
            records = candidates
        } else {
            records = []
            for record in candidates where try matches(record) { records.append(record) }
        }
        records = sort.sorted(records)
        if let limit = query.limit, records.count > limit { records.removeSubrange(limit...) }
        return records
    }

    /// ``finish(_:filtered:)`` with the sort keys the adapter read for each
    /// candidate (``SortPlan/sorted(_:keys:)``: for each candidate, the
    /// values of the sort's fields then its primary key), so the sort does
    /// not read them from the records again. Without keys of the sort's
    /// shape, as ``finish(_:filtered:)``.
    /// - Throws: ``StorageError`` when the predicate throws or the limit is negative.
    public func finish(_ candidates: [R], sortKeys: [StoredValue], filtered: Bool) throws -> [R] {
        try finish(candidates, sortKeys: sortKeys, filtered: filtered, descending: nil)
    }

    /// ``finish(_:filtered:)`` for candidates the adapter read in ascending
    /// or descending key order, as ``finish(_:sortKeys:filtered:descending:)``
    /// (the sort keys read from the records' fields).
    /// - Throws: ``StorageError`` when the predicate throws or the limit is negative.
    public func finish(_ candidates: [R], filtered: Bool, descending: Bool) throws -> [R] {
        guard let fields = sort.fields else { return try finish(candidates, filtered: filtered) }
        try query.validate()
        var records = candidates
        if !filtered {
            records = []
            for record in candidates where try matches(record) { records.append(record) }
        }
        return try finish(records, sortKeys: sort.keys(of: records, fields: fields), filtered: true, descending: descending)
    }

    /// Whether the adapter should read this plan's candidates in descending
    /// key order (a cursor walked backwards): the direction that gave the
    /// order asked for at the last call of the plan's shape that read its
    /// candidates in a direction of its choice (``finish(_:sortKeys:filtered:descending:)``).
    /// `false` at first and for a plan without a template. Only a hint: the
    /// answer is the same either way, since the order of the candidates is
    /// checked, and they are sorted when they are in neither order.
    public var prefersDescendingCandidates: Bool {
        template?.descendingCandidates.load(ordering: .relaxed) ?? false
    }

    /// ``finish(_:sortKeys:filtered:)`` for candidates the adapter read in
    /// ascending key order (`descending: false`) or in descending key order
    /// (`true`), by ``prefersDescendingCandidates``. When they come in the
    /// exact reverse of the order asked for, they are reversed as before and
    /// the plan's shape is told to prefer the other direction next time, so a
    /// range whose key order is the reverse of the asked order (messages by
    /// date, newest first, read by their keys) is read backwards from then
    /// on instead of being collected and reversed on every call.
    /// - Throws: ``StorageError`` when the predicate throws or the limit is negative.
    public func finish(_ candidates: [R], sortKeys: [StoredValue], filtered: Bool, descending: Bool?) throws -> [R] {
        guard let fields = sort.fields, sortKeys.count == (fields.count + 1) * candidates.count else {
            return try finish(candidates, filtered: filtered)
        }
        try query.validate()
        var records = candidates
        var keys = sortKeys
        if !filtered {
            let width = fields.count + 1
            records = []
            keys = []
            for position in candidates.indices where try matches(candidates[position]) {
                records.append(candidates[position])
                keys.append(contentsOf: sortKeys[position * width..<(position + 1) * width])
            }
        }
        return Self.finishMatched(
            records, keys: keys, sort: sort, limit: query.limit, template: template, descending: descending)
    }

    /// ``finish(_:sortKeys:filtered:descending:)`` for candidates that are
    /// exactly the records meeting the predicate (`filtered: true`), with
    /// their sort keys in their ordered form (``SortKey``), which compare
    /// and are released without a ``StoredValue`` made for each.
    /// - Throws: ``StorageError`` when the limit is negative.
    public func finish(_ candidates: [R], orderedKeys: [UInt64], descending: Bool?) throws -> [R] {
        try query.validate()
        return Self.finishMatched(
            candidates, orderedKeys: orderedKeys, sort: sort, limit: query.limit, template: template,
            descending: descending)
    }

    /// ``finishMatched(_:keys:sort:limit:template:descending:)`` with the
    /// keys in their ordered form.
    static func finishMatched(
        _ records: [R], orderedKeys keys: [UInt64], sort: SortPlan<R>, limit: Int?, template: PlanTemplate<R>?,
        descending: Bool?
    ) -> [R] {
        var records = records
        if let (sorted, order) = sort.sortedReportingOrder(records, orderedKeys: keys) {
            records = sorted
            template?.learn(order, readDescending: descending)
        } else {
            records = sort.sorted(records)
        }
        if let limit, records.count > limit { records.removeSubrange(limit...) }
        return records
    }

    /// `records`, each of which meets the predicate, sorted by `keys` (the
    /// sort's fields then the primary key, for each record) and limited; the
    /// order they came in is told to `template` when `descending` says which
    /// direction they were read in.
    static func finishMatched(
        _ records: [R], keys: [StoredValue], sort: SortPlan<R>, limit: Int?, template: PlanTemplate<R>?,
        descending: Bool?
    ) -> [R] {
        var records = records
        if let fields = sort.fields, keys.count == (fields.count + 1) * records.count,
            let (sorted, order) = sort.sortedReportingOrder(records, keys: keys)
        {
            records = sorted
            template?.learn(order, readDescending: descending)
        } else {
            records = sort.sorted(records)
        }
        if let limit, records.count > limit { records.removeSubrange(limit...) }
        return records
    }

    /// How many of `candidates` meet the predicate (all, when `filtered`).
    /// - Throws: ``StorageError`` when the predicate throws.
    public func count(_ candidates: [R], filtered: Bool) throws -> Int {
        if filtered { return candidates.count }
        var count = 0
        for record in candidates where try matches(record) { count += 1 }
        return count
    }

    // MARK: Choosing the access path

    /// An access path by the positions of the required equalities that bind
    /// it, each with the field its value is coerced to.
    enum AccessChoice {
        case all
        case primaryKey((equality: Int, target: Field<R>))
        case index(Index, [(equality: Int, target: Field<R>)])
        case parent((equality: Int, target: Field<R>))

        /// The names of the fields the access path binds.
        var fieldNames: Set<String> {
            switch self {
            case .all: []
            case .primaryKey(let position), .parent(let position): [position.target.name]
            case .index(_, let positions): Set(positions.map(\.target.name))
            }
        }
    }

    /// The access path for these required equalities and how many distinct
    /// equalities it binds: the primary key; else the index binding the most
    /// leading fields, when it binds more than one or there is no parent key;
    /// else the parent key; else every record.
    static func access(for equalities: [(field: String, value: StoredValue)]) -> (Access, Int) {
        let (choice, bound) = chooseAccess(equalities)
        func value(_ position: (equality: Int, target: Field<R>)) -> StoredValue {
            // The choice took only equalities whose value coerces.
            let value = equalities[position.equality].value
            return value.coerced(to: position.target.type, optional: position.target.isOptional) ?? value
        }
        switch choice {
        case .all: return (.all, bound)
        case .primaryKey(let position): return (.primaryKey(value(position)), bound)
        case .index(let index, let positions): return (.index(index, values: positions.map(value)), bound)
        case .parent(let position): return (.parent(value(position)), bound)
        }
    }

    /// ``access(for:)`` by positions in `equalities`.
    static func chooseAccess(_ equalities: [(field: String, value: StoredValue)]) -> (AccessChoice, Int) {
        guard !equalities.isEmpty else { return (.all, 0) }
        let entity = R.entity
        func bound(_ name: String) -> (equality: Int, target: Field<R>)? {
            guard let field = entity.field(named: name) else { return nil }
            for (position, equality) in equalities.enumerated() where equality.field == name {
                if equality.value.coerced(to: field.type, optional: field.isOptional) != nil { return (position, field) }
            }
            return nil
        }
        if let key = bound(entity.primaryKeyField.name) { return (.primaryKey(key), 1) }
        var best: (index: Index, positions: [(equality: Int, target: Field<R>)])?
        for index in entity.indexes {
            var positions: [(equality: Int, target: Field<R>)] = []
            for field in index.fields {
                guard let position = bound(field) else { break }
                positions.append(position)
            }
            if !positions.isEmpty && positions.count > (best?.positions.count ?? 0) { best = (index, positions) }
        }
        let parent = entity.foreignKeyField.flatMap { bound($0) }
        if let best, best.positions.count > 1 || parent == nil {
            return (.index(best.index, best.positions), best.positions.count)
        }
        if let parent { return (.parent(parent), 1) }
        return (.all, 0)
    }

    /// Whether the access path alone answers a predicate: it translates exactly
    /// into equalities on distinct fields, each bound by the path.
    static func isExact(_ translation: QueryExpression.Translation, boundFields: Int) -> Bool {
        guard translation.isExact else { return false }
        if case .constant(true) = translation.expression { return true }
        guard isConjunctionOfEqualities(translation.expression) else { return false }
        let equalities = translation.expression.requiredEqualities
        var names = Set<String>()
        for equality in equalities where !names.insert(equality.field).inserted { return false }
        return boundFields == equalities.count && boundFields > 0
    }

    /// The predicate's equalities on fields other than `bound`, each value
    /// coerced to its field's type, when the predicate is exactly a
    /// conjunction of equalities (`==`, a `Bool` field or its negation) on
    /// distinct declared fields, `bound` among them; `nil` otherwise, or
    /// when a value does not coerce to its field. An adapter whose access
    /// path binds the fields `bound` (a parent's key, an index's leading
    /// fields) answers the predicate exactly by keeping the candidates whose
    /// stored values equal these, with the library's equality (the stored
    /// values' order, `-0.0` as `0.0`, `nil` equal to `nil`), instead of
    /// evaluating the predicate on each decoded record.
    public func equalities(besides bound: Set<String>) -> [(field: Field<R>, value: StoredValue)]? {
        guard conditionIsExact, let expression = engineCondition, Self.isConjunctionOfEqualities(expression) else {
            return nil
        }
        let equalities = expression.requiredEqualities
        var names = Set<String>()
        for equality in equalities where !names.insert(equality.field).inserted { return nil }
        guard bound.isSubset(of: names) else { return nil }
        var others: [(field: Field<R>, value: StoredValue)] = []
        for equality in equalities where !bound.contains(equality.field) {
            guard let field = R.entity.field(named: equality.field),
                let value = equality.value.coerced(to: field.type, optional: field.isOptional)
            else { return nil }
            others.append((field, value))
        }
        return others
    }

    private static func isConjunctionOfEqualities(_ expression: QueryExpression) -> Bool {
        switch expression {
        case .compare(_, .equal, _), .isTrue, .not(.isTrue): true
        case .and(let lhs, let rhs): isConjunctionOfEqualities(lhs) && isConjunctionOfEqualities(rhs)
        default: false
        }
    }
}

/// How query results are sorted, the same on every backend: by the sort
/// descriptors, then by primary key (ascending, in stored-value order).
///
/// A descriptor over a declared field without a `String` comparator compares
/// the fields' stored values (numbers by value, dates by time, text by Unicode
/// scalars, `nil` first), which is also SQLite's `ORDER BY`. A descriptor with
/// a `String` comparator (`comparator: .lexical`) or over anything but a
/// declared field (`\.chapters.count`) is evaluated by Foundation, as it
/// defines it, in memory.
public struct SortPlan<R: Record>: Sendable {
    /// The descriptors.
    public let descriptors: [SortDescriptor<R>]
    /// The declared fields and directions, when every descriptor compares stored
    /// values; `nil` when Foundation must compare.
    public let fields: [(field: Field<R>, ascending: Bool)]?
    /// Whether a descriptor reads something other than a declared field (a
    /// relation's count, a computed property), so records must be complete.
    public let readsOpaqueValues: Bool
    /// Whether each column of the sort keys is ascending (``fields``'
    /// directions, then `true` for the primary key); `nil` with ``fields``.
    /// Kept apart from ``fields``: reading those tuples in code that is not
    /// specialized for the record type looked up the metadata of `Field<R>`
    /// and of the tuple (about 500 instructions a sort).
    let ascendingKeys: [Bool]?

    /// Plans sorting by `descriptors`.
    public init(_ descriptors: [SortDescriptor<R>]) {
        self.descriptors = descriptors
        var fields: [(field: Field<R>, ascending: Bool)] = []
        var byValue = true
        var opaque = false
        for descriptor in descriptors {
            guard let keyPath = descriptor.keyPath, let field = R.entity.field(for: keyPath) else {
                opaque = true
                byValue = false
                continue
            }
            if descriptor.stringComparator != nil { byValue = false }
            fields.append((field, descriptor.order == .forward))
        }
        self.fields = byValue ? fields : nil
        readsOpaqueValues = opaque
        if byValue {
            var ascending: [Bool] = []
            ascending.reserveCapacity(fields.count + 1)
            for entry in fields { ascending.append(entry.ascending) }
            ascending.append(true)
            ascendingKeys = ascending
        } else {
            ascendingKeys = nil
        }
    }

    /// `records` sorted.
    public func sorted(_ records: [R]) -> [R] {
        guard records.count > 1 else { return records }
        let primaryKey = R.entity.primaryKeyField
        guard let fields else {
            // Foundation's comparisons first, the key last. The records are put in
            // key order first, so that the result does not depend on the order an
            // engine returned them in even for a comparator that is not a strict
            // weak order.
            let keyed = records.map { (key: primaryKey.value(in: $0), record: $0) }.sorted { $0.key < $1.key }
            return keyed.sorted { lhs, rhs in
                for descriptor in descriptors {
                    switch descriptor.compare(lhs.record, rhs.record) {
                    case .orderedAscending: return true
                    case .orderedDescending: return false
                    case .orderedSame: continue
                    }
                }
                return lhs.key < rhs.key
            }.map(\.record)
        }
        return sorted(records, keys: keys(of: records, fields: fields), fields: fields).records
    }

    /// The sort keys of `records` (``sorted(_:keys:)``), read through the
    /// fields' key paths.
    func keys(of records: [R], fields: [(field: Field<R>, ascending: Bool)]) -> [StoredValue] {
        let primaryKey = R.entity.primaryKeyField
        var keys: [StoredValue] = []
        keys.reserveCapacity(records.count * (fields.count + 1))
        for record in records {
            for entry in fields { keys.append(entry.field.value(in: record)) }
            keys.append(primaryKey.value(in: record))
        }
        return keys
    }

    /// `records` sorted by `keys`, the stored values an adapter read for them
    /// (from the stored bytes, say, without reading the records' properties):
    /// for each record in turn, the value of each field of ``fields`` then its
    /// primary key's, `(fields.count + 1) × records.count` values. `nil` when
    /// the sort does not compare stored values (``fields`` is `nil`) or the
    /// keys do not have that count.
    public func sorted(_ records: [R], keys: [StoredValue]) -> [R]? {
        sortedReportingOrder(records, keys: keys)?.records
    }

    /// ``sorted(_:keys:)``, and the order `records` were in: already the
    /// order asked for (`.ascending`; also for fewer than two records), its
    /// exact reverse (`.descending`), or neither.
    func sortedReportingOrder(_ records: [R], keys: [StoredValue]) -> (records: [R], order: SortKeyRows.Order)? {
        guard let fields, keys.count == (fields.count + 1) * records.count else { return nil }
        guard records.count > 1 else { return (records, .ascending) }
        return sorted(records, keys: keys, fields: fields)
    }

    private func sorted(
        _ records: [R], keys: [StoredValue], fields: [(field: Field<R>, ascending: Bool)]
    ) -> (records: [R], order: SortKeyRows.Order) {
        let width = fields.count + 1
        let ascending = ascendingKeys ?? []
        // An access path often yields its records in the order asked for (an
        // index range sorted by its next field), or in the reverse of it: one
        // pass over the keys finds out, and the sort is skipped. The keys end
        // with the primary key, so no two rows tie and the reverse of a
        // strictly descending run is the one ascending order.
        let order = SortKeyRows.order(of: keys, width: width, ascending: ascending)
        switch order {
        case .ascending: return (records, order)
        case .descending: return (SortPlan<R>.reversed(records), order)
        case .neither: return (SortKeyRows.sortedPositions(keys, width: width, ascending: ascending).map { records[$0] }, order)
        }
    }

    /// ``sortedReportingOrder(_:keys:)`` for keys in their ordered form
    /// (``SortKey``): `(fields.count + 1) × records.count` of them, each
    /// column encoded as ``SortKey`` encodes its field's values. `nil` when
    /// the sort does not compare stored values or the keys do not have that
    /// count.
    func sortedReportingOrder(_ records: [R], orderedKeys keys: [UInt64]) -> (records: [R], order: SortKeyRows.Order)? {
        guard let ascending = ascendingKeys, keys.count == ascending.count * records.count else { return nil }
        guard records.count > 1 else { return (records, .ascending) }
        let width = ascending.count
        let order = SortKeyRows.order(of: keys, width: width, ascending: ascending)
        switch order {
        case .ascending: return (records, order)
        case .descending: return (SortPlan<R>.reversed(records), order)
        case .neither: return (SortKeyRows.sortedPositions(keys, width: width, ascending: ascending).map { records[$0] }, order)
        }
    }

    /// `records` in the reverse order, copied through raw memory: the
    /// generic `Sequence.reversed()` cost about 240 instructions per record.
    static func reversed(_ records: [R]) -> [R] {
        let count = records.count
        return records.withUnsafeBufferPointer { source in
            [R](unsafeUninitializedCapacity: count) { target, initialized in
                guard let from = source.baseAddress, let to = target.baseAddress else {
                    initialized = 0
                    return
                }
                for position in 0..<count {
                    (to + position).initialize(to: from[count - 1 - position])
                }
                initialized = count
            }
        }
    }
}

/// Rows of sort keys (``SortPlan/sorted(_:keys:)``): whether they are in
/// order and the order that sorts them. Not generic over the record type,
/// so that a call looks up no type metadata (a nested type of the generic
/// ``SortPlan`` cost about 330 instructions a look-up, twice a query).
enum SortKeyRows {
    /// The order rows are in: already the order asked for, its exact
    /// reverse, or neither.
    enum Order { case ascending, descending, neither }

    /// Whether the rows of `keys` are already in order (each row before the
    /// next), in exactly the reverse order, or neither.
    static func order<Key: Comparable>(of keys: [Key], width: Int, ascending: [Bool]) -> Order {
        let count = width == 0 ? 0 : keys.count / width
        guard count > 1 else { return .ascending }
        return keys.withUnsafeBufferPointer { keys in
            ascending.withUnsafeBufferPointer { ascending in
                // -1: row `lhs` comes first; 1: row `rhs` comes first; 0: equal.
                func compare(_ lhs: Int, _ rhs: Int) -> Int {
                    var position = 0
                    while position < width {
                        let a = keys[lhs * width + position]
                        let b = keys[rhs * width + position]
                        if a < b { return ascending[position] ? -1 : 1 }
                        if b < a { return ascending[position] ? 1 : -1 }
                        position += 1
                    }
                    return 0
                }
                let first = compare(0, 1)
                guard first != 0 else { return .neither }
                for row in 1..<(count - 1) where compare(row, row + 1) != first { return .neither }
                return first < 0 ? .ascending : .descending
            }
        }
    }

    /// The positions of the rows of `keys` (`width` values each) in ascending
    /// order of their values, column by column, each column ascending or not.
    static func sortedPositions<Key: Comparable>(_ keys: [Key], width: Int, ascending: [Bool]) -> [Int] {
        let count = width == 0 ? 0 : keys.count / width
        return keys.withUnsafeBufferPointer { keys in
            ascending.withUnsafeBufferPointer { ascending in
                (0..<count).sorted { lhs, rhs in
                    var position = 0
                    while position < width {
                        let a = keys[lhs * width + position]
                        let b = keys[rhs * width + position]
                        if a < b { return ascending[position] }
                        if b < a { return !ascending[position] }
                        position += 1
                    }
                    return false
                }
            }
        }
    }
}

extension StoredValue {
    /// This value as a field of `type` holds it, or `nil` when no such field can
    /// hold it (so that an equality with it matches nothing and no key or index
    /// lookup by it is meaningful).
    public func coerced(to type: FieldType, optional: Bool) -> StoredValue? {
        switch (type, self) {
        case (_, .null): return optional ? .null : nil
        case (.integer, .integer), (.bool, .integer): return self
        case (.integer, .real(let real)), (.bool, .real(let real)):
            guard let exact = Int64(exactly: real) else { return nil }
            return .integer(exact)
        case (.real, .real(let real)), (.date, .real(let real)):
            return real.isNaN ? nil : .real(real == 0 ? 0 : real)
        case (.real, .integer(let integer)), (.date, .integer(let integer)):
            let real = Double(integer)
            guard Int64(exactly: real) == integer else { return nil }
            return .real(real)
        case (.text, .text), (.blob, .blob): return self
        default: return nil
        }
    }
}

extension Entity {
    /// The name of the field that holds the owner's key, when this entity is
    /// owned through a relation.
    public var foreignKeyField: String? {
        owner.flatMap { $0.ownedRelationForeignKey(for: Root.self) }
    }
}

extension Record {
    static func ownedRelationForeignKey<C: Record>(for child: C.Type) -> String? {
        ownedRelation(for: child)?.foreignKeyField
    }
}

/// What a ``QueryPlan`` plans beyond the translation and the sort.
public struct QueryPlanParts: OptionSet, Sendable {
    /// The parts as bits.
    public let rawValue: Int
    /// The parts with these bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// `access` and `accessIsExact`; without it the access is `.all`, inexact.
    public static let accessPath = QueryPlanParts(rawValue: 1)
    /// `condition` also when the translation is exact; without it an
    /// exact predicate's condition is built only if `matches(_:)` is called.
    public static let exactCondition = QueryPlanParts(rawValue: 2)
    /// Everything.
    public static let all: QueryPlanParts = [.accessPath, .exactCondition]
}


/// Sort keys in an ordered form: a field's stored value as a `UInt64` whose
/// unsigned order is the order ``StoredValue`` compares such values in, and
/// which are equal exactly when the values tie in that order. Integers (and
/// booleans, 0 or 1) and reals (and dates) have one; text, blobs and `nil`
/// have none. An adapter that reads a query's sort keys from stored bytes
/// encodes them so when every column has one
/// (``QueryPlan/finish(_:orderedKeys:descending:)``).
public enum SortKey {
    /// The ordered form of an integer.
    @inlinable
    public static func ordered(_ integer: Int64) -> UInt64 {
        UInt64(bitPattern: integer) ^ (1 << 63)
    }

    /// The ordered form of a real: `-0.0` has the form of `0.0`, which it
    /// ties with, and every NaN the greatest form, after `+infinity`
    /// (``nanForm``).
    @inlinable
    public static func ordered(_ real: Double) -> UInt64 {
        guard !real.isNaN else { return nanForm }
        let bits = (real == 0 ? 0.0 : real).bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    /// The ordered form of every NaN: above `+infinity`'s
    /// (`0xFFF0_0000_0000_0000`), and the form of no other real.
    public static let nanForm: UInt64 = .max

    /// The real of an ordered form (``ordered(_:)-(Double)``): the canonical NaN
    /// for ``nanForm``, `0.0` for the form of `±0.0`.
    @inlinable
    public static func real(ordered key: UInt64) -> Double {
        if key == nanForm { return .nan }
        return Double(bitPattern: key & (1 << 63) != 0 ? key ^ (1 << 63) : ~key)
    }
}
