import CCallgrind
import DAOCore
import FileStorage
import Foundation
import LMDBStorage
import SQLiteStorage

// record-cost: what a record's declaration costs on each adapter (SQLite,
// LMDB, JSON and property-list files). The same three-level inventory (InventoryRecords.swift) declared
// the README way (Codable only), with hand-written FieldwiseRecord code, and
// with @StoredRecord goes through persist, read-all, read-by-id and update on
// a fresh store each. Under callgrind (scripts/record-cost.sh) each
// operation's instructions are collected alone and dumped under the name
// `variant/backend/operation/records`; outside valgrind it prints wall times.
//
//   record-cost [readme|hand|macro …] [warehouses] [shelves per warehouse] [items per shelf]
//
// With variants named, only those run (scripts/record-cost.sh runs each in a process of
// its own, so that what one leaves in the process cannot change another's
// counts: run one after another in one process, the last was up to 2.5%
// cheaper on reads).

let variants = Set(CommandLine.arguments.dropFirst().filter { Int($0) == nil })
let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let warehouses = arguments.count > 0 ? arguments[0] : 10
let shelves = arguments.count > 1 ? arguments[1] : 10
let items = arguments.count > 2 ? arguments[2] : 10
let onValgrind = storage_bench_running_on_valgrind() == 1

struct Shape {
    let warehouses: Int
    let shelves: Int
    let items: Int
    var records: Int { warehouses * (1 + shelves * (1 + items)) }
}

/// Deterministic values of one inventory; `version` changes every non-key field.
struct Values {
    let w: Int, s: Int, i: Int, version: Int
    var code: String { String(format: "WH-%04d", w) }
    var shelfId: String { code + String(format: "/S-%03d", s) }
    var sku: String { shelfId + String(format: "/I-%03d", i) }
    var city: String { "City \(w % 7) v\(version)" }
    var opened: Date { Date(timeIntervalSinceReferenceDate: Double(w) * 86_400.25 + Double(version)) }
    var area: Double { 1000.5 + Double(w) + Double(version) }
    var active: Bool { (w + version) % 2 == 0 }
    var logo: Data? { w % 3 == version % 3 ? Data(repeating: UInt8(w & 0xff), count: 16) : nil }
    var aisle: Int64 { Int64(s * 10 + version) }
    var label: String? { s % 2 == version % 2 ? "Aisle \(s) 🧊" : nil }
    var capacity: Double { Double(s) * 12.25 + Double(version) }
    var refrigerated: Bool { (s + version) % 3 == 0 }
    var checkedAt: Date? { s % 2 == 1 ? Date(timeIntervalSinceReferenceDate: Double(s * 3600 + version)) : nil }
    var name: String { "Item \(i) of shelf \(s), v\(version)" }
    var price: Double { Double(i) * 1.5 + Double(version) }
    var weight: Double? { i % 2 == version % 2 ? Double(i) / 4 : nil }
    var stocked: Date { Date(timeIntervalSinceReferenceDate: Double(i * 60 + version)) }
    var perishable: Bool { (i + version) % 4 == 0 }
    var photo: Data? { i % 5 == version % 5 ? Data(repeating: UInt8(i & 0xff), count: 32) : nil }
    var notes: String? { i % 3 == version % 3 ? "note \(i) v\(version)" : nil }
}

func inventory<W>(_ shape: Shape, version: Int, make: (Values, [[Values]]) -> W) -> [W] {
    (0..<shape.warehouses).map { w in
        make(
            Values(w: w, s: 0, i: 0, version: version),
            (0..<shape.shelves).map { s in (0..<shape.items).map { i in Values(w: w, s: s, i: i, version: version) } })
    }
}

func readme(_ shape: Shape, version: Int) -> [ReadmeWarehouse] {
    inventory(shape, version: version) { w, shelves in
        ReadmeWarehouse(
            code: w.code, city: w.city, opened: w.opened, area: w.area, active: w.active, logo: w.logo,
            shelves: shelves.enumerated().map { s, items in
                let v = Values(w: w.w, s: s, i: 0, version: version)
                return ReadmeShelf(
                    id: v.shelfId, warehouseCode: v.code, aisle: v.aisle, label: v.label, capacity: v.capacity,
                    refrigerated: v.refrigerated, checkedAt: v.checkedAt,
                    items: items.map {
                        ReadmeItem(
                            sku: $0.sku, shelfId: $0.shelfId, name: $0.name, price: $0.price, weight: $0.weight,
                            stocked: $0.stocked, perishable: $0.perishable, photo: $0.photo, notes: $0.notes)
                    })
            })
    }
}

func hand(_ shape: Shape, version: Int) -> [HandWarehouse] {
    inventory(shape, version: version) { w, shelves in
        HandWarehouse(
            code: w.code, city: w.city, opened: w.opened, area: w.area, active: w.active, logo: w.logo,
            shelves: shelves.enumerated().map { s, items in
                let v = Values(w: w.w, s: s, i: 0, version: version)
                return HandShelf(
                    id: v.shelfId, warehouseCode: v.code, aisle: v.aisle, label: v.label, capacity: v.capacity,
                    refrigerated: v.refrigerated, checkedAt: v.checkedAt,
                    items: items.map {
                        HandItem(
                            sku: $0.sku, shelfId: $0.shelfId, name: $0.name, price: $0.price, weight: $0.weight,
                            stocked: $0.stocked, perishable: $0.perishable, photo: $0.photo, notes: $0.notes)
                    })
            })
    }
}

func macro(_ shape: Shape, version: Int) -> [MacroWarehouse] {
    inventory(shape, version: version) { w, shelves in
        MacroWarehouse(
            code: w.code, city: w.city, opened: w.opened, area: w.area, active: w.active, logo: w.logo,
            shelves: shelves.enumerated().map { s, items in
                let v = Values(w: w.w, s: s, i: 0, version: version)
                return MacroShelf(
                    id: v.shelfId, warehouseCode: v.code, aisle: v.aisle, label: v.label, capacity: v.capacity,
                    refrigerated: v.refrigerated, checkedAt: v.checkedAt,
                    items: items.map {
                        MacroItem(
                            sku: $0.sku, shelfId: $0.shelfId, name: $0.name, price: $0.price, weight: $0.weight,
                            stocked: $0.stocked, perishable: $0.perishable, photo: $0.photo, notes: $0.notes)
                    })
            })
    }
}

struct MeasureError: Error, CustomStringConvertible {
    let description: String
}

/// Runs `body` with callgrind collecting, then dumps its costs as `name`;
/// outside valgrind prints its wall time.
func measured<T>(_ name: String, records: Int, _ body: () throws -> T) rethrows -> T {
    let start = ContinuousClock.now
    if onValgrind { storage_bench_callgrind_toggle_collect() }
    let result = try body()
    if onValgrind {
        storage_bench_callgrind_toggle_collect()
        storage_bench_callgrind_dump("\(name)/\(records)")
    } else {
        print("\(name): \(records) records, \(ContinuousClock.now - start)")
    }
    return result
}

/// The counts a read must give back, checked so that no variant skips work.
func check<W: Record>(_ read: [W], _ expected: [W], _ what: String) throws where W: Equatable {
    guard read == expected else {
        throw MeasureError(description: "\(what): read \(read.count) warehouses, not the \(expected.count) written")
    }
}

func run<W: Record & Equatable>(
    _ variant: String, _ backend: String, shape: Shape, open: (URL) throws -> any Store,
    make: (Shape, Int) -> [W]
) throws {
    // On an error the process ends and leaves the directory for a look.
    let directory = FileManager.default.temporaryDirectory.appending(path: "record-cost-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let store = try open(directory)
    let storage = try store.anyStorage(for: W.self)
    let first = make(shape, 0)
    let second = make(shape, 1)
    let name = "\(variant)/\(backend)"
    try measured("\(name)/persist", records: shape.records) { try storage.persist(first) }
    let all = try measured("\(name)/read-all", records: shape.records) { try storage.readAll() }
    try check(all, first, "\(name) read-all")
    let keys = first.map(\.primaryKey)
    let byId = try measured("\(name)/read-by-id", records: shape.records) {
        try keys.compactMap { try storage.read(primaryKey: $0) }
    }
    try check(byId, first, "\(name) read-by-id")
    try measured("\(name)/update", records: shape.records) { try storage.persist(second) }
    try check(try storage.readAll(), second, "\(name) update")
    try store.close()
    try FileManager.default.removeItem(at: directory)
}

let shape = Shape(warehouses: warehouses, shelves: shelves, items: items)
let warmUp = Shape(warehouses: 2, shelves: 2, items: 2)
let backends: [(String, (URL) throws -> any Store)] = [
    ("sqlite", { try SQLiteDatabase(path: $0.appending(path: "store.sqlite"), durability: .none) }),
    ("lmdb", { try LMDBEnvironment(directory: $0, durability: .none) }),
    // The file stores read and write every record through `Codable`.
    ("json", { try FileStore(directory: $0, format: .json, durability: .none) }),
    ("plist", { try FileStore(directory: $0, format: .propertyList, durability: .none) }),
]
for (backend, open) in backends {
    for measuring in [false, true] {
        let current = measuring ? shape : warmUp
        let prefix = measuring ? "" : "warm-up/"
        if variants.isEmpty || variants.contains("readme") {
            try run(prefix + "readme", backend, shape: current, open: open, make: readme)
        }
        if variants.isEmpty || variants.contains("hand") {
            try run(prefix + "hand", backend, shape: current, open: open, make: hand)
        }
        if variants.isEmpty || variants.contains("macro") {
            try run(prefix + "macro", backend, shape: current, open: open, make: macro)
        }
    }
}
