import DAOCore
import Foundation
import TestSupport
import Testing

// The logistics domain's values at their edges on every backend: every real
// the README says comes back (both zeros, NaN, ±infinity, subnormals of both
// signs, the greatest magnitudes) in a Double, a Float, an optional Double
// and a Date, at each of the three levels and in composite indexes, found by
// `==` and ranges as IEEE 754 says and sorted in the semantics' total order;
// UUID keys and UUID foreign keys; NFC and NFD codes as two shipments. NaN
// and -0.0 are stored at every level and come back bit for bit (the property
// list refuses a date of -0.0 seconds with `invalidArgument` naming the
// field, and nothing of the batch is written).

@Suite("Client trial, logistics: values at their edges, NaN and -0.0")
struct LogisticsValueTests {
    /// One shipment per real, each with a parcel and a scan holding it
    /// everywhere a real goes (a date of 0.0 seconds for -0.0 on the property
    /// list, which refuses a date of -0.0).
    static func edgeShipments(backend: TestBackend) -> [Shipment] {
        var random = TestRandom(seed: 77)
        var shipments: [Shipment] = []
        let oneSpelling = oneSpelling(backend)
        for (index, real) in Logistics.reals.enumerated() {
            let parcelId = Logistics.uuid(&random)
            let negativeZeroDate = real == 0 && real.sign == .minus && backend.name == "plist"
            let date = Date(timeIntervalSinceReferenceDate: negativeZeroDate ? 0 : real)
            let scan = Scan(
                uniqueId: [Int64.min + Int64(index), Int64.max - Int64(index), Int64(index), -Int64(index)][index % 4],
                parcelId: parcelId, at: date, place: "edge", temperature: real, ok: index % 2 == 0, raw: Data([0, 255]))
            let parcel = Parcel(
                uniqueId: parcelId, shipmentCode: "", label: "edge \(index)", weight: real,
                volume: Logistics.floats[index % Logistics.floats.count], status: nil, tier: nil, pieces: nil, seq: nil,
                small: nil, count: nil, big: nil, note: nil, barcode: Data(), photo: nil, fragile: false, signed: nil,
                ref: parcelId, sealedAt: date, tiny: nil, scans: [scan])
            let code = Logistics.spell(Logistics.codes[index % Logistics.codes.count], oneSpelling) + "#\(index)"
            var fixed = parcel
            fixed.shipmentCode = code
            shipments.append(Shipment(
                uniqueId: code, destination: "edge", due: date, priority: Int8(index % 3) - 1, insured: nil,
                declaredValue: real, createdAt: date, parcels: [fixed]))
        }
        return Logistics.keyOrder(shipments)
    }

    @Test("every real, float and date at its edge comes back bit for bit, through indexes too, NaN and -0.0 included", arguments: localBackends)
    func edges(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("logistics-edges")
        let shipments = Self.edgeShipments(backend: backend)
        try withLogistics(backend, in: directory.url) { daos, _ in try daos.shipments.persist(shipments) }
        try withLogistics(backend, in: directory.url) { daos, _ in
            let read = try daos.shipments.read()
            #expect(sameBits(read, shipments), "\(backend.name): \(firstDifference(read, shipments))")
            // Through the composite indexes, one real at a time.
            for shipment in shipments {
                let parcel = shipment.parcels[0], scan = parcel.scans[0]
                let code = shipment.uniqueId, weight = parcel.weight, temperature = scan.temperature, due = shipment.due
                let byWeight = try daos.parcels.read(where: #Predicate { $0.shipmentCode == code && $0.weight == weight })
                // NaN equals nothing, itself included.
                let wantWeight = [parcel].filter { $0.weight == weight }
                #expect(wantWeight.count == (weight.isNaN ? 0 : 1))
                #expect(sameBits(byWeight, wantWeight), "\(backend.name): parcel of weight \(weight)")
                let byTemperature = try daos.scans.read(where: #Predicate { $0.place == "edge" && $0.temperature == temperature })
                let wantScans = shipments.flatMap(\.parcels).flatMap(\.scans).filter { $0.temperature == temperature }
                    .sorted { $0.uniqueId < $1.uniqueId }
                #expect(sameBits(byTemperature, wantScans), "\(backend.name): scan of temperature \(String(describing: temperature))")
                let byDue = try daos.shipments.read(where: #Predicate { $0.destination == "edge" && $0.due == due })
                let want = shipments.filter { $0.due == due }
                #expect(sameBits(byDue, want), "\(backend.name): shipments due \(String(describing: due))")
            }
            // Ranges across the subnormals and infinities, in the index's order.
            let tiny = Double.leastNormalMagnitude
            let near = try daos.parcels.read(
                where: #Predicate { $0.weight > -tiny && $0.weight < tiny }, sortedBy: [SortDescriptor(\.weight)])
            let wantNear = shipments.flatMap(\.parcels).filter { $0.weight > -tiny && $0.weight < tiny }
                .sorted { ($0.weight, $0.uniqueId.uuidString) < ($1.weight, $1.uniqueId.uuidString) }
            #expect(sameBits(near, wantNear), "\(backend.name): \(firstDifference(near, wantNear))")
            // Reversed, the total order puts the NaN first, then +infinity.
            let hot = try daos.scans.read(
                where: #Predicate { $0.place == "edge" && $0.temperature != nil }, sortedBy: [SortDescriptor(\.temperature, order: .reverse)],
                limit: 3)
            #expect(hot.map { $0.temperature?.bitPattern } == [Double.nan, .infinity, .greatestFiniteMagnitude].map(\.bitPattern),
                    "\(backend.name): \(hot.map(\.temperature))")
            // Both zeros tie, in key order, between the negative and the positive reals.
            let zeros = try daos.parcels.read(
                where: #Predicate { $0.weight >= -1 && $0.weight <= 1 }, sortedBy: [SortDescriptor(\.weight)])
            let wantZeros = shipments.flatMap(\.parcels).filter { $0.weight >= -1 && $0.weight <= 1 }
                .sorted { (compareValues($0.weight, $1.weight), $0.uniqueId.uuidString) < (0, $1.uniqueId.uuidString) }
            #expect(wantZeros.filter { $0.weight == 0 }.count == 3)
            #expect(sameBits(zeros, wantZeros), "\(backend.name): \(firstDifference(zeros, wantZeros))")
        }
    }

    @Test("NaN and -0.0 are stored at every level and field kind and come back bit for bit (the property list refuses a date of -0.0)",
          arguments: localBackends)
    func nanAndNegativeZero(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("logistics-reals")
        let good = Self.edgeShipments(backend: backend)
        try withLogistics(backend, in: directory.url) { daos, _ in try daos.shipments.persist(Array(good.prefix(3))) }
        let base = good[5]
        let parcelId = base.parcels[0].uniqueId
        let scanId = base.parcels[0].scans[0].uniqueId
        func parcel(_ shipment: Shipment?) -> Parcel? { shipment?.parcels.first { $0.uniqueId == parcelId } }
        func scan(_ shipment: Shipment?) -> Scan? { parcel(shipment)?.scans.first { $0.uniqueId == scanId } }
        /// A field, the entity it is stored in, the value, how to set it and how to read its bits back.
        typealias Change = (field: String, entity: String, value: Double, set: (inout Shipment) -> Void, bits: (Shipment?) -> UInt64?)
        func changes(_ value: Double) -> [Change] {
            [
                ("declaredValue", "lg_shipments", value, { $0 = Shipment(uniqueId: $0.uniqueId, destination: $0.destination, due: $0.due,
                    priority: $0.priority, insured: nil, declaredValue: value, createdAt: $0.createdAt, parcels: $0.parcels) },
                 { $0?.declaredValue?.bitPattern }),
                ("createdAt", "lg_shipments", value, { $0 = Shipment(uniqueId: $0.uniqueId, destination: $0.destination, due: $0.due,
                    priority: $0.priority, insured: nil, declaredValue: nil,
                    createdAt: Date(timeIntervalSinceReferenceDate: value), parcels: $0.parcels) },
                 { $0?.createdAt.timeIntervalSinceReferenceDate.bitPattern }),
                ("weight", "lg_parcels", value, { var p = $0.parcels; p[0].weight = value; $0 = $0.with(parcels: p) },
                 { parcel($0)?.weight.bitPattern }),
                ("volume", "lg_parcels", value, { var p = $0.parcels; p[0].volume = Float(value); $0 = $0.with(parcels: p) },
                 { parcel($0)?.volume.map { Double($0).bitPattern } }),
                ("sealedAt", "lg_parcels", value, { var p = $0.parcels; p[0].sealedAt = Date(timeIntervalSinceReferenceDate: value)
                    $0 = $0.with(parcels: p) }, { parcel($0)?.sealedAt?.timeIntervalSinceReferenceDate.bitPattern }),
                ("temperature", "lg_scans", value, { var p = $0.parcels; p[0].scans[0].temperature = value; $0 = $0.with(parcels: p) },
                 { scan($0)?.temperature?.bitPattern }),
                ("at", "lg_scans", value, { var p = $0.parcels; p[0].scans[0].at = Date(timeIntervalSinceReferenceDate: value)
                    $0 = $0.with(parcels: p) }, { scan($0)?.at.timeIntervalSinceReferenceDate.bitPattern }),
            ]
        }
        // LMDB keeps a NaN's sign and payload, and so do the file stores
        // until they are opened again; SQLite gives back the canonical NaN
        // (docs/SEMANTICS.md).
        let keepsPayloads = backend.name != "sqlite"
        let values: [Double] = [-0.0, .nan, -Double.nan, Double(bitPattern: 0x7FF0_0000_0000_0001)]
        try withLogistics(backend, in: directory.url) { daos, _ in
            for value in values {
                for change in changes(value) {
                    var changed = base
                    change.set(&changed)
                    let what = "\(change.field) = \(value) on \(backend.name)"
                    if backend.name == "plist", !value.isNaN, change.field == "createdAt" || change.field == "sealedAt" || change.field == "at" {
                        // The property list refuses a date of -0.0; nothing of the batch is written.
                        let before = try daos.counts()
                        let error = expectStorageError(.invalidArgument, "\(what)") { try daos.shipments.persist([good[6], good[7], changed]) }
                        #expect(error?.entity == change.entity, "\(what): entity \(String(describing: error?.entity))")
                        #expect(error?.message.contains("'\(change.field)'") == true, "\(what): \(String(describing: error))")
                        #expect(try daos.counts() == before, "\(what): something was written")
                        continue
                    }
                    try daos.shipments.persist([changed])
                    let read = try daos.shipments.read(byPrimaryKey: base.uniqueId)
                    let bits = change.bits(read)
                    if value.isNaN && (change.field == "volume" || !keepsPayloads) {
                        // The canonical NaN; a float keeps no more of a NaN's bits.
                        #expect(bits.map { Double(bitPattern: $0).isNaN } == true, "\(what)")
                    } else {
                        #expect(bits == (change.field == "volume" ? Double(Float(value)).bitPattern : value.bitPattern), "\(what)")
                    }
                }
            }
            // The same through the lower levels' own storages.
            var parcelRecord = good[0].parcels[0]
            parcelRecord.weight = -0.0
            try daos.parcels.persist(parcelRecord)
            #expect(try daos.parcels.read(byPrimaryKey: parcelRecord.uniqueId)?.weight.bitPattern == (-0.0).bitPattern)
            var scanRecord = good[0].parcels[0].scans[0]
            scanRecord.temperature = .nan
            try daos.scans.persist(scanRecord)
            #expect(try daos.scans.read(byPrimaryKey: scanRecord.uniqueId)?.temperature?.isNaN == true)
        }
        // After reopening, the last values written.
        try withLogistics(backend, in: directory.url) { daos, _ in
            #expect(try daos.parcels.read(byPrimaryKey: good[0].parcels[0].uniqueId)?.weight.bitPattern == (-0.0).bitPattern,
                    "\(backend.name) after reopening")
            let read = try daos.shipments.read(byPrimaryKey: base.uniqueId)
            #expect(scan(read)?.at.timeIntervalSinceReferenceDate.isNaN == true, "\(backend.name) after reopening")
            #expect(try daos.scans.read(byPrimaryKey: good[0].parcels[0].scans[0].uniqueId)?.temperature?.isNaN == true)
        }
    }

    @Test("codes equal in NFC but not in bytes are three shipments, each with its own parcels", arguments: localBackends)
    func spellings(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("logistics-spellings")
        var random = TestRandom(seed: 5)
        var next: Int64 = 0
        // The codes as given; every other text in NFC on plist.
        let twins = ["\u{C5}rhus", "A\u{30A}rhus", "\u{212B}rhus"].map { code -> Shipment in
            let made = Logistics.shipment("x", parcels: 2, &random, next: &next, oneSpelling: oneSpelling(backend))
            return Shipment(
                uniqueId: code, destination: made.destination, due: made.due, priority: made.priority,
                insured: made.insured, declaredValue: made.declaredValue, createdAt: made.createdAt,
                parcels: made.parcels.map { var parcel = $0; parcel.shipmentCode = code; return parcel })
        }
        try withLogistics(backend, in: directory.url) { daos, _ in
            if backend.name == "plist" {
                // docs/SEMANTICS.md: the property-list store refuses a second
                // spelling of canonically equivalent text in one document.
                try daos.shipments.persist(twins[0])
                expectStorageError(.invalidArgument, "a second spelling on plist") { try daos.shipments.persist(twins[1]) }
                let counts = try daos.counts()
                #expect(counts[0] == 1)
                return
            }
            try daos.shipments.persist(twins)
            for twin in twins {
                let code = twin.uniqueId
                let read = try daos.shipments.read(where: #Predicate { $0.code == code })
                #expect(sameBits(read, [twin]), "\(backend.name): \(scalars(code))")
                let parcels = try daos.parcels.read(where: #Predicate { $0.shipmentCode == code })
                #expect(sameBits(parcels, twin.parcels), "\(backend.name): parcels of \(scalars(code))")
            }
            let erased = try daos.shipments.erase(byPrimaryKey: twins[1].uniqueId)
            let left = try daos.shipments.read()
            #expect(erased)
            #expect(sameBits(left, Logistics.keyOrder([twins[0], twins[2]])))
        }
    }
}
