import DAOCore
import Foundation

// A reference model of the warehouse domain written from docs/SEMANTICS.md,
// not from the library: flat tables keyed by the UTF-8 bytes of their keys
// (Swift's String hashing would merge NFC and NFD), the four-level trees
// assembled from them in key order, persist as "holds exactly its children",
// erase cascading down.

/// The UTF-8 bytes of a text: how the store tells keys apart and orders them.
typealias TextKey = [UInt8]

/// `text`'s bytes.
func textKey(_ text: String) -> TextKey { Array(text.utf8) }

/// Whether `left` orders before `right` by Unicode scalars (UTF-8 bytes).
func textBefore(_ left: String, _ right: String) -> Bool { left.utf8.lexicographicallyPrecedes(right.utf8) }

/// The warehouse domain in memory.
struct WarehouseModel {
    var warehouses: [TextKey: WarehouseRecord] = [:]
    var aisles: [TextKey: AisleRecord] = [:]
    var items: [TextKey: ItemRecord] = [:]
    var tags: [Int64: TagRecord] = [:]

    // MARK: Writes

    /// Stores `warehouse`, exactly its aisles, their items and their tags.
    mutating func persist(_ warehouse: WarehouseRecord) {
        var flat = warehouse
        flat.aisles = []
        warehouses[textKey(warehouse.code)] = flat
        replaceChildren(of: warehouse.code, with: warehouse.aisles)
    }

    /// Stores `aisle` (its warehouse exists), exactly its items and their tags.
    mutating func persist(_ aisle: AisleRecord) {
        var flat = aisle
        flat.items = []
        aisles[textKey(aisle.id)] = flat
        replaceChildren(of: aisle.id, with: aisle.items)
    }

    /// Stores `item` (its aisle exists) and exactly its tags.
    mutating func persist(_ item: ItemRecord) {
        var flat = item
        flat.tags = []
        items[textKey(item.id)] = flat
        for tag in tags.values where textKey(tag.itemId) == textKey(item.id) && !item.tags.contains(where: { $0.id == tag.id }) {
            tags[tag.id] = nil
        }
        for tag in item.tags { tags[tag.id] = tag }
    }

    /// Stores `tag` (its item exists).
    mutating func persist(_ tag: TagRecord) { tags[tag.id] = tag }

    private mutating func replaceChildren(of code: String, with given: [AisleRecord]) {
        let kept = Set(given.map { textKey($0.id) })
        for aisle in aisles.values where textKey(aisle.warehouseCode) == textKey(code) && !kept.contains(textKey(aisle.id)) {
            eraseAisle(aisle.id)
        }
        for aisle in given { persist(aisle) }
    }

    private mutating func replaceChildren(of aisleId: String, with given: [ItemRecord]) {
        let kept = Set(given.map { textKey($0.id) })
        for item in items.values where textKey(item.aisleId) == textKey(aisleId) && !kept.contains(textKey(item.id)) {
            eraseItem(item.id)
        }
        for item in given { persist(item) }
    }

    /// Erases a warehouse and everything under it; whether there was one.
    @discardableResult
    mutating func eraseWarehouse(_ code: String) -> Bool {
        guard warehouses.removeValue(forKey: textKey(code)) != nil else { return false }
        for aisle in aisles.values where textKey(aisle.warehouseCode) == textKey(code) { eraseAisle(aisle.id) }
        return true
    }

    /// Erases an aisle and everything under it; whether there was one.
    @discardableResult
    mutating func eraseAisle(_ id: String) -> Bool {
        guard aisles.removeValue(forKey: textKey(id)) != nil else { return false }
        for item in items.values where textKey(item.aisleId) == textKey(id) { eraseItem(item.id) }
        return true
    }

    /// Erases an item and its tags; whether there was one.
    @discardableResult
    mutating func eraseItem(_ id: String) -> Bool {
        guard items.removeValue(forKey: textKey(id)) != nil else { return false }
        for tag in tags.values where textKey(tag.itemId) == textKey(id) { tags[tag.id] = nil }
        return true
    }

    // MARK: Reads: complete records in key order

    /// Every tag, by key.
    var tagList: [TagRecord] { tags.values.sorted { $0.id < $1.id } }

    /// Every item with its tags, by key.
    var itemList: [ItemRecord] {
        var byItem: [TextKey: [TagRecord]] = [:]
        for tag in tagList { byItem[textKey(tag.itemId), default: []].append(tag) }
        return items.values.sorted { textBefore($0.id, $1.id) }.map { item in
            var full = item
            full.tags = byItem[textKey(item.id)] ?? []
            return full
        }
    }

    /// Every aisle with its items, by key.
    var aisleList: [AisleRecord] {
        var byAisle: [TextKey: [ItemRecord]] = [:]
        for item in itemList { byAisle[textKey(item.aisleId), default: []].append(item) }
        return aisles.values.sorted { textBefore($0.id, $1.id) }.map { aisle in
            var full = aisle
            full.items = byAisle[textKey(aisle.id)] ?? []
            return full
        }
    }

    /// Every warehouse with its aisles, by key.
    var warehouseList: [WarehouseRecord] {
        var byWarehouse: [TextKey: [AisleRecord]] = [:]
        for aisle in aisleList { byWarehouse[textKey(aisle.warehouseCode), default: []].append(aisle) }
        return warehouses.values.sorted { textBefore($0.code, $1.code) }.map { warehouse in
            var full = warehouse
            full.aisles = byWarehouse[textKey(warehouse.code)] ?? []
            return full
        }
    }
}

// MARK: - Reference queries

/// A query and its answer as the model computes it.
struct ReferenceQuery<R: Record> {
    var name: String
    var query: Query<R>
    /// The predicate, with the documented meaning.
    var matches: (R) -> Bool
    /// The sort descriptors' order: negative, zero or positive, as `<`, `==`, `>`.
    var order: [(R, R) -> Int] = []
    /// The primary key order, the last tie-break.
    var keyOrder: (R, R) -> Bool

    /// The answer over `records` (complete, in key order).
    func answer(_ records: [R]) -> [R] {
        let matching = records.filter(matches).sorted { left, right in
            for compare in order {
                let result = compare(left, right)
                if result != 0 { return result < 0 }
            }
            return keyOrder(left, right)
        }
        guard let limit = query.limit else { return matching }
        return Array(matching.prefix(limit))
    }
}

/// Compares two optionals the documented way: `nil` first.
func compareOptional<T>(_ left: T?, _ right: T?, _ compare: (T, T) -> Int) -> Int {
    switch (left, right) {
    case (nil, nil): 0
    case (nil, _): -1
    case (_, nil): 1
    case let (left?, right?): compare(left, right)
    }
}

/// `<`, `==`, `>` as -1, 0, 1.
func compareValues<T: Comparable>(_ left: T, _ right: T) -> Int { left < right ? -1 : (left == right ? 0 : 1) }

/// Reals in the sorts' total order (docs/SEMANTICS.md) as -1, 0, 1: by value,
/// `-0.0` tied with `0.0`, every NaN after `+infinity` and tied with every NaN.
func compareValues(_ left: Double, _ right: Double) -> Int {
    switch (left.isNaN, right.isNaN) {
    case (true, true): 0
    case (true, false): 1
    case (false, true): -1
    case (false, false): left < right ? -1 : (left == right ? 0 : 1)
    }
}

/// A `Float` in the sorts' total order, as a `Double`.
func compareValues(_ left: Float, _ right: Float) -> Int { compareValues(Double(left), Double(right)) }

/// A `Date` in the sorts' total order, by its seconds.
func compareValues(_ left: Date, _ right: Date) -> Int {
    compareValues(left.timeIntervalSinceReferenceDate, right.timeIntervalSinceReferenceDate)
}

/// Text by scalars as -1, 0, 1.
func compareText(_ left: String, _ right: String) -> Int {
    textBefore(left, right) ? -1 : (textKey(left) == textKey(right) ? 0 : 1)
}

/// Whether two optional texts are equal by scalars (null-safe).
func sameText(_ left: String?, _ right: String?) -> Bool { left.map(textKey) == right.map(textKey) }
