#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex for the short critical sections that every call of a store passes
/// through (pools of kept transactions and codecs, plan caches): a
/// `pthread_mutex_t`, adaptive on glibc (it spins a little before it sleeps),
/// which a running thread may take ahead of a thread still waking up.
///
/// `Synchronization.Mutex` on Linux is a priority-inheritance futex: when it
/// is contended, the unlocking thread hands the lock to a waiter, and every
/// later acquisition waits until that waiter has been scheduled. With more
/// threads than cores, waiters are often not running, so the lock moved at
/// the pace of context switches: LMDB's read-only mix at 8 clients on 2
/// cores ran at a tenth of its 4-client throughput (docs/CONCURRENCY.md,
/// "More threads than cores"). A barging mutex lets the thread that is
/// running go on; spinning before it sleeps keeps two threads on two cores
/// from paying a futex wait and wake-up for a lock held for a few hundred
/// instructions.
///
/// `@unchecked Sendable`: `value` is read and written only with `mutex`
/// held, and it is handed in and out as `sending`, as with `Mutex`.
package final class BargingMutex<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        #if canImport(Glibc)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        #endif
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Calls `body` with the value, the mutex held.
    @inline(__always)
    package func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E)
        -> sending Result
    {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
