import DAOCore
import Foundation
import TestSupport
import Testing

// The logistics writer (StoreHelper's `logistics-write`, a second process)
// killed with SIGKILL during three-level persists with bytes of 2 KB per
// parcel, moves of a parcel by its own storage, cascading erasures and
// erasures of parcels by a predicate over their scans, again and again on
// one store. Each reopen must hold exactly the calls that returned and of
// the one under way all or nothing, every level's own count agreeing, and
// the composite indexes agreeing with the tree. 4 kills per backend; 40 with
// STORAGE_TORTURE=1.

@Suite("Client trial, logistics: a writer killed mid-write loses no returned call and shows nothing half-written")
struct LogisticsKillTests {
    static var kills: Int { ProcessInfo.processInfo.environment["STORAGE_TORTURE"] == "1" ? 40 : 4 }

    @Test("SIGKILL during persists, moves and erasures, then reopen", arguments: localBackends)
    func killed(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("logistics-kill")
        var random = TestRandom(seed: UInt64(backend.name.utf8.reduce(7) { $0 &* 131 &+ UInt64($1) }))
        let spelled = oneSpelling(backend)
        var written = 0
        for round in 0..<Self.kills {
            let target = written + 1 + random.below(5)
            let (returned, killed, writer) = try HelperProcess.runAndKill(
                ["logistics-write", backend.name, directory.url.path, "\(written)", "\(target + 30)"],
                afterDone: target - written, delayMicroseconds: UInt32(random.below(4_000)))
            let done = written + returned
            if !killed { Issue.record("round \(round): the writer ended before it was killed: \(writer)") }
            let (shipments, parcels, scans, agree, indexed) = try withLogistics(backend, in: directory.url) { daos, _ in
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
            func matches(_ model: LogisticsModel) -> Bool {
                sameBits(shipments, model.shipmentList) && sameBits(parcels, model.parcelList) && sameBits(scans, model.scanList)
            }
            if matches(LogisticsWrites.state(after: done, oneSpelling: spelled)) {
                written = done
            } else if matches(LogisticsWrites.state(after: done + 1, oneSpelling: spelled)) {
                written = done + 1
            } else {
                Issue.record("round \(round) on \(backend.name): after \(done) returned calls the store holds neither state")
                return
            }
        }
        #expect(written >= Self.kills)
    }
}
