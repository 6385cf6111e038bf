import DAOCore
import Foundation
import TestSupport
import Testing

// Observation (docs/OBSERVATION.md) of the logistics domain: one parcel by its
// UUID key, the scans of that parcel, and the shipments holding a parcel with a
// failed scan (a predicate two relations down), while the parcel moves between
// shipments (by its own storage and by a shipment's rewrite), gains scans by
// the scans' own storage, loses them by a predicate, and is erased by a
// predicate over a relation.

@Suite("Client trial, logistics: observation across three levels with UUID keys")
struct LogisticsObservationTests {
    @Test("every change reaches the observers of a parcel, its scans and its shipments", arguments: localBackends)
    func observed(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory("logistics-observe")
        let store = try backend.open(directory.url)
        let daos = try LogisticsDAOs(store)
        var random = TestRandom(seed: 31)
        var next: Int64 = 0
        let spelled = oneSpelling(backend)
        let shipments = ["north", "south", "east"].map {
            Logistics.shipment($0, parcels: 2, &random, next: &next, oneSpelling: spelled)
        }
        try await daos.shipments.persist(shipments)
        var parcel = shipments[0].parcels[0]
        let id = parcel.uniqueId
        let failing = #Predicate<ShipmentRecord> { shipment in
            shipment.parcels.contains { parcel in parcel.scans.contains { scan in !scan.ok } }
        }
        let ofParcel = #Predicate<ScanRecord> { $0.parcelId == id }
        let parcelIterator = daos.parcels.observe(primaryKey: id).makeAsyncIterator()
        let scansIterator = daos.scans.observe(where: ofParcel, sortedBy: [SortDescriptor(\.at, order: .reverse)]).makeAsyncIterator()
        let shipmentsIterator = daos.shipments.observe(where: failing, sortedBy: [SortDescriptor(\.parcels.count)]).makeAsyncIterator()
        var parcelRows = try #require(try await nextSnapshot(parcelIterator)).results
        var scanRows = try #require(try await nextSnapshot(scansIterator)).results
        var shipmentRows = try #require(try await nextSnapshot(shipmentsIterator)).results

        var steps: [(String, () throws -> Void)] = []
        steps.append(("a failed scan by the scans' storage", {
            try daos.scans.persist(Scan(uniqueId: 9_001, parcelId: id, at: Logistics.dates[1], place: "dock", temperature: nil,
                                        ok: false, raw: nil))
        }))
        steps.append(("the parcel moved to south by its own storage", {
            parcel = try daos.parcels.read(byPrimaryKey: id) ?? parcel
            parcel.shipmentCode = "south"
            try daos.parcels.persist(parcel)
        }))
        steps.append(("east rewritten holding the parcel", {
            let east = try daos.shipments.read(byPrimaryKey: "east")
            var moved = try daos.parcels.read(byPrimaryKey: id) ?? parcel
            moved.shipmentCode = "east"
            try daos.shipments.persist(#require(east).with(parcels: (east?.parcels ?? []) + [moved]))
        }))
        steps.append(("the failed scans erased by a predicate", {
            _ = try daos.scans.erase(where: #Predicate { !$0.ok })
        }))
        steps.append(("two scans more", {
            try daos.scans.persist([
                Scan(uniqueId: Int64.min, parcelId: id, at: Logistics.dates[5], place: "a", temperature: -.infinity, ok: false, raw: nil),
                Scan(uniqueId: Int64.max, parcelId: id, at: Logistics.dates[6], place: "b", temperature: Double(bitPattern: 1 << 40), ok: true, raw: Data([0])),
            ])
        }))
        steps.append(("parcels with a failed scan erased by a relation predicate", {
            _ = try daos.parcels.erase(where: #Predicate { parcel in parcel.scans.contains { !$0.ok } })
        }))
        steps.append(("the parcel back under north", {
            var back = parcel
            back.shipmentCode = "north"
            back.scans = []
            try daos.parcels.persist(back)
        }))
        for (name, step) in steps {
            try step()
            let freshParcel = try await daos.parcels.read(byPrimaryKey: id).map { [$0] } ?? []
            let freshScans = try await daos.scans.read(where: ofParcel, sortedBy: [SortDescriptor(\.at, order: .reverse)])
            let freshShipments = try await daos.shipments.read(where: failing, sortedBy: [SortDescriptor(\.parcels.count)])
            if !sameBits(freshParcel, parcelRows) {
                let snapshot = try #require(try await nextSnapshot(parcelIterator), "\(name) on \(backend.name)")
                parcelRows = snapshot.results
                #expect(sameBits(parcelRows, freshParcel), "the parcel: \(name) on \(backend.name)")
            }
            if !sameBits(freshScans, scanRows) {
                let snapshot = try #require(try await nextSnapshot(scansIterator), "\(name) on \(backend.name)")
                let changes = try #require(snapshot.changes)
                scanRows = try #require(applying(changes, to: scanRows, from: snapshot.results))
                #expect(sameBits(scanRows, freshScans), "the parcel's scans: \(name) on \(backend.name)")
            }
            if !sameBits(freshShipments, shipmentRows) {
                let snapshot = try #require(try await nextSnapshot(shipmentsIterator), "\(name) on \(backend.name)")
                let changes = try #require(snapshot.changes)
                shipmentRows = try #require(applying(changes, to: shipmentRows, from: snapshot.results))
                #expect(sameBits(shipmentRows, freshShipments), "failing shipments: \(name) on \(backend.name)")
            }
        }
        #expect(parcelRows.first?.shipmentCode == "north")
        try store.close()
    }
}
