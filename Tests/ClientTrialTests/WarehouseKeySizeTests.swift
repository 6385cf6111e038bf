import DAOCore
import Foundation
import TestSupport
import Testing

// LMDB's 511-byte keys, met by keys that are each short enough: a child's
// LMDB key is its parent's key followed by its own, and an index key is its
// fields' values together. Two keys of 300 bytes make one of 600. LMDB must
// refuse such a record with invalidArgument before writing anything (the
// documented limit), never with an engine error or a crash, and the other
// backends store it; every level of the warehouse domain.

@Suite("Client trial: keys short alone, too long together")
struct WarehouseKeySizeTests {
    static let long = String(repeating: "k", count: 300)

    @Test("a child's key under a long parent key, and a composite index over long values", arguments: localBackends)
    func combinedKeys(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("trial-wh-keys")
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        let storages = try WarehouseStorages(store)
        let long = Self.long
        let aisleId = "a" + long, itemId = "i" + long
        let item = WarehouseBatchTests.item(itemId, aisle: aisleId, sku: "s", tags: [TagRecord(id: 1, itemId: itemId, label: "t", score: nil)])
        let deep = WarehouseBatchTests.warehouse(
            "w" + long, aisles: [WarehouseBatchTests.aisle(aisleId, warehouse: "w" + long, items: [item])])
        // Each key alone is 301 bytes; under its parent, 602 and more.
        let indexed = WarehouseBatchTests.item("short", aisle: "short-aisle", sku: long + long.prefix(200), tags: [])
        var withWeight = WarehouseBatchTests.item("short2", aisle: "short-aisle", sku: String(long.prefix(250)) + long.prefix(250), tags: [])
        withWeight.weight = 1.5
        let shortAisle = WarehouseBatchTests.warehouse("short-w", aisles: [
            WarehouseBatchTests.aisle("short-aisle", warehouse: "short-w", items: [indexed, withWeight]),
        ])
        if backend.name == "lmdb" {
            for (name, warehouse) in [("a child under a long parent key", deep), ("a long composite index key", shortAisle)] {
                let error = expectStorageError(.invalidArgument, "\(name)") { try storages.warehouses.persist(warehouse) }
                #expect(error?.operation == .persist, "\(name): \(String(describing: error))")
                #expect(try storages.warehouses.count() == 0, "\(name): nothing is written")
                #expect(try storages.items.count() == 0, "\(name): nothing is written")
            }
        } else {
            try storages.warehouses.persist([deep, shortAisle])
            #expect(sameBits(try storages.warehouses.readAll(), [shortAisle, deep]))
            #expect(try storages.tags.read(primaryKey: 1)?.itemId == itemId)
            let sku = withWeight.sku
            #expect(try storages.items.read(where: #Predicate { $0.sku == sku && $0.weight == 1.5 }).map(\.id) == ["short2"])
        }
    }
}
