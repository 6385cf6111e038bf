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
