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

    @Option(help: "Dialogs in the initial graph.")
    var dialogs = 200

    @Option(name: .customLong("messages-per-dialog"), help: "Messages per dialog.")
    var messagesPerDialog = 20

    @Option(help: "Single-dialog persists per run.")
    var calls = 1000

    @Option(help: "Comma-separated observer counts (0, the reference, always runs).")
    var observers = "1,10,100"

    @Option(help: "full or none.")
    var durability = "full"

    @Option(help: "Runs of each observer count, taking turns; throughput is their median, latencies are pooled.")
    var rounds = 3

    @Option(help: "Also write the rows as CSV to this file.")
    var output: String?

    func validate() throws {
        guard dialogs >= 1, messagesPerDialog >= 1, calls >= 1, rounds >= 1 else {
            throw ValidationError("--dialogs, --messages-per-dialog, --calls and --rounds must be at least 1")
        }
    }

    func run() throws {
        let chosen: [Backend]
        let configuration: ObserveBenchmark.Configuration
        do {
            chosen = try BackendRegistry.standard.select(backends)
            let durabilities = try parseDurabilities(durability)
            guard durabilities.count == 1, let durability = durabilities.first else {
                throw ConfigurationError("--durability takes one value here")
            }
            let counts = try observers.split(separator: ",").map { item -> Int in
                guard let count = Int(item.trimmingCharacters(in: .whitespaces)), count >= 0 else {
                    throw ConfigurationError("--observers takes counts such as 1,10,100, not '\(item)'")
                }
                return count
            }
            configuration = ObserveBenchmark.Configuration(
                dialogs: dialogs, messagesPerDialog: messagesPerDialog, calls: calls, observerCounts: counts,
                durability: durability, rounds: rounds)
        } catch let error as ConfigurationError {
            throw ValidationError(error.message)
        }
        var rows: [ObserveBenchmark.Measurement] = []
        for backend in chosen {
            FileHandle.standardError.write(Data("observe: \(backend.name)…\n".utf8))
            rows += try waitFor { try await ObserveBenchmark.run(configuration, backend: backend) }
        }
        print(ObserveBenchmark.markdown(rows), terminator: "")
        if let output {
            try ObserveBenchmark.csv(rows).write(toFile: output, atomically: true, encoding: .utf8)
        }
    }

    /// Runs `body` on the concurrency pool and blocks this (main) thread until it ends.
    private func waitFor<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<T, any Error>
            do {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        guard let result = outcome.withLock({ $0 }) else {
            throw ValidationError("the measurement ended without a result")
        }
        return try result.get()
    }
}
