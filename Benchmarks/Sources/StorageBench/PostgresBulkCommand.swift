import ArgumentParser
import DAOCore
import Foundation
import StorageBenchKit
import StorageBenchReference

/// `storage-bench postgres-bulk`: a bulk persist beside `COPY` on one PostgreSQL server.
struct PostgresBulk: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "postgres-bulk",
        abstract: "Measure persisting a D × M graph on a PostgreSQL server beside COPY FROM STDIN.",
        discussion: """
            Outside workload v1. Each round writes the graph into empty tables of a fresh schema \
            once by COPY (both tables in one transaction) and once by each backend's persist (one \
            call), in that order, checks the counts and drops the schema; one warm-up round comes \
            first. Prints and writes one CSV line per method: the median seconds and each round's \
            seconds divided by COPY's in the same round (over_copy). Exit status: 0 when every \
            write ran, 3 when one failed, 64 for invalid arguments.
            """
    )

    @Option(help: "Comma-separated server backends to measure beside COPY, or all (those with a PostgreSQL server: postgres-raw, and postgres when the library has it).")
    var backends = "all"

    @Option(parsing: .unconditional, help: "Dialogs in the graph (D).")
    var dialogs = 1000

    @Option(name: .customLong("messages-per-dialog"), parsing: .unconditional, help: "Messages per dialog (M).")
    var messagesPerDialog = 100

    @Option(parsing: .unconditional, help: "Measured rounds (1 to 100), after one warm-up round.")
    var rounds = 5

    @Option(help: "full (synchronous_commit on) or none (off).")
    var durability = "full"

    @Option(name: .customLong("postgres-url"), help: PostgresURLOption.help)
    var postgresURL: String?

    @Option(help: "The CSV file to write (default results/postgres-bulk-<UTC date-time>-<host>.csv).")
    var output: String?

    func benchmark() throws -> PostgresBulkBenchmark {
        return try validating {
            try PostgresURLOption.apply(postgresURL)
            guard let server = try PostgresServer.fromEnvironment() else {
                throw ConfigurationError("postgres-bulk needs a server: --postgres-url or DAO_POSTGRES_URL")
            }
            let chosen = try parseDurability(durability)
            try checkOption("--rounds", rounds, in: 1...100)
            let offered = BackendRegistry.postgres(.success(server))
            return PostgresBulkBenchmark(
                server: server, backends: try offered.select(backends),
                size: try BenchSize(dialogs: dialogs, messagesPerDialog: messagesPerDialog), rounds: rounds,
                durability: chosen)
        }
    }

    func validate() throws {
        _ = try benchmark()
    }

    func run() throws {
        let benchmark = try benchmark()
        let started = Date()
        let provenance = Provenance.thisRun(startedAt: started)
        let rows: [PostgresBulkBenchmark.Row]
        do {
            rows = try benchmark.run { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
        } catch {
            FileHandle.standardError.write(Data("storage-bench: postgres-bulk failed: \(error)\n".utf8))
            throw ExitCode(3)
        }
        let text = benchmark.csv(rows, provenance: provenance)
        let url = output.map { URL(fileURLWithPath: $0) }
            ?? ReportWriter.defaultDirectory.appendingPathComponent(
                "postgres-bulk-\(ReportWriter.compactTimestamp(started))-\(provenance.host).csv")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try text.write(to: url, atomically: true, encoding: .utf8)
        print(text, terminator: "")
        FileHandle.standardError.write(Data("wrote \(url.relativePath)\n".utf8))
    }
}
