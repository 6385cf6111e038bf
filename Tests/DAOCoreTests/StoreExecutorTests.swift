import DAOCore
import Foundation
import Synchronization
import Testing

/// The executor's reads in place: where a read runs, when it moves to a
/// reader thread, and what a caller sees.
@Suite("Store executor: reads in place")
struct StoreExecutorTests {
    /// The thread the caller runs on. A task does not change threads between
    /// two suspension points, and a read in place does not suspend: a body on
    /// the thread its caller was on just before the call ran in place, one on
    /// another thread ran on a reader thread.
    static func thread() -> pthread_t { pthread_self() }

    @Test("a read that needs no wait runs on the awaiting task's thread, once")
    func inPlace() async throws {
        let executor = StoreExecutor(readers: 2, name: "sx-a", readsInPlace: true)
        let runs = Atomic<Int>(0)
        let caller = Self.thread()
        let (thread, mustNotWait) = try await executor.read { _ in
            runs.add(1, ordering: .relaxed)
            return (UInt(bitPattern: Int(bitPattern: Self.thread())), StoreExecutor.readsMustNotWait)
        }
        #expect(thread == UInt(bitPattern: Int(bitPattern: caller)))
        #expect(mustNotWait)
        #expect(runs.load(ordering: .relaxed) == 1)
        // The flag is the read's only: the caller's thread has it cleared.
        #expect(!StoreExecutor.readsMustNotWait)
    }

    @Test("a read that would wait runs again on a reader thread, where it may wait")
    func wouldWaitMovesToAReader() async throws {
        let executor = StoreExecutor(readers: 2, name: "sx-b", readsInPlace: true)
        let attempts = Mutex<[(UInt, Bool)]>([])
        let caller = UInt(bitPattern: Int(bitPattern: Self.thread()))
        let answer = try await executor.read { _ in
            attempts.withLock { $0.append((UInt(bitPattern: Int(bitPattern: Self.thread())), StoreExecutor.readsMustNotWait)) }
            if StoreExecutor.readsMustNotWait { throw StoreExecutor.wouldWait() }
            return 42
        }
        #expect(answer == 42)
        let seen = attempts.withLock { $0 }
        #expect(seen.count == 2)
        #expect(seen.first?.1 == true)
        #expect(seen.last?.1 == false)
        #expect(seen.first?.0 == caller)
        #expect(seen.last.map { $0.0 != caller } == true)
        #expect(!StoreExecutor.readsMustNotWait)
    }

    /// An adapter may wrap the error of `wouldWait()` in its own: the
    /// executor goes by the note, not by the error's type.
    @Test("a wrapped would-wait error still moves the read")
    func wrappedWouldWait() async throws {
        struct Wrapped: Error { let underlying: any Error }
        let executor = StoreExecutor(readers: 1, name: "sx-c", readsInPlace: true)
        let answer = try await executor.read { _ in
            if StoreExecutor.readsMustNotWait { throw Wrapped(underlying: StoreExecutor.wouldWait()) }
            return "moved"
        }
        #expect(answer == "moved")
    }

    @Test("another error of a read in place is the caller's, and the read runs once")
    func otherErrorsAreAnswers() async throws {
        struct Refused: Error, Equatable {}
        let executor = StoreExecutor(readers: 1, name: "sx-d", readsInPlace: true)
        let runs = Atomic<Int>(0)
        await #expect(throws: Refused.self) {
            try await executor.read { _ -> Int in
                runs.add(1, ordering: .relaxed)
                throw Refused()
            }
        }
        #expect(runs.load(ordering: .relaxed) == 1)
        #expect(!StoreExecutor.readsMustNotWait)
    }

    @Test("without reads in place, every read runs on a reader thread")
    func offRunsOnReaders() async throws {
        let executor = StoreExecutor(readers: 2, name: "sx-e")
        let caller = UInt(bitPattern: Int(bitPattern: Self.thread()))
        let (thread, mustNotWait) = try await executor.read { _ in
            (UInt(bitPattern: Int(bitPattern: Self.thread())), StoreExecutor.readsMustNotWait)
        }
        #expect(thread != caller)
        #expect(!mustNotWait)
    }

    @Test("a cancelled task's read throws CancellationError and does not run")
    func cancelledReadDoesNotRun() async throws {
        let executor = StoreExecutor(readers: 1, name: "sx-f", readsInPlace: true)
        let runs = Atomic<Int>(0)
        let task = Task {
            // Wait until cancelled, without a thread of the pool held.
            while !Task.isCancelled { await Task.yield() }
            return try await executor.read { _ in runs.add(1, ordering: .relaxed) }
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(runs.load(ordering: .relaxed) == 0)
    }

    /// A read in place sees its task's cancellation between steps, as a
    /// job on a reader thread does: here the task is cancelled (by itself)
    /// after the body's first step.
    @Test("a read in place sees its task's cancellation")
    func inPlaceSeesCancellation() async throws {
        let executor = StoreExecutor(readers: 1, name: "sx-g", readsInPlace: true)
        let (before, after) = try await Task {
            try await executor.read { cancellation -> (Bool, Bool) in
                let before = cancellation.isCancelled
                withUnsafeCurrentTask { $0?.cancel() }
                return (before, cancellation.isCancelled)
            }
        }.value
        #expect(!before)
        #expect(after)
    }

    /// A `forEach` body runs outside the read in place, and once a record
    /// was handed over the read runs to its end where it is: the adapter then
    /// waits if it must, and the body never sees a record twice.
    @Test("a read that handed records over is not run again, and its caller's code may wait")
    func handedOverIsNotRunAgain() async throws {
        let executor = StoreExecutor(readers: 1, name: "sx-h", readsInPlace: true)
        let lent = Mutex<[Bool]>([])
        let afterwards = try await executor.read { _ -> Bool in
            for _ in 0..<3 {
                StoreExecutor.outsideReadInPlace {
                    lent.withLock { $0.append(StoreExecutor.readsMustNotWait) }
                }
            }
            // The adapter, after lending: may wait now, so it does not note a wait.
            return StoreExecutor.readsMustNotWait
        }
        #expect(lent.withLock { $0 } == [false, false, false])
        #expect(!afterwards)
        #expect(!StoreExecutor.readsMustNotWait)
    }
}
