import DAOCore
import Foundation
@testable import StorageBenchKit
import Testing

@Suite("async-cost: the regions it measures")
struct AsyncCostTests {
    @Test("each backend gets its four calls' regions and the two empty hops")
    func regions() async throws {
        let backends = try LoadBackendRegistry.standard.select("sqlite,lmdb")
        let regions = try await AsyncCost.run(
            backends: backends, dialogs: 10, messagesPerDialog: 3, calls: 4, durability: .none)
        let expected = [
            "read-by-id/sync", "read-by-id/async", "persist-single/sync", "persist-single/async",
            "hop/writer-thread", "hop/dispatch-queue",
        ]
        for backend in ["sqlite", "lmdb"] {
            let names = regions.filter { $0.backend == backend }.map { "\($0.operation)/\($0.api)" }
            #expect(names == expected, "\(backend)")
        }
        #expect(regions.allSatisfy { $0.calls == 4 && $0.seconds > 0 })
    }
}
