import DAOCore
import DAOMacros
import Foundation
import LMDBStorage
import TestSupport
import Testing

// Migrations: each domain's next release, refused without its migration
// with nothing lost, and migrated with every level read back converted;
// files the store did not write stay as they were (MigrationTests+Clinic.swift
// holds the clinic's second and third releases).

@Suite("Migrations: refused without them, nothing lost; migrated, everything converted")
struct MigrationTests {}

extension MigrationTests {
    @Suite("Client trial, library: a lightweight migration")
    struct LibraryDomain {
        @Test("a lightweight migration adds an optional field; the old type is refused after it", arguments: localBackends)
        func migration(backend: TestBackend) throws {
            let directory = try TemporaryDirectory()
            try withLibrary(backend, in: directory.url) { daos, _ in try daos.libraries.persist(Sample.corpus()) }
            // Without the migration, the new type is refused, naming the field.
            do {
                let store = try backend.open(directory.url)
                defer { try? store.close() }  // test clean-up
                let error = expectStorageError(.schemaMismatch) { _ = try store.anyStorage(for: LibraryRecordV2.self) }
                #expect(error?.message.contains("website") == true)
            }
            var migrator = Migrator()
            migrator.register("v2: libraries have a website", [.lightweight(to: LibraryRecordV2.self)])
            let store = try backend.open(directory.url)
            #expect(try migrator.migrate(store) == ["v2: libraries have a website"])
            let v2 = try store.anyStorage(for: LibraryRecordV2.self)
            let read = try v2.readAll()
            #expect(read.map(\.code) == Sample.corpus().map(\.uniqueId).sorted())
            #expect(read.allSatisfy { $0.website == nil })
            #expect(read.map { $0.shelves.map(ShelfTranslator().plain(from:)) } == Sample.corpus().sorted { $0.uniqueId < $1.uniqueId }.map(\.shelves))
            var central = try #require(read.first { $0.code == "central" })
            central.website = "https://example.org/ö"
            try v2.persist(central)
            #expect(try v2.read(where: #Predicate { $0.website != nil }).map(\.code) == ["central"])
            try store.close()

            let reopened = try backend.open(directory.url)
            defer { try? reopened.close() }  // test clean-up
            #expect(try migrator.migrate(reopened) == [])
            #expect(try Migrator.state(of: reopened).applied == ["v2: libraries have a website"])
            expectStorageError(.schemaMismatch) { _ = try reopened.anyStorage(for: LibraryRecord.self) }
            #expect(try reopened.anyStorage(for: LibraryRecordV2.self).read(primaryKey: "central")?.website == "https://example.org/ö")
        }
    }
}

/// Shipments in a second version: a carrier, added last.
@StoredRecord(
    "lg_shipments", primaryKey: "code",
    indexes: [Index("lg_shipments_by_destination_due", on: ["destination", "due"])])
struct ShipmentRecordV2: Equatable {
    var code: String
    var destination: String
    var due: Date?
    var priority: Int8
    var insured: Bool?
    var declaredValue: Double?
    var createdAt: Date
    var carrier: String?
    @Children(foreignKey: "shipmentCode") var parcels: [ParcelRecord]
}

/// Shipments with a field removed (`insured`).
@StoredRecord(
    "lg_shipments", primaryKey: "code",
    indexes: [Index("lg_shipments_by_destination_due", on: ["destination", "due"])])
struct ShipmentRecordDropped: Equatable {
    var code: String
    var destination: String
    var due: Date?
    var priority: Int8
    var declaredValue: Double?
    var createdAt: Date
    @Children(foreignKey: "shipmentCode") var parcels: [ParcelRecord]
}

/// Files of other programs in the store's directory, named like the store's own.
let logisticsForeignFiles: [String: Data] = [
    "notes.txt": Data("keep me".utf8),
    "lg_shipments-1.json.bak": Data("{\"not\":\"ours\"}".utf8),
    "lg_shipments-7.json": Data("{\"entity\":\"somebody else's\"}".utf8),
    "store.sqlite.backup": Data(repeating: 7, count: 100),
    "data.mdb.old": Data(repeating: 9, count: 100),
    ".manifest.json.1.tmp.keep": Data("x".utf8),
]

extension MigrationTests {
    @Suite("Client trial, logistics: a lightweight migration")
    struct LogisticsDomain {
        @Test("a lightweight migration adds a field; every value of the three levels stays, others' files too", arguments: localBackends)
        func migration(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("logistics-migration")
            try plant(logisticsForeignFiles, in: directory.url)
            let model = try seededLogistics(backend, in: directory.url, calls: 12)
            // Before the migration the new type is refused, and nothing changes.
            let before = try fileContents(directory.url).filter { $0.key != "lock.mdb" }
            do {
                let store = try backend.open(directory.url)
                defer { closeRecordingFailure(store, backend) }
                let error = expectStorageError(.schemaMismatch, "v2 before the migration on \(backend.name)") {
                    _ = try store.anyStorage(for: ShipmentRecordV2.self)
                }
                #expect(error?.message.contains("carrier") == true, "\(String(describing: error))")
                expectStorageError(.schemaMismatch, "a dropped field on \(backend.name)") {
                    _ = try store.anyStorage(for: ShipmentRecordDropped.self)
                }
            }
            #expect(try fileContents(directory.url).filter { $0.key != "lock.mdb" } == before, "\(backend.name): a refusal wrote")
            do {
                let store = try backend.open(directory.url)
                defer { closeRecordingFailure(store, backend) }
                var migrator = Migrator()
                migrator.register("v2: shipments have a carrier", [.lightweight(to: ShipmentRecordV2.self)])
                #expect(try migrator.migrate(store) == ["v2: shipments have a carrier"])
                let shipments = try store.anyStorage(for: ShipmentRecordV2.self).readAll()
                let want = model.shipmentList.map(ShipmentTranslator().record(from:))
                #expect(shipments.map(\.carrier) == Array(repeating: nil, count: want.count))
                #expect(sameBits(shipments.map(\.parcels), want.map(\.parcels)), "\(backend.name): the parcels after the migration")
                #expect(shipments.map(\.code) == want.map(\.code) && shipments.map(\.declaredValue) == want.map(\.declaredValue))
                // The child types name the first version as their owner
                // (`ownedBy:`), so they are reached through the new one.
            }
            expectUntouched(logisticsForeignFiles, in: directory.url, backend.name)
        }
    }
}

// The warehouse domain's second release: the third level renamed (items →
// goods, with its own children and an owner that has an owner), a field that
// an index includes retyped (aisle numbers become optional reals), and a
// field with a default added at the fourth level. Opened without the
// migration, the store refuses the new types and loses nothing; migrated,
// every record of every level reads back as the old one converted.

@StoredRecord("wh_warehouses", primaryKey: "code", indexes: [Index("wh_warehouses_by_region_opened", on: ["region", "opened"])])
struct WarehouseRecordV2: Equatable {
    var code: String
    var name: String
    var region: String?
    var opened: Date
    @Children(foreignKey: "warehouseCode") var aisles: [AisleRecordV2]
}

@StoredRecord(
    "wh_aisles", indexes: [Index("wh_aisles_by_warehouse_zone_number", on: ["warehouseCode", "zone", "number"])],
    ownedBy: WarehouseRecordV2.self)
struct AisleRecordV2: Equatable {
    var id: String
    var warehouseCode: String
    var number: Double?
    var zone: Zone?
    @Children(foreignKey: "aisleId") var items: [GoodRecordV2]
}

@StoredRecord(
    "wh_goods",
    indexes: [
        Index("wh_items_by_aisle_grade_expires", on: ["aisleId", "grade", "expires"]),
        Index("wh_items_by_sku_weight", on: ["sku", "weight"]),
        Index("wh_items_by_ref", on: ["ref"]),
    ],
    ownedBy: AisleRecordV2.self)
struct GoodRecordV2: Equatable {
    var id: String
    var aisleId: String
    var sku: String
    var quantity: Int64
    var weight: Double?
    var price: Float?
    var small: Int8?
    var medium: Int16?
    var wide: UInt32?
    var count: Int?
    var level: Int32?
    var big: Int64?
    var ratio: Double
    var expires: Date?
    var photo: Data?
    var fragile: Bool?
    var note: String?
    var ref: UUID?
    var grade: Grade?
    @Children(foreignKey: "itemId") var tags: [TagRecordV2]
}

@StoredRecord("wh_tags", indexes: [Index("wh_tags_by_label_score", on: ["label", "score"])], ownedBy: GoodRecordV2.self)
struct TagRecordV2: Equatable {
    var id: Int64
    var itemId: String
    var label: String
    var score: Double?
    var origin: String
}

extension WarehouseRecord {
    /// This warehouse as the second release reads it after the migration.
    var migrated: WarehouseRecordV2 {
        WarehouseRecordV2(
            code: code, name: name, region: region, opened: opened,
            aisles: aisles.map { aisle in
                AisleRecordV2(
                    id: aisle.id, warehouseCode: aisle.warehouseCode, number: aisle.number == 0 ? nil : Double(aisle.number),
                    zone: aisle.zone,
                    items: aisle.items.map { item in
                        GoodRecordV2(
                            id: item.id, aisleId: item.aisleId, sku: item.sku, quantity: item.quantity, weight: item.weight,
                            price: item.price, small: item.small, medium: item.medium, wide: item.wide, count: item.count,
                            level: item.level, big: item.big, ratio: item.ratio, expires: item.expires, photo: item.photo,
                            fragile: item.fragile, note: item.note, ref: item.ref, grade: item.grade,
                            tags: item.tags.map {
                                TagRecordV2(id: $0.id, itemId: $0.itemId, label: $0.label, score: $0.score, origin: "n\u{0}🚀")
                            })
                    })
            })
    }
}

extension MigrationTests {
    @Suite("Client trial: the warehouse domain's second release, with and without its migration")
    struct WarehouseDomain {
        static let release2 = Migration("2: items are goods, aisle numbers are optional reals, tags have an origin", [
            .renameEntity("wh_items", to: "wh_goods"),
            .changeField("number", in: "wh_aisles", to: .real, optional: true) { value in
                guard case .integer(let number) = value else { return value }
                return number == 0 ? .null : .real(Double(number))
            },
            .addField("origin", to: "wh_tags", type: .text, optional: false, default: .text("n\u{0}🚀")),
        ])

        @Test("refused without the migration, nothing lost; migrated, every level reads back converted", arguments: localBackends)
        func secondRelease(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("trial-wh-migrate")
            var generator = WarehouseGenerator(seed: 77, oneSpelling: backend.name == "plist")
            var model = WarehouseModel()
            for warehouse in (0..<8).map({ _ in generator.warehouse() }) { model.persist(warehouse) }
            let old = model.warehouseList
            #expect(old.flatMap(\.aisles).flatMap(\.items).flatMap(\.tags).count > 10)
            do {
                let store = try backend.open(directory.url)
                try store.anyStorage(for: WarehouseRecord.self).persist(old)
                try store.close()
            }
            // The second release's types without the migration: refused, nothing read or written.
            do {
                let store = try backend.open(directory.url)
                expectStorageError(.schemaMismatch) { _ = try store.anyStorage(for: WarehouseRecordV2.self) }
                expectStorageError(.schemaMismatch) { _ = try store.anyStorage(for: TagRecordV2.self) }
                let read = try store.anyStorage(for: WarehouseRecord.self).readAll()
                #expect(sameBits(read, old), "\(firstDifference(read, old))")
                try store.close()
            }
            var migrator = Migrator()
            migrator.register(Self.release2.name, Self.release2.steps)
            do {
                let store = try backend.open(directory.url)
                #expect(try migrator.migrate(store) == [Self.release2.name])
                try store.close()
            }
            let expected = old.map(\.migrated)
            let store = try backend.open(directory.url)
            defer {
                do { try store.close() } catch { Issue.record("closing failed: \(error)") }
            }
            expectStorageError(.schemaMismatch) { _ = try store.anyStorage(for: WarehouseRecord.self) }
            let warehouses = try store.anyStorage(for: WarehouseRecordV2.self)
            let read = try warehouses.readAll()
            #expect(sameBits(read, expected), "\(firstDifference(read, expected))")
            let goods = try store.anyStorage(for: GoodRecordV2.self)
            let expectedGoods = expected.flatMap(\.aisles).flatMap(\.items).sorted { textBefore($0.id, $1.id) }
            #expect(sameBits(try goods.readAll(), expectedGoods))
            // The retyped field through its index, nils included.
            let aisles = try store.anyStorage(for: AisleRecordV2.self)
            for aisle in expected.flatMap(\.aisles).prefix(6) {
                let code = aisle.warehouseCode, zone = aisle.zone, number = aisle.number
                let got = try aisles.read(where: #Predicate { $0.warehouseCode == code && $0.zone == zone && $0.number == number })
                let want = expected.flatMap(\.aisles).filter {
                    sameText($0.warehouseCode, code) && $0.zone == zone && $0.number == number
                }.sorted { textBefore($0.id, $1.id) }
                #expect(sameBits(got, want), "\(firstDifference(got, want))")
            }
            // Tags through the index of the renamed parent's children, and written again.
            let tags = try store.anyStorage(for: TagRecordV2.self)
            let allTags = expected.flatMap(\.aisles).flatMap(\.items).flatMap(\.tags).sorted { $0.id < $1.id }
            #expect(sameBits(try tags.readAll(), allTags))
            if var tag = allTags.first {
                tag.origin = ""
                try tags.persist(tag)
                #expect(try tags.read(primaryKey: tag.id)?.origin == "")
            }
        }
    }
}
