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
    /// The class of a call, kept as a value: made from it, a call needs no
    /// look-up of the generic class's metadata (about 440 instructions a
    /// call in this code, which is not specialized for the record type).
    private let callType: BoundCall<Record, Parameters>.Type
    /// The values of the kinds the query was planned for when it was
    /// prepared (``preparationCalls``).
    private let plannedValues: [[StoredValue]]

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
        callType = BoundCall<Record, Parameters>.self
        prepared = PreparedPredicate(expression: expression, record: keys[0], parameters: Array(keys.dropFirst()))
        prepared.warm()
        plannedValues = prepared.planCalls(parameterTypes: parameterTypes, sort: sortedBy, limit: limit)
    }

    /// One call for each kind of values the query was planned for when it
    /// was prepared, bound to values of that kind: for a storage's
    /// ``Storage/prepare(_:)``, which derives from their templates
    /// (``PreparedQueryCall/boundSlots()``, ``PreparedQueryCall/boundPlan()``)
    /// what it keeps for the query's calls. Their values bind nothing for
    /// Foundation: a storage reads no records for them.
    package var preparationCalls: [PreparedQueryCall<Record>] {
        plannedValues.map { values in
            PreparedQueryCall(call: PreparedCall(prepared: prepared, values: values), sortedBy: sortedBy, limit: limit)
        }
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
        callType.init(prepared: prepared, values: storedValues(values), parameters: values, bindings: bindings)
    }
}

/// One call of a ``PreparedQuery``: its predicate bound to the call's values,
/// its sort and its limit. A storage answers it as it answers ``query``; one
/// that walks an access path of its own (LMDB) asks for ``boundPlan()``,
/// which binds the values into the plan template the prepared query keeps,
/// without building the predicate, the query or a ``QueryPlan``; one that
/// runs the whole condition itself asks for ``boundCondition()`` (SQLite,
/// in this package, reads the call's values by slot instead).
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
    var callEntry: CallPlan? {
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
        let kept = unsafeDowncast(template, to: PlanTemplate<Record>.self)
        return kept.boundPlanType.init(
            template: kept, access: access, otherEqualities: entry.otherEqualities(with: values), limit: limit)
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
            return template.boundConditionType.init(template: template, condition: nil, limit: limit)
        }
        guard let bound = expression.instantiateExpression(constants) else { return nil }
        return template.boundConditionType.init(template: template, condition: bound, limit: limit)
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
