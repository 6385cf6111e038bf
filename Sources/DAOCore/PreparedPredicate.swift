import Foundation
import Synchronization

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
    private let entries = BargingMutex<[PreparedEntry<R>]>([])
    /// The entries of the prepared query's own calls
    /// (``PreparedQueryCall/boundPlan()``, ``PreparedQueryCall/boundCondition()``): one sort and one limit, so found
    /// by the generation and the kinds of the values alone, and held in
    /// terms that do not depend on the record type.
    private let callPlans = BargingMutex<[CallPlan]>([])
    /// The first of ``callPlans`` made (a retained ``CallPlan``'s address;
    /// 0: none yet), found without the lock, which cost a call about 150
    /// instructions: set once and released with the predicate, and used
    /// while it is of the plan cache's generation.
    private let firstCallPlan = Atomic<UInt>(0)

    init(
        expression: any StandardPredicateExpression<Bool>, record: PredicateExpressions.VariableID,
        parameters: [PredicateExpressions.VariableID]
    ) {
        self.expression = expression
        self.record = record
        self.parameters = parameters
        reader = RootShapeReader.make(for: expression)
    }

    deinit {
        if let first = UnsafeRawPointer(bitPattern: firstCallPlan.load(ordering: .acquiring)) {
            Unmanaged<CallPlan>.fromOpaque(first).release()
        }
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
        if let first = UnsafeRawPointer(bitPattern: firstCallPlan.load(ordering: .acquiring)) {
            // Set once and released with the predicate, so not retained here.
            let plan = Unmanaged<CallPlan>.fromOpaque(first).takeUnretainedValue()
            if plan.generation == generation && plan.accepts(values) { return plan.template == nil ? nil : plan }
        }
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
        let retained = Unmanaged.passRetained(made).toOpaque()
        if !firstCallPlan.compareExchange(expected: 0, desired: UInt(bitPattern: retained), ordering: .releasing).exchanged {
            Unmanaged<CallPlan>.fromOpaque(retained).release()
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
    /// Returns the values it planned for (none when the predicate has no
    /// shape), for ``PreparedQuery/preparationCalls``.
    @discardableResult
    func planCalls(parameterTypes: [FieldType], sort: [SortDescriptor<R>], limit: Int?) -> [[StoredValue]] {
        guard reader != nil, parameterTypes.count == parameters.count else { return [] }
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
        return samples
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
