import DAOCore
import Foundation

// Generated queries over the warehouse domain: each a Foundation predicate and
// sort, as a client writes them, beside the model's reading of it
// (docs/SEMANTICS.md). Constants are drawn from the stored values, so that
// most queries match something.

extension WarehouseGenerator {
    mutating func itemQuery(_ model: WarehouseModel) -> ReferenceQuery<ItemRecord> {
        let items = model.itemList
        let sample = items.isEmpty ? item(aisle: "none") : pick(items)
        let other = items.isEmpty ? sample : pick(items)
        var query: ReferenceQuery<ItemRecord>
        switch below(18) {
        case 0:
            let aisle = sample.aisleId, grade = other.grade
            query = reference("aisle == and grade == \(String(describing: grade))",
                #Predicate { $0.aisleId == aisle && $0.grade == grade }) { sameText($0.aisleId, aisle) && $0.grade == grade }
        case 1:
            let aisle = sample.aisleId, grade = sample.grade, expires = other.expires
            query = reference("aisle, grade, expires == \(String(describing: expires))",
                #Predicate { $0.aisleId == aisle && $0.grade == grade && $0.expires == expires }) {
                sameText($0.aisleId, aisle) && $0.grade == grade && $0.expires == expires
            }
        case 2:
            let sku = sample.sku, weight = other.weight
            query = reference("sku and weight == \(String(describing: weight))",
                #Predicate { $0.sku == sku && $0.weight == weight }) { sameText($0.sku, sku) && $0.weight == weight }
        case 3:
            let ref = other.ref
            query = reference("ref == \(String(describing: ref))", #Predicate { $0.ref == ref }) { $0.ref == ref }
        case 4:
            let low = pick(Self.int64s), high = pick(Self.int64s)
            query = reference("\(low) <= quantity < \(high)", #Predicate { $0.quantity >= low && $0.quantity < high }) {
                $0.quantity >= low && $0.quantity < high
            }
        case 5:
            let small = other.small, wide = sample.wide
            query = reference("small == \(String(describing: small)) || wide == \(String(describing: wide))",
                #Predicate { $0.small == small || $0.wide == wide }) { $0.small == small || $0.wide == wide }
        case 6:
            let price = other.price
            query = reference("price == \(String(describing: price))", #Predicate { $0.price == price }) { $0.price == price }
        case 7:
            query = reference("fragile != false", #Predicate { $0.fragile != false }) { $0.fragile != false }
        case 8:
            let note = other.note
            query = reference("!(note == …)", #Predicate { !($0.note == note) }) { !sameText($0.note, note) }
        case 9:
            let prefix = String(sample.sku.unicodeScalars.prefix(1))
            query = reference("sku starts with \(Array(prefix.utf8))", #Predicate { $0.sku.starts(with: prefix) }) {
                $0.sku.utf8.starts(with: prefix.utf8)
            }
        case 10:
            let part = pick(["\u{0}", "\u{308}", "e", "Zo", "🧑", ""]).precomposedStringWithCanonicalMapping
            query = reference("sku contains \(Array(part.utf8))", #Predicate { $0.sku.contains(part) }) {
                part.isEmpty || $0.sku.utf8.count >= part.utf8.count && Array($0.sku.utf8).firstRange(of: Array(part.utf8)) != nil
            }
        case 11:
            let label = pick(model.tagList.map(\.label) + ["none"])
            // Inside a relation's closure Foundation evaluates, with Swift's
            // String == (canonical equivalence), as docs/SEMANTICS.md says.
            query = reference("a tag labelled …", #Predicate { item in item.tags.contains { tag in tag.label == label } }) {
                $0.tags.contains { $0.label == label }
            }
        case 12:
            let count = below(4)
            query = reference("tags.count >= \(count)", #Predicate { $0.tags.count >= count }) { $0.tags.count >= count }
        case 13:
            query = reference("medium == nil && big != nil", #Predicate { $0.medium == nil && $0.big != nil }) {
                $0.medium == nil && $0.big != nil
            }
        case 14:
            let limit = pick(Self.reals)
            query = reference("(weight ?? 0) < \(limit)", #Predicate { ($0.weight ?? 0) < limit }) { ($0.weight ?? 0) < limit }
        case 15:
            let date = pick(Self.dates)
            query = reference("expires != nil && expires! < \(date.timeIntervalSinceReferenceDate)",
                #Predicate { $0.expires != nil && $0.expires! < date }) { $0.expires.map { $0 < date } ?? false }
        case 16:
            let ratio = pick(Self.reals), level = other.level
            query = reference("ratio > \(ratio) || level == \(String(describing: level))",
                #Predicate { $0.ratio > ratio || $0.level == level }) { $0.ratio > ratio || $0.level == level }
        default:
            let count = other.count, photo = other.photo
            query = reference("count == … && photo == …", #Predicate { $0.count == count && $0.photo == photo }) {
                $0.count == count && $0.photo == photo
            }
        }
        let reverse = chance(50)
        let order: SortOrder = reverse ? .reverse : .forward
        let sign = reverse ? -1 : 1
        switch below(9) {
        case 0:
            query.query.sortedBy = [SortDescriptor(\.weight, order: order)]
            query.order = [{ sign * compareOptional($0.weight, $1.weight, compareValues) }]
            query.name += " by weight \(order)"
        case 1:
            query.query.sortedBy = [SortDescriptor(\.expires, order: order)]
            query.order = [{ sign * compareOptional($0.expires, $1.expires, compareValues) }]
            query.name += " by expires \(order)"
        case 2:
            query.query.sortedBy = [SortDescriptor(\.price, order: order), SortDescriptor(\.small)]
            query.order = [
                { sign * compareOptional($0.price, $1.price, compareValues) },
                { compareOptional($0.small, $1.small, compareValues) },
            ]
            query.name += " by price \(order), small"
        case 3:
            query.query.sortedBy = [SortDescriptor(\.note, order: order)]
            query.order = [{ sign * compareOptional($0.note, $1.note, compareText) }]
            query.name += " by note \(order)"
        case 4:
            query.query.sortedBy = [SortDescriptor(\.wide, order: order), SortDescriptor(\.quantity, order: .reverse)]
            query.order = [
                { sign * compareOptional($0.wide, $1.wide, compareValues) }, { -compareValues($0.quantity, $1.quantity) },
            ]
            query.name += " by wide \(order), quantity reversed"
        case 5:
            query.query.sortedBy = [SortDescriptor(\.sku, order: order), SortDescriptor(\.ratio)]
            query.order = [{ sign * compareText($0.sku, $1.sku) }, { compareValues($0.ratio, $1.ratio) }]
            query.name += " by sku \(order), ratio"
        case 6:
            query.query.sortedBy = [SortDescriptor(\.big, order: order), SortDescriptor(\.count, order: order)]
            query.order = [
                { sign * compareOptional($0.big, $1.big, compareValues) },
                { sign * compareOptional($0.count, $1.count, compareValues) },
            ]
            query.name += " by big, count \(order)"
        case 7:
            // Over a relation: Foundation's meaning, on complete records.
            query.query.sortedBy = [SortDescriptor(\.tags.count, order: order)]
            query.order = [{ sign * compareValues($0.tags.count, $1.tags.count) }]
            query.name += " by tags.count \(order)"
        default:
            break
        }
        if chance(40) { query.query.limit = below(6) }
        return query
    }

    mutating func tagQuery(_ model: WarehouseModel) -> ReferenceQuery<TagRecord> {
        let tags = model.tagList
        let sample = tags.isEmpty ? tag(item: "none") : pick(tags)
        var query: ReferenceQuery<TagRecord>
        switch below(4) {
        case 0:
            let label = sample.label, score = pick(tags.map(\.score) + [nil])
            query = ReferenceQuery(
                name: "tags label and score == \(String(describing: score))",
                query: Query(where: #Predicate { $0.label == label && $0.score == score }),
                matches: { sameText($0.label, label) && $0.score == score }, keyOrder: { $0.id < $1.id })
        case 1:
            let label = sample.label
            query = ReferenceQuery(
                name: "tags label == …", query: Query(where: #Predicate { $0.label == label }),
                matches: { sameText($0.label, label) }, keyOrder: { $0.id < $1.id })
        case 2:
            let id = sample.id
            query = ReferenceQuery(
                name: "tags id > \(id)", query: Query(where: #Predicate { $0.id > id }), matches: { $0.id > id },
                keyOrder: { $0.id < $1.id })
        default:
            query = ReferenceQuery(
                name: "tags score == nil", query: Query(where: #Predicate { $0.score == nil }), matches: { $0.score == nil },
                keyOrder: { $0.id < $1.id })
        }
        if chance(50) {
            query.query.sortedBy = [SortDescriptor(\.score, order: .reverse)]
            query.order = [{ -compareOptional($0.score, $1.score, compareValues) }]
            query.name += " by score reversed"
        }
        if chance(30) { query.query.limit = below(4) }
        return query
    }

    mutating func aisleQuery(_ model: WarehouseModel) -> ReferenceQuery<AisleRecord> {
        let aisles = model.aisleList
        let sample = aisles.isEmpty ? aisle(warehouse: "none", index: 0) : pick(aisles)
        let keyOrder: (AisleRecord, AisleRecord) -> Bool = { textBefore($0.id, $1.id) }
        var query: ReferenceQuery<AisleRecord>
        switch below(4) {
        case 0:
            let code = sample.warehouseCode, zone = pick(aisles.map(\.zone) + [nil])
            query = ReferenceQuery(
                name: "aisles of a warehouse in zone \(String(describing: zone))",
                query: Query(where: #Predicate { $0.warehouseCode == code && $0.zone == zone }),
                matches: { sameText($0.warehouseCode, code) && $0.zone == zone }, keyOrder: keyOrder)
        case 1:
            query = ReferenceQuery(
                name: "aisles with an item with an unscored tag (three levels down)",
                query: Query(where: #Predicate { aisle in
                    aisle.items.contains { item in item.tags.contains { tag in tag.score == nil } }
                }),
                matches: { $0.items.contains { $0.tags.contains { $0.score == nil } } }, keyOrder: keyOrder)
        case 2:
            let number = sample.number
            query = ReferenceQuery(
                name: "aisles number >= \(number)", query: Query(where: #Predicate { $0.number >= number }),
                matches: { $0.number >= number }, keyOrder: keyOrder)
        default:
            let zone = sample.zone
            query = ReferenceQuery(
                name: "aisles zone != \(String(describing: zone))", query: Query(where: #Predicate { $0.zone != zone }),
                matches: { $0.zone != zone }, keyOrder: keyOrder)
        }
        if chance(50) {
            query.query.sortedBy = [SortDescriptor(\.number, order: .reverse)]
            query.order = [{ -compareValues($0.number, $1.number) }]
            query.name += " by number reversed"
        }
        return query
    }

    mutating func warehouseQuery(_ model: WarehouseModel) -> ReferenceQuery<WarehouseRecord> {
        let warehouses = model.warehouseList
        let keyOrder: (WarehouseRecord, WarehouseRecord) -> Bool = { textBefore($0.code, $1.code) }
        var query: ReferenceQuery<WarehouseRecord>
        switch below(3) {
        case 0:
            let region = pick(warehouses.map(\.region) + [nil]), date = pick(Self.dates)
            query = ReferenceQuery(
                name: "warehouses region == \(String(describing: region)) && opened < \(date.timeIntervalSinceReferenceDate)",
                query: Query(where: #Predicate { $0.region == region && $0.opened < date }),
                matches: { sameText($0.region, region) && $0.opened < date }, keyOrder: keyOrder)
        case 1:
            query = ReferenceQuery(
                name: "warehouses with an aisle with an item with two tags (four levels)",
                query: Query(where: #Predicate { warehouse in
                    warehouse.aisles.contains { aisle in aisle.items.contains { item in item.tags.count >= 2 } }
                }),
                matches: { $0.aisles.contains { $0.items.contains { $0.tags.count >= 2 } } }, keyOrder: keyOrder)
        default:
            query = ReferenceQuery(
                name: "warehouses region == nil", query: Query(where: #Predicate { $0.region == nil }),
                matches: { $0.region == nil }, keyOrder: keyOrder)
        }
        if chance(60) {
            let reverse = chance(50)
            query.query.sortedBy = [SortDescriptor(\.region, order: reverse ? .reverse : .forward), SortDescriptor(\.opened)]
            query.order = [
                { (reverse ? -1 : 1) * compareOptional($0.region, $1.region, compareText) },
                { compareValues($0.opened, $1.opened) },
            ]
            query.name += " by region \(reverse ? "reversed" : ""), opened"
        }
        if chance(30) { query.query.limit = below(3) }
        return query
    }

    private func reference(
        _ name: String, _ predicate: Predicate<ItemRecord>, _ matches: @escaping (ItemRecord) -> Bool
    ) -> ReferenceQuery<ItemRecord> {
        ReferenceQuery(name: "items " + name, query: Query(where: predicate), matches: matches, keyOrder: { textBefore($0.id, $1.id) })
    }
}
