import DAOCore
import DAOMacros
import Foundation
import TestSupport
import Testing

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

@Suite("Client trial, tracker: changed record types")
struct TrackerSchemaTests {
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

extension TrackerSchemaTests {
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
