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
            report's CSV columns. Exit status: 0 when every backend ran, 3 when one failed.
            """
    )

    @Option(help: "Comma-separated backends, or all (\(MigrateBenchmark.standardSubjects.map(\.name).joined(separator: ", "))).")
    var backends = "all"

    @Option(help: "Dialogs in the graph (D).")
    var dialogs = 100

    @Option(name: .customLong("messages-per-dialog"), help: "Messages per dialog (M).")
    var messagesPerDialog = 100

    @Option(help: "Measured iterations per backend.")
    var iterations = 3

    @Option(help: "Warm-up iterations run first and discarded.")
    var warmup = 1

    @Option(help: "The generator seed.")
    var seed: UInt64 = 42

    @Option(help: "full or none.")
    var durability = "full"

    @Option(help: "The CSV report file (default results/migrate-<UTC date-time>-<host>.csv).")
    var output: String?

    func benchmark() throws -> MigrateBenchmark {
        do {
            let durabilities = try parseDurabilities(durability)
            guard durabilities.count == 1, let chosen = durabilities.first else {
                throw ConfigurationError("give one durability")
            }
            guard iterations > 0, warmup >= 0 else { throw ConfigurationError("iterations must be positive") }
            return MigrateBenchmark(
                backends: try MigrateBenchmark.select(backends),
                size: try BenchSize(dialogs: dialogs, messagesPerDialog: messagesPerDialog), durability: chosen,
                iterations: iterations, warmup: warmup, seed: seed)
        } catch let error as ConfigurationError {
            throw ValidationError(error.message)
        }
    }

    func validate() throws {
        _ = try benchmark()
    }

    func run() throws {
        let benchmark = try benchmark()
        let started = Date()
        let host = SystemInfo.host
        let provenance = Provenance(
            runId: "\(ReportWriter.compactTimestamp(started))-\(host)-\(UUID().uuidString.prefix(8).lowercased())",
            timestamp: ISO8601DateFormatter().string(from: started), gitCommit: SystemInfo.gitCommit, host: host,
            os: SystemInfo.os, cpu: SystemInfo.cpu, swiftVersion: SystemInfo.swiftVersion, build: SystemInfo.build)
        let rows = benchmark.run(provenance: provenance)
        let url = output.map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: "results/migrate-\(ReportWriter.compactTimestamp(started))-\(host).csv")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(CSV.document(header: ReportRow.columns, rows: rows.map(\.fields)).utf8).write(to: url, options: .atomic)
        for row in rows {
            let median = row.medianSeconds.map { String(format: "%.4f s", $0) } ?? "-"
            let throughput = row.throughputPerSecond.map { String(format: "%.0f messages/s", $0) } ?? ""
            print("\(row.backend)\t\(row.operation)\t\(median)\t\(throughput)\t\(row.error)")
        }
        FileHandle.standardError.write(Data("wrote \(url.relativePath)\n".utf8))
        if rows.contains(where: { !$0.error.isEmpty }) { throw ExitCode(3) }
    }
}
