import DAOCore
import Foundation
import TestSupport
import Testing

// Observation across four levels: a change at one end of the tree seen by an
// observer at the other. Warehouses observed while a tag (three levels down)
// changes or moves; tags observed while a warehouse (three levels up) drops
// the aisle that holds them. Every snapshot's changes must turn the previous
// results into the new ones, which must equal a fresh read.

@Suite("Client trial: observing the warehouse domain across four levels")
struct WarehouseObservationTests {
    @Test("changes three levels away arrive, exact against a fresh read", arguments: localBackends)
    func acrossLevels(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory("trial-wh-observe")
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        let warehouses = DAO(storage: try store.anyStorage(for: WarehouseRecord.self), translator: Same<WarehouseRecord>())
        let tags = DAO(storage: try store.anyStorage(for: TagRecord.self), translator: Same<TagRecord>())
        let items = DAO(storage: try store.anyStorage(for: ItemRecord.self), translator: Same<ItemRecord>())
        let item = { (id: String, aisle: String, tags: [TagRecord]) in
            ItemRecord(
                id: id, aisleId: aisle, sku: id, quantity: 0, weight: nil, price: nil, small: nil, medium: nil, wide: nil,
                count: nil, level: nil, big: nil, ratio: 0, expires: nil, photo: nil, fragile: nil, note: nil, ref: nil,
                grade: nil, tags: tags)
        }
        let opened = Date(timeIntervalSinceReferenceDate: 0)
        try await warehouses.persist([
            WarehouseRecord(code: "W1", name: "one", region: nil, opened: opened, aisles: [
                AisleRecord(id: "A1", warehouseCode: "W1", number: 1, zone: .cold, items: [
                    item("I1", "A1", [TagRecord(id: 1, itemId: "I1", label: "red", score: nil)]),
                    item("I2", "A1", [TagRecord(id: 2, itemId: "I2", label: "blue", score: 1)]),
                ]),
                AisleRecord(id: "A2", warehouseCode: "W1", number: 2, zone: nil, items: [
                    item("I3", "A2", [TagRecord(id: 3, itemId: "I3", label: "red", score: 2)]),
                ]),
            ]),
            WarehouseRecord(code: "W2", name: "two", region: "north", opened: opened, aisles: [
                AisleRecord(id: "B1", warehouseCode: "W2", number: 1, zone: .dry, items: [item("J1", "B1", [])]),
            ]),
        ])
        let regionless = #Predicate<WarehouseRecord> { $0.region == nil }
        let red = #Predicate<TagRecord> { $0.label == "red" }
        let sortByScore = [SortDescriptor<TagRecord>(\.score, order: .reverse)]
        let warehouseIterator = warehouses.observe(where: regionless).makeAsyncIterator()
        let tagIterator = tags.observe(where: red, sortedBy: sortByScore).makeAsyncIterator()
        var warehouseRows = try #require(try await nextSnapshot(warehouseIterator)).results
        var tagRows = try #require(try await nextSnapshot(tagIterator)).results
        #expect(warehouseRows.map(\.code) == ["W1"])
        #expect(tagRows.map(\.id) == [3, 1])

        func follow<V: Plain>(_ iterator: Observation<V>.Iterator, _ rows: inout [V], fresh: [V], _ what: String) async throws {
            let snapshot = try #require(try await nextSnapshot(iterator), "\(what)")
            let changes = try #require(snapshot.changes, "\(what): a later snapshot carries its changes")
            #expect(applying(changes, to: rows, from: snapshot.results) == snapshot.results, "\(what): the changes rebuild the results")
            #expect(snapshot.results == fresh, "\(what): the snapshot is the store's state")
            rows = snapshot.results
        }

        // A tag three levels under W1 is relabelled: W1 is modified, and tag 1 leaves the red tags.
        try await tags.persist(TagRecord(id: 1, itemId: "I1", label: "green", score: nil))
        try await follow(warehouseIterator, &warehouseRows, fresh: try warehouses.read(where: regionless), "tag 1 relabelled")
        try await follow(tagIterator, &tagRows, fresh: try tags.read(where: red, sortedBy: sortByScore), "tag 1 relabelled")
        #expect(warehouseRows.first?.aisles.first?.items.first?.tags.first?.label == "green")
        #expect(tagRows.map(\.id) == [3])

        // A red tag moves to an item of W2 (out of the observed warehouses).
        try await tags.persist(TagRecord(id: 3, itemId: "J1", label: "red", score: 5))
        try await follow(warehouseIterator, &warehouseRows, fresh: try warehouses.read(where: regionless), "tag 3 moved to W2")
        try await follow(tagIterator, &tagRows, fresh: try tags.read(where: red, sortedBy: sortByScore), "tag 3 moved to W2")

        // An item of W2 gets a red tag, written through the items' storage.
        try await items.persist(item("J1", "B1", [TagRecord(id: 3, itemId: "J1", label: "red", score: 5),
                                           TagRecord(id: 4, itemId: "J1", label: "red", score: nil)]))
        try await follow(tagIterator, &tagRows, fresh: try tags.read(where: red, sortedBy: sortByScore), "tag 4 added to J1")
        #expect(tagRows.map(\.id) == [3, 4])

        // W2, three levels up, drops aisle B1 (with J1 and its red tags), and loses its region: it enters.
        try await warehouses.persist(WarehouseRecord(code: "W2", name: "two", region: nil, opened: opened, aisles: []))
        try await follow(tagIterator, &tagRows, fresh: try tags.read(where: red, sortedBy: sortByScore), "W2 dropped B1")
        try await follow(warehouseIterator, &warehouseRows, fresh: try warehouses.read(where: regionless), "W2 dropped B1")
        #expect(tagRows.isEmpty)
        #expect(warehouseRows.map(\.code) == ["W1", "W2"])
    }
}
