import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

/// A parent whose child entity does not name it (no `ownedBy`): a storage of
/// the child can be opened, and queried, before a storage of the parent
/// links the two, which changes how the child's index is served.
private struct Crate: Record, Hashable {
    typealias PrimaryKey = String
    var id: String
    var bottles: [Bottle]

    static let entity = Entity<Crate>(
        "crates", primaryKey: "id", \.id, fields: [],
        relations: [Relation("bottles", \.bottles, foreignKey: "crateId", \Bottle.crateId)])
}

private struct Bottle: Record, Hashable {
    typealias PrimaryKey = String
    var id: String
    var crateId: String
    var vintage: Int64
    var corked: Bool
    var label: String?

    static let entity = Entity<Bottle>(
        "bottles", primaryKey: "id", \.id,
        fields: [
            Field("crateId", \.crateId), Field("vintage", \.vintage), Field("corked", \.corked),
            Field("label", \.label),
        ],
        indexes: [
            Index("bottles_by_crate_corked_vintage", on: ["crateId", "corked", "vintage"]),
            Index("bottles_by_vintage", on: ["vintage"]),
        ])
}

/// The LMDB storage answers a prepared call (`read(_: PreparedQueryCall)`)
/// from a plan bound from the prepared query's template, or for a parent's
/// range from the call's values read by slot (`BoundSlots`), with what the
/// table derived from that template kept for later calls
/// (`EntityTable.preparedRead(for:)`). Each answer is compared with the
/// call's query read the general way and with the records filtered and
/// sorted in memory.
@Suite("LMDB: prepared calls answered from their templates")
struct PreparedReadTests {
    private static let byCrate = #Predicate<Bottle, String, Bool> { bottle, crate, corked in
        bottle.crateId == crate && bottle.corked == corked
    }

    private static func crates(_ random: inout SplitMix64) -> [Crate] {
        // One spelling of each text: the ground truth below compares with
        // `String.==` (canonical equivalence), the library by bytes.
        let labels: [String?] = [nil, "", "Rosé", "brut"]
        return ["", "a", "b", "é", "zz"].map { crate in
            let count = Int(random.next() % 12)
            let bottles = (0..<count).map { index in
                Bottle(
                    id: "\(crate)/\(index)", crateId: crate, vintage: Int64(1990 + random.next() % 6),
                    corked: random.next() % 3 != 0, label: labels[Int(random.next() % UInt64(labels.count))])
            }
            return Crate(id: crate, bottles: bottles)
        }
    }

    /// `records` that meet `predicate`, sorted by `sort` then by key, at
    /// most `limit`: the answer worked out without the storage.
    private static func expected(
        _ records: [Bottle], _ predicate: Predicate<Bottle>, sort: [SortDescriptor<Bottle>], limit: Int?
    ) throws -> [Bottle] {
        var matching = try records.filter { try predicate.evaluate($0) }.sorted { $0.id < $1.id }
        matching = matching.sorted(using: sort)
        if let limit { matching = Array(matching.prefix(limit)) }
        return matching
    }

    @Test("calls before and after a parent storage links the entity, with sorts, limits and forgotten plans")
    func beforeAndAfterLinking() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let bottles = try env.storage(for: Bottle.self)
            let newest = [SortDescriptor(\Bottle.vintage, order: .reverse)]
            let oldest = [SortDescriptor(\Bottle.vintage)]
            let byCrate = try PreparedQuery(where: Self.byCrate, sortedBy: newest)
            let byCrateLimited = try PreparedQuery(where: Self.byCrate, sortedBy: oldest, limit: 2)
            let byVintage = try PreparedQuery(
                where: #Predicate<Bottle, Int64> { bottle, vintage in bottle.vintage == vintage }, sortedBy: newest)
            let byKey = try PreparedQuery(where: #Predicate<Bottle, String> { bottle, id in bottle.id == id })
            let inCrate = try PreparedQuery(
                where: #Predicate<Bottle, String> { bottle, crate in bottle.crateId == crate }, sortedBy: oldest)
            let byLabel = try PreparedQuery(
                where: #Predicate<Bottle, String?> { bottle, label in bottle.label == label }, sortedBy: newest)
            // Equalities outside the index that serves the crate's range:
            // checked on the range's stored bytes once the entity is a child.
            let byCrateLabel = try PreparedQuery(
                where: #Predicate<Bottle, String, String?> { bottle, crate, label in
                    bottle.crateId == crate && bottle.label == label
                }, sortedBy: newest)
            let byCrateVintage = try PreparedQuery(
                where: #Predicate<Bottle, Int64, String> { bottle, vintage, crate in
                    bottle.vintage == vintage && bottle.crateId == crate
                })
            var checks = 0
            func compare(_ call: PreparedQueryCall<Bottle>, _ constant: Predicate<Bottle>, _ what: String) throws {
                let got = try bottles.read(call)
                let general = try bottles.read(call.query)
                let all = try bottles.readAll()
                let expected = try Self.expected(all, constant, sort: call.sortedBy, limit: call.limit)
                #expect(got == expected, "\(what): \(got.map(\.id)) != \(expected.map(\.id))")
                #expect(general == expected, "\(what), as a query: \(general.map(\.id))")
                // A parent's range is read from the call's values by slot:
                // they are the values of the plan bound from the template.
                if let slots = call.boundSlots(), let bound = call.boundPlan() {
                    let access: [StoredValue]
                    switch bound.access {
                    case .all: access = []
                    case .primaryKey(let value), .parent(let value): access = [value]
                    case .index(_, let values): access = values
                    }
                    #expect(slots.accessValueCount == access.count, "\(what): access values")
                    let read = access.indices.map { slots.accessValue($0) }
                    #expect(read == access.map { Optional($0) }, "\(what): access values")
                    #expect(slots.otherEqualityCount == bound.otherEqualities?.count, "\(what): other equalities")
                    if let others = bound.otherEqualities {
                        let values = others.indices.map { slots.otherEqualityValue($0) }
                        #expect(values == others.map { Optional($0.value) }, "\(what): other equalities")
                    }
                }
                checks += 1
            }
            func round(_ random: inout SplitMix64) throws {
                for crate in ["", "a", "b", "é", "zz", "none"] {
                    for corked in [true, false] {
                        if random.next() % 5 == 0 { Bottle.entity.forgetQueryPlans() }
                        try compare(
                            byCrate.call(crate, corked), #Predicate { $0.crateId == crate && $0.corked == corked },
                            "crate \(crate.debugDescription), corked \(corked)")
                        try compare(
                            byCrateLimited.call(crate, corked),
                            #Predicate { $0.crateId == crate && $0.corked == corked },
                            "crate \(crate.debugDescription), corked \(corked), limit 2")
                    }
                    try compare(inCrate.call(crate), #Predicate { $0.crateId == crate }, "crate \(crate.debugDescription)")
                    for label: String? in [nil, "Rosé", "x"] {
                        try compare(
                            byCrateLabel.call(crate, label), #Predicate { $0.crateId == crate && $0.label == label },
                            "crate \(crate.debugDescription), label \(String(describing: label))")
                    }
                    let vintage = Int64(1990 + random.next() % 6)
                    try compare(
                        byCrateVintage.call(vintage, crate), #Predicate { $0.vintage == vintage && $0.crateId == crate },
                        "crate \(crate.debugDescription), vintage \(vintage)")
                }
                for vintage in Int64(1989)...1996 {
                    try compare(byVintage.call(vintage), #Predicate { $0.vintage == vintage }, "vintage \(vintage)")
                }
                for id in ["a/0", "a/1", "é/3", "zz/11", "none"] {
                    try compare(byKey.call(id), #Predicate { $0.id == id }, "key \(id)")
                }
                for label: String? in [nil, "", "Rosé", "brut", "x"] {
                    try compare(byLabel.call(label), #Predicate { $0.label == label }, "label \(String(describing: label))")
                }
            }
            var random = SplitMix64(seed: 20_261_128)
            // Not a child yet: nothing stored, and each template's derived
            // values are made for an entity without a parent.
            try round(&random)
            // A parent storage links the entity: its index that leads with
            // the foreign key is served by the parent's range from now on.
            let crates = try env.storage(for: Crate.self)
            try crates.persist(Self.crates(&random))
            try round(&random)
            // The calls bind the equalities the crate's range leaves.
            let label = try #require(byCrateLabel.call("a", "Rosé").boundPlan())
            #expect(label.otherEqualities?.map(\.field) == ["label"])
            #expect(label.otherEqualities?.map(\.value) == [.text("Rosé")])
            #expect(byCrateVintage.call(Int64(1991), "b").boundPlan()?.otherEqualities?.map(\.field) == ["vintage"])
            // Children replaced and moved between parents.
            try crates.persist(Self.crates(&random))
            try round(&random)
            #expect(try bottles.count() > 0)
            #expect(checks == 3 * (6 * 9 + 8 + 5 + 5))
            #expect(try bottles.verify() == bottles.count())
            #expect(try crates.verify() == crates.count())
        }
    }
}
