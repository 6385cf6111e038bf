import Dispatch
import Testing

@testable import DAOCore

/// The mutex of the pools and caches every call passes through: it excludes,
/// hands its value in and out, and gives the lock back on a throw.
@Suite("Barging mutex")
struct BargingMutexTests {
    struct Guarded {
        var count = 0
        var inside = false
        var overlaps = 0
    }

    struct Refused: Error, Equatable {}

    @Test("threads that change the value at once never overlap and lose no change")
    func excludes() {
        let mutex = BargingMutex(Guarded())
        let threads = 8
        let rounds = 20_000
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<rounds {
                mutex.withLock { value in
                    if value.inside { value.overlaps += 1 }
                    value.inside = true
                    // A read-modify-write that a second thread inside would break.
                    let seen = value.count
                    value.count = seen &+ 1
                    value.inside = false
                }
            }
        }
        let final = mutex.withLock { $0 }
        #expect(final.count == threads * rounds)
        #expect(final.overlaps == 0)
    }

    @Test("a throwing body releases the lock and keeps its changes")
    func throwing() throws {
        let mutex = BargingMutex([1, 2])
        #expect(throws: Refused.self) {
            try mutex.withLock { (value: inout [Int]) throws(Refused) in
                value.append(3)
                throw Refused()
            }
        }
        // Not deadlocked: the lock was released by the throw.
        let seen = mutex.withLock { value -> [Int] in
            value.append(4)
            return value
        }
        #expect(seen == [1, 2, 3, 4])
    }
}
