import DAOCore
import DAOMacros
import Foundation

// A fifth outside domain, declared the README's way (@StoredRecord, plain
// objects and translators beside them): logistics. Shipments (String codes,
// some equal to another in NFC but not in bytes, one with a NUL) own parcels
// (UUID keys) own scans (Int64 keys, Int64.min and Int64.max among them):
// three levels. Between them they hold an optional of every field type the
// README lists, reals at their edges (±infinity, subnormals, the greatest
// finite magnitudes), dates and bytes, and composite indexes, two of them
// over an optional field. Shared by the trial's tests and by StoreHelper,
// which writes it in a second process that the tests kill.

/// Where a parcel is: a String enum stored as its raw value.
public enum ParcelStatus: String, Codable, Sendable, FieldValue, CaseIterable {
    case booked, inTransit = "in transit", delivered, lost = "", returned = "r\u{E9}tour"
}

/// A parcel's service tier: an integer enum.
public enum ParcelTier: Int32, Codable, Sendable, FieldValue, CaseIterable {
    case economy = -1, standard = 0, express = 9
}

/// A shipment, keyed by its code; owns its parcels. Indexed by destination
/// and an optional due date.
@StoredRecord(
    "lg_shipments", primaryKey: "code",
    indexes: [Index("lg_shipments_by_destination_due", on: ["destination", "due"])])
public struct ShipmentRecord: Equatable {
    /// The key.
    public var code: String
    /// Where it goes.
    public var destination: String
    /// When it is due, if known.
    public var due: Date?
    /// Its priority.
    public var priority: Int8
    /// Whether it is insured, if known.
    public var insured: Bool?
    /// Its declared value, if any.
    public var declaredValue: Double?
    /// When it was booked.
    public var createdAt: Date
    /// The children.
    @Children(foreignKey: "shipmentCode") public var parcels: [ParcelRecord]
}

/// A parcel of a shipment (a UUID key), with an optional of every field
/// type; owns its scans.
@StoredRecord(
    "lg_parcels",
    indexes: [
        Index("lg_parcels_by_shipment_weight", on: ["shipmentCode", "weight"]),
        Index("lg_parcels_by_status_sealed", on: ["status", "sealedAt"]),
    ],
    ownedBy: ShipmentRecord.self)
public struct ParcelRecord: Equatable {
    /// The key.
    public var id: UUID
    /// The owner.
    public var shipmentCode: String
    /// The label printed on it.
    public var label: String
    /// Its weight: any real.
    public var weight: Double
    /// Its volume, if measured.
    public var volume: Float?
    /// Where it is, if known.
    public var status: ParcelStatus?
    /// Its tier, if chosen.
    public var tier: ParcelTier?
    /// How many pieces.
    public var pieces: Int32?
    /// A sequence number.
    public var seq: UInt32?
    /// A small number.
    public var small: Int16?
    /// A count.
    public var count: Int?
    /// A big number.
    public var big: Int64?
    /// A free note.
    public var note: String?
    /// Its barcode's bytes.
    public var barcode: Data
    /// A photo, if taken.
    public var photo: Data?
    /// Whether it is fragile.
    public var fragile: Bool
    /// Whether it is signed for, if asked.
    public var signed: Bool?
    /// Another parcel it refers to.
    public var ref: UUID?
    /// When it was sealed, if it was.
    public var sealedAt: Date?
    /// A tiny number.
    public var tiny: Int8?
    /// The children.
    @Children(foreignKey: "parcelId") public var scans: [ScanRecord]
}

/// A scan of a parcel (an Int64 key).
@StoredRecord(
    "lg_scans",
    indexes: [
        Index("lg_scans_by_parcel_at", on: ["parcelId", "at"]),
        Index("lg_scans_by_place_temperature", on: ["place", "temperature"]),
    ],
    ownedBy: ParcelRecord.self)
public struct ScanRecord: Equatable {
    /// The key.
    public var id: Int64
    /// The owner.
    public var parcelId: UUID
    /// When it was scanned.
    public var at: Date
    /// Where.
    public var place: String
    /// The temperature, if measured.
    public var temperature: Double?
    /// Whether the scan was clean.
    public var ok: Bool
    /// The scanner's raw bytes, if kept.
    public var raw: Data?
}

// MARK: - Plain objects and translators

/// The plain object of a shipment, with its parcels.
public struct Shipment: Plain {
    public let uniqueId: String
    public let destination: String
    public let due: Date?
    public let priority: Int8
    public let insured: Bool?
    public let declaredValue: Double?
    public let createdAt: Date
    /// Its parcels, in key order.
    public let parcels: [Parcel]

    public init(
        uniqueId: String, destination: String, due: Date?, priority: Int8, insured: Bool?, declaredValue: Double?,
        createdAt: Date, parcels: [Parcel]
    ) {
        self.uniqueId = uniqueId
        self.destination = destination
        self.due = due
        self.priority = priority
        self.insured = insured
        self.declaredValue = declaredValue
        self.createdAt = createdAt
        self.parcels = parcels
    }

    /// The shipment with other parcels.
    public func with(parcels: [Parcel]) -> Shipment {
        Shipment(
            uniqueId: uniqueId, destination: destination, due: due, priority: priority, insured: insured,
            declaredValue: declaredValue, createdAt: createdAt, parcels: Logistics.keyOrder(parcels))
    }
}

/// The plain object of a parcel, with its scans.
public struct Parcel: Plain {
    public let uniqueId: UUID
    public var shipmentCode: String
    public var label: String
    public var weight: Double
    public var volume: Float?
    public var status: ParcelStatus?
    public var tier: ParcelTier?
    public var pieces: Int32?
    public var seq: UInt32?
    public var small: Int16?
    public var count: Int?
    public var big: Int64?
    public var note: String?
    public var barcode: Data
    public var photo: Data?
    public var fragile: Bool
    public var signed: Bool?
    public var ref: UUID?
    public var sealedAt: Date?
    public var tiny: Int8?
    /// Its scans, in key order.
    public var scans: [Scan]

    public init(
        uniqueId: UUID, shipmentCode: String, label: String, weight: Double, volume: Float?, status: ParcelStatus?,
        tier: ParcelTier?, pieces: Int32?, seq: UInt32?, small: Int16?, count: Int?, big: Int64?, note: String?,
        barcode: Data, photo: Data?, fragile: Bool, signed: Bool?, ref: UUID?, sealedAt: Date?, tiny: Int8?,
        scans: [Scan]
    ) {
        self.uniqueId = uniqueId
        self.shipmentCode = shipmentCode
        self.label = label
        self.weight = weight
        self.volume = volume
        self.status = status
        self.tier = tier
        self.pieces = pieces
        self.seq = seq
        self.small = small
        self.count = count
        self.big = big
        self.note = note
        self.barcode = barcode
        self.photo = photo
        self.fragile = fragile
        self.signed = signed
        self.ref = ref
        self.sealedAt = sealedAt
        self.tiny = tiny
        self.scans = scans
    }
}

/// The plain object of a scan.
public struct Scan: Plain {
    public let uniqueId: Int64
    public var parcelId: UUID
    public var at: Date
    public var place: String
    public var temperature: Double?
    public var ok: Bool
    public var raw: Data?

    public init(uniqueId: Int64, parcelId: UUID, at: Date, place: String, temperature: Double?, ok: Bool, raw: Data?) {
        self.uniqueId = uniqueId
        self.parcelId = parcelId
        self.at = at
        self.place = place
        self.temperature = temperature
        self.ok = ok
        self.raw = raw
    }
}

/// Scans to records and back.
public struct ScanTranslator: Translator {
    public init() {}
    public func record(from plain: Scan) -> ScanRecord {
        ScanRecord(
            id: plain.uniqueId, parcelId: plain.parcelId, at: plain.at, place: plain.place,
            temperature: plain.temperature, ok: plain.ok, raw: plain.raw)
    }
    public func plain(from record: ScanRecord) -> Scan {
        Scan(
            uniqueId: record.id, parcelId: record.parcelId, at: record.at, place: record.place,
            temperature: record.temperature, ok: record.ok, raw: record.raw)
    }
}

/// Parcels to records and back, with their scans.
public struct ParcelTranslator: Translator {
    public init() {}
    public func record(from plain: Parcel) -> ParcelRecord {
        ParcelRecord(
            id: plain.uniqueId, shipmentCode: plain.shipmentCode, label: plain.label, weight: plain.weight,
            volume: plain.volume, status: plain.status, tier: plain.tier, pieces: plain.pieces, seq: plain.seq,
            small: plain.small, count: plain.count, big: plain.big, note: plain.note, barcode: plain.barcode,
            photo: plain.photo, fragile: plain.fragile, signed: plain.signed, ref: plain.ref, sealedAt: plain.sealedAt,
            tiny: plain.tiny, scans: plain.scans.map(ScanTranslator().record(from:)))
    }
    public func plain(from record: ParcelRecord) -> Parcel {
        Parcel(
            uniqueId: record.id, shipmentCode: record.shipmentCode, label: record.label, weight: record.weight,
            volume: record.volume, status: record.status, tier: record.tier, pieces: record.pieces, seq: record.seq,
            small: record.small, count: record.count, big: record.big, note: record.note, barcode: record.barcode,
            photo: record.photo, fragile: record.fragile, signed: record.signed, ref: record.ref,
            sealedAt: record.sealedAt, tiny: record.tiny, scans: record.scans.map(ScanTranslator().plain(from:)))
    }
}

/// Shipments to records and back, with their parcels and scans.
public struct ShipmentTranslator: Translator {
    public init() {}
    public func record(from plain: Shipment) -> ShipmentRecord {
        ShipmentRecord(
            code: plain.uniqueId, destination: plain.destination, due: plain.due, priority: plain.priority,
            insured: plain.insured, declaredValue: plain.declaredValue, createdAt: plain.createdAt,
            parcels: plain.parcels.map(ParcelTranslator().record(from:)))
    }
    public func plain(from record: ShipmentRecord) -> Shipment {
        Shipment(
            uniqueId: record.code, destination: record.destination, due: record.due, priority: record.priority,
            insured: record.insured, declaredValue: record.declaredValue, createdAt: record.createdAt,
            parcels: record.parcels.map(ParcelTranslator().plain(from:)))
    }
}

/// The three DAOs of the logistics domain over one store.
public struct LogisticsDAOs {
    public let shipments: DAO<AnyStorage<ShipmentRecord>, ShipmentTranslator>
    public let parcels: DAO<AnyStorage<ParcelRecord>, ParcelTranslator>
    public let scans: DAO<AnyStorage<ScanRecord>, ScanTranslator>

    public init(_ store: any Store) throws {
        shipments = DAO(storage: try store.anyStorage(for: ShipmentRecord.self), translator: ShipmentTranslator())
        parcels = DAO(storage: try store.anyStorage(for: ParcelRecord.self), translator: ParcelTranslator())
        scans = DAO(storage: try store.anyStorage(for: ScanRecord.self), translator: ScanTranslator())
    }

    /// How many records each level holds, counted through its own storage.
    public func counts() throws -> [Int] {
        [try shipments.count(), try parcels.count(), try scans.count()]
    }
}

// MARK: - Generated data

/// The logistics domain's generated values and its reference model.
public enum Logistics {
    /// Shipment codes: ASCII, non-ASCII, empty, with a NUL, and pairs and a
    /// triple equal in NFC but not in bytes.
    public static let codes = [
        "caf\u{E9}", "cafe\u{301}", "\u{C5}rhus", "A\u{30A}rhus", "\u{212B}rhus", "Z-1", "a-1", "", "n\u{0}ul",
        "東京", "🚚", "zz",
    ]
    /// Destinations (the composite index's first field).
    public static let destinations = ["Oslo", "M\u{FC}nchen", "Mu\u{308}nchen", "", "Z"]
    /// Labels and places.
    public static let words = ["box", "Box", "b\u{F6}x", "bo\u{308}x", "crate", "", "pallet 📦", "x\u{0}y", "e"]
    /// Reals at their edges: both zeros, the canonical NaN (every backend
    /// gives it back bit for bit), infinities, subnormals of both signs, the
    /// greatest magnitudes.
    public static let reals: [Double] = [
        0, 1.5, -2.25, 42, 42, .infinity, -.infinity, .leastNonzeroMagnitude, -.leastNonzeroMagnitude,
        .leastNormalMagnitude, Double(bitPattern: 0x000F_FFFF_FFFF_FFFF), -Double(bitPattern: 0x000F_FFFF_FFFF_FFFF), .greatestFiniteMagnitude,
        -.greatestFiniteMagnitude, 1e-300, .ulpOfOne, -0.0, .nan, -0.0,
    ]
    /// Floats at their edges, both zeros and the canonical NaN among them.
    public static let floats: [Float] = [
        0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .infinity, -.infinity, 3.5, .greatestFiniteMagnitude, -0.0,
        .nan,
    ]
    /// Dates at their edges, with ties.
    public static let dates: [Date] = [
        Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: 700_000_000.25),
        Date(timeIntervalSinceReferenceDate: 700_000_000.25), Date(timeIntervalSinceReferenceDate: -1e9),
        Date(timeIntervalSinceReferenceDate: .leastNonzeroMagnitude), Date(timeIntervalSinceReferenceDate: .infinity),
        Date(timeIntervalSinceReferenceDate: -.infinity), .distantFuture, .distantPast,
    ]

    /// The value of a text in the property-list store's one spelling (NFC)
    /// when `oneSpelling`, else as given.
    public static func spell(_ text: String, _ oneSpelling: Bool) -> String {
        oneSpelling ? text.precomposedStringWithCanonicalMapping : text
    }

    /// A UUID from the generator.
    public static func uuid(_ random: inout TestRandom) -> UUID {
        let b = (0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// Bytes from the generator.
    public static func bytes(_ random: inout TestRandom, _ most: Int) -> Data {
        Data((0..<random.below(most + 1)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
    }

    /// Parcels sorted the way every backend returns them: by the key's text.
    public static func keyOrder(_ parcels: [Parcel]) -> [Parcel] {
        parcels.sorted { $0.uniqueId.uuidString.utf8.lexicographicallyPrecedes($1.uniqueId.uuidString.utf8) }
    }

    /// Shipments sorted by their codes' UTF-8 bytes.
    public static func keyOrder(_ shipments: some Sequence<Shipment>) -> [Shipment] {
        shipments.sorted { $0.uniqueId.utf8.lexicographicallyPrecedes($1.uniqueId.utf8) }
    }

    /// A scan of `parcel` with key `id`.
    public static func scan(_ id: Int64, of parcel: UUID, _ random: inout TestRandom, oneSpelling: Bool) -> Scan {
        Scan(
            uniqueId: id, parcelId: parcel, at: random.pick(dates), place: spell(random.pick(words), oneSpelling),
            temperature: random.below(3) == 0 ? nil : random.pick(reals), ok: random.below(4) != 0,
            raw: random.below(2) == 0 ? nil : bytes(&random, 24))
    }

    /// A parcel of shipment `code` with `scanIds.count` scans.
    public static func parcel(
        _ id: UUID, of code: String, scanIds: [Int64], _ random: inout TestRandom, oneSpelling: Bool,
        payload: Int = 16
    ) -> Parcel {
        func maybe<T>(_ value: T) -> T? { random.below(3) == 0 ? nil : value }
        let scans = scanIds.map { scan($0, of: id, &random, oneSpelling: oneSpelling) }.sorted { $0.uniqueId < $1.uniqueId }
        return Parcel(
            uniqueId: id, shipmentCode: code, label: spell(random.pick(words), oneSpelling) + "\(random.below(3))",
            weight: random.pick(reals), volume: maybe(random.pick(floats)), status: maybe(random.pick(ParcelStatus.allCases)),
            tier: maybe(random.pick(ParcelTier.allCases)), pieces: maybe(Int32(random.below(5)) - 1),
            seq: maybe(random.pick([0, 7, UInt32.max])), small: maybe(random.pick([Int16.min, -1, 0, Int16.max])),
            count: maybe(random.pick([Int.min, 0, 3, Int.max])), big: maybe(random.pick([Int64.min, -5, 5, Int64.max])),
            note: maybe(spell(random.pick(words), oneSpelling)), barcode: bytes(&random, payload),
            photo: maybe(bytes(&random, payload)), fragile: random.below(2) == 0, signed: maybe(random.below(2) == 0),
            ref: maybe(uuid(&random)), sealedAt: maybe(random.pick(dates)), tiny: maybe(random.pick([Int8.min, 0, Int8.max])),
            scans: scans)
    }

    /// A shipment `code` whose parcels and scans take fresh keys from `next`
    /// (scans get Int64.min, Int64.max, 0 and negative keys too).
    public static func shipment(
        _ code: String, parcels: Int, _ random: inout TestRandom, next: inout Int64, oneSpelling: Bool,
        payload: Int = 16
    ) -> Shipment {
        let code = spell(code, oneSpelling)
        let parcelList = (0..<parcels).map { _ -> Parcel in
            let scanIds = (0..<random.below(4)).map { _ -> Int64 in
                next += 1
                switch next % 97 {
                case 1: return Int64.min + next
                case 2: return Int64.max - next
                default: return next % 2 == 0 ? next : -next
                }
            }
            return parcel(uuid(&random), of: code, scanIds: scanIds, &random, oneSpelling: oneSpelling, payload: payload)
        }
        return Shipment(
            uniqueId: code, destination: spell(random.pick(destinations), oneSpelling),
            due: random.below(3) == 0 ? nil : random.pick(dates), priority: Int8(random.below(5)) - 2,
            insured: random.below(3) == 0 ? nil : random.below(2) == 0,
            declaredValue: random.below(3) == 0 ? nil : random.pick(reals), createdAt: random.pick(dates),
            parcels: keyOrder(parcelList))
    }
}

/// The logistics domain as every backend should hold it: shipments by the
/// bytes of their codes, each holding exactly its parcels, each holding
/// exactly its scans (what docs/SEMANTICS.md says a store keeps).
public struct LogisticsModel: Sendable {
    /// Shipments by the UTF-8 bytes of their codes.
    public var shipments: [[UInt8]: Shipment] = [:]

    public init() {}

    /// Every shipment, in key order.
    public var shipmentList: [Shipment] { Logistics.keyOrder(shipments.values) }
    /// Every parcel, in key order.
    public var parcelList: [Parcel] { Logistics.keyOrder(shipments.values.flatMap(\.parcels)) }
    /// Every scan, in key order.
    public var scanList: [Scan] { parcelList.flatMap(\.scans).sorted { $0.uniqueId < $1.uniqueId } }

    /// Upserts `shipment` with exactly its parcels (a parcel or scan held
    /// elsewhere moves here).
    public mutating func persist(_ shipment: Shipment) {
        let parcelIds = Set(shipment.parcels.map(\.uniqueId))
        let scanIds = Set(shipment.parcels.flatMap(\.scans).map(\.uniqueId))
        for (key, held) in shipments {
            shipments[key] = held.with(parcels: held.parcels.compactMap { parcel in
                guard !parcelIds.contains(parcel.uniqueId) else { return nil }
                var kept = parcel
                kept.scans.removeAll { scanIds.contains($0.uniqueId) }
                return kept
            })
        }
        shipments[Array(shipment.uniqueId.utf8)] = shipment
    }

    /// Upserts `parcel` with exactly its scans under the shipment it names;
    /// `false` (and nothing changed) when that shipment is not stored.
    @discardableResult
    public mutating func persist(_ parcel: Parcel) -> Bool {
        guard let owner = shipments[Array(parcel.shipmentCode.utf8)] else { return false }
        let scanIds = Set(parcel.scans.map(\.uniqueId))
        for (key, held) in shipments {
            shipments[key] = held.with(parcels: held.parcels.compactMap { kept in
                guard kept.uniqueId != parcel.uniqueId else { return nil }
                var kept = kept
                kept.scans.removeAll { scanIds.contains($0.uniqueId) }
                return kept
            })
        }
        let current = shipments[Array(owner.uniqueId.utf8)] ?? owner
        shipments[Array(owner.uniqueId.utf8)] = current.with(parcels: current.parcels + [parcel])
        return true
    }

    /// Erases the shipment `code` with everything it holds.
    public mutating func erase(shipment code: String) { shipments[Array(code.utf8)] = nil }

    /// Erases the parcels `erase` picks, with their scans; returns how many.
    @discardableResult
    public mutating func eraseParcels(where erase: (Parcel) -> Bool) -> Int {
        var erased = 0
        for (key, held) in shipments {
            let kept = held.parcels.filter { !erase($0) }
            erased += held.parcels.count - kept.count
            shipments[key] = held.with(parcels: kept)
        }
        return erased
    }
}

// MARK: - A sequence of writes, for the kill tests

/// The seeded sequence of calls the kill tests' writer makes: three-level
/// persists of whole shipments (new and rewritten), parcels moved between
/// shipments through their own storage, cascading erasures of shipments, and
/// erasures of parcels by a predicate over their scans (a relation).
public enum LogisticsWrites {
    /// One call.
    public enum Step: Sendable {
        case persist(Shipment)
        case move(Parcel)
        case erase(String)
        /// Erase every parcel without scans of the shipment.
        case eraseEmpty(String)
    }

    /// The `index`th call.
    public static func step(_ index: Int, oneSpelling: Bool) -> Step {
        var random = TestRandom(seed: UInt64(index) &* 104_729 &+ 5)
        let code = Logistics.codes[(index * 5) % Logistics.codes.count]
        switch index % 7 {
        case 3:
            // A parcel of a fresh key, put under a shipment by its own storage
            // (the shipment may be missing: then the call is refused).
            let target = Logistics.spell(Logistics.codes[(index * 3) % Logistics.codes.count], oneSpelling)
            var next = Int64(index) * 1_000 + 500
            let scanIds = (0..<3).map { _ -> Int64 in next += 1; return next }
            return .move(Logistics.parcel(Logistics.uuid(&random), of: target, scanIds: scanIds, &random,
                                          oneSpelling: oneSpelling, payload: 2_000))
        case 5: return .erase(Logistics.spell(Logistics.codes[(index * 7) % Logistics.codes.count], oneSpelling))
        case 6: return .eraseEmpty(Logistics.spell(Logistics.codes[(index * 11) % Logistics.codes.count], oneSpelling))
        default:
            var next = Int64(index) * 1_000
            return .persist(Logistics.shipment(code, parcels: 4 + random.below(8), &random, next: &next,
                                               oneSpelling: oneSpelling, payload: 2_000))
        }
    }

    /// The model after the first `count` calls.
    public static func state(after count: Int, oneSpelling: Bool) -> LogisticsModel {
        var model = LogisticsModel()
        for index in 0..<count {
            switch step(index, oneSpelling: oneSpelling) {
            case .persist(let shipment): model.persist(shipment)
            case .move(let parcel): model.persist(parcel)
            case .erase(let code): model.erase(shipment: code)
            case .eraseEmpty(let code):
                model.eraseParcels { StoredValue.sameScalars($0.shipmentCode, code) && $0.scans.isEmpty }
            }
        }
        return model
    }

    /// Makes the `index`th call through `daos`. A move to a shipment that is
    /// not stored is refused (`constraint`) and counts as done.
    public static func apply(_ index: Int, oneSpelling: Bool, to daos: LogisticsDAOs) throws {
        switch step(index, oneSpelling: oneSpelling) {
        case .persist(let shipment): try daos.shipments.persist(shipment)
        case .move(let parcel):
            do {
                try daos.parcels.persist(parcel)
            } catch let error as StorageError where error.kind == .constraint {
                // The model keeps nothing either.
            }
        case .erase(let code): _ = try daos.shipments.erase(byPrimaryKey: code)
        case .eraseEmpty(let code):
            _ = try daos.parcels.erase(where: #Predicate { $0.shipmentCode == code && $0.scans.isEmpty })
        }
    }
}
