import DAOCore
import Foundation
import TestSupport
import Testing

// Looking up a slug longer than any LMDB key: no such project can be stored
// there, so every read, count and erase by it must answer as for any other
// missing key (nothing found), as on every other backend.

@Suite("Client trial, tracker: looking up a key no store holds")
struct TrackerLongKeyReadTests {
    @Test("reads, counts and erasures by a 600-byte slug find nothing, on every backend")
    func lookups() throws {
        var transcripts: [String: [String]] = [:]
        for backend in localBackends {
            let directory = try TemporaryDirectory("tracker-long-read")
            try writeTracker(backend, in: directory.url, calls: 0..<2)
            var lines: [String] = []
            try withTracker(backend, in: directory.url) { daos, _ in
                let long = String(repeating: "s", count: 600)
                let keys = [long, Tracker.slugs[0]]
                noteStep("read by key", in: &lines) { "\(try daos.projects.read(byPrimaryKey: long) == nil)" }
                noteStep("read by keys", in: &lines) { "\(try daos.projects.read(byPrimaryKeys: keys).count)" }
                noteStep("read where slug ==", in: &lines) { "\(try daos.projects.read(where: #Predicate { $0.slug == long }).count)" }
                noteStep("read where slug in", in: &lines) { "\(try daos.projects.read(where: #Predicate { keys.contains($0.slug) }).count)" }
                noteStep("issues of the slug", in: &lines) { "\(try daos.issues.count(where: #Predicate { $0.projectSlug == long }))" }
                noteStep("issues of the slug, open", in: &lines) {
                    let open = IssueState.open
                    return "\(try daos.issues.read(where: #Predicate { $0.projectSlug == long && $0.state == open }).count)"
                }
                noteStep("comment by a long key", in: &lines) { "\(try daos.comments.read(byPrimaryKey: long) == nil)" }
                noteStep("erase by key", in: &lines) { "\(try daos.projects.erase(byPrimaryKey: long))" }
                noteStep("erase by keys", in: &lines) { "\(try daos.projects.erase(byPrimaryKeys: [long]))" }
                noteStep("erase where slug ==", in: &lines) { "\(try daos.projects.erase(where: #Predicate { $0.slug == long }))" }
            }
            transcripts[backend.name] = lines
        }
        let want = [
            "read by key: true", "read by keys: 1", "read where slug ==: 0", "read where slug in: 1",
            "issues of the slug: 0", "issues of the slug, open: 0", "comment by a long key: true",
            "erase by key: false", "erase by keys: 0", "erase where slug ==: 0",
        ]
        for (name, lines) in transcripts.sorted(by: { $0.key < $1.key }) {
            #expect(lines == want, "\(name)")
        }
    }
}
