import ArgumentParser
import DAOCore
import Dispatch
import Foundation
import StorageBenchKit
import Synchronization

/// `storage-bench observe`: the change-observation measurement (outside workload v1).
struct Observe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure change observation: snapshot latency and writer throughput with 0, 1, 10 and 100 observers.",
        discussion: """
            A writer makes single-dialog persists (persist-single) while observers each watch a different \
            dialog's unread messages. Reports, per backend and observer count, the latency from a persist's \
            return to the snapshot's delivery (p50, p99) and the writer's throughput against no observer.
            """
    )

    @Option(help: "Comma-separated backends, or all (\(BackendRegistry.standard.names.joined(separator: ", "))).")
    var backends = "all"

    @Option(parsing: .unconditional, help: "Dialogs in the initial graph.")
    var dialogs = "200"

    @Option(name: .customLong("messages-per-dialog"), parsing: .unconditional, help: "Messages per dialog.")
    var messagesPerDialog = "20"

    @Option(parsing: .unconditional, help: "Single-dialog persists per run (1 to 1,000,000).")
    var calls = "1000"

    @Option(parsing: .unconditional, help: "Comma-separated observer counts (0, the reference, always runs).")
    var observers = "1,10,100"

    @Option(help: "full or none.")
    var durability = "full"

    @Option(parsing: .unconditional, help: "Runs of each observer count (1 to 100), taking turns; throughput is their median, latencies are pooled.")
    var rounds = "3"

    @Option(help: "Also write the rows to this file (other formats take its name with their extension).")
    var output: String?

    @Option(help: "The formats written with --output: csv or markdown; repeat or comma-separate for several.")
    var format: [String] = ["csv"]

    /// The graph's size, the calls per run and the rounds, each checked against its range.
    func sizeAndCounts() throws -> (size: BenchSize, calls: Int, rounds: Int) {
        (
            try parseSize(dialogs, messagesPerDialog),
            try parseCount(calls, option: "--calls", in: 1...1_000_000),
            try parseCount(rounds, option: "--rounds", in: 1...100)
        )
    }

    /// The formats asked for, checked.
    func formats() throws -> [ReportFormat] {
        let formats = try ReportFormat.parseList(format.joined(separator: ","))
        guard !formats.contains(.json) else {
            throw ConfigurationError("observe writes csv or markdown, not json")
        }
        return formats
    }

    func validate() throws {
        try validating {
            _ = try sizeAndCounts()
            _ = try formats()
        }
    }

    func run() throws {
        let chosen: [Backend]
        let configuration: ObserveBenchmark.Configuration
        do {
            chosen = try BackendRegistry.standard.select(backends)
            let durability = try parseDurability(self.durability)
            let counts = try observers.split(separator: ",").map { item -> Int in
                guard let count = Int(item.trimmingCharacters(in: .whitespaces)), count >= 0 else {
                    throw ConfigurationError("--observers takes counts such as 1,10,100, not '\(item)'")
                }
                return count
            }
            let (size, calls, rounds) = try sizeAndCounts()
            configuration = ObserveBenchmark.Configuration(
                dialogs: size.dialogs, messagesPerDialog: size.messagesPerDialog, calls: calls,
                observerCounts: counts, durability: durability, rounds: rounds)
        } catch let error as ConfigurationError {
            throw ValidationError(error.message)
        }
        var rows: [ObserveBenchmark.Measurement] = []
        for backend in chosen {
            FileHandle.standardError.write(Data("observe: \(backend.name)…\n".utf8))
            rows += try waitForTask { try await ObserveBenchmark.run(configuration, backend: backend) }
        }
        print(ObserveBenchmark.table(rows), terminator: "")
        if let output {
            let base = URL(fileURLWithPath: output).deletingPathExtension()
            var written: [URL] = []
            for format in try formats() {
                let url = base.appendingPathExtension(format.fileExtension)
                let text = format == .csv ? ObserveBenchmark.csv(rows) : ObserveBenchmark.markdown(rows)
                try text.write(to: url, atomically: true, encoding: .utf8)
                written.append(url)
            }
            FileHandle.standardError.write(Data(ReportWriter.wroteLines(written).utf8))
        }
    }
}
