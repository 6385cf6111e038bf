import DAOCore
import DAOMacros
import Foundation

// A second outside domain, declared the README's way: a warehouse (a
// UUID-like String key) owns aisles (String keys) own items (UUID-like String
// keys) own tags (Int64 keys): four levels. Items hold an optional of every
// field type the README lists (the integer types, Float, Double, Date, Data,
// Bool, String, UUID, enums); composite indexes lead with, or include,
// optional fields.

/// The zone of an aisle: a String enum.
enum Zone: String, Codable, Sendable, FieldValue, CaseIterable { case cold, dry, hazard, ambient = "" }

/// The grade of an item: an integer enum.
enum Grade: Int16, Codable, Sendable, FieldValue, CaseIterable { case low = -1, mid = 0, high = 7 }

/// A warehouse; owns its aisles. Indexed by an optional region and a date.
@StoredRecord("wh_warehouses", primaryKey: "code", indexes: [Index("wh_warehouses_by_region_opened", on: ["region", "opened"])])
struct WarehouseRecord: Equatable {
    var code: String
    var name: String
    var region: String?
    var opened: Date
    @Children(foreignKey: "warehouseCode") var aisles: [AisleRecord]
}

/// An aisle of a warehouse; owns its items. Indexed by warehouse, an optional enum and a number.
@StoredRecord(
    "wh_aisles", indexes: [Index("wh_aisles_by_warehouse_zone_number", on: ["warehouseCode", "zone", "number"])],
    ownedBy: WarehouseRecord.self)
struct AisleRecord: Equatable {
    var id: String
    var warehouseCode: String
    var number: Int32
    var zone: Zone?
    @Children(foreignKey: "aisleId") var items: [ItemRecord]
}

/// An item in an aisle, with an optional of every field type; owns its tags.
@StoredRecord(
    "wh_items",
    indexes: [
        Index("wh_items_by_aisle_grade_expires", on: ["aisleId", "grade", "expires"]),
        Index("wh_items_by_sku_weight", on: ["sku", "weight"]),
        Index("wh_items_by_ref", on: ["ref"]),
    ],
    ownedBy: AisleRecord.self)
struct ItemRecord: Equatable {
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
    @Children(foreignKey: "itemId") var tags: [TagRecord]
}

/// A tag of an item (Int64 key). Indexed by label and an optional score.
@StoredRecord("wh_tags", indexes: [Index("wh_tags_by_label_score", on: ["label", "score"])], ownedBy: ItemRecord.self)
struct TagRecord: Equatable {
    var id: Int64
    var itemId: String
    var label: String
    var score: Double?
}

// The records are their own plain objects: a client that needs no other shape.
extension WarehouseRecord: Plain { var uniqueId: String { code } }
extension AisleRecord: Plain { var uniqueId: String { id } }
extension ItemRecord: Plain { var uniqueId: String { id } }
extension TagRecord: Plain { var uniqueId: Int64 { id } }

/// The translator of a record that is its own plain object.
struct Same<R: Record & Plain>: Translator {
    func record(from plain: R) -> R { plain }
    func plain(from record: R) -> R { record }
}

/// The four storages of the warehouse domain over one store.
struct WarehouseStorages {
    let warehouses: AnyStorage<WarehouseRecord>
    let aisles: AnyStorage<AisleRecord>
    let items: AnyStorage<ItemRecord>
    let tags: AnyStorage<TagRecord>

    init(_ store: any Store) throws {
        warehouses = try store.anyStorage(for: WarehouseRecord.self)
        aisles = try store.anyStorage(for: AisleRecord.self)
        items = try store.anyStorage(for: ItemRecord.self)
        tags = try store.anyStorage(for: TagRecord.self)
    }
}
