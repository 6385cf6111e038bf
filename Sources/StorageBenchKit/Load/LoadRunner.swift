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

/// How one load run goes: the mix, the client count and how long.
public struct LoadRunSettings: Sendable {
    /// The mix.
    public var mix: LoadMix
    /// Concurrent clients (the writer of a mix that has one comes on top).
    public var clients: Int
    /// Seconds measured (when ``operationCount`` is `nil`).
    public var durationSeconds: Double
    /// Operations over all clients, or `nil` to run for ``durationSeconds``.
    public var operationCount: Int?
    /// Operations per second over all clients, or `nil` for as fast as they can.
    public var targetRate: Double?
    /// Seconds run first and not measured (duration runs only).
    public var warmupSeconds: Double

    /// Creates settings.
    public init(
        mix: LoadMix, clients: Int, durationSeconds: Double, operationCount: Int?, targetRate: Double?,
        warmupSeconds: Double
    ) {
        self.mix = mix
        self.clients = clients
        self.durationSeconds = durationSeconds
        self.operationCount = operationCount
        self.targetRate = targetRate
        self.warmupSeconds = warmupSeconds
    }
}

/// The figures of one operation type (or of all, merged) in one run.
public struct LoadOperationFigures: Sendable, Hashable, Codable {
    /// The operation's name, or `all`.
    public var operation: String
    /// Operations that completed (with or without an error) in the measured window.
    public var operations: Int
    /// Completed operations per second.
    public var throughput: Double
    /// Operations that ended with an error.
    public var errors: Int
    /// Calls made again after a busy error.
    public var retries: Int
    /// Rows read or written (a dialog counts 1 + its messages).
    public var rows: Int
    /// Service-time latency percentiles and maximum, in microseconds.
    public var p50: Double, p90: Double, p99: Double, p999: Double, max: Double
    /// Latency from each operation's intended start (coordinated omission
    /// corrected), with a target rate only; microseconds.
    public var intendedP50: Double?, intendedP90: Double?, intendedP99: Double?, intendedP999: Double?,
        intendedMax: Double?
    /// The first error's description, or `nil`.
    public var firstError: String?
    /// The service-time latency at each percentile of ``LatencySpectrum/ladder``, or `nil` without operations.
    public var spectrum: LatencySpectrum? = nil
}

/// One backend × mix × client count.
public struct LoadRunResult: Sendable, Codable {
    /// The backend.
    public var backend: String
    /// The backend's raw reference, or `nil`.
    public var reference: String?
    /// The mix's name.
    public var mix: String
    /// The mix's proportions and distribution.
    public var mixDescription: String
    /// Clients.
    public var clients: Int
    /// How clients called the backend.
    public var api: String
    /// The settings in force.
    public var settings: String
    /// `full` or `none`.
    public var durability: String
    /// Dialogs × messages stored before the run.
    public var dialogs: Int, messagesPerDialog: Int
    /// The measured window, in seconds.
    public var seconds: Double
    /// The target rate, or `nil`.
    public var targetRate: Double?
    /// The seed.
    public var seed: UInt64
    /// Snapshots the observers received, or `nil` without observers.
    public var observerSnapshots: Int?
    /// The highest rise of resident memory since the store was opened, in bytes, or `nil`.
    public var peakResidentRise: Int64?
    /// Per operation type, then `all`.
    public var figures: [LoadOperationFigures]
    /// Why the run could not run at all (the store did not open or load), or `nil`.
    public var failure: String?

    /// The merged figures of every operation.
    public var all: LoadOperationFigures? { figures.first { $0.operation == "all" } }

    /// Errors over all operations (and a failure to run counts as one).
    public var errorCount: Int { (all?.errors ?? 0) + (failure == nil ? 0 : 1) }
}

/// A clock for latencies: `CLOCK_MONOTONIC` nanoseconds.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}

/// The data a mix writes, generated once per mix from its seed.
final class LoadData: Sendable {
    /// The initial dialogs (ids 1…D).
    let initial: [Dialog]
    /// The initial dialogs with one field of the dialog and one of its first
    /// message changed: what `update` writes, alternating with ``initial`` so
    /// that each update changes the record.
    let changed: [Dialog]

    init(mix: LoadMix) {
        let data = WorkloadData(dialogs: mix.dialogs, messagesPerDialog: mix.messagesPerDialog, seed: mix.seed)
        initial = data.initial
        changed = data.initial.map { dialog in
            var messages = dialog.messages
            if let first = messages.first { messages[0] = first.with(isRead: !first.isRead) }
            return Dialog(uniqueId: dialog.uniqueId, isPinned: !dialog.isPinned, messages: messages)
        }
    }
}

/// What the clients of one backend × mix share: the data to write and the
/// counters of new ids (which carry over from one client count to the next,
/// as the store keeps what was inserted).
final class LoadShared: Sendable {
    let mix: LoadMix
    let data: LoadData
    var initial: [Dialog] { data.initial }
    var changed: [Dialog] { data.changed }
    /// The next id an `insert` takes.
    let nextDialog: Atomic<Int64>
    /// The newest dialog id whose insert has returned (`latest` reads from it down).
    let latestDialog: Atomic<Int64>
    /// The next serial of an appended message.
    let nextMessage = Atomic<Int64>(0)
    /// The first id of an appended message: above every id the mix's inserts can reach.
    static let appendedIdBase: Int64 = 1 << 42

    init(mix: LoadMix, data: LoadData) {
        self.mix = mix
        self.data = data
        nextDialog = Atomic(Int64(mix.dialogs) + 1)
        latestDialog = Atomic(Int64(mix.dialogs))
    }

    /// The dialog an `update` of `id` writes.
    func updated(_ id: Int64, flip: Bool) -> Dialog {
        let index = Int((id - 1) % Int64(initial.count))
        let template = flip ? changed[index] : initial[index]
        if template.uniqueId == id { return template }
        return renumbered(template, as: id)
    }

    /// A new dialog under `id`, shaped as an initial one.
    func inserted(_ id: Int64) -> Dialog {
        renumbered(initial[Int((id - 1) % Int64(initial.count))], as: id)
    }

    private func renumbered(_ template: Dialog, as id: Int64) -> Dialog {
        let perDialog = Int64(mix.messagesPerDialog)
        let messages = template.messages.enumerated().map { offset, message in
            Message(
                uniqueId: (id - 1) * perDialog + Int64(offset) + 1, dialogId: id, date: message.date,
                text: message.text, senderId: message.senderId, receiverId: message.receiverId, type: message.type,
                isIncoming: message.isIncoming, isRead: message.isRead)
        }
        return Dialog(uniqueId: id, isPinned: template.isPinned, messages: messages)
    }

    /// A new message in dialog `id`, newer than every message stored.
    func appended(to id: Int64) -> Message {
        let serial = nextMessage.wrappingAdd(1, ordering: .relaxed).oldValue
        let template = initial[Int(serial % Int64(initial.count))].messages.first
        return Message(
            uniqueId: Self.appendedIdBase + serial, dialogId: id,
            date: Date(timeIntervalSince1970: 2_000_000_000 + Double(serial) / 1000),
            text: template?.text ?? "hello", senderId: template?.senderId ?? 1,
            receiverId: template?.receiverId ?? 2, type: template?.type ?? 0,
            isIncoming: template?.isIncoming ?? false, isRead: false)
    }
}

/// One client's tallies, per operation type.
struct OperationTally: Sendable {
    var service = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
    var intended = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
    var count = 0
    var errors = 0
    var retries = 0
    var rows = 0
    var firstError: String?

    init() {
        service.autoResize = true
        intended.autoResize = true
    }

    mutating func merge(_ other: OperationTally) {
        service.add(other.service)
        intended.add(other.intended)
        count += other.count
        errors += other.errors
        retries += other.retries
        rows += other.rows
        if firstError == nil { firstError = other.firstError }
    }
}

/// What one client does: its operations with their cumulative proportions, its
/// key chooser, its generator and its pace.
struct ClientScript: Sendable {
    enum Step {
        case read(Int64)
        case write(Dialog, inserted: Int64?)
        case messages(Int64, limit: Int, newestFirst: Bool)
        case append(Message)
        case readModifyWrite(Int64, Dialog)
    }

    let shared: LoadShared
    let cumulative: [(LoadOperation, Double)]
    var keys: KeyChooser
    var random: SplitMix64
    /// Nanoseconds between intended starts, or `nil` for no pace.
    let interval: UInt64?
    /// Operations this client runs, or `nil` to run until the deadline.
    let quota: Int?
    var tallies: [LoadOperation: OperationTally] = [:]
    var flip = false

    init(
        shared: LoadShared, operations: [LoadOperation: Double], distribution: KeyDistribution, seed: UInt64,
        rate: Double?, quota: Int?
    ) {
        self.shared = shared
        var total = 0.0
        var cumulative: [(LoadOperation, Double)] = []
        for (operation, share) in operations.sorted(by: { $0.key < $1.key }) {
            total += share
            cumulative.append((operation, total))
        }
        self.cumulative = cumulative
        keys = KeyChooser(distribution: distribution, count: shared.mix.dialogs, theta: shared.mix.zipfianTheta)
        random = SplitMix64(seed: seed)
        interval = rate.map { UInt64(max(1, 1e9 / $0)) }
        self.quota = quota
        for operation in operations.keys { tallies[operation] = OperationTally() }
    }

    /// The next operation and what it needs, made before its clock starts.
    mutating func next() -> (LoadOperation, Step) {
        let unit = Double(random.next() >> 11) * 0x1p-53
        let operation = cumulative.first { unit < $0.1 }?.0 ?? cumulative[cumulative.count - 1].0
        let latest = shared.latestDialog.load(ordering: .acquiring)
        switch operation {
        case .read:
            return (operation, .read(keys.next(&random, latest: latest)))
        case .update:
            flip.toggle()
            let id = keys.next(&random, latest: latest)
            return (operation, .write(shared.updated(id, flip: flip), inserted: nil))
        case .insert:
            let id = shared.nextDialog.wrappingAdd(1, ordering: .relaxed).oldValue
            return (operation, .write(shared.inserted(id), inserted: id))
        case .scan:
            return (operation, .messages(keys.next(&random, latest: latest), limit: shared.mix.scanLength, newestFirst: false))
        case .page:
            return (operation, .messages(keys.next(&random, latest: latest), limit: shared.mix.pageSize, newestFirst: true))
        case .append:
            return (operation, .append(shared.appended(to: keys.next(&random, latest: latest))))
        case .readModifyWrite:
            flip.toggle()
            let id = keys.next(&random, latest: latest)
            return (operation, .readModifyWrite(id, shared.updated(id, flip: flip)))
        }
    }

    /// Records one operation that started at `start` (intended at `intended`) and ended at `end`.
    mutating func record(
        _ operation: LoadOperation, start: UInt64, intended: UInt64, end: UInt64, rows: Int, retries: Int,
        error: (any Error)?
    ) {
        var tally = tallies[operation] ?? OperationTally()
        _ = tally.service.record(Swift.max(1, end &- start))
        if interval != nil { _ = tally.intended.record(Swift.max(1, end &- intended)) }
        tally.count += 1
        tally.rows += rows
        tally.retries += retries
        if let error {
            tally.errors += 1
            if tally.firstError == nil { tally.firstError = String(describing: error) }
        }
        tallies[operation] = tally
    }

    /// Publishes an acknowledged insert for `latest`.
    func acknowledge(_ step: Step) {
        if case .write(_, let inserted?) = step {
            var current = shared.latestDialog.load(ordering: .relaxed)
            while current < inserted {
                let (exchanged, original) = shared.latestDialog.compareExchange(
                    expected: current, desired: inserted, ordering: .acquiringAndReleasing)
                if exchanged { break }
                current = original
            }
        }
    }
}

/// Whether an error is worth a retry: the engine was busy.
func isBusy(_ error: any Error) -> Bool {
    (error as? StorageError)?.kind == .busy
}

/// The most times a busy call is made again.
let loadRetryLimit = 3

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
