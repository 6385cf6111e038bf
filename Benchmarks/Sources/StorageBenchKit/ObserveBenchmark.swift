import DAOCore
import DialogGraph
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `observe` measurement, outside workload v1: how change observation
/// costs a writer and how soon observers hear of a commit.
///
/// On a store holding the initial graph, a writer makes `calls` single-dialog
/// persists (the `persist-single` call): call `i` persists the workload's
/// `extra[i % P]` dialog (P = up to 100 of them), the first time as generated,
/// each later time with every message's text marked with its round (`#r`), so
/// each call changes that dialog's unread messages. `K` observers each watch
/// the unread messages (newest first) of a different one of those dialogs.
/// Measured:
///
/// - the latency from a persist's return to an observer's receiving the
///   snapshot that holds it (p50, p99), over every persist that changed an
///   observed dialog; a snapshot that arrived before the call returned (the
///   broadcaster hears of the commit inside the call) counts as 0;
/// - how many times observers' results were read again (the others were
///   ruled out from what the commit wrote);
/// - the writer's throughput (calls per second), and its ratio to the same
///   writes with no observer; and the writer thread's CPU time per call.
///
/// Each observer count runs on a fresh store. Snapshots arrive on Swift's
/// concurrency pool while the writer runs on a thread of its own.
public enum ObserveBenchmark {
    /// What to run.
    public struct Configuration: Sendable {
        /// Dialogs in the initial graph (D).
        public var dialogs: Int
        /// Messages per dialog (M).
        public var messagesPerDialog: Int
        /// Single-dialog persists per run.
        public var calls: Int
        /// The observer counts to measure; 0 (the reference) is always run first.
        public var observerCounts: [Int]
        /// The generator seed.
        public var seed: UInt64
        /// How commits reach the disk.
        public var durability: Durability
        /// How many times each observer count runs (0 included, taking turns
        /// within each round); throughput is the median over the rounds,
        /// latencies are pooled.
        public var rounds: Int

        /// Creates a configuration.
        public init(
            dialogs: Int = 200, messagesPerDialog: Int = 20, calls: Int = 1000, observerCounts: [Int] = [1, 10, 100],
            seed: UInt64 = 42, durability: Durability = .full, rounds: Int = 1
        ) {
            self.rounds = rounds
            self.dialogs = dialogs
            self.messagesPerDialog = messagesPerDialog
            self.calls = calls
            self.observerCounts = observerCounts
            self.seed = seed
            self.durability = durability
        }
    }

    /// One run: a backend with a number of observers.
    public struct Measurement: Sendable, Equatable {
        /// The backend.
        public var backend: String
        /// How many observers watched.
        public var observers: Int
        /// Single-dialog persists made.
        public var calls: Int
        /// Persists that changed a dialog someone observed.
        public var observedCommits: Int
        /// Of those, how many an observer saw only in a later snapshot
        /// (coalesced with the next write of the same dialog).
        public var coalesced: Int
        /// Snapshots the observers received after their first.
        public var snapshots: Int
        /// Reads of observed results after the first ones: the commits the
        /// broadcaster could not rule out for an observer.
        public var rereads: Int
        /// Latency from a persist's return to the snapshot's delivery, median, in microseconds.
        public var latencyP50Micros: Double?
        /// The same, 99th percentile.
        public var latencyP99Micros: Double?
        /// The writer's calls per second.
        public var writerCallsPerSecond: Double
        /// The writer thread's CPU time per call, in microseconds: what
        /// observation costs the writer, less exposed than wall time to other
        /// load on the machine.
        public var writerCPUMicrosPerCall: Double
        /// The writer's throughput over its throughput with no observer.
        public var writerRatio: Double?
    }

    /// Runs the measurement on `backend` for 0 observers and each count in the
    /// configuration.
    ///
    /// - Throws: ``StorageError`` from the store, or ``WorkloadRunner/CheckFailure``
    ///   when an observer did not end with the last state of its dialog.
    public static func run(_ configuration: Configuration, backend: Backend) async throws -> [Measurement] {
        let data = WorkloadData(
            dialogs: configuration.dialogs, messagesPerDialog: configuration.messagesPerDialog, seed: configuration.seed)
        let counts = [0] + configuration.observerCounts.filter { $0 > 0 }
        var runs: [[Run]] = Array(repeating: [], count: counts.count)
        for round in 0..<max(configuration.rounds, 1) {
            // The counts take turns, starting one later each round.
            for offset in 0..<counts.count {
                let index = (offset + round) % counts.count
                runs[index].append(try await runOnce(configuration, backend: backend, data: data, observers: counts[index]))
            }
        }
        var results = runs.map(Self.combine)
        let reference = results[0].writerCallsPerSecond
        for index in results.indices.dropFirst() {
            results[index].writerRatio = results[index].writerCallsPerSecond / reference
        }
        return results
    }

    /// One run's raw figures.
    struct Run {
        var measurement: Measurement
        var latencies: [UInt64]
    }

    /// The runs of one observer count as one row: counts summed, latencies
    /// pooled, the median throughput.
    private static func combine(_ runs: [Run]) -> Measurement {
        var row = runs[0].measurement
        for run in runs.dropFirst() {
            row.calls += run.measurement.calls
            row.observedCommits += run.measurement.observedCommits
            row.coalesced += run.measurement.coalesced
            row.snapshots += run.measurement.snapshots
            row.rereads += run.measurement.rereads
        }
        let latencies = runs.flatMap(\.latencies).sorted()
        func percentile(_ p: Double) -> Double? {
            guard !latencies.isEmpty else { return nil }
            let rank = Int((p * Double(latencies.count)).rounded(.up)) - 1
            return Double(latencies[min(max(rank, 0), latencies.count - 1)]) / 1_000
        }
        row.latencyP50Micros = percentile(0.5)
        row.latencyP99Micros = percentile(0.99)
        let throughputs = runs.map(\.measurement.writerCallsPerSecond).sorted()
        row.writerCallsPerSecond = throughputs[throughputs.count / 2]
        let cpu = runs.map(\.measurement.writerCPUMicrosPerCall).sorted()
        row.writerCPUMicrosPerCall = cpu[cpu.count / 2]
        return row
    }

    /// The round a message's text carries (`… #r`), 0 for none.
    static func round(of text: String) -> Int {
        guard let mark = text.range(of: " #", options: .backwards) else { return 0 }
        return Int(text[mark.upperBound...]) ?? 0
    }

    /// `dialog` as the writer persists it in `round`.
    static func dialog(_ dialog: Dialog, round: Int) -> Dialog {
        guard round > 0 else { return dialog }
        return Dialog(
            uniqueId: dialog.uniqueId, isPinned: dialog.isPinned,
            messages: dialog.messages.map { message in
                Message(
                    uniqueId: message.uniqueId, dialogId: message.dialogId, date: message.date,
                    text: "\(message.text) #\(round)", senderId: message.senderId, receiverId: message.receiverId,
                    type: message.type, isIncoming: message.isIncoming, isRead: message.isRead)
            })
    }

    private static func runOnce(
        _ configuration: Configuration, backend: Backend, data: WorkloadData, observers count: Int
    ) async throws -> Run {
        let directory = try makeScratchDirectory("observe-\(backend.name)")
        defer { removeScratchDirectory(directory) }
        return try await measure(configuration, backend: backend, data: data, observers: count, directory: directory)
    }

    // The store lives only inside this function, so it is closed before its
    // directory is removed.
    private static func measure(
        _ configuration: Configuration, backend: Backend, data: WorkloadData, observers count: Int, directory: URL
    ) async throws -> Run {
        guard let store = (try backend.open(directory, configuration.durability) as? DAOSubject)?.store else {
            throw ConfigurationError(
                "backend '\(backend.name)' does not run through a Store (a reference backend); observe measures stores")
        }
        let dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self), translator: DialogTranslator())
        let messages = DAO(storage: try store.anyStorage(for: MessageRecord.self), translator: MessageTranslator())
        try await dialogs.persist(data.initial)
        let written = Array(data.extra.prefix(100))
        guard !written.isEmpty, configuration.calls > 0 else {
            throw ConfigurationError("the observe measurement needs at least one dialog and one call")
        }

        // Observed: dialogs the writer writes that have unread messages, spread over them.
        let candidates = written.filter { $0.messages.contains { !$0.isRead } }
        let observed = (0..<min(count, candidates.count)).map { candidates[$0 * candidates.count / max(count, 1)].uniqueId }
        // The last round each observed dialog is written in.
        var lastRound: [Int64: Int] = [:]
        for call in 0..<configuration.calls {
            lastRound[written[call % written.count].uniqueId] = call / written.count
        }

        // Every observer has its first snapshot before the writer starts.
        var consumers: [Task<[(round: Int, nanoseconds: UInt64)], any Error>] = []
        for dialogId in observed {
            let observation = messages.observe(
                where: #Predicate { $0.dialogId == dialogId && !$0.isRead },
                sortedBy: [SortDescriptor(\.date, order: .reverse)])
            let iterator = observation.makeAsyncIterator()
            var first = iterator
            _ = try await first.next()
            let final = lastRound[dialogId] ?? -1
            consumers.append(
                Task {
                    var deliveries: [(round: Int, nanoseconds: UInt64)] = []
                    var iterator = iterator
                    while final >= 0, let snapshot = try await iterator.next() {
                        let now = DispatchTime.now().uptimeNanoseconds
                        let round = snapshot.results.first.map { Self.round(of: $0.text) } ?? -1
                        deliveries.append((round, now))
                        if round >= final { break }
                    }
                    return deliveries
                })
        }

        let commits = messages.storage.commits
        let rereadsBefore = commits?.rereadCount ?? 0

        // The writer, on a thread of its own.
        let calls = configuration.calls
        let (returns, elapsed, cpu) = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<([UInt64], UInt64, UInt64), any Error>) in
            let thread = Thread {
                do {
                    var returns: [UInt64] = []
                    returns.reserveCapacity(calls)
                    let cpuStart = threadCPUNanoseconds()
                    let start = DispatchTime.now().uptimeNanoseconds
                    for call in 0..<calls {
                        try dialogs.persist(Self.dialog(written[call % written.count], round: call / written.count))
                        returns.append(DispatchTime.now().uptimeNanoseconds)
                    }
                    let elapsed = DispatchTime.now().uptimeNanoseconds - start
                    continuation.resume(returning: (returns, elapsed, threadCPUNanoseconds() &- cpuStart))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.start()
        }

        // Match each observed persist with the first snapshot that holds it.
        var latencies: [UInt64] = []
        var observedCommits = 0
        var coalesced = 0
        var snapshots = 0
        for (dialogId, consumer) in zip(observed, consumers) {
            let deliveries = try await consumer.value
            snapshots += deliveries.count
            guard let final = lastRound[dialogId], deliveries.last?.round == final else {
                throw WorkloadRunner.CheckFailure(
                    description: "the observer of dialog \(dialogId) ended at round \(deliveries.last?.round ?? -1), not \(lastRound[dialogId] ?? -1)")
            }
            for call in 0..<calls where written[call % written.count].uniqueId == dialogId {
                let round = call / written.count
                observedCommits += 1
                guard let delivery = deliveries.first(where: { $0.round >= round }) else { continue }
                if delivery.round > round { coalesced += 1 }
                latencies.append(delivery.nanoseconds > returns[call] ? delivery.nanoseconds - returns[call] : 0)
            }
        }
        await commits?.drained()
        let rereads = (commits?.rereadCount ?? 0) - rereadsBefore
        let measurement = Measurement(
            backend: backend.name, observers: observed.count, calls: calls, observedCommits: observedCommits,
            coalesced: coalesced, snapshots: snapshots, rereads: rereads, latencyP50Micros: nil,
            latencyP99Micros: nil, writerCallsPerSecond: Double(calls) / (Double(elapsed) / 1e9),
            writerCPUMicrosPerCall: Double(cpu) / Double(calls) / 1_000, writerRatio: nil)
        return Run(measurement: measurement, latencies: latencies)
    }

    // MARK: Reports

    /// The CSV header of ``csv(_:)``.
    public static let csvHeader =
        "backend,observers,calls,observed_commits,coalesced,snapshots,rereads,latency_p50_us,latency_p99_us,writer_calls_per_s,writer_ratio,writer_cpu_us_per_call"

    /// The measurements as CSV lines, header first.
    public static func csv(_ measurements: [Measurement]) -> String {
        var lines = [csvHeader]
        for m in measurements {
            let fields: [String] = [
                m.backend, String(m.observers), String(m.calls), String(m.observedCommits), String(m.coalesced),
                String(m.snapshots), String(m.rereads), format(m.latencyP50Micros, 1), format(m.latencyP99Micros, 1),
                format(m.writerCallsPerSecond, 1), format(m.writerRatio, 3), format(m.writerCPUMicrosPerCall, 1),
            ]
            lines.append(fields.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The measurements as run's summary lays its tables out: per observer
    /// count, the backends ranked by the writer's throughput, each with its
    /// ratio to no observer and the snapshot latencies.
    public static func table(_ measurements: [Measurement]) -> String {
        var counts: [Int] = []
        for m in measurements where !counts.contains(m.observers) { counts.append(m.observers) }
        var table: [[String]] = [[
            "observers, backend", "writer calls/s", "÷ no observer", "p50 µs", "p99 µs", "writer CPU µs/call",
            "coalesced", "rereads",
        ]]
        for count in counts {
            table.append(["\(count) observer\(count == 1 ? "" : "s")"] + Array(repeating: "", count: 7))
            let ranked = measurements.filter { $0.observers == count }.sorted { $0.writerCallsPerSecond > $1.writerCallsPerSecond }
            for (rank, m) in ranked.enumerated() {
                table.append([
                    "  \(rank + 1) \(m.backend)", Format.compact(m.writerCallsPerSecond),
                    m.writerRatio.map { Format.ratio($0) } ?? "–", Format.micro(m.latencyP50Micros),
                    Format.micro(m.latencyP99Micros), Format.micro(m.writerCPUMicrosPerCall), String(m.coalesced),
                    String(m.rereads),
                ])
            }
        }
        var text = "change observation: single-dialog persists with observers watching other dialogs\n"
        text += "  latency: from a persist's return to the snapshot's delivery (all rounds pooled)\n"
        return text + SummaryTable.align(table)
    }

    /// The measurements as a Markdown table.
    public static func markdown(_ measurements: [Measurement]) -> String {
        var lines = [
            "| backend | observers | calls | observed commits | coalesced | rereads | latency p50 (µs) | latency p99 (µs) | writer calls/s | writer vs none | writer CPU µs/call |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for m in measurements {
            lines.append(
                "| \(m.backend) | \(m.observers) | \(m.calls) | \(m.observedCommits) | \(m.coalesced) | \(m.rereads) | "
                    + "\(format(m.latencyP50Micros, 0)) | \(format(m.latencyP99Micros, 0)) | "
                    + "\(format(m.writerCallsPerSecond, 0)) | \(format(m.writerRatio, 2)) | \(format(m.writerCPUMicrosPerCall, 0)) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func format(_ value: Double?, _ digits: Int) -> String {
        guard let value else { return "" }
        return String(format: "%.\(digits)f", value)
    }
}

/// The CPU time the calling thread has used, in nanoseconds (0 when the clock
/// cannot be read, which the report then shows as 0).
private func threadCPUNanoseconds() -> UInt64 {
    var time = timespec()
    guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return 0 }
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}
