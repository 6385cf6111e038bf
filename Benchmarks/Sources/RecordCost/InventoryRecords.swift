import DAOCore
import DAOMacros
import Foundation

// One domain of another shape than the benchmark's, declared three ways with
// the same entities: warehouses own shelves own items (three levels), String
// primary keys, optionals, Date/Data/Double/Bool fields, composite indexes.
//
// - `Readme*`: the way the README showed before `@StoredRecord`: `Codable`
//   with a hand-written `Entity`, no positional code (read through
//   `Decodable`, written through `Encodable`).
// - `Hand*`: the same plus a hand-written `FieldwiseRecord` conformance.
// - `Macro*`: `@StoredRecord`, nothing else.

// MARK: - README way

struct ReadmeWarehouse: Record, Equatable {
    typealias PrimaryKey = String
    var code: String
    var city: String
    var opened: Date
    var area: Double
    var active: Bool
    var logo: Data?
    var shelves: [ReadmeShelf]

    static let entity = Entity<ReadmeWarehouse>(
        "warehouses", primaryKey: "code", \.code,
        fields: [
            Field("city", \.city), Field("opened", \.opened), Field("area", \.area), Field("active", \.active),
            Field("logo", \.logo),
        ],
        relations: [Relation("shelves", \.shelves, foreignKey: "warehouseCode", \ReadmeShelf.warehouseCode)])
}

struct ReadmeShelf: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var warehouseCode: String
    var aisle: Int64
    var label: String?
    var capacity: Double
    var refrigerated: Bool
    var checkedAt: Date?
    var items: [ReadmeItem]

    static let entity = Entity<ReadmeShelf>(
        "shelves", primaryKey: "id", \.id,
        fields: [
            Field("warehouseCode", \.warehouseCode), Field("aisle", \.aisle), Field("label", \.label),
            Field("capacity", \.capacity), Field("refrigerated", \.refrigerated), Field("checkedAt", \.checkedAt),
        ],
        indexes: [Index("shelves_by_warehouse_aisle", on: ["warehouseCode", "aisle"])],
        relations: [Relation("items", \.items, foreignKey: "shelfId", \ReadmeItem.shelfId)],
        ownedBy: ReadmeWarehouse.self)
}

struct ReadmeItem: Record, Equatable {
    typealias PrimaryKey = String
    var sku: String
    var shelfId: String
    var name: String
    var price: Double
    var weight: Double?
    var stocked: Date
    var perishable: Bool
    var photo: Data?
    var notes: String?

    static let entity = Entity<ReadmeItem>(
        "items", primaryKey: "sku", \.sku,
        fields: [
            Field("shelfId", \.shelfId), Field("name", \.name), Field("price", \.price), Field("weight", \.weight),
            Field("stocked", \.stocked), Field("perishable", \.perishable), Field("photo", \.photo),
            Field("notes", \.notes),
        ],
        indexes: [Index("items_by_shelf_price", on: ["shelfId", "price"])],
        ownedBy: ReadmeShelf.self)
}

// MARK: - Hand-written positional code

struct HandWarehouse: Record, Equatable, FieldwiseRecord {
    typealias PrimaryKey = String
    var code: String
    var city: String
    var opened: Date
    var area: Double
    var active: Bool
    var logo: Data?
    var shelves: [HandShelf]

    static let entity = Entity<HandWarehouse>(
        "warehouses", primaryKey: "code", \.code,
        fields: [
            Field("city", \.city), Field("opened", \.opened), Field("area", \.area), Field("active", \.active),
            Field("logo", \.logo),
        ],
        relations: [Relation("shelves", \.shelves, foreignKey: "warehouseCode", \HandShelf.warehouseCode)])

    init(code: String, city: String, opened: Date, area: Double, active: Bool, logo: Data?, shelves: [HandShelf]) {
        self.code = code
        self.city = city
        self.opened = opened
        self.area = area
        self.active = active
        self.logo = logo
        self.shelves = shelves
    }

    init(fields: inout some FieldReader) throws {
        self.init(
            code: try fields.decode(), city: try fields.decode(), opened: try fields.decode(), area: try fields.decode(),
            active: try fields.decode(), logo: try fields.decodeIfPresent(), shelves: [])
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(code)
        try fields.encode(city)
        try fields.encode(opened)
        try fields.encode(area)
        try fields.encode(active)
        try fields.encodeIfPresent(logo)
    }
}

struct HandShelf: Record, Equatable, FieldwiseRecord {
    typealias PrimaryKey = String
    var id: String
    var warehouseCode: String
    var aisle: Int64
    var label: String?
    var capacity: Double
    var refrigerated: Bool
    var checkedAt: Date?
    var items: [HandItem]

    static let entity = Entity<HandShelf>(
        "shelves", primaryKey: "id", \.id,
        fields: [
            Field("warehouseCode", \.warehouseCode), Field("aisle", \.aisle), Field("label", \.label),
            Field("capacity", \.capacity), Field("refrigerated", \.refrigerated), Field("checkedAt", \.checkedAt),
        ],
        indexes: [Index("shelves_by_warehouse_aisle", on: ["warehouseCode", "aisle"])],
        relations: [Relation("items", \.items, foreignKey: "shelfId", \HandItem.shelfId)],
        ownedBy: HandWarehouse.self)

    init(
        id: String, warehouseCode: String, aisle: Int64, label: String?, capacity: Double, refrigerated: Bool,
        checkedAt: Date?, items: [HandItem]
    ) {
        self.id = id
        self.warehouseCode = warehouseCode
        self.aisle = aisle
        self.label = label
        self.capacity = capacity
        self.refrigerated = refrigerated
        self.checkedAt = checkedAt
        self.items = items
    }

    init(fields: inout some FieldReader) throws {
        self.init(
            id: try fields.decode(), warehouseCode: try fields.decode(), aisle: try fields.decode(),
            label: try fields.decodeIfPresent(), capacity: try fields.decode(), refrigerated: try fields.decode(),
            checkedAt: try fields.decodeIfPresent(), items: [])
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encode(warehouseCode)
        try fields.encode(aisle)
        try fields.encodeIfPresent(label)
        try fields.encode(capacity)
        try fields.encode(refrigerated)
        try fields.encodeIfPresent(checkedAt)
    }
}

struct HandItem: Record, Equatable, FieldwiseRecord {
    typealias PrimaryKey = String
    var sku: String
    var shelfId: String
    var name: String
    var price: Double
    var weight: Double?
    var stocked: Date
    var perishable: Bool
    var photo: Data?
    var notes: String?

    static let entity = Entity<HandItem>(
        "items", primaryKey: "sku", \.sku,
        fields: [
            Field("shelfId", \.shelfId), Field("name", \.name), Field("price", \.price), Field("weight", \.weight),
            Field("stocked", \.stocked), Field("perishable", \.perishable), Field("photo", \.photo),
            Field("notes", \.notes),
        ],
        indexes: [Index("items_by_shelf_price", on: ["shelfId", "price"])],
        ownedBy: HandShelf.self)

    init(
        sku: String, shelfId: String, name: String, price: Double, weight: Double?, stocked: Date, perishable: Bool,
        photo: Data?, notes: String?
    ) {
        self.sku = sku
        self.shelfId = shelfId
        self.name = name
        self.price = price
        self.weight = weight
        self.stocked = stocked
        self.perishable = perishable
        self.photo = photo
        self.notes = notes
    }

    init(fields: inout some FieldReader) throws {
        self.init(
            sku: try fields.decode(), shelfId: try fields.decode(), name: try fields.decode(), price: try fields.decode(),
            weight: try fields.decodeIfPresent(), stocked: try fields.decode(), perishable: try fields.decode(),
            photo: try fields.decodeIfPresent(), notes: try fields.decodeIfPresent())
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(sku)
        try fields.encode(shelfId)
        try fields.encode(name)
        try fields.encode(price)
        try fields.encodeIfPresent(weight)
        try fields.encode(stocked)
        try fields.encode(perishable)
        try fields.encodeIfPresent(photo)
        try fields.encodeIfPresent(notes)
    }
}

// MARK: - @StoredRecord

@StoredRecord("warehouses", primaryKey: "code")
struct MacroWarehouse: Equatable {
    var code: String
    var city: String
    var opened: Date
    var area: Double
    var active: Bool
    var logo: Data?
    @Children(foreignKey: "warehouseCode") var shelves: [MacroShelf]
}

@StoredRecord(
    "shelves", indexes: [Index("shelves_by_warehouse_aisle", on: ["warehouseCode", "aisle"])],
    ownedBy: MacroWarehouse.self)
struct MacroShelf: Equatable {
    var id: String
    var warehouseCode: String
    var aisle: Int64
    var label: String?
    var capacity: Double
    var refrigerated: Bool
    var checkedAt: Date?
    @Children(foreignKey: "shelfId") var items: [MacroItem]
}

@StoredRecord(
    "items", primaryKey: "sku", indexes: [Index("items_by_shelf_price", on: ["shelfId", "price"])],
    ownedBy: MacroShelf.self)
struct MacroItem: Equatable {
    var sku: String
    var shelfId: String
    var name: String
    var price: Double
    var weight: Double?
    var stocked: Date
    var perishable: Bool
    var photo: Data?
    var notes: String?
}
