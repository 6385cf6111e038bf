import ArgumentParser
import DAOCore
import Foundation
import StorageBenchKit

/// `storage-bench`: runs the dialog-graph workload on every backend and compares reports.
struct StorageBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storage-bench",
        abstract: "Benchmarks the storage backends on the dialog-graph workload (WORKLOAD.md).",
        subcommands: [Run.self, Compare.self, Backends.self, Worker.self, Migrate.self]
    )
}

/// `storage-bench run`.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the workload on the chosen backends and write a report.",
        discussion: """
            Each backend × iteration runs in a worker process of its own, on a fresh store in a \
            fresh temporary directory. Backends take turns within each round and their order \
            rotates from round to round. Exit status: 0 when every backend ran, 3 when a backend \
            failed (its rows carry the error), 64 for invalid arguments.
            """
    )

    @Option(help: "Comma-separated backends, or all (\(BackendRegistry.standard.names.joined(separator: ", "))).")
    var backends = "all"

    @Option(help: "Dialogs in the graph (D; default 1000). Not with --sizes.")
    var dialogs: Int?

    @Option(name: .customLong("messages-per-dialog"), help: "Messages per dialog (M; default 100). Not with --sizes.")
    var messagesPerDialog: Int?

    @Option(help: "A sweep of sizes DxM, comma-separated, e.g. 100x10,1000x100,10000x100.")
    var sizes: String?

    @Option(help: "Measured iterations per backend and size.")
    var iterations = 5

    @Option(help: "Warm-up iterations run first and discarded.")
    var warmup = 1

    @Option(help: "The generator seed.")
    var seed: UInt64 = 42

    @Option(help: "full or none (or both, comma-separated).")
    var durability = "full"

    @Option(help: "Comma-separated operations to report, or all (\(BenchOperation.allCases.map(\.rawValue).joined(separator: ", "))).")
    var operations = "all"

    @Option(help: "The report file (default results/<UTC date-time>-<host>.csv); other formats take its name with their extension.")
    var output: String?

    @Option(help: "csv, json or markdown; repeat or comma-separate for several.")
    var format: [String] = ["csv"]

    @Flag(name: .customLong("no-progress"), help: "Do not show progress on standard error.")
    var noProgress = false

    @Flag(name: .customLong("in-process"), help: .hidden)
    var inProcess = false

    /// Everything the options say, checked.
    struct Plan {
        var configuration: RunConfiguration
        var formats: [ReportFormat]
    }

    func plan() throws -> Plan {
        do {
            let chosen = try BackendRegistry.standard.select(backends)
            let sweep: [BenchSize]
            if let sizes {
                guard dialogs == nil, messagesPerDialog == nil else {
                    throw ConfigurationError("give either --sizes or --dialogs/--messages-per-dialog, not both")
                }
                sweep = try BenchSize.parseSweep(sizes)
            } else {
                sweep = [try BenchSize(dialogs: dialogs ?? 1000, messagesPerDialog: messagesPerDialog ?? 100)]
            }
            let configuration = try RunConfiguration(
                backends: chosen, sizes: sweep, durabilities: try parseDurabilities(durability),
                operations: try BenchOperation.parseList(operations), iterations: iterations, warmup: warmup,
                seed: seed, showsProgress: !noProgress)
            let formats = try ReportFormat.parseList(format.joined(separator: ","))
            if let output { try ReportWriter.validate(URL(fileURLWithPath: output)) }
            return Plan(configuration: configuration, formats: formats)
        } catch let error as ConfigurationError {
            throw ValidationError(error.message)
        }
    }

    func validate() throws {
        _ = try plan()
    }

    func run() throws {
        let plan = try plan()
        if SystemInfo.build != "release" {
            FileHandle.standardError.write(
                Data("storage-bench: warning: this is a \(SystemInfo.build) build; measure with -c release (make bench)\n".utf8))
        }
        let started = Date()
        let host = SystemInfo.host
        let timestamp = ISO8601DateFormatter().string(from: started)
        let provenance = Provenance(
            runId: "\(ReportWriter.compactTimestamp(started))-\(host)-\(UUID().uuidString.prefix(8).lowercased())",
            timestamp: timestamp, gitCommit: SystemInfo.gitCommit, host: host, os: SystemInfo.os,
            cpu: SystemInfo.cpu, swiftVersion: SystemInfo.swiftVersion, build: SystemInfo.build)
        let executor: any IterationExecutor
        if inProcess {
            executor = InProcessExecutor(registry: .standard)
        } else {
            guard let executable = SystemInfo.executableURL else {
                throw ValidationError("cannot find this program's own path to start its worker processes")
            }
            executor = SubprocessExecutor(executable: executable)
        }
        let report = try BenchmarkRunner(configuration: plan.configuration, executor: executor)
            .run(provenance: provenance)
        let outputURL = output.map { URL(fileURLWithPath: $0) }
            ?? ReportWriter.defaultOutput(startedAt: started, host: host)
        let written = try ReportWriter.write(report, to: outputURL, formats: plan.formats)
        print(SummaryTable.render(report), terminator: "")
        for url in written {
            FileHandle.standardError.write(Data("wrote \(url.relativePath)\n".utf8))
        }
        if report.rows.contains(where: { !$0.error.isEmpty }) {
            FileHandle.standardError.write(Data("storage-bench: a backend failed; see the error column\n".utf8))
            throw ExitCode(3)
        }
    }
}

/// `storage-bench compare`.
struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare a report with a baseline, row by row.",
        discussion: """
            Rows are matched by backend × durability × size × operation. A row regresses when its \
            throughput fell by more than the threshold and lies outside the min–max spread of both \
            runs. Exit status: 0 when nothing regressed and no baseline row is missing; 1 when a row \
            regressed or now fails; 2 when nothing regressed but baseline rows are missing (or the \
            reports cannot be compared); 64 for invalid arguments.
            """
    )

    @Argument(help: "The baseline report (CSV).")
    var baseline: String

    @Argument(help: "The current report (CSV).")
    var current: String

    @Option(help: "The largest slowdown that is not a regression, e.g. 10%.")
    var threshold = "10%"

    @Option(help: "text or markdown (for a CI job summary).")
    var format = "text"

    func validate() throws {
        do {
            _ = try parseThreshold(threshold)
        } catch let error as ConfigurationError {
            throw ValidationError(error.message)
        }
        guard format == "text" || format == "markdown" else {
            throw ValidationError("unknown --format '\(format)'; use text or markdown")
        }
        for path in [baseline, current] where !FileManager.default.fileExists(atPath: path) {
            throw ValidationError("no report at \(path)")
        }
    }

    func run() throws {
        let comparison: Comparison
        do {
            comparison = try Comparison(
                baseline: try Report(contentsOf: URL(fileURLWithPath: baseline)),
                current: try Report(contentsOf: URL(fileURLWithPath: current)),
                threshold: try parseThreshold(threshold))
        } catch {
            FileHandle.standardError.write(Data("storage-bench compare: \(error)\n".utf8))
            throw ExitCode(Comparison.exitMissing)
        }
        print(comparison.render(markdown: format == "markdown"), terminator: "")
        throw ExitCode(comparison.exitStatus)
    }
}

/// `storage-bench backends`.
struct Backends: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the registered backends, one per line.")

    func run() {
        for name in BackendRegistry.standard.names { print(name) }
    }
}

/// `storage-bench worker` (hidden): runs one iteration and prints its result as JSON.
struct Worker: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one backend's iteration and print the result as JSON (used by run).",
        shouldDisplay: false
    )

    @Option(help: "The job, as JSON.")
    var job: String

    func run() throws {
        do {
            print(try StorageBenchKit.Worker.run(jobJSON: job, registry: .standard))
        } catch let error as ConfigurationError {
            throw ValidationError(error.message)
        }
    }
}
