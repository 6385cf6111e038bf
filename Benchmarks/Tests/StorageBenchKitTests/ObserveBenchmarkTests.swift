import DAOCore
import Foundation
import StorageBenchKit
import Testing

@Suite("The observe measurement")
struct ObserveBenchmarkTests {
    @Test("every observed persist reaches its observer; only observed results are read again",
          arguments: BackendRegistry.standard.names)
    func smallRun(backend name: String) async throws {
        let backend = try #require(BackendRegistry.standard.backend(named: name))
        let configuration = ObserveBenchmark.Configuration(
            dialogs: 30, messagesPerDialog: 3, calls: 90, observerCounts: [1, 5], durability: .none, rounds: 2)
        let rows = try await ObserveBenchmark.run(configuration, backend: backend)
        #expect(rows.map(\.observers) == [0, 1, 5])
        #expect(rows[0].observedCommits == 0 && rows[0].rereads == 0 && rows[0].writerRatio == nil)
        #expect(rows.allSatisfy { $0.calls == 180 })
        for row in rows.dropFirst() {
            // 90 calls over 30 written dialogs, twice: each observed dialog is written 3 times a round.
            #expect(row.observedCommits == row.observers * 3 * 2)
            #expect(row.latencyP50Micros != nil && row.latencyP99Micros != nil)
            #expect(row.snapshots >= 1 && row.snapshots <= row.observedCommits)
            // Commits to dialogs nobody observes are ruled out without a read.
            #expect(row.rereads <= row.observedCommits)
            #expect(row.writerRatio != nil && row.writerCallsPerSecond > 0 && row.writerCPUMicrosPerCall > 0)
        }
        let csv = ObserveBenchmark.csv(rows).split(separator: "\n")
        #expect(csv.count == 4 && csv[0] == Substring(ObserveBenchmark.csvHeader))
    }
}
