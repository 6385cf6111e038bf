import Dispatch
import Synchronization

/// Runs `body` in a task and waits for its answer on the calling thread,
/// which is the process's main thread (never a thread of Swift's cooperative
/// pool, so the task's work always has the pool's threads to run on).
func waitForTask<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = Mutex<Result<T, any Error>>(.failure(CancellationError()))
    let done = DispatchSemaphore(value: 0)
    Task {
        let result: Result<T, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try outcome.withLock { $0 }.get()
}
