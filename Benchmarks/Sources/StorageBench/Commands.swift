import ArgumentParser
import DAOCore
import Foundation
import StorageBenchKit
import StorageBenchReference

/// `storage-bench`: runs the dialog-graph workload on every backend and compares reports.
struct StorageBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storage-bench",
        abstract: "Benchmarks the storage backends on the dialog-graph workload (WORKLOAD.md).",
        version: StorageBenchVersion.text,
        subcommands: [
            Run.self, Compare.self, ReportPage.self, Backends.self, Operations.self, Worker.self, LoadWorker.self, Observe.self,
            Migrate.self, Load.self, Open.self, AsyncCostCommand.self, PostgresBulk.self,
        ]
    )
}

/// `storage-bench run`.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the workload on the chosen backends and write a report.",
        discussion: """
            Each backend × iteration runs in a worker process of its own, on a fresh store in a \
            fresh temporary directory. Backends take turns within each round and their order \
            rotates from round to round; a backend's worker and its reference's run in step, \
            operation by operation. Exit status: 0 when every backend ran, 3 when a backend \
            failed (its rows carry the error), 64 for invalid arguments.
            """
    )

    @Option(help: "Comma-separated backends, or all (\(BackendRegistry.withReferences.names.joined(separator: ", ")); with a PostgreSQL server, also postgres-raw).")
    var backends = "all"

    @Option(parsing: .unconditional, help: "Dialogs in the graph (D; default 1000). Not with --sizes.")
    var dialogs: String?

    @Option(name: .customLong("messages-per-dialog"), parsing: .unconditional, help: "Messages per dialog (M; default 100). Not with --sizes.")
    var messagesPerDialog: String?

    @Option(parsing: .unconditional, help: "A sweep of sizes DxM, comma-separated, e.g. 100x10,1000x100,10000x100.")
    var sizes: String?

    @Option(parsing: .unconditional, help: "Measured iterations per backend and size (default 6, the fewest that give a 95% interval of a median).")
    var iterations: String?

    @Option(parsing: .unconditional, help: "Warm-up iterations run first and discarded (0 to 100).")
    var warmup = "1"

    @Option(name: .customLong("max-iterations"), parsing: .unconditional, help: "Measured iterations at most: after --iterations, backends whose ratios to their reference (without one in the run: medians) are not yet known within --precision run more rounds, each up to where it takes the most interval width off for its time, up to this many (default: 30 when --iterations is not given, else --iterations: no extra rounds).")
    var maxIterations: String?

    @Option(parsing: .unconditional, help: "The half-width of the 95% confidence interval of each paired ratio (or median) to reach with extra rounds, more than 0% and less than 100%, e.g. 3%.")
    var precision = "3%"

    @Option(name: .customLong("time-limit"), parsing: .unconditional, help: "The most seconds of extra rounds per size and durability: a backend and its reference start an extra round only when it is expected to end within them.")
    var timeLimit: Double = 360

    @Option(name: .customLong("read-runs"), parsing: .unconditional, help: "The most runs of each read-only operation (read-all, read-by-id, query) per iteration: it runs again in place, on the unchanged store, while its runs are fewer than --min-read-runs or add up to less than --read-time; the iteration's time is the median of its runs (1: one run).")
    var readRuns = "9"

    @Option(name: .customLong("read-time"), parsing: .unconditional, help: "The seconds the runs of a read-only operation may add up to before no further run starts (with --read-runs), once it has run --min-read-runs times.")
    var readTime: Double = 0.25

    @Option(name: .customLong("min-read-runs"), parsing: .unconditional, help: "The fewest runs of each read-only operation per iteration, whatever --read-time says (up to --read-runs). A backend and its reference, run in step, take as many runs as the first of them to stop.")
    var minReadRuns = "5"

    @Option(name: .customLong("erase-runs"), parsing: .unconditional, help: "The most runs of erase-all per iteration: after each run, the store is put back untimed (what it erased, persisted again in one call and checked) and it runs again, while its runs and restores add up to less than --erase-time; the iteration's time is the median of its runs (1: one run). A backend and its reference, run in step, take as many runs as the first of them to stop.")
    var eraseRuns = "21"

    @Option(name: .customLong("erase-time"), parsing: .unconditional, help: "The seconds the runs of erase-all and the restores before them may add up to before no further run starts (with --erase-runs).")
    var eraseTime: Double = 1

    @Option(name: .customLong("update-runs"), parsing: .unconditional, help: "The most runs of update per iteration: after each run, the store is put back untimed to what it held before update (the dialogs as persist wrote them, upserted again in one call and checked) and update runs again, checked as the first run, while one more restore and run (each reckoned as long as the last run) fit in --update-time with what was spent; the iteration's time is the median of its runs (1: one run). A backend and its reference, run in step, take as many runs as the first of them to stop.")
    var updateRuns = "3"

    @Option(name: .customLong("update-time"), parsing: .unconditional, help: "The seconds the runs of update and the restores around them may add up to: a further run starts only when it and its restore, each reckoned as long as the last run, fit (with --update-runs).")
    var updateTime: Double = 4

    @Flag(name: .customLong("random-hashing"), help: "Let each timed worker hash with a random seed of its own, instead of Swift's fixed seed (SWIFT_DETERMINISTIC_HASHING=1, which the callgrind workers always use): a dictionary's layout, and with it a read's time, then changes from iteration to iteration.")
    var randomHashing = false

    @Flag(help: "Also run each backend under valgrind's callgrind and report the instructions and allocations of each operation's timed region.")
    var instructions = false

    @Option(name: .customLong("instruction-iterations"), parsing: .unconditional, help: "Callgrind iterations per backend and size with --instructions (the median is reported).")
    var instructionIterations = "1"

    @Option(parsing: .unconditional, help: "The generator seed.")
    var seed = "42"

    @Option(help: "full or none (or both, comma-separated).")
    var durability = "full"

    @Option(help: "Comma-separated operations to report (\(BenchOperation.allCases.map(\.rawValue).joined(separator: ", "))), or the groups all (workload v1's eight) and borrowing (the reads through the borrowing API, outside v1): all,borrowing runs both.")
    var operations = "all"

    @Option(help: "The report file (default results/<UTC date-time>-<host>.csv, copied to results/latest.csv); other formats, and report.html, go beside it. latest.csv is written only in the default folder.")
    var output: String?

    @Option(help: "csv, json or markdown; repeat or comma-separate for several.")
    var format: [String] = ["csv"]

    @Option(help: "A baseline report (CSV) to compare this run with in the HTML report (as storage-bench compare does).")
    var baseline: String?

    @Flag(name: .customLong("no-progress"), help: "Do not show progress on standard error.")
    var noProgress = false

    @Flag(help: "Print every figure (the detailed tables) and every warning, not only the one-screen summary and a count of warnings.")
    var verbose = false

    @Flag(name: .customLong("one-after-another"), help: "Run a backend's worker and its reference's one after the other, each through its whole iteration, instead of in step, operation by operation.")
    var oneAfterAnother = false

    @Flag(name: .customLong("in-process"), help: .hidden)
    var inProcess = false

    @Option(name: .customLong("postgres-url"), help: PostgresURLOption.help)
    var postgresURL: String?

    /// Everything the options say, checked.
    struct Plan {
        var configuration: RunConfiguration
        var formats: [ReportFormat]
    }

    func plan() throws -> Plan {
        do {
            try PostgresURLOption.apply(postgresURL)
            let chosen = try BackendRegistry.withServers.select(backends)
            // Whole numbers are read here, so that any value out of range,
            // however it is spelled, gets the range.
            let iterations = try self.iterations.map {
                try parseCount($0, option: "--iterations", in: RunConfiguration.iterationsRange)
            }
            let maxIterations = try self.maxIterations.map {
                try parseCount($0, option: "--max-iterations", in: RunConfiguration.iterationsRange)
            }
            let runs = RunConfiguration.runsRange
            let instructionIterations = try parseCount(
                self.instructionIterations, option: "--instruction-iterations", in: RunConfiguration.warmupRange)
            let readRuns = try parseCount(self.readRuns, option: "--read-runs", in: runs)
            let sweep: [BenchSize]
            if let sizes {
                guard dialogs == nil, messagesPerDialog == nil else {
                    throw ConfigurationError("give either --sizes or --dialogs/--messages-per-dialog, not both")
                }
                sweep = try BenchSize.parseSweep(sizes)
            } else {
                sweep = [try parseSize(dialogs ?? "1000", messagesPerDialog ?? "100")]
            }
            let configuration = try RunConfiguration(
                backends: chosen, sizes: sweep, durabilities: try parseDurabilities(durability),
                operations: try BenchOperation.parseList(operations), iterations: iterations ?? 6,
                warmup: try parseCount(warmup, option: "--warmup", in: RunConfiguration.warmupRange),
                seed: try parseCount(seed, option: "--seed", in: UInt64.min...UInt64.max), showsProgress: !noProgress,
                maxIterations: maxIterations ?? (iterations == nil ? 30 : nil),
                precision: try parsePrecision(precision), timeLimit: timeLimit,
                instructionIterations: instructions ? instructionIterations : 0, readRuns: readRuns,
                readRunSeconds: readTime,
                minReadRuns: try parseCount(minReadRuns, option: "--min-read-runs", in: 1...readRuns),
                eraseRuns: try parseCount(eraseRuns, option: "--erase-runs", in: runs), eraseRunSeconds: eraseTime,
                updateRuns: try parseCount(updateRuns, option: "--update-runs", in: runs), updateRunSeconds: updateTime)
            if instructions {
                guard !inProcess else { throw ConfigurationError("--instructions runs workers; not with --in-process") }
                guard Callgrind.isBuiltIn else {
                    throw ConfigurationError(
                        "--instructions: this storage-bench was built without valgrind's headers; "
                            + "install valgrind (scripts/setup.sh instructions), then rebuild it (touch Benchmarks/Sources/CCallgrind/CCallgrind.c first if it was built before)")
                }
                _ = try Callgrind.find()
            }
            let formats = try ReportFormat.parseList(format.joined(separator: ","))
            if let output { try ReportWriter.validate(URL(fileURLWithPath: output)) }
            if let baseline, !FileManager.default.fileExists(atPath: baseline) {
                throw ConfigurationError("--baseline: no report at \(baseline)")
            }
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
        let provenance = Provenance.thisRun(startedAt: started)
        let executor: any IterationExecutor
        var scratch: URL?
        defer { if let scratch { removeScratchDirectory(scratch) } }
        if inProcess {
            executor = InProcessExecutor(registry: .withServers)
        } else {
            guard let executable = SystemInfo.executableURL else {
                throw ValidationError("cannot find this program's own path to start its worker processes")
            }
            var callgrind: Callgrind?
            if instructions {
                let directory = try makeScratchDirectory("callgrind")
                scratch = directory
                callgrind = try Callgrind.prepare(executable: executable, in: directory)
            }
            executor = SubprocessExecutor(
                executable: executable, callgrind: callgrind, stepsGroups: !oneAfterAnother,
                fixedHashSeed: !randomHashing)
        }
        let report = try BenchmarkRunner(configuration: plan.configuration, executor: executor)
            .run(provenance: provenance)
        let outputURL = output.map { URL(fileURLWithPath: $0) }
            ?? ReportWriter.defaultOutput(startedAt: started, host: provenance.host)
        let written = try ReportWriter.write(report, to: outputURL, formats: plan.formats)
        let roles = BackendRegistry.withServers.roles
        var comparison: Comparison?
        if let baseline {
            do {
                comparison = try Comparison(
                    baseline: try Report(contentsOf: URL(fileURLWithPath: baseline)), current: report, threshold: 0.1,
                    normalization: .automatic, roles: roles)
            } catch {
                FileHandle.standardError.write(Data("storage-bench: the HTML report has no comparison: \(error)\n".utf8))
            }
        }
        let pages = try ReportWriter.writeHTML(report, beside: outputURL, comparison: comparison, roles: roles)
        // Unbuffered, so that the table comes before the warnings when both go to one file.
        FileHandle.standardOutput.write(Data(SummaryTable.render(report, roles: roles).utf8))
        let warnings = RunWarnings(report: report, configuration: plan.configuration)
        if verbose {
            FileHandle.standardOutput.write(Data(("\n" + SummaryTable.detailed(report)).utf8))
            FileHandle.standardError.write(Data(warnings.detailed.utf8))
        } else if let line = warnings.oneLine {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        FileHandle.standardError.write(Data(ReportWriter.wroteLines(written + pages).utf8))
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
            Rows are matched by backend × durability × size × operation; sizes or durabilities that only \
            one report has are named in one line, not compared. Time is compared as each \
            row's throughput divided by a reference backend's in its own run (--normalize; by \
            default the reference the row declares, else B-raw, where both reports have it); a \
            row regresses when that fell by more than --threshold and the two runs' 95% confidence \
            intervals do not overlap. Time judges a row only when both runs have such an interval \
            (6 iterations or more) and ran on the same CPU model and host; otherwise one line says \
            why it was not judged. Instruction and allocation counts (run --instructions) are \
            deterministic and compared directly against --instructions-threshold, on any machine. \
            Regressions are listed first, then improvements and missing rows, then a count of the \
            rest (--verbose lists every row). A third-party library's rows (GRDB) are shown but \
            never decide the exit status. Exit status: 0 when nothing regressed and no baseline row \
            is missing; 1 when a row regressed or now fails; 2 when nothing regressed but baseline \
            rows are missing, the reports cannot be compared, or one cannot be read (the message \
            names the file); 64 for invalid arguments.
            """
    )

    @Argument(help: "The baseline report (CSV).")
    var baseline: String

    @Argument(help: "The current report (CSV).")
    var current: String

    @Option(parsing: .unconditional, help: "The largest change of a throughput (or of its ratio to a reference) that is not a verdict, e.g. 10%.")
    var threshold = "10%"

    @Option(name: .customLong("instructions-threshold"), parsing: .unconditional, help: "The largest change of an instruction or allocation count that is not a verdict, e.g. 1%.")
    var instructionsThreshold = "1%"

    @Option(name: .customLong("other-machine-threshold"), parsing: .unconditional, help: "The same for the counts of rows measured on another CPU model or host, where the C library's CPU-specific routines count differently, e.g. 3%.")
    var otherMachineThreshold = "3%"

    @Option(help: "What each throughput is divided by, in its own run: auto (each backend by the reference its rows declare, else B by B-raw, where both reports have it), none (absolute), a backend (every row by it), or pairs B=REF,… (e.g. grdb=sqlite-raw).")
    var normalize = "auto"

    @Option(help: "all (time and, where both reports have them, counts), time, or instructions.")
    var metric = "all"

    @Option(help: "text or markdown (for a CI job summary).")
    var format = "text"

    @Flag(help: "List every compared row, not only the regressed, improved and missing ones.")
    var verbose = false

    func validate() throws {
        do {
            _ = try parseThreshold(threshold, option: "--threshold")
            _ = try parseThreshold(instructionsThreshold, option: "--instructions-threshold")
            _ = try parseThreshold(otherMachineThreshold, option: "--other-machine-threshold")
            _ = try Comparison.Normalization(parsing: normalize)
        } catch let error as ConfigurationError {
            throw ValidationError(error.message)
        }
        guard Comparison.Metrics(rawValue: metric) != nil else {
            throw ValidationError("unknown --metric '\(metric)'; use all, time or instructions")
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
                threshold: try parseThreshold(threshold),
                instructionThreshold: try parseThreshold(instructionsThreshold),
                otherMachineInstructionThreshold: try parseThreshold(otherMachineThreshold),
                normalization: try Comparison.Normalization(parsing: normalize),
                metrics: Comparison.Metrics(rawValue: metric) ?? .all, roles: BackendRegistry.withReferences.roles)
        } catch {
            FileHandle.standardError.write(Data("storage-bench compare: \(error)\n".utf8))
            throw ExitCode(Comparison.exitMissing)
        }
        print(comparison.render(markdown: format == "markdown", verbose: verbose), terminator: "")
        throw ExitCode(comparison.exitStatus)
    }
}

/// `storage-bench report`: the one-screen summary and the HTML report of a CSV report.
struct ReportPage: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Print a report's one-screen summary and write its HTML page (what every run writes).",
        discussion: """
            Reads a CSV report (of run, migrate, open or load), prints the summary its command prints, \
            and writes the self-contained HTML report beside it (REPORT.html; --output names another \
            file), with the comparison with --baseline when given. --load adds a load run's report \
            (storage-bench load) to a run's page: make bench writes results/report.html so, with its \
            eight operations and its load phase on one page. Exit status: 0, or 2 when a report \
            cannot be read (the message names the file), 64 for invalid arguments.
            """
    )

    @Argument(help: "The report (CSV): a run's, or a load run's.")
    var report: String

    @Option(help: "A baseline report (CSV) to compare with, as storage-bench compare does.")
    var baseline: String?

    @Option(help: "A load run's report (CSV) whose sections the page adds.")
    var load: String?

    @Option(help: "The HTML file (default: the report's name with .html).")
    var output: String?

    @Flag(name: .customLong("no-summary"), help: "Write the page only; print no summary.")
    var noSummary = false

    func validate() throws {
        for path in [report] + [baseline, load].compactMap({ $0 }) where !FileManager.default.fileExists(atPath: path) {
            throw ValidationError("no report at \(path)")
        }
    }

    func run() throws {
        let roles = BackendRegistry.withReferences.roles
        var current = Report(rows: [])
        var loadRows: [LoadReportRow] = []
        var comparison: Comparison?
        do {
            let url = URL(fileURLWithPath: report)
            let text: String
            do {
                text = try String(contentsOf: url, encoding: .utf8)
            } catch {
                throw ConfigurationError("\(url.relativePath): cannot be read: \(error.localizedDescription)")
            }
            if LoadReport.isLoadReport(csv: text) {
                loadRows = try LoadReport.read(contentsOf: url)
            } else {
                current = try Report(contentsOf: url)
            }
            if let load { loadRows += try LoadReport.read(contentsOf: URL(fileURLWithPath: load)) }
            if let baseline {
                comparison = try Comparison(
                    baseline: try Report(contentsOf: URL(fileURLWithPath: baseline)), current: current,
                    threshold: 0.1, normalization: .automatic, roles: roles)
            }
        } catch {
            FileHandle.standardError.write(Data("storage-bench report: \(error)\n".utf8))
            throw ExitCode(Comparison.exitMissing)
        }
        let url = URL(fileURLWithPath: output ?? report).deletingPathExtension().appendingPathExtension("html")
        try HTMLReport.write(current, to: url, comparison: comparison, roles: roles, load: loadRows)
        if !noSummary {
            var text = current.rows.isEmpty ? "" : SummaryTable.render(current, roles: roles)
            if !loadRows.isEmpty {
                text += (text.isEmpty ? "" : "\n") + LoadReport.summaryLegend + LoadReport.summary(loadRows, roles: roles)
            }
            FileHandle.standardOutput.write(Data(text.utf8))
        }
        FileHandle.standardError.write(Data(ReportWriter.wroteLines([url]).utf8))
    }
}

/// `storage-bench backends`.
struct Backends: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the registered backends, one per line.")

    func run() {
        for name in BackendRegistry.withServers.names { print(name) }
    }
}

/// `storage-bench operations`.
struct Operations: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the workload's operations: name, unit, whether each call is timed, the units each must touch.",
        discussion: "--format json prints the same as data, for scripts (scripts/check-bench-csv.py reads it)."
    )

    @Option(help: "text or json.")
    var format = "text"

    @Option(help: "Sizes DxM whose expected units to list, comma-separated (default 1000x100).")
    var sizes = "1000x100"

    @Option(help: "The operations to list, as storage-bench run takes them: all (workload v1's eight, the default), borrowing (the reads through the borrowing API, outside v1), names, or all,borrowing.")
    var operations = "all"

    func validate() throws {
        guard format == "text" || format == "json" else {
            throw ValidationError("unknown --format '\(format)'; use text or json")
        }
        do {
            _ = try BenchSize.parseSweep(sizes)
            _ = try BenchOperation.parseList(operations)
        } catch let error as ConfigurationError {
            throw ValidationError(error.message)
        }
    }

    func run() throws {
        let sweep = try BenchSize.parseSweep(sizes)
        let descriptions = try BenchOperation.parseList(operations).map { $0.describe(sizes: sweep) }
        if format == "json" {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(descriptions), as: UTF8.self))
            return
        }
        var table = [["operation", "unit", "per call", "units"] + sweep.map { "at \($0)" } + ["what it does"]]
        for d in descriptions {
            table.append(
                [d.name, d.unit, d.perCall ? "yes" : "no", d.unitsFormula]
                    + sweep.map { String(d.expectedUnits[$0.description] ?? 0) } + [d.summary])
        }
        print(SummaryTable.align(table), terminator: "")
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

    @Flag(help: "Wait for a line 'go' on standard input before each step (see SteppedWorkers).")
    var stepped = false

    func run() throws {
        do {
            print(try StorageBenchKit.Worker.run(jobJSON: job, registry: .withServers, stepped: stepped))
        } catch let error as ConfigurationError {
            throw ValidationError(error.message)
        }
    }
}
