import DAOCore
import Foundation
import TestSupport
import Testing

// The warehouse domain (four levels, UUID-like keys, an optional of every
// field type, composite indexes with optional fields) on every backend,
// against the reference model of Domains/Warehouse+Model.swift: generated trees,
// queries, moves and erases, every answer compared bit for bit.
// `WAREHOUSE_TRIAL_ROUNDS` sets the rounds (default 2), `WAREHOUSE_TRIAL_SEED`
// the first seed.

extension RoundTripTests {
    @Suite("Client trial: a four-level warehouse domain against a reference model on every backend")
    struct WarehouseDomain {
        static var rounds: Int { ProcessInfo.processInfo.environment["WAREHOUSE_TRIAL_ROUNDS"].flatMap(Int.init) ?? 2 }

        static var firstSeed: UInt64 {
            ProcessInfo.processInfo.environment["WAREHOUSE_TRIAL_SEED"].flatMap(UInt64.init) ?? 5_150_515
        }

        @Test("generated trees, queries, moves and erases answer as the model does, after reopening too",
              arguments: localBackends)
        func generated(backend: TestBackend) throws {
            var checks = 0
            for round in 0..<Self.rounds {
                checks += try run(backend, seed: Self.firstSeed &+ UInt64(round))
            }
            #expect(checks > 150 * Self.rounds)
        }

        private func run(_ backend: TestBackend, seed: UInt64) throws -> Int {
            let directory = try TemporaryDirectory()
            var generator = WarehouseGenerator(seed: seed, oneSpelling: backend.name == "plist")
            var model = WarehouseModel()
            var checks = 0
            func check(_ condition: Bool, _ what: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
                checks += 1
                #expect(condition, "seed \(seed) on \(backend.name): \(what())", sourceLocation: sourceLocation)
            }
            func checkAll(_ storages: WarehouseStorages, _ what: String) throws {
                let read = (try storages.warehouses.readAll(), try storages.aisles.readAll(), try storages.items.readAll(),
                            try storages.tags.readAll())
                check(sameBits(read.0, model.warehouseList), "warehouses \(what): \(firstDifference(read.0, model.warehouseList))")
                check(sameBits(read.1, model.aisleList), "aisles \(what): \(firstDifference(read.1, model.aisleList))")
                check(sameBits(read.2, model.itemList), "items \(what): \(firstDifference(read.2, model.itemList))")
                check(sameBits(read.3, model.tagList), "tags \(what): \(firstDifference(read.3, model.tagList))")
            }
            func checkQuery<R: Record>(_ storage: AnyStorage<R>, _ query: ReferenceQuery<R>, over records: [R]) throws {
                let expected = query.answer(records)
                let got = try storage.read(query.query)
                check(sameBits(got, expected), "\(query.name): \(firstDifference(got, expected))")
                let count = try storage.count(where: query.query.predicate)
                check(count == records.filter(query.matches).count, "count \(query.name): \(count)")
            }

            try withStorages(backend, directory.url) { storages in
                let first = (0..<6).map { _ in generator.warehouse() }
                try storages.warehouses.persist(first)
                for warehouse in first { model.persist(warehouse) }
                try checkAll(storages, "as persisted")
                for step in 0..<120 {
                    switch generator.below(100) {
                    case 0..<35: try checkQuery(storages.items, generator.itemQuery(model), over: model.itemList)
                    case 35..<45: try checkQuery(storages.tags, generator.tagQuery(model), over: model.tagList)
                    case 45..<52: try checkQuery(storages.aisles, generator.aisleQuery(model), over: model.aisleList)
                    case 52..<58: try checkQuery(storages.warehouses, generator.warehouseQuery(model), over: model.warehouseList)
                    case 58..<66:
                        // A warehouse persisted again: some aisles dropped, one new,
                        // and one taken from another warehouse with its items.
                        guard var warehouse = model.warehouseList.randomElement(using: &generator.random) else { continue }
                        warehouse.aisles = warehouse.aisles.filter { _ in generator.chance(60) }
                        warehouse.aisles.append(generator.aisle(warehouse: warehouse.code, index: step))
                        if var taken = model.aisleList.randomElement(using: &generator.random),
                           !warehouse.aisles.contains(where: { textKey($0.id) == textKey(taken.id) })
                        {
                            taken.warehouseCode = warehouse.code
                            warehouse.aisles.append(taken)
                        }
                        warehouse.aisles.sort { textBefore($0.id, $1.id) }
                        warehouse.region = generator.maybe(generator.text())
                        try storages.warehouses.persist(warehouse)
                        model.persist(warehouse)
                        try checkAll(storages, "after persisting warehouse \(Array(warehouse.code.utf8)) again")
                    case 66..<74:
                        // An item written through its own storage, moved to another aisle with new tags.
                        guard let aisle = model.aisleList.randomElement(using: &generator.random) else { continue }
                        var item = model.itemList.randomElement(using: &generator.random) ?? generator.item(aisle: aisle.id)
                        item.aisleId = aisle.id
                        item.tags = item.tags.filter { _ in generator.chance(50) }
                            + generator.item(aisle: aisle.id).tags.map { var tag = $0; tag.itemId = item.id; return tag }
                        item.tags.sort { $0.id < $1.id }
                        item.weight = generator.maybe(generator.pick(WarehouseGenerator.reals))
                        try storages.items.persist(item)
                        model.persist(item)
                        try checkAll(storages, "after moving an item")
                    case 74..<78:
                        // A tag moved to another item.
                        guard var tag = model.tagList.randomElement(using: &generator.random),
                              let item = model.itemList.randomElement(using: &generator.random) else { continue }
                        tag.itemId = item.id
                        tag.score = generator.maybe(generator.pick(WarehouseGenerator.reals))
                        try storages.tags.persist(tag)
                        model.persist(tag)
                        try checkAll(storages, "after moving a tag")
                    case 78..<84:
                        let query = generator.itemQuery(model)
                        let expected = model.itemList.filter(query.matches)
                        let erased = try storages.items.erase(where: query.query.predicate)
                        for item in expected { model.eraseItem(item.id) }
                        check(erased == expected.count, "erase \(query.name): \(erased) instead of \(expected.count)")
                        try checkAll(storages, "after erasing \(query.name)")
                    case 84..<88:
                        let query = generator.tagQuery(model)
                        let expected = model.tagList.filter(query.matches)
                        let erased = try storages.tags.erase(where: query.query.predicate)
                        for tag in expected { model.tags[tag.id] = nil }
                        check(erased == expected.count, "erase \(query.name): \(erased) instead of \(expected.count)")
                        try checkAll(storages, "after erasing \(query.name)")
                    case 88..<92:
                        let keys = model.aisleList.filter { _ in generator.chance(20) }.map(\.id) + ["no such aisle"]
                        let erased = try storages.aisles.erase(primaryKeys: keys)
                        let expected = keys.filter { model.eraseAisle($0) }.count
                        check(erased == expected, "erase aisles by key: \(erased) instead of \(expected)")
                        try checkAll(storages, "after erasing aisles by key")
                    case 92..<95:
                        guard let warehouse = model.warehouseList.randomElement(using: &generator.random) else { continue }
                        let erased = try storages.warehouses.erase(primaryKey: warehouse.code)
                        check(erased && model.eraseWarehouse(warehouse.code), "erase a warehouse by key")
                        try checkAll(storages, "after erasing a warehouse")
                    default:
                        let more = (0..<2).map { _ in generator.warehouse() }
                        try storages.warehouses.persist(more)
                        for warehouse in more { model.persist(warehouse) }
                        try checkAll(storages, "after adding warehouses")
                    }
                    // Reads by key, of records that exist and of keys in another case or spelling.
                    if let item = model.itemList.randomElement(using: &generator.random) {
                        let got = try storages.items.read(primaryKey: item.id)
                        check(got.map { fingerprint($0) } == fingerprint(item), "item by key")
                        let other = item.id.lowercased() == item.id ? item.id.uppercased() : item.id.lowercased()
                        let expected = model.items[textKey(other)].map { _ in other }
                        check(try storages.items.read(primaryKey: other)?.id == expected, "item by a key in another case")
                    }
                }
            }
            // Reopened: everything as the model has it.
            try withStorages(backend, directory.url) { storages in try checkAll(storages, "after reopening") }
            return checks
        }

        private func withStorages(_ backend: TestBackend, _ directory: URL, _ body: (WarehouseStorages) throws -> Void) throws {
            let store = try backend.open(directory)
            defer {
                do { try store.close() } catch { Issue.record("closing the \(backend.name) store failed: \(error)") }
            }
            try body(try WarehouseStorages(store))
        }
    }
}
