@testable import DAOCore
import DialogGraph
import Foundation
import Testing

// Sorting by sort keys an adapter read itself (`SortPlan.sorted(_:keys:)`,
// `QueryPlan.finish(_:sortKeys:filtered:)`): the same answer as reading them
// from the records, for records given in any order; and the keys given are
// the ones compared.

/// The sort keys of `records` as an adapter gives them: each record's values
/// of the sort's fields, then its primary key's.
private func keys(of records: [Gauge], for sort: SortPlan<Gauge>) -> [StoredValue] {
    var keys: [StoredValue] = []
    for record in records {
        for entry in sort.fields ?? [] { keys.append(entry.field.value(in: record)) }
        keys.append(Gauge.entity.primaryKeyField.value(in: record))
    }
    return keys
}

private let sorts: [[SortDescriptor<Gauge>]] = [
    [],
    [SortDescriptor(\.level)],
    [SortDescriptor(\.level, order: .reverse)],
    [SortDescriptor(\.taken, order: .reverse), SortDescriptor(\.level)],
    [SortDescriptor(\.station)],
    [SortDescriptor(\.note, order: .reverse), SortDescriptor(\.level, order: .reverse)],
    [SortDescriptor(\.reading), SortDescriptor(\.taken)],
]

@Suite struct SortKeysTests {
    @Test func keysGiveTheSameOrderAsTheRecords() throws {
        for descriptors in sorts {
            let sort = SortPlan<Gauge>(descriptors)
            let expected = sort.sorted(gauges)
            // In key order, in the answer's order, in its reverse (the
            // one-pass check returns these as they are or reversed) and shuffled.
            var shuffled = gauges
            var generator = SplitMix64(seed: 7)
            shuffled.shuffle(using: &generator)
            for order in [gauges, expected, Array(expected.reversed()), shuffled] {
                let sorted = try #require(sort.sorted(order, keys: keys(of: order, for: sort)))
                #expect(sorted == expected, "\(descriptors)")
            }
        }
    }

    @Test func theKeysGivenAreTheOnesCompared() throws {
        let sort = SortPlan<Gauge>([SortDescriptor(\.level)])
        let records = Array(gauges.prefix(5))
        // Keys that put the records in the reverse of their order, whatever
        // their levels: the sort follows the keys, not the records' fields.
        var given: [StoredValue] = []
        for position in records.indices {
            given.append(.integer(Int64(records.count - position)))
            given.append(.integer(0))
        }
        #expect(sort.sorted(records, keys: given) == Array(records.reversed()))
        // Keys of the wrong count, or a sort Foundation compares: no answer.
        #expect(sort.sorted(records, keys: Array(given.dropLast())) == nil)
        let lexical = SortPlan<Gauge>([SortDescriptor(\.station, comparator: .lexical)])
        #expect(lexical.sorted(records, keys: keys(of: records, for: lexical)) == nil)
    }

    @Test func finishKeepsEachKeyWithItsRecord() throws {
        // Filtering drops records; their keys must go with them.
        for descriptors in sorts {
            for limit in [nil, 0, 3] as [Int?] {
                let query = Query<Gauge>(where: #Predicate { $0.active && $0.level > 0 }, sortedBy: descriptors, limit: limit)
                let plan = QueryPlan(fresh: query)
                let expected = try plan.finish(gauges, filtered: false)
                let answer = try plan.finish(gauges, sortKeys: keys(of: gauges, for: plan.sort), filtered: false)
                #expect(answer == expected, "\(descriptors) \(String(describing: limit))")
                #expect(!expected.isEmpty || limit == 0)
            }
        }
        // Keys of the wrong count: as without keys.
        let plan = QueryPlan(fresh: Query<Gauge>(sortedBy: [SortDescriptor(\.level)]))
        #expect(try plan.finish(gauges, sortKeys: [], filtered: true) == plan.finish(gauges, filtered: true))
    }

    @Test func reversingKeepsEveryRecordIntact() {
        // Records holding references (their text), reversed through raw memory.
        let records = gauges.map { gauge in
            var gauge = gauge
            gauge.station += String(repeating: "ü", count: 40)
            return gauge
        }
        let reversed = SortPlan<Gauge>.reversed(records)
        #expect(reversed == Array(records.reversed()))
        #expect(SortPlan<Gauge>.reversed([]) == [])
        #expect(records.count == gauges.count)
    }
}

