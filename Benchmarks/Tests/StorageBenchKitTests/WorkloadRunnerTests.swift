import DAOCore
import DialogGraph
import Foundation
import SQLiteStorage
import TestSupport
import Testing

@testable import StorageBenchKit

@Suite struct WorkloadRunnerTests {
    static func size(_ d: Int, _ m: Int) throws -> BenchSize { try BenchSize(dialogs: d, messagesPerDialog: m) }

    static func run(_ backend: Backend, _ size: BenchSize, operations: [BenchOperation] = BenchOperation.workload)
        -> IterationResult
    {
        let job = IterationJob(
            backend: backend.name, size: size, seed: 42, durability: .full, operations: operations)
        let data = WorkloadData(dialogs: size.dialogs, messagesPerDialog: size.messagesPerDialog, seed: 42)
        return WorkloadRunner.run(job, backend: backend, data: data)
    }

    @Test func theGeneratorIsDeterministic() {
        let a = WorkloadData(dialogs: 30, messagesPerDialog: 4, seed: 9)
        let b = WorkloadData(dialogs: 30, messagesPerDialog: 4, seed: 9)
        #expect(a.fingerprint == b.fingerprint)
        #expect(a.initial == b.initial && a.extra == b.extra)
        #expect(a.readIds == b.readIds && a.queryIds == b.queryIds)
        let c = WorkloadData(dialogs: 30, messagesPerDialog: 4, seed: 10)
        #expect(a.fingerprint != c.fingerprint)
        #expect(String(WorkloadData(dialogs: 100, messagesPerDialog: 10).fingerprint, radix: 16) == "fcd2be7834a2b2cf")
    }

    @Test func everyOperationCountsItsUnits() throws {
        let size = try Self.size(12, 3)
        let result = Self.run(TestBackends.memory, size)
        #expect(result.error == nil)
        #expect(result.measurements.map(\.operation) == BenchOperation.workload)
        for measurement in result.measurements {
            #expect(measurement.units == measurement.operation.expectedUnits(for: size), "\(measurement.operation)")
            #expect(measurement.seconds > 0)
            #expect(measurement.note == nil)
            if measurement.operation.isPerCall {
                #expect(measurement.callNanoseconds?.count == measurement.units)
            } else {
                #expect(measurement.callNanoseconds == nil)
            }
        }
        #expect(result.bytesOnDisk == 0)
    }

    @Test func theExpectedUnitsFollowTheWorkload() throws {
        let size = try Self.size(1000, 100)
        let units = Dictionary(uniqueKeysWithValues: BenchOperation.workload.map { ($0, $0.expectedUnits(for: size)) })
        #expect(units[.persist] == 100_000)
        #expect(units[.readAll] == 100_000)
        #expect(units[.readById] == 1000)
        #expect(units[.query] == 1000)
        #expect(units[.update] == 100_000)
        #expect(units[.persistSingle] == 200)
        #expect(units[.eraseById] == 60_000)
        #expect(units[.eraseAll] == 60_000)
        let small = try Self.size(7, 2)  // ids 1…14: 7 even, 7 odd
        #expect(BenchOperation.eraseById.expectedUnits(for: small) == 14)
        #expect(BenchOperation.eraseAll.expectedUnits(for: small) == 14)
    }

    @Test func aBoundedBackendTimesFewerSingleCallsAndSaysSo() throws {
        let size = try Self.size(12, 3)
        let result = Self.run(TestBackends.bounded, size)
        #expect(result.error == nil)
        let single = try #require(result.measurements.first { $0.operation == .persistSingle })
        #expect(single.units == 3)
        #expect(single.callNanoseconds?.count == 3)
        #expect(single.note?.contains("timed 3 of 12") == true)
        // The untimed rest was persisted: the erasures count every extra dialog.
        let byId = try #require(result.measurements.first { $0.operation == .eraseById })
        #expect(byId.units == BenchOperation.eraseById.expectedUnits(for: size))
    }

    @Test func aSubsetSkipsUnneededWorkButKeepsTheStoreConsistent() throws {
        let size = try Self.size(9, 2)
        let result = Self.run(TestBackends.memory, size, operations: [.query, .eraseAll])
        #expect(result.error == nil)
        #expect(result.measurements.map(\.operation) == [.query, .eraseAll])
        // No erase-by-id ran, so erase-all erases all D + P dialogs.
        #expect(result.measurements.last?.units == (9 + 9) * 2)
        #expect(result.bytesOnDisk == nil)
    }

    @Test func aBackendThatReturnsWrongDataFailsTheCheck() throws {
        let result = Self.run(TestBackends.broken, try Self.size(5, 3))
        let error = try #require(result.error)
        #expect(error.hasPrefix("update:"))
        #expect(error.contains("text"))
        #expect(!result.measurements.contains { $0.operation == .update })
    }

    @Test func aSubjectWithoutADAORunsTheSameWorkloadAndChecks() throws {
        let size = try Self.size(12, 3)
        let plain = Backend(name: "plain", reference: "memory", subject: { _, _ in MemorySubject() })
        #expect(plain.reference == "memory")
        let result = Self.run(plain, size)
        #expect(result.error == nil)
        #expect(result.settings == "memory")
        #expect(result.measurements.map(\.operation) == BenchOperation.workload)
        for measurement in result.measurements {
            #expect(measurement.units == measurement.operation.expectedUnits(for: size), "\(measurement.operation)")
        }
        let wrong = Backend(name: "wrong", subject: { _, _ in MemorySubject(sortsQueryWrongly: true) })
        let failed = Self.run(wrong, try Self.size(12, 20))  // enough unread messages to have an order
        #expect(failed.error?.hasPrefix("query:") == true, "\(failed.error ?? "no error")")
        #expect(!failed.measurements.contains { $0.operation == .query })
    }

    @Test func aBackendThatCannotOpenFails() throws {
        let result = Self.run(TestBackends.failing, try Self.size(5, 3))
        #expect(result.error?.contains("cannot open") == true)
        #expect(result.measurements.isEmpty)
    }

    @Test func eachIterationGetsAFreshDirectoryThatIsRemoved() throws {
        final class Seen: @unchecked Sendable {
            // @unchecked Sendable is safe: the test runs the iterations one after another.
            var directories: [URL] = []
        }
        let seen = Seen()
        let backend = Backend("spy") { directory, _ in
            let contents = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(contents.isEmpty)
            seen.directories.append(directory)
            return MemoryStore(location: directory)
        }
        let size = try Self.size(3, 1)
        _ = Self.run(backend, size)
        _ = Self.run(backend, size)
        #expect(seen.directories.count == 2)
        #expect(Set(seen.directories).count == 2)
        for directory in seen.directories {
            #expect(!FileManager.default.fileExists(atPath: directory.path))
        }
    }

    @Test func theCheckComparesFieldByField() throws {
        let data = WorkloadData(dialogs: 2, messagesPerDialog: 2)
        let dialog = data.initial[0]
        try WorkloadRunner.compare(dialog, dialog, what: "same")
        let changed = Dialog(
            uniqueId: dialog.uniqueId, isPinned: dialog.isPinned,
            messages: [dialog.messages[0], dialog.messages[1].with(isRead: !dialog.messages[1].isRead)])
        #expect(throws: WorkloadRunner.CheckFailure.self) { try WorkloadRunner.compare(changed, dialog, what: "x") }
        #expect(WorkloadRunner.sampleIds(count: 1) == [1])
        #expect(WorkloadRunner.sampleIds(count: 5) == [1, 2, 3, 4, 5])
        let spread = WorkloadRunner.sampleIds(count: 1000)
        #expect(spread.count == 16 && spread.first == 1 && spread.last == 1000)
    }
}

@Suite struct RunnerTests {
    @Test func backendsInterleaveAndRotateFromRoundToRound() throws {
        let registry = BackendRegistry([
            Backend("a") { d, _ in MemoryStore(location: d) }, Backend("b") { d, _ in MemoryStore(location: d) },
            Backend("c") { d, _ in MemoryStore(location: d) },
        ])
        let configuration = try RunConfiguration(
            backends: registry.backends, sizes: [BenchSize(dialogs: 2, messagesPerDialog: 1)], iterations: 2,
            warmup: 1, showsProgress: false)
        let jobs = configuration.jobs()
        #expect(jobs.map(\.backend) == ["a", "b", "c", "b", "c", "a", "c", "a", "b"])
        #expect(jobs.map(\.isWarmup) == [true, true, true] + [Bool](repeating: false, count: 6))
        #expect(jobs.allSatisfy { $0.progressLabel == nil })
    }

    @Test func theReportHasARowPerBackendAndOperationAndErrorRowsForFailures() throws {
        let configuration = try RunConfiguration(
            backends: [TestBackends.memory, TestBackends.broken],
            sizes: [BenchSize(dialogs: 6, messagesPerDialog: 2), BenchSize(dialogs: 4, messagesPerDialog: 3)],
            iterations: 2, warmup: 1, showsProgress: false)
        let provenance = Provenance(
            runId: "t", timestamp: "now", gitCommit: "", host: "h", os: "o", cpu: "c", swiftVersion: "6", build: "debug")
        let runner = BenchmarkRunner(configuration: configuration, executor: InProcessExecutor(registry: TestBackends.registry))
        let results = try runner.measure()
        #expect(results.count == 2 * 2 * 2)  // backends × sizes × measured iterations
        let report = ReportBuilder.report(of: results, configuration: configuration, provenance: provenance)
        #expect(report.rows.count == 2 * 2 * 8)
        for row in report.rows where row.backend == "memory" {
            #expect(row.error.isEmpty)
            #expect(row.iterations == 2)
            #expect((row.throughputPerSecond ?? 0) > 0)
            #expect(row.workload == "dialog-graph-v1")
            let operation = try #require(BenchOperation(rawValue: row.operation))
            #expect(row.units == operation.expectedUnits(for: try BenchSize(dialogs: row.dialogs, messagesPerDialog: row.messagesPerDialog)))
            #expect((row.p50Microseconds != nil) == operation.isPerCall)
            #expect(row.peakRSSBytes == nil)  // in-process: not measured per backend
            #expect(row.bytesOnDisk == 0)
            let median = try #require(row.medianSeconds)
            #expect(try #require(row.minSeconds) <= median && median <= (try #require(row.maxSeconds)))
        }
        for row in report.rows where row.backend == "broken" {
            #expect(!row.error.isEmpty)
            #expect(row.throughputPerSecond == nil && row.medianSeconds == nil)
        }
        let table = SummaryTable.detailed(report)
        #expect(table.contains("1.00×"))
        #expect(table.contains("error"))
        #expect(table.contains("6 dialogs × 2 messages"))
    }

    @Test func eachRowIsDividedByItsReferenceOfTheSameRunSizeAndOperation() throws {
        let provenance = Provenance(
            runId: "t", timestamp: "now", gitCommit: "", host: "h", os: "o", cpu: "c", swiftVersion: "6", build: "debug")
        func row(_ backend: String, _ operation: String, _ dialogs: Int, _ throughput: Double?, reference: String = "",
                 error: String = "") -> ReportRow {
            var row = ReportRow(
                workload: "dialog-graph-v1", provenance: provenance, backend: backend, durability: "full",
                operation: operation, dialogs: dialogs, messagesPerDialog: 2, units: 1, unit: "messages", iterations: 1,
                throughputPerSecond: throughput, error: error)
            row.reference = reference
            return row
        }
        let rows = ReportBuilder.ratiosToRaw([
            row("dao", "persist", 10, 50, reference: "raw"),
            row("raw", "persist", 10, 200),
            row("dao", "query", 10, 30, reference: "raw"),
            row("raw", "query", 10, 10),
            row("dao", "persist", 20, 50, reference: "raw"),  // no raw row at this size
            row("dao", "read-all", 10, nil, reference: "raw", error: "boom"),
            row("raw", "read-all", 10, 100),
            row("other", "persist", 10, 100, reference: "absent"),
        ])
        #expect(rows.map(\.ratioToRaw) == [0.25, nil, 3, nil, nil, nil, nil, nil])
        let report = Report(rows: rows)
        let table = SummaryTable.detailed(report)
        #expect(table.contains("dao ÷ raw"))
        #expect(table.contains("0.25×"))
        #expect(table.contains("3.00×"))
        #expect(table.contains("other ÷ absent"))
        let csv = report.csv()
        #expect(csv.hasPrefix(ReportRow.columns.joined(separator: ",")))
        #expect(Array(ReportRow.columns[33..<35]) == ["reference", "ratio_to_raw"])
        let back = try Report(csv: csv)
        #expect(back == report)
        #expect(back.rows[0].ratioToRaw == 0.25 && back.rows[0].reference == "raw")
        #expect(report.markdown().contains("0.25× raw"))
        #expect(try report.json().contains("\"ratio_to_raw\" : 0.25"))
        // A table without any ratio has no ratio section.
        #expect(!SummaryTable.detailed(Report(rows: [row("raw", "persist", 10, 200)])).contains("ratio to the raw engine"))
    }

    @Test func aRunWithTheReferenceFillsTheRatioColumn() throws {
        let subject = Backend(name: "plain", subject: { _, _ in MemorySubject() })
        let dao = Backend("memory", reference: "plain") { directory, _ in MemoryStore(location: directory) }
        let configuration = try RunConfiguration(
            backends: [dao, subject], sizes: [BenchSize(dialogs: 6, messagesPerDialog: 2)], iterations: 1, warmup: 0,
            showsProgress: false)
        let provenance = Provenance(
            runId: "t", timestamp: "now", gitCommit: "", host: "h", os: "o", cpu: "c", swiftVersion: "6", build: "debug")
        let runner = BenchmarkRunner(
            configuration: configuration, executor: InProcessExecutor(registry: BackendRegistry([dao, subject])))
        let report = try runner.run(provenance: provenance)
        for row in report.rows {
            if row.backend == "memory" {
                let ratio = try #require(row.ratioToRaw)
                let raw = try #require(report.rows.first { $0.backend == "plain" && $0.operation == row.operation })
                #expect(abs(ratio - (row.throughputPerSecond ?? 0) / (raw.throughputPerSecond ?? 1)) < 1e-12)
                #expect(row.reference == "plain")
            } else {
                #expect(row.ratioToRaw == nil && row.reference.isEmpty)
            }
        }
    }

    @Test func theWriterWritesEachFormatAndLatest() throws {
        try withTemporaryDirectory { directory in
            let provenance = Provenance(
                runId: "t", timestamp: "now", gitCommit: "", host: "h", os: "o", cpu: "c", swiftVersion: "6",
                build: "debug")
            let report = Report(rows: [
                ReportRow(
                    workload: "dialog-graph-v1", provenance: provenance, backend: "memory", durability: "full",
                    operation: "persist", dialogs: 1, messagesPerDialog: 1, units: 1, unit: "messages",
                    iterations: 1, medianSeconds: 0.5, throughputPerSecond: 2)
            ])
            let out = directory.appendingPathComponent("out", isDirectory: true)
            let written = try ReportWriter.write(
                report, to: out.appendingPathComponent("run.csv"), formats: [.csv, .json, .markdown],
                latestDirectory: out)
            #expect(written.map(\.lastPathComponent) == ["run.csv", "latest.csv", "run.json", "run.md"])
            let latest = try Report(contentsOf: directory.appendingPathComponent("out/latest.csv"))
            #expect(latest == report)
            // Anywhere but the results folder, no latest.csv.
            let elsewhere = try ReportWriter.write(
                report, to: directory.appendingPathComponent("elsewhere/run.csv"), formats: [.csv], latestDirectory: out)
            #expect(elsewhere.map(\.lastPathComponent) == ["run.csv"])
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("elsewhere/latest.csv").path))
            let json = try String(contentsOf: directory.appendingPathComponent("out/run.json"), encoding: .utf8)
            #expect(json.contains("\"throughput_per_s\" : 2"))
            let markdown = try String(contentsOf: directory.appendingPathComponent("out/run.md"), encoding: .utf8)
            #expect(markdown.contains("| memory | full | 1x1 | persist |"))
        }
    }
}

@Suite struct StandardBackendTests {
    /// Every registered backend runs the whole workload at a tiny size and passes the checks.
    @Test(arguments: BackendRegistry.standard.names)
    func aRegisteredBackendRunsTheWorkload(_ name: String) throws {
        let backend = try #require(BackendRegistry.standard.backend(named: name))
        let size = try BenchSize(dialogs: 12, messagesPerDialog: 3)
        let job = IterationJob(backend: name, size: size, seed: 42, durability: .none, operations: BenchOperation.workload)
        let result = WorkloadRunner.run(job, backend: backend, data: WorkloadData(dialogs: 12, messagesPerDialog: 3))
        #expect(result.error == nil)
        #expect(result.measurements.map(\.operation) == BenchOperation.workload)
        #expect((result.bytesOnDisk ?? 0) > 0)
        for measurement in result.measurements where measurement.operation != .persistSingle {
            #expect(measurement.units == measurement.operation.expectedUnits(for: size))
        }
    }

    /// Each store reports the settings it has in force, read back from the engine:
    /// durability `none` shows as no syncing, `full` as syncing.
    @Test(arguments: [Durability.none, .full])
    func storesReportTheSettingsInForce(_ durability: Durability) throws {
        let expected: [String: String] = durability == .none
            ? ["sqlite": "synchronous=OFF", "lmdb": "NOSYNC", "json": "sync=none", "plist": "sync=none"]
            : ["sqlite": "synchronous=FULL", "json": "sync=fsync", "plist": "sync=fsync"]
        for name in BackendRegistry.standard.names {
            let backend = try #require(BackendRegistry.standard.backend(named: name))
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let settings = try backend.open(directory, durability).settingsDescription
            #expect(!settings.isEmpty, "\(name) reports no settings")
            if let fragment = expected[name] {
                #expect(settings.contains(fragment), "\(name): \(settings)")
            }
            if name == "sqlite" {
                #expect(settings.contains("readers=\(SQLiteDatabase.defaultReaderCount)"), "\(settings)")
            }
            if name == "lmdb" {
                #expect(settings.contains("reader_threads=\(StoreExecutor.defaultReaderCount)"), "\(settings)")
            }
            if name == "lmdb" && durability == .full {
                #expect(!settings.contains("NOSYNC"), "\(settings)")
            }
        }
    }

    /// A worker's result carries the settings into the report row.
    @Test func settingsReachTheReport() throws {
        let backend = try #require(BackendRegistry.standard.backend(named: "sqlite"))
        let size = try BenchSize(dialogs: 4, messagesPerDialog: 2)
        let job = IterationJob(backend: "sqlite", size: size, seed: 42, durability: .full, operations: [.persist])
        let result = WorkloadRunner.run(job, backend: backend, data: WorkloadData(dialogs: 4, messagesPerDialog: 2))
        #expect(result.settings?.contains("journal_mode=wal") == true)
    }
}
