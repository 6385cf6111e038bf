import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The threads a store owns for its `async` calls: one writer thread, which
/// runs the writes one at a time in the order they came, and a few reader
/// threads, which run reads side by side.
///
/// An `async` call of a ``Storage`` or a ``DAO`` hands its work to one of
/// these threads as a job and suspends until the job has run: the task gives
/// its cooperative-pool thread back while the engine works, while the job
/// waits for a lock (the writer's, a free SQLite connection) and while it
/// waits in the queue. No thread of Swift's cooperative pool ever waits for
/// the store. (GRDB does the same with a serial dispatch queue per
/// connection; see docs/CONCURRENCY.md.)
///
/// ```swift
/// let executor = StoreExecutor(readers: 4)
/// let count = try await executor.read { _ in try storage.count() }
/// ```
///
/// Each adapter's store owns one executor, with as many reader threads as it
/// can read side by side (``Storage/executor``); a third-party storage that
/// names none runs on ``shared``. Threads start on a queue's first job, so a
/// store used only synchronously starts none, and they end when the executor
/// is released.
///
/// Cancellation: a job whose task is cancelled before it starts is not run,
/// and the call throws `CancellationError`. A job that has started runs to its
/// end, and its body can ask ``Cancellation/isCancelled`` between steps (the
/// persists do, between records, so a cancelled batch rolls back). A job that
/// finished returns its answer even if its task was cancelled meanwhile.
public final class StoreExecutor: Sendable {
    /// A job's view of its task's cancellation, handed to the body of
    /// ``write(_:)`` and ``read(_:)``.
    public struct Cancellation: Sendable {
        /// The job, or `nil` for a read run in place (on the task's own thread).
        let job: JobBase?

        /// Whether the task that awaits the job was cancelled.
        public var isCancelled: Bool {
            guard let job else { return Task.isCancelled }
            return job.cancelled.load(ordering: .relaxed)
        }

        /// Throws `CancellationError` when the task that awaits the job was
        /// cancelled.
        public func check() throws {
            if isCancelled { throw CancellationError() }
        }
    }

    /// How many reader threads the executor has.
    public let readerCount: Int
    /// Whether a read first runs in place, on the awaiting task's own thread,
    /// and moves to a reader thread only when it would wait (see
    /// ``readsMustNotWait``).
    public let readsInPlace: Bool
    /// How many writer threads the executor has: one, which runs the writes
    /// one at a time in the order they came, or more for a store whose
    /// engine runs write transactions side by side and orders them itself
    /// (a database server), each write then on the least busy of them.
    public var writerCount: Int { writers.count }
    private let writers: [StoreThread]
    private let readers: [StoreThread]

    /// An executor with `writers` writer threads (one by default) and `readers` reader threads (at
    /// least one), named `name` (the threads' names say which is which).
    ///
    /// With `readsInPlace`, ``read(_:)`` runs its body on the awaiting task's
    /// thread first, with ``readsMustNotWait`` set: the storage's adapter must
    /// then take every lock and connection it needs only if it is free at
    /// once, and otherwise call ``wouldWait()`` and throw. The read then runs
    /// again on a reader thread, where it may wait. An adapter that does not
    /// honour ``readsMustNotWait`` must leave `readsInPlace` off.
    ///
    /// With more than one of `writers`, ``write(_:)`` runs each body on the
    /// writer thread with the fewest jobs waiting, side by side with other
    /// writes: for a store whose engine takes several write transactions at
    /// once, where one thread for every write would make each wait for the
    /// round trips of the writes before it. Writes a task awaits one after
    /// another still run in that order, and reads never wait behind a write
    /// (they have threads of their own).
    public init(readers: Int, name: String = "store", readsInPlace: Bool = false, writers: Int = 1) {
        readerCount = max(1, readers)
        self.readsInPlace = readsInPlace
        self.writers =
            writers <= 1
            ? [StoreThread(name: "\(name).writer")]
            : (0..<writers).map { StoreThread(name: "\(name).writer\($0)") }
        self.readers = (0..<readerCount).map { StoreThread(name: "\(name).reader\($0)") }
    }

    deinit {
        for writer in writers { writer.stop() }
        for reader in readers { reader.stop() }
    }

    /// The reader count an executor of a store that reads side by side
    /// without limit (LMDB, the file stores) gets by default: the number of
    /// active processor cores, at least 2 and at most 8.
    public static var defaultReaderCount: Int {
        min(8, max(2, ProcessInfo.processInfo.activeProcessorCount))
    }

    /// The executor of storages that name none of their own.
    public static let shared = StoreExecutor(readers: defaultReaderCount, name: "shared-store")

    /// Runs `body` on the writer thread, after the writes handed over before
    /// it, and returns what it returns; with several writer threads
    /// (``writerCount``), on the one with the fewest jobs waiting.
    ///
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   job starts (`body` then does not run); else what `body` throws.
    public func write<T: Sendable>(_ body: @escaping @Sendable (_ cancellation: Cancellation) throws -> T) async throws
        -> T
    {
        try await run(body, on: Self.leastBusy(writers))
    }

    /// Runs `body` on a reader thread (the one with the fewest jobs waiting)
    /// and returns what it returns. With ``readsInPlace``, `body` first runs
    /// on the awaiting task's own thread, and moves to a reader thread only if
    /// the storage found a lock or connection it needs taken
    /// (``wouldWait()``): a read that needs no wait costs no thread hop.
    ///
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   job starts (`body` then does not run); else what `body` throws.
    public func read<T: Sendable>(_ body: @escaping @Sendable (_ cancellation: Cancellation) throws -> T) async throws
        -> T
    {
        if readsInPlace {
            if Task.isCancelled { throw CancellationError() }
            InPlaceRead.begin()
            do {
                let value = try body(Cancellation(job: nil))
                InPlaceRead.end()
                return value
            } catch {
                // A read that would have waited did nothing yet: it runs again
                // on a reader thread. Any other error is the read's answer.
                guard InPlaceRead.end() else { throw error }
            }
        }
        return try await run(body, on: Self.leastBusy(readers))
    }

    /// Whether the current thread runs a read in place for an `async` call
    /// (``readsInPlace``): an adapter must not wait for a lock or a connection
    /// then. It takes what it needs only if it is free at once; otherwise it
    /// calls ``wouldWait()``, throws that error before it has done anything,
    /// and the executor runs the read again on a reader thread.
    public static var readsMustNotWait: Bool { InPlaceRead.isActive }

    /// Notes that the read in place on this thread would have to wait, and
    /// returns the error to throw (any error the adapter wraps it in works
    /// too: the executor goes by the note).
    public static func wouldWait() -> any Error {
        InPlaceRead.noteWouldWait()
        return ReadWouldWait()
    }

    /// Runs `body`, code of the caller's that a read hands records to (a
    /// `forEach` body), outside the read in place: ``readsMustNotWait`` is
    /// off while it runs, so the caller's own calls behave as anywhere else,
    /// and once a record was handed over the read is not run again on a
    /// reader thread (the body would see its records twice).
    public static func outsideReadInPlace<T>(_ body: () throws -> T) rethrows -> T {
        guard InPlaceRead.isActive else { return try body() }
        InPlaceRead.handOver()
        return try body()
    }

    /// The error of ``wouldWait()``; it never reaches a caller of the
    /// executor.
    public struct ReadWouldWait: Error, CustomStringConvertible {
        public var description: String { "a read run in place would have waited for a lock or a connection" }
    }

    /// The thread of `threads` with the fewest jobs queued or running.
    private static func leastBusy(_ threads: [StoreThread]) -> StoreThread {
        var best = threads[0]
        var fewest = best.pending.load(ordering: .relaxed)
        var index = 1
        while fewest > 0, index < threads.count {
            let load = threads[index].pending.load(ordering: .relaxed)
            if load < fewest {
                best = threads[index]
                fewest = load
            }
            index += 1
        }
        return best
    }

    private func run<T: Sendable>(
        _ body: @escaping @Sendable (_ cancellation: Cancellation) throws -> T, on thread: StoreThread
    ) async throws -> T {
        let job = Job(body)
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                job.continuation = continuation
                thread.enqueue(job)
            }
        } onCancel: {
            job.cancelled.store(true, ordering: .relaxed)
        }
    }
}

/// The per-thread state of a read run in place: a pthread key whose value is
/// 0 (no read in place), 1 (a read in place), 2 (one that would wait) or 3
/// (one that handed records over: it runs to its end here, waiting if it must).
enum InPlaceRead {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    @inline(__always)
    static var isActive: Bool { Int(bitPattern: pthread_getspecific(key)) == 1 }

    /// The read handed a record to its caller's code.
    static func handOver() { pthread_setspecific(key, UnsafeRawPointer(bitPattern: 3)) }

    @inline(__always)
    static func begin() { pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1)) }

    static func noteWouldWait() {
        if isActive { pthread_setspecific(key, UnsafeRawPointer(bitPattern: 2)) }
    }

    /// Ends the read in place; `true` when it would have waited.
    @inline(__always)
    @discardableResult
    static func end() -> Bool {
        let wouldWait = Int(bitPattern: pthread_getspecific(key)) == 2
        pthread_setspecific(key, nil)
        return wouldWait
    }
}

/// What a store thread runs: a job of ``StoreExecutor``.
///
/// `@unchecked Sendable`: its only mutable state besides the atomic flag is
/// the continuation of `StoreExecutor.Job`, set before the job is queued
/// (the queue's mutex orders that write before the thread's read) and used
/// once, by the thread.
class JobBase: @unchecked Sendable {
    let cancelled = Atomic<Bool>(false)

    /// Runs the job and resumes its task.
    func run() {}
}

extension StoreExecutor {
    final class Job<T: Sendable>: JobBase, @unchecked Sendable {
        let body: @Sendable (_ cancellation: Cancellation) throws -> T
        var continuation: UnsafeContinuation<T, any Error>?

        init(_ body: @escaping @Sendable (_ cancellation: Cancellation) throws -> T) {
            self.body = body
        }

        override func run() {
            guard let continuation else { return }
            self.continuation = nil
            guard !cancelled.load(ordering: .relaxed) else {
                return continuation.resume(throwing: CancellationError())
            }
            do {
                continuation.resume(returning: try body(Cancellation(job: self)))
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}

/// One thread of a ``StoreExecutor`` and its queue of jobs, which it runs in
/// order. The thread starts with the first job.
///
/// `@unchecked Sendable`: `queue`, `started`, `stopping` and `sleeping` are
/// read and written only with `mutex` held; `pending` is atomic.
final class StoreThread: @unchecked Sendable {
    private let name: String
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var queue: [JobBase] = []
    private var started = false
    private var stopping = false
    private var sleeping = false
    /// The jobs queued or running.
    let pending = Atomic<Int>(0)

    init(name: String) {
        self.name = name
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Queues `job`, starting the thread on the first.
    func enqueue(_ job: JobBase) {
        pending.add(1, ordering: .relaxed)
        pthread_mutex_lock(mutex)
        queue.append(job)
        let wakes = sleeping
        if !started {
            started = true
            let thread = Thread { [self] in loop() }
            thread.name = name
            thread.start()
        }
        pthread_mutex_unlock(mutex)
        if wakes { pthread_cond_signal(condition) }
    }

    /// Lets the thread end once its queue is empty.
    func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_mutex_unlock(mutex)
        pthread_cond_signal(condition)
    }

    private func loop() {
        var batch: [JobBase] = []
        while true {
            pthread_mutex_lock(mutex)
            while queue.isEmpty && !stopping {
                sleeping = true
                pthread_cond_wait(condition, mutex)
                sleeping = false
            }
            if queue.isEmpty {
                pthread_mutex_unlock(mutex)
                return
            }
            swap(&batch, &queue)
            pthread_mutex_unlock(mutex)
            for job in batch {
                job.run()
                pending.subtract(1, ordering: .relaxed)
            }
            batch.removeAll(keepingCapacity: true)
        }
    }
}
