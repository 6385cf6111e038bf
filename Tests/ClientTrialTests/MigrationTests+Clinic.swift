import DAOCore
import DAOMacros
import Foundation
import TestSupport
import Testing

// The clinic's second release: patients lose their weight, lab results gain a
// unit and an index on their flag, and prescriptions (one of the two
// relations of a visit) are renamed. Files the store did not write lie in its
// directory throughout and must come out byte for byte.

@StoredRecord("cl_patients", primaryKey: "mrn", indexes: [Index("cl_patients_by_name_born", on: ["name", "born"])])
struct PatientRecordV2: Equatable {
    var mrn: String
    var name: String
    var born: Date
    @Children(foreignKey: "patientMrn") var visits: [VisitRecordV2]
    @Children(foreignKey: "patientMrn") var allergies: [AllergyRecordV2]
}

@StoredRecord("cl_allergies", ownedBy: PatientRecordV2.self)
struct AllergyRecordV2: Equatable {
    var id: Int64
    var patientMrn: String
    var substance: String
}

@StoredRecord(
    "cl_visits", indexes: [Index("cl_visits_by_patient_date", on: ["patientMrn", "date"])],
    ownedBy: PatientRecordV2.self)
struct VisitRecordV2: Equatable {
    var id: String
    var patientMrn: String
    var date: Date
    var urgent: Bool
    var reason: String?
    @Children(foreignKey: "visitId") var labs: [LabResultRecordV2]
    @Children(foreignKey: "visitId") var prescriptions: [PrescriptionRecordV2]
}

@StoredRecord(
    "cl_labs",
    indexes: [
        Index("cl_labs_by_visit_taken", on: ["visitId", "taken"]),
        Index("cl_labs_by_code_value", on: ["code", "value"]),
        Index("cl_labs_by_flag", on: ["flag"]),
    ],
    ownedBy: VisitRecordV2.self)
struct LabResultRecordV2: Equatable {
    var id: String
    var visitId: String
    var code: String
    var value: Double?
    var taken: Date?
    var flag: LabFlag?
    var unit: String
}

@StoredRecord(
    "cl_prescriptions", indexes: [Index("cl_rx_by_drug_dose", on: ["drug", "doseMg"])], ownedBy: VisitRecordV2.self)
struct PrescriptionRecordV2: Equatable {
    var id: Int64
    var visitId: String
    var drug: String
    var doseMg: Double
    var refills: Int32?
    var until: Date?
}

extension PatientRecord {
    /// This patient as the second release reads it.
    var migrated: PatientRecordV2 {
        PatientRecordV2(
            mrn: mrn, name: name, born: born,
            visits: visits.map { visit in
                VisitRecordV2(
                    id: visit.id, patientMrn: visit.patientMrn, date: visit.date, urgent: visit.urgent, reason: visit.reason,
                    labs: visit.labs.map {
                        LabResultRecordV2(
                            id: $0.id, visitId: $0.visitId, code: $0.code, value: $0.value, taken: $0.taken, flag: $0.flag,
                            unit: "mmol/L")
                    },
                    prescriptions: visit.prescriptions.map {
                        PrescriptionRecordV2(
                            id: $0.id, visitId: $0.visitId, drug: $0.drug, doseMg: $0.doseMg, refills: $0.refills, until: $0.until)
                    })
            },
            allergies: allergies.map { AllergyRecordV2(id: $0.id, patientMrn: $0.patientMrn, substance: $0.substance) })
    }
}

/// Files a client keeps beside a store: they are not the store's.
let clinicForeignFiles: [String: Data] = [
    "notes.txt": Data("clinic notes\n".utf8),
    "cl_labs.json": Data("{\"not\":\"the store's\"}".utf8),
    "backup-2024.json": Data("[1,2,3]".utf8),
    "manifest.json.bak": Data("{}".utf8),
    "data.mdb.old": Data(repeating: 7, count: 100),
    "store.sqlite.backup": Data("SQLite format 3\u{0}".utf8),
]

extension MigrationTests {
    @Suite("Client trial: the clinic's second release, with and without its migration")
    struct ClinicRelease2 {
        static let release2 = Migration("2: no weight, lab units and flags, prescriptions renamed", [
            .dropField("weightKg", from: "cl_patients"),
            .addField("unit", to: "cl_labs", type: .text, optional: false, default: .text("mmol/L")),
            .addIndex("cl_labs_by_flag", on: ["flag"], to: "cl_labs"),
            .renameEntity("cl_rx", to: "cl_prescriptions"),
        ])

        @Test("refused without the migration, nothing lost; a failing migration applies nothing; migrated, all reads back",
              arguments: localBackends)
        func secondRelease(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("trial-clinic-migrate")
            try plant(clinicForeignFiles, in: directory.url)
            let old = clinicPatients(seed: 21)
            try withClinic(backend, in: directory.url) { clinic, _ in try clinic.patients.persist(old) }
            expectUntouched(clinicForeignFiles, in: directory.url, "after the first writes on \(backend.name)")

            // Without the migration: every changed type refused, typed, naming the change; nothing lost.
            try withClinic(backend, in: directory.url) { clinic, store in
                let error = expectStorageError(.schemaMismatch, "on \(backend.name)") {
                    _ = try store.anyStorage(for: LabResultRecordV2.self)
                }
                #expect(error?.message.contains("'weightKg'") == true, "on \(backend.name): \(String(describing: error))")
                expectStorageError(.schemaMismatch, "on \(backend.name)") { _ = try store.anyStorage(for: PatientRecordV2.self) }
                let read = try clinic.patients.readAll()
                #expect(sameBits(read, old), "on \(backend.name): \(firstDifference(read, old))")
            }

            // A migration whose last step fails applies none of its steps.
            var failing = Migrator()
            failing.register("fails", Self.release2.steps + [
                .changeField("code", in: "cl_labs", to: .integer, optional: false) { _ in
                    throw CocoaError(.coderInvalidValue)
                },
            ])
            do {
                let store = try backend.open(directory.url)
                expectStorageError(nil, "a failing migration on \(backend.name)") { _ = try failing.migrate(store) }
                try store.close()
            }
            try withClinic(backend, in: directory.url) { clinic, _ in
                let read = try clinic.patients.readAll()
                #expect(sameBits(read, old), "after a failed migration on \(backend.name): \(firstDifference(read, old))")
            }
            expectUntouched(clinicForeignFiles, in: directory.url, "after a failed migration on \(backend.name)")

            var migrator = Migrator()
            migrator.register(Self.release2.name, Self.release2.steps)
            do {
                let store = try backend.open(directory.url)
                #expect(try migrator.migrate(store) == [Self.release2.name], "on \(backend.name)")
                #expect(try migrator.migrate(store) == [], "on \(backend.name): applied once")
                try store.close()
            }
            expectUntouched(clinicForeignFiles, in: directory.url, "after the migration on \(backend.name)")

            let expected = old.map(\.migrated)
            let store = try backend.open(directory.url)
            defer {
                do { try store.close() } catch { Issue.record("closing failed: \(error)") }
            }
            expectStorageError(.schemaMismatch, "the old type after migrating, on \(backend.name)") {
                _ = try store.anyStorage(for: PatientRecord.self)
            }
            let patients = try store.anyStorage(for: PatientRecordV2.self)
            let read = try patients.readAll()
            #expect(sameBits(read, expected), "on \(backend.name): \(firstDifference(read, expected))")
            let prescriptions = try store.anyStorage(for: PrescriptionRecordV2.self)
            let allRx = expected.flatMap(\.visits).flatMap(\.prescriptions).sorted { $0.id < $1.id }
            #expect(sameBits(try prescriptions.readAll(), allRx), "renamed prescriptions on \(backend.name)")
            let labs = try store.anyStorage(for: LabResultRecordV2.self)
            let allLabs = expected.flatMap(\.visits).flatMap(\.labs).sorted { $0.id < $1.id }
            let high = LabFlag.high
            let got = try labs.read(Query(where: #Predicate { $0.flag == high }))
            #expect(sameBits(got, allLabs.filter { $0.flag == .high }), "labs through the added index on \(backend.name)")
            // Writes through the renamed sibling and erase-all leave the other files alone.
            if var first = allRx.first {
                first.doseMg = 125
                try prescriptions.persist([first])
                #expect(try prescriptions.read(primaryKey: first.id)?.doseMg == 125)
            }
            #expect(try patients.eraseAll() == expected.count)
            #expect(try labs.count() == 0 && prescriptions.count() == 0, "erase-all cascades on \(backend.name)")
            expectUntouched(clinicForeignFiles, in: directory.url, "after erase-all on \(backend.name)")
        }

        @Test("a migration run after storages were handed out is refused or leaves them working", arguments: localBackends)
        func migrateWhileOpen(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("trial-clinic-migrate-open")
            let old = clinicPatients(seed: 22)
            let store = try backend.open(directory.url)
            defer {
                do { try store.close() } catch { Issue.record("closing failed: \(error)") }
            }
            let clinic = try ClinicStorages(store)
            try clinic.patients.persist(old)
            var migrator = Migrator()
            migrator.register(Self.release2.name, Self.release2.steps)
            do {
                _ = try migrator.migrate(store)
            } catch let error as StorageError {
                // Refused: the old storages still read what is stored.
                let read = try clinic.patients.readAll()
                #expect(sameBits(read, old), "refused (\(error)) on \(backend.name): \(firstDifference(read, old))")
                return
            }
            // Applied: the storages of the old types must not read or write the new layout as the old one.
            expectStorageError(nil, "an old storage after its entity was migrated, on \(backend.name)") {
                _ = try clinic.labs.readAll()
                try clinic.labs.persist(old.flatMap(\.visits).flatMap(\.labs).prefix(1).map { $0 })
            }
            let patients = try store.anyStorage(for: PatientRecordV2.self)
            let read = try patients.readAll()
            let expected = old.map(\.migrated)
            #expect(sameBits(read, expected), "on \(backend.name): \(firstDifference(read, expected))")
        }
    }
}

// The clinic's third release, straight from the first: the foreign key of
// visits renamed (an index leads with it), the lab value dropped with the
// index that held it, refills made non-optional, and visits rewritten with
// their two relations (a reason upper-cased, labs without a code dropped).

@StoredRecord("cl_patients", primaryKey: "mrn", indexes: [Index("cl_patients_by_name_born", on: ["name", "born"])])
struct PatientRecordV3: Equatable {
    var mrn: String
    var name: String
    var born: Date
    var weightKg: Double?
    @Children(foreignKey: "patientId") var visits: [VisitRecordV3]
    @Children(foreignKey: "patientMrn") var allergies: [AllergyRecordV3]
}

@StoredRecord("cl_allergies", ownedBy: PatientRecordV3.self)
struct AllergyRecordV3: Equatable {
    var id: Int64
    var patientMrn: String
    var substance: String
}

@StoredRecord(
    "cl_visits", indexes: [Index("cl_visits_by_patient_date", on: ["patientId", "date"])], ownedBy: PatientRecordV3.self)
struct VisitRecordV3: Equatable {
    var id: String
    var patientId: String
    var date: Date
    var urgent: Bool
    var reason: String?
    @Children(foreignKey: "visitId") var labs: [LabResultRecordV3]
    @Children(foreignKey: "visitId") var prescriptions: [PrescriptionRecordV3]
}

@StoredRecord("cl_labs", indexes: [Index("cl_labs_by_visit_taken", on: ["visitId", "taken"])], ownedBy: VisitRecordV3.self)
struct LabResultRecordV3: Equatable {
    var id: String
    var visitId: String
    var code: String
    var taken: Date?
    var flag: LabFlag?
}

@StoredRecord("cl_rx", indexes: [Index("cl_rx_by_drug_dose", on: ["drug", "doseMg"])], ownedBy: VisitRecordV3.self)
struct PrescriptionRecordV3: Equatable {
    var id: Int64
    var visitId: String
    var drug: String
    var doseMg: Double
    var refills: Int32
    var until: Date?
}

extension PatientRecord {
    /// This patient as the third release reads it.
    var migrated3: PatientRecordV3 {
        PatientRecordV3(
            mrn: mrn, name: name, born: born, weightKg: weightKg,
            visits: visits.map { visit in
                VisitRecordV3(
                    id: visit.id, patientId: visit.patientMrn, date: visit.date, urgent: visit.urgent,
                    reason: visit.reason?.uppercased(),
                    labs: visit.labs.filter { !$0.code.isEmpty }.map {
                        LabResultRecordV3(id: $0.id, visitId: $0.visitId, code: $0.code, taken: $0.taken, flag: $0.flag)
                    },
                    prescriptions: visit.prescriptions.map {
                        PrescriptionRecordV3(
                            id: $0.id, visitId: $0.visitId, drug: $0.drug, doseMg: $0.doseMg, refills: $0.refills ?? 0,
                            until: $0.until)
                    })
            },
            allergies: allergies.map { AllergyRecordV3(id: $0.id, patientMrn: $0.patientMrn, substance: $0.substance) })
    }
}

@StoredRecord("cl_patients", primaryKey: "mrn", indexes: [Index("cl_patients_by_name_born", on: ["name", "born"])])
struct PatientRecordV4: Equatable {
    var mrn: String
    var name: String
    var born: Date
    var weightKg: Double?
    @Children(foreignKey: "patientMrn") var visits: [VisitRecord]
    @Children(foreignKey: "patientMrn") var allergies: [AllergyRecordV4]
}

/// Allergies renamed by the general step, their substance upper-cased.
@StoredRecord("cl_allergy_list", ownedBy: PatientRecordV4.self)
struct AllergyRecordV4: Equatable {
    var id: Int64
    var patientMrn: String
    var substance: String
}

extension MigrationTests {
    @Suite("Client trial: the clinic's third release (a renamed foreign key, a rewrite of a parent with two relations)")
    struct ClinicRelease3 {
        static let release3 = Migration("3: visits name patientId, labs lose their value, refills required, reasons upper-cased", [
            .renameField("patientMrn", to: "patientId", in: "cl_visits"),
            .dropIndex("cl_labs_by_code_value", from: "cl_labs"),
            .dropField("value", from: "cl_labs"),
            .changeField("refills", in: "cl_rx", to: .integer, optional: false) { $0 == .null ? .integer(0) : $0 },
            .rewrite("cl_visits", to: VisitRecordV3.self) { row in
                if case .text(let reason) = row["reason"] { row["reason"] = .text(reason.uppercased()) }
                row.children["labs"]?.removeAll { $0["code"] == .text("") }
            },
        ])

        @Test("every level reads back converted, through the renamed foreign key's index too", arguments: localBackends)
        func thirdRelease(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("trial-clinic-migrate3")
            try plant(clinicForeignFiles, in: directory.url)
            let old = clinicPatients(seed: 23)
            #expect(old.flatMap(\.visits).flatMap(\.labs).contains { $0.code.isEmpty })
            try withClinic(backend, in: directory.url) { clinic, _ in try clinic.patients.persist(old) }
            var migrator = Migrator()
            migrator.register(Self.release3.name, Self.release3.steps)
            do {
                let store = try backend.open(directory.url)
                #expect(try migrator.migrate(store) == [Self.release3.name], "on \(backend.name)")
                try store.close()
            }
            expectUntouched(clinicForeignFiles, in: directory.url, "after the migration on \(backend.name)")
            let expected = old.map(\.migrated3)
            let store = try backend.open(directory.url)
            defer {
                do { try store.close() } catch { Issue.record("closing failed: \(error)") }
            }
            let patients = try store.anyStorage(for: PatientRecordV3.self)
            let read = try patients.readAll()
            #expect(sameBits(read, expected), "on \(backend.name): \(firstDifference(read, expected))")
            let visits = try store.anyStorage(for: VisitRecordV3.self)
            for patient in expected {
                let mrn = patient.mrn
                let got = try visits.read(Query(where: #Predicate { $0.patientId == mrn }, sortedBy: [SortDescriptor(\.date)]))
                let want = patient.visits.sorted { $0.date == $1.date ? $0.id < $1.id : $0.date < $1.date }
                #expect(sameBits(got, want), "visits of \(mrn) on \(backend.name): \(firstDifference(got, want))")
            }
            let labs = try store.anyStorage(for: LabResultRecordV3.self)
            let allLabs = expected.flatMap(\.visits).flatMap(\.labs).sorted { $0.id < $1.id }
            #expect(sameBits(try labs.readAll(), allLabs), "labs on \(backend.name)")
            // A visit moved to another patient under the renamed foreign key.
            if var visit = expected.flatMap(\.visits).first, let other = expected.first(where: { $0.mrn != visit.patientId }) {
                visit.patientId = other.mrn
                try visits.persist([visit])
                #expect(try patients.read(primaryKey: other.mrn)?.visits.contains { $0.id == visit.id } == true,
                        "a moved visit on \(backend.name)")
                #expect(try labs.count() == allLabs.count, "labs after a move on \(backend.name)")
            }
            #expect(try patients.eraseAll() == expected.count)
            #expect(try labs.count() == 0 && visits.count() == 0, "erase-all cascades on \(backend.name)")
        }

        @Test("the general step renames an owned entity; its owner's relation follows", arguments: localBackends)
        func rewriteRenamesAChild(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("trial-clinic-migrate4")
            let old = clinicPatients(seed: 24)
            #expect(!old.flatMap(\.allergies).isEmpty)
            try withClinic(backend, in: directory.url) { clinic, _ in try clinic.patients.persist(old) }
            var migrator = Migrator()
            migrator.register("4: allergies renamed", [
                .rewrite("cl_allergies", to: AllergyRecordV4.self) { row in
                    if case .text(let substance) = row["substance"] { row["substance"] = .text(substance.uppercased()) }
                },
            ])
            do {
                let store = try backend.open(directory.url)
                #expect(try migrator.migrate(store) == ["4: allergies renamed"], "on \(backend.name)")
                try store.close()
            }
            let store = try backend.open(directory.url)
            defer {
                do { try store.close() } catch { Issue.record("closing failed: \(error)") }
            }
            let patients = try store.anyStorage(for: PatientRecordV4.self)
            let read = try patients.readAll()
            let expected = old.map {
                PatientRecordV4(
                    mrn: $0.mrn, name: $0.name, born: $0.born, weightKg: $0.weightKg, visits: $0.visits,
                    allergies: $0.allergies.map { AllergyRecordV4(id: $0.id, patientMrn: $0.patientMrn, substance: $0.substance.uppercased()) })
            }
            #expect(sameBits(read, expected), "on \(backend.name): \(firstDifference(read, expected))")
            #expect(try patients.eraseAll() == expected.count)
            #expect(try store.anyStorage(for: AllergyRecordV4.self).count() == 0, "erase-all cascades on \(backend.name)")
        }
    }
}
