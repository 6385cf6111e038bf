import DAOCore
import Foundation
import TestSupport
import Testing

// The clinic domain (ClinicDomain.swift) on every backend: values at the
// edges of what a real and a date can hold, generated queries over optional
// reals and dates with ties and limits, checked against answers computed in
// Swift from docs/SEMANTICS.md, and moves and erasures between the two
// relations of one parent.

/// A date `seconds` after the reference date.
func day(_ seconds: Double) -> Date { Date(timeIntervalSinceReferenceDate: seconds) }

/// A small clinic, the same on every backend: ASCII text only, so Swift's own
/// comparisons give the stored order; ties in every sorted field on purpose.
func clinicPatients(seed: UInt64) -> [PatientRecord] {
    var random = TestRandom(seed: seed)
    func below(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }
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

@Suite("Client trial: a clinic with two relations on one parent, optional reals and dates, on every backend")
struct ClinicTrialTests {
    @Test("reals and dates at their edges come back bit for bit; NaN and -0.0 in a real and a date too (the property list refuses a date of -0.0)",
          arguments: localBackends)
    func values(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let patients = clinicPatients(seed: 11)
        try withClinic(backend, in: directory.url) { clinic, _ in
            try clinic.patients.persist(patients)
            let visit = try #require(patients.flatMap(\.visits).first)
            let before = try clinic.counts()
            let awkward: [(String, LabResultRecord)] = [
                ("a NaN value", LabResultRecord(id: "X1", visitId: visit.id, code: "HB", value: .nan, taken: nil, flag: nil)),
                ("a -0.0 value", LabResultRecord(id: "X2", visitId: visit.id, code: "HB", value: -0.0, taken: nil, flag: nil)),
                ("a NaN date", LabResultRecord(id: "X3", visitId: visit.id, code: "HB", value: 1, taken: day(.nan), flag: nil)),
                ("a -0.0 date", LabResultRecord(id: "X4", visitId: visit.id, code: "HB", value: 1, taken: day(-0.0), flag: nil)),
            ]
            func bits(_ lab: LabResultRecord?) -> [UInt64?] {
                [lab?.value?.bitPattern, lab?.taken?.timeIntervalSinceReferenceDate.bitPattern]
            }
            for (what, lab) in awkward {
                if lab.taken?.timeIntervalSinceReferenceDate == 0 && backend.name == "plist" {
                    let error = expectStorageError(.invalidArgument, "\(what) on \(backend.name)") { try clinic.labs.persist([lab]) }
                    #expect(error?.entity == "cl_labs", "\(what) on \(backend.name): \(String(describing: error))")
                    continue
                }
                try clinic.labs.persist([lab])
                #expect(bits(try clinic.labs.read(primaryKey: lab.id)) == bits(lab), "\(what) on \(backend.name)")
                #expect(try clinic.labs.erase(primaryKey: lab.id), "\(what) on \(backend.name)")
                // The same, nested two levels down in a patient.
                let original = try #require(patients.first { !$0.visits.isEmpty })
                var patient = original
                let nested = LabResultRecord(
                    id: patient.visits[0].id + "/Z", visitId: patient.visits[0].id, code: "HB", value: lab.value,
                    taken: lab.taken, flag: nil)
                patient.visits[0].labs.append(nested)
                try clinic.patients.persist([patient])
                #expect(bits(try clinic.labs.read(primaryKey: nested.id)) == bits(nested), "\(what) nested, on \(backend.name)")
                try clinic.patients.persist([original])
            }
            var rx = try #require(patients.flatMap(\.visits).flatMap(\.prescriptions).first)
            let dose = rx.doseMg
            rx.doseMg = -0.0
            // An indexed real: found by 0.0 through the index.
            try clinic.rx.persist([rx])
            let zero = 0.0
            let drug = rx.drug
            #expect(try clinic.rx.read(where: #Predicate { $0.doseMg == zero }).map(\.id).contains(rx.id), "on \(backend.name)")
            #expect(
                try clinic.rx.read(where: #Predicate { $0.drug == drug && $0.doseMg == zero }).map(\.id).contains(rx.id),
                "on \(backend.name)")
            rx.doseMg = dose
            try clinic.rx.persist([rx])
            #expect(try clinic.counts() == before, "on \(backend.name)")
        }
        try withClinic(backend, in: directory.url) { clinic, _ in
            let read = try clinic.patients.readAll()
            #expect(sameBits(read, patients), "on \(backend.name): \(firstDifference(read, patients))")
        }
    }

    @Test("generated queries over optional reals and dates, ties and limits, answer as docs/SEMANTICS.md says",
          arguments: localBackends)
    func queries(backend: TestBackend) throws {
        for seed: UInt64 in [1, 2, 3] {
            let directory = try TemporaryDirectory()
            let patients = clinicPatients(seed: seed)
            let visits = patients.flatMap(\.visits)
            let labs = visits.flatMap(\.labs)
            let rx = visits.flatMap(\.prescriptions)
            let store = try backend.open(directory.url)
            defer {
                do { try store.close() } catch { Issue.record("closing failed: \(error)") }
            }
            let clinic = try ClinicStorages(store)
            do {
                try clinic.patients.persist(patients)
                func check<R: Record>(_ name: String, _ got: [R], _ expected: [R], sourceLocation: SourceLocation = #_sourceLocation) {
                    #expect(sameBits(got, expected), "seed \(seed) on \(backend.name), \(name): \(firstDifference(got, expected))",
                            sourceLocation: sourceLocation)
                }
                let someVisit = visits.first { $0.labs.count > 1 }?.id ?? "none"
                check("labs of a visit with a time, by time",
                      try clinic.labs.read(Query(
                        where: #Predicate { $0.visitId == someVisit && $0.taken != nil }, sortedBy: [SortDescriptor(\.taken)])),
                      answer(labs, where: { $0.visitId == someVisit && $0.taken != nil },
                             by: [{ storedLess($0.taken?.timeIntervalSinceReferenceDate, $1.taken?.timeIntervalSinceReferenceDate) }]))
                check("HB above 0, by value descending, limit 3",
                      try clinic.labs.read(Query(
                        where: #Predicate { $0.code == "HB" && $0.value != nil && $0.value! > 0 },
                        sortedBy: [SortDescriptor(\.value, order: .reverse)], limit: 3)),
                      answer(labs, where: { $0.code == "HB" && ($0.value ?? 0) > 0 },
                             by: [{ storedLess($1.value, $0.value) }], limit: 3))
                check("labs without a value",
                      try clinic.labs.read(Query(where: #Predicate { $0.value == nil })),
                      answer(labs, where: { $0.value == nil }))
                check("labs whose value is not 1.5 (nil included)",
                      try clinic.labs.read(Query(where: #Predicate { !($0.value == 1.5) })),
                      answer(labs, where: { !($0.value == 1.5) }))
                let cut = day(86_400)
                check("labs taken before a day, by code then value, limit 4",
                      try clinic.labs.read(Query(
                        where: #Predicate { $0.taken != nil && $0.taken! < cut },
                        sortedBy: [SortDescriptor(\.code), SortDescriptor(\.value)], limit: 4)),
                      answer(labs, where: { $0.taken.map { $0 < cut } ?? false },
                             by: [{ $0.code == $1.code ? nil : $0.code < $1.code }, { storedLess($0.value, $1.value) }], limit: 4))
                let infinite = Double.infinity
                check("labs of infinite value",
                      try clinic.labs.read(Query(where: #Predicate { $0.value == infinite })),
                      answer(labs, where: { $0.value == .infinity }))
                let high = LabFlag.high, critical = LabFlag.critical
                check("high or critical labs",
                      try clinic.labs.read(Query(where: #Predicate { $0.flag == high || $0.flag == critical })),
                      answer(labs, where: { $0.flag == .high || $0.flag == .critical }))
                check("labs of two codes, by code",
                      try clinic.labs.read(Query(where: #Predicate { ["K", "hb"].contains($0.code) }, sortedBy: [SortDescriptor(\.code)])),
                      answer(labs, where: { ["K", "hb"].contains($0.code) }, by: [{ $0.code == $1.code ? nil : $0.code < $1.code }]))
                let someMrn = patients[2].mrn
                check("visits of a patient, latest first",
                      try clinic.visits.read(Query(
                        where: #Predicate { $0.patientMrn == someMrn }, sortedBy: [SortDescriptor(\.date, order: .reverse)])),
                      answer(visits, where: { $0.patientMrn == someMrn },
                             by: [{ $0.date == $1.date ? nil : $0.date > $1.date }]))
                check("visits with more than two labs",
                      try clinic.visits.read(Query(where: #Predicate { $0.labs.count > 2 })),
                      answer(visits, where: { $0.labs.count > 2 }))
                check("visits with labs but no prescriptions",
                      try clinic.visits.read(Query(where: #Predicate { !$0.labs.isEmpty && $0.prescriptions.isEmpty })),
                      answer(visits, where: { !$0.labs.isEmpty && $0.prescriptions.isEmpty }))
                check("urgent visits, by reason then date, limit 2",
                      try clinic.visits.read(Query(
                        where: #Predicate { $0.urgent }, sortedBy: [SortDescriptor(\.reason), SortDescriptor(\.date)], limit: 2)),
                      answer(visits, where: { $0.urgent },
                             by: [{ a, b in
                                 switch (a.reason, b.reason) {
                                 case (nil, nil): return nil
                                 case (nil, _): return true
                                 case (_, nil): return false
                                 case (let l?, let r?): return l == r ? nil : l < r
                                 }
                             }, { $0.date == $1.date ? nil : $0.date < $1.date }], limit: 2))
                check("patients named Ann, by birth then weight descending",
                      try clinic.patients.read(Query(
                        where: #Predicate { $0.name == "Ann" },
                        sortedBy: [SortDescriptor(\.born), SortDescriptor(\.weightKg, order: .reverse)])),
                      answer(patients, where: { $0.name == "Ann" },
                             by: [{ $0.born == $1.born ? nil : $0.born < $1.born }, { storedLess($1.weightKg, $0.weightKg) }]))
                check("patients with an allergy",
                      try clinic.patients.read(Query(where: #Predicate { $0.allergies.count > 0 })),
                      answer(patients, where: { !$0.allergies.isEmpty }))
                check("prescriptions of at least 400 mg without refills, by dose then until",
                      try clinic.rx.read(Query(
                        where: #Predicate { $0.doseMg >= 400 && $0.refills == nil },
                        sortedBy: [SortDescriptor(\.doseMg), SortDescriptor(\.until)])),
                      answer(rx, where: { $0.doseMg >= 400 && $0.refills == nil },
                             by: [{ $0.doseMg == $1.doseMg ? nil : $0.doseMg < $1.doseMg },
                                  { storedLess($0.until?.timeIntervalSinceReferenceDate, $1.until?.timeIntervalSinceReferenceDate) }]))
                check("prescriptions until a date in the index's range",
                      try clinic.rx.read(Query(where: #Predicate { $0.drug == "ibuprofen" && $0.doseMg > 300 })),
                      answer(rx, where: { $0.drug == "ibuprofen" && $0.doseMg > 300 }))
                #expect(try clinic.labs.count(where: #Predicate { $0.value != nil && $0.value! < 1 })
                        == labs.filter { ($0.value ?? 1) < 1 }.count, "seed \(seed) on \(backend.name)")
            }
        }
    }
}
