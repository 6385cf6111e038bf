import DAOCore

/// The error of ``nextSnapshot(_:within:)`` when nothing came.
public struct TimedOut: Error, CustomStringConvertible {
    /// Says what did not come.
    public var description: String { "no snapshot came within the (generous) time limit" }
}

/// The next snapshot of `iterator`, failing (rather than hanging) if none
/// comes within `limit`: a limit so long it only catches a hang.
public func nextSnapshot<V: Plain>(
    _ iterator: Observation<V>.Iterator, within limit: Duration = .seconds(120)
) async throws -> Snapshot<V>? {
    try await withThrowingTaskGroup(of: Snapshot<V>?.self) { group in
        group.addTask {
            var copy = iterator
            return try await copy.next()
        }
        group.addTask {
            try await Task.sleep(for: limit)
            throw TimedOut()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TimedOut() }
        return first
    }
}
