import Dispatch
import Foundation

/// Runs `body`, and ends the test process with a message when it has not
/// returned after `seconds`: a store that blocked the cooperative pool's
/// threads would otherwise hang the run, and the pool's own timers could not
/// fire then. The watchdog is a thread of its own.
public func withWatchdog<T>(
    seconds: Int, _ what: String, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
) async throws -> T {
    let done = DispatchSemaphore(value: 0)
    let watchdog = Thread {
        if done.wait(timeout: .now() + .seconds(seconds)) == .timedOut {
            FileHandle.standardError.write(Data("\(what): not done after \(seconds) s; the store blocked\n".utf8))
            exit(70)
        }
    }
    watchdog.start()
    defer { done.signal() }
    return try await body()
}

/// Waits for `semaphore` on a thread of its own, never on one of the
/// cooperative pool's: a test's own waiting must not take a thread the store
/// under test may need.
public func waitOffThePool(_ semaphore: DispatchSemaphore) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread {
            semaphore.wait()
            continuation.resume()
        }.start()
    }
}
