import DAOCore
import Foundation
import TestSupport
import Testing

// Slugs near LMDB's 511-byte key limit: the project's own key fits, but an
// issue's keys (its owner's slug is part of its index entry) may not.

@Suite("Client trial, tracker: slugs near LMDB's key limit")
struct TrackerLongKeyTests {
    @Test("a long slug with issues and comments: stored whole, or refused with invalidArgument and nothing written")
    func longSlugs() throws {
        for backend in localBackends {
            let directory = try TemporaryDirectory("tracker-long")
            var lines: [String] = []
            try withTracker(backend, in: directory.url) { daos, _ in
                for length in [400, 470, 490, 500, 505, 511, 512] {
                    let slug = String(repeating: "é", count: length / 2) + (length % 2 == 1 ? "x" : "")
                    var random = TestRandom(seed: UInt64(length))
                    var project = Tracker.project(slug, version: 1, firstIssue: Int64(length) * 100, issues: 3, random: &random)
                    if oneSpelling(backend) { project = Tracker.oneSpelling(project) }
                    let before = try daos.counts()
                    noteStep("\(length)", in: &lines) {
                        try daos.projects.persist(project)
                        let read = try daos.projects.read(byPrimaryKey: slug)
                        let through = try daos.issues.read(where: #Predicate { $0.projectSlug == slug }).count
                        return exactly(read, project) && through == 3 ? "stored" : "different"
                    }
                    if lines.last?.hasSuffix("stored") != true {
                        #expect(try daos.counts() == before, "\(length) on \(backend.name): \(lines)")
                    }
                }
            }
            // docs/SEMANTICS.md: LMDB refuses a key (or an index entry, which
            // holds the issue's slug) longer than 511 bytes; the others store it.
            let stored = lines.prefix { $0.hasSuffix(": stored") }.count
            if backend.name == "lmdb" {
                #expect(stored >= 1 && lines.dropFirst(stored).allSatisfy { $0.hasSuffix(": invalidArgument") }, "\(lines)")
            } else {
                #expect(stored == lines.count, "\(backend.name): \(lines)")
            }
        }
    }
}

extension TrackerLongKeyTests {
    @Test("LMDB's refusal of a key too long says so, in the client's terms")
    func refusalSaysWhy() throws {
        let directory = try TemporaryDirectory("tracker-long-message")
        let backend = try #require(localBackends.first { $0.name == "lmdb" })
        try withTracker(backend, in: directory.url) { daos, _ in
            for (slug, issues) in [(String(repeating: "s", count: 600), 0), (String(repeating: "t", count: 505), 2)] {
                var random = TestRandom(seed: 1)
                let project = Tracker.project(slug, version: 1, firstIssue: 1, issues: issues, random: &random)
                let error = expectStorageError(.invalidArgument) { try daos.projects.persist(project) }
                let message = error?.message ?? ""
                #expect(message.contains("511 bytes") && message.contains("nothing was written"),
                        "\(slug.utf8.count)-byte slug with \(issues) issues: \(message)")
                #expect(error?.entity == "tk_projects")
                let counts = try daos.counts()
                #expect(counts == [0, 0, 0])
            }
        }
    }
}
