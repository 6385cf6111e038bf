import DAOCore
import DAOMacros
import Foundation
import TestSupport

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
    try withStore(backend, in: directory, ClinicStorages.init, body)
}

/// A date `seconds` after the reference date.
func day(_ seconds: Double) -> Date { Date(timeIntervalSinceReferenceDate: seconds) }

/// A small clinic, the same on every backend: ASCII text only, so Swift's own
/// comparisons give the stored order; ties in every sorted field on purpose.
func clinicPatients(seed: UInt64) -> [PatientRecord] {
    var random = TestRandom(seed: seed)
    func below(_ bound: Int) -> Int { random.below(bound) }
    let values: [Double?] = [nil, 0, 1.5, 1.5, -2, .infinity, -.infinity, .leastNonzeroMagnitude, 7, 1e300]
    let dates: [Date?] = [nil, day(0), day(86_400), day(86_400), day(-.infinity), day(.infinity), .distantPast, day(.leastNonzeroMagnitude)]
    let codes = ["HB", "K", "NA", "hb", ""]
    var rxId: Int64 = 1
    var allergyId: Int64 = 100
    return (0..<7).map { p in
        let mrn = "MRN-\(String(format: "%03d", 7 - p))"
        let visits = (0..<below(4)).map { v -> VisitRecord in
            let id = String(format: "%08X-0000-4000-8000-%012X", below(1 << 20), p * 10 + v)
            let labs = (0..<below(5)).map { l in
                LabResultRecord(
                    id: "\(id)/L\(l)", visitId: id, code: codes[below(codes.count)], value: values[below(values.count)],
                    taken: dates[below(dates.count)], flag: below(3) == 0 ? nil : LabFlag.allCases[below(4)])
            }.sorted { $0.id < $1.id }
            let prescriptions = (0..<below(3)).map { _ -> PrescriptionRecord in
                defer { rxId += 1 }
                return PrescriptionRecord(
                    id: rxId, visitId: id, drug: ["amoxicillin", "ibuprofen"][below(2)], doseMg: [250, 400, .infinity][below(3)],
                    refills: below(2) == 0 ? nil : Int32(below(3)), until: dates[below(dates.count)])
            }
            return VisitRecord(
                id: id, patientMrn: mrn, date: dates[1 + below(dates.count - 1)] ?? day(0), urgent: below(3) == 0,
                reason: below(2) == 0 ? nil : ["checkup", "fever", ""][below(3)], labs: labs, prescriptions: prescriptions)
        }.sorted { $0.id < $1.id }
        let allergies = (0..<below(2)).map { _ -> AllergyRecord in
            defer { allergyId += 1 }
            return AllergyRecord(id: allergyId, patientMrn: mrn, substance: "penicillin")
        }
        return PatientRecord(
            mrn: mrn, name: ["Ann", "Bob", "Ann"][p % 3], born: day(Double(p % 2) * 1000), weightKg: p % 2 == 0 ? nil : 70,
            visits: visits, allergies: allergies)
    }.sorted { $0.mrn < $1.mrn }
}

/// The stored order of two optional reals: `nil` first, then by value.
func storedLess(_ left: Double?, _ right: Double?) -> Bool? {
    switch (left, right) {
    case (nil, nil): return nil
    case (nil, _): return true
    case (_, nil): return false
    case (let l?, let r?): return l == r ? nil : l < r
    }
}

/// Sorts by `keys` (each an ascending "less"), then by primary key, then limits.
func answer<R: Record>(
    _ records: [R], where matches: (R) -> Bool, by keys: [(R, R) -> Bool?] = [], limit: Int? = nil
) -> [R] where R.PrimaryKey: Comparable {
    let sorted = records.filter(matches).sorted { a, b in
        for key in keys { if let less = key(a, b) { return less } }
        return a[keyPath: R.entity.primaryKeyPath] < b[keyPath: R.entity.primaryKeyPath]
    }
    return limit.map { Array(sorted.prefix($0)) } ?? sorted
}
