import Synchronization

/// The results of a query (or one object) as they change: an `AsyncSequence`
/// of ``Snapshot``s. Make one with ``DAO/observe(where:sortedBy:limit:pollInterval:)``
/// or ``DAO/observe(primaryKey:pollInterval:)``.
///
/// ```swift
/// for try await snapshot in messages.observe(where: #Predicate { $0.dialogId == 7 }) {
///     if let changes = snapshot.changes { table.apply(changes, from: snapshot.results) }
///     else { table.reload(snapshot.results) }
/// }
/// ```
///
/// Each iteration is its own observation: it registers with the store when
/// its first element is asked for and reads the current results (the first
/// snapshot), then delivers a snapshot for each commit that changed them.
///
/// - Every snapshot is the results at one committed state, never part of a
///   transaction.
/// - Every commit that changes the results is seen. When the consumer is
///   slower than the writers, the commits made in the meantime come as one
///   snapshot of the latest state, whose ``Snapshot/changes`` are exact against
///   the previous snapshot delivered.
/// - Commits that leave the results as they were produce no snapshot.
/// - Writes through any storage of the same store count, cascades included;
///   with a `pollInterval`, so do commits by other processes, on stores that
///   can tell (SQLite, LMDB).
///
/// The sequence ends (returns `nil`) when the task iterating it is cancelled or
/// the store closes, and throws the ``StorageError`` of a read that fails
/// (then ends). Leaving the loop, cancelling, or dropping the iterator removes
/// the observation from the store.
public struct Observation<Value: Plain>: AsyncSequence, Sendable {
    /// A snapshot of the results.
    public typealias Element = Snapshot<Value>

    let makeCore: @Sendable () -> Result<ObservationCore<Value>, StorageError>

    /// Starts an observation.
    public func makeAsyncIterator() -> Iterator {
        Iterator(handle: IteratorHandle(makeCore()))
    }

    /// Delivers the snapshots of one observation.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let handle: IteratorHandle<Value>

        /// The next snapshot: the first results at once, then the next change.
        /// - Throws: ``StorageError`` when reading the results fails.
        public mutating func next() async throws -> Snapshot<Value>? {
            try await handle.next()
        }
    }
}

/// Ends the observation when the last copy of its iterator goes.
final class IteratorHandle<Value: Plain>: Sendable {
    let core: Result<ObservationCore<Value>, StorageError>
    private let failed = Atomic<Bool>(false)

    init(_ core: Result<ObservationCore<Value>, StorageError>) {
        self.core = core
    }

    deinit {
        if case .success(let core) = core { core.cancel() }
    }

    func next() async throws -> Snapshot<Value>? {
        switch core {
        case .success(let core):
            return try await core.next()
        case .failure(let error):
            // Thrown once, like a failed read; the sequence then ends.
            guard !failed.exchange(true, ordering: .relaxed) else { return nil }
            throw error
        }
    }
}

/// The state of one observation, shared by its iterator and the broadcaster.
final class ObservationCore<Value: Plain>: CommitObserver {
    /// One read of the results, with what the broadcaster needs to decide
    /// whether a change can affect them.
    struct Fetched: Sendable {
        var results: [Value]
        /// The primary keys of the results' records.
        var keys: Set<StoredValue>
        /// The values of the results' foreign key to their owner, when the
        /// entity is owned.
        var foreignKeys: Set<StoredValue>
    }

    let broadcaster: CommitBroadcaster
    let pollInterval: Duration?
    private let fetch: @Sendable () throws -> Fetched
    private let affects: @Sendable (ResolvedChange, _ keys: Set<StoredValue>, _ foreignKeys: Set<StoredValue>) -> Bool
    private let state = Mutex(State())

    private struct State: ~Copyable {
        var started = false
        var loaded = false
        var finished = false
        var failure: StorageError?
        var firstDelivered = false
        var pending = false
        var delivered: [Value] = []
        var latest: [Value] = []
        var keys: Set<StoredValue> = []
        var foreignKeys: Set<StoredValue> = []
        var waiter: CheckedContinuation<Snapshot<Value>?, any Error>?

        /// The snapshot to deliver now, if the latest results differ from the
        /// ones delivered last (or none were delivered yet).
        mutating func takeSnapshot() -> Snapshot<Value>? {
            guard loaded, pending else { return nil }
            pending = false
            guard firstDelivered else {
                firstDelivered = true
                delivered = latest
                return Snapshot(results: latest, changes: nil)
            }
            let changes = ObservedChanges.between(delivered, latest)
            delivered = latest
            return changes.isEmpty ? nil : Snapshot(results: latest, changes: changes)
        }
    }

    init(
        broadcaster: CommitBroadcaster, pollInterval: Duration?,
        fetch: @escaping @Sendable () throws -> Fetched,
        affects: @escaping @Sendable (ResolvedChange, Set<StoredValue>, Set<StoredValue>) -> Bool
    ) {
        self.broadcaster = broadcaster
        self.pollInterval = pollInterval
        self.fetch = fetch
        self.affects = affects
    }

    // MARK: The consumer's side

    func next() async throws -> Snapshot<Value>? {
        let start = state.withLock { state -> Bool in
            guard !state.started else { return false }
            state.started = true
            return true
        }
        if start, !broadcaster.register(self) {
            state.withLock { $0.finished = true }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Snapshot<Value>?, any Error>) in
                let outcome = state.withLock { state -> Result<Snapshot<Value>?, StorageError>? in
                    if let snapshot = state.takeSnapshot() { return .success(snapshot) }
                    if let failure = state.failure {
                        state.failure = nil
                        return .failure(failure)
                    }
                    if state.finished { return .success(nil) }
                    guard state.waiter == nil else {
                        return .failure(
                            StorageError(
                                .invalidArgument, .read, message: "next() was called on an observation while another call was waiting"))
                    }
                    state.waiter = continuation
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Ends the observation and removes it from the store.
    func cancel() {
        let waiter = state.withLock { state -> CheckedContinuation<Snapshot<Value>?, any Error>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        broadcaster.unregister(self)
        waiter?.resume(returning: nil)
    }

    // MARK: The broadcaster's side

    func load() {
        reread()
    }

    func process(_ changes: [ResolvedChange]) {
        let current = state.withLock { state -> (Set<StoredValue>, Set<StoredValue>)? in
            guard state.loaded, !state.finished else { return nil }
            return (state.keys, state.foreignKeys)
        }
        guard let (keys, foreignKeys) = current else { return }
        guard changes.contains(where: { affects($0, keys, foreignKeys) }) else { return }
        reread()
    }

    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Snapshot<Value>?, any Error>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    private func reread() {
        let fetched: Fetched
        do {
            broadcaster.countReread()
            fetched = try fetch()
        } catch {
            fail(error)
            return
        }
        let delivery = state.withLock { state -> (CheckedContinuation<Snapshot<Value>?, any Error>, Snapshot<Value>)? in
            guard !state.finished else { return nil }
            state.keys = fetched.keys
            state.foreignKeys = fetched.foreignKeys
            if !state.loaded || state.latest != fetched.results {
                state.loaded = true
                state.latest = fetched.results
                state.pending = true
            }
            guard let waiter = state.waiter, let snapshot = state.takeSnapshot() else { return nil }
            state.waiter = nil
            return (waiter, snapshot)
        }
        if let (waiter, snapshot) = delivery { waiter.resume(returning: snapshot) }
    }

    private func fail(_ error: any Error) {
        let storageError =
            error as? StorageError
            ?? StorageError(.engine, .read, message: "the observed results could not be read: \(error)", underlying: error)
        let waiter = state.withLock { state -> CheckedContinuation<Snapshot<Value>?, any Error>? in
            guard !state.finished else { return nil }
            state.finished = true
            guard let waiter = state.waiter else {
                state.failure = storageError
                return nil
            }
            state.waiter = nil
            return waiter
        }
        broadcaster.unregister(self)
        waiter?.resume(throwing: storageError)
    }
}
