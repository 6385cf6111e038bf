import DAOCore
import Foundation
import TestSupport
import Testing

// Calls at the edges of the DAO's contract, made on every backend and written
// down as a transcript that must be the same everywhere: keys named twice in
// reads and erasures, one parent twice in a batch, a parcel held by two
// shipments in one batch, children naming another parent (also in another
// normalization), limits of zero and below, UUID keys that are not stored.

/// The transcript of the edge calls on `backend`.
func logisticsEdgeTranscript(_ backend: TestBackend) throws -> [String] {
    let directory = try TemporaryDirectory("logistics-edge")
    var lines: [String] = []
    func note(_ step: String, _ body: () throws -> String) {
        do {
            lines.append("\(step): \(try body())")
        } catch let error as StorageError {
            lines.append("\(step): error \(error.kind) in \(error.operation) of \(error.entity ?? "-")")
        } catch {
            lines.append("\(step): untyped \(type(of: error))")
        }
    }
    var random = TestRandom(seed: 404)
    var next: Int64 = 0
    let a = Logistics.shipment("A", parcels: 3, &random, next: &next, oneSpelling: true)
    let b = Logistics.shipment("B", parcels: 2, &random, next: &next, oneSpelling: true)
    func describe(_ shipments: [Shipment]) -> String {
        shipments.map { "\($0.uniqueId)[\($0.parcels.map { String($0.uniqueId.uuidString.prefix(4)) + ":\($0.scans.count)" }.joined(separator: ","))]" }
            .joined(separator: " ")
    }
    try withLogistics(backend, in: directory.url) { daos, _ in
        note("persist A and B") { try daos.shipments.persist([a, b]); return describe(try daos.shipments.read()) }
        let k1 = a.parcels[0].uniqueId, k2 = b.parcels[1].uniqueId, missing = UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))
        note("read parcels k1, k2, k1, missing") {
            try daos.parcels.read(byPrimaryKeys: [k1, k2, k1, missing]).map { String($0.uniqueId.uuidString.prefix(4)) }.joined(separator: ",")
        }
        note("read a missing UUID") { "\(try daos.parcels.read(byPrimaryKey: missing) == nil)" }
        note("limit 0") { "\(try daos.parcels.read(limit: 0).count)" }
        note("limit -1") { "\(try daos.parcels.read(limit: -1).count)" }
        note("limit 1 sorted by weight reversed") {
            try daos.parcels.read(sortedBy: [SortDescriptor(\.weight, order: .reverse)], limit: 1).map { "\($0.weight)" }.joined()
        }
        note("A twice in one batch, the second with B's first parcel") {
            var taken = b.parcels[0]
            taken.shipmentCode = "A"
            try daos.shipments.persist([a, a.with(parcels: [taken])])
            return describe(try daos.shipments.read())
        }
        note("one parcel held by A and by B in one batch") {
            var shared = a.parcels[1]
            shared.shipmentCode = "B"
            try daos.shipments.persist([a, b.with(parcels: b.parcels + [shared])])
            return describe(try daos.shipments.read())
        }
        note("a parcel in A naming B") {
            var wrong = a.parcels[2]
            wrong.shipmentCode = "B"
            try daos.shipments.persist(a.with(parcels: [wrong]))
            return describe(try daos.shipments.read())
        }
        note("a scan in a parcel naming another parcel") {
            var parcel = a.parcels[0]
            parcel.scans = [Scan(uniqueId: 77, parcelId: k2, at: Logistics.dates[0], place: "p", temperature: nil, ok: true, raw: nil)]
            try daos.shipments.persist(a.with(parcels: [parcel]))
            return describe(try daos.shipments.read())
        }
        note("a parcel by its own storage naming a missing shipment") {
            var orphan = a.parcels[0]
            orphan.shipmentCode = "nowhere"
            try daos.parcels.persist(orphan)
            return describe(try daos.shipments.read())
        }
        note("a scan by its own storage naming a missing parcel") {
            try daos.scans.persist(Scan(uniqueId: 78, parcelId: missing, at: Logistics.dates[0], place: "p", temperature: nil, ok: true, raw: nil))
            return "\(try daos.scans.count())"
        }
        note("erase parcels k1, k1, missing") { "\(try daos.parcels.erase(byPrimaryKeys: [k1, k1, missing]))" }
        note("erase shipments A, A") { "\(try daos.shipments.erase(byPrimaryKeys: ["A", "A"]))" }
        note("erase shipments nothing") { "\(try daos.shipments.erase(byPrimaryKeys: []))" }
        note("erase scans by a predicate matching none") { "\(try daos.scans.erase(where: #Predicate { $0.id == 123_456_789 }))" }
        note("erase every scan") { "\(try daos.scans.erase())" }
        note("counts at the end") { try daos.counts().map(String.init).joined(separator: ",") }
        note("shipments at the end") { describe(try daos.shipments.read()) }
    }
    return lines
}

@Suite("Client trial, logistics: calls at the edges of the contract answer alike")
struct LogisticsEdgeTests {
    @Test("one transcript on every backend")
    func sameEverywhere() throws {
        let transcripts = try localBackends.map { ($0.name, try logisticsEdgeTranscript($0)) }
        let (firstName, first) = transcripts[0]
        for (name, lines) in transcripts.dropFirst() {
            for (index, (mine, theirs)) in zip(lines, first).enumerated() where mine != theirs {
                Issue.record("line \(index): \(name) says \"\(mine)\", \(firstName) says \"\(theirs)\"")
            }
            #expect(lines.count == first.count)
        }
        // What the documents say, whichever backend: limits below zero are
        // refused, children naming another parent are constraint errors.
        #expect(first.contains { $0.hasPrefix("limit -1: error invalidArgument") }, "\(first)")
        #expect(first.contains { $0.hasPrefix("a parcel in A naming B: error constraint") }, "\(first)")
    }

    @Test("a parcel naming its shipment's code in the other normalization is a constraint error", arguments: localBackends)
    func otherNormalization(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("logistics-nfd-child")
        var random = TestRandom(seed: 9)
        var next: Int64 = 0
        let nfc = Logistics.shipment("caf\u{E9}", parcels: 1, &random, next: &next, oneSpelling: true)
        var parcel = nfc.parcels[0]
        parcel.shipmentCode = "cafe\u{301}"
        try withLogistics(backend, in: directory.url) { daos, _ in
            let error = expectStorageError(nil, "\(backend.name)") { try daos.shipments.persist(nfc.with(parcels: [parcel])) }
            // The property-list store may refuse the second spelling first (invalidArgument).
            let allowed: Set<StorageError.Kind> = backend.name == "plist" ? [.constraint, .invalidArgument] : [.constraint]
            #expect(error.map { allowed.contains($0.kind) } ?? false, "\(backend.name): \(String(describing: error))")
            let counts = try daos.counts()
            #expect(counts == [0, 0, 0])
        }
    }
}
