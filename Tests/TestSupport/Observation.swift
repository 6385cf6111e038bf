import DAOCore

/// The error of ``nextSnapshot(_:within:)`` when nothing came.
public struct TimedOut: Error, CustomStringConvertible {
    /// Says what did not come.
    public var description: String { "no snapshot came within the (generous) time limit" }
}

/// The next snapshot of `iterator`, failing (rather than hanging) if none
/// comes within `limit`: a limit so long it only catches a hang.
///
/// The limit counts only the time in which the test process could run Swift
/// tasks: it is slept off in one-second steps, and a step that overslept by
/// more than a second (the concurrency pool was busy, e.g. with synchronous
/// tests, each of which holds a thread of the pool until it ends) does not
/// count. A single timer of `limit` could expire while the pool was busy and
/// then win the race against a snapshot that was waiting for the same pool.
public func nextSnapshot<V: Plain>(
    _ iterator: Observation<V>.Iterator, within limit: Duration = .seconds(120)
) async throws -> Snapshot<V>? {
    try await withThrowingTaskGroup(of: Snapshot<V>?.self) { group in
        group.addTask {
            var copy = iterator
            return try await copy.next()
        }
        group.addTask {
            let step = Duration.seconds(1)
            var counted = Duration.zero
            let clock = ContinuousClock()
            while counted < limit {
                let start = clock.now
                try await Task.sleep(for: step)
                if clock.now - start <= step * 2 { counted += step }
            }
            throw TimedOut()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TimedOut() }
        return first
    }
}
