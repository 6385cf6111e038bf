import Foundation
import Synchronization

/// The plans of one entity's queries, kept by the query's shape (its
/// predicate with the constants taken out, its sort descriptors, whether it
/// has a limit, the parts planned), so that a repeated shape is translated and
/// planned once and later calls only bind their constants.
///
/// A plan is kept only for a predicate that translates exactly into a
/// ``QueryExpression`` (comparisons of declared fields with constants, joined
/// by `&&`, `||`, `!`), and only after the plan its template gives for the
/// first call's constants was checked equal to the plan made afresh: anything
/// else is planned afresh on every call, as before. At most
/// ``QueryPlanCache/capacity`` shapes are kept; the cache starts over when it
/// is full. Safe to use from any number of tasks at once.
final class QueryPlanCache<R: Record>: Sendable {
    /// The most shapes kept per entity.
    static var capacity: Int { 256 }

    private let entries = BargingMutex<[PlanKey<R>: CachedPlan<R>]>([:])
    /// The shape reader of each predicate expression type met (`nil`: the type
    /// has no shape), searched in order: an entity's queries have few
    /// expression types. Not a dictionary: instantiating the dictionary's
    /// type, the first time a process used it, looked up `ObjectIdentifier`'s
    /// `Hashable` conformance by name (about 0.87M instructions, once).
    private let readers = BargingMutex<[KnownReader]>([])

    init() {}

    /// The plan of `query`: bound from the cached template of its shape, or
    /// made afresh (and its template kept) when there is none.
    func plan(_ query: Query<R>, parts: QueryPlanParts) -> QueryPlan<R> {
        var shape: PredicateShape?
        var constants: [StoredValue] = []
        if let predicate = query.predicate {
            // A prepared query's call: planned from the templates it keeps.
            if let call = PreparedCondition<R>.call(of: predicate) {
                return call.prepared.plan(query, call: call, parts: parts)
            }
            guard let walked = walk(predicate) else { return QueryPlan(fresh: query, parts: parts) }
            shape = walked.shape
            constants = walked.constants
        }
        let key = PlanKey<R>(shape: shape, sort: query.sortedBy, limited: query.limit != nil, parts: parts.rawValue)
        switch entries.withLock({ $0[key] }) {
        case .template(let template)?:
            if let plan = template.bind(query, constants) { return plan }
            return QueryPlan(fresh: query, parts: parts)
        case .uncacheable?:
            return QueryPlan(fresh: query, parts: parts)
        case nil:
            let fresh = QueryPlan(fresh: query, parts: parts)
            let template = PlanTemplate(fresh, shape: shape, constants: constants, parts: parts)
            entries.withLock { entries in
                if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
                entries[key] = template.map { .template($0) } ?? .uncacheable
            }
            guard let template else { return fresh }
            return fresh.with(template: template, constants: constants)
        }
    }

    /// The shape of `predicate` and its constants, or `nil` when some node has
    /// no shape; the reader of its expression type is made the first time.
    func walk(_ predicate: Predicate<R>) -> (shape: PredicateShape, constants: [StoredValue])? {
        let expression = predicate.expression
        let type = ObjectIdentifier(Swift.type(of: expression))
        let reader: RootShapeReader?
        if let known = readers.withLock({ readers in readers.first { $0.type == type }.map { $0.reader } }) {
            reader = known
        } else {
            reader = RootShapeReader.make(for: expression)
            readers.withLock { readers in
                if readers.count >= Self.capacity { readers.removeAll(keepingCapacity: true) }
                if let index = readers.firstIndex(where: { $0.type == type }) {
                    readers[index] = KnownReader(type: type, reader: reader)
                } else {
                    readers.append(KnownReader(type: type, reader: reader))
                }
            }
        }
        guard let reader else { return nil }
        var walk = ShapeWalk(variable: predicate.variable.key)
        guard let shape = reader.read(expression, &walk) else { return nil }
        return (shape, walk.constants)
    }

    /// How many shapes are kept (for tests).
    var count: Int { entries.withLock { $0.count } }

    /// How many times the kept shapes were forgotten: prepared queries
    /// (``PreparedQuery``) drop the templates they made in an earlier
    /// generation.
    let generation = Atomic<Int>(0)

    /// Forgets every kept shape, and the templates prepared queries keep.
    func removeAll() {
        entries.withLock { $0.removeAll() }
        generation.add(1, ordering: .relaxed)
    }
}

extension Entity {
    /// Forgets the plans kept for this entity's query shapes: the next query of
    /// each shape is translated and planned afresh (a cold start, as after
    /// launch). Queries answer the same either way.
    public func forgetQueryPlans() {
        queryPlans.removeAll()
    }
}

/// The shape reader of one predicate expression type.
///
/// `@unchecked Sendable`: the reader is a tree of closures that capture only
/// metatypes and other such closures, never state, so calling it from any
/// thread is safe; the closures are not `@Sendable` only because generic
/// metatypes are not marked `Sendable`.
struct RootShapeReader: @unchecked Sendable {
    let read: (any StandardPredicateExpression<Bool>, inout ShapeWalk) -> PredicateShape?

    static func make<E: StandardPredicateExpression<Bool>>(for expression: E) -> RootShapeReader? {
        guard let reader = ShapeReaders.reader(for: E.self) else { return nil }
        return RootShapeReader { expression, walk in
            guard let expression = expression as? E else { return nil }
            return reader(expression, &walk)
        }
    }
}

/// What identifies a query's plan, constants aside.
struct PlanKey<R: Record>: Hashable, Sendable {
    /// `nil`: no predicate.
    var shape: PredicateShape?
    var sort: [SortDescriptor<R>]
    var limited: Bool
    var parts: Int

    /// Hashes the shape, the number of sort descriptors, the limit and the
    /// parts; not the descriptors themselves, which `==` compares (hashing
    /// them cost about 2k instructions per query: a key path and a
    /// comparator each). Keys that differ only in their descriptors share a
    /// bucket and are told apart by `==`.
    func hash(into hasher: inout Hasher) {
        hasher.combine(shape)
        hasher.combine(sort.count)
        hasher.combine(limited)
        hasher.combine(parts)
    }
}

enum CachedPlan<R: Record>: Sendable {
    case template(PlanTemplate<R>)
    /// The shape plans afresh every time (its template did not reproduce the
    /// fresh plan).
    case uncacheable
}
