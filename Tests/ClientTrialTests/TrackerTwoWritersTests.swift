import DAOCore
import Foundation
import TestSupport
import Testing

// Two processes writing one SQLite or LMDB store at once: the tracker's
// writer (StoreHelper) and this process, each on projects of its own.
// Every call that returned must be in the store, whichever process made it.

@Suite("Client trial, tracker: two writers at once")
struct TrackerTwoWritersTests {
    @Test("both processes' returned calls are kept", arguments: localBackends.filter { $0.name == "sqlite" || $0.name == "lmdb" })
    func twoWriters(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("tracker-two-writers")
        try writeTracker(backend, in: directory.url, calls: 0..<1)
        let store = try backend.open(directory.url)
        let daos = try TrackerDAOs(store)
        let helper = try HelperProcess(["tracker-write", backend.name, directory.url.path, "1", "40"])
        var mine: [Project] = []
        var errors: [String] = []
        var random = TestRandom(seed: 99)
        var done = 1
        while let line = helper.readLine() {
            if line.hasPrefix("done "), let index = Int(line.dropFirst(5)) { done = index + 1 }
            let project = Tracker.project(
                "mine-\(mine.count)", version: 0, firstIssue: 9_000_000 + Int64(mine.count) * 100, issues: 4, random: &random)
            do {
                try daos.projects.persist(project)
                mine.append(project)
            } catch let error as StorageError {
                errors.append("\(error.kind)")
            }
        }
        let (status, stderr) = helper.wait()
        #expect(status == 0 && done == 40, "the other writer on \(backend.name): \(status) \(stderr)")
        #expect(errors.isEmpty, "this process's writes on \(backend.name): \(errors)")
        try store.close()
        try withTracker(backend, in: directory.url) { daos, _ in
            let read = try daos.projects.read()
            let want = Tracker.sorted(TrackerWrites.state(after: done, oneSpelling: false) + mine)
            #expect(exactly(read, want), "\(backend.name): \(read.count) projects, want \(want.count)")
            let issues = read.flatMap(\.issues)
            #expect(try daos.counts() == [read.count, issues.count, issues.flatMap(\.comments).count])
        }
    }
}
