import ArgumentParser
import DAOCore
import Foundation
import StorageBenchKit

/// `storage-bench migrate`: what adding a field to every message costs on each backend.
struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure a migration that adds a field to every message of a D × M store, and reading it back.",
        discussion: """
            Outside workload v1. Each backend × iteration writes a fresh store with the first \
            message version, reopens it, times the migration (migrate-add-field) and reading every \
            dialog back in the second version (read-migrated), in this process. Rows use the \
            report's CSV columns; the summary is run's, and an HTML report is written beside the \
            CSV. Exit status: 0 when every backend ran, 3 when one failed, 64 for invalid arguments.
            """
    )

    @Option(help: "Comma-separated backends, or all (\(MigrateBenchmark.standardSubjects.map(\.name).joined(separator: ", "))).")
    var backends = "all"

    @Option(parsing: .unconditional, help: "Dialogs in the graph (D).")
    var dialogs = "100"

    @Option(name: .customLong("messages-per-dialog"), parsing: .unconditional, help: "Messages per dialog (M).")
    var messagesPerDialog = "100"

    @Option(parsing: .unconditional, help: "Measured iterations per backend (1 to 1000).")
    var iterations = "3"

    @Option(parsing: .unconditional, help: "Warm-up iterations run first and discarded (0 to 100).")
    var warmup = "1"

    @Option(parsing: .unconditional, help: "The generator seed.")
    var seed = "42"

    @Option(help: "full or none.")
    var durability = "full"

    @Option(help: "The report file (default results/migrate-<UTC date-time>-<host>.csv); other formats and the HTML report take its name with their extension. Never latest.csv.")
    var output: String?

    @Option(help: "csv, json or markdown; repeat or comma-separate for several.")
    var format: [String] = ["csv"]

    func benchmark() throws -> MigrateBenchmark {
        return try validating {
            let chosen = try parseDurability(durability)
            let iterations = try parseCount(iterations, option: "--iterations", in: RunConfiguration.iterationsRange)
            let warmup = try parseCount(warmup, option: "--warmup", in: RunConfiguration.warmupRange)
            _ = try ReportFormat.parseList(format.joined(separator: ","))
            return MigrateBenchmark(
                backends: try MigrateBenchmark.select(backends), size: try parseSize(dialogs, messagesPerDialog),
                durability: chosen, iterations: iterations, warmup: warmup,
                seed: try parseCount(seed, option: "--seed", in: UInt64.min...UInt64.max))
        }
    }

    func validate() throws {
        _ = try benchmark()
    }

    func run() throws {
        let benchmark = try benchmark()
        let started = Date()
        let provenance = Provenance.thisRun(startedAt: started)
        let rows = benchmark.run(provenance: provenance)
        let url = output.map { URL(fileURLWithPath: $0) }
            ?? ReportWriter.defaultDirectory.appendingPathComponent(
                "migrate-\(ReportWriter.compactTimestamp(started))-\(provenance.host).csv")
        let report = Report(rows: rows)
        let formats = try ReportFormat.parseList(format.joined(separator: ","))
        let written = try ReportWriter.write(report, to: url, formats: formats, latestDirectory: nil)
        let roles = BackendRegistry.withReferences.roles
        let pages = try ReportWriter.writeHTML(report, beside: url, roles: roles, latestDirectory: nil)
        FileHandle.standardOutput.write(Data(SummaryTable.render(report, roles: roles).utf8))
        FileHandle.standardError.write(Data(ReportWriter.wroteLines(written + pages).utf8))
        if rows.contains(where: { !$0.error.isEmpty }) { throw ExitCode(3) }
    }
}
