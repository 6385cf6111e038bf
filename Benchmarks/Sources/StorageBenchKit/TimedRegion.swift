import CCallgrind
import Foundation

/// The edges of an operation's timed region: the monotonic clock is read at
/// both, and under callgrind each edge writes a dump, so that the dump
/// written at a region's end holds exactly that region's costs, and
/// instruction counts and wall times describe the same work. Outside valgrind
/// a dump request costs a few instructions and does nothing.
///
/// Dumps, not collection switched on and off: callgrind counts the calls of
/// a call arc (the `calls=` lines, from which allocations are counted) even
/// while collection is off, and a dump resets an arc's count only when the
/// arc has a cost to write. With collection switched off between regions,
/// every allocation made between two regions (the data generated, the
/// checks) was counted in the next region's dump. Collection now runs
/// throughout (`--collect-atstart=yes`), a region's start writes everything
/// since the last dump to a dump named ``gapDumpName`` that is never read,
/// and its end writes the region's costs, calls included, to a dump named
/// after the operation.
enum TimedRegion {
    /// The description of the dumps written at the start of each region
    /// (the costs between regions), which ``Callgrind/readDumps(outputBase:)`` skips.
    static let gapDumpName = "between-regions"

    /// Starts a timed region; returns the clock reading to pass to ``seconds(since:in:)``.
    @inline(__always)
    static func begin() -> UInt64 {
        RegionUsage.begin()
        gapDumpName.withCString { storage_bench_callgrind_dump($0) }
        return DispatchTime.now().uptimeNanoseconds
    }

    /// Ends the timed region of `operation` started at `start` and returns its
    /// length in seconds; under callgrind, writes the region's costs to a dump
    /// described by the operation's name (an operation's several regions, if
    /// it has them, give several dumps of that name, added up when read).
    @inline(__always)
    static func seconds(since start: UInt64, in operation: BenchOperation) -> Double {
        let end = DispatchTime.now().uptimeNanoseconds
        operation.rawValue.withCString { storage_bench_callgrind_dump($0) }
        RegionUsage.end(operation)
        return Double(end - start) / 1e9
    }

    /// Whether this binary was built with valgrind's headers, so that it can
    /// count instructions under callgrind.
    static var canCountInstructions: Bool { storage_bench_callgrind_built_in() != 0 }

    /// Whether the process runs under valgrind.
    static var isRunningOnValgrind: Bool { storage_bench_running_on_valgrind() != 0 }
}
