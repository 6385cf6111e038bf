import DAOCore
import DialogGraph
import Foundation
import Testing

@testable import StorageBenchKit

/// A read-only operation runs again in place (``IterationJob/readRuns``): the
/// same calls on the unchanged store, each run checked, the iteration's time
/// the median of its runs; writes run once, and callgrind iterations count
/// one run.
@Suite struct ReadRunsTests {
    /// A ``MemorySubject`` that counts its calls and can answer the `n`th
    /// read-all without its last dialog.
    final class CountingSubject: ForwardingSubject, @unchecked Sendable {
        // @unchecked Sendable is safe: one iteration at a time calls it.
        let inner = MemorySubject()
        let dropsLastDialogAtReadAll: Int?
        /// The call of `read(dialogId:)` (1-based) answered without the dialog's messages.
        let dropsMessagesAtRead: Int?
        var persists = 0
        var readAlls = 0
        var reads = 0
        var queries = 0
        var updates = 0

        init(dropsLastDialogAtReadAll: Int? = nil, dropsMessagesAtRead: Int? = nil) {
            self.dropsLastDialogAtReadAll = dropsLastDialogAtReadAll
            self.dropsMessagesAtRead = dropsMessagesAtRead
        }

        var settingsDescription: String { "counting" }
        func persist(_ dialogs: [Dialog]) throws {
            persists += 1
            try inner.persist(dialogs)
        }
        func update(_ dialogs: [Dialog]) throws {
            updates += 1
            try inner.update(dialogs)
        }
        func readAll() throws -> [Dialog] {
            readAlls += 1
            let all = try inner.readAll()
            return readAlls == dropsLastDialogAtReadAll ? Array(all.dropLast()) : all
        }
        func read(dialogId id: Int64) throws -> Dialog? {
            reads += 1
            let dialog = try inner.read(dialogId: id)
            guard reads == dropsMessagesAtRead, let dialog else { return dialog }
            return Dialog(uniqueId: dialog.uniqueId, isPinned: dialog.isPinned, messages: [])
        }
        func unreadMessages(dialogId id: Int64) throws -> [Message] {
            queries += 1
            return try inner.unreadMessages(dialogId: id)
        }
    }

    static let size = try! BenchSize(dialogs: 12, messagesPerDialog: 3)

    /// Runs one iteration of a fresh counting subject with `readRuns` and
    /// `seconds`; returns the result and the subject.
    static func run(
        readRuns: Int, seconds: Double, minReadRuns: Int = 1, countsInstructions: Bool = false,
        subject: CountingSubject = CountingSubject(), gate: (BenchOperation, Int) throws -> Bool = { _, _ in true }
    ) -> (IterationResult, CountingSubject) {
        let backend = Backend(name: "counting", subject: { _, _ in subject })
        var job = IterationJob(
            backend: backend.name, size: size, seed: 42, durability: .full, operations: BenchOperation.workload)
        job.readRuns = readRuns
        job.readRunSeconds = seconds
        job.minReadRuns = minReadRuns
        job.countsInstructions = countsInstructions
        let data = WorkloadData(dialogs: size.dialogs, messagesPerDialog: size.messagesPerDialog, seed: 42)
        return (WorkloadRunner.run(job, backend: backend, data: data, gate: gate), subject)
    }

    @Test func readOnlyOperationsRunAgainInPlaceAndWritesOnce() throws {
        // A time budget no run of a 12-dialog store can use up: the count decides.
        let (result, subject) = Self.run(readRuns: 5, seconds: 3600)
        #expect(result.error == nil, "\(result.error ?? "")")
        let k = BenchOperation.readById.expectedUnits(for: Self.size)
        #expect(subject.readAlls == 5)
        // K lookups per run, plus the check's reads after update (through read(dialogIds:)).
        #expect(subject.reads == 5 * k)
        #expect(subject.queries == 5 * k)
        #expect(subject.persists == 1)
        #expect(subject.updates == 1)
        for measurement in result.measurements {
            if measurement.operation.isReadOnly {
                let runs = try #require(measurement.runSeconds, "\(measurement.operation)")
                #expect(runs.count == 5)
                #expect(measurement.seconds == SampleStatistics(runs)?.median)
                // Units stay those of one run: the figure is the time of one run.
                #expect(measurement.units == measurement.operation.expectedUnits(for: Self.size))
                if measurement.operation.isPerCall { #expect(measurement.callNanoseconds?.count == 5 * k) }
            } else {
                #expect(measurement.runSeconds == nil, "\(measurement.operation)")
            }
        }
    }

    @Test func aSlowStoreStillRunsTheFewestRunsAsked() throws {
        // No time at all: the time budget alone would stop after one run.
        let (result, subject) = Self.run(readRuns: 5, seconds: 0, minReadRuns: 3)
        #expect(result.error == nil, "\(result.error ?? "")")
        #expect(subject.readAlls == 3)
        #expect(subject.queries == 3 * BenchOperation.query.expectedUnits(for: Self.size))
        for measurement in result.measurements where measurement.operation.isReadOnly {
            #expect(measurement.runSeconds?.count == 3, "\(measurement.operation)")
        }
        // Still never more than --read-runs, and one run under callgrind.
        #expect(Self.run(readRuns: 2, seconds: 0, minReadRuns: 2).1.readAlls == 2)
        #expect(Self.run(readRuns: 5, seconds: 0, minReadRuns: 3, countsInstructions: true).1.readAlls == 1)
    }

    @Test func theGateEndsAnOperationsRunsAndMustLetEveryOperationStart() throws {
        // Told to stop before read-by-id's third run: two runs, and the rest of the workload runs.
        let (result, subject) = Self.run(readRuns: 5, seconds: 3600) { operation, run in
            !(operation == .readById && run == 2)
        }
        #expect(result.error == nil, "\(result.error ?? "")")
        #expect(subject.readAlls == 5)
        #expect(result.measurements.first { $0.operation == .readById }?.runSeconds?.count == 2)
        #expect(result.measurements.first { $0.operation == .query }?.runSeconds?.count == 5)
        #expect(result.measurements.count == BenchOperation.workload.count)
        // Refusing an operation's first run is a failure, not a skipped operation.
        let (refused, _) = Self.run(readRuns: 5, seconds: 3600) { operation, run in
            !(operation == .update && run == 0)
        }
        #expect(refused.error?.hasPrefix("update:") == true, "\(refused.error ?? "")")
    }

    @Test func oneRunByDefaultWithoutTimeOrUnderCallgrind() throws {
        for (runs, seconds, counts) in [(1, 3600.0, false), (5, 0.0, false), (5, 3600.0, true)] {
            let (result, subject) = Self.run(readRuns: runs, seconds: seconds, countsInstructions: counts)
            #expect(result.error == nil)
            #expect(subject.readAlls == 1)
            #expect(subject.queries == BenchOperation.query.expectedUnits(for: Self.size))
            #expect(result.measurements.allSatisfy { $0.runSeconds == nil })
        }
    }

    @Test func everyRunIsChecked() throws {
        let (result, subject) = Self.run(
            readRuns: 5, seconds: 3600, subject: CountingSubject(dropsLastDialogAtReadAll: 3))
        #expect(subject.readAlls == 3)
        #expect(result.error?.hasPrefix("read-all: read-all returned 11 dialogs") == true, "\(result.error ?? "")")
        #expect(!result.measurements.contains { $0.operation == .readAll })
    }

    @Test func everyRunOfReadByIdIsChecked() throws {
        // The first lookup of the second run answers the dialog without its messages.
        let k = BenchOperation.readById.expectedUnits(for: Self.size)
        let (result, subject) = Self.run(
            readRuns: 5, seconds: 3600, subject: CountingSubject(dropsMessagesAtRead: k + 1))
        #expect(subject.reads == 2 * k)
        #expect(result.error?.hasPrefix("read-by-id: ") == true, "\(result.error ?? "")")
        #expect(!result.measurements.contains { $0.operation == .readById })
    }

    @Test func theReportSaysHowManyRunsAnIterationTook() throws {
        let configuration = try RunConfiguration(
            backends: [TestBackends.memory], sizes: [Self.size], iterations: 3, warmup: 0, showsProgress: false,
            readRuns: 4, readRunSeconds: 3600, minReadRuns: 2)
        #expect(
            configuration.jobs().allSatisfy { $0.readRuns == 4 && $0.readRunSeconds == 3600 && $0.minReadRuns == 2 })
        let runner = BenchmarkRunner(configuration: configuration, executor: InProcessExecutor(registry: TestBackends.registry))
        let provenance = Provenance(
            runId: "r", timestamp: "t", gitCommit: "c", host: "h", os: "o", cpu: "p", swiftVersion: "s", build: "b")
        let report = try runner.run(provenance: provenance)
        for row in report.rows {
            let operation = try #require(BenchOperation(rawValue: row.operation))
            // erase-all runs in place too, once by default (--erase-runs 1).
            let expected: Int? = operation.isReadOnly ? 4 : operation.runsInPlace ? 1 : nil
            #expect(row.runsInPlace == expected, "\(row.operation)")
        }
        let parsed = try Report(csv: report.csv())
        #expect(parsed.rows.map(\.runsInPlace) == report.rows.map(\.runsInPlace))
    }

    @Test func theConfigurationRefusesNoRunsOrANegativeTime() {
        #expect(throws: ConfigurationError.self) {
            try RunConfiguration(backends: [TestBackends.memory], sizes: [Self.size], readRuns: 0)
        }
        #expect(throws: ConfigurationError.self) {
            try RunConfiguration(backends: [TestBackends.memory], sizes: [Self.size], readRunSeconds: -1)
        }
        #expect(throws: ConfigurationError.self) {
            try RunConfiguration(backends: [TestBackends.memory], sizes: [Self.size], readRuns: 4, minReadRuns: 5)
        }
    }
}
