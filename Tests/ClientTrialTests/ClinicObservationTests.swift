import DAOCore
import Foundation
import SQLiteStorage
import TestSupport
import Testing

// docs/OBSERVATION.md in the clinic: a change to either relation of a visit,
// or to a grandchild of a patient, modifies what an observer holds; and on
// SQLite, a second store instance on the same file is seen with pollInterval.

@Suite("Client trial: observing the clinic")
struct ClinicObservationTests {
    @Test("writes to each relation and each level arrive as changes that rebuild the results", arguments: localBackends)
    func levels(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory()
        let store = try backend.open(directory.url)
        let clinic = try ClinicStorages(store)
        let patientsDAO = DAO(storage: clinic.patients, translator: Same<PatientRecord>())
        let visitsDAO = DAO(storage: clinic.visits, translator: Same<VisitRecord>())
        let labsDAO = DAO(storage: clinic.labs, translator: Same<LabResultRecord>())
        let patients = clinicPatients(seed: 31)
        try await clinic.patients.persist(patients)
        let patient = try #require(patients.first { $0.visits.count >= 2 })
        let mrn = patient.mrn
        let ofPatient = #Predicate<VisitRecord> { $0.patientMrn == mrn }
        let sort = [SortDescriptor<VisitRecord>(\.date, order: .reverse)]
        let visitsIterator = visitsDAO.observe(where: ofPatient, sortedBy: sort).makeAsyncIterator()
        let patientIterator = patientsDAO.observe(primaryKey: mrn).makeAsyncIterator()
        let noValue = #Predicate<LabResultRecord> { $0.value == nil }
        let labsIterator = labsDAO.observe(where: noValue, sortedBy: [SortDescriptor(\.taken)]).makeAsyncIterator()

        var visitRows = try #require(try await nextSnapshot(visitsIterator)).results
        var patientRows = try #require(try await nextSnapshot(patientIterator)).results
        var labRows = try #require(try await nextSnapshot(labsIterator)).results
        #expect(patientRows == [patient])

        let visit = patient.visits[0]
        let steps: [(String, () throws -> Void)] = [
            ("a prescription added to a visit through its own storage", {
                try clinic.rx.persist([PrescriptionRecord(id: 5000, visitId: visit.id, drug: "zinc", doseMg: 5, refills: nil, until: nil)])
            }),
            ("a lab without a value added to a visit through its own storage", {
                try clinic.labs.persist([LabResultRecord(id: visit.id + "/new", visitId: visit.id, code: "K", value: nil,
                                                         taken: day(3), flag: .low)])
            }),
            ("the lab given a value", {
                try clinic.labs.persist([LabResultRecord(id: visit.id + "/new", visitId: visit.id, code: "K", value: 4.1,
                                                         taken: day(3), flag: .low)])
            }),
            ("the prescription erased", { let erased = try clinic.rx.erase(primaryKey: 5000); #expect(erased) }),
            ("a visit rewritten without its labs", {
                var bare = try #require(try clinic.visits.read(primaryKey: visit.id))
                bare.labs = []
                try clinic.visits.persist([bare])
            }),
            ("a visit moved to another patient", {
                var moved = try #require(try clinic.visits.read(primaryKey: patient.visits[1].id))
                moved.patientMrn = patients.first { $0.mrn != mrn }!.mrn
                try clinic.visits.persist([moved])
            }),
        ]
        for (name, step) in steps {
            try step()
            let freshVisits = try await clinic.visits.read(Query(where: ofPatient, sortedBy: sort))
            let freshPatient = try await clinic.patients.read(primaryKey: mrn).map { [$0] } ?? []
            let freshLabs = try await clinic.labs.read(Query(where: noValue, sortedBy: [SortDescriptor(\.taken)]))
            if freshVisits != visitRows {
                let snapshot = try #require(try await nextSnapshot(visitsIterator), "\(name) on \(backend.name)")
                let changes = try #require(snapshot.changes)
                visitRows = try #require(applying(changes, to: visitRows, from: snapshot.results))
                #expect(visitRows == freshVisits, "visits: \(name) on \(backend.name)")
            }
            if freshPatient != patientRows {
                let snapshot = try #require(try await nextSnapshot(patientIterator), "\(name) on \(backend.name)")
                patientRows = snapshot.results
                #expect(patientRows == freshPatient, "the patient: \(name) on \(backend.name)")
            }
            if freshLabs != labRows {
                let snapshot = try #require(try await nextSnapshot(labsIterator), "\(name) on \(backend.name)")
                let changes = try #require(snapshot.changes)
                labRows = try #require(applying(changes, to: labRows, from: snapshot.results))
                #expect(labRows == freshLabs, "labs: \(name) on \(backend.name)")
            }
        }
        try store.close()
        #expect(try await nextSnapshot(visitsIterator) == nil)
        #expect(try await nextSnapshot(patientIterator) == nil)
        #expect(try await nextSnapshot(labsIterator) == nil)
    }

    @Test("SQLite: a second store instance on the same file is observed with pollInterval")
    func twoSQLiteStores() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.url.appending(path: "clinic.sqlite")
        let reader = try SQLiteDatabase(path: path)
        let writer = try SQLiteDatabase(path: path)
        let patients = clinicPatients(seed: 32)
        try await writer.anyStorage(for: PatientRecord.self).persist(patients)
        let labs = DAO(storage: try reader.anyStorage(for: LabResultRecord.self), translator: Same<LabResultRecord>())
        let iterator = labs.observe(where: #Predicate { $0.code == "NEW" }, pollInterval: .milliseconds(20)).makeAsyncIterator()
        #expect(try await nextSnapshot(iterator)?.results.isEmpty == true)
        let visit = try #require(patients.flatMap(\.visits).first)
        let lab = LabResultRecord(id: "new", visitId: visit.id, code: "NEW", value: 1, taken: nil, flag: nil)
        try await writer.anyStorage(for: LabResultRecord.self).persist([lab])
        let snapshot = try #require(try await nextSnapshot(iterator))
        #expect(snapshot.results == [lab])
        try writer.close()
        try reader.close()
    }
}
