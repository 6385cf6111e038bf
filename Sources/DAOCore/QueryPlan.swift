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
        keys.withUnsafeBufferPointer { keys in
            finishMatched(records, orderedKeys: keys, sort: sort, limit: limit, template: template, descending: descending)
        }
    }

    /// The same with the keys in memory the caller holds: not copied into
    /// an array for the call.
    static func finishMatched(
        _ records: [R], orderedKeys keys: UnsafeBufferPointer<UInt64>, sort: SortPlan<R>, limit: Int?,
        template: PlanTemplate<R>?, descending: Bool?
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
