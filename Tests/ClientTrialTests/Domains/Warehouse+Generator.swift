import DAOCore
import Foundation
import TestSupport

/// A seeded generator of warehouse trees and of queries over them, drawing
/// awkward values on purpose: extreme integers of every width, infinities
/// and subnormals, dates far in the past and future, NUL, emoji, NFC and NFD
/// spellings, very long text, UUID-like keys in both cases.
struct WarehouseGenerator {
    var random: TestRandom
    /// Whether every text is NFC (the property list refuses a second spelling).
    let oneSpelling: Bool
    private var nextTag: Int64 = 1
    /// Every key handed out, so that no two records share one.
    private var used = Set<[UInt8]>()
    private var usedTags = Set<Int64>()

    init(seed: UInt64, oneSpelling: Bool) {
        random = TestRandom(seed: seed)
        self.oneSpelling = oneSpelling
    }

    mutating func below(_ bound: Int) -> Int { random.below(bound) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func pick<T>(_ values: [T]) -> T { random.pick(values) }
    mutating func maybe<T>(_ value: T) -> T? { chance(30) ? nil : value }

    func spelled(_ text: String) -> String { oneSpelling ? text.precomposedStringWithCanonicalMapping : text }

    static let shortTexts = [
        "", "a", "A", "b", "z", "Zo\u{EB}", "Zoe\u{308}", "\u{0}", "a\u{0}", "a\u{0}b", "\u{E9}", "e\u{301}", "🧑‍🚀", "日本",
    ]
    static let reals: [Double] = [
        0, 1.5, -1.5, 0.1, .infinity, -.infinity, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, 1e300, -7,
    ]
    static let floats: [Float] = [0, 1.5, -1.5, 0.1, .infinity, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude]
    static let dates: [Date] = [
        .distantPast, .distantFuture, Date(timeIntervalSinceReferenceDate: 0),
        Date(timeIntervalSinceReferenceDate: -.infinity), Date(timeIntervalSinceReferenceDate: .infinity),
        Date(timeIntervalSinceReferenceDate: -1e15), Date(timeIntervalSinceReferenceDate: 1e15),
        Date(timeIntervalSinceReferenceDate: 0.000_001), Date(timeIntervalSince1970: 0),
    ]
    static let int64s: [Int64] = [.min, .max, 0, -1, 1, Int64(Int32.max) + 1, -(1 << 53) - 1]

    mutating func text() -> String { spelled(pick(Self.shortTexts)) }
    mutating func longText() -> String {
        spelled(pick([String(repeating: "n\u{303}", count: 3000), String(repeating: "\u{0}🚀", count: 2000), "x"]))
    }

    /// A UUID-like key: 32 hex digits in the UUID form, upper or lower case
    /// (two different keys), now and then with an NFD suffix.
    mutating func uuidKey() -> String {
        while true {
            let key = anyUUIDKey()
            if used.insert(Array(key.utf8)).inserted { return key }
        }
    }

    private mutating func anyUUIDKey() -> String {
        var bytes = [UInt8]()
        for _ in 0..<2 { withUnsafeBytes(of: random.next()) { bytes += $0 } }
        let uuid = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                               bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        switch below(6) {
        case 0: return uuid.uuidString.lowercased()
        case 1: return spelled(uuid.uuidString + "-Zoe\u{308}")
        default: return uuid.uuidString
        }
    }

    mutating func uuid() -> UUID {
        pick([
            UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
            UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)),
            UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)),
        ])
    }

    mutating func tag(item: String) -> TagRecord {
        nextTag += 1
        var id = chance(10) ? pick(Self.int64s) &+ nextTag : nextTag * (chance(50) ? 1 : -1)
        while !usedTags.insert(id).inserted { id &+= 1 }
        return TagRecord(id: id, itemId: item, label: text(), score: maybe(pick(Self.reals)))
    }

    mutating func item(aisle: String) -> ItemRecord {
        let id = uuidKey()
        var tags: [TagRecord] = []
        for _ in 0..<below(4) { tags.append(tag(item: id)) }
        var seen = Set<Int64>()
        tags = tags.filter { seen.insert($0.id).inserted }.sorted { $0.id < $1.id }
        return ItemRecord(
            id: id, aisleId: aisle, sku: text(), quantity: pick(Self.int64s), weight: maybe(pick(Self.reals)),
            price: maybe(pick(Self.floats)), small: maybe(pick([Int8.min, .max, 0, -1])),
            medium: maybe(pick([Int16.min, .max, 0])), wide: maybe(pick([UInt32.max, 0, 1])),
            count: maybe(pick([Int.min, .max, 0])), level: maybe(pick([Int32.min, .max, 3])),
            big: maybe(pick(Self.int64s)), ratio: pick(Self.reals), expires: maybe(pick(Self.dates)),
            photo: maybe(pick([Data(), Data([0]), Data([0, 255, 0]), Data(repeating: 7, count: 70_000)])),
            fragile: maybe(chance(50)), note: maybe(chance(20) ? longText() : text()), ref: maybe(uuid()),
            grade: maybe(pick(Grade.allCases)), tags: tags)
    }

    mutating func aisle(warehouse: String, index: Int) -> AisleRecord {
        var id = ""
        repeat {
            id = spelled(pick(["A", "a", "Zo\u{EB}", "Zoe\u{308}", "\u{0}", "🧑‍🚀"]) + "-\(warehouse.prefix(4))-\(index)-\(below(1000))")
        } while !used.insert(Array(id.utf8)).inserted
        let items = (0..<below(5)).map { _ in item(aisle: id) }.sorted { textBefore($0.id, $1.id) }
        return AisleRecord(
            id: id, warehouseCode: warehouse, number: pick([Int32.min, .max, 0, 1, 2]), zone: maybe(pick(Zone.allCases)),
            items: items)
    }

    mutating func warehouse() -> WarehouseRecord {
        let code = uuidKey()
        let aisles = (0..<below(4)).map { aisle(warehouse: code, index: $0) }.sorted { textBefore($0.id, $1.id) }
        return WarehouseRecord(
            code: code, name: chance(20) ? longText() : text(), region: maybe(text()), opened: pick(Self.dates), aisles: aisles)
    }
}

