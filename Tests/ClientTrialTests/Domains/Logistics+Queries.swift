import DAOCore
import Foundation
import TestSupport

// Generated queries over the logistics domain (Tests/TestSupport/
// LogisticsDomain.swift): each a Foundation predicate, sort and limit as a
// client writes them, beside the model's reading of it (docs/SEMANTICS.md):
// text by Unicode scalars, nil first, reals by value, UUIDs by their text,
// relations evaluated on complete records. Constants are drawn from the
// stored values, so that most queries match something.

/// What the logistics tests share.
enum LogisticsQueries {
    static func byUUID(_ a: UUID, _ b: UUID) -> Int { compareText(a.uuidString, b.uuidString) }

    static func parcelKeyOrder(_ a: ParcelRecord, _ b: ParcelRecord) -> Bool {
        textBefore(a.id.uuidString, b.id.uuidString)
    }

    static func parcels(_ model: LogisticsModel, _ random: inout TestRandom) -> ReferenceQuery<ParcelRecord> {
        let records = model.parcelList.map(ParcelTranslator().record(from:))
        let sample = records.isEmpty ? nil : random.pick(records)
        let other = records.isEmpty ? nil : random.pick(records)
        let code = sample?.shipmentCode ?? "none"
        let weight = other?.weight ?? random.pick(Logistics.reals)
        func make(_ name: String, _ predicate: Predicate<ParcelRecord>, _ matches: @escaping (ParcelRecord) -> Bool)
            -> ReferenceQuery<ParcelRecord>
        {
            ReferenceQuery(name: "parcels " + name, query: Query(where: predicate), matches: matches, keyOrder: parcelKeyOrder)
        }
        var query: ReferenceQuery<ParcelRecord>
        switch random.below(21) {
        case 0:
            query = make("of a shipment heavier than \(weight)", #Predicate { $0.shipmentCode == code && $0.weight > weight }) {
                same($0.shipmentCode, code) && $0.weight > weight
            }
        case 1:
            let low = random.pick(Logistics.reals), high = random.pick(Logistics.reals)
            query = make("\(low) <= weight <= \(high)", #Predicate { $0.weight >= low && $0.weight <= high }) {
                $0.weight >= low && $0.weight <= high
            }
        case 2:
            let limit = random.pick(Logistics.floats)
            query = make("volume nil or below \(limit)", #Predicate { $0.volume == nil || $0.volume! < limit }) {
                $0.volume.map { $0 < limit } ?? true
            }
        case 3:
            let status = random.pick(ParcelStatus.allCases.map(Optional.some) + [nil])
            query = make("status == \(String(describing: status))", #Predicate { $0.status == status }) { $0.status == status }
        case 4:
            let a = random.pick(ParcelStatus.allCases.map(Optional.some) + [nil])
            let b = random.pick(ParcelStatus.allCases.map(Optional.some) + [nil])
            let list = [a, b]
            query = make("status in \(list)", #Predicate { list.contains($0.status) }) { list.contains($0.status) }
        case 5:
            let prefix = String((sample?.label ?? "b").unicodeScalars.prefix(random.below(3)))
            query = make("label starts with \(Array(prefix.utf8))", #Predicate { $0.label.starts(with: prefix) }) {
                $0.label.utf8.starts(with: prefix.utf8)
            }
        case 6:
            let part = random.pick(["o", "\u{308}", "\u{F6}", "x\u{0}", "", "📦", "B"])
            query = make("label contains \(Array(part.utf8))", #Predicate { $0.label.contains(part) }) { has($0.label, part) }
        case 7:
            query = make("not fragile and signed != true", #Predicate { !$0.fragile && $0.signed != true }) {
                !$0.fragile && $0.signed != true
            }
        case 8:
            let ref = random.below(2) == 0 ? nil : other?.ref
            query = make("ref == \(String(describing: ref))", #Predicate { $0.ref == ref }) { $0.ref == ref }
        case 9:
            let count = random.below(4)
            query = make("scans.count >= \(count) (a relation)", #Predicate { $0.scans.count >= count }) {
                $0.scans.count >= count
            }
        case 10:
            query = make("a scan without temperature (a relation)",
                         #Predicate { parcel in parcel.scans.contains { scan in scan.temperature == nil } }) {
                $0.scans.contains { $0.temperature == nil }
            }
        case 11:
            query = make("status == nil && sealedAt == nil", #Predicate { $0.status == nil && $0.sealedAt == nil }) {
                $0.status == nil && $0.sealedAt == nil
            }
        case 12:
            let status = sample?.status, sealed = random.below(2) == 0 ? sample?.sealedAt : other?.sealedAt
            query = make("status, sealedAt == \(String(describing: sealed?.timeIntervalSinceReferenceDate))",
                         #Predicate { $0.status == status && $0.sealedAt == sealed }) {
                $0.status == status && $0.sealedAt == sealed
            }
        case 13:
            let barcode = sample?.barcode ?? Data()
            query = make("barcode == \(barcode.count) bytes", #Predicate { $0.barcode == barcode }) { $0.barcode == barcode }
        case 14:
            let big = Int64.max, count = Int.min, seq = UInt32.max
            query = make("big == max || count == min || seq == max",
                         #Predicate { $0.big == big || $0.count == count || $0.seq == seq }) {
                $0.big == big || $0.count == count || $0.seq == seq
            }
        case 15:
            let tier = random.pick(ParcelTier.allCases.map(Optional.some) + [nil]), pieces = sample?.pieces
            query = make("tier == \(String(describing: tier)) || pieces == \(String(describing: pieces))",
                         #Predicate { $0.tier == tier || $0.pieces == pieces }) { $0.tier == tier || $0.pieces == pieces }
        case 16:
            let notANumber = Double("nan") ?? 0, zero = -0.0
            switch random.below(3) {
            case 0: query = make("weight == NaN", #Predicate { $0.weight == notANumber }) { _ in false }
            case 1: query = make("weight != NaN", #Predicate { $0.weight != notANumber }) { _ in true }
            default: query = make("weight == -0.0", #Predicate { $0.weight == zero }) { $0.weight == 0 }
            }
        case 17:
            let id = sample?.id ?? UUID()
            if random.below(2) == 0 {
                query = make("id == …", #Predicate { $0.id == id }) { $0.id == id }
            } else {
                query = make("id > …", #Predicate { $0.id > id }) { byUUID($0.id, id) > 0 }
            }
        case 18:
            query = make("shipmentCode >= …", #Predicate { $0.shipmentCode >= code }) { !precedes($0.shipmentCode, code) }
        case 19:
            let small = sample?.small, tiny = other?.tiny
            query = make("!(small == …) && tiny != …", #Predicate { !($0.small == small) && $0.tiny != tiny }) {
                !($0.small == small) && $0.tiny != tiny
            }
        default:
            let date = random.pick(Logistics.dates), past = Date.distantPast
            query = make("(sealedAt ?? distantPast) < …", #Predicate { ($0.sealedAt ?? past) < date }) {
                ($0.sealedAt ?? Date.distantPast) < date
            }
        }
        switch random.below(8) {
        case 0:
            query.query.sortedBy = [SortDescriptor(\.weight)]
            query.order = [{ compareValues($0.weight, $1.weight) }]
        case 1:
            query.query.sortedBy = [SortDescriptor(\.label, order: .reverse), SortDescriptor(\.weight)]
            query.order = [{ -compareText($0.label, $1.label) }, { compareValues($0.weight, $1.weight) }]
        case 2:
            query.query.sortedBy = [SortDescriptor(\.volume)]
            query.order = [{ compareOptional($0.volume, $1.volume, compareValues) }]
        case 3:
            query.query.sortedBy = [SortDescriptor(\.sealedAt, order: .reverse), SortDescriptor(\.pieces)]
            query.order = [
                { -compareOptional($0.sealedAt, $1.sealedAt, compareValues) },
                { compareOptional($0.pieces, $1.pieces, compareValues) },
            ]
        case 4:
            query.query.sortedBy = [SortDescriptor(\.scans.count, order: .reverse)]
            query.order = [{ -compareValues($0.scans.count, $1.scans.count) }]
        case 5:
            query.query.sortedBy = [SortDescriptor(\.ref)]
            query.order = [{ compareOptional($0.ref, $1.ref, byUUID) }]
        case 6:
            query.query.sortedBy = [SortDescriptor(\.shipmentCode), SortDescriptor(\.weight, order: .reverse)]
            query.order = [{ compareText($0.shipmentCode, $1.shipmentCode) }, { -compareValues($0.weight, $1.weight) }]
        default:
            break
        }
        if !query.order.isEmpty { query.name += " sorted \(query.query.sortedBy.count) ways" }
        if random.below(3) == 0 {
            query.query.limit = random.below(5)
            query.name += " limit \(query.query.limit ?? -1)"
        }
        return query
    }

    static func shipments(_ model: LogisticsModel, _ random: inout TestRandom) -> ReferenceQuery<ShipmentRecord> {
        let records = model.shipmentList.map(ShipmentTranslator().record(from:))
        let sample = records.isEmpty ? nil : random.pick(records)
        let keyOrder: (ShipmentRecord, ShipmentRecord) -> Bool = { textBefore($0.code, $1.code) }
        func make(_ name: String, _ predicate: Predicate<ShipmentRecord>, _ matches: @escaping (ShipmentRecord) -> Bool)
            -> ReferenceQuery<ShipmentRecord>
        {
            ReferenceQuery(name: "shipments " + name, query: Query(where: predicate), matches: matches, keyOrder: keyOrder)
        }
        let destination = sample?.destination ?? "Oslo"
        let date = random.pick(Logistics.dates)
        var query: ReferenceQuery<ShipmentRecord>
        switch random.below(11) {
        case 0:
            query = make("to … with no due date", #Predicate { $0.destination == destination && $0.due == nil }) {
                same($0.destination, destination) && $0.due == nil
            }
        case 1:
            let due = sample?.due
            query = make("to … due …", #Predicate { $0.destination == destination && $0.due == due }) {
                same($0.destination, destination) && $0.due == due
            }
        case 2:
            let code = random.pick(Logistics.codes)
            query = make("code == \(Array(code.utf8))", #Predicate { $0.code == code }) { same($0.code, code) }
        case 3:
            let code = random.pick(Logistics.codes)
            query = make("code >= \(Array(code.utf8))", #Predicate { $0.code >= code }) { !precedes($0.code, code) }
        case 4:
            let prefix = random.pick(["caf", "A", "\u{C5}", "", "n\u{0}"])
            query = make("code starts with \(Array(prefix.utf8))", #Predicate { $0.code.starts(with: prefix) }) {
                $0.code.utf8.starts(with: prefix.utf8)
            }
        case 5:
            query = make("without parcels (a relation)", #Predicate { $0.parcels.isEmpty }) { $0.parcels.isEmpty }
        case 6:
            let count = random.below(5), priority = Int8(random.below(3)) - 1
            query = make("parcels >= \(count) && priority > \(priority)",
                         #Predicate { $0.parcels.count >= count && $0.priority > priority }) {
                $0.parcels.count >= count && $0.priority > priority
            }
        case 7:
            query = make("a fragile parcel with a failed scan (two levels down)", #Predicate { shipment in
                shipment.parcels.contains { parcel in parcel.fragile && parcel.scans.contains { scan in !scan.ok } }
            }) { $0.parcels.contains { $0.fragile && $0.scans.contains { !$0.ok } } }
        case 8:
            query = make("insured != false", #Predicate { $0.insured != false }) { $0.insured != false }
        case 9:
            query = make("declaredValue == nil || priority < 0", #Predicate { $0.declaredValue == nil || $0.priority < 0 }) {
                $0.declaredValue == nil || $0.priority < 0
            }
        default:
            query = make("due != nil && due! > …", #Predicate { $0.due != nil && $0.due! > date }) {
                $0.due.map { $0 > date } ?? false
            }
        }
        switch random.below(5) {
        case 0:
            query.query.sortedBy = [SortDescriptor(\.destination), SortDescriptor(\.due, order: .reverse)]
            query.order = [
                { compareText($0.destination, $1.destination) }, { -compareOptional($0.due, $1.due, compareValues) },
            ]
        case 1:
            query.query.sortedBy = [SortDescriptor(\.declaredValue)]
            query.order = [{ compareOptional($0.declaredValue, $1.declaredValue, compareValues) }]
        case 2:
            query.query.sortedBy = [SortDescriptor(\.parcels.count, order: .reverse)]
            query.order = [{ -compareValues($0.parcels.count, $1.parcels.count) }]
        case 3:
            query.query.sortedBy = [SortDescriptor(\.priority, order: .reverse), SortDescriptor(\.createdAt)]
            query.order = [{ -compareValues($0.priority, $1.priority) }, { compareValues($0.createdAt, $1.createdAt) }]
        default:
            break
        }
        if random.below(3) == 0 { query.query.limit = random.below(4) }
        return query
    }

    static func scans(_ model: LogisticsModel, _ random: inout TestRandom) -> ReferenceQuery<ScanRecord> {
        let records = model.scanList.map(ScanTranslator().record(from:))
        let sample = records.isEmpty ? nil : random.pick(records)
        let keyOrder: (ScanRecord, ScanRecord) -> Bool = { $0.id < $1.id }
        func make(_ name: String, _ predicate: Predicate<ScanRecord>, _ matches: @escaping (ScanRecord) -> Bool)
            -> ReferenceQuery<ScanRecord>
        {
            ReferenceQuery(name: "scans " + name, query: Query(where: predicate), matches: matches, keyOrder: keyOrder)
        }
        let parcel = sample?.parcelId ?? UUID()
        let date = random.pick(Logistics.dates)
        let place = sample?.place ?? "box"
        var query: ReferenceQuery<ScanRecord>
        switch random.below(8) {
        case 0:
            query = make("of a parcel", #Predicate { $0.parcelId == parcel }) { $0.parcelId == parcel }
        case 1:
            query = make("of a parcel after …", #Predicate { $0.parcelId == parcel && $0.at > date }) {
                $0.parcelId == parcel && $0.at > date
            }
        case 2:
            query = make("at a place without temperature", #Predicate { $0.place == place && $0.temperature == nil }) {
                same($0.place, place) && $0.temperature == nil
            }
        case 3:
            let temperature = sample?.temperature
            query = make("at a place with temperature …", #Predicate { $0.place == place && $0.temperature == temperature }) {
                same($0.place, place) && $0.temperature == temperature
            }
        case 4:
            let low = random.pick([Int64.min, -3_000, -1, 0, 1_500, Int64.max - 10_000])
            let high = random.pick([Int64.min + 10_000, -1_000, 0, 2_500, Int64.max])
            query = make("\(low) <= id <= \(high)", #Predicate { $0.id >= low && $0.id <= high }) {
                $0.id >= low && $0.id <= high
            }
        case 5:
            query = make("!ok || raw == nil", #Predicate { !$0.ok || $0.raw == nil }) { !$0.ok || $0.raw == nil }
        case 6:
            let part = random.pick(["o", "\u{308}", "x\u{0}y", "", "e"])
            query = make("place contains \(Array(part.utf8))", #Predicate { $0.place.contains(part) }) { has($0.place, part) }
        default:
            query = make("at == …", #Predicate { $0.at == date }) { $0.at == date }
        }
        switch random.below(5) {
        case 0:
            query.query.sortedBy = [SortDescriptor(\.at, order: .reverse)]
            query.order = [{ -compareValues($0.at, $1.at) }]
        case 1:
            query.query.sortedBy = [SortDescriptor(\.temperature)]
            query.order = [{ compareOptional($0.temperature, $1.temperature, compareValues) }]
        case 2:
            query.query.sortedBy = [SortDescriptor(\.place), SortDescriptor(\.at)]
            query.order = [{ compareText($0.place, $1.place) }, { compareValues($0.at, $1.at) }]
        case 3:
            query.query.sortedBy = [SortDescriptor(\.parcelId, order: .reverse)]
            query.order = [{ -byUUID($0.parcelId, $1.parcelId) }]
        default:
            break
        }
        if random.below(3) == 0 { query.query.limit = random.below(6) }
        return query
    }
}
