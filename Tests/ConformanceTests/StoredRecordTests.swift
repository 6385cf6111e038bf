import DAOCore
import DAOMacros
import Foundation
import TestSupport
import Testing

// Records declared with @StoredRecord only, of a domain of other shapes than
// the example's: clinics own patients own visits (three levels), String and
// Int64 primary keys, optionals of every storage class, Date/Data/Double/Bool
// fields, an enum, a computed property, a composite index. `Hand*` declares
// the same entities by hand (Codable and an Entity, no positional code), so a
// store written through one declaration is read through the other.

enum VisitKind: String, Codable, Sendable, Equatable, FieldValue {
    case checkup, emergency, followUp
}

@StoredRecord("clinics", primaryKey: "code")
struct MacroClinic: Equatable {
    var code: String
    var name: String
    var opened: Date
    var rating: Double?
    var accredited: Bool
    @Children(foreignKey: "clinicCode") var patients: [MacroPatient]

    /// Computed, so not stored.
    var patientCount: Int { patients.count }
    /// Static, so not stored.
    static let kind = "clinic"
}

@StoredRecord(
    "patients", indexes: [Index("patients_by_clinic_born", on: ["clinicCode", "born"])], ownedBy: MacroClinic.self)
struct MacroPatient: Equatable {
    var id: String
    var clinicCode: String
    var name: String
    var born: Date?
    var weight: Double
    var photo: Data?
    var insured: Bool
    var notes: String?
    @Children(foreignKey: "patientId") var visits: [MacroVisit]
}

@StoredRecord(
    "visits", indexes: [Index("visits_by_patient_kind_at", on: ["patientId", "kind", "at"])],
    ownedBy: MacroPatient.self)
struct MacroVisit: Equatable {
    let id: Int64
    var patientId: String
    var at: Date
    var fee: Double
    var paid: Bool
    var kind: VisitKind
    var followUp: VisitKind?
    var count: Int?
    var attachment: Data
    var summary: String? {
        didSet {}  // an observed property is still stored
    }
}

// MARK: - The same entities declared by hand (the README way)

struct HandClinic: Record, Equatable {
    typealias PrimaryKey = String
    var code: String
    var name: String
    var opened: Date
    var rating: Double?
    var accredited: Bool
    var patients: [HandPatient]

    static let entity = Entity<HandClinic>(
        "clinics", primaryKey: "code", \.code,
        fields: [Field("name", \.name), Field("opened", \.opened), Field("rating", \.rating), Field("accredited", \.accredited)],
        relations: [Relation("patients", \.patients, foreignKey: "clinicCode", \HandPatient.clinicCode)])
}

struct HandPatient: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var clinicCode: String
    var name: String
    var born: Date?
    var weight: Double
    var photo: Data?
    var insured: Bool
    var notes: String?
    var visits: [HandVisit]

    static let entity = Entity<HandPatient>(
        "patients", primaryKey: "id", \.id,
        fields: [
            Field("clinicCode", \.clinicCode), Field("name", \.name), Field("born", \.born), Field("weight", \.weight),
            Field("photo", \.photo), Field("insured", \.insured), Field("notes", \.notes),
        ],
        indexes: [Index("patients_by_clinic_born", on: ["clinicCode", "born"])],
        relations: [Relation("visits", \.visits, foreignKey: "patientId", \HandVisit.patientId)],
        ownedBy: HandClinic.self)
}

struct HandVisit: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var patientId: String
    var at: Date
    var fee: Double
    var paid: Bool
    var kind: VisitKind
    var followUp: VisitKind?
    var count: Int?
    var attachment: Data
    var summary: String?

    static let entity = Entity<HandVisit>(
        "visits", primaryKey: "id", \.id,
        fields: [
            Field("patientId", \.patientId), Field("at", \.at), Field("fee", \.fee), Field("paid", \.paid),
            Field("kind", \.kind), Field("followUp", \.followUp), Field("count", \.count),
            Field("attachment", \.attachment), Field("summary", \.summary),
        ],
        indexes: [Index("visits_by_patient_kind_at", on: ["patientId", "kind", "at"])],
        ownedBy: HandPatient.self)
}

// MARK: - Data

/// Clinics with values at the edges: NFC text, NUL, emoji, very long text,
/// empty and larger bytes, extreme integers, infinities, subnormals. (One
/// spelling of each text: the property-list store refuses a second one,
/// docs/SEMANTICS.md; SemanticsTests covers normalization.)
func macroClinics(version: Int = 0) -> [MacroClinic] {
    let names = ["Zoë", "Zoe", "nul\u{0}inside", "🩺 Clinic", String(repeating: "long ", count: 20_000)]
    let doubles: [Double] = [0, 1.5, -.infinity, .infinity, .leastNonzeroMagnitude, -.greatestFiniteMagnitude, .leastNormalMagnitude / 3]
    return (0..<4).map { c in
        let code = ["Zoë", "c-1", "c-2", "c-3"][c]
        return MacroClinic(
            code: code, name: names[(c + version) % names.count],
            opened: Date(timeIntervalSinceReferenceDate: [0, -1e9, 1e9, 123.456][c] + Double(version)),
            rating: c == 1 ? nil : doubles[(c + version) % doubles.count], accredited: (c + version) % 2 == 0,
            patients: (0..<3).map { p in
                let id = "\(code)/p\(p)"
                return MacroPatient(
                    id: id, clinicCode: code, name: names[(p + c) % names.count],
                    born: p == 1 ? nil : Date(timeIntervalSince1970: Double(p * 1_000_000 - 5)),
                    weight: doubles[(p + c + version) % doubles.count],
                    photo: p == 0 ? nil : (p == 1 ? Data() : Data((0..<300).map { UInt8(($0 + p) & 0xff) })),
                    insured: (p + version) % 2 == 1, notes: p == 2 ? nil : "note \(p) v\(version) \u{0}🚀",
                    visits: (0..<3).map { v in
                        let number = Int64(c * 100 + p * 10 + v)
                        return MacroVisit(
                            id: [Int64.min + 1 + number, number, Int64.max - number][v], patientId: id,
                            at: Date(timeIntervalSinceReferenceDate: Double(v) * 3600.5 + Double(version)),
                            fee: doubles[(v + version) % doubles.count], paid: v % 2 == 0,
                            kind: [VisitKind.checkup, .emergency, .followUp][(v + version) % 3],
                            followUp: v == 0 ? nil : .followUp, count: v == 1 ? nil : [Int.min, 0, Int.max][v],
                            attachment: Data(repeating: UInt8(v), count: v * 7), summary: v == 2 ? nil : "summary \(v)")
                    })
            })
    }
}

extension HandClinic {
    init(_ clinic: MacroClinic) {
        self.init(
            code: clinic.code, name: clinic.name, opened: clinic.opened, rating: clinic.rating,
            accredited: clinic.accredited,
            patients: clinic.patients.map { p in
                HandPatient(
                    id: p.id, clinicCode: p.clinicCode, name: p.name, born: p.born, weight: p.weight, photo: p.photo,
                    insured: p.insured, notes: p.notes,
                    visits: p.visits.map { v in
                        HandVisit(
                            id: v.id, patientId: v.patientId, at: v.at, fee: v.fee, paid: v.paid, kind: v.kind,
                            followUp: v.followUp, count: v.count, attachment: v.attachment, summary: v.summary)
                    })
            })
    }
}

/// A record's children come back in primary-key order.
func keyOrdered(_ clinics: [MacroClinic]) -> [MacroClinic] {
    clinics.map { clinic in
        var clinic = clinic
        clinic.patients = clinic.patients.map { patient in
            var patient = patient
            patient.visits.sort { $0.id < $1.id }
            return patient
        }.sorted { StoredValue.text($0.id) < StoredValue.text($1.id) }
        return clinic
    }.sorted { StoredValue.text($0.code) < StoredValue.text($1.code) }
}

// MARK: - Tests

@Suite("@StoredRecord records on every backend")
struct StoredRecordTests {
    @Test func entityIsTheHandDeclaredOne() {
        #expect(EntitySchema(MacroClinic.entity) == EntitySchema(HandClinic.entity))
        #expect(EntitySchema(MacroPatient.entity) == EntitySchema(HandPatient.entity))
        #expect(EntitySchema(MacroVisit.entity) == EntitySchema(HandVisit.entity))
        #expect(MacroClinic.entity.fields.map(\.name) == ["code", "name", "opened", "rating", "accredited"])
        #expect(MacroVisit.entity.fields.first { $0.name == "followUp" }?.isOptional == true)
        #expect(MacroVisit.entity.fields.first { $0.name == "kind" }?.type == .text)
    }

    @Test func fieldsRoundTripByPosition() throws {
        for clinic in macroClinics() {
            for patient in clinic.patients {
                for visit in patient.visits {
                    #expect(try visit.rebuiltFromFields() == visit)
                    #expect(try visit.writtenFields() == MacroVisit.entity.fields.map { $0.value(in: visit) })
                }
                var childless = patient
                childless.visits = []
                #expect(try patient.rebuiltFromFields() == childless)
                #expect(try patient.writtenFields() == MacroPatient.entity.fields.map { $0.value(in: patient) })
            }
            #expect(try clinic.writtenFields() == MacroClinic.entity.fields.map { $0.value(in: clinic) })
        }
    }

    @Test(arguments: allBackends)
    func roundTripThreeLevels(_ backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let clinics = try store.anyStorage(for: MacroClinic.self)
            let written = macroClinics()
            try clinics.persist(written)
            #expect(try clinics.readAll() == keyOrdered(written))
            #expect(try clinics.read(primaryKey: "c-1") == keyOrdered(written).first { $0.code == "c-1" })
            #expect(try clinics.read(primaryKey: "Zoë")?.name == "Zoë")
            #expect(try clinics.read(primaryKey: "Zoe\u{308}") == nil)
            #expect(try clinics.read(primaryKey: "nobody") == nil)

            // Rewritten with other values: every field changes, nothing is left over.
            let rewritten = macroClinics(version: 1)
            try clinics.persist(rewritten)
            #expect(try clinics.readAll() == keyOrdered(rewritten))
            let visits = try store.anyStorage(for: MacroVisit.self)
            #expect(try visits.count() == 36)
        }
    }

    @Test(arguments: allBackends)
    func queriesOverTheCompositeIndex(_ backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            try store.anyStorage(for: MacroClinic.self).persist(macroClinics())
            let visits = try store.anyStorage(for: MacroVisit.self)
            let patient = "c-2/p1"
            let kind = VisitKind.emergency.rawValue
            let found = try visits.read(
                where: #Predicate<MacroVisit> { $0.patientId == patient && $0.kind.rawValue == kind },
                sortedBy: [SortDescriptor(\.at, order: .reverse)])
            let expected = macroClinics().flatMap(\.patients).flatMap(\.visits)
                .filter { $0.patientId == patient && $0.kind == .emergency }
            #expect(found == expected)
            #expect(found.count == 1)
            let unpaid = try visits.read(
                where: #Predicate<MacroVisit> { !$0.paid && $0.summary != nil }, sortedBy: [SortDescriptor(\.id)])
            #expect(unpaid.map(\.id) == macroClinics().flatMap(\.patients).flatMap(\.visits)
                .filter { !$0.paid && $0.summary != nil }.map(\.id).sorted())
            #expect(!unpaid.isEmpty)
        }
    }

    @Test(arguments: allBackends)
    func erasingAParentErasesTwoLevelsOfChildren(_ backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let clinics = try store.anyStorage(for: MacroClinic.self)
            try clinics.persist(macroClinics())
            #expect(try clinics.erase(primaryKey: "c-3"))
            #expect(try store.anyStorage(for: MacroPatient.self).count() == 9)
            #expect(try store.anyStorage(for: MacroVisit.self).count() == 27)
        }
    }

    @Test(arguments: allBackends)
    func storesNaNAndNegativeZeroAsGiven(_ backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let clinics = try store.anyStorage(for: MacroClinic.self)
            let visits = try store.anyStorage(for: MacroVisit.self)
            try clinics.persist(macroClinics())
            for value in [Double.nan, -0.0] {
                var changed = macroClinics(version: 1)
                changed[0].patients[1].visits[2].fee = value
                let id = changed[0].patients[1].visits[2].id
                try clinics.persist(changed)
                #expect(try visits.read(primaryKey: id)?.fee.bitPattern == value.bitPattern)
            }
        }
    }

    @Test(arguments: allBackends)
    func handAndMacroDeclarationsReadEachOthersStores(_ backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        try withExtendedLifetime(directory) {
            let written = macroClinics()
            do {
                let store = try backend.open(directory.url, .full)
                try store.anyStorage(for: HandClinic.self).persist(written.map(HandClinic.init))
                try store.close()
            }
            do {
                let store = try backend.open(directory.url, .full)
                #expect(try store.anyStorage(for: MacroClinic.self).readAll() == keyOrdered(written))
                try store.anyStorage(for: MacroClinic.self).persist(macroClinics(version: 1))
                try store.close()
            }
            let store = try backend.open(directory.url, .full)
            #expect(try store.anyStorage(for: HandClinic.self).readAll() == keyOrdered(macroClinics(version: 1)).map(HandClinic.init))
            try store.close()
        }
    }
}
