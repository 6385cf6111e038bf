@testable import DAOCore
import Foundation
import Testing
import TestSupport

// The plan cache keeps a bounded number of query shapes per entity and
// starts over when it is full. A template it lets go of, with what the
// adapters kept with it, must be freed on every backend once no call holds
// it: an app with many query shapes would otherwise grow each time the
// cache starts over.

/// A record of its own, so that no other test's shapes share its cache.
struct PlanProbe: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var label: String
    var weight: Double?

    static let entity = Entity<PlanProbe>(
        "plan_probes", primaryKey: "id", \.id,
        fields: [Field("label", \.label), Field("weight", \.weight)],
        indexes: [Index("plan_probes_by_label", on: ["label"])])
}

@Suite("Conformance: templates the plan cache lets go of are freed", .serialized)
struct PlanCacheReleaseTests {
    @Test("a query's template is freed after the cache starts over", arguments: allBackends)
    func droppedTemplatesAreFreed(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let probes = try store.anyStorage(for: PlanProbe.self)
            try probes.persist((0..<20).map { PlanProbe(id: "p\($0)", label: "l\($0 % 3)", weight: Double($0)) })
            PlanProbe.entity.forgetQueryPlans()
            weak var first: PlanTemplate<PlanProbe>?
            do {
                let ids = ["p1"]
                let query = Query(where: #Predicate<PlanProbe> { ids.contains($0.id) }, sortedBy: [SortDescriptor(\.label)])
                #expect(try probes.read(query).map(\.id) == ["p1"])
                var views = 0
                try probes.forEachView(query) { _ in views += 1 }
                #expect(views == 1)
                first = QueryPlan(query).template
                #expect(first != nil)
            }
            // Each IN list length is a shape of its own.
            for length in 2...(QueryPlanCache<PlanProbe>.capacity + 10) {
                let ids = (0..<length).map { "p\($0)" }
                let query = Query(where: #Predicate<PlanProbe> { ids.contains($0.id) }, sortedBy: [SortDescriptor(\.label)])
                #expect(try probes.read(query).count == min(length, 20))
            }
            #expect(first == nil, "\(backend): a template the cache let go of is still held")
        }
    }
}

/// Views of a record with String keys, ties of a String sort field and of
/// an optional real (nil among them), limited and not: every backend lends
/// the same records in the same order, and that order is `read`'s.
@Suite("Conformance: String keys and tied sort values lend the same views on every backend")
struct StringKeyTieViewTests {
    @Test func everyBackendLendsTheSameOrder() throws {
        let labels = ["b", "a", "b", "", "\u{FC}", "a", "b"]
        let weights: [Double?] = [1.5, nil, 1.5, -2, nil, 0, 1.5]
        let probes = (0..<42).map { n in
            PlanProbe(id: "k\((n * 17) % 42)", label: labels[n % labels.count], weight: weights[(n / 2) % weights.count])
        }
        var orders: [(label: String, sort: [SortDescriptor<PlanProbe>])] = []
        for order in [SortOrder.forward, .reverse] {
            orders.append(("label \(order)", [SortDescriptor(\.label, order: order)]))
            orders.append(("weight \(order)", [SortDescriptor(\.weight, order: order)]))
            orders.append(("label, weight \(order)", [SortDescriptor(\.label), SortDescriptor(\.weight, order: order)]))
        }
        var answers: [String: [String]] = [:]
        for backend in allBackends {
            try withStore(backend) { store, _ in
                let storage = try store.anyStorage(for: PlanProbe.self)
                try storage.persist(probes)
                for (name, sort) in orders {
                    for limit in [nil, 1, 4, 100] as [Int?] {
                        for onlyB in [false, true] {
                            let query = Query(
                                where: onlyB ? #Predicate<PlanProbe> { $0.label >= "b" } : nil, sortedBy: sort, limit: limit)
                            var lent: [String] = []
                            try storage.forEachView(query) { view in lent.append(String(copying: try view.text(0))) }
                            let read = try storage.read(query).map(\.id)
                            let what = "\(name), limit \(String(describing: limit)), label >= b: \(onlyB)"
                            #expect(lent == read, "\(backend): views against read, \(what)")
                            #expect(lent.count == min(limit ?? .max, onlyB ? 24 : 42), "\(backend): \(what)")
                            let key = what
                            if let first = answers[key] {
                                #expect(lent == first, "\(backend) differs from the first backend: \(what)")
                            } else {
                                answers[key] = lent
                            }
                        }
                    }
                }
            }
        }
        #expect(answers.count == 6 * 4 * 2)
    }
}
