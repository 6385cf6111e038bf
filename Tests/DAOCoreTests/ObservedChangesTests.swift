import DAOCore
import DialogGraph
import Testing

/// A plain object small enough to generate in bulk.
private struct Row: Plain {
    let uniqueId: Int64
    let value: Int
}

@Suite("ObservedChanges: the change between two results, by primary key")
struct ObservedChangesTests {
    /// Applies `changes` the way a table view does, taking new values from `new`.
    private func apply(_ changes: ObservedChanges, to old: [Row], from new: [Row]) -> [Row] {
        var rows = old
        for index in changes.deletions.reversed() { rows.remove(at: index) }
        for index in changes.insertions { rows.insert(new[index], at: index) }
        for index in changes.modifications { rows[index] = new[index] }
        return rows
    }

    @Test("seeded random results: applying the changes to the old results gives the new ones")
    func randomPairs() {
        var random = SplitMix64(seed: 12)
        for _ in 0..<2_000 {
            let old = Self.results(&random)
            let new = Self.results(&random)
            let changes = ObservedChanges.between(old, new)
            #expect(apply(changes, to: old, from: new) == new)
            #expect(changes.deletions == changes.deletions.sorted() && changes.insertions == changes.insertions.sorted())
            // Objects in both that kept their place and value are not reported.
            let reported = Set(changes.insertions + changes.modifications)
            for (index, row) in new.enumerated() where !reported.contains(index) {
                #expect(old.contains(row), "\(row) is reported as unchanged but is new or changed")
            }
            #expect(ObservedChanges.between(new, new).isEmpty)
        }
    }

    @Test("a moved object is a deletion and an insertion; a changed one in place a modification")
    func movesAndModifications() {
        let old = [Row(uniqueId: 1, value: 0), Row(uniqueId: 2, value: 0), Row(uniqueId: 3, value: 0)]
        let moved = [Row(uniqueId: 2, value: 0), Row(uniqueId: 3, value: 5), Row(uniqueId: 1, value: 0)]
        #expect(
            ObservedChanges.between(old, moved)
                == ObservedChanges(deletions: [0], insertions: [2], modifications: [1]))
        #expect(ObservedChanges.between([], old) == ObservedChanges(insertions: [0, 1, 2]))
        #expect(ObservedChanges.between(old, []) == ObservedChanges(deletions: [0, 1, 2]))
    }

    /// Up to 12 rows with distinct keys from 0..<16, in random order, values 0...2.
    private static func results(_ random: inout SplitMix64) -> [Row] {
        var keys = Array(Int64(0)..<16)
        keys.shuffle(using: &random)
        let count = Int(random.next() % 13)
        return keys.prefix(count).map { Row(uniqueId: $0, value: Int(random.next() % 3)) }
    }
}
