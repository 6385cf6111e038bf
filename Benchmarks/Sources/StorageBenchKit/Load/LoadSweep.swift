import DAOCore
import DialogGraph
import Foundation

/// A `storage-bench load` invocation: mixes × backends × client counts.
public struct LoadSweepOptions: Sendable {
    /// The mixes, in order.
    public var mixes: [LoadMix]
    /// The backends, in order.
    public var backends: [LoadBackend]
    /// Client counts for every mix, or `nil` for each mix's own.
    public var clients: [Int]?
    /// Seconds per run for every mix, or `nil` for each mix's own.
    public var durationSeconds: Double?
    /// Operations per run for every mix, or `nil` for each mix's own.
    public var operationCount: Int?
    /// Operations per second for every mix, or `nil` for each mix's own.
    public var targetRate: Double?
    /// Seconds run before each measured run of a duration (not measured).
    public var warmupSeconds: Double
    /// The durability of every store.
    public var durability: Durability

    /// Creates options.
    public init(
        mixes: [LoadMix], backends: [LoadBackend], clients: [Int]?, durationSeconds: Double?, operationCount: Int?,
        targetRate: Double?, warmupSeconds: Double, durability: Durability
    ) {
        self.mixes = mixes
        self.backends = backends
        self.clients = clients
        self.durationSeconds = durationSeconds
        self.operationCount = operationCount
        self.targetRate = targetRate
        self.warmupSeconds = warmupSeconds
        self.durability = durability
    }

    /// Parses `--clients`: comma-separated counts from 1 to 1024.
    /// - Throws: ``ConfigurationError`` for an empty list or a count out of range.
    public static func parseClients(_ text: String) throws -> [Int] {
        try parseList(text, option: "--clients").map { item in
            guard let count = Int(item), (1...1024).contains(count) else {
                throw ConfigurationError("--clients takes counts from 1 to 1024 such as 1,2,4,8, not '\(item)'")
            }
            return count
        }
    }

    /// Parses `--format`: `csv`, `json` or both.
    /// - Throws: ``ConfigurationError`` for another format.
    public static func parseFormats(_ text: String) throws -> [String] {
        let formats = try parseList(text, option: "--format")
        for item in formats where !["csv", "json", "markdown"].contains(item) {
            throw ConfigurationError("unknown format '\(item)' in --format; use csv, json or markdown")
        }
        return formats
    }

    /// The run settings of `mix` at `clients`, the options' overrides applied.
    public func settings(_ mix: LoadMix, clients: Int) -> LoadRunSettings {
        LoadRunSettings(
            mix: mix, clients: clients, durationSeconds: durationSeconds ?? mix.durationSeconds,
            operationCount: operationCount ?? (durationSeconds == nil ? mix.operationCount : nil),
            targetRate: targetRate ?? mix.targetRate, warmupSeconds: warmupSeconds)
    }
}

/// Runs a sweep: for each mix, each backend on a fresh store in a fresh
/// temporary directory, loaded once with the mix's dialogs, then run at each
/// client count in turn. A backend whose store fails to open or load gets a
/// failed row for each client count; errors under load are counted per
/// operation; neither stops the other backends.
public enum LoadSweep {
    /// Runs `options`, telling `progress` what starts and `problems` what
    /// failed (`progress` too when `problems` is `nil`), and returns a result
    /// per backend × mix × client count.
    ///
    /// No step holds a thread of Swift's cooperative pool while it waits: a
    /// store is opened, loaded and closed on a thread of the sweep's own,
    /// synchronous clients run on a thread each, and `async` clients await the
    /// store's executor.
    ///
    /// With `workers`, each backend × mix of a mix read from a file runs in a
    /// process of its own (``LoadWorkers``), so that its peak memory is its
    /// own and no backend inherits another's heap or page cache; a worker
    /// that fails gives that backend failed rows, as a store that does not open.
    public static func run(
        _ options: LoadSweepOptions, workers: LoadWorkers? = nil, progress: (String) -> Void,
        problems: ((String) -> Void)? = nil
    ) async -> [LoadRunResult] {
        func problem(_ line: String) {
            if let problems { problems(line) } else { progress(line) }
        }
        var results: [LoadRunResult] = []
        for mix in options.mixes {
            let data = mix.file == nil || workers == nil ? LoadData(mix: mix) : nil
            let counts = options.clients ?? mix.clients
            for backend in options.backends {
                if let workers, let file = mix.file {
                    let job = LoadWorkerJob(options, mixFile: file, backend: backend.name)
                    do {
                        results += try await workers.run(job)
                    } catch {
                        results += failedRuns(backend, mix: mix, counts: counts, options: options, reason: "\(error)", problems: problem)
                    }
                } else if let data {
                    results += await runBackend(
                        backend, mix: mix, data: data, counts: counts, options: options, progress: progress,
                        problems: problem)
                }
            }
        }
        return results
    }

    /// A failed row per client count of `backend` at `mix`, `reason` told to `problems`.
    static func failedRuns(
        _ backend: LoadBackend, mix: LoadMix, counts: [Int], options: LoadSweepOptions, reason: String,
        problems: (String) -> Void
    ) -> [LoadRunResult] {
        problems("load: \(backend.name) \(mix.name): \(reason)")
        return counts.map { clients in
            LoadRunResult(
                backend: backend.name, reference: backend.reference, mix: mix.name,
                mixDescription: mix.proportionsDescription, clients: clients, api: "", settings: "",
                durability: options.durability.rawValue, dialogs: mix.dialogs,
                messagesPerDialog: mix.messagesPerDialog, seconds: 0,
                targetRate: options.settings(mix, clients: clients).targetRate, seed: mix.seed,
                observerSnapshots: nil, peakResidentRise: nil, figures: [], failure: reason)
        }
    }

    /// Runs `backend` at `mix` on a fresh store at each of `counts`; with
    /// `measuresProcessPeak` (a load worker, which runs nothing else), each
    /// result carries the process's peak resident memory.
    static func runBackend(
        _ backend: LoadBackend, mix: LoadMix, data: LoadData, counts: [Int], options: LoadSweepOptions,
        measuresProcessPeak: Bool = false, progress: (String) -> Void, problems: (String) -> Void
    ) async -> [LoadRunResult] {
        func failed(_ reason: String) -> [LoadRunResult] {
            failedRuns(backend, mix: mix, counts: counts, options: options, reason: reason, problems: problems)
        }
        let directory: URL
        do {
            directory = try makeScratchDirectory("load")
        } catch {
            return failed("cannot create a temporary directory: \(error)")
        }
        defer { removeScratchDirectory(directory) }
        var memory = MemoryProbeHandle()
        let subject: any LoadSubject
        do {
            let durability = options.durability
            subject = try await onOwnThread { try backend.open(directory, durability) }
        } catch {
            return failed("the store did not open: \(error)")
        }
        progress("load: \(backend.name) \(mix.name): loading \(mix.dialogs) dialogs × \(mix.messagesPerDialog) messages")
        do {
            try await onOwnThread { try subject.load(data.initial) }
        } catch {
            await close(subject, backend: backend, problems: problems)
            return failed("the initial dialogs did not load: \(error)")
        }
        let shared = LoadShared(mix: mix, data: data)
        var results: [LoadRunResult] = []
        for clients in counts {
            let settings = options.settings(mix, clients: clients)
            let length =
                settings.operationCount.map { "\($0) operations" }
                ?? "\(String(format: "%g", settings.durationSeconds)) s"
            progress("load: \(backend.name) \(mix.name) at \(clients) client\(clients == 1 ? "" : "s"), \(length)")
            let result = await LoadRunner.run(
                settings, subject: subject, shared: shared, backend: backend, durability: options.durability,
                memory: &memory)
            if let failure = result.failure {
                problems("load: \(backend.name) \(mix.name): \(failure)")
            } else if let all = result.all, all.errors > 0 {
                problems("load: \(backend.name) \(mix.name): \(all.errors) errors; first: \(all.firstError ?? "?")")
            }
            var measured = result
            if measuresProcessPeak { measured.peakResident = MemoryProbe.processPeakBytes() }
            results.append(measured)
        }
        await close(subject, backend: backend, problems: problems)
        return results
    }

    /// Closes `subject` on a thread of its own, telling `problems` when it fails.
    static func close(_ subject: any LoadSubject, backend: LoadBackend, problems: (String) -> Void) async {
        do {
            try await onOwnThread { try subject.close() }
        } catch {
            problems("load: \(backend.name): closing failed: \(error)")
        }
    }
}

/// Runs `body` on a new thread and awaits its result, so that a call that
/// blocks (a store's open, a bulk load, a close) never holds a thread of Swift's
/// cooperative pool.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.stackSize = 8 << 20
        thread.start()
    }
}

/// A backend's throughput and p99 divided by its reference's at the same mix,
/// client count and operation.
public struct LoadRatio: Sendable, Hashable {
    /// Throughput ÷ the reference's.
    public var throughput: Double?
    /// p99 ÷ the reference's.
    public var p99: Double?

    /// The peak resident memory of `result`'s worker ÷ its reference's at
    /// the same mix and client count in `results`, or `nil` when either has none.
    public static func memory(of result: LoadRunResult, among results: [LoadRunResult]) -> Double? {
        guard let reference = result.reference, let mine = result.peakResident, result.failure == nil,
            let theirs = results.first(where: {
                $0.backend == reference && $0.mix == result.mix && $0.clients == result.clients && $0.failure == nil
            })?.peakResident, theirs > 0
        else { return nil }
        return Double(mine) / Double(theirs)
    }

    /// The ratio of `figures` (of `result`) to its reference's in `results`.
    public static func of(
        _ figures: LoadOperationFigures, in result: LoadRunResult, among results: [LoadRunResult]
    ) -> LoadRatio {
        guard let reference = result.reference,
            let other = results.first(where: {
                $0.backend == reference && $0.mix == result.mix && $0.clients == result.clients && $0.failure == nil
            }),
            let theirs = other.figures.first(where: { $0.operation == figures.operation }),
            result.failure == nil
        else { return LoadRatio(throughput: nil, p99: nil) }
        return LoadRatio(
            throughput: theirs.throughput > 0 ? figures.throughput / theirs.throughput : nil,
            p99: theirs.p99 > 0 ? figures.p99 / theirs.p99 : nil)
    }
}
