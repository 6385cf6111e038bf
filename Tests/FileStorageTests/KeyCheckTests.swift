import DAOCore
import DialogGraph
@testable import FileStorage
import Foundation
import TestSupport
import Testing

// Three levels of records with hand-written `Codable`: a region (String key)
// owns towns, which own houses; a house whose `flagged` is set encodes a key
// its entity does not declare.

/// A region, keyed by a String; owns its towns.
struct RegionRecord: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var towns: [TownRecord]

    static let entity = Entity<RegionRecord>(
        "regions", primaryKey: "id", \.id, fields: [Field("name", \.name)],
        relations: [Relation("towns", \.towns, foreignKey: "regionId", \TownRecord.regionId)])
}

/// A town of a region; owns its houses.
struct TownRecord: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var regionId: String
    var population: Int64?
    var houses: [HouseRecord]

    static let entity = Entity<TownRecord>(
        "towns", primaryKey: "id", \.id, fields: [Field("regionId", \.regionId), Field("population", \.population)],
        relations: [Relation("houses", \.houses, foreignKey: "townId", \HouseRecord.townId)],
        ownedBy: RegionRecord.self)
}

/// A house of a town, with a hand-written conformance whose keys depend on
/// the value: a flagged house also encodes `extra`, which is not declared.
struct HouseRecord: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var townId: Int64
    var note: String?
    var area: Double
    var flagged: Bool

    enum CodingKeys: String, CodingKey {
        case id, townId, note, area, flagged, extra
    }

    init(id: Int64, townId: Int64, note: String?, area: Double, flagged: Bool = false) {
        self.id = id
        self.townId = townId
        self.note = note
        self.area = area
        self.flagged = flagged
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        townId = try container.decode(Int64.self, forKey: .townId)
        note = try container.decodeIfPresent(String.self, forKey: .note)
        area = try container.decode(Double.self, forKey: .area)
        flagged = try container.decode(Bool.self, forKey: .flagged)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(townId, forKey: .townId)
        try container.encodeIfPresent(note, forKey: .note)
        try container.encode(area, forKey: .area)
        try container.encode(flagged, forKey: .flagged)
        if flagged { try container.encode("undeclared", forKey: .extra) }
    }

    static let entity = Entity<HouseRecord>(
        "houses", primaryKey: "id", \.id,
        fields: [Field("townId", \.townId), Field("note", \.note), Field("area", \.area), Field("flagged", \.flagged)],
        ownedBy: TownRecord.self)
}

/// A record that encodes as an unkeyed container or a single value (by its
/// `shape`) instead of a keyed container, or throws an error of its own.
struct ShapelessRecord: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var shape: Int64

    struct Refused: Error {}

    enum CodingKeys: String, CodingKey {
        case id, shape
    }

    init(id: Int64, shape: Int64) {
        self.id = id
        self.shape = shape
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        shape = try container.decode(Int64.self, forKey: .shape)
    }

    func encode(to encoder: any Encoder) throws {
        switch shape {
        case 1:
            var container = encoder.unkeyedContainer()
            try container.encode(id)
        case 2:
            var container = encoder.singleValueContainer()
            try container.encode(id)
        case 3:
            throw Refused()
        default:
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(shape, forKey: .shape)
        }
    }

    static let entity = Entity<ShapelessRecord>(
        "shapeless", primaryKey: "id", \.id, fields: [Field("shape", \.shape)])
}

/// A document with Foundation's synthesized conformance over the concrete
/// record type: what the store must write, byte for byte.
private struct PlainDocument<Element: Codable>: Codable {
    var version: Int
    var entity: String
    var records: [Element]
}

/// A delta document with Foundation's synthesized conformance.
private struct PlainDelta<Element: Codable, Key: Codable>: Codable {
    var version: Int
    var entity: String
    var records: [Element]
    var erased: [Key]
}

/// What the store writes (documents and deltas) is the records encoded
/// plainly; a record whose `Codable` keys are not its declared fields, at
/// any level of relations and whichever document a commit writes, is refused
/// with a schema mismatch and nothing changes.
@Suite("File store: documents' bytes and records' keys")
struct KeyCheckTests {
    static func region(_ id: String, towns: Int, flagged: Int64? = nil) -> RegionRecord {
        // Distinct for every region name the tests use ("r1"…"r20", "a", "b").
        let number = Int64(id.unicodeScalars.reduce(0) { ($0 * 131 + Int($1.value)) % 1_000_003 })
        return RegionRecord(
            id: id, name: "Région \(id) 🏔", towns: (0..<Int64(towns)).map { town in
                let townId = number * 100 + town
                return TownRecord(
                    id: townId, regionId: id, population: town % 2 == 0 ? nil : town * 1000,
                    houses: (0..<Int64(3)).map { house in
                        let houseId = townId * 10 + house
                        return HouseRecord(
                            id: houseId, townId: townId, note: house == 1 ? nil : "Zoe\u{308} \u{0} \(houseId)",
                            area: house == 2 ? -.infinity : Double(houseId) / 4, flagged: houseId == flagged)
                    })
            })
    }

    @Test("what the store writes decodes and re-encodes plainly to the same bytes", arguments: FileFormat.allCases)
    func storeWritesPlainBytes(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: format)
        let regions = try store.storage(for: RegionRecord.self)
        try regions.persist((1...12).map { Self.region("r\($0)", towns: 3) })
        // One town changes: a delta for towns and houses.
        var changed = Self.region("r4", towns: 3)
        changed.towns[0].population = 7
        changed.towns[1].houses.removeLast()
        try regions.persist(changed)
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: scratch.file(Manifest.fileName)))
        let coder = DocumentCoder(format: format)
        func expectPlain<R: Record>(_ type: R.Type) throws {
            let name = try #require(manifest.documents[R.entity.name])
            let data = try Data(contentsOf: scratch.file(name))
            let plain = try coder.decode(PlainDocument<R>.self, from: data)
            #expect(try coder.encode(plain) == data, "\(R.entity.name)")
            for deltaName in manifest.deltas?[R.entity.name] ?? [] {
                let data = try Data(contentsOf: scratch.file(deltaName))
                let delta = try coder.decode(PlainDelta<R, R.PrimaryKey>.self, from: data)
                #expect(try coder.encode(delta) == data, "\(R.entity.name) delta")
            }
        }
        try expectPlain(RegionRecord.self)
        try expectPlain(TownRecord.self)
        try expectPlain(HouseRecord.self)
        #expect(manifest.deltas?["houses"]?.count == 1)
    }

    @Test("a grandchild that encodes an undeclared key is a schema mismatch naming it; nothing changes", arguments: FileFormat.allCases)
    func undeclaredKeyOfAGrandchild(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        var store = try FileStore(directory: scratch.url, format: format)
        var regions = try store.storage(for: RegionRecord.self)
        func expectMismatch(_ records: [RegionRecord]) {
            #expect {
                try regions.persist(records)
            } throws: { error in
                guard let error = error as? StorageError else { return false }
                return error.kind == .schemaMismatch && error.entity == "houses" && error.operation == .persist
                    && error.message == "the record encodes the key 'extra', which the entity does not declare"
            }
        }
        // Into empty tables: whole documents.
        expectMismatch([Self.region("a", towns: 2), Self.region("b", towns: 2, flagged: Self.region("b", towns: 2).towns[1].houses[2].id)])
        #expect(try regions.count() == 0)
        #expect(try store.storage(for: HouseRecord.self).count() == 0)
        let stored = (1...20).map { Self.region("r\($0)", towns: 2) }
        try regions.persist(stored)
        // One region of twenty: deltas.
        let flaggedHouse = stored[5].towns[0].houses[0].id
        var faulty = Self.region("r6", towns: 2, flagged: flaggedHouse)
        faulty.name = "renamed"
        expectMismatch([faulty])
        // Every region: whole documents again.
        expectMismatch(stored.map { region in
            var region = region
            region.name = "all renamed"
            return region.id == "r6" ? Self.region("r6", towns: 2, flagged: flaggedHouse) : region
        })
        #expect(try regions.readAll() == stored.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) })
        store.close()
        store = try FileStore(directory: scratch.url, format: format)
        regions = try store.storage(for: RegionRecord.self)
        #expect(try regions.readAll() == stored.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) })
        // The house without the flag is stored.
        try regions.persist(faulty.with { $0.towns[0].houses[0].flagged = false })
        #expect(try regions.read(primaryKey: "r6")?.name == "renamed")
    }

    @Test("a record that encodes no keyed container is a schema mismatch; its own error is an encoding error", arguments: FileFormat.allCases)
    func shapes(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: format)
        let storage = try store.storage(for: ShapelessRecord.self)
        try storage.persist([ShapelessRecord(id: 1, shape: 0), ShapelessRecord(id: 2, shape: 0)])
        for (shape, container) in [(1, "(an unkeyed container)"), (2, "(a single value)")] {
            #expect {
                try storage.persist(ShapelessRecord(id: 3, shape: Int64(shape)))
            } throws: { error in
                guard let error = error as? StorageError else { return false }
                return error.kind == .schemaMismatch && error.entity == "shapeless"
                    && error.message == "the record encodes the key '\(container)', which the entity does not declare"
            }
        }
        #expect {
            try storage.persist(ShapelessRecord(id: 3, shape: 3))
        } throws: { error in
            guard let error = error as? StorageError else { return false }
            return error.kind == .encoding && error.underlying is ShapelessRecord.Refused
        }
        #expect(try storage.readAll() == [ShapelessRecord(id: 1, shape: 0), ShapelessRecord(id: 2, shape: 0)])
    }
}

extension RegionRecord {
    func with(_ change: (inout RegionRecord) -> Void) -> RegionRecord {
        var copy = self
        change(&copy)
        return copy
    }
}

/// A record whose `Codable` conformance uses one of two key types by its
/// `id` (odd: `OddKeys`, even: `EvenKeys`), and writes the undeclared key
/// `extra` from `EvenKeys` when `flagged`: the key check's encoder, which
/// keeps the container of the last key type, must check each record with
/// the keys it asked for.
struct TwoKeyTypesRecord: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var name: String
    var flagged = false

    enum OddKeys: String, CodingKey { case id, name }
    enum EvenKeys: String, CodingKey { case id, name, extra }

    init(id: Int64, name: String, flagged: Bool = false) {
        self.id = id
        self.name = name
        self.flagged = flagged
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: OddKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
    }

    func encode(to encoder: any Encoder) throws {
        if id % 2 != 0 {
            var container = encoder.container(keyedBy: OddKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(name, forKey: .name)
        } else {
            var container = encoder.container(keyedBy: EvenKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(name, forKey: .name)
            if flagged { try container.encode(true, forKey: .extra) }
        }
    }

    static let entity = Entity<TwoKeyTypesRecord>("twoKeyTypes", primaryKey: "id", \.id, fields: [Field("name", \.name)])
}

extension KeyCheckTests {
    @Test("records of one call checked with alternating key types: each by its own keys")
    func alternatingKeyTypes() throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: .json)
        let storage = try store.storage(for: TwoKeyTypesRecord.self)
        try storage.persist((1...6).map { TwoKeyTypesRecord(id: $0, name: "n\($0)") })
        for records in [
            [TwoKeyTypesRecord(id: 7, name: "a"), TwoKeyTypesRecord(id: 8, name: "b", flagged: true)],
            [TwoKeyTypesRecord(id: 8, name: "b", flagged: true), TwoKeyTypesRecord(id: 9, name: "c")],
            [TwoKeyTypesRecord(id: 10, name: "d"), TwoKeyTypesRecord(id: 11, name: "e"), TwoKeyTypesRecord(id: 12, name: "f", flagged: true)],
        ] {
            #expect {
                try storage.persist(records)
            } throws: { error in
                (error as? StorageError)?.kind == .schemaMismatch
                    && (error as? StorageError)?.message == "the record encodes the key 'extra', which the entity does not declare"
            }
        }
        #expect(try storage.count() == 6)
    }
}
