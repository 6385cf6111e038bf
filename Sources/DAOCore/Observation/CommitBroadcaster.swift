import Dispatch
import Foundation
import Synchronization

/// Tells a store's observers what each commit changed: each ``Store`` owns one,
/// and each of its storages calls ``didCommit(_:)`` after a successful commit.
///
/// With nobody observing, ``didCommit(_:)`` is one atomic load and does not
/// even build its ``CommitChange``. With observers, it queues the change and
/// returns; a serial queue of the broadcaster then decides, for each observer,
/// whether the change can affect its results, re-reads only the results that
/// can have changed, and hands new snapshots to the observers. Changes queued
/// while the queue is busy are handled together, so a slow observer coalesces
/// commits rather than slowing the writer.
///
/// Stores whose file another process can write (SQLite, LMDB) give the
/// broadcaster a version source (``setVersionSource(_:)``); while an observer
/// asks for a poll interval, the broadcaster reads the version at that interval
/// and treats any change as ``CommitChange/anything``.
public final class CommitBroadcaster: Sendable {
    private let observerCount = Atomic<Int>(0)
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "DAOCore.CommitBroadcaster")

    private struct State: ~Copyable {
        var observers: [ObjectIdentifier: any CommitObserver] = [:]
        var pending: [CommitChange] = []
        var draining = false
        var closed = false
        /// Changes queued since the broadcaster was made, and those handled.
        var posted = 0
        var handled = 0
        var idleWaiters: [(target: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var reruns = 0
        var versionSource: (@Sendable () throws -> UInt64)?
        var pollTask: Task<Void, Never>?
        var pollInterval: Duration?
        var lastVersion: UInt64?
        var hasBaseline = false
    }

    /// Creates a broadcaster with no observers.
    public init() {}

    // MARK: For stores

    /// Reports a successful commit. Call it after the commit returned, never for
    /// a transaction that was rolled back.
    ///
    /// - Parameter change: what the commit changed; evaluated only when someone
    ///   observes the store.
    public func didCommit(_ change: @autoclosure () -> CommitChange) {
        guard observerCount.load(ordering: .acquiring) > 0 else { return }
        post(change())
    }

    /// Whether anyone observes the store now (one atomic load). A storage
    /// call that lets its records go as it writes them keeps them for its
    /// ``CommitChange`` only when this holds as it begins.
    public var isObserved: Bool { observerCount.load(ordering: .acquiring) > 0 }

    /// Gives the broadcaster a way to read a number that changes when another
    /// process commits (SQLite's `PRAGMA data_version`, LMDB's last transaction
    /// id). The broadcaster reads it only while an observer polls.
    public func setVersionSource(_ source: @escaping @Sendable () throws -> UInt64) {
        state.withLock { $0.versionSource = source }
    }

    /// Ends every observation: their sequences finish (return `nil`) and no
    /// observation can start again. A store calls this when it closes.
    public func close() {
        let (observers, task) = state.withLock { state in
            state.closed = true
            let observers = Array(state.observers.values)
            state.observers.removeAll()
            observerCount.store(0, ordering: .releasing)
            let task = state.pollTask
            state.pollTask = nil
            state.pollInterval = nil
            return (observers, task)
        }
        task?.cancel()
        for observer in observers { observer.finish() }
    }

    // MARK: Diagnostics

    /// How many observations are registered now.
    public var activeObservers: Int { state.withLock { $0.observers.count } }

    /// How many times an observer's results were read again because a change
    /// could have affected them, since the broadcaster was made.
    public var rereadCount: Int { state.withLock { $0.reruns } }

    /// Waits until every commit reported before the call has been handled (its
    /// affected observers have read their results again and queued their
    /// snapshots) and the work queued before it (observers' first reads) is
    /// done. For tests and benchmarks.
    public func drained() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.handled >= state.posted { return true }
                state.idleWaiters.append((state.posted, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
        // The queue is serial: this runs after everything queued before it.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { continuation.resume() }
        }
    }

    // MARK: Observers

    /// Registers `observer` and queues its first read. Returns `false` when the
    /// broadcaster is closed.
    func register(_ observer: any CommitObserver) -> Bool {
        let registered = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.observers[ObjectIdentifier(observer)] = observer
            observerCount.store(state.observers.count, ordering: .releasing)
            updatePolling(&state)
            return true
        }
        guard registered else { return false }
        queue.async { observer.load() }
        return true
    }

    /// Removes `observer`; its results are no longer read.
    func unregister(_ observer: any CommitObserver) {
        let task = state.withLock { state -> Task<Void, Never>? in
            guard state.observers.removeValue(forKey: ObjectIdentifier(observer)) != nil else { return nil }
            observerCount.store(state.observers.count, ordering: .releasing)
            let old = state.pollTask
            updatePolling(&state)
            return old != state.pollTask ? old : nil
        }
        task?.cancel()
    }

    /// Counts a read of an observer's results.
    func countReread() {
        state.withLock { $0.reruns += 1 }
    }

    private func post(_ change: CommitChange) {
        let schedule = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.pending.append(change)
            state.posted += 1
            guard !state.draining else { return false }
            state.draining = true
            return true
        }
        if schedule { queue.async { self.drain() } }
    }

    /// Hands the queued changes to every observer as one batch, then queues
    /// itself again if more arrived meanwhile, so that the first reads of new
    /// observers (queued behind it) are not starved by a steady stream of
    /// commits. Runs on `queue`.
    private func drain() {
        let batch = state.withLock { state -> (changes: [CommitChange], observers: [any CommitObserver])? in
            guard !state.pending.isEmpty else {
                state.draining = false
                return nil
            }
            let changes = state.pending
            state.pending.removeAll()
            return (changes, Array(state.observers.values))
        }
        guard let batch else { return }
        let resolved = batch.changes.map(ResolvedChange.init)
        for observer in batch.observers {
            observer.process(resolved)
        }
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.handled += batch.changes.count
            let handled = state.handled
            let ready = state.idleWaiters.filter { $0.target <= handled }.map(\.continuation)
            state.idleWaiters.removeAll { $0.target <= handled }
            return ready
        }
        for continuation in ready { continuation.resume() }
        queue.async { self.drain() }
    }

    // MARK: Polling

    /// Starts, restarts or stops the poll task so that it runs at the shortest
    /// interval any observer asks for. Called with the lock held.
    private func updatePolling(_ state: inout State) {
        let interval = state.observers.values.compactMap(\.pollInterval).min()
        guard state.versionSource != nil, interval != state.pollInterval || (interval != nil && state.pollTask == nil)
        else { return }
        state.pollTask?.cancel()
        state.pollTask = nil
        state.pollInterval = interval
        guard let interval, let source = state.versionSource else { return }
        if !state.hasBaseline {
            // The baseline is read before the first observer's first read is
            // queued, so a commit between the two is noticed by the next poll.
            // A version that cannot be read leaves none: the first poll then
            // counts as a change.
            state.hasBaseline = true
            do {
                state.lastVersion = try source()
            } catch {
                state.lastVersion = nil
            }
        }
        state.pollTask = Task.detached { [weak self] in
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    return
                }
                guard let self else { return }
                self.poll(source)
            }
        }
    }

    private func poll(_ source: @Sendable () throws -> UInt64) {
        // A version that cannot be read counts as a change, so that the
        // observers read again and meet the store's error themselves.
        let version: UInt64?
        do {
            version = try source()
        } catch {
            version = nil
        }
        let changed = state.withLock { state -> Bool in
            guard let version else { return true }
            defer { state.lastVersion = version }
            return state.lastVersion != version
        }
        if changed { didCommit(.anything) }
    }
}

/// A change with what every observer asks of it worked out once.
struct ResolvedChange: Sendable {
    let change: CommitChange
    /// The changed entity and every entity it owns; `nil` for anything.
    let subtree: Set<String>?
    /// The change's effects on each observed record type, shared by observers.
    let effects = EffectCache()

    init(_ change: CommitChange) {
        self.change = change
        self.subtree = change.payload?.subtree()
    }
}

/// One registered observation, as the broadcaster drives it.
protocol CommitObserver: AnyObject, Sendable {
    /// How often the store's version should be polled for this observer, if at all.
    var pollInterval: Duration? { get }
    /// Reads the first results. Runs on the broadcaster's queue.
    func load()
    /// Reads the results again if any of `changes` can affect them. Runs on the
    /// broadcaster's queue.
    func process(_ changes: [ResolvedChange])
    /// Ends the observation (the store closed).
    func finish()
}
