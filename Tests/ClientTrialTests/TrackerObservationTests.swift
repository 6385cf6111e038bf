import DAOCore
import Foundation
import TestSupport
import Testing

// Observing the tracker's three levels at once: a project by key, its open
// issues through the composite index's fields, and one issue's comments.
// Each write (at any level, through any level's storage) must arrive as
// changes that rebuild exactly what a fresh read gives.

@Suite("Client trial, tracker: observing three levels")
struct TrackerObservationTests {
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
}
