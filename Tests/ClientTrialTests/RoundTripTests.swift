import DAOCore
import Foundation
import TestSupport
import Testing

// Round trips: trees of each domain stored through its DAOs or storages,
// read back, rewritten, moved between parents and erased, and compared with
// what a model of the domain says (RoundTripTests+Logistics.swift and
// RoundTripTests+Warehouse.swift hold the generated runs against a model).

@Suite("Round trips: stored trees read back, moved and erased as a model says")
struct RoundTripTests {}

// An outside client's trial of the library, following the README literally:
// records declared with @StoredRecord, plain objects and translators, one DAO
// per type, on every backend. What the docs promise is checked against a
// reference computed here in Swift, and the backends against each other.

extension RoundTripTests {
    @Suite("Client trial, library: a three-level tree through the README's API")
    struct LibraryDomain {
        @Test("a three-level tree with extreme values comes back exactly, also after reopening", arguments: localBackends)
        func roundTrip(backend: TestBackend) throws {
            let directory = try TemporaryDirectory()
            let corpus = Sample.corpus()
            let extreme = Library(
                uniqueId: "a\u{0}b 🚀", name: Sample.longText, city: "Malmö", opened: Date(timeIntervalSinceReferenceDate: -.infinity),
                rating: .greatestFiniteMagnitude,
                shelves: [
                    Shelf(
                        uniqueId: "s\u{0}", libraryCode: "a\u{0}b 🚀", floor: .min, label: Sample.longText, capacity: .max,
                        books: [
                            Sample.book(
                                .min, shelf: "s\u{0}", title: "", author: "", year: .max, price: -.greatestFiniteMagnitude,
                                weight: Double.leastNonzeroMagnitude, acquired: Date(timeIntervalSinceReferenceDate: .infinity),
                                summary: Sample.longText, cover: Data(), onLoan: true),
                            Sample.book(
                                .max, shelf: "s\u{0}", year: .min, price: -Double.leastNonzeroMagnitude, weight: -.infinity,
                                acquired: .distantPast, summary: "\u{0}", cover: Data(repeating: 0, count: 70_000)),
                        ]),
                ])
            let all = (corpus + [extreme]).sorted { $0.uniqueId.utf8.lexicographicallyPrecedes($1.uniqueId.utf8) }
            let bookCount = all.flatMap(\.shelves).flatMap(\.books).count
            try withLibrary(backend, in: directory.url) { daos, _ in
                try daos.libraries.persist(corpus + [extreme])
                #expect(try daos.libraries.read() == all)
                #expect(try daos.libraries.read(byPrimaryKey: extreme.uniqueId) == extreme)
                #expect(try daos.counts() == [all.count, all.flatMap(\.shelves).count, bookCount])
                // The empty string is a key like any other.
                #expect(try daos.libraries.read(byPrimaryKey: "")?.shelves.map(\.uniqueId) == ["x", "y"])
                #expect(try daos.shelves.read(byPrimaryKey: "central-c")?.books == [])
            }
            try withLibrary(backend, in: directory.url) { daos, _ in
                let read = try daos.libraries.read()
                #expect(read == all)
                #expect(allScalars(read) == allScalars(all))
                // Bit for bit, where `==` would not tell: the sign of the smallest subnormal.
                let books = try daos.books.read(byPrimaryKeys: [.min, .max])
                #expect(books.map { $0.price.bitPattern } == [(-Double.greatestFiniteMagnitude).bitPattern, (-Double.leastNonzeroMagnitude).bitPattern])
                #expect(books.map(\.cover) == [Data(), Data(repeating: 0, count: 70_000)])
            }
        }

        @Test("updates, moves between parents at two levels, and erases follow docs/SEMANTICS.md", arguments: localBackends)
        func updateMoveErase(backend: TestBackend) throws {
            let directory = try TemporaryDirectory()
            var expected: [Library] = []
            try withLibrary(backend, in: directory.url) { daos, _ in
                try daos.libraries.persist(Sample.corpus())
                let counts = try daos.counts()

                // A parent persisted without one of its books: the book is gone.
                let shelfA = try #require(try daos.shelves.read(byPrimaryKey: "central-a"))
                let dropped = shelfA.books[0]
                try daos.shelves.persist(shelf(shelfA, books: Array(shelfA.books.dropFirst())))
                #expect(try daos.books.read(byPrimaryKey: dropped.uniqueId) == nil)
                #expect(try daos.counts() == [counts[0], counts[1], counts[2] - 1])

                // A book moved by persisting the shelf that now holds it.
                let moved = shelfA.books[1]
                let shelfB = try #require(try daos.shelves.read(byPrimaryKey: "central-b"))
                let movedToB = Sample.book(
                    moved.uniqueId, shelf: "central-b", title: moved.title, author: moved.author, year: moved.year,
                    price: moved.price, weight: moved.weight, acquired: moved.acquired, summary: moved.summary,
                    cover: moved.cover, onLoan: moved.onLoan)
                try daos.shelves.persist(shelf(shelfB, books: (shelfB.books + [movedToB]).sorted { $0.uniqueId < $1.uniqueId }))
                #expect(try daos.books.read(byPrimaryKey: moved.uniqueId)?.shelfId == "central-b")
                #expect(try daos.shelves.read(byPrimaryKey: "central-a")?.books.map(\.uniqueId).contains(moved.uniqueId) == false)
                #expect(try daos.shelves.read(byPrimaryKey: "central-b")?.books.map(\.uniqueId).contains(moved.uniqueId) == true)
                #expect(try daos.books.count(where: #Predicate { $0.shelfId == "central-a" }) == shelfA.books.count - 2)
                #expect(try daos.counts() == [counts[0], counts[1], counts[2] - 1])

                // A book moved through its own storage.
                try daos.books.persist(Sample.book(moved.uniqueId, shelf: "east-2", title: "moved again"))
                #expect(try daos.shelves.read(byPrimaryKey: "central-b")?.books.map(\.uniqueId).contains(moved.uniqueId) == false)
                // Children come back in key order: book \(moved.uniqueId) is the first of east-2's.
                #expect(try daos.shelves.read(byPrimaryKey: "east-2")?.books.first?.title == "moved again")

                // A shelf moved, with its books, to another library.
                let east2 = try #require(try daos.shelves.read(byPrimaryKey: "east-2"))
                try daos.shelves.persist(shelf(east2, library: "central"))
                #expect(try daos.libraries.read(byPrimaryKey: "central")?.shelves.map(\.uniqueId) == ["central-a", "central-b", "central-c", "east-2"])
                #expect(try daos.libraries.read(byPrimaryKey: "east")?.shelves.map(\.uniqueId) == ["east-1"])
                #expect(try daos.shelves.read(byPrimaryKey: "east-2")?.books == east2.books)

                // A child naming no existing owner, or held by a parent it does not name: constraint, nothing written.
                let before = try daos.libraries.read()
                expectStorageError(.constraint) { try daos.books.persist(Sample.book(5_000, shelf: "nowhere")) }
                expectStorageError(.constraint) { try daos.shelves.persist(shelf(east2, library: "nowhere")) }
                expectStorageError(.constraint) {
                    try daos.shelves.persist(shelf(east2, books: [Sample.book(5_001, shelf: "central-a")]))
                }
                #expect(try daos.libraries.read() == before)

                // Updating a parent's own fields keeps its children.
                let central = try #require(try daos.libraries.read(byPrimaryKey: "central"))
                try daos.libraries.persist(Library(
                    uniqueId: "central", name: "Renamed", city: nil, opened: central.opened, rating: nil,
                    shelves: central.shelves))
                #expect(try daos.libraries.read(byPrimaryKey: "central")?.shelves == central.shelves)
                #expect(try daos.libraries.count(where: #Predicate { $0.city == nil }) == 2)

                // Erases cascade at every level; erase(where:) on the lowest level.
                let eastBooks = try daos.books.count(where: #Predicate { $0.shelfId == "east-1" })
                let afterMove = try daos.counts()
                #expect(try daos.libraries.erase(byPrimaryKey: "east"))
                #expect(try daos.counts() == [afterMove[0] - 1, afterMove[1] - 1, afterMove[2] - eastBooks])
                #expect(try daos.books.count(where: #Predicate { $0.shelfId == "east-1" }) == 0)
                let onLoan = try daos.books.count(where: #Predicate { $0.onLoan })
                #expect(try daos.books.erase(where: #Predicate { $0.onLoan }) == onLoan)
                #expect(try daos.books.count(where: #Predicate { $0.onLoan }) == 0)
                #expect(try daos.libraries.erase(byPrimaryKey: "east") == false)
                expected = try daos.libraries.read()
            }
            try withLibrary(backend, in: directory.url) { daos, _ in
                let read = try daos.libraries.read()
                #expect(read == expected)
            }
        }

        func shelf(_ shelf: Shelf, library: String? = nil, books: [Book]? = nil) -> Shelf {
            Shelf(
                uniqueId: shelf.uniqueId, libraryCode: library ?? shelf.libraryCode, floor: shelf.floor, label: shelf.label,
                capacity: shelf.capacity, books: books ?? shelf.books)
        }
    }
}

// Moves between parents, erasures at each level and upserts in the clinic,
// where a visit has two relations (labs and prescriptions) and a patient two
// (visits and allergies): writing one relation must leave the other as the
// parent holds it, on every backend.

extension RoundTripTests {
    @Suite("Client trial: clinic moves, erasures and upserts across two relations of one parent")
    struct ClinicMoves {
        @Test("every step leaves each backend as a model of the tree says", arguments: localBackends)
        func moves(backend: TestBackend) throws {
            let directory = try TemporaryDirectory()
            var patients = clinicPatients(seed: 5)
            func index(_ mrn: String) -> Int { patients.firstIndex { $0.mrn == mrn }! }
            func sortTree() {
                patients.sort { $0.mrn < $1.mrn }
                for p in patients.indices {
                    patients[p].visits.sort { $0.id < $1.id }
                    patients[p].allergies.sort { $0.id < $1.id }
                    for v in patients[p].visits.indices {
                        patients[p].visits[v].labs.sort { $0.id < $1.id }
                        patients[p].visits[v].prescriptions.sort { $0.id < $1.id }
                    }
                }
            }
            func expectTree(_ clinic: ClinicStorages, _ step: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
                sortTree()
                let visits = patients.flatMap(\.visits)
                let read = try clinic.patients.readAll()
                #expect(sameBits(read, patients), "\(step) on \(backend.name): \(firstDifference(read, patients))",
                        sourceLocation: sourceLocation)
                let readVisits = try clinic.visits.readAll()
                #expect(sameBits(readVisits, visits.sorted { $0.id < $1.id }),
                        "\(step) on \(backend.name), visits: \(firstDifference(readVisits, visits.sorted { $0.id < $1.id }))",
                        sourceLocation: sourceLocation)
                let labs = visits.flatMap(\.labs).sorted { $0.id < $1.id }
                let readLabs = try clinic.labs.readAll()
                #expect(sameBits(readLabs, labs), "\(step) on \(backend.name), labs: \(firstDifference(readLabs, labs))",
                        sourceLocation: sourceLocation)
                let rx = visits.flatMap(\.prescriptions).sorted { $0.id < $1.id }
                let readRx = try clinic.rx.readAll()
                #expect(sameBits(readRx, rx), "\(step) on \(backend.name), prescriptions: \(firstDifference(readRx, rx))",
                        sourceLocation: sourceLocation)
                let allergies = patients.flatMap(\.allergies).sorted { $0.id < $1.id }
                #expect(try clinic.allergies.readAll() == allergies, "\(step) on \(backend.name), allergies",
                        sourceLocation: sourceLocation)
                // The same through the index on (patientMrn, date) and (visitId, taken).
                for patient in patients {
                    let mrn = patient.mrn
                    let byIndex = try clinic.visits.read(Query(where: #Predicate { $0.patientMrn == mrn }))
                    #expect(byIndex.map(\.id) == patient.visits.map(\.id), "\(step) on \(backend.name): visits of \(mrn)",
                            sourceLocation: sourceLocation)
                }
                for visit in visits {
                    let id = visit.id
                    let byIndex = try clinic.labs.read(Query(where: #Predicate { $0.visitId == id }))
                    #expect(byIndex.map(\.id) == visit.labs.map(\.id), "\(step) on \(backend.name): labs of \(id)",
                            sourceLocation: sourceLocation)
                    #expect(try clinic.rx.count(where: #Predicate { $0.visitId == id }) == visit.prescriptions.count,
                            "\(step) on \(backend.name): prescriptions of \(id)", sourceLocation: sourceLocation)
                }
            }

            try withClinic(backend, in: directory.url) { clinic, _ in
                try clinic.patients.persist(patients)
                try expectTree(clinic, "as persisted")

                // A visit with labs and prescriptions moves to another patient, who holds it now.
                let from = try #require(patients.firstIndex { $0.visits.contains { !$0.labs.isEmpty && !$0.prescriptions.isEmpty } })
                let to = (from + 1) % patients.count
                var visit = patients[from].visits.first { !$0.labs.isEmpty && !$0.prescriptions.isEmpty }!
                patients[from].visits.removeAll { $0.id == visit.id }
                visit.patientMrn = patients[to].mrn
                patients[to].visits.append(visit)
                try clinic.patients.persist([patients[to]])
                try expectTree(clinic, "a visit moved by its new patient")

                // The visit moves back through its own storage, its children with it.
                visit.patientMrn = patients[from].mrn
                patients[to].visits.removeAll { $0.id == visit.id }
                patients[from].visits.append(visit)
                try clinic.visits.persist([visit])
                try expectTree(clinic, "a visit moved back through its own storage")

                // The visit, rewritten with its labs only: its prescriptions go, its labs stay.
                let visitIndex = patients[from].visits.firstIndex { $0.id == visit.id }!
                patients[from].visits[visitIndex].prescriptions = []
                try clinic.visits.persist([patients[from].visits[visitIndex]])
                try expectTree(clinic, "a visit rewritten without prescriptions")

                // A lab moves to a visit of another patient, through the lab's own storage.
                let target = try #require(patients.flatMap(\.visits).first { $0.patientMrn != visit.patientMrn })
                var lab = patients[from].visits[visitIndex].labs[0]
                patients[from].visits[visitIndex].labs.removeFirst()
                lab.visitId = target.id
                lab.value = .infinity
                let targetPatient = index(target.patientMrn)
                let targetVisit = patients[targetPatient].visits.firstIndex { $0.id == target.id }!
                patients[targetPatient].visits[targetVisit].labs.append(lab)
                try clinic.labs.persist([lab])
                try expectTree(clinic, "a lab moved to another patient's visit")

                // Upsert of existing keys: a patient with a changed name and the same children, twice in one batch.
                var renamed = patients[0]
                renamed.name = "first"
                var again = renamed
                again.name = "second"
                patients[0] = again
                try clinic.patients.persist([renamed, again])
                try expectTree(clinic, "a patient upserted twice in one batch")

                // A patient's allergies replaced: the visits stay.
                patients[1].allergies = [AllergyRecord(id: 999, patientMrn: patients[1].mrn, substance: "latex")]
                try clinic.patients.persist([patients[1]])
                try expectTree(clinic, "allergies replaced")

                // Erasures at each level.
                let someRx = try #require(patients.flatMap(\.visits).flatMap(\.prescriptions).first)
                #expect(try clinic.rx.erase(primaryKey: someRx.id))
                for p in patients.indices { for v in patients[p].visits.indices { patients[p].visits[v].prescriptions.removeAll { $0.id == someRx.id } } }
                try expectTree(clinic, "a prescription erased")

                let someLabs = patients.flatMap(\.visits).flatMap(\.labs).filter { $0.value == nil }.map(\.id)
                #expect(try clinic.labs.erase(where: #Predicate { $0.value == nil }) == someLabs.count)
                for p in patients.indices { for v in patients[p].visits.indices { patients[p].visits[v].labs.removeAll { $0.value == nil } } }
                try expectTree(clinic, "labs without a value erased")

                let urgent = patients.flatMap(\.visits).filter(\.urgent).count
                #expect(try clinic.visits.erase(where: #Predicate { $0.urgent }) == urgent)
                for p in patients.indices { patients[p].visits.removeAll(where: \.urgent) }
                try expectTree(clinic, "urgent visits erased with their labs and prescriptions")

                let gone = patients.removeLast()
                #expect(try clinic.patients.erase(primaryKey: gone.mrn))
                try expectTree(clinic, "a patient erased with visits, labs, prescriptions and allergies")

                // A child naming no stored owner is refused and nothing changes.
                let before = try clinic.counts()
                expectStorageError(.constraint, "a lab of no visit on \(backend.name)") {
                    try clinic.labs.persist([LabResultRecord(id: "orphan", visitId: "nobody", code: "K", value: 1, taken: nil, flag: nil)])
                }
                expectStorageError(.constraint, "an allergy of no patient on \(backend.name)") {
                    try clinic.allergies.persist([AllergyRecord(id: 5, patientMrn: gone.mrn, substance: "x")])
                }
                // A visit holding a lab whose foreign key names another visit.
                var wrong = try #require(patients.flatMap(\.visits).first)
                wrong.labs.append(LabResultRecord(id: "wrong", visitId: "other", code: "K", value: 1, taken: nil, flag: nil))
                expectStorageError(.constraint, "a lab naming another visit on \(backend.name)") { try clinic.visits.persist([wrong]) }
                #expect(try clinic.counts() == before, "on \(backend.name)")
            }
            try withClinic(backend, in: directory.url) { clinic, _ in
                try expectTree(clinic, "after reopening")
                #expect(try clinic.patients.eraseAll() == patients.count)
                #expect(try clinic.counts() == [0, 0, 0, 0, 0], "erase-all cascades on \(backend.name)")
            }
        }
    }
}
