import DAOCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The file store's state behind a reader-writer lock: readers share it,
/// a write changes it alone.
///
/// A `pthread_rwlock_t` that prefers writers where the system lets it be
/// asked (glibc's `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`): once a
/// write waits, new readers wait behind it, so a steady stream of readers
/// cannot keep a commit from finishing. A write holds the lock only for its
/// in-memory steps, so a reader waits for at most those. No code that holds
/// it takes it again (a reader that did would wait behind a waiting writer
/// for ever).
///
/// `@unchecked Sendable`: the state is reached only through ``read(_:)``,
/// ``tryRead(_:)`` and ``withLock(_:)``, which hold the lock; ``StoreState``
/// is changed only under ``withLock(_:)``, and what readers do with it
/// changes nothing (see ``StoreState``).
final class StateLock: @unchecked Sendable {
    private let state: StoreState
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    /// - Throws: ``StorageError/Kind/engine`` when the system cannot make
    ///   the lock (out of memory or of its resources).
    init(_ state: StoreState, path: String) throws {
        self.state = state
        lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        let code: Int32
        #if os(Linux)
            var attributes = pthread_rwlockattr_t()
            pthread_rwlockattr_init(&attributes)
            pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
            code = pthread_rwlock_init(lock, &attributes)
            pthread_rwlockattr_destroy(&attributes)
        #else
            code = pthread_rwlock_init(lock, nil)
        #endif
        guard code == 0 else {
            lock.deallocate()
            throw StorageError(
                .engine, .open, path: path, message: "the store's state lock could not be made (pthread_rwlock_init: error \(code))")
        }
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Runs `body` holding the lock shared, beside other readers.
    @inline(__always)
    func read<T>(_ body: (StoreState) throws -> T) rethrows -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(state)
    }

    /// Runs `body` holding the lock shared when it can be had at once (no
    /// write holds it or waits for it); `nil` without running it otherwise.
    @inline(__always)
    func tryRead<T>(_ body: (StoreState) throws -> T) rethrows -> T? {
        guard pthread_rwlock_tryrdlock(lock) == 0 else { return nil }
        defer { pthread_rwlock_unlock(lock) }
        return try body(state)
    }

    /// Runs `body` holding the lock exclusively: no reader and no other
    /// writer meanwhile.
    func withLock<T>(_ body: (StoreState) throws -> T) rethrows -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(state)
    }

    /// ``withLock(_:)`` when the lock can be had at once; `nil` otherwise.
    func tryWithLock<T>(_ body: (StoreState) throws -> T) rethrows -> T? {
        guard pthread_rwlock_trywrlock(lock) == 0 else { return nil }
        defer { pthread_rwlock_unlock(lock) }
        return try body(state)
    }
}

/// The file store's writer lock (``FileStore/writer``): a plain pthread
/// mutex, which hands nothing to a waiter (unlike `Synchronization.Mutex`
/// on Linux), and whose body's result need not be `sending` (the body
/// returns what it read from the state, which ``StateLock`` hands it).
final class WriterLock: Sendable {
    private let lock = NSLock()

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}

/// A test's hook that runs inside every read, holding the state lock shared
/// (``FileStore/read(_:_:_:)``). Unset (always, outside tests), it costs one
/// relaxed atomic load: no lock, no write to memory the readers share.
final class ReadHook: Sendable {
    private let isSet = Atomic<Bool>(false)
    private let body = Mutex<(@Sendable () -> Void)?>(nil)

    /// Sets the hook (`nil`: none).
    func set(_ new: (@Sendable () -> Void)?) {
        body.withLock { $0 = new }
        isSet.store(new != nil, ordering: .sequentiallyConsistent)
    }

    @inline(__always)
    func run() {
        guard isSet.load(ordering: .relaxed) else { return }
        body.withLock { $0 }?()
    }
}
