import DAOCore
import Foundation
import TestSupport
import Testing

// The logistics domain (Tests/TestSupport/LogisticsDomain.swift, which
// StoreHelper writes too) as the trial's tests open it, and what its model
// does beyond the shared one.

/// Opens `backend` in `directory`, runs `body` with the logistics DAOs, and
/// closes the store (also when `body` throws).
func withLogistics<T>(_ backend: TestBackend, in directory: URL, _ body: (LogisticsDAOs, any MigratableStore) throws -> T)
    throws -> T
{
    try withStore(backend, in: directory, LogisticsDAOs.init, body)
}

/// The logistics writes `0..<calls` made in `directory`, and the model of what
/// they leave.
func seededLogistics(_ backend: TestBackend, in directory: URL, calls: Int) throws -> LogisticsModel {
    try withLogistics(backend, in: directory) { daos, _ in
        for index in 0..<calls { try LogisticsWrites.apply(index, oneSpelling: oneSpelling(backend), to: daos) }
    }
    return LogisticsWrites.state(after: calls, oneSpelling: oneSpelling(backend))
}

extension LogisticsModel {
    /// Upserts `scan` under the parcel it names; `false` when that parcel is not stored.
    @discardableResult
    mutating func persist(_ scan: Scan) -> Bool {
        guard var parcel = parcelList.first(where: { $0.uniqueId == scan.parcelId }) else { return false }
        for (key, held) in shipments {
            shipments[key] = held.with(parcels: held.parcels.map { kept in
                var kept = kept
                kept.scans.removeAll { $0.uniqueId == scan.uniqueId }
                return kept
            })
        }
        parcel = parcelList.first(where: { $0.uniqueId == scan.parcelId }) ?? parcel
        parcel.scans = (parcel.scans + [scan]).sorted { $0.uniqueId < $1.uniqueId }
        persist(parcel)
        return true
    }

    /// Erases the scans `erase` picks; returns how many.
    @discardableResult
    mutating func eraseScans(where erase: (Scan) -> Bool) -> Int {
        var erased = 0
        for (key, held) in shipments {
            shipments[key] = held.with(parcels: held.parcels.map { kept in
                var kept = kept
                let before = kept.scans.count
                kept.scans.removeAll(where: erase)
                erased += before - kept.scans.count
                return kept
            })
        }
        return erased
    }
}

/// The logistics domain as the tests run on several domains see it.
struct LogisticsTrial: TrialDomain {
    var description: String { "logistics" }
    var writer: String { "logistics-write" }
    var kills: KillPlan {
        KillPlan(
            rounds: ProcessInfo.processInfo.environment["STORAGE_TORTURE"] == "1" ? 40 : 4, seedStart: 7, seedFactor: 131,
            delayBound: 4_000, target: { _, written, random in written + 1 + random.below(5) },
            end: { _, target in target + 30 })
    }

    func reopened(_ backend: TestBackend, in directory: URL, round: Int) throws -> (_ calls: Int) -> Bool {
        let (shipments, parcels, scans, agree, indexed) = try withLogistics(backend, in: directory) { daos, _ in
            let shipments = try daos.shipments.read()
            let parcels = try daos.parcels.read()
            let scans = try daos.scans.read()
            let agree = try daos.counts() == [shipments.count, parcels.count, scans.count]
            // The composite indexes answer as the tree says.
            var indexed = true
            for shipment in shipments {
                let code = shipment.uniqueId
                let byIndex = try daos.parcels.read(where: #Predicate { $0.shipmentCode == code }, sortedBy: [SortDescriptor(\.weight)])
                // The total order: -0.0 tied with 0.0, NaN last; ties by key.
                let want = shipment.parcels.sorted {
                    (compareValues($0.weight, $1.weight), $0.uniqueId.uuidString) < (0, $1.uniqueId.uuidString)
                }
                if !sameBits(byIndex, want) { indexed = false }
                for parcel in shipment.parcels {
                    let id = parcel.uniqueId
                    let scansByIndex = try daos.scans.read(where: #Predicate { $0.parcelId == id })
                    if !sameBits(scansByIndex, parcel.scans) { indexed = false }
                }
            }
            return (shipments, parcels, scans, agree, indexed)
        }
        #expect(agree, "round \(round) on \(backend.name): the levels' own counts disagree with the tree")
        #expect(indexed, "round \(round) on \(backend.name): an index disagrees with the tree")
        let spelled = oneSpelling(backend)
        return { calls in
            let model = LogisticsWrites.state(after: calls, oneSpelling: spelled)
            return sameBits(shipments, model.shipmentList) && sameBits(parcels, model.parcelList)
                && sameBits(scans, model.scanList)
        }
    }
}
