import DAOCore
import DAOMacros
import Foundation
import TestSupport
import Testing

// Queries sorted by numeric fields whose values tie, are nil, or mix whole
// and fractional numbers, on a record type declared with @StoredRecord (so
// that SQLite reads its rows with the record's own code and watches for ties
// as it reads them): every backend answers as the core's definition does,
// ties broken by the primary key, ascending.

/// A sensor reading: a String key, optional numbers and a date, an index.
@StoredRecord("tie_readings", indexes: [Index("tie_readings_by_sensor_at", on: ["sensor", "at"])])
struct TieReading: Equatable {
    var id: String
    var sensor: String
    var value: Double?
    var count: Int64?
    var at: Date
    var ok: Bool
}

/// Seeded readings with few distinct values, so that most sort values tie.
private func tieReadings(seed: UInt64, count: Int) -> [TieReading] {
    var state = seed
    func below(_ n: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 29) % UInt64(n))
    }
    let base = Date(timeIntervalSince1970: 1_700_000_000)
    let values: [Double?] = [nil, 0, -0.5, 1, 1.5, 2, -3]
    return (0..<count).map { index in
        TieReading(
            // Keys whose order is not the order they are written in.
            id: "r-\(String(format: "%03d", (index * 37) % count))",
            sensor: ["a", "b", "c"][below(3)],
            value: values[below(values.count)],
            count: below(4) == 0 ? nil : Int64(below(3)),
            at: base.addingTimeInterval(Double(below(5)) * 60),
            ok: below(2) == 0)
    }
}

@Suite("Conformance: sort ties on numeric fields")
struct SortTieConformanceTests {
    @Test("ties, nils and whole reals sort as the core says, ties by key", arguments: allBackends)
    func tiesSortByKey(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let readings = try store.anyStorage(for: TieReading.self)
            try readings.persist(tieReadings(seed: 0x7E1E5, count: 120))
            let all = try readings.readAll()
            #expect(all.count == 120)
            let sorts: [[SortDescriptor<TieReading>]] = [
                [SortDescriptor(\.value)],
                [SortDescriptor(\.value, order: .reverse)],
                [SortDescriptor(\.count, order: .reverse), SortDescriptor(\.at)],
                [SortDescriptor(\.at, order: .reverse)],
                [SortDescriptor(\.count), SortDescriptor(\.value, order: .reverse)],
            ]
            let predicates: [Predicate<TieReading>?] = [
                nil,
                #Predicate { $0.sensor == "b" },
                #Predicate { $0.sensor == "a" && $0.ok },
                #Predicate { $0.value == nil },
            ]
            var checked = 0
            for predicate in predicates {
                for sort in sorts {
                    let query = Query(where: predicate, sortedBy: sort)
                    let expected = try query.apply(to: all)
                    // Twice: the second call runs what the first one planned.
                    #expect(try readings.read(query).map(\.id) == expected.map(\.id), "\(sort)")
                    #expect(try readings.read(query) == expected)
                    checked += expected.count
                }
            }
            #expect(checked > 800)
        }
    }
}
