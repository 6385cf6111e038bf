import DAOCore
import DAOMacros
import Foundation
import LMDBStorage
import TestSupport
import Testing

// Schemas: declarations and record types a client can get wrong (one child
// type in two relations, entity names that differ only in case or
// normalization, a record type changed without a migration, a record whose
// own coding throws): each is a typed StorageError, alike on every backend,
// and the stored data stays.

@Suite("Schemas: declarations and record types a client can get wrong")
struct SchemaTests {}

// Declarations a client can get wrong in the clinic: one child type in two
// relations of a parent, and a relation to a child that names another owner
// (an optional or mistyped foreign key does not compile). A child names its
// owner through one foreign key, so neither can be stored as declared: the
// first lost the children of one relation to the other on every backend.
// Each backend must refuse both alike, with `schemaMismatch`, when the
// storage is opened.

@StoredRecord("cx_orders")
struct OrderRecord: Equatable {
    var id: String
    @Children(foreignKey: "orderId") var samples: [SampleRecord]
    @Children(foreignKey: "orderId") var repeats: [SampleRecord]
}

/// A sample, the child type of two relations of one parent.
@StoredRecord("cx_samples", ownedBy: OrderRecord.self)
struct SampleRecord: Equatable {
    var id: Int64
    var orderId: String
}

/// A second parent type that holds samples, which name another owner.
@StoredRecord("cx_batches")
struct BatchRecord: Equatable {
    var id: String
    @Children(foreignKey: "orderId") var samples: [SampleRecord]
}

/// What one backend does with the declarations.
func declarationTranscript(_ backend: TestBackend) throws -> [String] {
    let directory = try TemporaryDirectory()
    var lines: [String] = []
    func note(_ step: String, _ body: () throws -> String) { noteStep(step, in: &lines, body) }
    let store = try backend.open(directory.url)
    defer {
        do { try store.close() } catch { Issue.record("closing failed: \(error)") }
    }
    note("one child type in two relations") {
        let orders = try store.anyStorage(for: OrderRecord.self)
        try orders.persist([OrderRecord(id: "o", samples: [SampleRecord(id: 1, orderId: "o")],
                                        repeats: [SampleRecord(id: 2, orderId: "o")])])
        let read = try orders.read(primaryKey: "o")
        return "opened, samples \(read?.samples.map(\.id) ?? []), repeats \(read?.repeats.map(\.id) ?? [])"
    }
    note("a relation to a child owned by another entity") {
        let orders = try store.anyStorage(for: OrderRecord.self)
        let batches = try store.anyStorage(for: BatchRecord.self)
        try batches.persist([BatchRecord(id: "b", samples: [SampleRecord(id: 3, orderId: "b")])])
        return "opened, orders \(try orders.count()), batches \(try batches.count())"
    }
    return lines
}

extension SchemaTests {
    @Suite("Client trial: clinic declarations a client can get wrong")
    struct ClinicRelations {
        @Test("one child type in two relations, or a relation to another owner's child: refused on every backend",
              arguments: localBackends)
        func refused(backend: TestBackend) throws {
            let transcript = try declarationTranscript(backend)
            #expect(transcript == [
                "one child type in two relations: schemaMismatch",
                "a relation to a child owned by another entity: schemaMismatch",
            ], "on \(backend.name)")
        }
    }
}

// Two record types of one store whose entity names differ only in ASCII case,
// or only in Unicode normalization, with the same fields. Each backend must
// keep them apart or refuse the second with a StorageError; never let one
// read or overwrite the other's records.

@StoredRecord("Bins") struct UpperBinRecord: Equatable {
    var id: Int64
    var label: String
}

@StoredRecord("bins") struct LowerBinRecord: Equatable {
    var id: Int64
    var label: String
}

@StoredRecord("Zo\u{EB}") struct ComposedNameRecord: Equatable {
    var id: Int64
    var label: String
}

@StoredRecord("Zoe\u{308}") struct DecomposedNameRecord: Equatable {
    var id: Int64
    var label: String
}

extension SchemaTests {
    @Suite("Client trial: entity names that differ only in case or normalization")
    struct EntityNames {
        /// Persists one record through each type and reads both back: each must
        /// hold only its own, or the second storage must be refused.
        static func separate<A: Record, B: Record>(
            _ backend: TestBackend, _ first: A, _ second: B, label: (A) -> String, _ otherLabel: (B) -> String
        ) throws -> String {
            let directory = try TemporaryDirectory("trial-names")
            let store = try backend.open(directory.url)
            defer {
                do { try store.close() } catch { Issue.record("closing failed: \(error)") }
            }
            let a = try store.anyStorage(for: A.self)
            try a.persist(first)
            do {
                let b = try store.anyStorage(for: B.self)
                try b.persist(second)
                let read = (try a.readAll().map(label), try b.readAll().map(otherLabel))
                return "\(read.0) \(read.1)"
            } catch let error as StorageError {
                #expect(try a.readAll().map(label) == [label(first)], "the first entity's records after the refusal")
                return "refused (\(error.kind))"
            }
        }

        @Test("names that differ only in ASCII case are two entities, or refused", arguments: localBackends)
        func asciiCase(backend: TestBackend) throws {
            let answer = try Self.separate(
                backend, UpperBinRecord(id: 1, label: "upper"), LowerBinRecord(id: 2, label: "lower"), label: \.label, \.label)
            #expect(answer == "[\"upper\"] [\"lower\"]" || answer.hasPrefix("refused"), "\(backend.name): \(answer)")
        }

        @Test("names that differ only in Unicode normalization are two entities, or refused", arguments: localBackends)
        func normalization(backend: TestBackend) throws {
            let answer = try Self.separate(
                backend, ComposedNameRecord(id: 1, label: "composed"), DecomposedNameRecord(id: 2, label: "decomposed"),
                label: \.label, \.label)
            // SQLite and LMDB keep the two apart (their caches of statements and
            // database handles compare names by bytes, not with String's ==); the
            // file stores refuse the second type, as a second type of one entity.
            #expect(answer == "[\"composed\"] [\"decomposed\"]" || answer.hasPrefix("refused"), "\(backend.name): \(answer)")
            if backend.name == "sqlite" || backend.name == "lmdb" {
                #expect(answer == "[\"composed\"] [\"decomposed\"]", "\(backend.name): \(answer)")
            }
        }
    }
}

// A client's record that validates its own values: its `init(fields:)` and
// `init(from:)` refuse a grade over 100, and its `write(fields:)` and
// `encode(to:)` refuse a negative one. The README promises that every failure
// is a `StorageError`; so an error of the record's own reaches the caller
// wrapped (kind `decoding` or `encoding`, the record's error kept as
// `underlying`), on every backend.

struct GradeOutOfRange: Error, Equatable {
    let grade: Int64
}

struct GradedRecord: Record, FieldwiseRecord, Equatable {
    typealias PrimaryKey = String
    var id: String
    var grade: Int64

    static let entity = Entity<GradedRecord>("trial_graded", primaryKey: "id", \.id, fields: [Field("grade", \.grade)])

    init(id: String, grade: Int64) {
        self.id = id
        self.grade = grade
    }

    init(fields: inout some FieldReader) throws {
        id = try fields.decode()
        grade = try fields.decode()
        if grade > 100 { throw GradeOutOfRange(grade: grade) }
    }

    func write(fields: inout some FieldWriter) throws {
        if grade < 0 { throw GradeOutOfRange(grade: grade) }
        try fields.encode(id)
        try fields.encode(grade)
    }

    enum CodingKeys: String, CodingKey { case id, grade }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        grade = try container.decode(Int64.self, forKey: .grade)
        if grade > 100 { throw GradeOutOfRange(grade: grade) }
    }

    func encode(to encoder: any Encoder) throws {
        if grade < 0 { throw GradeOutOfRange(grade: grade) }
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(grade, forKey: .grade)
    }
}

/// The same entity without the checks: how a value the checked type refuses
/// gets into the store (an older build wrote it, say).
struct LaxGradedRecord: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var grade: Int64

    static let entity = Entity<LaxGradedRecord>("trial_graded", primaryKey: "id", \.id, fields: [Field("grade", \.grade)])
}

extension SchemaTests {
    @Suite("Client trial: a record's own errors reach the caller as StorageError")
    struct RecordErrors {
        @Test("init(fields:) / init(from:) throwing on read is a .decoding StorageError", arguments: localBackends)
        func decodingError(backend: TestBackend) throws {
            let directory = try TemporaryDirectory()
            do {
                let store = try backend.open(directory.url)
                defer { try? store.close() }  // test clean-up
                try store.anyStorage(for: LaxGradedRecord.self).persist([
                    LaxGradedRecord(id: "ok", grade: 90), LaxGradedRecord(id: "too high", grade: 101),
                ])
            }
            let store = try backend.open(directory.url)
            defer { try? store.close() }  // test clean-up
            if backend.isFileStore {
                // The file stores decode every record when a storage is opened
                // (docs/ARCHITECTURE.md, "The file store"), so that is where the record refuses.
                let error = expectStorageError(.decoding) { _ = try store.anyStorage(for: GradedRecord.self) }
                #expect(error?.operation == .open)
                #expect(error?.entity == "trial_graded")
                #expect(error?.underlying as? GradeOutOfRange == GradeOutOfRange(grade: 101), "\(String(describing: error))")
                return
            }
            let graded = try store.anyStorage(for: GradedRecord.self)
            #expect(try graded.read(primaryKey: "ok") == GradedRecord(id: "ok", grade: 90))
            for read in [
                { _ = try graded.readAll() },
                { _ = try graded.read(primaryKey: "too high") },
                { _ = try graded.read(where: #Predicate { $0.grade > 95 }) },
            ] as [() throws -> Void] {
                let error = expectStorageError(.decoding) { try read() }
                #expect(error?.operation == .read)
                #expect(error?.entity == "trial_graded")
                #expect(error?.underlying as? GradeOutOfRange == GradeOutOfRange(grade: 101), "\(String(describing: error))")
            }
        }

        @Test("write(fields:) / encode(to:) throwing on persist is an .encoding StorageError; nothing is written",
              arguments: localBackends)
        func encodingError(backend: TestBackend) throws {
            let directory = try TemporaryDirectory()
            let store = try backend.open(directory.url)
            defer { try? store.close() }  // test clean-up
            let graded = try store.anyStorage(for: GradedRecord.self)
            let error = expectStorageError(.encoding) {
                try graded.persist([GradedRecord(id: "a", grade: 1), GradedRecord(id: "b", grade: -1)])
            }
            #expect(error?.operation == .persist)
            #expect(error?.entity == "trial_graded")
            #expect(error?.underlying as? GradeOutOfRange == GradeOutOfRange(grade: -1), "\(String(describing: error))")
            #expect(try graded.count() == 0)
        }
    }
}

// The tracker's record types changed without a migration: a field added to
// projects, a field removed from comments, a field's type changed in issues,
// an index added. Each is refused with `schemaMismatch` when its storage is
// opened, before anything is written: the store's files are byte for byte as
// they were, and the original types read every value back.

@StoredRecord("tk_projects", primaryKey: "slug")
struct ProjectRecordAddedField: Equatable {
    var slug: String
    var title: String
    var archived: Bool
    var createdAt: Date
    var color: String?
    @Children(foreignKey: "projectSlug") var issues: [IssueRecord]
}

@StoredRecord("tk_projects", primaryKey: "slug", indexes: [Index("tk_projects_by_title", on: ["title"])])
struct ProjectRecordAddedIndex: Equatable {
    var slug: String
    var title: String
    var archived: Bool
    var createdAt: Date
    @Children(foreignKey: "projectSlug") var issues: [IssueRecord]
}

@StoredRecord(
    "tk_issues", indexes: [Index("tk_issues_by_project_state_updated", on: ["projectSlug", "state", "updatedAt"])],
    ownedBy: ProjectRecord.self)
struct IssueRecordRetyped: Equatable {
    var id: Int64
    var projectSlug: String
    var title: String
    var state: IssueState
    var assignee: String?
    var due: Date?
    var priority: String
    var updatedAt: Date
    @Children(foreignKey: "issueId") var comments: [CommentRecord]
}

@StoredRecord(
    "tk_issues", indexes: [Index("tk_issues_by_project_state_updated", on: ["projectSlug", "state", "updatedAt"])],
    ownedBy: ProjectRecord.self)
struct IssueRecordMadeOptional: Equatable {
    var id: Int64
    var projectSlug: String
    var title: String
    var state: IssueState
    var assignee: String?
    var due: Date?
    var priority: Int32?
    var updatedAt: Date
    @Children(foreignKey: "issueId") var comments: [CommentRecord]
}

@StoredRecord(
    "tk_comments", indexes: [Index("tk_comments_by_issue_posted", on: ["issueId", "postedAt"])],
    ownedBy: IssueRecord.self)
struct CommentRecordRemovedField: Equatable {
    var id: String
    var issueId: Int64
    var author: String
    var body: String
    var postedAt: Date
    var payload: Data
}

/// The tracker's projects with the same fields declared in another order.
@StoredRecord("tk_projects", primaryKey: "slug")
struct ProjectRecordReordered: Equatable {
    var slug: String
    var createdAt: Date
    var archived: Bool
    var title: String
    @Children(foreignKey: "projectSlug") var issues: [IssueRecord]
}

/// The tracker's projects with a Date field declared as a Double and a Bool as an Int64.
@StoredRecord("tk_projects", primaryKey: "slug")
struct ProjectRecordRetyped: Equatable {
    var slug: String
    var title: String
    var archived: Int64
    var createdAt: Double
    @Children(foreignKey: "projectSlug") var issues: [IssueRecord]
}

/// The tracker's issues with a narrower integer for the priority.
@StoredRecord(
    "tk_issues", indexes: [Index("tk_issues_by_project_state_updated", on: ["projectSlug", "state", "updatedAt"])],
    ownedBy: ProjectRecord.self)
struct IssueRecordNarrowed: Equatable {
    var id: Int64
    var projectSlug: String
    var title: String
    var state: IssueState
    var assignee: String?
    var due: Date?
    var priority: Int8
    var updatedAt: Date
    @Children(foreignKey: "issueId") var comments: [CommentRecord]
}

extension SchemaTests {
    @Suite("Client trial, tracker: changed record types")
    struct TrackerDomain {
        @Test("a changed type is refused with schemaMismatch before any write; the data stays", arguments: localBackends)
        func changedTypes(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("tracker-schema")
            try writeTracker(backend, in: directory.url, calls: 0..<7)
            let expected = TrackerWrites.state(after: 7, oneSpelling: oneSpelling(backend))
            let before = try fileContents(directory.url).filter { $0.key != "lock.mdb" }
            let attempts: [(String, (any Store) throws -> Void)] = [
                ("a field added to projects", { _ = try $0.anyStorage(for: ProjectRecordAddedField.self) }),
                ("an index added to projects", { _ = try $0.anyStorage(for: ProjectRecordAddedIndex.self) }),
                ("an issue's Int32 field made a String", { _ = try $0.anyStorage(for: IssueRecordRetyped.self) }),
                ("an issue's field made optional", { _ = try $0.anyStorage(for: IssueRecordMadeOptional.self) }),
                ("a field removed from comments", { _ = try $0.anyStorage(for: CommentRecordRemovedField.self) }),
            ]
            for (name, attempt) in attempts {
                // First in a fresh store instance, then after the original types were opened.
                for afterOriginal in [false, true] {
                    let store = try backend.open(directory.url)
                    if afterOriginal { _ = try TrackerDAOs(store) }
                    let error = expectStorageError(.schemaMismatch, "\(name) on \(backend.name)") { try attempt(store) }
                    #expect(error?.operation == .open, "\(name) on \(backend.name): \(String(describing: error))")
                    try store.close()
                    let after = try fileContents(directory.url).filter { $0.key != "lock.mdb" }
                    #expect(after == before, "\(name) on \(backend.name): the store's files changed")
                }
            }
            try withTracker(backend, in: directory.url) { daos, _ in
                let read = try daos.projects.read()
                #expect(exactly(read, expected), "the data after the refusals on \(backend.name)")
            }
        }

        @Test("fields declared in another order, retyped within a storage class or narrowed: one answer on every backend")
        func sameClassChanges() throws {
            var transcripts: [String: [String]] = [:]
            for backend in localBackends {
                let directory = try TemporaryDirectory("tracker-schema-order")
                var lines: [String] = []
                let project = Project(
                    uniqueId: "p", title: "Title", archived: true, createdAt: Tracker.time(3),
                    issues: [TrackedIssue(
                        uniqueId: 1, projectSlug: "p", title: "t", state: .open, assignee: nil, due: nil, priority: 1_000,
                        updatedAt: Tracker.time(1), comments: [])])
                try withTracker(backend, in: directory.url) { daos, _ in try daos.projects.persist(project) }
                let before = try fileContents(directory.url).filter { $0.key != "lock.mdb" }
                noteStep("reordered", in: &lines) {
                    let store = try backend.open(directory.url)
                    defer { closeRecordingFailure(store, backend) }
                    let read = try store.anyStorage(for: ProjectRecordReordered.self).readAll()
                    return read.map { "\($0.title) \($0.archived) \($0.createdAt.timeIntervalSinceReferenceDate)" }.joined()
                }
                noteStep("retyped Date as Double, Bool as Int64", in: &lines) {
                    let store = try backend.open(directory.url)
                    defer { closeRecordingFailure(store, backend) }
                    let read = try store.anyStorage(for: ProjectRecordRetyped.self).readAll()
                    return read.map { "\($0.title) \($0.archived) \($0.createdAt)" }.joined()
                }
                noteStep("priority narrowed to Int8", in: &lines) {
                    let store = try backend.open(directory.url)
                    defer { closeRecordingFailure(store, backend) }
                    let read = try store.anyStorage(for: IssueRecordNarrowed.self).readAll()
                    return read.map { "\($0.priority)" }.joined()
                }
                let after = try fileContents(directory.url).filter { $0.key != "lock.mdb" }
                #expect(after == before, "the store's files changed on \(backend.name)")
                transcripts[backend.name] = lines
            }
            for (name, lines) in transcripts {
                #expect(lines == transcripts["json"], "\(name): \(lines), json: \(transcripts["json"] ?? [])")
            }
        }
    }
}

/// Scans whose parcel key is declared a String instead of a UUID: the same
/// storage class (text), so the same stored schema.
@StoredRecord(
    "lg_scans",
    indexes: [
        Index("lg_scans_by_parcel_at", on: ["parcelId", "at"]),
        Index("lg_scans_by_place_temperature", on: ["place", "temperature"]),
    ],
    ownedBy: ParcelRecord.self)
struct ScanRecordStringParcel: Equatable {
    var id: Int64
    var parcelId: String
    var at: Date
    var place: String
    var temperature: Double?
    var ok: Bool
    var raw: Data?
}

/// Shipments whose destination is declared a UUID: text that is no UUID
/// must come back as a typed error, not as a crash or another value.
@StoredRecord(
    "lg_shipments", primaryKey: "code",
    indexes: [Index("lg_shipments_by_destination_due", on: ["destination", "due"])])
struct ShipmentRecordUUIDDestination: Equatable {
    var code: String
    var destination: UUID
    var due: Date?
    var priority: Int8
    var insured: Bool?
    var declaredValue: Double?
    var createdAt: Date
    @Children(foreignKey: "shipmentCode") var parcels: [ParcelRecord]
}

extension SchemaTests {
    @Suite("Client trial, logistics: record types changed without a migration")
    struct LogisticsDomain {
        @Test("a second record type of a child entity, and text read as a UUID: typed answers", arguments: localBackends)
        func textRetyped(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("logistics-retyped")
            let model = try seededLogistics(backend, in: directory.url, calls: 5)
            do {
                let store = try backend.open(directory.url)
                defer { closeRecordingFailure(store, backend) }
                // A second record type of a child entity is refused (its owner's
                // relation holds the first), with a message that says so.
                _ = try store.anyStorage(for: ParcelRecord.self)
                let error = expectStorageError(.schemaMismatch, "a second type of lg_scans on \(backend.name)") {
                    _ = try store.anyStorage(for: ScanRecordStringParcel.self)
                }
                #expect(error?.message.contains("relation 'scans' holds 'lg_scans' as ScanRecord") == true, "\(String(describing: error))")
            }
            do {
                let store = try backend.open(directory.url)
                defer { closeRecordingFailure(store, backend) }
                // Destinations that are no UUIDs: a decoding error, at open on the
                // file stores and at the read elsewhere (docs/SEMANTICS.md).
                let error = expectStorageError(.decoding, "destinations read as UUIDs on \(backend.name)") {
                    _ = try store.anyStorage(for: ShipmentRecordUUIDDestination.self).readAll()
                }
                #expect(error?.entity == "lg_shipments", "\(String(describing: error))")
            }
            try withLogistics(backend, in: directory.url) { daos, _ in
                let read = try daos.shipments.read()
                #expect(sameBits(read, model.shipmentList), "\(backend.name): the data after the retyped reads")
            }
        }
    }
}
