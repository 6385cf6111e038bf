import DAOCore
import DAOMacros
import Foundation
import TestSupport
import Testing

// A third outside domain, declared the README's way: a clinic. Patients (a
// String medical record number) own visits (UUID strings) and allergies; a
// visit owns two kinds of children, lab results (composite-looking String
// keys) and prescriptions (Int64 keys): three levels, and two relations on
// one parent at the first and second. Lab results hold optional reals and
// dates; composite indexes lead with the owner's key and a date.

/// The flag a lab sets on a result: a String enum.
enum LabFlag: String, Codable, Sendable, FieldValue, CaseIterable { case low, normal, high, critical }

/// A patient; owns visits and allergies.
@StoredRecord("cl_patients", primaryKey: "mrn", indexes: [Index("cl_patients_by_name_born", on: ["name", "born"])])
struct PatientRecord: Equatable {
    var mrn: String
    var name: String
    var born: Date
    var weightKg: Double?
    @Children(foreignKey: "patientMrn") var visits: [VisitRecord]
    @Children(foreignKey: "patientMrn") var allergies: [AllergyRecord]
}

/// An allergy of a patient (a second relation of patients).
@StoredRecord("cl_allergies", ownedBy: PatientRecord.self)
struct AllergyRecord: Equatable {
    var id: Int64
    var patientMrn: String
    var substance: String
}

/// A visit of a patient; owns lab results and prescriptions.
@StoredRecord(
    "cl_visits", indexes: [Index("cl_visits_by_patient_date", on: ["patientMrn", "date"])],
    ownedBy: PatientRecord.self)
struct VisitRecord: Equatable {
    var id: String
    var patientMrn: String
    var date: Date
    var urgent: Bool
    var reason: String?
    @Children(foreignKey: "visitId") var labs: [LabResultRecord]
    @Children(foreignKey: "visitId") var prescriptions: [PrescriptionRecord]
}

/// A lab result of a visit, with an optional value, flag and time taken.
@StoredRecord(
    "cl_labs",
    indexes: [
        Index("cl_labs_by_visit_taken", on: ["visitId", "taken"]),
        Index("cl_labs_by_code_value", on: ["code", "value"]),
    ],
    ownedBy: VisitRecord.self)
struct LabResultRecord: Equatable {
    var id: String
    var visitId: String
    var code: String
    var value: Double?
    var taken: Date?
    var flag: LabFlag?
}

/// A prescription of a visit.
@StoredRecord("cl_rx", indexes: [Index("cl_rx_by_drug_dose", on: ["drug", "doseMg"])], ownedBy: VisitRecord.self)
struct PrescriptionRecord: Equatable {
    var id: Int64
    var visitId: String
    var drug: String
    var doseMg: Double
    var refills: Int32?
    var until: Date?
}

extension PatientRecord: Plain { var uniqueId: String { mrn } }
extension AllergyRecord: Plain { var uniqueId: Int64 { id } }
extension VisitRecord: Plain { var uniqueId: String { id } }
extension LabResultRecord: Plain { var uniqueId: String { id } }
extension PrescriptionRecord: Plain { var uniqueId: Int64 { id } }

/// The five storages of the clinic over one store.
struct ClinicStorages {
    let patients: AnyStorage<PatientRecord>
    let allergies: AnyStorage<AllergyRecord>
    let visits: AnyStorage<VisitRecord>
    let labs: AnyStorage<LabResultRecord>
    let rx: AnyStorage<PrescriptionRecord>

    init(_ store: any Store) throws {
        patients = try store.anyStorage(for: PatientRecord.self)
        allergies = try store.anyStorage(for: AllergyRecord.self)
        visits = try store.anyStorage(for: VisitRecord.self)
        labs = try store.anyStorage(for: LabResultRecord.self)
        rx = try store.anyStorage(for: PrescriptionRecord.self)
    }

    /// How many records each entity holds.
    func counts() throws -> [Int] {
        [try patients.count(), try allergies.count(), try visits.count(), try labs.count(), try rx.count()]
    }
}

/// Opens `backend` in `directory`, runs `body` with its storages, and closes the store.
func withClinic<T>(_ backend: TestBackend, in directory: URL, _ body: (ClinicStorages, any MigratableStore) throws -> T)
    throws -> T
{
    let store = try backend.open(directory)
    defer {
        do { try store.close() } catch { Issue.record("closing the \(backend.name) store failed: \(error)") }
    }
    return try body(try ClinicStorages(store), store)
}

/// Appends `step: answer` to a transcript, or `step: kind` when `body`
/// throws a `StorageError` (any other error is marked untyped), so that the
/// transcripts of the backends can be compared line by line.
func noteStep(_ step: String, in lines: inout [String], _ body: () throws -> String) {
    do {
        lines.append("\(step): \(try body())")
    } catch let error as StorageError {
        lines.append("\(step): \(error.kind)")
    } catch {
        lines.append("\(step): untyped \(type(of: error))")
    }
}
