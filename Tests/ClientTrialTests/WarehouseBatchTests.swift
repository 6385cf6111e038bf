import DAOCore
import Foundation
import TestSupport
import Testing

// One batch that names a key twice, at each level of the warehouse domain:
// docs/SEMANTICS.md says the last wins, and a child held by another parent
// moves to the parent that holds it now. Every backend must give the same
// answer, the documented one. And the calls that take lists of keys, with a
// key given twice, a missing one and NFC/NFD spellings.

@Suite("Client trial: batches that name a key twice, on every backend")
struct WarehouseBatchTests {
    static func item(_ id: String, aisle: String, sku: String, tags: [TagRecord] = []) -> ItemRecord {
        ItemRecord(
            id: id, aisleId: aisle, sku: sku, quantity: 1, weight: nil, price: nil, small: nil, medium: nil, wide: nil,
            count: nil, level: nil, big: nil, ratio: 0, expires: nil, photo: nil, fragile: nil, note: nil, ref: nil,
            grade: nil, tags: tags)
    }

    static func aisle(_ id: String, warehouse: String, number: Int32 = 0, items: [ItemRecord] = []) -> AisleRecord {
        AisleRecord(id: id, warehouseCode: warehouse, number: number, zone: nil, items: items)
    }

    static func warehouse(_ code: String, name: String = "", aisles: [AisleRecord] = []) -> WarehouseRecord {
        WarehouseRecord(code: code, name: name, region: nil, opened: Date(timeIntervalSinceReferenceDate: 0), aisles: aisles)
    }

    @Test("the last record with a key wins, at every level, and a child held twice ends under the last parent",
          arguments: localBackends)
    func lastWins(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("trial-wh-batch")
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        let storages = try WarehouseStorages(store)
        // Two warehouses of one code in one batch: the second, with its aisles, wins.
        try storages.warehouses.persist([
            Self.warehouse("W", name: "first", aisles: [Self.aisle("A1", warehouse: "W", items: [Self.item("X", aisle: "A1", sku: "x1")])]),
            Self.warehouse("W", name: "second", aisles: [Self.aisle("A2", warehouse: "W")]),
        ])
        #expect(try storages.warehouses.readAll().map(\.name) == ["second"])
        #expect(try storages.aisles.readAll().map(\.id) == ["A2"])
        #expect(try storages.items.count() == 0)

        // One item held by two aisles of one warehouse: it ends under the last.
        try storages.warehouses.persist(Self.warehouse("W", name: "third", aisles: [
            Self.aisle("A1", warehouse: "W", items: [Self.item("X", aisle: "A1", sku: "in A1", tags: [
                TagRecord(id: 1, itemId: "X", label: "one", score: nil),
            ])]),
            Self.aisle("A2", warehouse: "W", items: [Self.item("X", aisle: "A2", sku: "in A2", tags: [
                TagRecord(id: 2, itemId: "X", label: "two", score: 2),
            ])]),
        ]))
        let items = try storages.items.readAll()
        #expect(items.map { "\($0.id) \($0.aisleId) \($0.sku) \($0.tags.map(\.id))" } == ["X A2 in A2 [2]"])
        #expect(try storages.tags.readAll().map(\.id) == [2])
        #expect(try storages.aisles.readAll().map { "\($0.id):\($0.items.map(\.id).joined())" } == ["A1:", "A2:X"])

        // Through the items' own storage: the same item twice, in two aisles.
        try storages.items.persist([
            Self.item("Y", aisle: "A1", sku: "y1", tags: [TagRecord(id: 3, itemId: "Y", label: "three", score: nil)]),
            Self.item("Y", aisle: "A2", sku: "y2"),
        ])
        #expect(try storages.items.read(primaryKey: "Y").map { "\($0.aisleId) \($0.sku) \($0.tags.count)" } == "A2 y2 0")
        #expect(try storages.tags.read(primaryKey: 3) == nil)

        // One tag held by two items in one batch of items.
        try storages.items.persist([
            Self.item("X", aisle: "A2", sku: "x", tags: [TagRecord(id: 9, itemId: "X", label: "on X", score: nil)]),
            Self.item("Y", aisle: "A2", sku: "y", tags: [TagRecord(id: 9, itemId: "Y", label: "on Y", score: 1)]),
        ])
        #expect(try storages.tags.readAll().map { "\($0.id) \($0.itemId) \($0.label)" } == ["9 Y on Y"])
        #expect(try storages.items.readAll().map { "\($0.id):\($0.tags.map(\.id))" } == ["X:[]", "Y:[9]"])
    }

    @Test("keys given twice, missing or in another spelling: reads give each as often as asked, erases count records",
          arguments: localBackends)
    func keyLists(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("trial-wh-keys")
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        let storages = try WarehouseStorages(store)
        let nfc = "Zo\u{EB}", nfd = "Zoe\u{308}"
        // The property list keeps one spelling of canonically equivalent text.
        let codes = backend.name == "plist" ? ["a", nfc, "b"] : ["a", nfc, nfd, "b"]
        try storages.warehouses.persist(codes.map {
            Self.warehouse($0, aisles: [Self.aisle("aisle of " + $0, warehouse: $0, items: [Self.item("item of " + $0, aisle: "aisle of " + $0, sku: "s")])])
        })
        let asked = ["b", nfc, "missing", "b", nfd, nfc]
        let read = try storages.warehouses.read(primaryKeys: asked).map { textKey($0.code) }
        let expected = asked.filter { key in codes.contains { textKey($0) == textKey(key) } }.map(textKey)
        #expect(read == expected)
        let erased = try storages.warehouses.erase(primaryKeys: ["b", "b", nfc, "missing", nfc])
        #expect(erased == 2, "erase by keys with one given twice counts records, not keys")
        #expect(try storages.warehouses.readAll().map { textKey($0.code) } == codes.map(textKey).filter { $0 != textKey("b") && $0 != textKey(nfc) }.sorted { $0.lexicographicallyPrecedes($1) })
        #expect(try storages.items.count() == codes.count - 2)
        #expect(try storages.aisles.erase(primaryKeys: ["aisle of a", "aisle of a"]) == 1)
        #expect(try storages.items.read(primaryKeys: ["item of a", "item of a"]).isEmpty)
        // Empty lists, and a negative limit.
        try storages.warehouses.persist([])
        #expect(try storages.warehouses.erase(primaryKeys: []) == 0)
        #expect(try storages.warehouses.read(primaryKeys: []).isEmpty)
        #expect(try storages.items.read(Query(limit: 0)).isEmpty)
        expectStorageError(.invalidArgument) { _ = try storages.items.read(Query(limit: -1)) }
        #expect(try storages.warehouses.count() == codes.count - 2)
    }
}
