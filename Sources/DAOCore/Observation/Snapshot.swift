/// Where the results of an observed query changed between two snapshots, by
/// index, computed by primary key: the shape a table view's batch update takes.
///
/// Apply it to the previous results in this order to get the new ones:
///
/// ```swift
/// for index in changes.deletions.reversed() { rows.remove(at: index) }
/// for index in changes.insertions { rows.insert(snapshot.results[index], at: index) }
/// for index in changes.modifications { rows[index] = snapshot.results[index] }
/// ```
///
/// An object whose place among the others changed (its sort key changed) is a
/// deletion and an insertion; an object that stayed in place but changed (by
/// `==` on the plain object, which includes a parent's children) is a
/// modification.
public struct ObservedChanges: Sendable, Hashable {
    /// Indexes in the previous results of the objects that left them, ascending.
    public var deletions: [Int]
    /// Indexes in the new results of the objects that entered them, ascending.
    public var insertions: [Int]
    /// Indexes in the new results of the objects that stayed in place and
    /// changed, ascending.
    public var modifications: [Int]

    /// Creates a change set.
    public init(deletions: [Int] = [], insertions: [Int] = [], modifications: [Int] = []) {
        self.deletions = deletions
        self.insertions = insertions
        self.modifications = modifications
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { deletions.isEmpty && insertions.isEmpty && modifications.isEmpty }

    /// The change from `old` to `new`, matched by `uniqueId`.
    ///
    /// Objects present in both whose relative order holds (the longest run that
    /// keeps its order) stay; the others present in both move, as a deletion and
    /// an insertion.
    public static func between<Value: Plain>(_ old: [Value], _ new: [Value]) -> ObservedChanges {
        var oldPosition: [Value.ID: Int] = [:]
        oldPosition.reserveCapacity(old.count)
        for (index, value) in old.enumerated() { oldPosition[value.uniqueId] = index }
        var kept = Set<Value.ID>()
        kept.reserveCapacity(new.count)
        // The objects in both, in their new order, with their old positions.
        var survivors: [(new: Int, old: Int)] = []
        var insertions: [Int] = []
        for (index, value) in new.enumerated() {
            if let position = oldPosition[value.uniqueId] {
                survivors.append((index, position))
                kept.insert(value.uniqueId)
            } else {
                insertions.append(index)
            }
        }
        var deletions: [Int] = []
        for (index, value) in old.enumerated() where !kept.contains(value.uniqueId) {
            deletions.append(index)
        }
        let staying = longestIncreasingRun(survivors.map(\.old))
        var modifications: [Int] = []
        for (offset, survivor) in survivors.enumerated() {
            if staying.contains(offset) {
                if old[survivor.old] != new[survivor.new] { modifications.append(survivor.new) }
            } else {
                deletions.append(survivor.old)
                insertions.append(survivor.new)
            }
        }
        deletions.sort()
        insertions.sort()
        return ObservedChanges(deletions: deletions, insertions: insertions, modifications: modifications)
    }

    /// The offsets in `values` of one longest strictly increasing subsequence
    /// (patience sorting, O(n log n)).
    static func longestIncreasingRun(_ values: [Int]) -> Set<Int> {
        guard !values.isEmpty else { return [] }
        var tails: [Int] = []  // offsets into `values`: the smallest tail of each run length
        var previous = [Int](repeating: -1, count: values.count)
        for (offset, value) in values.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[offset] = tails[low - 1] }
            if low == tails.count { tails.append(offset) } else { tails[low] = offset }
        }
        var run = Set<Int>()
        var offset = tails[tails.count - 1]
        while offset >= 0 {
            run.insert(offset)
            offset = previous[offset]
        }
        return run
    }
}

/// The results of an observed query at one committed state, and how they
/// differ from the previous snapshot delivered.
public struct Snapshot<Value: Plain>: Sendable {
    /// The results, in the query's order.
    public let results: [Value]
    /// The change from the previous snapshot delivered; `nil` for the first.
    public let changes: ObservedChanges?

    /// Creates a snapshot.
    public init(results: [Value], changes: ObservedChanges?) {
        self.results = results
        self.changes = changes
    }

    /// Whether this is the first snapshot of an observation.
    public var isInitial: Bool { changes == nil }
}
