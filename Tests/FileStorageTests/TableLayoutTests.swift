import DAOCore
@testable import FileStorage
import Foundation
import TestSupport
import Testing

// Three levels of another domain than the example's: a garden (String key)
// owns beds (Int64 key, optionals, a composite index), which own plants
// (String key).

/// A garden, keyed by its name; owns its beds.
struct LayoutGarden: Record, Equatable {
    typealias PrimaryKey = String
    var name: String
    var owner: String?
    var beds: [LayoutBed]

    static let entity = Entity<LayoutGarden>(
        "layout_gardens", primaryKey: "name", \.name, fields: [Field("owner", \.owner)],
        relations: [Relation("beds", \.beds, foreignKey: "garden", \LayoutBed.garden)])
}

/// A bed of a garden; owns its plants.
struct LayoutBed: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var garden: String
    var soil: String
    var depth: Double?
    var plants: [LayoutPlant]

    static let entity = Entity<LayoutBed>(
        "layout_beds", primaryKey: "id", \.id,
        fields: [Field("garden", \.garden), Field("soil", \.soil), Field("depth", \.depth)],
        indexes: [Index("layout_beds_by_soil_depth", on: ["soil", "depth"])],
        relations: [Relation("plants", \.plants, foreignKey: "bed", \LayoutPlant.bed)],
        ownedBy: LayoutGarden.self)
}

/// A plant of a bed, keyed by text.
struct LayoutPlant: Record, Equatable {
    typealias PrimaryKey = String
    var code: String
    var bed: Int64
    var height: Double
    var note: String?

    static let entity = Entity<LayoutPlant>(
        "layout_plants", primaryKey: "code", \.code,
        fields: [Field("bed", \.bed), Field("height", \.height), Field("note", \.note)],
        ownedBy: LayoutBed.self)
}

/// The tables hold records in an array with a map from key to position and
/// keep track of whether the array is in key order: these check every
/// answer and every document against a plain model after insertions out of
/// order, erasures from the middle, replacements and rolled-back calls.
@Suite("File store: records by position")
struct TableLayoutTests {
    /// Text keys in the order the store sorts them: by UTF-8 bytes.
    static func byBytes(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    /// `gardens` as the store answers them: in key order, children in key order.
    static func ordered(_ gardens: [String: LayoutGarden]) -> [LayoutGarden] {
        gardens.values.sorted { byBytes($0.name, $1.name) }.map { garden in
            var garden = garden
            garden.beds.sort { $0.id < $1.id }
            for index in garden.beds.indices { garden.beds[index].plants.sort { byBytes($0.code, $1.code) } }
            return garden
        }
    }

    /// The `records` list of the entity's whole document, as the file holds it.
    static func documentRecords(_ scratch: TemporaryDirectory, entity: String, format: FileFormat) throws -> [[String: Any]] {
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: scratch.file("manifest.json")))
        let name = try #require(manifest.documents[entity])
        let data = try Data(contentsOf: scratch.file(name))
        let tree: Any =
            switch format {
            case .json: try JSONSerialization.jsonObject(with: data)
            case .propertyList: try PropertyListSerialization.propertyList(from: data, format: nil)
            }
        return try #require((tree as? [String: Any])?["records"] as? [[String: Any]])
    }

    /// Every plant's code as its bytes, in the order of `gardens`.
    static func codes(_ gardens: [LayoutGarden]) -> [[UInt8]] {
        gardens.flatMap(\.beds).flatMap(\.plants).map { Array($0.code.utf8) }
    }

    static func garden(_ name: String, _ rng: inout TestRandom, base: Int64, format: FileFormat) -> LayoutGarden {
        // Canonically equivalent codes in JSON only: a property list refuses the second spelling.
        let leaves = ["z", "a", "é", format == .json ? "e\u{301}" : "ë", "🙂"]
        // Beds from the garden's own range, in a shuffled order; some optional values missing.
        var beds: [LayoutBed] = []
        for slot in (0..<Int64(6)).shuffled(using: &rng).prefix(Int.random(in: 0...4, using: &rng)) {
            let id = base + slot
            var plants: [LayoutPlant] = []
            for leaf in (0..<5).shuffled(using: &rng).prefix(Int.random(in: 0...3, using: &rng)) {
                plants.append(
                    LayoutPlant(
                        code: "p\(id)-\(leaves[leaf])", bed: id,
                        height: Double(Int.random(in: -3...3, using: &rng)) / 2,
                        note: Bool.random(using: &rng) ? nil : "note \(rng.next() % 100)"))
            }
            beds.append(
                LayoutBed(
                    id: id, garden: name, soil: ["clay", "sand", "loam"][Int(rng.next() % 3)],
                    depth: rng.next() % 3 == 0 ? nil : Double(rng.next() % 3), plants: plants))
        }
        return LayoutGarden(name: name, owner: Bool.random(using: &rng) ? nil : "owner \(rng.next() % 5)", beds: beds)
    }

    @Test("random upserts, erasures and failed calls answer as a plain model, before and after reopening",
          arguments: FileFormat.allCases)
    func modelCheck(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        // Names out of byte order, with text beyond ASCII (plist: NFC only,
        // a property list stores canonically equivalent texts as one).
        let names = ["pear", "apple", "fig", "Zebra", "olive", "çà", "kiwi", "date", "yuzu", "lime", "🍋", "b"]
        var model: [String: LayoutGarden] = [:]
        var rng = TestRandom(seed: format == .json ? 11 : 12)
        var store: FileStore? = try FileStore(directory: scratch.url, format: format, durability: .none)
        for step in 0..<100 {
            let open = try #require(store)
            let gardens = try open.storage(for: LayoutGarden.self)
            let beds = try open.storage(for: LayoutBed.self)
            let plants = try open.storage(for: LayoutPlant.self)
            switch rng.next() % 7 {
            case 0, 1:
                // Upsert one to three gardens, in no order.
                var batch: [LayoutGarden] = []
                for index in names.indices.shuffled(using: &rng).prefix(Int.random(in: 1...3, using: &rng)) {
                    batch.append(Self.garden(names[index], &rng, base: Int64(index) * 100, format: format))
                }
                try gardens.persist(batch)
                for garden in batch { model[garden.name] = garden }
            case 2:
                // Erase a few gardens, some absent.
                let chosen = Array(names.shuffled(using: &rng).prefix(2))
                let erased = try gardens.erase(primaryKeys: chosen)
                #expect(erased == chosen.filter { model[$0] != nil }.count)
                for name in chosen { model[name] = nil }
            case 3:
                // Erase a bed from the middle of its table, with its plants.
                let held = model.values.flatMap(\.beds).map(\.id)
                guard let id = held.randomElement(using: &rng) else { continue }
                #expect(try beds.erase(primaryKeys: [id]) == 1)
                for name in model.keys { model[name]?.beds.removeAll { $0.id == id } }
            case 4:
                // A call that fails after changing much: nothing changes.
                var batch = names.indices.map { Self.garden(names[$0], &rng, base: Int64($0) * 100, format: format) }
                guard let last = batch.indices.last(where: { !batch[$0].beds.isEmpty }) else { continue }
                batch[last].beds[0].garden = batch[(last + 1) % batch.count].name
                #expect(throws: StorageError.self) { try gardens.persist(batch) }
            case 5:
                // Replace one plant in place through its own storage.
                let held = model.values.flatMap(\.beds).flatMap(\.plants)
                guard var plant = held.randomElement(using: &rng) else { continue }
                plant.height += 1
                plant.note = nil
                try plants.persist(plant)
                let garden = try #require(model.values.first { $0.beds.contains { $0.id == plant.bed } })
                for bed in garden.beds.indices where garden.beds[bed].id == plant.bed {
                    for leaf in garden.beds[bed].plants.indices where garden.beds[bed].plants[leaf].code.utf8.elementsEqual(plant.code.utf8) {
                        model[garden.name]?.beds[bed].plants[leaf] = plant
                    }
                }
            default:
                // Reopen: the documents and deltas read back.
                open.close()
                store = nil
                store = try FileStore(directory: scratch.url, format: format, durability: .none)
                continue
            }
            let expected = Self.ordered(model)
            let read = try gardens.readAll()
            #expect(read == expected, "step \(step)")
            // `==` on text is canonical equivalence: the spellings, exactly.
            #expect(Self.codes(read) == Self.codes(expected), "step \(step)")
            if step % 8 == 0 {
                for garden in expected {
                    #expect(try gardens.read(primaryKey: garden.name) == garden, "step \(step)")
                }
            }
            // A lookup through the composite index, and by the foreign key.
            let allBeds = expected.flatMap(\.beds)
            let clay = allBeds.filter { $0.soil == "clay" && $0.depth == 1 }.sorted { $0.id < $1.id }
            #expect(try beds.read(Query(where: #Predicate<LayoutBed> { $0.soil == "clay" && $0.depth == 1 })) == clay)
            if let bed = allBeds.first {
                #expect(try plants.read(Query(where: #Predicate<LayoutPlant> { $0.bed == bed.id })) == bed.plants)
            }
            #expect(try plants.count() == allBeds.reduce(0) { $0 + $1.plants.count })
        }
        try #require(store).close()
        let reopened = try FileStore(directory: scratch.url, format: format)
        #expect(try reopened.storage(for: LayoutGarden.self).readAll() == Self.ordered(model))
    }

    @Test("a whole document lists its records in key order after insertions out of order and erasures from the middle",
          arguments: FileFormat.allCases)
    func documentOrder(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: format, durability: .none)
        let gardens = try store.storage(for: LayoutGarden.self)
        func names() throws -> [String] {
            try Self.documentRecords(scratch, entity: "layout_gardens", format: format).map { try #require($0["name"] as? String) }
        }
        try gardens.persist(["pear", "apple", "fig", "b", "Zebra"].map { LayoutGarden(name: $0, owner: nil, beds: []) })
        #expect(try names() == ["Zebra", "apple", "b", "fig", "pear"])
        // Erase from the middle (a delta), then insert before the first key
        // and replace everything (a whole document again).
        #expect(try gardens.erase(primaryKeys: ["b"]) == 1)
        try gardens.persist(
            ["pear", "apple", "fig", "Zebra", "Aa", "kiwi"].map { LayoutGarden(name: $0, owner: "o", beds: []) })
        #expect(try names() == ["Aa", "Zebra", "apple", "fig", "kiwi", "pear"])
        #expect(try gardens.readAll().map(\.name) == ["Aa", "Zebra", "apple", "fig", "kiwi", "pear"])
        // Integer keys out of order, through the beds.
        try gardens.persist(
            LayoutGarden(
                name: "Aa", owner: nil,
                beds: [9, 3, -4, 7, 1].map { LayoutBed(id: $0, garden: "Aa", soil: "clay", depth: nil, plants: []) }))
        let ids = try Self.documentRecords(scratch, entity: "layout_beds", format: format).map {
            try #require(($0["id"] as? NSNumber)?.int64Value)
        }
        #expect(ids == [-4, 1, 3, 7, 9])
    }

    @Test("text keys that differ only in normalization are two records in JSON; a property list refuses the second")
    func normalizationOfKeys() throws {
        for format in FileFormat.allCases {
            let scratch = try TemporaryDirectory("file-store")
            let store = try FileStore(directory: scratch.url, format: format)
            let gardens = try store.storage(for: LayoutGarden.self)
            try gardens.persist(LayoutGarden(name: "caf\u{E9}", owner: nil, beds: []))
            let decomposed = LayoutGarden(name: "cafe\u{301}", owner: nil, beds: [])
            switch format {
            case .json:
                try gardens.persist(decomposed)
                #expect(try gardens.readAll().map { Array($0.name.unicodeScalars) } == [
                    Array("cafe\u{301}".unicodeScalars), Array("caf\u{E9}".unicodeScalars),
                ])
                #expect(try gardens.read(primaryKey: "cafe\u{301}")?.name.unicodeScalars.count == 5)
            case .propertyList:
                #expect { try gardens.persist(decomposed) } throws: { ($0 as? StorageError)?.kind == .invalidArgument }
                #expect(try gardens.readAll().map { Array($0.name.unicodeScalars) } == [Array("caf\u{E9}".unicodeScalars)])
            }
        }
    }

    @Test("-0.0 and 0.0 in one document stay apart, through the index and after reopening; so do the ones a document read holds", arguments: FileFormat.allCases)
    func negativeZeroBesideZero(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        func bed(_ id: Int64, _ depth: Double?) -> LayoutBed {
            LayoutBed(id: id, garden: "g", soil: "sand", depth: depth, plants: [
                LayoutPlant(code: id < 10 ? "p0\(id)" : "p\(id)", bed: id, height: depth ?? 1, note: nil),
            ])
        }
        // Each zero first in a document once: 0.0 then -0.0, and -0.0 then 0.0.
        let first = LayoutGarden(name: "g", owner: nil, beds: [bed(1, 0.0), bed(2, -0.0), bed(3, .nan), bed(4, -0.0), bed(5, 0.0)])
        func depths(_ store: FileStore) throws -> [UInt64?] {
            try store.storage(for: LayoutBed.self).readAll().map { $0.depth?.bitPattern }
        }
        func heights(_ store: FileStore) throws -> [UInt64] {
            try store.storage(for: LayoutPlant.self).readAll().map(\.height.bitPattern)
        }
        let expected = [0.0, -0.0, .nan, -0.0, 0.0].map(\.bitPattern)
        do {
            let store = try FileStore(directory: scratch.url, format: format)
            try store.storage(for: LayoutGarden.self).persist(first)
            #expect(try depths(store) == expected)
        }
        do {
            let store = try FileStore(directory: scratch.url, format: format)
            #expect(try depths(store) == expected)
            #expect(try heights(store) == expected)
            // -0.0 == 0.0 through the composite index; NaN equal to nothing.
            let beds = try store.storage(for: LayoutBed.self)
            let zero = 0.0, minusZero = -0.0, nan = Double.nan
            #expect(try beds.read(where: #Predicate { $0.soil == "sand" && $0.depth == zero }).map(\.id) == [1, 2, 4, 5])
            #expect(try beds.read(where: #Predicate { $0.soil == "sand" && $0.depth == minusZero }).map(\.id) == [1, 2, 4, 5])
            #expect(try beds.read(where: #Predicate { $0.soil == "sand" && $0.depth == nan }).map(\.id) == [])
            // Writes holding neither -0.0 nor NaN, which rewrite the whole
            // document beside the -0.0s it was read with.
            try beds.persist([bed(6, 0.0), bed(7, 0.0), bed(8, 0.0), bed(9, 0.0), bed(10, 0.0), bed(11, 0.0)])
        }
        let store = try FileStore(directory: scratch.url, format: format)
        #expect(try depths(store) == expected + Array(repeating: (0.0).bitPattern, count: 6))
        #expect(try heights(store) == expected + Array(repeating: (0.0).bitPattern, count: 6))
    }
}
