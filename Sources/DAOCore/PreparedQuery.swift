import Foundation
import Synchronization

/// A query written once with parameters and answered many times with their
/// values: Foundation's variadic `Predicate<Record, P…>`, sort descriptors and
/// an optional limit, translated and planned once per kind of values instead
/// of on every call. One, two or three parameters (`Parameters` is the
/// parameter's type, or the tuple of their types), each of a field type
/// (``FieldValue``: integers, `String`, `Double`, `Bool`, `Date`, `UUID`,
/// `Data` and their optionals).
///
/// ```swift
/// let unread = try PreparedQuery(
///     where: #Predicate<MessageRecord, Int64> { message, dialog in
///         message.dialogId == dialog && !message.isRead
///     },
///     sortedBy: [SortDescriptor(\.date, order: .reverse)])
/// let records = try storage.read(unread.query(7))
/// ```
///
/// Through a ``DAO``, `DAO.prepare(where:sortedBy:limit:)` gives the same
/// query over plain objects.
///
/// **Semantics.** A call answers exactly what the same predicate answers with
/// the call's values written in as constants (docs/SEMANTICS.md): a value is
/// compared by its stored form, as a constant is; a parameter inside a part
/// only Foundation evaluates (a method call, a relation) is evaluated by
/// Foundation with the value bound, as the constant would be. No predicate
/// is refused for its form: one the planner cannot keep a template for is
/// translated and planned again on each call, with its values bound.
///
/// **Cost.** The predicate's shape (its tree with the parameters and
/// constants as slots) is read the first time values of a new kind are
/// bound (a text value that is empty or not, a real that is NaN, whole or
/// fractional, `nil` or not: what decides how a constant translates); later
/// calls with values of a kind met put them into the kept plan template, with
/// no walk of the predicate and no lookup in the entity's plan cache. The
/// commonest kinds are planned when the query is prepared, for the calls a
/// storage answers from their plan (``PreparedQueryCall``): non-empty text,
/// integers and Booleans (those a `Double` holds exactly, within ±2⁵³),
/// bytes, and reals all whole or all fractional; never `nil`. Other kinds
/// (an empty text, `nil`, a larger integer, a NaN, whole and fractional
/// reals mixed in one call) are planned at their first call.
///
/// A prepared query is a value: `Sendable`, and safe to call from any number
/// of tasks at once. It stays valid across reopening a store and migrating
/// its schema (it keeps nothing of a store), and after
/// ``Entity/forgetQueryPlans()``, after which its next call plans afresh.
public struct PreparedQuery<Record: DAOCore.Record, Parameters: Sendable>: Sendable {
    /// The order of the results, before the primary-key tie-break.
    public let sortedBy: [SortDescriptor<Record>]
    /// The maximum number of results, or `nil` for all of them.
    public let limit: Int?
    let prepared: PreparedPredicate<Record>
    /// The Foundation bindings of a record and the parameters' values.
    let bindings: @Sendable (Record, Parameters) -> PredicateBindings
    /// The parameters' values in stored form, in the predicate's order.
    let storedValues: @Sendable (Parameters) -> [StoredValue]

    private init(
        expression: any StandardPredicateExpression<Bool>, keys: [PredicateExpressions.VariableID],
        sortedBy: [SortDescriptor<Record>], limit: Int?, parameterTypes: [FieldType],
        bindings: @escaping @Sendable (Record, Parameters) -> PredicateBindings,
        storedValues: @escaping @Sendable (Parameters) -> [StoredValue]
    ) throws {
        try Query<Record>(sortedBy: sortedBy, limit: limit).validate()
        self.sortedBy = sortedBy
        self.limit = limit
        self.bindings = bindings
        self.storedValues = storedValues
        prepared = PreparedPredicate(expression: expression, record: keys[0], parameters: Array(keys.dropFirst()))
        prepared.warm()
        prepared.planCalls(parameterTypes: parameterTypes, sort: sortedBy, limit: limit)
    }

    /// Prepares a query with one parameter.
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``
    ///   for a negative limit.
    public init(
        where predicate: Predicate<Record, Parameters>, sortedBy: [SortDescriptor<Record>] = [], limit: Int? = nil
    ) throws where Parameters: FieldValue {
        let (record, a) = predicate.variable
        try self.init(
            expression: predicate.expression, keys: [record.key, a.key], sortedBy: sortedBy, limit: limit,
            parameterTypes: [Parameters.fieldType],
            bindings: { value, parameter in PredicateBindings((record, value), (a, parameter)) },
            storedValues: { [$0.storedValue] })
    }

    /// Prepares a query with two parameters.
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``
    ///   for a negative limit.
    public init<A: FieldValue, B: FieldValue>(
        where predicate: Predicate<Record, A, B>, sortedBy: [SortDescriptor<Record>] = [], limit: Int? = nil
    ) throws where Parameters == (A, B) {
        let (record, a, b) = predicate.variable
        try self.init(
            expression: predicate.expression, keys: [record.key, a.key, b.key], sortedBy: sortedBy, limit: limit,
            parameterTypes: [A.fieldType, B.fieldType],
            bindings: { value, parameters in PredicateBindings((record, value), (a, parameters.0), (b, parameters.1)) },
            storedValues: { [$0.0.storedValue, $0.1.storedValue] })
    }

    /// Prepares a query with three parameters.
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``
    ///   for a negative limit.
    public init<A: FieldValue, B: FieldValue, C: FieldValue>(
        where predicate: Predicate<Record, A, B, C>, sortedBy: [SortDescriptor<Record>] = [], limit: Int? = nil
    ) throws where Parameters == (A, B, C) {
        let (record, a, b, c) = predicate.variable
        try self.init(
            expression: predicate.expression, keys: [record.key, a.key, b.key, c.key], sortedBy: sortedBy,
            limit: limit, parameterTypes: [A.fieldType, B.fieldType, C.fieldType],
            bindings: { value, parameters in
                PredicateBindings((record, value), (a, parameters.0), (b, parameters.1), (c, parameters.2))
            },
            storedValues: { [$0.0.storedValue, $0.1.storedValue, $0.2.storedValue] })
    }

    /// The query for these values of the parameters (all of them, as a
    /// tuple for more than one): what ``Storage/read(_:)-(Query<Self.Record>)`` answers.
    public func query(values: Parameters) -> Query<Record> {
        Query(where: predicate(values: values), sortedBy: sortedBy, limit: limit)
    }

    /// The predicate for these values of the parameters, for
    /// ``Storage/count(where:)`` and ``Storage/erase(where:)``. Evaluated by
    /// Foundation itself, it answers as the prepared predicate does with
    /// these values.
    public func predicate(values: Parameters) -> Predicate<Record> {
        let call = bound(values)
        return Predicate<Record> { record in PreparedCondition(record: record, call: call) }
    }

    /// The call of this query with these values of the parameters: what
    /// `Storage.read(_:)` answers for a call, the records
    /// ``query(values:)`` gives.
    public func call(values: Parameters) -> PreparedQueryCall<Record> {
        PreparedQueryCall(call: bound(values), sortedBy: sortedBy, limit: limit)
    }

    /// The prepared predicate bound to `values`. The call keeps the values and
    /// the query's own bindings closure: no closure context made per call.
    private func bound(_ values: Parameters) -> BoundCall<Record, Parameters> {
        BoundCall<Record, Parameters>(
            prepared: prepared, values: storedValues(values), parameters: values, bindings: bindings)
    }
}

/// One call of a ``PreparedQuery``: its predicate bound to the call's values,
/// its sort and its limit. A storage answers it as it answers ``query``; one
/// that walks an access path of its own (LMDB) asks for ``boundPlan()``,
/// which binds the values into the plan template the prepared query keeps,
/// without building the predicate, the query or a ``QueryPlan``; one that
/// runs the whole condition itself (SQLite) asks for ``boundCondition()``.
public struct PreparedQueryCall<Record: DAOCore.Record>: Sendable {
    let call: PreparedCall<Record>
    /// The order of the results, before the primary-key tie-break.
    public let sortedBy: [SortDescriptor<Record>]
    /// The maximum number of results, or `nil` for all of them.
    public let limit: Int?

    /// The query this call answers: the prepared predicate with the call's
    /// values, as ``PreparedQuery/query(values:)`` gives it.
    public var query: Query<Record> {
        let call = self.call
        return Query(
            where: Predicate<Record> { record in PreparedCondition(record: record, call: call) }, sortedBy: sortedBy,
            limit: limit)
    }

    /// The prepared query's entry for calls with values of these kinds, made
    /// on the first such call; `nil` when its predicate has no template.
    private var callEntry: CallPlan? {
        call.prepared.callPlan(
            generation: Record.entity.queryPlans.generation.load(ordering: .relaxed), values: call.values,
            sort: sortedBy, limited: limit != nil, query: { query })
    }

    /// The plan of ``query`` with only its access path planned
    /// (``QueryPlanParts/accessPath``), bound from the template the prepared
    /// query keeps for values of these kinds: the plan
    /// `QueryPlan(query, parts: [.accessPath])` gives, in the parts an
    /// adapter that finds its own candidates reads. `nil` when the prepared
    /// query keeps no template for these values (its predicate does not
    /// translate exactly, or values of these kinds plan afresh) or a value
    /// does not fit the template: the adapter reads ``query`` then. The first
    /// call with values of a kind plans ``query`` afresh, which makes the
    /// template.
    public func boundPlan() -> BoundPlan<Record>? {
        let values = call.values
        guard let entry = callEntry, let template = entry.template, let access = entry.access(with: values)
        else { return nil }
        return BoundPlan(
            template: unsafeDowncast(template, to: PlanTemplate<Record>.self), access: access,
            otherEqualities: entry.otherEqualities(with: values), limit: limit)
    }
}

extension PreparedQueryCall {
    /// The call's whole condition bound from the template the prepared query
    /// keeps for values of these kinds (the one ``boundPlan()`` binds): the
    /// engine condition `QueryPlan(query, parts: [])` gives for ``query``,
    /// without building the predicate, the query or a ``QueryPlan``. For an
    /// adapter that runs the whole condition itself (SQLite compiles it to
    /// SQL). `nil` when ``boundPlan()`` would be `nil` for another reason
    /// than the access path (no template for these values, or a value that
    /// does not fit it): the adapter reads ``query`` then.
    ///
    /// A template is made only for a predicate that translates exactly, so
    /// the condition is the whole predicate.
    public func boundCondition() -> BoundCondition<Record>? {
        guard let entry = callEntry, let kept = entry.template, let constants = entry.constants(with: call.values)
        else { return nil }
        let template = unsafeDowncast(kept, to: PlanTemplate<Record>.self)
        guard let expression = template.expression else {
            return BoundCondition(template: template, condition: nil, limit: limit)
        }
        guard let bound = expression.instantiate(constants, condition: false) else { return nil }
        return BoundCondition(template: template, condition: bound.expression, limit: limit)
    }
}

/// A prepared call's condition, sort and limit, bound from its template
/// (``PreparedQueryCall/boundCondition()``): what an adapter that runs the
/// whole condition itself reads of a ``QueryPlan`` (its engine condition,
/// sort and limit). The template is the call's own, the one
/// ``PreparedQueryCall/boundPlan()`` binds; its condition is the same
/// whatever parts a plan is asked for.
public final class BoundCondition<R: Record>: Sendable {
    /// The template the condition was bound from: an adapter keeps what it
    /// derives from the shape (statement text) under it
    /// (``PlanTemplate/memo(_:_:)``). Calls with values of the same kinds
    /// share it.
    public let template: PlanTemplate<R>
    /// The engine condition with the call's values, as
    /// ``QueryPlan/engineCondition`` gives it; `nil`: every record.
    public let condition: QueryExpression?
    /// The maximum number of results, or `nil` for all of them.
    public let limit: Int?

    init(template: PlanTemplate<R>, condition: QueryExpression?, limit: Int?) {
        self.template = template
        self.condition = condition
        self.limit = limit
    }

    /// The sort.
    public var sort: SortPlan<R> { template.sort }
}

/// A prepared call's access path and sort, bound from its template
/// (``PreparedQueryCall/boundPlan()``): what an adapter that walks the access
/// path itself reads of a ``QueryPlan``, and the end of
/// ``QueryPlan/finish(_:sortKeys:filtered:descending:)`` for candidates that
/// are exactly the records meeting the predicate.
///
/// A class: handed between functions that are not specialized for the record
/// type, a generic struct's metadata was looked up in each of them (about
/// 330 instructions each, three a call); a reference needs none.
public final class BoundPlan<R: Record>: Sendable {
    /// The template the plan was bound from: an adapter keeps what it derives
    /// from the shape under it.
    public let template: PlanTemplate<R>
    /// The access path, with the call's values.
    public let access: QueryPlan<R>.Access
    /// When the access path is not exact but the predicate is exactly a
    /// conjunction of equalities on distinct fields: those the access path
    /// does not bind, each value coerced to its field, as
    /// ``QueryPlan/equalities(besides:)`` gives them; `nil` otherwise (or
    /// when a value does not coerce to its field).
    public let otherEqualities: [(field: String, value: StoredValue)]?
    /// The maximum number of results, or `nil` for all of them.
    public let limit: Int?

    init(
        template: PlanTemplate<R>, access: QueryPlan<R>.Access,
        otherEqualities: [(field: String, value: StoredValue)]?, limit: Int?
    ) {
        self.template = template
        self.access = access
        self.otherEqualities = otherEqualities
        self.limit = limit
    }

    /// Whether the records the access path finds are exactly the answer's
    /// (before sort and limit), as ``QueryPlan/accessIsExact``.
    public var accessIsExact: Bool { template.accessIsExact }
    /// The sort.
    public var sort: SortPlan<R> { template.sort }
    /// As ``QueryPlan/prefersDescendingCandidates``.
    public var prefersDescendingCandidates: Bool { template.descendingCandidates.load(ordering: .relaxed) }

    /// The answer from `candidates`, exactly the records that meet the
    /// predicate, read in ascending or descending key order, with the sort
    /// keys the adapter read for each (the sort's fields, then the primary
    /// key): sorted and limited as ``QueryPlan/finish(_:sortKeys:filtered:descending:)``
    /// does with `filtered: true`.
    public func finish(_ candidates: [R], sortKeys: [StoredValue], descending: Bool) -> [R] {
        QueryPlan<R>.finishMatched(
            candidates, keys: sortKeys, sort: template.sort, limit: limit, template: template, descending: descending)
    }

    /// ``finish(_:sortKeys:descending:)`` with the sort keys in their
    /// ordered form (``SortKey``), as ``QueryPlan/finish(_:orderedKeys:descending:)``.
    public func finish(_ candidates: [R], orderedKeys: [UInt64], descending: Bool) -> [R] {
        QueryPlan<R>.finishMatched(
            candidates, orderedKeys: orderedKeys, sort: template.sort, limit: limit, template: template,
            descending: descending)
    }

    /// ``finish(_:sortKeys:descending:)`` with the sort keys read from the
    /// candidates through the sort's fields, when the sort compares declared
    /// fields (else ``finish(_:)``): as ``QueryPlan/finish(_:filtered:descending:)``
    /// does with `filtered: true`.
    public func finish(_ candidates: [R], descending: Bool) -> [R] {
        let sort = template.sort
        guard let fields = sort.fields else { return finish(candidates) }
        return finish(candidates, sortKeys: sort.keys(of: candidates, fields: fields), descending: descending)
    }

    /// The answer from `candidates`, exactly the records that meet the
    /// predicate: sorted and limited.
    public func finish(_ candidates: [R]) -> [R] {
        var records = template.sort.sorted(candidates)
        if let limit, records.count > limit { records.removeSubrange(limit...) }
        return records
    }
}

extension PreparedQuery where Parameters: FieldValue {
    /// The query for this value of the parameter.
    public func query(_ a: Parameters) -> Query<Record> { query(values: a) }
    /// The predicate for this value of the parameter.
    public func predicate(_ a: Parameters) -> Predicate<Record> { predicate(values: a) }
    /// The call with this value of the parameter.
    public func call(_ a: Parameters) -> PreparedQueryCall<Record> { call(values: a) }
}

extension PreparedQuery {
    /// The query for these values of the parameters.
    public func query<A, B>(_ a: A, _ b: B) -> Query<Record> where Parameters == (A, B) { query(values: (a, b)) }
    /// The predicate for these values of the parameters.
    public func predicate<A, B>(_ a: A, _ b: B) -> Predicate<Record> where Parameters == (A, B) {
        predicate(values: (a, b))
    }
    /// The query for these values of the parameters.
    public func query<A, B, C>(_ a: A, _ b: B, _ c: C) -> Query<Record> where Parameters == (A, B, C) {
        query(values: (a, b, c))
    }
    /// The predicate for these values of the parameters.
    public func predicate<A, B, C>(_ a: A, _ b: B, _ c: C) -> Predicate<Record> where Parameters == (A, B, C) {
        predicate(values: (a, b, c))
    }
    /// The call with these values of the parameters.
    public func call<A, B>(_ a: A, _ b: B) -> PreparedQueryCall<Record> where Parameters == (A, B) {
        call(values: (a, b))
    }
    /// The call with these values of the parameters.
    public func call<A, B, C>(_ a: A, _ b: B, _ c: C) -> PreparedQueryCall<Record> where Parameters == (A, B, C) {
        call(values: (a, b, c))
    }
}

extension Storage {
    /// The records that answer `prepared` with these values of its
    /// parameters (``PreparedQuery``; a tuple for more than one).
    /// - Throws: ``StorageError``.
    public func read<Parameters>(_ prepared: PreparedQuery<Record, Parameters>, values: Parameters) throws -> [Record] {
        try read(prepared.call(values: values))
    }

    /// The records that answer `prepared` with this value of its parameter.
    /// - Throws: ``StorageError``.
    public func read<A: FieldValue>(_ prepared: PreparedQuery<Record, A>, _ a: A) throws -> [Record] {
        try read(prepared.call(values: a))
    }

    /// The records that answer `prepared` with these values of its parameters.
    /// - Throws: ``StorageError``.
    public func read<A, B>(_ prepared: PreparedQuery<Record, (A, B)>, _ a: A, _ b: B) throws -> [Record] {
        try read(prepared.call(values: (a, b)))
    }

    /// The records that answer `prepared` with these values of its parameters.
    /// - Throws: ``StorageError``.
    public func read<A, B, C>(_ prepared: PreparedQuery<Record, (A, B, C)>, _ a: A, _ b: B, _ c: C) throws -> [Record] {
        try read(prepared.call(values: (a, b, c)))
    }

    /// The records that answer `call`: those of its ``PreparedQueryCall/query``.
    /// - Throws: ``StorageError``.
    public func read(_ call: PreparedQueryCall<Record>) throws -> [Record] {
        try read(call.query)
    }
}

/// A prepared predicate's part that holds across calls: its expression, its
/// variables, and the plan templates made for it, by the parts an adapter
/// asks for, the sort and limit of the query planned, and the kinds of the
/// values bound.
final class PreparedPredicate<R: Record>: Sendable {
    /// The most templates kept; all are dropped when a new one would exceed it.
    static var capacity: Int { 16 }

    let expression: any StandardPredicateExpression<Bool>
    let record: PredicateExpressions.VariableID
    let parameters: [PredicateExpressions.VariableID]
    /// The shape reader of the expression's type (`nil`: it has no shape).
    let reader: RootShapeReader?
    private let entries = Mutex<[PreparedEntry<R>]>([])
    /// The entries of the prepared query's own calls
    /// (``PreparedQueryCall/boundPlan()``, ``PreparedQueryCall/boundCondition()``): one sort and one limit, so found
    /// by the generation and the kinds of the values alone, and held in
    /// terms that do not depend on the record type.
    private let callPlans = Mutex<[CallPlan]>([])

    init(
        expression: any StandardPredicateExpression<Bool>, record: PredicateExpressions.VariableID,
        parameters: [PredicateExpressions.VariableID]
    ) {
        self.expression = expression
        self.record = record
        self.parameters = parameters
        reader = RootShapeReader.make(for: expression)
    }

    /// The plan of `query`, whose predicate is `call`'s: bound from a kept
    /// template when one was made for values of these kinds, else made afresh
    /// (and its template kept).
    func plan(_ query: Query<R>, call: PreparedCall<R>, parts: QueryPlanParts) -> QueryPlan<R> {
        let generation = R.entity.queryPlans.generation.load(ordering: .relaxed)
        let values = call.values
        let limited = query.limit != nil
        let sort = query.sortedBy
        if let found = entry(generation: generation, values: values, sort: sort, limited: limited, parts: parts) {
            guard let template = found.template else { return QueryPlan(fresh: query, parts: parts) }
            return template.bind(query, found.constants(with: values)) ?? QueryPlan(fresh: query, parts: parts)
        }
        return planAfresh(query, values: values, generation: generation, parts: parts)
    }

    /// The kept entry for values of these kinds, this sort, a limit or none,
    /// these parts, made in this generation; `nil` when none was made yet.
    func entry(
        generation: Int, values: [StoredValue], sort: [SortDescriptor<R>], limited: Bool, parts: QueryPlanParts
    ) -> PreparedEntry<R>? {
        // The sort and whether there is a limit are part of what a template
        // holds: an adapter also plans the predicate alone (`count`, `erase`,
        // the candidates of a read). The prepared query hands every call the
        // same array of descriptors, which `==` finds identical at once.
        // A plain loop over immutable entries: `first(where:)` with a
        // closure, unspecialized for the record type, cost about 2.2k
        // instructions a call, and copying a found struct retained each of
        // its arrays.
        entries.withLock { entries in
            for entry in entries
            where entry.generation == generation && entry.parts == parts.rawValue && entry.limited == limited
                && entry.sort == sort && entry.accepts(values)
            {
                return entry
            }
            return nil
        }
    }

    /// The plan of `query`, made afresh, and the entry for values of these
    /// kinds kept (with its template, when the predicate has one).
    func planAfresh(
        _ query: Query<R>, values: [StoredValue], generation: Int, parts: QueryPlanParts
    ) -> QueryPlan<R> {
        let limited = query.limit != nil
        let sort = query.sortedBy
        let fresh = QueryPlan(fresh: query, parts: parts)
        var entry = PreparedEntry<R>(generation: generation, parts: parts.rawValue, sort: sort, limited: limited)
        var result = fresh
        if let reader {
            var walk = ShapeWalk(variable: record, parameters: ParameterValues(keys: parameters, values: values))
            if let shape = reader.read(expression, &walk) {
                let template = PlanTemplate(fresh, shape: shape, constants: walk.constants, parts: parts)
                entry = PreparedEntry<R>(
                    generation: generation, parts: parts.rawValue, sort: sort, limited: limited,
                    constants: walk.constants, parameterSlots: walk.parameterSlots, template: template)
                if let template { result = fresh.with(template: template, constants: walk.constants) }
            }
        }
        entries.withLock { entries in
            entries.removeAll { $0.generation != generation }
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries.append(entry)
        }
        return result
    }

    /// The call entry made in `generation` for values of these kinds, made
    /// from this predicate's kept entry (which `plan` makes on a miss) when
    /// there is none yet; `nil` when the kept entry has no template.
    func callPlan(
        generation: Int, values: [StoredValue], sort: [SortDescriptor<R>], limited: Bool, query: () -> Query<R>
    ) -> CallPlan? {
        let found: CallPlan? = callPlans.withLock { entries in
            for entry in entries where entry.generation == generation && entry.accepts(values) { return entry }
            return nil
        }
        if let found { return found.template == nil ? nil : found }
        var kept = entry(generation: generation, values: values, sort: sort, limited: limited, parts: .accessPath)
        if kept == nil {
            _ = planAfresh(query(), values: values, generation: generation, parts: .accessPath)
            kept = entry(generation: generation, values: values, sort: sort, limited: limited, parts: .accessPath)
        }
        guard let kept else { return nil }
        let made = CallPlan(kept)
        callPlans.withLock { entries in
            entries.removeAll { $0.generation != generation }
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries.append(made)
        }
        return made.template == nil ? nil : made
    }

    /// Translates and plans the predicate once with every parameter `nil`,
    /// and forgets the plan: the runtime's first look-ups of the protocol
    /// conformances of the expression's node types (each a scan of every
    /// conformance record of the process, about 270k instructions) are
    /// made when the query is prepared, not at its first call.
    func warm() {
        let call = PreparedCall<R>(prepared: self, values: Array(repeating: .null, count: parameters.count))
        let query = Query<R>(where: Predicate<R> { record in PreparedCondition(record: record, call: call) })
        _ = QueryPlan<R>(fresh: query, parts: .all)
    }

    /// Plans the prepared query's own calls (``PreparedQueryCall/boundPlan()``)
    /// for values of the kinds a call most often binds, given the
    /// parameters' field types: a non-empty text, an integer a `Double`
    /// holds exactly, reals all whole and reals all fractional (a date's
    /// seconds mostly are), any bytes; never `nil`. Every backend's
    /// preparation pays it, though only a storage that answers calls from
    /// their plan (LMDB's ``PreparedQueryCall/boundPlan()``, SQLite's
    /// ``PreparedQueryCall/boundCondition()``) uses these entries. A call with values of those kinds then finds its
    /// template made, as SQL's prepared statements are planned when
    /// prepared, instead of the first call of the query planning it (about
    /// 280k instructions, once); values of other kinds are planned at their
    /// first call, as before. The answers do not change: a template is made
    /// and checked the same way whichever values make it.
    func planCalls(parameterTypes: [FieldType], sort: [SortDescriptor<R>], limit: Int?) {
        guard reader != nil, parameterTypes.count == parameters.count else { return }
        var samples: [[StoredValue]] = [parameterTypes.map { Self.sample($0, fractional: false) }]
        if parameterTypes.contains(where: { $0 == .real || $0 == .date }) {
            samples.append(parameterTypes.map { Self.sample($0, fractional: true) })
        }
        let generation = R.entity.queryPlans.generation.load(ordering: .relaxed)
        for values in samples {
            let call = PreparedCall<R>(prepared: self, values: values)
            _ = callPlan(generation: generation, values: values, sort: sort, limited: limit != nil) {
                Query<R>(
                    where: Predicate<R> { record in PreparedCondition(record: record, call: call) }, sortedBy: sort,
                    limit: limit)
            }
        }
    }

    /// A value of a common kind for a parameter of type `type`.
    private static func sample(_ type: FieldType, fractional: Bool) -> StoredValue {
        switch type {
        case .integer, .bool: .integer(1)
        case .real, .date: .real(fractional ? 0.5 : 1)
        case .text: .text("x")
        case .blob: .blob([0])
        }
    }

    /// How many templates are kept (for tests).
    var count: Int { entries.withLock { $0.count } }
}

/// A plan template of a prepared predicate for values of some kinds.
/// Immutable once made: calls read it under the entries' lock and bind from
/// it outside it.
final class PreparedEntry<R: Record>: Sendable {
    /// The plan cache's generation it was made in (``QueryPlanCache/generation``).
    let generation: Int
    let parts: Int
    /// The sort descriptors of the query planned.
    let sort: [SortDescriptor<R>]
    /// Whether the query planned has a limit.
    let limited: Bool
    /// Whether the predicate has a shape; when not, the entry holds for any
    /// values and says only to plan afresh.
    let shaped: Bool
    /// The constants of the walk that made it, parameters' values included.
    let constants: [StoredValue]
    /// The slots the parameters fill, and by which parameter.
    let parameterSlots: [(slot: Int, parameter: Int)]
    /// The kind of each parameter slot's value.
    let classes: [ConstantClass]
    /// `nil`: values of these kinds plan afresh.
    let template: PlanTemplate<R>?

    /// An entry for a predicate without a shape: every call plans afresh.
    init(generation: Int, parts: Int, sort: [SortDescriptor<R>], limited: Bool) {
        self.generation = generation
        self.parts = parts
        self.sort = sort
        self.limited = limited
        shaped = false
        constants = []
        parameterSlots = []
        classes = []
        template = nil
    }

    /// An entry for a predicate with a shape, read with `constants`.
    init(
        generation: Int, parts: Int, sort: [SortDescriptor<R>], limited: Bool, constants: [StoredValue],
        parameterSlots: [(slot: Int, parameter: Int)], template: PlanTemplate<R>?
    ) {
        self.generation = generation
        self.parts = parts
        self.sort = sort
        self.limited = limited
        shaped = true
        self.constants = constants
        self.parameterSlots = parameterSlots
        classes = parameterSlots.map { ConstantClass(constants[$0.slot]) }
        self.template = template
    }

    /// Whether `values` are of the kinds this entry was made for.
    func accepts(_ values: [StoredValue]) -> Bool {
        guard shaped else { return true }
        for index in parameterSlots.indices where ConstantClass(values[parameterSlots[index].parameter]) != classes[index] {
            return false
        }
        return true
    }

    /// The constants of the entry's walk with each parameter slot holding
    /// this call's value.
    func constants(with values: [StoredValue]) -> [StoredValue] {
        var constants = self.constants
        for (slot, parameter) in parameterSlots { constants[slot] = values[parameter] }
        return constants
    }
}

/// A prepared entry for the prepared query's own calls, in terms that do not
/// depend on the record type: code not specialized for it (an adapter's)
/// finds and binds it without looking up generic metadata (about 330
/// instructions each; the generic entry's search and binding looked up about
/// ten a call).
final class CallPlan: Sendable {
    let generation: Int
    /// The parameter slots, the parameter each is filled from, and the kind
    /// of value each was made for.
    let slots: [Int]
    let parameters: [Int]
    let classes: [ConstantClass]
    let constants: [StoredValue]
    /// The slots whose constants must be text (``ExpressionTemplate/fits(_:)``).
    let textSlots: [Int]
    let access: AccessValues
    /// The template's ``PlanTemplate/otherEqualities``.
    let otherEqualities: [OtherEquality]?
    /// The ``PlanTemplate`` of the record type; `nil`: values of these kinds
    /// are planned afresh.
    let template: (AnyObject & Sendable)?

    init<R: Record>(_ entry: PreparedEntry<R>) {
        generation = entry.generation
        slots = entry.parameterSlots.map(\.slot)
        parameters = entry.parameterSlots.map(\.parameter)
        classes = entry.classes
        constants = entry.constants
        if entry.shaped, let template = entry.template, let expression = template.expression {
            textSlots = expression.textSlots
            access = template.access
            otherEqualities = template.otherEqualities
            self.template = template
        } else {
            textSlots = []
            access = .all
            otherEqualities = nil
            template = nil
        }
    }

    /// Whether `values` are of the kinds this entry was made for.
    func accepts(_ values: [StoredValue]) -> Bool {
        for index in slots.indices where ConstantClass(values[parameters[index]]) != classes[index] { return false }
        return true
    }

    /// The entry's constants with each parameter slot holding this call's
    /// value; `nil` when they do not fit the template (a text operation's
    /// constant that is not text).
    func constants(with values: [StoredValue]) -> [StoredValue]? {
        var constants = self.constants
        for index in slots.indices { constants[slots[index]] = values[parameters[index]] }
        for slot in textSlots {
            guard case .text = constants[slot] else { return nil }
        }
        return constants
    }

    /// The access path for this call's values: ``constants(with:)`` bound
    /// to ``access``, without the constants' array made when no text
    /// operation needs checking (the usual case: the array was a copy of
    /// every constant per call).
    func access(with values: [StoredValue]) -> AccessPath? {
        guard textSlots.isEmpty else { return constants(with: values).flatMap { access.instantiate($0) } }
        return access.instantiate { slot in
            for index in slots.indices where slots[index] == slot { return values[parameters[index]] }
            return constants[slot]
        }
    }

    /// The template's other equalities (``PlanTemplate/otherEqualities``)
    /// with this call's values; `nil` when it has none, or a value does not
    /// coerce to its field (or does not fit the template).
    func otherEqualities(with values: [StoredValue]) -> [(field: String, value: StoredValue)]? {
        guard let otherEqualities else { return nil }
        var bound: [(field: String, value: StoredValue)] = []
        bound.reserveCapacity(otherEqualities.count)
        if !textSlots.isEmpty {
            guard let constants = constants(with: values) else { return nil }
            for equality in otherEqualities {
                guard let value = equality.value.value({ constants[$0] }) else { return nil }
                bound.append((equality.field, value))
            }
            return bound
        }
        for equality in otherEqualities {
            let value = equality.value.value { slot in
                for index in slots.indices where slots[index] == slot { return values[parameters[index]] }
                return constants[slot]
            }
            guard let value else { return nil }
            bound.append((equality.field, value))
        }
        return bound
    }
}

/// The parameter variables of a prepared predicate and one call's values of
/// them, in stored form.
struct ParameterValues {
    let keys: [PredicateExpressions.VariableID]
    let values: [StoredValue]
}

/// One call of a prepared predicate: its values, in stored form for the
/// planner and as Foundation bindings for the parts Foundation evaluates
/// (``BoundCall``; this class itself binds nothing: the preparation's plan
/// with every parameter `nil`, which evaluates nothing).
///
/// `@unchecked Sendable`: not final, for ``BoundCall``; its stored properties
/// and its subclass's are constants of `Sendable` types.
class PreparedCall<R: Record>: @unchecked Sendable {
    let prepared: PreparedPredicate<R>
    let values: [StoredValue]

    init(prepared: PreparedPredicate<R>, values: [StoredValue]) {
        self.prepared = prepared
        self.values = values
    }

    /// The record and the parameters bound, for Foundation's evaluation.
    func bindings(_ record: R) -> PredicateBindings {
        PredicateBindings()
    }

    /// The value of the parameter variable `key`, or `nil` when `key` is no
    /// parameter.
    func value(of key: PredicateExpressions.VariableID) -> StoredValue? {
        guard let position = prepared.parameters.firstIndex(of: key) else { return nil }
        return values[position]
    }

    var parameterValues: ParameterValues { ParameterValues(keys: prepared.parameters, values: values) }

    /// The translation context of the prepared expression with these values.
    func context(record input: PredicateExpressions.Variable<R>) -> TranslationContext<R> {
        TranslationContext(input, key: prepared.record, call: self)
    }
}

/// A call of a prepared query with its parameters' values, in their own
/// types for Foundation and in stored form for the planner.
final class BoundCall<R: Record, Parameters: Sendable>: PreparedCall<R>, @unchecked Sendable {
    let parameters: Parameters
    private let makeBindings: @Sendable (R, Parameters) -> PredicateBindings

    init(
        prepared: PreparedPredicate<R>, values: [StoredValue], parameters: Parameters,
        bindings: @escaping @Sendable (R, Parameters) -> PredicateBindings
    ) {
        self.parameters = parameters
        makeBindings = bindings
        super.init(prepared: prepared, values: values)
    }

    override func bindings(_ record: R) -> PredicateBindings {
        makeBindings(record, parameters)
    }
}

/// The expression of a prepared predicate bound to one call's values: the
/// whole of the `Predicate<Record>` a ``PreparedQuery`` hands to a storage.
/// The planner recognizes it and plans the prepared expression; Foundation
/// evaluates it as the prepared predicate with the values bound.
struct PreparedCondition<R: Record>: StandardPredicateExpression {
    typealias Output = Bool

    let record: PredicateExpressions.Variable<R>
    let call: PreparedCall<R>

    init(record: PredicateExpressions.Variable<R>, call: PreparedCall<R>) {
        self.record = record
        self.call = call
    }

    func evaluate(_ bindings: PredicateBindings) throws -> Bool {
        let value = try record.evaluate(bindings)
        return try call.prepared.expression.evaluate(call.bindings(value))
    }

    /// The call of `predicate`, when it is a prepared predicate bound to values.
    /// The expression's type is compared first: a predicate that is not a
    /// prepared one, the usual case, costs no dynamic cast.
    static func call(of predicate: Predicate<R>) -> PreparedCall<R>? {
        let expression = predicate.expression
        guard type(of: expression) == PreparedCondition<R>.self else { return nil }
        return (expression as? PreparedCondition<R>)?.call
    }

    init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "a prepared query's predicate is not decodable"))
    }

    func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(
            "prepared predicate",
            EncodingError.Context(codingPath: encoder.codingPath, debugDescription: "a prepared query's predicate is not encodable"))
    }
}
