import DAOCore
import DialogGraph
import Foundation
import Testing

@testable import StorageBenchKit

/// `update` runs again in place (``IterationJob/updateRuns``): before each
/// further run the store is put back untimed to what it held before `update`
/// (the dialogs as `persist` wrote them, upserted again through the
/// subject's own `update`) and checked; each run is checked as the first;
/// the iteration's time is the median of the runs; callgrind iterations
/// count one run.
@Suite struct UpdateRunsTests {
    /// A ``MemorySubject`` that records what each `update` call wrote and
    /// can be told to write nothing at one call (a restore or a run that
    /// does not do its work).
    final class CountingSubject: ForwardingSubject, @unchecked Sendable {
        // @unchecked Sendable is safe: one iteration at a time calls it.
        let inner = MemorySubject()
        /// The call of `update` (1-based) that writes nothing.
        let skipsUpdate: Int?
        /// Per `update` call, how many of the messages it was given were unread.
        var updates: [Int] = []
        var persists = 0

        init(skipsUpdate: Int? = nil) {
            self.skipsUpdate = skipsUpdate
        }

        var settingsDescription: String { "counting" }
        func persist(_ dialogs: [Dialog]) throws {
            persists += 1
            try inner.persist(dialogs)
        }
        func update(_ dialogs: [Dialog]) throws {
            updates.append(dialogs.reduce(0) { sum, dialog in sum + dialog.messages.count { message in !message.isRead } })
            if updates.count != skipsUpdate { try inner.update(dialogs) }
        }
    }

    static let size = try! BenchSize(dialogs: 12, messagesPerDialog: 4)
    static let data = WorkloadData(dialogs: size.dialogs, messagesPerDialog: size.messagesPerDialog, seed: 42)
    /// The unread messages of the generated graph, as `persist` writes it.
    static let unread = data.initial.reduce(0) { sum, dialog in sum + dialog.messages.count { message in !message.isRead } }

    /// Runs one iteration of `subject` with `updateRuns` and `seconds`.
    static func run(
        updateRuns: Int, seconds: Double, countsInstructions: Bool = false,
        operations: [BenchOperation] = BenchOperation.workload, subject: CountingSubject = CountingSubject(),
        gate: (BenchOperation, Int) throws -> Bool = { _, _ in true }
    ) -> (IterationResult, CountingSubject) {
        let backend = Backend(name: "counting", subject: { _, _ in subject })
        var job = IterationJob(backend: backend.name, size: size, seed: 42, durability: .full, operations: operations)
        job.updateRuns = updateRuns
        job.updateRunSeconds = seconds
        job.countsInstructions = countsInstructions
        return (WorkloadRunner.run(job, backend: backend, data: data, gate: gate), subject)
    }

    @Test func updateRunsAgainAfterTheStoreIsPutBack() throws {
        #expect(Self.unread > 0)
        // A time budget no run of a 12-dialog store can use up: the count decides.
        let (result, subject) = Self.run(updateRuns: 3, seconds: 3600)
        #expect(result.error == nil, "\(result.error ?? "")")
        // The first run, then a restore of the initial graph and a run, twice.
        #expect(subject.updates == [0, Self.unread, 0, Self.unread, 0])
        #expect(subject.persists == 1)
        let update = try #require(result.measurements.first { $0.operation == .update })
        let runs = try #require(update.runSeconds)
        #expect(runs.count == 3)
        #expect(update.seconds == SampleStatistics(runs)?.median)
        #expect((update.restoreSeconds ?? -1) > 0)
        // Units stay those of one run: the figure is the time of one run.
        #expect(update.units == BenchOperation.update.expectedUnits(for: Self.size))
        // What follows sees the store as update left it.
        #expect(result.measurements.map(\.operation) == BenchOperation.workload)
        for measurement in result.measurements where !measurement.operation.runsInPlace {
            #expect(measurement.runSeconds == nil, "\(measurement.operation)")
        }
    }

    @Test func oneRunByDefaultWithoutTimeOrUnderCallgrind() throws {
        for (runs, seconds, counts) in [(1, 3600.0, false), (5, 0.0, false), (5, 3600.0, true)] {
            let (result, subject) = Self.run(updateRuns: runs, seconds: seconds, countsInstructions: counts)
            #expect(result.error == nil)
            #expect(subject.updates == [0])
            #expect(result.measurements.first { $0.operation == .update }?.runSeconds == nil)
        }
    }

    @Test func theGateEndsTheRunsAndEachFurtherRunAsksIt() throws {
        var asked: [Int] = []
        let (result, subject) = Self.run(updateRuns: 5, seconds: 3600) { operation, run in
            if operation == .update { asked.append(run) }
            return !(operation == .update && run == 2)
        }
        #expect(result.error == nil, "\(result.error ?? "")")
        #expect(asked == [0, 1, 2])
        #expect(subject.updates == [0, Self.unread, 0])
        #expect(result.measurements.first { $0.operation == .update }?.runSeconds?.count == 2)
    }

    @Test func aStoreNotPutBackFailsTheIteration() throws {
        // The second update call is the first restore; it writes nothing,
        // so every message stays read.
        let (result, subject) = Self.run(updateRuns: 4, seconds: 3600, subject: CountingSubject(skipsUpdate: 2))
        #expect(subject.updates.count == 2)
        #expect(
            result.error?.hasPrefix("update: put back for update to run again, the store holds 12 dialogs and 48 messages, 0 unread (expected 12, 48, \(Self.unread))") == true,
            "\(result.error ?? "")")
        #expect(!result.measurements.contains { $0.operation == .update })
    }

    @Test func everyFurtherRunIsChecked() throws {
        // The third update call is the second timed run; it writes nothing,
        // so the store holds the graph put back, its unread messages unread.
        let (result, subject) = Self.run(updateRuns: 4, seconds: 3600, subject: CountingSubject(skipsUpdate: 3))
        #expect(subject.updates.count == 3)
        #expect(result.error?.hasPrefix("update: after update the store holds 12 dialogs and 48 messages, \(Self.unread) unread") == true, "\(result.error ?? "")")
        #expect(!result.measurements.contains { $0.operation == .update })
    }

    @Test func theConfigurationPassesTheRunsOnAndTheReportCountsThem() throws {
        let configuration = try RunConfiguration(
            backends: [TestBackends.memory], sizes: [Self.size], iterations: 3, warmup: 0, showsProgress: false,
            updateRuns: 3, updateRunSeconds: 3600)
        #expect(configuration.jobs().allSatisfy { $0.updateRuns == 3 && $0.updateRunSeconds == 3600 })
        let runner = BenchmarkRunner(configuration: configuration, executor: InProcessExecutor(registry: TestBackends.registry))
        let results = try runner.measure()
        let costs = configuration.operationCosts(results, backend: TestBackends.memory.name)
        let updates = results.compactMap { $0.measurements.first { $0.operation == .update } }
        let spent = updates.map { ($0.runSeconds ?? []).reduce(0, +) + ($0.restoreSeconds ?? 0) }
        #expect(costs[.update] == SampleStatistics(spent)?.median)
        let provenance = Provenance(
            runId: "r", timestamp: "t", gitCommit: "c", host: "h", os: "o", cpu: "p", swiftVersion: "s", build: "b")
        let report = ReportBuilder.report(of: results, configuration: configuration, provenance: provenance)
        #expect(report.rows.first { $0.operation == BenchOperation.update.rawValue }?.runsInPlace == 3)
    }

    @Test func aFurtherRunStartsOnlyWhenItsRestoreAndRunFitTheBudget() {
        // One run of 0.65 s: a restore and a run like it (1.3 s) fit in 2.5 s.
        #expect(WorkloadRunner.updatesAgain(runs: [0.65], restoring: 0, most: 3, seconds: 2.5))
        // Two runs and a restore (2.0 s spent): 1.3 s more does not fit 2.5 s, fits 4.
        #expect(!WorkloadRunner.updatesAgain(runs: [0.65, 0.65], restoring: 0.7, most: 3, seconds: 2.5))
        #expect(WorkloadRunner.updatesAgain(runs: [0.65, 0.65], restoring: 0.7, most: 3, seconds: 4))
        // A run of 2.2 s runs once within 4 s (its restore and run would take 4.4 s more).
        #expect(!WorkloadRunner.updatesAgain(runs: [2.2], restoring: 0, most: 3, seconds: 4))
        // The count ends it whatever the time; no run yet, no further run.
        #expect(!WorkloadRunner.updatesAgain(runs: [0.1, 0.1, 0.1], restoring: 0.2, most: 3, seconds: 3600))
        #expect(!WorkloadRunner.updatesAgain(runs: [], restoring: 0, most: 3, seconds: 3600))
    }

    @Test func theConfigurationRefusesNoRunsOrANegativeTime() {
        #expect(throws: ConfigurationError.self) {
            try RunConfiguration(backends: [TestBackends.memory], sizes: [Self.size], updateRuns: 0)
        }
        #expect(throws: ConfigurationError.self) {
            try RunConfiguration(backends: [TestBackends.memory], sizes: [Self.size], updateRunSeconds: -1)
        }
    }
}
