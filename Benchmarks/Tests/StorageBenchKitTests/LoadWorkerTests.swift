import DAOCore
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import StorageBenchKit

/// Each backend × mix of a load sweep runs in a worker process of its own,
/// which reports its peak resident memory; the report divides it by the raw
/// engine's.
@Suite("Load workers: a process per backend × mix")
struct LoadWorkerTests {
    /// A small mix written to `directory` and read back from there (so it knows its file).
    static func mixFile(in directory: TemporaryDirectory) throws -> LoadMix {
        let object: [String: Any] = [
            "name": "worker-test", "dialogs": 30, "messagesPerDialog": 5,
            "operations": ["read": 0.5, "update": 0.5], "distribution": "zipfian",
        ]
        let url = directory.file("worker-test.json")
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        return try LoadMix.load(url)
    }

    static func options(_ mix: LoadMix, _ backends: [LoadBackend]) -> LoadSweepOptions {
        LoadSweepOptions(
            mixes: [mix], backends: backends, clients: [1, 2], durationSeconds: nil, operationCount: 40,
            targetRate: nil, warmupSeconds: 0, durability: .none)
    }

    /// A backend known by name only: its workers open it.
    static func named(_ name: String, reference: String? = nil) -> LoadBackend {
        LoadBackend(name: name, reference: reference) { _, _ in
            throw StorageError(.engine, .open, message: "opened in the test's process, not in a worker")
        }
    }

    @Test func aMixReadFromAFileKnowsItAndAJobCarriesTheOverrides() throws {
        let directory = try TemporaryDirectory("load-worker")
        let mix = try Self.mixFile(in: directory)
        #expect(mix.file == directory.file("worker-test.json").path)
        let job = LoadWorkerJob(Self.options(mix, []), mixFile: try #require(mix.file), backend: "lmdb")
        let decoded = try JSONDecoder().decode(LoadWorkerJob.self, from: try JSONEncoder().encode(job))
        #expect(decoded == job)
        #expect(decoded.clients == [1, 2] && decoded.operationCount == 40 && decoded.durability == "none")
    }

    /// The worker's side, in this process: one backend at each client count,
    /// each result with the process's peak (never below the rise since the
    /// store opened, and never falling from one client count to the next).
    @Test func aJobRunsItsBackendAtEachClientCountAndReportsThePeak() async throws {
        let directory = try TemporaryDirectory("load-worker")
        let mix = try Self.mixFile(in: directory)
        let job = LoadWorkerJob(Self.options(mix, []), mixFile: try #require(mix.file), backend: "lmdb")
        let json = String(decoding: try JSONEncoder().encode(job), as: UTF8.self)
        let output = try await LoadWorkerJob.run(
            jobJSON: json, registry: .standard, progress: { _ in }, problems: { Issue.record("\($0)") })
        let results = try JSONDecoder().decode([LoadRunResult].self, from: Data(output.utf8))
        #expect(results.map(\.clients) == [1, 2])
        #expect(results.allSatisfy { $0.backend == "lmdb" && $0.mix == "worker-test" && $0.failure == nil })
        #expect(results.allSatisfy { $0.all?.operations == 40 })
        let peaks = try results.map { try #require($0.peakResident) }
        #expect(peaks.allSatisfy { $0 > 1 << 20 })
        #expect(peaks[1] >= peaks[0])
        for result in results {
            let rise = try #require(result.peakResidentRise)
            #expect(try #require(result.peakResident) >= rise)
        }
    }

    @Test func aJobForAnUnknownBackendIsRefused() async throws {
        let directory = try TemporaryDirectory("load-worker")
        let mix = try Self.mixFile(in: directory)
        let job = LoadWorkerJob(Self.options(mix, []), mixFile: try #require(mix.file), backend: "no-such-engine")
        let json = String(decoding: try JSONEncoder().encode(job), as: UTF8.self)
        await #expect(throws: ConfigurationError.self) {
            _ = try await LoadWorkerJob.run(jobJSON: json, registry: .standard, progress: { _ in }, problems: { _ in })
        }
    }

    /// The sweep's side: each backend's results come from its own worker (a
    /// script standing in for the program, answering by the job's backend);
    /// a worker that fails gives its backend failed rows and the others run;
    /// the report divides each peak by the raw engine's.
    @Test func theSweepTakesEachBackendsResultsFromItsWorker() async throws {
        let directory = try TemporaryDirectory("load-worker")
        let mix = try Self.mixFile(in: directory)
        func result(_ backend: String, reference: String?, clients: Int, peakMiB: Int64) -> LoadRunResult {
            LoadRunResult(
                backend: backend, reference: reference, mix: mix.name, mixDescription: mix.proportionsDescription,
                clients: clients, api: "test", settings: "test", durability: "none", dialogs: mix.dialogs,
                messagesPerDialog: mix.messagesPerDialog, seconds: 1, targetRate: nil, seed: mix.seed,
                observerSnapshots: nil, peakResidentRise: 1 << 20, peakResident: peakMiB << 20,
                figures: [
                    LoadOperationFigures(
                        operation: "all", operations: 40, throughput: 40, errors: 0, retries: 0, rows: 40, p50: 1,
                        p90: 2, p99: 3, p999: 4, max: 5, firstError: nil)
                ], failure: nil)
        }
        let encoder = JSONEncoder()
        let dao = directory.file("dao.json"), raw = directory.file("raw.json")
        try encoder.encode([1, 2].map { result("lmdb", reference: "lmdb-raw", clients: $0, peakMiB: 60) }).write(to: dao)
        try encoder.encode([1, 2].map { result("lmdb-raw", reference: nil, clients: $0, peakMiB: 40) }).write(to: raw)
        let script = """
            case "$1" in
            *'"backend":"lmdb"'*) cat '\(dao.path)' ;;
            *'"backend":"lmdb-raw"'*) cat '\(raw.path)' ;;
            *) exit 3 ;;
            esac
            """
        let workers = LoadWorkers(executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", script, "sh"])
        let backends = [Self.named("json"), Self.named("lmdb", reference: "lmdb-raw"), Self.named("lmdb-raw")]
        let problems = ProblemLog()
        let results = await LoadSweep.run(
            Self.options(mix, backends), workers: workers, progress: { _ in }, problems: { problems.add($0) })
        #expect(results.map(\.backend) == ["json", "json", "lmdb", "lmdb", "lmdb-raw", "lmdb-raw"])
        #expect(results.prefix(2).allSatisfy { $0.failure?.contains("status 3") == true })
        #expect(problems.lines.count == 1 && problems.lines.first?.contains("json") == true)
        let rows = LoadReport.rows(results)
        let lmdb = rows.filter { $0.backend == "lmdb" }
        #expect(lmdb.count == 2 && lmdb.allSatisfy { $0.peakResidentMiB == 60 && $0.peakResidentRatioToRaw == 1.5 })
        #expect(rows.filter { $0.backend == "lmdb-raw" }.allSatisfy { $0.peakResidentRatioToRaw == nil })
        // The columns survive the CSV.
        let reread = try CSV.parse(LoadReport.csv(rows)).dropFirst().map {
            try LoadReportRow(fields: $0, header: LoadReportRow.header)
        }
        #expect(reread.map(\.peakResidentMiB) == rows.map(\.peakResidentMiB))
        #expect(reread.map(\.peakResidentRatioToRaw) == rows.map(\.peakResidentRatioToRaw))
        let summary = LoadReport.summary(rows)
        #expect(summary.contains("mem ÷ raw") && summary.contains("1.50"), "\(summary)")
    }

    /// The program's own `load-worker` command, beside this test (built with
    /// the tests), runs a backend of the library and one of the references,
    /// each in its process.
    @Test func theProgramsWorkersRunABackendAndItsRawEngine() async throws {
        let program = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("storage-bench")
        try #require(FileManager.default.isExecutableFile(atPath: program.path), "build storage-bench with the tests")
        let directory = try TemporaryDirectory("load-worker")
        let mix = try Self.mixFile(in: directory)
        let workers = LoadWorkers(executable: program, arguments: ["load-worker", "--no-progress", "--job"])
        let backends = [Self.named("lmdb", reference: "lmdb-raw"), Self.named("lmdb-raw")]
        let results = await LoadSweep.run(
            Self.options(mix, backends), workers: workers, progress: { _ in }, problems: { Issue.record("\($0)") })
        #expect(results.map(\.backend) == ["lmdb", "lmdb", "lmdb-raw", "lmdb-raw"])
        for result in results {
            #expect(result.failure == nil, "\(result.backend): \(result.failure ?? "")")
            #expect(result.all?.operations == 40)
            #expect((result.peakResident ?? 0) > 1 << 20)
        }
        let rows = LoadReport.rows(results).filter { $0.backend == "lmdb" && $0.operation == "all" }
        #expect(rows.count == 2 && rows.allSatisfy { ($0.peakResidentRatioToRaw ?? 0) > 0 })
    }
}

/// Lines told to a sweep's `problems`, from any thread.
final class ProblemLog: Sendable {
    private let stored = Mutex<[String]>([])
    func add(_ line: String) { stored.withLock { $0.append(line) } }
    var lines: [String] { stored.withLock { $0 } }
}
