import DAOCore
import Foundation
import TestSupport
import Testing

// A client that asks for many keys at once: every lab result of a large
// import by key, erased by key, and found with `[keys].contains($0.id)`.
// More keys than an engine takes as parameters of one statement must still
// be one call with one answer, the same on every backend, and a list of
// constants must not be compared one by one with every record.

@Suite("Client trial: clinic calls with many keys")
struct ClinicManyKeysTests {
    /// Lab results in the visit (before the fix, 20,000 took 475 s over the four backends: each record was compared with each constant).
    static let n = 20_000
    @Test("reads, counts and erasures by 40,000 keys answer as with few", arguments: localBackends)
    func manyKeys(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        try withClinic(backend, in: directory.url) { clinic, _ in
            let visitId = "V-many"
            let labs = (0..<ClinicManyKeysTests.n).map {
                LabResultRecord(id: String(format: "L%06d", $0), visitId: visitId, code: "K", value: Double($0),
                                taken: nil, flag: nil)
            }
            try clinic.patients.persist([PatientRecord(
                mrn: "MRN-many", name: "Many", born: day(0), weightKg: nil,
                visits: [VisitRecord(id: visitId, patientMrn: "MRN-many", date: day(0), urgent: false, reason: nil,
                                     labs: labs, prescriptions: [])],
                allergies: [])])
            // Every key twice, and as many that are not stored.
            let keys = labs.map(\.id) + labs.map(\.id) + labs.map { $0.id + "x" }
            let read = try clinic.labs.read(primaryKeys: keys)
            #expect(read.count == 2 * ClinicManyKeysTests.n, "on \(backend.name)")
            #expect(read.prefix(3).map(\.id) == ["L000000", "L000001", "L000002"], "on \(backend.name)")
            let wanted = labs.filter { $0.id.hasSuffix("7") }.map(\.id) + labs.map { $0.id + "y" }
            #expect(try clinic.labs.count(where: #Predicate { wanted.contains($0.id) }) == ClinicManyKeysTests.n / 10, "on \(backend.name)")
            let got = try clinic.labs.read(Query(where: #Predicate { wanted.contains($0.id) }, limit: 5))
            #expect(got.map(\.id) == ["L000007", "L000017", "L000027", "L000037", "L000047"], "on \(backend.name)")
            #expect(try clinic.labs.erase(primaryKeys: keys) == ClinicManyKeysTests.n, "on \(backend.name)")
            #expect(try clinic.labs.count() == 0, "on \(backend.name)")
        }
    }
}
