import ArgumentParser
import DAOCore
import Foundation
import StorageBenchKit
import StorageBenchReference

/// `storage-bench load`: operation mixes with concurrent clients (WORKLOAD.md, "Load mixes").
struct Load: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run operation mixes (YCSB A–F, chat, or a mix file) with concurrent clients on every backend.",
        discussion: """
            For each mix, each backend runs on a fresh store loaded with the mix's dialogs, at each client \
            count in turn, for a duration or a number of operations. Reports throughput and latency \
            percentiles per operation type (HDR histograms merged across clients), errors and retries, and \
            each DAO backend's throughput and p99 divided by its raw engine's in the same run. Exit status: \
            0 when every run ran without an error, 3 when a backend failed or counted errors (the rows say \
            which), 64 for invalid arguments or a refused mix file.
            """
    )

    @Option(help: "Comma-separated mixes: built-in names (\(LoadMix.builtInNames.joined(separator: ", "))), all, or mix files (JSON).")
    var mix = "all"

    @Option(help: "Comma-separated backends, or all (\(LoadBackendRegistry.withReferences.names.joined(separator: ", ")); with a PostgreSQL server, also postgres-raw).")
    var backends = "all"

    @Option(parsing: .unconditional, help: "Comma-separated client counts, e.g. 1,2,4,8 (default: each mix's own).")
    var clients: String?

    @Option(parsing: .unconditional, help: "Seconds measured per run (default: each mix's own).")
    var duration: Double?

    @Option(name: .customLong("operations"), parsing: .unconditional, help: "Operations per run over all clients, instead of a duration.")
    var operationCount: Int?

    @Option(name: .customLong("target-rate"), parsing: .unconditional, help: "Operations per second over all clients; latencies are then also measured from each operation's intended start.")
    var targetRate: Double?

    @Option(parsing: .unconditional, help: "Seconds each duration run runs before it is measured.")
    var warmup: Double = 1

    @Option(help: "full or none.")
    var durability = "full"

    @Option(help: "The report file (default results/load-<UTC date-time>-<host>.csv); other formats and the HTML report take its name with their extension. In the default results folder only, also copied to load-latest.csv and load-report.html.")
    var output: String?

    @Option(help: "csv, json or markdown, comma-separated (the HTML report is always written).")
    var format = "csv,json"

    @Flag(name: .customLong("no-progress"), help: "Do not show progress on standard error.")
    var noProgress = false

    @Flag(help: "Print every figure (per operation type and client count, the settings in force), not only the one-screen summary.")
    var verbose = false

    @Option(name: .customLong("postgres-url"), help: PostgresURLOption.help)
    var postgresURL: String?

    @Flag(name: .customLong("in-process"), help: "Run every backend in this process rather than each backend × mix in a worker process of its own (then no peak memory is reported).")
    var inProcess = false

    struct Plan {
        var options: LoadSweepOptions
        var formats: [String]
    }

    func plan() throws -> Plan {
        do {
            let mixes = try LoadMix.select(mix)
            try PostgresURLOption.apply(postgresURL)
            let chosen = try LoadBackendRegistry.withServers.select(backends)
            let counts = try clients.map(LoadSweepOptions.parseClients)
            if let duration, !(duration > 0 && duration <= 86_400) {
                throw ConfigurationError("--duration must be above 0 and at most 86400 seconds")
            }
            if let operationCount, operationCount < 1 { throw ConfigurationError("--operations must be at least 1") }
            if duration != nil && operationCount != nil {
                throw ConfigurationError("give either --duration or --operations, not both")
            }
            if let targetRate, !(targetRate > 0) { throw ConfigurationError("--target-rate must be above 0") }
            guard warmup >= 0, warmup <= 3600 else { throw ConfigurationError("--warmup must be 0 to 3600 seconds") }
            let durability = try parseDurability(self.durability)
            let formats = try LoadSweepOptions.parseFormats(format)
            if let output { try ReportWriter.validate(URL(fileURLWithPath: output)) }
            return Plan(
                options: LoadSweepOptions(
                    mixes: mixes, backends: chosen, clients: counts, durationSeconds: duration,
                    operationCount: operationCount, targetRate: targetRate, warmupSeconds: warmup,
                    durability: durability),
                formats: formats)
        } catch let error as ConfigurationError {
            throw ValidationError(error.message)
        } catch let error as LoadMixError {
            throw ValidationError(error.description)
        }
    }

    func validate() throws {
        _ = try plan()
    }

    func run() throws {
        let plan = try plan()
        if SystemInfo.build != "release" {
            FileHandle.standardError.write(
                Data("storage-bench: warning: this is a \(SystemInfo.build) build; measure with -c release (make bench-load)\n".utf8))
        }
        let started = Date()
        let quiet = noProgress
        let options = plan.options
        var workers: LoadWorkers?
        if !inProcess {
            guard let executable = SystemInfo.executableURL else {
                throw ValidationError("cannot find this program's own path to start its worker processes")
            }
            workers = LoadWorkers(executable: executable, arguments: ["load-worker"] + (quiet ? ["--no-progress"] : []) + ["--job"])
        }
        let chosenWorkers = workers
        let results = try waitForTask {
            await LoadSweep.run(
                options, workers: chosenWorkers, progress: { line in if !quiet { TerminalProgress.show(line) } },
                problems: { line in TerminalProgress.keep(line) })
        }
        if !quiet { TerminalProgress.finish() }
        let roles = BackendRegistry.withReferences.roles
        let rows = LoadReport.rows(results, provenance: Provenance.thisRun(startedAt: started))
        let output =
            output.map { URL(fileURLWithPath: $0) }
            ?? ReportWriter.defaultDirectory
            .appendingPathComponent("load-\(ReportWriter.compactTimestamp(started))-\(SystemInfo.host).csv")
        let written = try ReportWriter.writeLoad(rows, to: output, formats: plan.formats, roles: roles)
        FileHandle.standardOutput.write(Data((LoadReport.summaryLegend + LoadReport.summary(rows, roles: roles)).utf8))
        if verbose { FileHandle.standardOutput.write(Data(("\n" + LoadReport.detailed(rows)).utf8)) }
        FileHandle.standardError.write(Data(ReportWriter.wroteLines(written).utf8))
        if results.contains(where: { $0.errorCount > 0 }) {
            FileHandle.standardError.write(Data("storage-bench: a backend failed or counted errors under load; see the error column\n".utf8))
            throw ExitCode(3)
        }
    }
}

/// `storage-bench load-worker`: one backend × mix of a load sweep in a process
/// of its own, its results printed as JSON (used by load).
struct LoadWorker: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load-worker",
        abstract: "Run one backend × mix of a load sweep and print the results as JSON (used by load).",
        shouldDisplay: false
    )

    @Option(help: "The job, as JSON.")
    var job: String

    @Flag(name: .customLong("no-progress"), help: "Do not show progress on standard error.")
    var noProgress = false

    func run() throws {
        let job = self.job
        let quiet = noProgress
        do {
            let json = try waitForTask {
                try await LoadWorkerJob.run(
                    jobJSON: job, registry: .withServers,
                    progress: { line in if !quiet { TerminalProgress.show(line) } },
                    problems: { line in TerminalProgress.keep(line) })
            }
            if !quiet { TerminalProgress.finish() }
            print(json)
        } catch let error as ConfigurationError {
            throw ValidationError(error.message)
        } catch let error as LoadMixError {
            throw ValidationError(error.description)
        }
    }
}
