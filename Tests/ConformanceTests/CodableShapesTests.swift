import DAOCore
import Foundation
import TestSupport
import Testing

// Records declared through `Codable` only (no `FieldwiseRecord` code), with
// the value types a record may hold besides Int64, Double and String: a UUID
// key, enums with Int32 and String raw values, Float, Int8, Int16, UInt32,
// Date, Data and Bool, each also optional, and a relation whose children are
// `Codable` only too. Every backend reads back what it wrote, generated, and
// refuses a stored integer that does not fit the type a record asks for.

enum CrateGrade: Int32, Codable, Sendable, Equatable, FieldValue, CaseIterable {
    case low = -2, standard = 0, premium = 7
}

enum CrateSeal: String, Codable, Sendable, Equatable, FieldValue, CaseIterable {
    case wax, tape, bare = ""
}

struct CodableCrate: Record, Equatable {
    typealias PrimaryKey = UUID
    var id: UUID
    var label: String
    var grade: CrateGrade
    var seal: CrateSeal?
    var weight: Float
    var ratio: Float?
    var stack: Int8
    var serial: UInt32?
    var packed: Date
    var inspected: Date?
    var manifest: Data
    var stamp: Data?
    var fragile: Bool
    var checked: Bool?
    var sealedBy: UUID?
    var slots: [CodableSlot]

    static let entity = Entity<CodableCrate>(
        "codable_crates", primaryKey: "id", \.id,
        fields: [
            Field("label", \.label), Field("grade", \.grade), Field("seal", \.seal), Field("weight", \.weight),
            Field("ratio", \.ratio), Field("stack", \.stack), Field("serial", \.serial), Field("packed", \.packed),
            Field("inspected", \.inspected), Field("manifest", \.manifest), Field("stamp", \.stamp),
            Field("fragile", \.fragile), Field("checked", \.checked), Field("sealedBy", \.sealedBy),
        ],
        relations: [Relation("slots", \.slots, foreignKey: "crateId", \CodableSlot.crateId)])
}

struct CodableSlot: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var crateId: UUID
    var position: Int16
    var grade: CrateGrade?
    var note: String?
    var at: Date?

    static let entity = Entity<CodableSlot>(
        "codable_slots", primaryKey: "id", \.id,
        fields: [
            Field("crateId", \.crateId), Field("position", \.position), Field("grade", \.grade), Field("note", \.note),
            Field("at", \.at),
        ],
        ownedBy: CodableCrate.self)
}

/// A stored integer as wide as `Int64`.
struct WideCount: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var count: Int64

    static let entity = Entity<WideCount>("codable_counts", primaryKey: "id", \.id, fields: [Field("count", \.count)])
}

/// The same entity read as `Int8`.
struct NarrowCount: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var count: Int8

    static let entity = Entity<NarrowCount>("codable_counts", primaryKey: "id", \.id, fields: [Field("count", \.count)])
}

@Suite("Conformance: Codable-only records of every value type, on every backend")
struct CodableShapesTests {
    /// `count` crates drawn from `seed`, with 0 to 4 slots each (ids rising
    /// within a crate, as a read orders them), every optional sometimes nil.
    static func crates(count: Int, seed: UInt64) -> [CodableCrate] {
        var random = TestRandom(seed: seed)
        var slotId: Int64 = 0
        func date() -> Date { Date(timeIntervalSinceReferenceDate: Double(random.below(4_000_000_000_000) - 2_000_000_000_000) / 1000) }
        func bytes(_ count: Int) -> Data { Data((0..<count).map { _ in UInt8(random.below(256)) }) }
        func uuid() -> UUID {
            let a = random.next(), b = random.next()
            return UUID(uuid: (
                UInt8(truncatingIfNeeded: a), UInt8(truncatingIfNeeded: a >> 8), UInt8(truncatingIfNeeded: a >> 16),
                UInt8(truncatingIfNeeded: a >> 24), UInt8(truncatingIfNeeded: a >> 32), UInt8(truncatingIfNeeded: a >> 40),
                UInt8(truncatingIfNeeded: a >> 48), UInt8(truncatingIfNeeded: a >> 56), UInt8(truncatingIfNeeded: b),
                UInt8(truncatingIfNeeded: b >> 8), UInt8(truncatingIfNeeded: b >> 16), UInt8(truncatingIfNeeded: b >> 24),
                UInt8(truncatingIfNeeded: b >> 32), UInt8(truncatingIfNeeded: b >> 40), UInt8(truncatingIfNeeded: b >> 48),
                UInt8(truncatingIfNeeded: b >> 56)))
        }
        return (0..<count).map { index in
            let id = uuid()
            let slots = (0..<random.below(5)).map { _ -> CodableSlot in
                slotId += 1 + Int64(random.below(3))
                return CodableSlot(
                    id: slotId, crateId: id, position: random.pick([Int16.min, -1, 0, 9, Int16.max]),
                    grade: random.below(3) == 0 ? nil : random.pick(CrateGrade.allCases),
                    note: random.below(3) == 0 ? nil : random.pick(["", "top", "Zoë", "a\u{1}b", "🚀"]),
                    at: random.below(2) == 0 ? nil : date())
            }
            return CodableCrate(
                id: id, label: "crate \(index)", grade: random.pick(CrateGrade.allCases),
                seal: random.below(3) == 0 ? nil : random.pick(CrateSeal.allCases),
                weight: random.pick([Float(0), -0.5, 1.25, Float.greatestFiniteMagnitude, -Float.leastNonzeroMagnitude, 3.1415927]),
                ratio: random.below(2) == 0 ? nil : Float(random.below(1000)) / 8,
                stack: random.pick([Int8.min, -1, 0, 1, Int8.max]),
                serial: random.below(3) == 0 ? nil : random.pick([0, 1, UInt32.max, 65_537]),
                packed: date(), inspected: random.below(2) == 0 ? nil : date(),
                manifest: bytes(random.below(40)), stamp: random.below(2) == 0 ? nil : bytes(random.below(5)),
                fragile: random.below(2) == 0, checked: random.below(3) == 0 ? nil : random.below(2) == 0,
                sealedBy: random.below(2) == 0 ? nil : uuid(), slots: slots)
        }
    }

    static func byKey(_ crates: [CodableCrate]) -> [CodableCrate] {
        crates.sorted { $0.id.uuidString < $1.id.uuidString }
    }

    @Test("written, rewritten and read back as they were", arguments: allBackends)
    func roundTrip(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let written = Self.crates(count: 40, seed: 0x5EED_C0DE)
        try withOpened(backend, at: directory.url) { try $0.anyStorage(for: CodableCrate.self).persist(written) }
        var changed = written
        for index in changed.indices where index % 3 == 0 {
            changed[index].seal = nil
            changed[index].inspected = nil
            changed[index].stamp = nil
            changed[index].serial = changed[index].serial.map { $0 / 2 }
            if !changed[index].slots.isEmpty { changed[index].slots.removeFirst() }
            for slot in changed[index].slots.indices { changed[index].slots[slot].note = nil }
        }
        try withOpened(backend, at: directory.url) { store in
            let crates = try store.anyStorage(for: CodableCrate.self)
            let read = try crates.readAll()
            #expect(Self.byKey(read) == Self.byKey(written))
            try crates.persist(changed.enumerated().filter { $0.offset % 3 == 0 }.map(\.element))
        }
        try withOpened(backend, at: directory.url) { store in
            let crates = try store.anyStorage(for: CodableCrate.self)
            #expect(Self.byKey(try crates.readAll()) == Self.byKey(changed))
            let some = [changed[3].id, changed[7].id]
            #expect(try crates.read(primaryKeys: some) == [changed[3], changed[7]])
            #expect(try store.anyStorage(for: CodableSlot.self).count() == changed.map(\.slots.count).reduce(0, +))
        }
    }

    @Test("a stored integer that does not fit the record's type is .decoding, and kept", arguments: allBackends)
    func integerOutOfRange(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let counts = [WideCount(id: 1, count: 127), WideCount(id: 2, count: 300), WideCount(id: 3, count: -128)]
        try withOpened(backend, at: directory.url) { try $0.anyStorage(for: WideCount.self).persist(counts) }
        let error = try withOpened(backend, at: directory.url) { store in
            expectStorageError { _ = try store.anyStorage(for: NarrowCount.self).readAll() }
        }
        #expect(error?.kind == .decoding, "\(String(describing: error))")
        #expect(error?.entity == "codable_counts")
        let kept = try withOpened(backend, at: directory.url) { try $0.anyStorage(for: WideCount.self).readAll() }
        #expect(kept.sorted { $0.id < $1.id } == counts)
    }
}
