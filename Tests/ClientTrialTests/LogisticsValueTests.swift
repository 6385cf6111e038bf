import DAOCore
import Foundation
import TestSupport
import Testing

// The logistics domain's values at their edges on every backend: every real
// the README says comes back (±infinity, subnormals of both signs, the
// greatest magnitudes) in a Double, a Float, an optional Double and a Date,
// at each of the three levels and in composite indexes; UUID keys and UUID
// foreign keys; NFC and NFD codes as two shipments. NaN and -0.0 are refused
// at every level with `invalidArgument` naming the field, and nothing of the
// batch is written.

@Suite("Client trial, logistics: values at their edges and the values no backend stores")
struct LogisticsValueTests {
    /// One shipment per real, each with a parcel and a scan holding it everywhere a real goes.
    static func edgeShipments(oneSpelling: Bool) -> [Shipment] {
        var random = TrackerRandom(seed: 77)
        var shipments: [Shipment] = []
        for (index, real) in Logistics.reals.enumerated() {
            let parcelId = Logistics.uuid(&random)
            let date = Date(timeIntervalSinceReferenceDate: real)
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

    @Test("every real, float and date at its edge comes back bit for bit, through indexes too", arguments: trialBackends)
    func edges(backend: TrialBackend) throws {
        let directory = try TemporaryDirectory("logistics-edges")
        let shipments = Self.edgeShipments(oneSpelling: oneSpelling(backend))
        try withLogistics(backend, in: directory.url) { daos, _ in try daos.shipments.persist(shipments) }
        try withLogistics(backend, in: directory.url) { daos, _ in
            let read = try daos.shipments.read()
            #expect(sameBits(read, shipments), "\(backend.name): \(firstDifference(read, shipments))")
            // Through the composite indexes, one real at a time.
            for shipment in shipments {
                let parcel = shipment.parcels[0], scan = parcel.scans[0]
                let code = shipment.uniqueId, weight = parcel.weight, temperature = scan.temperature, due = shipment.due
                let byWeight = try daos.parcels.read(where: #Predicate { $0.shipmentCode == code && $0.weight == weight })
                #expect(sameBits(byWeight, [parcel]), "\(backend.name): parcel of weight \(weight)")
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
            let hot = try daos.scans.read(
                where: #Predicate { $0.place == "edge" && $0.temperature != nil }, sortedBy: [SortDescriptor(\.temperature, order: .reverse)],
                limit: 3)
            #expect(hot.map(\.temperature) == [.infinity, .greatestFiniteMagnitude, 42], "\(backend.name): \(hot.map(\.temperature))")
        }
    }

    @Test("NaN and -0.0 are refused at every level and field kind; nothing of the batch is written", arguments: trialBackends)
    func refused(backend: TrialBackend) throws {
        let directory = try TemporaryDirectory("logistics-refused")
        let good = Self.edgeShipments(oneSpelling: oneSpelling(backend))
        try withLogistics(backend, in: directory.url) { daos, _ in try daos.shipments.persist(Array(good.prefix(3))) }
        let before = try fileContents(directory.url)
        let base = good[5]
        typealias Change = (String, String, (inout Shipment) -> Void)
        let changes: [Change] = [
            ("declaredValue", "lg_shipments", { $0 = Shipment(uniqueId: $0.uniqueId, destination: $0.destination, due: $0.due,
                priority: $0.priority, insured: nil, declaredValue: -0.0, createdAt: $0.createdAt, parcels: $0.parcels) }),
            ("createdAt", "lg_shipments", { $0 = Shipment(uniqueId: $0.uniqueId, destination: $0.destination, due: $0.due,
                priority: $0.priority, insured: nil, declaredValue: nil,
                createdAt: Date(timeIntervalSinceReferenceDate: .nan), parcels: $0.parcels) }),
            ("weight", "lg_parcels", { var p = $0.parcels; p[0].weight = .nan; $0 = $0.with(parcels: p) }),
            ("volume", "lg_parcels", { var p = $0.parcels; p[0].volume = -Float(0); $0 = $0.with(parcels: p) }),
            ("sealedAt", "lg_parcels", { var p = $0.parcels; p[0].sealedAt = Date(timeIntervalSinceReferenceDate: -0.0)
                $0 = $0.with(parcels: p) }),
            ("temperature", "lg_scans", { var p = $0.parcels; p[0].scans[0].temperature = -0.0; $0 = $0.with(parcels: p) }),
            ("at", "lg_scans", { var p = $0.parcels; p[0].scans[0].at = Date(timeIntervalSinceReferenceDate: .nan)
                $0 = $0.with(parcels: p) }),
        ]
        try withLogistics(backend, in: directory.url) { daos, _ in
            for (field, entity, change) in changes {
                var bad = base
                change(&bad)
                // The bad record last in a batch: the good ones before it are not written either.
                let error = expectStorageError(.invalidArgument, "\(field) on \(backend.name)") {
                    try daos.shipments.persist([good[6], good[7], bad])
                }
                #expect(error?.entity == entity, "\(field) on \(backend.name): entity \(String(describing: error?.entity))")
                #expect(error?.message.contains("'\(field)'") == true, "\(field) on \(backend.name): \(String(describing: error))")
                let counts = try daos.counts()
                #expect(counts == [3, 3, 3], "\(field) on \(backend.name): something was written")
            }
            // The same through the lower levels' own storages.
            var parcel = good[0].parcels[0]
            parcel.weight = -0.0
            expectStorageError(.invalidArgument, "a parcel by its own storage on \(backend.name)") { try daos.parcels.persist(parcel) }
            var scan = good[0].parcels[0].scans[0]
            scan.temperature = .nan
            expectStorageError(.invalidArgument, "a scan by its own storage on \(backend.name)") { try daos.scans.persist(scan) }
            let read = try daos.shipments.read()
            #expect(read == Array(good.prefix(3)))
        }
        #expect(try fileContents(directory.url).filter { !$0.key.hasSuffix("lock") && !$0.key.hasSuffix("-shm") && !$0.key.hasSuffix("-wal") }
                == before.filter { !$0.key.hasSuffix("lock") && !$0.key.hasSuffix("-shm") && !$0.key.hasSuffix("-wal") },
                "\(backend.name): a refused call changed the store's files")
    }

    @Test("codes equal in NFC but not in bytes are three shipments, each with its own parcels", arguments: trialBackends)
    func spellings(backend: TrialBackend) throws {
        let directory = try TemporaryDirectory("logistics-spellings")
        var random = TrackerRandom(seed: 5)
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
