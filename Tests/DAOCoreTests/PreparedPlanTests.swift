@testable import DAOCore
import Foundation
import Testing

// Prepared queries at the planner: the plan a call binds is the plan the same
// query with its values written in as constants gets afresh, for every set of
// parts an adapter asks for; the calls keep templates in the prepared query,
// one per set of parts and kind of values, and none in the entity's cache.
// A record type of its own (the plan cache's suite counts what `Gauge`
// keeps, and forgets it, in parallel with this one).

/// `Gauge`'s fields under another entity.
struct Tally: Record, Hashable {
    typealias PrimaryKey = Int64
    var id: Int64
    var station: String
    var level: Double
    var note: String?
    var reading: Int64?
    var active: Bool
    var taken: Date

    static let entity = Entity<Tally>(
        "tallies", primaryKey: "id", \.id,
        fields: [
            Field("station", \.station), Field("level", \.level), Field("note", \.note), Field("reading", \.reading),
            Field("active", \.active), Field("taken", \.taken),
        ],
        indexes: [Index("tallies_by_station_active_taken", on: ["station", "active", "taken"])])
}

let tallies: [Tally] = gauges.map {
    Tally(
        id: $0.id, station: $0.station, level: $0.level, note: $0.note, reading: $0.reading, active: $0.active,
        taken: $0.taken)
}

/// Checks that `prepared`, bound, plans as `constant` does afresh, and that
/// both evaluate every tally alike.
private func expectSamePlan(
    _ prepared: Query<Tally>, _ constant: Query<Tally>, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    for parts in [QueryPlanParts.all, [], [.exactCondition], [.accessPath]] {
        let plan = QueryPlan(prepared, parts: parts)
        let alone = QueryPlan(fresh: constant, parts: parts)
        #expect(plan.access == alone.access, sourceLocation: sourceLocation)
        #expect(plan.accessIsExact == alone.accessIsExact, sourceLocation: sourceLocation)
        #expect(plan.engineCondition == alone.engineCondition, sourceLocation: sourceLocation)
        #expect(plan.conditionIsExact == alone.conditionIsExact, sourceLocation: sourceLocation)
        for tally in tallies {
            #expect(try plan.matches(tally) == alone.matches(tally), sourceLocation: sourceLocation)
        }
    }
    #expect(
        try QueryPlan(prepared).finish(tallies, filtered: false) == QueryPlan(fresh: constant).finish(tallies, filtered: false),
        sourceLocation: sourceLocation)
}

/// Checks that `call`'s bound condition (``PreparedQueryCall/boundCondition()``,
/// SQLite's path) is the engine condition `constant` plans afresh, with its
/// limit and sort. A predicate that does not translate exactly has none;
/// one that does has one unless `templated` is false (its template does not
/// give the fresh plan back, and the call reads its query instead).
private func expectSameCondition(
    _ call: PreparedQueryCall<Tally>, _ constant: Query<Tally>, templated: Bool = true,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let fresh = QueryPlan(fresh: constant, parts: [])
    guard fresh.conditionIsExact else {
        #expect(call.boundCondition() == nil, sourceLocation: sourceLocation)
        return
    }
    guard templated else {
        #expect(call.boundCondition() == nil, sourceLocation: sourceLocation)
        return
    }
    let bound = try #require(call.boundCondition(), sourceLocation: sourceLocation)
    #expect(bound.condition == fresh.engineCondition, sourceLocation: sourceLocation)
    #expect(bound.limit == constant.limit, sourceLocation: sourceLocation)
    #expect(bound.sort.sorted(tallies) == fresh.sort.sorted(tallies), sourceLocation: sourceLocation)
}

@Suite("Prepared queries: each call binds its values to a template kept by the query", .serialized)
struct PreparedPlanTests {
    static let stations = ["caf\u{E9}", "cafe\u{301}", "🚀", "a\u{0}b", "", "b", "nowhere"]
    static let levels: [Double] = [0, -0.0, 1, 1.5, -2, 1e300, .infinity, -.infinity, .nan]

    @Test("two parameters: the plan of the same query with constants, no shape in the entity's cache")
    func twoParameters() throws {
        Tally.entity.forgetQueryPlans()
        let prepared = try PreparedQuery(
            where: #Predicate<Tally, String, Bool> { tally, station, active in
                tally.station == station && tally.active == active
            },
            sortedBy: [SortDescriptor(\.taken, order: .reverse)])
        for station in Self.stations {
            for active in [true, false] {
                let constant = Query(
                    where: #Predicate<Tally> { $0.station == station && $0.active == active },
                    sortedBy: [SortDescriptor(\.taken, order: .reverse)])
                try expectSamePlan(prepared.query(station, active), constant)
                try expectSameCondition(prepared.call(station, active), constant)
            }
        }
        // Four sets of parts, each with empty and other text: eight templates;
        // the calls' own (access path, sort, no limit) are one of them.
        #expect(prepared.prepared.count == 2 * 4)
        #expect(Tally.entity.queryPlans.count == 0)
    }

    @Test("reals: NaN, -0.0, whole and fractional values each plan as their constants")
    func reals() throws {
        Tally.entity.forgetQueryPlans()
        let atLeast = try PreparedQuery(where: #Predicate<Tally, Double> { tally, level in tally.level >= level })
        let equal = try PreparedQuery(where: #Predicate<Tally, Double> { tally, level in level == tally.level })
        let notEqual = try PreparedQuery(where: #Predicate<Tally, Double> { tally, level in tally.level != level }, limit: 5)
        for level in Self.levels {
            try expectSamePlan(atLeast.query(level), Query(where: #Predicate { $0.level >= level }))
            try expectSamePlan(equal.query(level), Query(where: #Predicate { level == $0.level }))
            try expectSamePlan(notEqual.query(level), Query(where: #Predicate { $0.level != level }, limit: 5))
            try expectSameCondition(atLeast.call(level), Query(where: #Predicate { $0.level >= level }))
            try expectSameCondition(equal.call(level), Query(where: #Predicate { level == $0.level }))
            try expectSameCondition(notEqual.call(level), Query(where: #Predicate { $0.level != level }, limit: 5))
        }
        #expect(Tally.entity.queryPlans.count == 0)
    }

    @Test("optionals: nil and present values of optional parameters")
    func optionals() throws {
        Tally.entity.forgetQueryPlans()
        let prepared = try PreparedQuery(
            where: #Predicate<Tally, String?, Int64?> { tally, note, reading in tally.note == note || tally.reading == reading },
            sortedBy: [SortDescriptor(\.reading)])
        let notes: [String?] = [nil, "b", "", "cafe\u{301}"]
        let readings: [Int64?] = [nil, 0, 3, -1]
        for note in notes {
            for reading in readings {
                let constant = Query(
                    where: #Predicate<Tally> { $0.note == note || $0.reading == reading },
                    sortedBy: [SortDescriptor(\.reading)])
                try expectSamePlan(prepared.query(note, reading), constant)
                try expectSameCondition(prepared.call(note, reading), constant)
            }
        }
    }

    @Test("a parameter used twice, a Bool parameter as a condition, a part only Foundation evaluates")
    func otherForms() throws {
        Tally.entity.forgetQueryPlans()
        let twice = try PreparedQuery(
            where: #Predicate<Tally, Int64> { tally, id in tally.id >= id && tally.id < id + 10 })
        let flag = try PreparedQuery(where: #Predicate<Tally, Bool, String> { tally, all, station in all || tally.station == station })
        let computed = try PreparedQuery(
            where: #Predicate<Tally, Int, Bool> { tally, length, active in tally.station.count > length && tally.active == active })
        for id in [Int64(-20), 0, 7, 60] {
            try expectSamePlan(twice.query(id), Query(where: #Predicate { $0.id >= id && $0.id < id + 10 }))
            try expectSameCondition(twice.call(id), Query(where: #Predicate { $0.id >= id && $0.id < id + 10 }))
        }
        for all in [true, false] {
            for station in Self.stations {
                try expectSamePlan(flag.query(all, station), Query(where: #Predicate { all || $0.station == station }))
                // `true || …` translates to `true` and `false || x` to `x`,
                // which a template of `all || station == ?` does not give
                // back: no template, the call reads its query.
                try expectSameCondition(
                    flag.call(all, station), Query(where: #Predicate { all || $0.station == station }), templated: false)
            }
        }
        for length in [0, 1, 3, 100] {
            for active in [true, false] {
                try expectSamePlan(
                    computed.query(length, active),
                    Query(where: #Predicate { $0.station.count > length && $0.active == active }))
                try expectSameCondition(
                    computed.call(length, active),
                    Query(where: #Predicate { $0.station.count > length && $0.active == active }))
            }
        }
    }

    @Test("text operations, a relation-free range and a limit: a call's bound condition is the constant query's")
    func boundConditions() throws {
        Tally.entity.forgetQueryPlans()
        let sort = [SortDescriptor(\Tally.station)]
        let contains = try PreparedQuery(
            where: #Predicate<Tally, String> { tally, part in tally.station.contains(part) }, sortedBy: sort, limit: 2)
        let prefix = try PreparedQuery(
            where: #Predicate<Tally, String, Bool> { tally, start, active in
                tally.station.starts(with: start) && tally.active != active
            })
        let range = try PreparedQuery(
            where: #Predicate<Tally, Date, Int64?> { tally, after, reading in tally.taken > after || tally.reading == reading },
            sortedBy: [SortDescriptor(\.taken, order: .reverse)])
        for station in Self.stations {
            try expectSameCondition(
                contains.call(station),
                Query(where: #Predicate { $0.station.contains(station) }, sortedBy: sort, limit: 2))
            for active in [true, false] {
                try expectSameCondition(
                    prefix.call(station, active),
                    Query(where: #Predicate { $0.station.starts(with: station) && $0.active != active }))
            }
        }
        for after in [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1.5), .distantFuture] {
            for reading in [nil, Int64(0), -4] {
                try expectSameCondition(
                    range.call(after, reading),
                    Query(
                        where: #Predicate { $0.taken > after || $0.reading == reading },
                        sortedBy: [SortDescriptor(\.taken, order: .reverse)]))
            }
        }
    }

    @Test("forgetting the entity's plans drops the prepared query's templates; the next call plans afresh")
    func forgetting() throws {
        Tally.entity.forgetQueryPlans()
        let prepared = try PreparedQuery(where: #Predicate<Tally, String> { tally, station in tally.station == station })
        try expectSamePlan(prepared.query("b"), Query(where: #Predicate { $0.station == "b" }))
        #expect(prepared.prepared.count == 4)
        Tally.entity.forgetQueryPlans()
        let plan = QueryPlan(prepared.query("🚀"), parts: .all)
        #expect(prepared.prepared.count == 1)
        #expect(plan.engineCondition == .compare(field: "station", .equal, .text("🚀")))
        try expectSamePlan(prepared.query("a\u{0}b"), Query(where: #Predicate { $0.station == "a\u{0}b" }))
    }

    @Test("a call's plan is bound from a template made when the query was prepared, for values of common kinds")
    func plannedWhenPrepared() throws {
        Tally.entity.forgetQueryPlans()
        let sort = [SortDescriptor(\Tally.taken, order: .reverse)]
        let prepared = try PreparedQuery(
            where: #Predicate<Tally, String, Bool> { tally, station, active in
                tally.station == station && tally.active == active
            },
            sortedBy: sort, limit: 3)
        // Planned when prepared: a non-empty text and a Boolean.
        #expect(prepared.prepared.count == 1)
        for station in Self.stations {
            for active in [true, false] {
                let bound = try #require(prepared.call(station, active).boundPlan())
                let fresh = QueryPlan(
                    fresh: Query(
                        where: #Predicate { $0.station == station && $0.active == active }, sortedBy: sort, limit: 3),
                    parts: .accessPath)
                #expect(bound.access == fresh.access, "\(station.debugDescription), \(active)")
                #expect(bound.accessIsExact == fresh.accessIsExact)
                #expect(bound.limit == 3)
            }
        }
        // The empty text is another kind, planned at its first call.
        #expect(prepared.prepared.count == 2)
        // A real parameter: whole and fractional values planned when prepared.
        let atLeast = try PreparedQuery(where: #Predicate<Tally, Double> { tally, level in tally.level >= level })
        #expect(atLeast.prepared.count == 2)
        _ = atLeast.call(2.5).boundPlan()
        _ = atLeast.call(-7).boundPlan()
        #expect(atLeast.prepared.count == 2)
        // Forgotten plans are planned again at the next call.
        Tally.entity.forgetQueryPlans()
        #expect(prepared.call("b", true).boundPlan() != nil)
        #expect(prepared.prepared.count == 1)
    }

    @Test("a prepared predicate evaluated by Foundation answers as with constants")
    func foundationEvaluation() throws {
        let prepared = try PreparedQuery(where: #Predicate<Tally, String, Double> { tally, station, level in
            tally.station == station && tally.level > level
        })
        for tally in tallies {
            for station in Self.stations {
                let constant = #Predicate<Tally> { $0.station == station && $0.level > 1 }
                #expect(try prepared.predicate(station, 1).evaluate(tally) == constant.evaluate(tally))
            }
        }
    }
}
