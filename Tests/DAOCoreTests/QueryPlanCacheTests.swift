@testable import DAOCore
import Foundation
import Testing

// Records of their own shape for the plan cache: an integer key, a composite
// index, optionals, reals, dates, Bool; and a second entity with a String key
// and the same field names, so that look-alike predicates over two types meet.
// The suite runs serialized: its tests count the shapes kept for these types.

struct Gauge: Record, Hashable {
    typealias PrimaryKey = Int64
    var id: Int64
    var station: String
    var level: Double
    var note: String?
    var reading: Int64?
    var active: Bool
    var taken: Date

    static let entity = Entity<Gauge>(
        "gauges", primaryKey: "id", \.id,
        fields: [
            Field("station", \.station), Field("level", \.level), Field("note", \.note), Field("reading", \.reading),
            Field("active", \.active), Field("taken", \.taken),
        ],
        indexes: [Index("gauges_by_station_active_taken", on: ["station", "active", "taken"])])
}

struct Beacon: Record, Hashable {
    typealias PrimaryKey = String
    var id: String
    var station: String
    var level: Double

    static let entity = Entity<Beacon>(
        "beacons", primaryKey: "id", \.id, fields: [Field("station", \.station), Field("level", \.level)],
        indexes: [Index("beacons_by_station", on: ["station"])])
}

/// Gauges with awkward values: NFC and NFD text, emoji, NUL, very long text,
/// nil and present optionals, whole and fractional reals, equal dates.
let gauges: [Gauge] = {
    let stations = ["caf\u{E9}", "cafe\u{301}", "🚀", "a\u{0}b", "", String(repeating: "x", count: 2000), "b"]
    let levels: [Double] = [0, 1, 1.5, -2, 1e300, -0.5, 3]
    var gauges: [Gauge] = []
    for id in 0..<84 {
        gauges.append(
            Gauge(
                id: Int64(id * 37 % 84) - 20, station: stations[id % stations.count], level: levels[id / 2 % levels.count],
                note: id % 3 == 0 ? nil : stations[(id + 1) % stations.count], reading: id % 4 == 0 ? nil : Int64(id % 5),
                active: id % 2 == 0, taken: Date(timeIntervalSinceReferenceDate: Double(id % 9) * 60)))
    }
    return gauges
}()

/// Checks that the plan bound from the cache is the plan made afresh, and
/// that both give `expected` (the hand-written reference answer, in order).
private func expectSame<R: Record & Equatable>(
    _ query: Query<R>, over records: [R], expected: [R], cached: Bool = true,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let fresh = QueryPlan(fresh: query)
    for parts in [QueryPlanParts.all, [], [.exactCondition], [.accessPath]] {
        let plan = QueryPlan(query, parts: parts)
        let alone = QueryPlan(fresh: query, parts: parts)
        #expect(plan.access == alone.access, sourceLocation: sourceLocation)
        #expect(plan.accessIsExact == alone.accessIsExact, sourceLocation: sourceLocation)
        #expect(plan.engineCondition == alone.engineCondition, sourceLocation: sourceLocation)
        #expect(plan.conditionIsExact == alone.conditionIsExact, sourceLocation: sourceLocation)
        #expect((plan.template != nil) == cached, sourceLocation: sourceLocation)
        for record in records {
            #expect(try plan.matches(record) == alone.matches(record), sourceLocation: sourceLocation)
        }
    }
    let answer = try QueryPlan(query).finish(records, filtered: false)
    #expect(answer == expected, sourceLocation: sourceLocation)
    #expect(try fresh.finish(records, filtered: false) == expected, sourceLocation: sourceLocation)
}

/// The reference order: by `key`, then by primary key.
private func reference<R: Record, K: Comparable>(
    _ records: [R], where keep: (R) -> Bool, by key: ((R) -> K)? = nil, descending: Bool = false, limit: Int? = nil
) -> [R] {
    var kept = records.filter(keep).sorted { $0.primaryKey.storedValue < $1.primaryKey.storedValue }
    if let key {
        kept = kept.enumerated().sorted { lhs, rhs in
            let a = key(lhs.element)
            let b = key(rhs.element)
            if a != b { return descending ? b < a : a < b }
            return lhs.offset < rhs.offset
        }.map(\.element)
    }
    if let limit, kept.count > limit { kept.removeSubrange(limit...) }
    return kept
}

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

@Suite("The plan cache: a repeated query shape binds its constants to one plan", .serialized)
struct QueryPlanCacheTests {
    @Test("one shape, many constants: each call answers for its own constants")
    func sameShapeDifferentConstants() throws {
        Gauge.entity.forgetQueryPlans()
        for station in Set(gauges.map(\.station)) {
            for active in [true, false] {
                let query = Query<Gauge>(
                    where: #Predicate { $0.station == station && $0.active == active },
                    sortedBy: [SortDescriptor(\.taken, order: .reverse)])
                try expectSame(
                    query, over: gauges,
                    expected: reference(
                        gauges, where: { bytes($0.station) == bytes(station) && $0.active == active }, by: \.taken,
                        descending: true))
            }
        }
        for level in [0.0, -0.0, 1.5, -2, 3, 1e300, .infinity] {
            try expectSame(
                Query(where: #Predicate<Gauge> { $0.level >= level }),
                over: gauges, expected: reference(gauges, where: { $0.level >= level }, by: \.id))
            try expectSame(
                Query(where: #Predicate<Gauge> { $0.level == level }),
                over: gauges, expected: reference(gauges, where: { $0.level == level }, by: \.id))
        }
        // One entry per shape and set of parts (four), not per constant: the
        // first shape with empty and other text, the other two with whole and
        // fractional reals.
        #expect(Gauge.entity.queryPlans.count == 3 * 2 * 4)
    }

    @Test("a captured value is read anew on every call")
    func capturedValues() throws {
        Gauge.entity.forgetQueryPlans()
        var answers: [[Int64]] = []
        for threshold in [-1, 0, 1, 2, 3, 4, 5] as [Int64] {
            let query = Query<Gauge>(where: #Predicate { ($0.reading ?? -100) > threshold })
            // `??` has no shape: planned afresh each time.
            try expectSame(
                query, over: gauges, expected: reference(gauges, where: { ($0.reading ?? .min) > threshold }, by: \.id),
                cached: false)
            let shaped = Query<Gauge>(where: #Predicate { $0.id > threshold })
            let expected = reference(gauges, where: { $0.id > threshold }, by: \.id)
            try expectSame(shaped, over: gauges, expected: expected)
            answers.append(expected.map(\.id))
        }
        #expect(Set(answers).count == answers.count)
    }

    @Test("shapes that look alike are told apart")
    func lookAlikes() throws {
        Gauge.entity.forgetQueryPlans()
        let value: Int64 = 2
        let text = "b"
        let cases: [(Predicate<Gauge>, (Gauge) -> Bool)] = [
            (#Predicate { $0.id < value }, { $0.id < value }),
            (#Predicate { $0.id <= value }, { $0.id <= value }),
            (#Predicate { value < $0.id }, { value < $0.id }),
            (#Predicate { $0.id > value }, { $0.id > value }),
            (#Predicate { $0.id == value }, { $0.id == value }),
            (#Predicate { $0.id != value }, { $0.id != value }),
            (#Predicate { !($0.id == value) }, { !($0.id == value) }),
            (#Predicate { $0.reading == value }, { $0.reading == value }),
            (#Predicate { $0.reading == nil }, { $0.reading == nil }),
            (#Predicate { $0.reading != nil }, { $0.reading != nil }),
            (#Predicate { $0.station == text }, { bytes($0.station) == bytes(text) }),
            (#Predicate { $0.note == text }, { $0.note.map { bytes($0) == bytes(text) } ?? false }),
            (#Predicate { $0.station == text && $0.active }, { bytes($0.station) == bytes(text) && $0.active }),
            (#Predicate { $0.station == text || $0.active }, { bytes($0.station) == bytes(text) || $0.active }),
            (#Predicate { $0.station == text && !$0.active }, { bytes($0.station) == bytes(text) && !$0.active }),
            (#Predicate { $0.active && $0.station == text }, { $0.active && bytes($0.station) == bytes(text) }),
            (#Predicate { $0.station.contains(text) }, { bytes($0.station).contains(bytes(text)) }),
            (#Predicate { $0.station.starts(with: text) }, { bytes($0.station).starts(with: bytes(text)) }),
            (#Predicate { [value, 5].contains($0.id) }, { [value, 5].contains($0.id) }),
            (#Predicate { [value, 5, 9].contains($0.id) }, { [value, 5, 9].contains($0.id) }),
            (#Predicate { $0.id == value || $0.id == 5 }, { $0.id == value || $0.id == 5 }),
            (#Predicate { _ in true }, { _ in true }),
            (#Predicate { _ in false }, { _ in false }),
        ]
        // Twice over: the first round makes the templates, the second binds them.
        for _ in 0..<2 {
            for (predicate, keep) in cases {
                try expectSame(Query(where: predicate), over: gauges, expected: reference(gauges, where: keep, by: \.id))
            }
        }
        // One template per case and per set of parts asked for (four), but
        // `value < $0.id` is `$0.id > value`: the same shape.
        #expect(Gauge.entity.queryPlans.count == (cases.count - 1) * 4)
    }

    @Test("optional and non-optional, nil and NaN and -0.0 constants get plans of their own")
    func constantClasses() throws {
        Gauge.entity.forgetQueryPlans()
        let readings: [Int64?] = [nil, 1, nil, 3, 0]
        for reading in readings {
            try expectSame(
                Query(where: #Predicate<Gauge> { $0.reading == reading }),
                over: gauges, expected: reference(gauges, where: { $0.reading == reading }, by: \.id))
            try expectSame(
                Query(where: #Predicate<Gauge> { $0.reading != reading }),
                over: gauges, expected: reference(gauges, where: { $0.reading != reading }, by: \.id))
        }
        let notes: [String?] = [nil, "b", "", nil, "🚀"]
        for note in notes {
            try expectSame(
                Query(where: #Predicate<Gauge> { $0.note == note }),
                over: gauges,
                expected: reference(gauges, where: { $0.note.map(bytes) == note.map(bytes) }, by: \.id))
        }
        for level in [Double.nan, 1.5, -0.0, .nan, 0, -2] {
            for (predicate, keep) in [
                (#Predicate<Gauge> { $0.level == level }, { (g: Gauge) in g.level == level }),
                (#Predicate<Gauge> { $0.level != level }, { (g: Gauge) in g.level != level }),
                (#Predicate<Gauge> { $0.level < level }, { (g: Gauge) in g.level < level }),
                (#Predicate<Gauge> { [level, 3].contains($0.level) }, { (g: Gauge) in g.level == level || g.level == 3 }),
            ] {
                try expectSame(Query(where: predicate), over: gauges, expected: reference(gauges, where: keep, by: \.id))
            }
        }
        for needle in ["", "a", "", "\u{0}", "e\u{301}"] {
            try expectSame(
                Query(where: #Predicate<Gauge> { $0.station.contains(needle) }),
                over: gauges, expected: reference(gauges, where: { needle.isEmpty || bytes($0.station).contains(bytes(needle)) }, by: \.id))
            try expectSame(
                Query(where: #Predicate<Gauge> { $0.station.starts(with: needle) }),
                over: gauges, expected: reference(gauges, where: { bytes($0.station).starts(with: bytes(needle)) }, by: \.id))
        }
    }

    @Test("one predicate under different sorts and limits")
    func sortsAndLimits() throws {
        Gauge.entity.forgetQueryPlans()
        let station = "b"
        let predicate = #Predicate<Gauge> { $0.station != station }
        let keep = { (gauge: Gauge) in bytes(gauge.station) != bytes(station) }
        for limit in [nil, 0, 3, 1000] as [Int?] {
            try expectSame(
                Query(where: predicate, sortedBy: [SortDescriptor(\.level)], limit: limit),
                over: gauges, expected: reference(gauges, where: keep, by: \.level, limit: limit))
            try expectSame(
                Query(where: predicate, sortedBy: [SortDescriptor(\.level, order: .reverse)], limit: limit),
                over: gauges, expected: reference(gauges, where: keep, by: \.level, descending: true, limit: limit))
            try expectSame(
                Query(where: predicate, sortedBy: [SortDescriptor(\.taken, order: .reverse)], limit: limit),
                over: gauges, expected: reference(gauges, where: keep, by: \.taken, descending: true, limit: limit))
            try expectSame(
                Query(where: nil, sortedBy: [SortDescriptor(\.taken)], limit: limit),
                over: gauges, expected: reference(gauges, where: { _ in true }, by: \.taken, limit: limit))
        }
    }

    @Test("records already in order, in reverse order, or neither sort the same")
    func presortedInput() throws {
        let plan = QueryPlan(Query<Gauge>(sortedBy: [SortDescriptor(\.taken, order: .reverse)]))
        let expected = reference(gauges, where: { _ in true }, by: \.taken, descending: true)
        #expect(plan.sort.sorted(expected) == expected)
        #expect(plan.sort.sorted(expected.reversed()) == expected)
        #expect(plan.sort.sorted(gauges) == expected)
        var swapped = expected
        swapped.swapAt(0, swapped.count - 1)
        #expect(plan.sort.sorted(swapped) == expected)
        swapped = Array(expected.reversed())
        swapped.swapAt(1, 2)
        #expect(plan.sort.sorted(swapped) == expected)
    }

    @Test("the same predicate text over two entity types plans for each type")
    func entityTypes() throws {
        Gauge.entity.forgetQueryPlans()
        Beacon.entity.forgetQueryPlans()
        let beacons = gauges.map { Beacon(id: "g\($0.id)", station: $0.station, level: $0.level) }
        for station in ["b", "🚀", ""] {
            try expectSame(
                Query(where: #Predicate<Gauge> { $0.station == station }),
                over: gauges, expected: reference(gauges, where: { bytes($0.station) == bytes(station) }, by: \.id))
            try expectSame(
                Query(where: #Predicate<Beacon> { $0.station == station }),
                over: beacons,
                expected: reference(beacons, where: { bytes($0.station) == bytes(station) }, by: { _ in 0 }))
            #expect(
                QueryPlan(Query(where: #Predicate<Beacon> { $0.station == station })).access
                    == .index(Beacon.entity.indexes[0], values: [.text(station)]))
        }
    }

    @Test("a shape learns the direction its candidates come in the asked order; the answer is the same either way")
    func candidateDirection() throws {
        Gauge.entity.forgetQueryPlans()
        let station = "direction"
        let query = Query<Gauge>(
            where: #Predicate { $0.station == station }, sortedBy: [SortDescriptor(\.taken, order: .reverse)])
        let sort = SortPlan(query.sortedBy)
        // By key, as a range yields them; their dates rise with the key.
        let byKey = (Int64(1)...6).map {
            Gauge(
                id: $0, station: station, level: 0, note: nil, reading: nil, active: true,
                taken: Date(timeIntervalSinceReferenceDate: Double($0) * 60))
        }
        let all = gauges + byKey
        let expected = try QueryPlan(fresh: query).finish(all, filtered: false)
        #expect(expected == Array(byKey.reversed()))
        let descendingKeys = Array(byKey.reversed())
        func keys(_ records: [Gauge]) -> [StoredValue] {
            records.flatMap { [sort.fields?.first?.field.value(in: $0) ?? .null, .integer($0.id)] }
        }
        func prefers() -> Bool { QueryPlan(query).prefersDescendingCandidates }
        #expect(!prefers())
        // Read by ascending key, they come in the reverse of the asked order:
        // the next call prefers descending keys.
        #expect(try QueryPlan(query).finish(byKey, sortKeys: keys(byKey), filtered: true, descending: false) == expected)
        #expect(prefers())
        // Read by descending key, they come in order: the hint stays.
        #expect(
            try QueryPlan(query).finish(descendingKeys, sortKeys: keys(descendingKeys), filtered: true, descending: true)
                == expected)
        #expect(prefers())
        // In neither order: sorted, the hint unchanged.
        var shuffled = byKey
        shuffled.swapAt(0, 1)
        #expect(try QueryPlan(query).finish(shuffled, sortKeys: keys(shuffled), filtered: true, descending: true) == expected)
        #expect(prefers())
        // Descending keys came reversed: ascending next time.
        #expect(try QueryPlan(query).finish(byKey, sortKeys: keys(byKey), filtered: true, descending: true) == expected)
        #expect(!prefers())
        // The same through the fields' key paths (no sort keys given), unfiltered.
        #expect(try QueryPlan(query).finish(all.sorted { $0.id < $1.id }, filtered: false, descending: false) == expected)
        #expect(prefers())
        // The plain finish teaches nothing.
        #expect(try QueryPlan(query).finish(byKey, sortKeys: keys(byKey), filtered: true) == expected)
        #expect(prefers())
    }

    @Test("many tasks at once, each with its own constants, get their own answers")
    func concurrentUse() async throws {
        Gauge.entity.forgetQueryPlans()
        let stations = Array(Set(gauges.map(\.station)))
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var allRight = true
                    for round in 0..<60 {
                        let station = stations[(task + round) % stations.count]
                        let level = [0.0, 1.5, 3][round % 3]
                        let query = Query<Gauge>(
                            where: #Predicate { $0.station == station && $0.level >= level },
                            sortedBy: [SortDescriptor(\.taken)], limit: round % 2 == 0 ? nil : 2)
                        let got = try QueryPlan(query).finish(gauges, filtered: false)
                        let expected = try QueryPlan(fresh: query).finish(gauges, filtered: false)
                        allRight = allRight && got == expected && got.allSatisfy { bytes($0.station) == bytes(station) }
                        if round % 20 == 19 { Gauge.entity.forgetQueryPlans() }
                    }
                    return allRight
                }
            }
            for try await allRight in group { #expect(allRight) }
        }
    }

    @Test("the cache is bounded")
    func bounded() throws {
        Beacon.entity.forgetQueryPlans()
        // Each IN list length is a shape of its own.
        for length in 1...(QueryPlanCache<Beacon>.capacity + 10) {
            let ids = (0..<length).map { "g\($0)" }
            let plan = QueryPlan(Query(where: #Predicate<Beacon> { ids.contains($0.id) }))
            #expect(plan.template != nil)
            #expect(Beacon.entity.queryPlans.count <= QueryPlanCache<Beacon>.capacity)
        }
        #expect(Beacon.entity.queryPlans.count >= 1)
    }

    @Test("a template the cache starts over without is freed")
    func droppedTemplatesAreFreed() throws {
        Beacon.entity.forgetQueryPlans()
        weak var first: PlanTemplate<Beacon>?
        do {
            let ids = ["g0"]
            let plan = QueryPlan(Query(where: #Predicate<Beacon> { ids.contains($0.id) }))
            first = plan.template
            #expect(first != nil)
        }
        for length in 2...(QueryPlanCache<Beacon>.capacity + 10) {
            let ids = (0..<length).map { "g\($0)" }
            _ = QueryPlan(Query(where: #Predicate<Beacon> { ids.contains($0.id) }))
        }
        #expect(first == nil, "a template dropped from the cache is still held")
    }
}
