import DAOCore
import DialogGraph
import Dispatch
import Foundation
import Histogram
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A clock for latencies: `CLOCK_MONOTONIC` nanoseconds.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}

/// Runs one load run's clients against a subject.
public enum LoadRunner {
    /// The timing window every client keeps to.
    struct Window: Sendable {
        /// When operations start counting (after the warm-up).
        let measureStart: UInt64
        /// When no further operation starts (duration runs), or `UInt64.max`.
        let deadline: UInt64
        /// When the pace starts (intended starts count from here).
        let paceStart: UInt64
    }

    /// Runs `settings` on `subject` (already loaded), writing figures for `backend`.
    static func run(
        _ settings: LoadRunSettings, subject: any LoadSubject, shared: LoadShared, backend: LoadBackend,
        durability: Durability, memory: inout MemoryProbeHandle
    ) async -> LoadRunResult {
        let mix = settings.mix
        let clients = settings.clients
        var result = LoadRunResult(
            backend: backend.name, reference: backend.reference, mix: mix.name,
            mixDescription: mix.proportionsDescription, clients: clients, api: subject.apiDescription,
            settings: subject.settingsDescription + " clients=\(clients)", durability: durability.rawValue,
            dialogs: mix.dialogs, messagesPerDialog: mix.messagesPerDialog, seconds: 0,
            targetRate: settings.targetRate, seed: mix.seed, observerSnapshots: nil, peakResidentRise: nil,
            figures: [], failure: nil)

        // Scripts: client i's seed depends on the mix's seed and i only.
        let perClientRate = settings.targetRate.map { $0 / Double(clients) }
        var scripts: [ClientScript] = []
        for index in 0..<clients {
            var quota: Int?
            if let count = settings.operationCount {
                quota = count / clients + (index < count % clients ? 1 : 0)
            }
            scripts.append(
                ClientScript(
                    shared: shared, operations: mix.operations, distribution: mix.distribution,
                    seed: mix.seed &+ 0x9E37_79B9_7F4A_7C15 &* UInt64(index + 1), rate: perClientRate, quota: quota))
        }
        if let writer = mix.writer {
            scripts.append(
                ClientScript(
                    shared: shared, operations: writer.operations, distribution: writer.distribution,
                    seed: mix.seed ^ 0xC0FF_EE00_D15E_A5E5, rate: writer.targetRate,
                    quota: settings.operationCount.map { max(1, $0 / max(1, clients)) }))
        }
        var handles: [LoadClientHandle] = []
        do {
            for index in scripts.indices {
                handles.append(try subject.client(index: index, scanLength: mix.scanLength, pageSize: mix.pageSize))
            }
        } catch {
            result.failure = "a client did not open: \(error)"
            return result
        }
        var observers: (any LoadObservers)?
        if mix.observers > 0 {
            let observed = KeyChooser.hottest(
                mix.observers, distribution: mix.writer?.distribution ?? mix.distribution, count: mix.dialogs)
            do {
                observers = try subject.observe(dialogIds: observed, pageSize: mix.pageSize)
            } catch {
                result.failure = "the observers did not start: \(error)"
                return result
            }
            // The dialogs are open before the load starts: each observer has
            // its first results (or has failed) before the clients run, or 10 s passed.
            if let observers {
                let giveUp = monotonicNanoseconds() + 10_000_000_000
                while observers.snapshots + observers.errors < observed.count && monotonicNanoseconds() < giveUp {
                    do {
                        try await Task.sleep(nanoseconds: 1_000_000)
                    } catch {
                        break
                    }
                }
            }
        }

        // The window opens when the last client is ready: a client that its
        // thread or its task starts late does not find the run over.
        let gate = StartGate(
            clients: scripts.count, warmup: settings.operationCount == nil ? UInt64(settings.warmupSeconds * 1e9) : 0,
            duration: settings.operationCount == nil ? UInt64(settings.durationSeconds * 1e9) : nil)
        let collected = Collected(count: scripts.count)
        // Synchronous clients run on a thread each; the group tells when the last ends.
        let group = DispatchGroup()
        var asyncClients: [(Int, any AsyncLoadClient, ClientScript)] = []
        for (index, (handle, script)) in zip(handles, scripts).enumerated() {
            switch handle {
            case .sync(let client):
                group.enter()
                let thread = Thread {
                    var script = script
                    LoadRunner.runSync(client, script: &script, window: gate.arriveAndWait())
                    collected.finish(index, script)
                    group.leave()
                }
                thread.stackSize = 1 << 20
                thread.start()
            case .async(let client):
                asyncClients.append((index, client, script))
            }
        }
        // `async` clients are a task each, on a thread of its own (ClientThread).
        let threads = asyncClients.map { _ in ClientThread() }
        await withTaskGroup(of: Void.self) { tasks in
            for ((index, client, script), thread) in zip(asyncClients, threads) {
                tasks.addTask(executorPreference: thread) {
                    var script = script
                    await LoadRunner.runAsync(client, script: &script, window: await gate.arrive())
                    collected.finish(index, script)
                }
            }
        }
        for thread in threads { thread.stop() }
        // Waiting for the threads holds no thread of the cooperative pool.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            group.notify(queue: .global()) { continuation.resume() }
        }
        observers?.stop()
        let end = collected.lastEnd.load(ordering: .acquiring)
        let seconds = Double(end &- gate.window.measureStart) / 1e9
        result.seconds = seconds
        result.observerSnapshots = observers?.snapshots
        result.peakResidentRise = memory.peakRise()

        var merged: [LoadOperation: OperationTally] = [:]
        for script in collected.scripts.withLock({ $0 }) {
            for (operation, tally) in script?.tallies ?? [:] {
                merged[operation, default: OperationTally()].merge(tally)
            }
        }
        var all = OperationTally()
        for operation in merged.keys.sorted() {
            guard let tally = merged[operation] else { continue }
            all.merge(tally)
            result.figures.append(figures(operation.rawValue, tally, seconds: seconds, paced: settings.targetRate != nil))
        }
        if let observers, observers.errors > 0 {
            all.errors += observers.errors
            if all.firstError == nil { all.firstError = "\(observers.errors) observations ended with an error" }
        }
        result.figures.append(figures("all", all, seconds: seconds, paced: settings.targetRate != nil))
        return result
    }

    static func figures(_ name: String, _ tally: OperationTally, seconds: Double, paced: Bool) -> LoadOperationFigures {
        func us(_ histogram: Histogram<UInt64>, _ percentile: Double) -> Double {
            histogram.totalCount == 0 ? 0 : Double(histogram.valueAtPercentile(percentile)) / 1000
        }
        let hasIntended = paced && tally.intended.totalCount > 0
        return LoadOperationFigures(
            operation: name, operations: tally.count, throughput: seconds > 0 ? Double(tally.count) / seconds : 0,
            errors: tally.errors, retries: tally.retries, rows: tally.rows,
            p50: us(tally.service, 50), p90: us(tally.service, 90), p99: us(tally.service, 99),
            p999: us(tally.service, 99.9), max: tally.service.totalCount == 0 ? 0 : Double(tally.service.max) / 1000,
            intendedP50: hasIntended ? us(tally.intended, 50) : nil,
            intendedP90: hasIntended ? us(tally.intended, 90) : nil,
            intendedP99: hasIntended ? us(tally.intended, 99) : nil,
            intendedP999: hasIntended ? us(tally.intended, 99.9) : nil,
            intendedMax: hasIntended ? Double(tally.intended.max) / 1000 : nil,
            firstError: tally.firstError, spectrum: LatencySpectrum(histogram: tally.service))
    }

    /// The intended start of operation `n` of a paced script, or now.
    @inline(__always)
    static func intendedStart(_ script: ClientScript, _ n: Int, window: Window) -> UInt64? {
        guard let interval = script.interval else { return nil }
        return window.paceStart &+ UInt64(n) &* interval
    }

    static func runSync(_ client: any LoadClient, script: inout ClientScript, window: Window) {
        sleepUntil(window.paceStart)
        var n = 0
        while true {
            if let quota = script.quota, n >= quota { break }
            var now = monotonicNanoseconds()
            if now >= window.deadline { break }
            let intended = intendedStart(script, n, window: window)
            if let intended, intended > now {
                sleepUntil(intended)
                now = monotonicNanoseconds()
                if now >= window.deadline { break }
            }
            let (operation, step) = script.next()
            var retries = 0
            var rows = 0
            var failure: (any Error)?
            let begin = monotonicNanoseconds()
            while true {
                do {
                    rows = try perform(step, on: client)
                    failure = nil
                    break
                } catch {
                    failure = error
                    if isBusy(error) && retries < loadRetryLimit {
                        retries += 1
                        continue
                    }
                    break
                }
            }
            let end = monotonicNanoseconds()
            if failure == nil { script.acknowledge(step) }
            if begin >= window.measureStart {
                script.record(
                    operation, start: begin, intended: intended ?? begin, end: end, rows: rows, retries: retries,
                    error: failure)
            }
            n += 1
        }
    }

    static func runAsync(_ client: any AsyncLoadClient, script: inout ClientScript, window: Window) async {
        var n = 0
        while true {
            if let quota = script.quota, n >= quota { break }
            var now = monotonicNanoseconds()
            let until = intendedStart(script, n, window: window) ?? window.paceStart
            if until > now {
                do {
                    try await Task.sleep(nanoseconds: until - now)
                } catch {
                    break
                }
                now = monotonicNanoseconds()
            }
            if now >= window.deadline { break }
            let intended = intendedStart(script, n, window: window)
            let (operation, step) = script.next()
            var retries = 0
            var rows = 0
            var failure: (any Error)?
            let begin = monotonicNanoseconds()
            while true {
                do {
                    rows = try await perform(step, on: client)
                    failure = nil
                    break
                } catch {
                    failure = error
                    if isBusy(error) && retries < loadRetryLimit {
                        retries += 1
                        continue
                    }
                    break
                }
            }
            let end = monotonicNanoseconds()
            if failure == nil { script.acknowledge(step) }
            if begin >= window.measureStart {
                script.record(
                    operation, start: begin, intended: intended ?? begin, end: end, rows: rows, retries: retries,
                    error: failure)
            }
            n += 1
        }
    }

    @inline(__always)
    static func perform(_ step: ClientScript.Step, on client: any LoadClient) throws -> Int {
        switch step {
        case .read(let id): return try client.read(dialogId: id)
        case .write(let dialog, _): return try client.write(dialog)
        case .messages(let id, let limit, let newestFirst):
            return try client.messages(dialogId: id, limit: limit, newestFirst: newestFirst)
        case .append(let message): return try client.append(message)
        case .readModifyWrite(let id, let dialog):
            let read = try client.read(dialogId: id)
            return read + (try client.write(dialog))
        }
    }

    @inline(__always)
    static func perform(_ step: ClientScript.Step, on client: any AsyncLoadClient) async throws -> Int {
        switch step {
        case .read(let id): return try await client.read(dialogId: id)
        case .write(let dialog, _): return try await client.write(dialog)
        case .messages(let id, let limit, let newestFirst):
            return try await client.messages(dialogId: id, limit: limit, newestFirst: newestFirst)
        case .append(let message): return try await client.append(message)
        case .readModifyWrite(let id, let dialog):
            let read = try await client.read(dialogId: id)
            return read + (try await client.write(dialog))
        }
    }

    /// Sleeps this (dedicated) thread until the monotonic clock reaches `deadline`.
    static func sleepUntil(_ deadline: UInt64) {
        while true {
            let now = monotonicNanoseconds()
            guard now < deadline else { return }
            let wait = deadline - now
            var spec = timespec(tv_sec: Int(wait / 1_000_000_000), tv_nsec: Int(wait % 1_000_000_000))
            nanosleep(&spec, nil)
        }
    }
}

/// Where the clients of a run meet before it starts: the last to arrive opens
/// the timing window (2 ms on, so that every client sees it before it begins),
/// and each client learns it then.
final class StartGate: Sendable {
    private let clients: Int
    private let warmup: UInt64
    private let duration: UInt64?
    private let arrived = Atomic<Int>(0)
    /// The window's start, 0 until the last client arrived.
    private let start = Atomic<UInt64>(0)

    init(clients: Int, warmup: UInt64, duration: UInt64?) {
        self.clients = clients
        self.warmup = warmup
        self.duration = duration
    }

    /// The window, once open (before, one starting at 0).
    var window: LoadRunner.Window {
        let start = start.load(ordering: .acquiring)
        return LoadRunner.Window(
            measureStart: start + warmup, deadline: duration.map { start + warmup + $0 } ?? .max, paceStart: start)
    }

    /// Counts this client in; the last one opens the window. `true` when open.
    private func countIn() -> Bool {
        if arrived.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue == clients {
            start.store(monotonicNanoseconds() + 2_000_000, ordering: .releasing)
        }
        return start.load(ordering: .acquiring) != 0
    }

    /// For a client on a thread of its own: arrives and waits there.
    func arriveAndWait() -> LoadRunner.Window {
        if !countIn() {
            while start.load(ordering: .acquiring) == 0 { usleep(200) }
        }
        return window
    }

    /// For a client task: arrives and sleeps (holding no thread) until open.
    func arrive() async -> LoadRunner.Window {
        if !countIn() {
            while start.load(ordering: .acquiring) == 0 {
                do {
                    try await Task.sleep(nanoseconds: 200_000)
                } catch {
                    break
                }
            }
        }
        return window
    }
}

/// The scripts the clients hand back when they end, and when the last ended.
final class Collected: Sendable {
    let scripts: Mutex<[ClientScript?]>
    let lastEnd = Atomic<UInt64>(0)

    init(count: Int) { scripts = Mutex(Array(repeating: nil, count: count)) }

    func finish(_ index: Int, _ script: ClientScript) {
        let end = monotonicNanoseconds()
        scripts.withLock { $0[index] = script }
        var current = lastEnd.load(ordering: .relaxed)
        while current < end {
            let (exchanged, original) = lastEnd.compareExchange(
                expected: current, desired: end, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = original
        }
    }
}

/// The resident-memory high-water mark of a backend × mix, from its store's
/// opening (Linux's resettable `VmHWM`); figures are `nil` where it cannot be reset.
public struct MemoryProbeHandle {
    private var probe: MemoryProbe?

    /// A probe starting now.
    public init() { probe = MemoryProbe() }

    /// The highest rise of resident memory since the probe started, in bytes.
    mutating func peakRise() -> Int64? {
        guard probe != nil else { return nil }
        return probe?.workloadPeak()
    }
}
