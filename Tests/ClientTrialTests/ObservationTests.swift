import DAOCore
import Foundation
import SQLiteStorage
import TestSupport
import Testing

// Observation (docs/OBSERVATION.md) in each domain: writes at every level,
// through parents and through children's own storages, arrive as changes
// that rebuild an observer's results exactly, checked against a fresh read.

@Suite("Observation: changes rebuild every observer's results exactly")
struct ObservationTests {}

// docs/OBSERVATION.md as a client uses it: a view of one library's shelves,
// kept only from snapshots and their changes, while books move between
// shelves, a shelf moves between libraries, and shelves are erased.

extension ObservationTests {
    @Suite("Client trial: observing a library's shelves on every backend")
    struct LibraryDomain {
        @Test("moves, edits and erases arrive as changes that rebuild the results exactly", arguments: localBackends)
        func shelvesOfALibrary(backend: TestBackend) async throws {
            let directory = try TemporaryDirectory()
            let store = try backend.open(directory.url)
            let daos = try LibraryDAOs(store)
            try await daos.libraries.persist(Sample.corpus())
            let sort = [SortDescriptor<ShelfRecord>(\.floor, order: .reverse), SortDescriptor(\.label)]
            let central = #Predicate<ShelfRecord> { $0.libraryCode == "central" }
            let iterator = daos.shelves.observe(where: central, sortedBy: sort).makeAsyncIterator()
            let book = try await #require(try daos.books.read(byPrimaryKey: 2))
            let bookIterator = daos.books.observe(primaryKey: 2).makeAsyncIterator()

            var rows = try #require(try await nextSnapshot(iterator)).results
            #expect(rows == (try await daos.shelves.read(where: central, sortedBy: sort)))
            #expect(try #require(try await nextSnapshot(bookIterator)).results == [book])

            let changes: [(String, () throws -> Void)] = [
                ("a book moved from another library onto central-b", {
                    try daos.books.persist(Sample.book(40, shelf: "central-b", title: "moved in"))
                }),
                ("a shelf of east moved into central", {
                    let shelf = try #require(try daos.shelves.read(byPrimaryKey: "east-2"))
                    try daos.shelves.persist(Shelf(
                        uniqueId: shelf.uniqueId, libraryCode: "central", floor: 5, label: shelf.label, capacity: nil,
                        books: shelf.books))
                }),
                ("book 2 moved from central-a to central-c", {
                    try daos.books.persist(Sample.book(2, shelf: "central-c", title: "moved across"))
                }),
                ("central-a erased with its books", {
                    let erased = try daos.shelves.erase(byPrimaryKey: "central-a")
                    #expect(erased)
                }),
                ("central renamed with the same shelves, then a shelf relabelled", {
                    let library = try #require(try daos.libraries.read(byPrimaryKey: "central"))
                    try daos.libraries.persist(Library(
                        uniqueId: "central", name: "Renamed", city: nil, opened: library.opened, rating: nil,
                        shelves: library.shelves))
                    let shelf = try #require(library.shelves.first)
                    try daos.shelves.persist(Shelf(
                        uniqueId: shelf.uniqueId, libraryCode: "central", floor: shelf.floor, label: "AAA",
                        capacity: shelf.capacity, books: shelf.books))
                }),
            ]
            for (name, change) in changes {
                try change()
                let snapshot = try #require(try await nextSnapshot(iterator), "\(name)")
                let fresh = try await daos.shelves.read(where: central, sortedBy: sort)
                let delivered = try #require(snapshot.changes, "\(name): a later snapshot carries its changes")
                rows = try #require(applying(delivered, to: rows, from: snapshot.results), "\(name): indexes out of range")
                #expect(snapshot.results == fresh, "\(name)")
                #expect(rows == fresh, "\(name): the changes do not rebuild the results")
            }
            // Book 2 moved to central-c before central-a was erased, so it lives on.
            let moved = try #require(try await nextSnapshot(bookIterator))
            #expect(moved.results.map(\.shelfId) == ["central-c"])
            #expect(try await daos.books.read(byPrimaryKey: 2)?.title == "moved across")

            #expect(try await daos.libraries.erase(byPrimaryKey: "central"))
            let erased = try #require(try await nextSnapshot(iterator))
            #expect(erased.results.isEmpty)
            #expect(erased.changes?.deletions.count == rows.count)
            let gone = try #require(try await nextSnapshot(bookIterator))
            #expect(gone.results.isEmpty)

            try store.close()
            #expect(try await nextSnapshot(iterator) == nil)
            #expect(try await nextSnapshot(bookIterator) == nil)
        }
    }
}

// docs/OBSERVATION.md in the clinic: a change to either relation of a visit,
// or to a grandchild of a patient, modifies what an observer holds; and on
// SQLite, a second store instance on the same file is seen with pollInterval.

extension ObservationTests {
    @Suite("Client trial: observing the clinic")
    struct ClinicDomain {
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
}

// Observation (docs/OBSERVATION.md) of the logistics domain: one parcel by its
// UUID key, the scans of that parcel, and the shipments holding a parcel with a
// failed scan (a predicate two relations down), while the parcel moves between
// shipments (by its own storage and by a shipment's rewrite), gains scans by
// the scans' own storage, loses them by a predicate, and is erased by a
// predicate over a relation.

extension ObservationTests {
    @Suite("Client trial, logistics: observation across three levels with UUID keys")
    struct LogisticsDomain {
        @Test("every change reaches the observers of a parcel, its scans and its shipments", arguments: localBackends)
        func observed(backend: TestBackend) async throws {
            let directory = try TemporaryDirectory("logistics-observe")
            let store = try backend.open(directory.url)
            let daos = try LogisticsDAOs(store)
            var random = TestRandom(seed: 31)
            var next: Int64 = 0
            let spelled = oneSpelling(backend)
            let shipments = ["north", "south", "east"].map {
                Logistics.shipment($0, parcels: 2, &random, next: &next, oneSpelling: spelled)
            }
            try await daos.shipments.persist(shipments)
            var parcel = shipments[0].parcels[0]
            let id = parcel.uniqueId
            let failing = #Predicate<ShipmentRecord> { shipment in
                shipment.parcels.contains { parcel in parcel.scans.contains { scan in !scan.ok } }
            }
            let ofParcel = #Predicate<ScanRecord> { $0.parcelId == id }
            let parcelIterator = daos.parcels.observe(primaryKey: id).makeAsyncIterator()
            let scansIterator = daos.scans.observe(where: ofParcel, sortedBy: [SortDescriptor(\.at, order: .reverse)]).makeAsyncIterator()
            let shipmentsIterator = daos.shipments.observe(where: failing, sortedBy: [SortDescriptor(\.parcels.count)]).makeAsyncIterator()
            var parcelRows = try #require(try await nextSnapshot(parcelIterator)).results
            var scanRows = try #require(try await nextSnapshot(scansIterator)).results
            var shipmentRows = try #require(try await nextSnapshot(shipmentsIterator)).results

            var steps: [(String, () throws -> Void)] = []
            steps.append(("a failed scan by the scans' storage", {
                try daos.scans.persist(Scan(uniqueId: 9_001, parcelId: id, at: Logistics.dates[1], place: "dock", temperature: nil,
                                            ok: false, raw: nil))
            }))
            steps.append(("the parcel moved to south by its own storage", {
                parcel = try daos.parcels.read(byPrimaryKey: id) ?? parcel
                parcel.shipmentCode = "south"
                try daos.parcels.persist(parcel)
            }))
            steps.append(("east rewritten holding the parcel", {
                let east = try daos.shipments.read(byPrimaryKey: "east")
                var moved = try daos.parcels.read(byPrimaryKey: id) ?? parcel
                moved.shipmentCode = "east"
                try daos.shipments.persist(#require(east).with(parcels: (east?.parcels ?? []) + [moved]))
            }))
            steps.append(("the failed scans erased by a predicate", {
                _ = try daos.scans.erase(where: #Predicate { !$0.ok })
            }))
            steps.append(("two scans more", {
                try daos.scans.persist([
                    Scan(uniqueId: Int64.min, parcelId: id, at: Logistics.dates[5], place: "a", temperature: -.infinity, ok: false, raw: nil),
                    Scan(uniqueId: Int64.max, parcelId: id, at: Logistics.dates[6], place: "b", temperature: Double(bitPattern: 1 << 40), ok: true, raw: Data([0])),
                ])
            }))
            steps.append(("parcels with a failed scan erased by a relation predicate", {
                _ = try daos.parcels.erase(where: #Predicate { parcel in parcel.scans.contains { !$0.ok } })
            }))
            steps.append(("the parcel back under north", {
                var back = parcel
                back.shipmentCode = "north"
                back.scans = []
                try daos.parcels.persist(back)
            }))
            for (name, step) in steps {
                try step()
                let freshParcel = try await daos.parcels.read(byPrimaryKey: id).map { [$0] } ?? []
                let freshScans = try await daos.scans.read(where: ofParcel, sortedBy: [SortDescriptor(\.at, order: .reverse)])
                let freshShipments = try await daos.shipments.read(where: failing, sortedBy: [SortDescriptor(\.parcels.count)])
                if !sameBits(freshParcel, parcelRows) {
                    let snapshot = try #require(try await nextSnapshot(parcelIterator), "\(name) on \(backend.name)")
                    parcelRows = snapshot.results
                    #expect(sameBits(parcelRows, freshParcel), "the parcel: \(name) on \(backend.name)")
                }
                if !sameBits(freshScans, scanRows) {
                    let snapshot = try #require(try await nextSnapshot(scansIterator), "\(name) on \(backend.name)")
                    let changes = try #require(snapshot.changes)
                    scanRows = try #require(applying(changes, to: scanRows, from: snapshot.results))
                    #expect(sameBits(scanRows, freshScans), "the parcel's scans: \(name) on \(backend.name)")
                }
                if !sameBits(freshShipments, shipmentRows) {
                    let snapshot = try #require(try await nextSnapshot(shipmentsIterator), "\(name) on \(backend.name)")
                    let changes = try #require(snapshot.changes)
                    shipmentRows = try #require(applying(changes, to: shipmentRows, from: snapshot.results))
                    #expect(sameBits(shipmentRows, freshShipments), "failing shipments: \(name) on \(backend.name)")
                }
            }
            #expect(parcelRows.first?.shipmentCode == "north")
            try store.close()
        }
    }
}

// Observing the tracker's three levels at once: a project by key, its open
// issues through the composite index's fields, and one issue's comments.
// Each write (at any level, through any level's storage) must arrive as
// changes that rebuild exactly what a fresh read gives.

// Observed queries whose predicates and sorts read relations (`count`,
// `isEmpty`, a sort by a relation's count, a limit), while the children and
// grandchildren change through their own storages.

extension ObservationTests {
    @Suite("Client trial, tracker: observing three levels and queries over relations")
    struct TrackerDomain {
        @Test("writes at each level arrive as changes that rebuild the results", arguments: localBackends)
        func levels(backend: TestBackend) async throws {
            let directory = try TemporaryDirectory("tracker-observe")
            let store = try backend.open(directory.url)
            let daos = try TrackerDAOs(store)
            var random = TestRandom(seed: 41)
            var project = Tracker.project("caf\u{E9}", version: 1, firstIssue: 1, issues: 6, random: &random)
            if oneSpelling(backend) { project = Tracker.oneSpelling(project) }
            try await daos.projects.persist(project)
            let slug = project.uniqueId
            let issue = try #require(project.issues.first)
            let issueId = issue.uniqueId
            let open = IssueState.open
            let openOfProject = #Predicate<IssueRecord> { $0.projectSlug == slug && $0.state == open }
            let issueSort = [SortDescriptor<IssueRecord>(\.updatedAt, order: .reverse)]
            let ofIssue = #Predicate<CommentRecord> { $0.issueId == issueId }
            let commentSort = [SortDescriptor<CommentRecord>(\.postedAt), SortDescriptor<CommentRecord>(\.editedAt)]

            let projectIterator = daos.projects.observe(primaryKey: slug).makeAsyncIterator()
            let issuesIterator = daos.issues.observe(where: openOfProject, sortedBy: issueSort).makeAsyncIterator()
            let commentsIterator = daos.comments.observe(where: ofIssue, sortedBy: commentSort).makeAsyncIterator()
            var projectRows = try #require(try await nextSnapshot(projectIterator)).results
            var issueRows = try #require(try await nextSnapshot(issuesIterator)).results
            var commentRows = try #require(try await nextSnapshot(commentsIterator)).results
            #expect(exactly(projectRows, [project]))

            func comment(_ id: String, edited: Date?) -> TrackedComment {
                TrackedComment(uniqueId: id, issueId: issueId, author: oneSpelling(backend) ? "Zo\u{EB}" : "Zoe\u{308}", body: "new", postedAt: Tracker.time(2),
                        editedAt: edited, payload: Data([1, 2, 3]))
            }
            let steps: [(String, () throws -> Void)] = [
                ("a comment added through the comments' storage", { try daos.comments.persist(comment("zz-1", edited: nil)) }),
                ("the comment edited", { try daos.comments.persist(comment("zz-1", edited: Tracker.time(3))) }),
                ("the issue opened with a new update time, through the issues' storage", {
                    let old = try #require(try daos.issues.read(byPrimaryKey: issueId))
                    try daos.issues.persist(TrackedIssue(
                        uniqueId: old.uniqueId, projectSlug: old.projectSlug, title: old.title, state: .open,
                        assignee: old.assignee, due: old.due, priority: old.priority, updatedAt: Tracker.time(9),
                        comments: old.comments))
                }),
                ("the issue's comments erased by a predicate", { _ = try daos.comments.erase(where: ofIssue) }),
                ("every issue of the project closed by rewriting the project", {
                    let old = try #require(try daos.projects.read(byPrimaryKey: slug))
                    try daos.projects.persist(Project(
                        uniqueId: old.uniqueId, title: old.title, archived: old.archived, createdAt: old.createdAt,
                        issues: old.issues.map {
                            TrackedIssue(uniqueId: $0.uniqueId, projectSlug: $0.projectSlug, title: $0.title, state: .closed,
                                  assignee: $0.assignee, due: $0.due, priority: $0.priority, updatedAt: $0.updatedAt,
                                  comments: $0.comments)
                        }))
                }),
                ("the issue reopened with a comment, through the issues' storage", {
                    let old = try #require(try daos.issues.read(byPrimaryKey: issueId))
                    try daos.issues.persist(TrackedIssue(
                        uniqueId: old.uniqueId, projectSlug: old.projectSlug, title: old.title, state: .open,
                        assignee: nil, due: nil, priority: old.priority, updatedAt: Tracker.time(1),
                        comments: [comment("aa-2", edited: nil)]))
                }),
                ("the project erased", {
                    let erased = try daos.projects.erase(byPrimaryKey: slug)
                    #expect(erased)
                }),
            ]
            for (name, step) in steps {
                try step()
                let freshProject = try await daos.projects.read(byPrimaryKey: slug).map { [$0] } ?? []
                let freshIssues = try await daos.issues.read(where: openOfProject, sortedBy: issueSort)
                let freshComments = try await daos.comments.read(where: ofIssue, sortedBy: commentSort)
                if !exactly(freshProject, projectRows) {
                    let snapshot = try #require(try await nextSnapshot(projectIterator), "\(name) on \(backend.name)")
                    projectRows = snapshot.results
                    #expect(exactly(projectRows, freshProject), "the project: \(name) on \(backend.name)")
                }
                if !exactly(freshIssues, issueRows) {
                    let snapshot = try #require(try await nextSnapshot(issuesIterator), "\(name) on \(backend.name)")
                    let changes = try #require(snapshot.changes)
                    issueRows = try #require(applying(changes, to: issueRows, from: snapshot.results))
                    #expect(exactly(issueRows, freshIssues), "the open issues: \(name) on \(backend.name)")
                }
                if !exactly(freshComments, commentRows) {
                    let snapshot = try #require(try await nextSnapshot(commentsIterator), "\(name) on \(backend.name)")
                    let changes = try #require(snapshot.changes)
                    commentRows = try #require(applying(changes, to: commentRows, from: snapshot.results))
                    #expect(exactly(commentRows, freshComments), "the comments: \(name) on \(backend.name)")
                }
            }
            #expect(projectRows.isEmpty && issueRows.isEmpty && commentRows.isEmpty)
            try store.close()
        }

        @Test("writes to children and grandchildren through their own storages move records in and out", arguments: localBackends)
        func relations(backend: TestBackend) async throws {
            let directory = try TemporaryDirectory("tracker-observe-relations")
            let store = try backend.open(directory.url)
            let daos = try TrackerDAOs(store)
            var random = TestRandom(seed: 77)
            var projects = ["core", "web", "docs"].enumerated().map { index, slug in
                Tracker.project(slug, version: 1, firstIssue: Int64(index) * 10, issues: 3, random: &random, payloadBytes: 4)
            }
            if oneSpelling(backend) { projects = projects.map(Tracker.oneSpelling) }
            try await daos.projects.persist(projects)
            let busy = #Predicate<IssueRecord> { $0.comments.count >= 2 }
            let byComments = [SortDescriptor<IssueRecord>(\.comments.count, order: .reverse)]
            let nonEmpty = #Predicate<ProjectRecord> { !$0.issues.isEmpty }
            let issuesIterator = daos.issues.observe(where: busy, sortedBy: byComments, limit: 4).makeAsyncIterator()
            let projectsIterator = daos.projects.observe(where: nonEmpty, sortedBy: [SortDescriptor(\.title)], limit: 2)
                .makeAsyncIterator()
            var issueRows = try #require(try await nextSnapshot(issuesIterator)).results
            var projectRows = try #require(try await nextSnapshot(projectsIterator)).results

            func comment(_ id: String, on issue: Int64) -> TrackedComment {
                TrackedComment(uniqueId: id, issueId: issue, author: "ana", body: "x", postedAt: Tracker.time(1), editedAt: nil,
                               payload: Data())
            }
            let allIssues = projects.flatMap(\.issues).map(\.uniqueId)
            var steps: [(String, () throws -> Void)] = []
            for (index, issue) in allIssues.enumerated() {
                steps.append(("two comments on issue \(issue)", {
                    try daos.comments.persist([comment("n-\(index)-a", on: issue), comment("n-\(index)-b", on: issue)])
                }))
            }
            steps.append(("new comments erased", {
                _ = try daos.comments.erase(where: #Predicate { $0.id.starts(with: "n-") })
            }))
            steps.append(("core's issues erased through the issues' storage", {
                _ = try daos.issues.erase(where: #Predicate { $0.projectSlug == "core" })
            }))
            steps.append(("an issue added to core through the issues' storage", {
                try daos.issues.persist(TrackedIssue(
                    uniqueId: 500, projectSlug: "core", title: "back", state: .open, assignee: nil, due: nil, priority: 0,
                    updatedAt: Tracker.time(1), comments: [comment("z-1", on: 500), comment("z-2", on: 500), comment("z-3", on: 500)]))
            }))
            steps.append(("every comment erased", { _ = try daos.comments.erase() }))
            for (name, step) in steps {
                try step()
                let freshIssues = try await daos.issues.read(where: busy, sortedBy: byComments, limit: 4)
                let freshProjects = try await daos.projects.read(where: nonEmpty, sortedBy: [SortDescriptor(\.title)], limit: 2)
                if !exactly(freshIssues, issueRows) {
                    let snapshot = try #require(try await nextSnapshot(issuesIterator), "\(name) on \(backend.name)")
                    let changes = try #require(snapshot.changes)
                    issueRows = try #require(applying(changes, to: issueRows, from: snapshot.results))
                    #expect(exactly(issueRows, freshIssues), "busy issues: \(name) on \(backend.name)")
                }
                if !exactly(freshProjects, projectRows) {
                    let snapshot = try #require(try await nextSnapshot(projectsIterator), "\(name) on \(backend.name)")
                    let changes = try #require(snapshot.changes)
                    projectRows = try #require(applying(changes, to: projectRows, from: snapshot.results))
                    #expect(exactly(projectRows, freshProjects), "projects with issues: \(name) on \(backend.name)")
                }
            }
            try store.close()
        }
    }
}

// Observation across four levels: a change at one end of the tree seen by an
// observer at the other. Warehouses observed while a tag (three levels down)
// changes or moves; tags observed while a warehouse (three levels up) drops
// the aisle that holds them. Every snapshot's changes must turn the previous
// results into the new ones, which must equal a fresh read.

extension ObservationTests {
    @Suite("Client trial: observing the warehouse domain across four levels")
    struct WarehouseDomain {
        @Test("changes three levels away arrive, exact against a fresh read", arguments: localBackends)
        func acrossLevels(backend: TestBackend) async throws {
            let directory = try TemporaryDirectory("trial-wh-observe")
            let store = try backend.open(directory.url)
            defer {
                do { try store.close() } catch { Issue.record("closing failed: \(error)") }
            }
            let warehouses = DAO(storage: try store.anyStorage(for: WarehouseRecord.self), translator: Same<WarehouseRecord>())
            let tags = DAO(storage: try store.anyStorage(for: TagRecord.self), translator: Same<TagRecord>())
            let items = DAO(storage: try store.anyStorage(for: ItemRecord.self), translator: Same<ItemRecord>())
            let item = { (id: String, aisle: String, tags: [TagRecord]) in
                ItemRecord(
                    id: id, aisleId: aisle, sku: id, quantity: 0, weight: nil, price: nil, small: nil, medium: nil, wide: nil,
                    count: nil, level: nil, big: nil, ratio: 0, expires: nil, photo: nil, fragile: nil, note: nil, ref: nil,
                    grade: nil, tags: tags)
            }
            let opened = Date(timeIntervalSinceReferenceDate: 0)
            try await warehouses.persist([
                WarehouseRecord(code: "W1", name: "one", region: nil, opened: opened, aisles: [
                    AisleRecord(id: "A1", warehouseCode: "W1", number: 1, zone: .cold, items: [
                        item("I1", "A1", [TagRecord(id: 1, itemId: "I1", label: "red", score: nil)]),
                        item("I2", "A1", [TagRecord(id: 2, itemId: "I2", label: "blue", score: 1)]),
                    ]),
                    AisleRecord(id: "A2", warehouseCode: "W1", number: 2, zone: nil, items: [
                        item("I3", "A2", [TagRecord(id: 3, itemId: "I3", label: "red", score: 2)]),
                    ]),
                ]),
                WarehouseRecord(code: "W2", name: "two", region: "north", opened: opened, aisles: [
                    AisleRecord(id: "B1", warehouseCode: "W2", number: 1, zone: .dry, items: [item("J1", "B1", [])]),
                ]),
            ])
            let regionless = #Predicate<WarehouseRecord> { $0.region == nil }
            let red = #Predicate<TagRecord> { $0.label == "red" }
            let sortByScore = [SortDescriptor<TagRecord>(\.score, order: .reverse)]
            let warehouseIterator = warehouses.observe(where: regionless).makeAsyncIterator()
            let tagIterator = tags.observe(where: red, sortedBy: sortByScore).makeAsyncIterator()
            var warehouseRows = try #require(try await nextSnapshot(warehouseIterator)).results
            var tagRows = try #require(try await nextSnapshot(tagIterator)).results
            #expect(warehouseRows.map(\.code) == ["W1"])
            #expect(tagRows.map(\.id) == [3, 1])

            func follow<V: Plain>(_ iterator: Observation<V>.Iterator, _ rows: inout [V], fresh: [V], _ what: String) async throws {
                let snapshot = try #require(try await nextSnapshot(iterator), "\(what)")
                let changes = try #require(snapshot.changes, "\(what): a later snapshot carries its changes")
                #expect(applying(changes, to: rows, from: snapshot.results) == snapshot.results, "\(what): the changes rebuild the results")
                #expect(snapshot.results == fresh, "\(what): the snapshot is the store's state")
                rows = snapshot.results
            }

            // A tag three levels under W1 is relabelled: W1 is modified, and tag 1 leaves the red tags.
            try await tags.persist(TagRecord(id: 1, itemId: "I1", label: "green", score: nil))
            try await follow(warehouseIterator, &warehouseRows, fresh: try warehouses.read(where: regionless), "tag 1 relabelled")
            try await follow(tagIterator, &tagRows, fresh: try tags.read(where: red, sortedBy: sortByScore), "tag 1 relabelled")
            #expect(warehouseRows.first?.aisles.first?.items.first?.tags.first?.label == "green")
            #expect(tagRows.map(\.id) == [3])

            // A red tag moves to an item of W2 (out of the observed warehouses).
            try await tags.persist(TagRecord(id: 3, itemId: "J1", label: "red", score: 5))
            try await follow(warehouseIterator, &warehouseRows, fresh: try warehouses.read(where: regionless), "tag 3 moved to W2")
            try await follow(tagIterator, &tagRows, fresh: try tags.read(where: red, sortedBy: sortByScore), "tag 3 moved to W2")

            // An item of W2 gets a red tag, written through the items' storage.
            try await items.persist(item("J1", "B1", [TagRecord(id: 3, itemId: "J1", label: "red", score: 5),
                                               TagRecord(id: 4, itemId: "J1", label: "red", score: nil)]))
            try await follow(tagIterator, &tagRows, fresh: try tags.read(where: red, sortedBy: sortByScore), "tag 4 added to J1")
            #expect(tagRows.map(\.id) == [3, 4])

            // W2, three levels up, drops aisle B1 (with J1 and its red tags), and loses its region: it enters.
            try await warehouses.persist(WarehouseRecord(code: "W2", name: "two", region: nil, opened: opened, aisles: []))
            try await follow(tagIterator, &tagRows, fresh: try tags.read(where: red, sortedBy: sortByScore), "W2 dropped B1")
            try await follow(warehouseIterator, &warehouseRows, fresh: try warehouses.read(where: regionless), "W2 dropped B1")
            #expect(tagRows.isEmpty)
            #expect(warehouseRows.map(\.code) == ["W1", "W2"])
        }
    }
}
