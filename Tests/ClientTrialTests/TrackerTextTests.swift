import DAOCore
import Foundation
import TestSupport
import Testing

// Text a client pastes into an issue tracker: carriage returns, a byte-order
// mark, line and paragraph separators, controls, noncharacters, the last
// scalar. Every field that holds text (keys too) must give back its scalars
// exactly, after reopening, on every backend.

@Suite("Client trial, tracker: pasted text")
struct TrackerTextTests {
    static let texts = [
        "a\r\nb", "\r", "\u{FEFF}bom", "line\u{2028}para\u{2029}", "\u{1}\u{1F}\u{7F}", "\u{FFFE}\u{FFFF}",
        "\u{10FFFF}", "tab\there", "\u{0}", " ", "\\\"'", "\u{85}next", "]]>&<", "$key",
    ]

    @Test("every text comes back with its scalars, after reopening", arguments: localBackends)
    func pasted(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("tracker-text")
        let projects = Self.texts.enumerated().map { index, text in
            let slug = "\(text)#\(index)"
            return Project(
                uniqueId: slug, title: text, archived: false, createdAt: Tracker.time(index),
                issues: [TrackedIssue(
                    uniqueId: Int64(index), projectSlug: slug, title: text, state: .open, assignee: text, due: nil,
                    priority: 0, updatedAt: Tracker.time(0),
                    comments: [TrackedComment(
                        uniqueId: text + "-c", issueId: Int64(index), author: text, body: text + text,
                        postedAt: Tracker.time(0), editedAt: nil, payload: Data(text.utf8))])])
        }
        try withTracker(backend, in: directory.url) { daos, _ in try daos.projects.persist(projects) }
        try withTracker(backend, in: directory.url) { daos, _ in
            let read = try daos.projects.read()
            let want = Tracker.sorted(projects)
            #expect(read.count == want.count, "\(backend.name)")
            for (got, wanted) in zip(read, want) where !exactly(got, wanted) {
                Issue.record("\(backend.name): \(String(reflecting: wanted.title)) came back as \(String(reflecting: got.title)) / \(String(reflecting: got.uniqueId))")
            }
            for text in Self.texts {
                let found = try daos.comments.read(where: #Predicate { $0.author == text }).map(\.author)
                #expect(found.map { Array($0.utf8) } == [Array(text.utf8)], "\(backend.name): \(String(reflecting: text))")
            }
        }
    }
}
