import DAOCore
import DAOMacros
import FileStorage
import Foundation
import TestSupport
import Testing

// The tracker's store as a client lives with it: values at the edges of what
// an engine holds, files of the client's own in the store's directory through
// writes, erase-all, a migration, closing and reopening; and a second process
// on the same store.

/// The tracker's projects, with a color: the second release's type.
@StoredRecord("tk_projects", primaryKey: "slug")
struct ProjectRecordV2: Equatable {
    var slug: String
    var title: String
    var archived: Bool
    var createdAt: Date
    var color: String?
    @Children(foreignKey: "projectSlug") var issues: [IssueRecord]
}

@Suite("Client trial, tracker: the store over time")
struct TrackerStoreTests {
    static func comment(_ id: String, issue: Int64, edited: Date? = nil, payload: Data = Data()) -> TrackedComment {
        TrackedComment(uniqueId: id, issueId: issue, author: "ana", body: "b", postedAt: Tracker.time(1), editedAt: edited, payload: payload)
    }
    static func issue(_ id: Int64, slug: String, due: Date? = nil, comments: [TrackedComment] = []) -> TrackedIssue {
        TrackedIssue(uniqueId: id, projectSlug: slug, title: "t", state: .open, assignee: nil, due: due, priority: .min,
              updatedAt: Tracker.time(2), comments: comments)
    }
    static func project(_ slug: String, _ issues: [TrackedIssue]) -> Project {
        Project(uniqueId: slug, title: "p", archived: false, createdAt: Tracker.time(0), issues: issues)
    }

    @Test("values at the engines' edges: the same answer on every backend but the documented ones")
    func edges() throws {
        var transcripts: [String: [String]] = [:]
        for backend in localBackends {
            let directory = try TemporaryDirectory("tracker-edges")
            var lines: [String] = []
            try withTracker(backend, in: directory.url) { daos, _ in
                let base = Self.project("base", [Self.issue(1, slug: "base", comments: [Self.comment("c-1", issue: 1)])])
                try daos.projects.persist(base)
                let steps: [(String, Project)] = [
                    ("Int64.min and Int64.max issue keys", Self.project("keys", [
                        Self.issue(.min, slug: "keys"), Self.issue(.max, slug: "keys")])),
                    ("a slug with NUL", Self.project("a\u{0}b", [Self.issue(10, slug: "a\u{0}b")])),
                    ("infinite dates", Self.project("dates", [Self.issue(
                        20, slug: "dates", due: .init(timeIntervalSinceReferenceDate: .infinity),
                        comments: [Self.comment("d", issue: 20, edited: .init(timeIntervalSinceReferenceDate: -.infinity))])])),
                    ("a 4 MiB payload", Self.project("big", [Self.issue(
                        30, slug: "big", comments: [Self.comment("big", issue: 30, payload: Data(repeating: 0xA5, count: 4 << 20))])])),
                    ("the same UUID in two letter cases", Self.project("uuid", [Self.issue(40, slug: "uuid", comments: [
                        Self.comment("8F0C2C7E-0A4B-4C43-9C1D-3E6B5A2F1D00", issue: 40),
                        Self.comment("8f0c2c7e-0a4b-4c43-9c1d-3e6b5a2f1d00", issue: 40)])])),
                    ("a 600-byte slug", Self.project(String(repeating: "s", count: 600), [])),
                    ("a NaN edit date three levels down", Self.project("nan", [Self.issue(
                        60, slug: "nan", comments: [Self.comment("c-2", issue: 60, edited: .init(timeIntervalSinceReferenceDate: .nan))])])),
                    ("a -0.0 due date", Self.project("zero", [Self.issue(
                        70, slug: "zero", due: .init(timeIntervalSinceReferenceDate: -0.0))])),
                    ("an issue naming its project in NFD under the NFC project", Self.project("caf\u{E9}", [
                        Self.issue(50, slug: "cafe\u{301}")])),
                ]
                for (name, project) in steps {
                    noteStep(name, in: &lines) {
                        try daos.projects.persist(project)
                        let read = try daos.projects.read(byPrimaryKey: project.uniqueId)
                        return exactly(read, project) ? "round trip" : "different"
                    }
                }
                noteStep("base after the other projects", in: &lines) {
                    exactly(try daos.projects.read(byPrimaryKey: "base"), base) ? "intact" : "changed"
                }
                noteStep("counts", in: &lines) { "\(try daos.counts())" }
            }
            // After reopening, the same.
            try withTracker(backend, in: directory.url) { daos, _ in
                noteStep("after reopening", in: &lines) {
                    "\(try daos.projects.read().map { ($0.uniqueId.utf8.count, $0.issues.count, $0.issues.map(\.comments.count)) })"
                }
            }
            transcripts[backend.name] = lines
        }
        let reference = try #require(transcripts["json"])
        for (name, lines) in transcripts {
            for (index, line) in lines.enumerated() where index < reference.count {
                // docs/SEMANTICS.md: LMDB refuses a key longer than 511 bytes.
                if name == "lmdb" && line.hasPrefix("a 600-byte slug") {
                    #expect(line == "a 600-byte slug: invalidArgument")
                    continue
                }
                // docs/SEMANTICS.md: the property-list store refuses -0.0.
                if name == "plist" && line.hasPrefix("a -0.0 due date") {
                    #expect(line == "a -0.0 due date: invalidArgument")
                    continue
                }
                if name == "lmdb" || name == "plist", line.hasPrefix("counts") || line.hasPrefix("after reopening") { continue }
                #expect(line == reference[index], "\(name) differs from json")
            }
            #expect(lines.count == reference.count)
        }
        #expect(reference.contains("a NaN edit date three levels down: round trip"))
        #expect(reference.contains("a -0.0 due date: round trip"))
        #expect(reference.contains("an issue naming its project in NFD under the NFC project: constraint"))
        #expect(reference.contains("base after the other projects: intact"))
    }

    @Test("files the store did not write stay, byte for byte, through writes, erase-all, a migration and reopening",
          arguments: localBackends)
    func foreignFiles(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("tracker-foreign")
        try writeTracker(backend, in: directory.url, calls: 0..<3)
        let foreign: [String: Data] = [
            "notes.txt": Data("mine\n".utf8),
            "tk_projects.json": Data("{\"not\": \"yours\"}".utf8),
            "tk_issues.plist.bak": Data([0, 1, 2]),
            "manifest.json.orig": Data("{}".utf8),
            ".manifest.json.tmp": Data("x".utf8),
            ".manifest.json.12.tmp.keep": Data("x".utf8),
            "dao-notes.txt": Data("dao".utf8),
            "data.mdb.bak": Data(repeating: 7, count: 4096),
            "store.sqlite.bak": Data(repeating: 9, count: 100),
            "lock.mdb.old": Data("l".utf8),
            "attachments/screenshot.png": Data([0x89, 0x50, 0x4E, 0x47]),
        ]
        try FileManager.default.createDirectory(at: directory.url.appending(path: "attachments"), withIntermediateDirectories: true)
        for (name, bytes) in foreign { try bytes.write(to: directory.url.appending(path: name)) }
        func checkForeign(_ moment: String) throws {
            let files = try fileContents(directory.url)
            for (name, bytes) in foreign {
                #expect(files[name] == bytes, "\(name) after \(moment) on \(backend.name)")
            }
        }
        try withTracker(backend, in: directory.url) { daos, _ in
            for index in 3..<12 { try TrackerWrites.apply(index, oneSpelling: oneSpelling(backend), to: daos) }
        }
        try checkForeign("writes")
        try withTracker(backend, in: directory.url) { daos, _ in
            #expect(try daos.comments.erase() > 0)
            #expect(try daos.issues.erase() > 0)
            #expect(try daos.projects.erase() > 0)
            #expect(try daos.counts() == [0, 0, 0])
            try TrackerWrites.apply(0, oneSpelling: oneSpelling(backend), to: daos)
        }
        try checkForeign("erase-all")
        var migrator = Migrator()
        migrator.register("v2: projects have a color", [
            .addField("color", to: "tk_projects", type: .text, optional: true, default: .text("teal")),
        ])
        let store = try backend.open(directory.url)
        try migrator.migrate(store)
        let projects = try store.anyStorage(for: ProjectRecordV2.self)
        let all = try projects.readAll()
        #expect(all.count == 1 && all.allSatisfy { $0.color == "teal" }, "\(all.map(\.color)) on \(backend.name)")
        #expect(try projects.eraseAll() == 1)
        try store.close()
        try checkForeign("a migration and erase-all")
        let reopened = try backend.open(directory.url)
        try migrator.migrate(reopened)
        #expect(try reopened.anyStorage(for: ProjectRecordV2.self).count() == 0)
        try reopened.close()
        try checkForeign("reopening")
    }

    @Test("two processes on one store: SQLite and LMDB share it, the file stores refuse the second as busy",
          arguments: localBackends)
    func twoProcesses(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory("tracker-two")
        try writeTracker(backend, in: directory.url, calls: 0..<2)
        let store = try backend.open(directory.url)
        let daos = try TrackerDAOs(store)
        let before = try await daos.projects.read()
        let observed = daos.projects.observe(where: nil, sortedBy: [], pollInterval: .milliseconds(20)).makeAsyncIterator()
        let first = try #require(try await nextSnapshot(observed))
        #expect(exactly(first.results, before))

        let helper = try HelperProcess(["tracker-write", backend.name, directory.url.path, "2", "5"])
        var done = 0
        while let line = helper.readLine() {
            if line.hasPrefix("done ") { done += 1 }
        }
        let (status, errors) = helper.wait()
        let expected = TrackerWrites.state(after: 5, oneSpelling: oneSpelling(backend))
        if backend.isFileStore {
            #expect(done == 0 && status != 0 && errors.contains("(busy)"), "\(backend.name): \(status) \(errors)")
            #expect(exactly(try await daos.projects.read(), before))
        } else {
            #expect(done == 3 && status == 0, "\(backend.name): \(status) \(errors)")
            #expect(exactly(try await daos.projects.read(), expected), "the other process's writes on \(backend.name)")
            var latest = first.results
            while !exactly(latest, expected) {
                guard let snapshot = try await nextSnapshot(observed) else { break }
                latest = snapshot.results
            }
            #expect(exactly(latest, expected), "observed on \(backend.name)")
        }
        try store.close()
        // Closed and reopened, the store holds the same.
        try withTracker(backend, in: directory.url) { daos, _ in
            let want = backend.isFileStore ? before : expected
            let read = try daos.projects.read()
            #expect(exactly(read, want))
        }
    }
}
