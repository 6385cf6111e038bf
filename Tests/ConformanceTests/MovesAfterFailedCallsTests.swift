import DAOCore
import DAOMacros
import Foundation
import TestSupport
import Testing

/// Children moved between parents of other parents after failed calls, on
/// every backend, with the three-level `@StoredRecord` records (String and
/// integer keys, optionals, composite indexes that lead with the foreign key):
/// a failed call changes nothing, the moves land, and queries on the indexes
/// answer what an in-memory model answers.
@Suite("Conformance: children moved between parents after failed calls")
struct MovesAfterFailedCallsTests {
    @Test(arguments: allBackends)
    func movesAndFailuresThenQueries(_ backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let clinics = try store.anyStorage(for: MacroClinic.self)
            let patients = try store.anyStorage(for: MacroPatient.self)
            let visits = try store.anyStorage(for: MacroVisit.self)
            var model = macroClinics()
            try clinics.persist(model)
            var moves = 0
            for step in 0..<6 {
                // A failing call: a grandchild naming another parent, after valid ones.
                var bad = model
                bad[step % 4].patients[0].visits[1].patientId = "elsewhere\(step)"
                #expect(throws: StorageError.self) { try clinics.persist(bad) }
                // A failing child write: parent that does not exist.
                var orphan = model[0].patients[0]
                orphan.clinicCode = "nobody"
                orphan.id = "orphan\(step)"
                #expect(throws: (any Error).self) { try patients.persist(orphan) }
                #expect(try clinics.readAll() == keyOrdered(model))
                // Move a visit from one patient to another (other clinic), and a patient between clinics.
                let from = step % 4, to = (step + 1) % 4
                guard !model[from].patients.isEmpty, !model[from].patients[0].visits.isEmpty,
                    let target = model[to].patients.last
                else { continue }
                var visit = model[from].patients[0].visits.removeFirst()
                visit.patientId = target.id
                visit.kind = .emergency
                model[to].patients[model[to].patients.count - 1].visits.append(visit)
                if model[from].patients.count > 1 {
                    var patient = model[from].patients.remove(at: 1)
                    patient.clinicCode = model[to].code
                    model[to].patients.append(patient)
                }
                // Persist both, in reverse key order, in one call.
                try clinics.persist([model[to], model[from]])
                moves += 1
                #expect(try clinics.readAll() == keyOrdered(model), "step \(step)")
                let allVisits = model.flatMap(\.patients).flatMap(\.visits)
                #expect(try visits.count() == allVisits.count)
                #expect(try patients.count() == model.flatMap(\.patients).count)
                // Queries on the composite indexes (the FK first).
                for patient in model.flatMap(\.patients) {
                    let pid = patient.id
                    for kind in [VisitKind.checkup, .emergency, .followUp] {
                        let raw = kind.rawValue
                        let found = try visits.read(
                            where: #Predicate<MacroVisit> { $0.patientId == pid && $0.kind.rawValue == raw },
                            sortedBy: [SortDescriptor(\.id)])
                        #expect(found == allVisits.filter { $0.patientId == pid && $0.kind == kind }.sorted { $0.id < $1.id },
                                "\(pid) \(raw)")
                    }
                }
                for clinic in model {
                    let code = clinic.code
                    let nilBorn: Date? = nil
                    let found = try patients.read(
                        where: #Predicate<MacroPatient> { $0.clinicCode == code && $0.born == nilBorn })
                    #expect(Set(found.map(\.id)) == Set(clinic.patients.filter { $0.born == nil }.map(\.id)), "\(code)")
                }
            }
            #expect(moves == 6)
            // Single-child writes through the child storage after all that.
            var lone = model[2].patients[0]
            lone.name = "renamed"
            lone.visits = []
            try patients.persist(lone)
            model[2].patients[0] = lone
            #expect(try clinics.readAll() == keyOrdered(model))
            #expect(try visits.erase(primaryKeys: model[1].patients.flatMap(\.visits).map(\.id)) == model[1].patients.flatMap(\.visits).count)
        }
    }
}
