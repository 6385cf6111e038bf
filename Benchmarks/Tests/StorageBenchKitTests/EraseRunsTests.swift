import DAOCore
import DialogGraph
import Foundation
import Testing

@testable import StorageBenchKit

/// `erase-all` runs again in place (``IterationJob/eraseRuns``): before each
/// further run the store is put back untimed, through the subject's own
/// `persist`, and checked; each run is checked as the first; the iteration's
/// time is the median of the runs; callgrind iterations count one run.
@Suite struct EraseRunsTests {
    /// A ``MemorySubject`` that counts its calls and can be told to put back
    /// one dialog too few, or to leave a dialog behind at one erase-all.
    final class CountingSubject: ForwardingSubject, @unchecked Sendable {
        // @unchecked Sendable is safe: one iteration at a time calls it.
        let inner = MemorySubject()
        /// The call of `persist` (1-based) that drops its last dialog.
        let dropsDialogAtPersist: Int?
        /// The call of `eraseAll` (1-based) that leaves the first dialog.
        let keepsDialogAtEraseAll: Int?
        var persisted: [[Int64]] = []
        var eraseAlls = 0
        var eraseByIds = 0

        init(dropsDialogAtPersist: Int? = nil, keepsDialogAtEraseAll: Int? = nil) {
            self.dropsDialogAtPersist = dropsDialogAtPersist
            self.keepsDialogAtEraseAll = keepsDialogAtEraseAll
        }

        var settingsDescription: String { "counting" }
        func persist(_ dialogs: [Dialog]) throws {
            persisted.append(dialogs.map(\.uniqueId))
            try inner.persist(persisted.count == dropsDialogAtPersist ? Array(dialogs.dropLast()) : dialogs)
        }
        func erase(dialogIds ids: [Int64]) throws -> Int {
            eraseByIds += 1
            return try inner.erase(dialogIds: ids)
        }
        func eraseAll() throws -> Int {
            eraseAlls += 1
            guard eraseAlls == keepsDialogAtEraseAll, let first = try inner.readAll().first else {
                return try inner.eraseAll()
            }
            let erased = try inner.eraseAll()
            try inner.persist([first])
            return erased
        }
    }

    static let size = try! BenchSize(dialogs: 12, messagesPerDialog: 3)

    /// Runs one iteration of `subject` with `eraseRuns` and `seconds`.
    static func run(
        eraseRuns: Int, seconds: Double, countsInstructions: Bool = false,
        operations: [BenchOperation] = BenchOperation.workload, subject: CountingSubject = CountingSubject(),
        gate: (BenchOperation, Int) throws -> Bool = { _, _ in true }
    ) -> (IterationResult, CountingSubject) {
        let backend = Backend(name: "counting", subject: { _, _ in subject })
        var job = IterationJob(backend: backend.name, size: size, seed: 42, durability: .full, operations: operations)
        job.eraseRuns = eraseRuns
        job.eraseRunSeconds = seconds
        job.countsInstructions = countsInstructions
        let data = WorkloadData(dialogs: size.dialogs, messagesPerDialog: size.messagesPerDialog, seed: 42)
        return (WorkloadRunner.run(job, backend: backend, data: data, gate: gate), subject)
    }

    @Test func eraseAllRunsAgainAfterWhatItErasedIsPutBack() throws {
        // A time budget no run of a 12-dialog store can use up: the count decides.
        let (result, subject) = Self.run(eraseRuns: 4, seconds: 3600)
        #expect(result.error == nil, "\(result.error ?? "")")
        #expect(subject.eraseAlls == 4)
        #expect(subject.eraseByIds == 1)
        // The first persist, then three restores of exactly what erase-by-id
        // left: the odd ids of 1…D+P (D = 12, P = 12).
        let left = Array(stride(from: Int64(1), through: 24, by: 2))
        #expect(subject.persisted.count == 4)
        #expect(Array(subject.persisted.dropFirst()) == Array(repeating: left, count: 3))
        let eraseAll = try #require(result.measurements.first { $0.operation == .eraseAll })
        let runs = try #require(eraseAll.runSeconds)
        #expect(runs.count == 4)
        #expect(eraseAll.seconds == SampleStatistics(runs)?.median)
        #expect((eraseAll.restoreSeconds ?? -1) > 0)
        // Units stay those of one run: the figure is the time of one run.
        #expect(eraseAll.units == BenchOperation.eraseAll.expectedUnits(for: Self.size))
        for measurement in result.measurements where !measurement.operation.runsInPlace {
            #expect(measurement.runSeconds == nil, "\(measurement.operation)")
            #expect(measurement.restoreSeconds == nil, "\(measurement.operation)")
        }
    }

    @Test func withoutEraseByIdEverythingIsPutBack() throws {
        let (result, subject) = Self.run(
            eraseRuns: 2, seconds: 3600, operations: [.persist, .update, .eraseAll])
        #expect(result.error == nil, "\(result.error ?? "")")
        #expect(subject.eraseAlls == 2)
        #expect(subject.persisted.last == Array(1...Int64(24)))
    }

    @Test func oneRunByDefaultWithoutTimeOrUnderCallgrind() throws {
        for (runs, seconds, counts) in [(1, 3600.0, false), (5, 0.0, false), (5, 3600.0, true)] {
            let (result, subject) = Self.run(eraseRuns: runs, seconds: seconds, countsInstructions: counts)
            #expect(result.error == nil)
            #expect(subject.eraseAlls == 1)
            #expect(subject.persisted.count == 1)
            #expect(result.measurements.first { $0.operation == .eraseAll }?.runSeconds == nil)
        }
    }

    @Test func theGateEndsTheRuns() throws {
        let (result, subject) = Self.run(eraseRuns: 5, seconds: 3600) { operation, run in
            !(operation == .eraseAll && run == 2)
        }
        #expect(result.error == nil, "\(result.error ?? "")")
        #expect(subject.eraseAlls == 2)
        #expect(result.measurements.first { $0.operation == .eraseAll }?.runSeconds?.count == 2)
    }

    @Test func aStoreNotPutBackWhollyFailsTheIteration() throws {
        // The second persist is the first restore; it loses a dialog.
        let (result, subject) = Self.run(
            eraseRuns: 4, seconds: 3600, subject: CountingSubject(dropsDialogAtPersist: 2))
        #expect(subject.eraseAlls == 1)
        #expect(
            result.error?.hasPrefix("erase-all: put back for erase-all to run again, the store holds 11 dialogs") == true,
            "\(result.error ?? "")")
        #expect(!result.measurements.contains { $0.operation == .eraseAll })
    }

    @Test func everyFurtherRunIsChecked() throws {
        let (result, subject) = Self.run(
            eraseRuns: 4, seconds: 3600, subject: CountingSubject(keepsDialogAtEraseAll: 3))
        #expect(subject.eraseAlls == 3)
        #expect(
            result.error?.hasPrefix("erase-all: erase-all, run again, erased 12 of 12 dialogs and left 1 dialogs") == true,
            "\(result.error ?? "")")
        #expect(!result.measurements.contains { $0.operation == .eraseAll })
    }

    @Test func theReportSaysHowManyRunsAndTheRestoresCountInTheCost() throws {
        let configuration = try RunConfiguration(
            backends: [TestBackends.memory], sizes: [Self.size], iterations: 3, warmup: 0, showsProgress: false,
            readRuns: 2, readRunSeconds: 3600, eraseRuns: 3, eraseRunSeconds: 3600)
        #expect(configuration.jobs().allSatisfy { $0.eraseRuns == 3 && $0.eraseRunSeconds == 3600 })
        let runner = BenchmarkRunner(configuration: configuration, executor: InProcessExecutor(registry: TestBackends.registry))
        let results = try runner.measure()
        let costs = configuration.operationCosts(results, backend: TestBackends.memory.name)
        let eraseAlls = results.compactMap { $0.measurements.first { $0.operation == .eraseAll } }
        let spent = eraseAlls.map { ($0.runSeconds ?? []).reduce(0, +) + ($0.restoreSeconds ?? 0) }
        #expect(costs[.eraseAll] == SampleStatistics(spent)?.median)
        let provenance = Provenance(
            runId: "r", timestamp: "t", gitCommit: "c", host: "h", os: "o", cpu: "p", swiftVersion: "s", build: "b")
        let report = ReportBuilder.report(of: results, configuration: configuration, provenance: provenance)
        for row in report.rows {
            let operation = try #require(BenchOperation(rawValue: row.operation))
            // update runs in place too, once by default (UpdateRunsTests).
            let expected: Int? = operation == .eraseAll ? 3 : operation.isReadOnly ? 2 : operation == .update ? 1 : nil
            #expect(row.runsInPlace == expected, "\(row.operation)")
        }
        let csv = report.csv()
        #expect(try Report(csv: csv).rows.map(\.runsInPlace) == report.rows.map(\.runsInPlace))
        // A report written before the column's rename still reads.
        let old = csv.replacingOccurrences(of: ",runs_in_place,", with: ",read_runs,")
        #expect(old != csv)
        #expect(try Report(csv: old).rows.map(\.runsInPlace) == report.rows.map(\.runsInPlace))
    }

    @Test func theConfigurationRefusesNoRunsOrANegativeTime() {
        #expect(throws: ConfigurationError.self) {
            try RunConfiguration(backends: [TestBackends.memory], sizes: [Self.size], eraseRuns: 0)
        }
        #expect(throws: ConfigurationError.self) {
            try RunConfiguration(backends: [TestBackends.memory], sizes: [Self.size], eraseRunSeconds: -1)
        }
    }
}
