import DAOCore
import Foundation
import TestSupport
import Testing

// Calls at the edges of the contract (limits, repeated and missing keys, a
// child held twice, refused migrations, a closed store), run as one script
// per domain on every backend: each step's outcome goes to a transcript, and
// every backend's transcript must be the same.

@Suite("Edge cases: calls at the edges of the contract answer alike on every backend")
struct EdgeCaseTests {}

// Edge cases of the clinic a client meets sooner or later, run as one script
// on every backend; each step's outcome (the records, a count, or the error's
// kind) is written to a transcript, and every backend's transcript must be
// the same (docs/SEMANTICS.md names no difference for any of these).

/// What one backend answered to the edge-case script, step by step.
func clinicEdgeTranscript(_ backend: TestBackend) throws -> [String] {
    let directory = try TemporaryDirectory()
    var lines: [String] = []
    func note(_ step: String, _ body: () throws -> String) { noteStep(step, in: &lines, body) }
    let patients = clinicPatients(seed: 41)
    let visit = try #require(patients.flatMap(\.visits).first { $0.labs.count >= 2 })
    try withClinic(backend, in: directory.url) { clinic, _ in
        try clinic.patients.persist(patients)
        note("limit 0") { "\(try clinic.labs.read(Query(limit: 0)).count)" }
        note("limit -1") { "\(try clinic.labs.read(Query(limit: -1)).count)" }
        note("keys twice and missing") {
            let keys = [visit.labs[1].id, "missing", visit.labs[0].id, visit.labs[1].id]
            return try clinic.labs.read(primaryKeys: keys).map(\.id).joined(separator: ",")
        }
        note("erase a key twice") { "\(try clinic.rx.erase(primaryKeys: [1, 1, 999_999]))" }
        note("rx after") { "\(try clinic.rx.count())" }
        note("an empty batch") { try clinic.labs.persist([]); return "ok" }
        // A visit holding two labs with one key: the last wins, as in a batch.
        note("one key twice among a parent's children") {
            var twice = visit
            var copy = twice.labs[0]
            copy.code = "LAST"
            twice.labs.append(copy)
            try clinic.visits.persist([twice])
            let read = try clinic.visits.read(primaryKey: visit.id)
            return (read?.labs.map { "\($0.id)=\($0.code)" } ?? []).joined(separator: ",")
        }
        // Two visits holding the same lab in one batch: it ends under the last.
        note("one child held by two parents in one batch") {
            let others = patients.flatMap(\.visits).filter { $0.id != visit.id }
            var first = visit
            var second = try #require(others.first)
            var lab = first.labs[0]
            lab.visitId = second.id
            lab.code = "SECOND"
            second.labs.append(lab)
            second.labs.sort { $0.id < $1.id }
            first.labs[0].code = "FIRST"
            try clinic.visits.persist([first, second])
            let read = try clinic.labs.read(primaryKey: lab.id)
            let firstLabs = try clinic.visits.read(primaryKey: first.id)?.labs.map(\.id) ?? []
            let secondLabs = try clinic.visits.read(primaryKey: second.id)?.labs.map(\.id) ?? []
            return "\(read?.visitId == second.id ? "second" : "first") \(read?.code ?? "-") "
                + "\(firstLabs.contains(lab.id)) \(secondLabs.contains(lab.id)) \(try clinic.labs.count())"
        }
        note("a patient and one of its visits, changed, in one batch through two calls") {
            var patient = try #require(try clinic.patients.read(primaryKey: visit.patientMrn))
            patient.name = "renamed"
            try clinic.patients.persist([patient])
            return "\(try clinic.visits.read(primaryKey: visit.id)?.labs.count ?? -1)"
        }
        note("sort by a relation's count with ties, limit 3") {
            try clinic.visits.read(Query(sortedBy: [SortDescriptor(\.labs.count, order: .reverse)], limit: 3))
                .map { "\($0.id.suffix(4)):\($0.labs.count)" }.joined(separator: ",")
        }
        note("count over a relation") {
            "\(try clinic.patients.count(where: #Predicate { $0.visits.contains { $0.urgent } }))"
        }
        note("erase where over a relation") {
            "\(try clinic.visits.erase(where: #Predicate { $0.prescriptions.isEmpty && !$0.labs.isEmpty }))"
        }
        note("counts") { try clinic.counts().map(String.init).joined(separator: ",") }
        note("an infinite date through the index") {
            let mrn = visit.patientMrn
            let far = Date(timeIntervalSinceReferenceDate: .infinity)
            return "\(try clinic.visits.count(where: #Predicate { $0.patientMrn == mrn && $0.date < far }))"
        }
        note("a NaN constant") {
            let nan = Double.nan
            return "\(try clinic.labs.count(where: #Predicate { $0.value == nan })) "
                + "\(try clinic.labs.count(where: #Predicate { $0.value != nan }))/\(try clinic.labs.count())"
        }
        note("a -0.0 constant") {
            let zero = -0.0
            return "\(try clinic.labs.count(where: #Predicate { $0.value == zero }))"
                + " \(try clinic.labs.count(where: #Predicate { $0.value == 0 }))"
        }
    }
    // Migrations naming what the store does not hold: refused, typed, nothing applied.
    do {
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        for (name, step) in [
            ("a field added to an unknown entity", MigrationStep.addField("x", to: "cl_nothing", type: .integer, optional: true)),
            ("an unknown field dropped", .dropField("nothing", from: "cl_labs")),
            ("an entity renamed onto another", .renameEntity("cl_labs", to: "cl_rx")),
            ("a foreign key dropped", .dropField("visitId", from: "cl_labs")),
            ("the primary key retyped", .changeField("mrn", in: "cl_patients", to: .integer, optional: false) { $0 }),
        ] {
            var migrator = Migrator()
            migrator.register(name, [step])
            note(name) { "\(try migrator.migrate(store))" }
        }
        note("counts after refused migrations") { try ClinicStorages(store).counts().map(String.init).joined(separator: ",") }
    }
    // A closed store: every call, a migration and an observation included, is refused with `closed`.
    do {
        let store = try backend.open(directory.url)
        let clinic = try ClinicStorages(store)
        try store.close()
        note("a read after close") { "\(try clinic.labs.readAll().count)" }
        note("a write after close") { try clinic.allergies.persist([]); return "ok" }
        note("an erase after close") { "\(try clinic.patients.eraseAll())" }
        note("an empty erase after close") { "\(try clinic.labs.erase(primaryKeys: []))" }
        note("an empty read after close") { "\(try clinic.labs.read(primaryKeys: []).count)" }
        note("a storage after close") { _ = try store.anyStorage(for: PatientRecord.self); return "ok" }
        var migrator = Migrator()
        migrator.register("after close", [.addField("x", to: "cl_labs", type: .integer, optional: true)])
        note("a migration after close") { "\(try migrator.migrate(store))" }
        try store.close()
    }
    do {
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        note("counts after reopening") { try ClinicStorages(store).counts().map(String.init).joined(separator: ",") }
    }
    return lines
}

extension EdgeCaseTests {
    @Suite("Client trial: clinic edge cases answer alike on every backend")
    struct ClinicDomain {
        @Test("limits, repeated keys, children twice, relations in sorts, counts and erasures, special constants")
        func sameEverywhere() throws {
            let first = expectSameTranscripts(try localBackends.map { ($0.name, try clinicEdgeTranscript($0)) })
            #expect(first.contains("limit -1: invalidArgument"))
            #expect(first.filter { $0.hasSuffix("after close: closed") }.count == 7, "\(first.suffix(8))")
            #expect(first.filter { $0.hasSuffix(": schemaMismatch") }.count == 5, "the five refused migrations")
        }
    }
}

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

extension EdgeCaseTests {
    @Suite("Client trial, logistics: calls at the edges of the contract answer alike")
    struct LogisticsDomain {
        @Test("one transcript on every backend")
        func sameEverywhere() throws {
            let first = expectSameTranscripts(try localBackends.map { ($0.name, try logisticsEdgeTranscript($0)) })
            // What the documents say, whichever backend: limits below zero are
            // refused, children naming another parent are constraint errors.
            #expect(first.contains { $0.hasPrefix("limit -1: error invalidArgument") }, "\(first)")
            #expect(first.contains { $0.hasPrefix("a parcel in A naming B: error constraint") }, "\(first)")
        }
    }
}
