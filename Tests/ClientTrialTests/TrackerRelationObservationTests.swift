import DAOCore
import Foundation
import TestSupport
import Testing

// Observed queries whose predicates and sorts read relations (`count`,
// `isEmpty`, a sort by a relation's count, a limit), while the children and
// grandchildren change through their own storages.

@Suite("Client trial, tracker: observing queries over relations")
struct TrackerRelationObservationTests {
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
