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

// MARK: - Comparing bit for bit

/// A description of `value` that differs whenever a stored value could: text by
/// its UTF-8 bytes (not Swift's canonical equivalence), reals, floats and dates
/// by their bits, bytes as hex, optionals and arrays element by element. Written
/// into one string (hex digits appended byte by byte), since the trials compare
/// every record they read this way.
func fingerprint(_ value: Any) -> String {
    var out = ""
    out.reserveCapacity(256)
    appendFingerprint(value, to: &out)
    return out
}

private let hexDigits: [Unicode.Scalar] = Array("0123456789abcdef".unicodeScalars)

private func appendHex(_ bytes: some Sequence<UInt8>, to out: inout String) {
    for byte in bytes {
        out.unicodeScalars.append(hexDigits[Int(byte >> 4)])
        out.unicodeScalars.append(hexDigits[Int(byte & 0xF)])
    }
}

private func appendFingerprint(_ value: Any, to out: inout String) {
    switch value {
    case let text as String:
        out += "s["
        appendHex(text.utf8, to: &out)
        out += "]"
        return
    case let real as Double: out += "d\(real.bitPattern)"; return
    case let real as Float: out += "f\(real.bitPattern)"; return
    case let date as Date: out += "t\(date.timeIntervalSinceReferenceDate.bitPattern)"; return
    case let data as Data:
        out += "b["
        appendHex(data, to: &out)
        out += "]"
        return
    case let uuid as UUID: out += "u\(uuid.uuidString)"; return
    case let zone as Zone: out += "z\(zone.rawValue)"; return
    case let grade as Grade: out += "g\(grade.rawValue)"; return
    default: break
    }
    let mirror = Mirror(reflecting: value)
    switch mirror.displayStyle {
    case .optional:
        guard let wrapped = mirror.children.first else {
            out += "nil"
            return
        }
        out += "?"
        appendFingerprint(wrapped.value, to: &out)
    case .collection:
        out += "["
        for (index, child) in mirror.children.enumerated() {
            if index > 0 { out += ";" }
            appendFingerprint(child.value, to: &out)
        }
        out += "]"
    case .struct:
        out += "{"
        for (index, child) in mirror.children.enumerated() {
            if index > 0 { out += "," }
            out += child.label ?? ""
            out += ":"
            appendFingerprint(child.value, to: &out)
        }
        out += "}"
    default:
        out += "\(value)"
    }
}

/// Whether two answers are the same records, bit for bit, in the same order.
func sameBits<T>(_ left: [T], _ right: [T]) -> Bool {
    left.count == right.count && zip(left, right).allSatisfy { fingerprint($0) == fingerprint($1) }
}

/// Where two answers first differ, for a failure message.
func firstDifference<T>(_ got: [T], _ expected: [T]) -> String {
    if got.count != expected.count { return "\(got.count) records instead of \(expected.count)" }
    for (index, (left, right)) in zip(got, expected).enumerated() where fingerprint(left) != fingerprint(right) {
        return "record \(index): got \(left), expected \(right)"
    }
    return "none"
}
