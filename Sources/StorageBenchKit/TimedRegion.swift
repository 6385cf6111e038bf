import CCallgrind
import Foundation

/// The edges of an operation's timed region: the monotonic clock is read at
/// both, and under callgrind (`valgrind --tool=callgrind --collect-atstart=no`)
/// the collection of instructions is switched on for exactly the same region,
/// so instruction counts and wall times describe the same work. Outside
/// valgrind the switch costs a few instructions and does nothing.
enum TimedRegion {
    /// Starts a timed region; returns the clock reading to pass to ``seconds(since:)``.
    @inline(__always)
    static func begin() -> UInt64 {
        storage_bench_callgrind_toggle_collect()
        return DispatchTime.now().uptimeNanoseconds
    }

    /// Ends the timed region started at `start` and returns its length in seconds.
    @inline(__always)
    static func seconds(since start: UInt64) -> Double {
        let end = DispatchTime.now().uptimeNanoseconds
        storage_bench_callgrind_toggle_collect()
        return Double(end - start) / 1e9
    }

    /// Ends `operation`'s measurement: under callgrind, writes the costs of its
    /// timed regions to a dump described by the operation's name (and resets them).
    static func finish(_ operation: BenchOperation) {
        operation.rawValue.withCString { storage_bench_callgrind_dump($0) }
    }

    /// Whether this binary was built with valgrind's headers, so that it can
    /// count instructions under callgrind.
    static var canCountInstructions: Bool { storage_bench_callgrind_built_in() != 0 }

    /// Whether the process runs under valgrind.
    static var isRunningOnValgrind: Bool { storage_bench_running_on_valgrind() != 0 }
}
