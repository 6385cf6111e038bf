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
/// Five times `limit` of wall time ends the wait whatever was counted.
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
            // Also an absolute bound, so that a machine busy for good cannot
            // make a real hang wait forever.
            let deadline = clock.now + limit * 5
            while counted < limit, clock.now < deadline {
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

/// `old` with `changes` applied the way a table view applies a batch update,
/// taking inserted and modified values from `new`; `nil` when an index is out
/// of range. Written apart from the library's diff, so that it checks it.
public func applying<V>(_ changes: ObservedChanges, to old: [V], from new: [V]) -> [V]? {
    var rows = old
    for index in changes.deletions.sorted(by: >) {
        guard rows.indices.contains(index) else { return nil }
        rows.remove(at: index)
    }
    for index in changes.insertions.sorted() {
        guard index <= rows.count, new.indices.contains(index) else { return nil }
        rows.insert(new[index], at: index)
    }
    for index in changes.modifications {
        guard rows.indices.contains(index), new.indices.contains(index) else { return nil }
        rows[index] = new[index]
    }
    return rows
}
