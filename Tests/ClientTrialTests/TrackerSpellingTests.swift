import DAOCore
import Foundation
import TestSupport
import Testing

// The property-list store refuses a text canonically equivalent to one stored
// in the same entity's document but spelled otherwise (docs/SEMANTICS.md).
// Once the other spelling is gone (its record erased or rewritten), the
// text is no longer equivalent to anything stored and must be taken.

@Suite("Client trial, tracker: a spelling taken once the other is gone")
struct TrackerSpellingTests {
    static func project(_ slug: String, title: String) -> Project {
        Project(uniqueId: slug, title: title, archived: false, createdAt: Tracker.time(0), issues: [])
    }

    @Test("erase the one spelling, then store the other", arguments: localBackends)
    func spellings(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("tracker-spelling")
        let nfc = "caf\u{E9}", nfd = "cafe\u{301}"
        var lines: [String] = []
        func scalars(_ daos: TrackerDAOs) throws -> String {
            try daos.projects.read().map {
                ($0.uniqueId + "/" + $0.title).unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " ")
            }.joined(separator: ", ")
        }
        try withTracker(backend, in: directory.url) { daos, _ in
            noteStep("NFC slug", in: &lines) { try daos.projects.persist(Self.project(nfc, title: "x")); return "ok" }
            noteStep("erased", in: &lines) { "\(try daos.projects.erase(byPrimaryKey: nfc))" }
            noteStep("NFD slug", in: &lines) { try daos.projects.persist(Self.project(nfd, title: "x")); return "ok" }
            noteStep("NFD slug erased by a predicate", in: &lines) {
                "\(try daos.projects.erase(where: #Predicate { $0.title == "x" }))"
            }
            noteStep("NFC title", in: &lines) { try daos.projects.persist(Self.project("p", title: nfc)); return "ok" }
        }
        try withTracker(backend, in: directory.url) { daos, _ in
            noteStep("erased after reopening", in: &lines) { "\(try daos.projects.erase(byPrimaryKey: "p"))" }
            noteStep("NFD title", in: &lines) { try daos.projects.persist(Self.project("q", title: nfd)); return "ok" }
        }
        try withTracker(backend, in: directory.url) { daos, _ in
            noteStep("every project erased after reopening", in: &lines) { "\(try daos.projects.erase())" }
            noteStep("NFC slug and title", in: &lines) { try daos.projects.persist(Self.project(nfc, title: nfc)); return "ok" }
            noteStep("read", in: &lines) { try scalars(daos) }
        }
        #expect(lines == [
            "NFC slug: ok", "erased: true", "NFD slug: ok", "NFD slug erased by a predicate: 1", "NFC title: ok",
            "erased after reopening: true", "NFD title: ok", "every project erased after reopening: 1",
            "NFC slug and title: ok", "read: 63 61 66 e9 2f 63 61 66 e9",
        ], "\(backend.name)")
    }
}
