import DAOCore
import DAOMacros
import FileStorage
import Foundation
import LMDBStorage
import TestSupport
import Testing

// Two processes on one store: both writers' returned calls kept, a reader
// beside a writer seeing only committed states in order, and the file
// stores refusing a second process as busy.

@Suite("Two processes: two writers, or a reader beside a writer, on one store")
struct TwoProcessTests {}

// Two processes writing one SQLite or LMDB store at once: the tracker's
// writer (StoreHelper) and this process, each on projects of its own.
// Every call that returned must be in the store, whichever process made it.

extension TwoProcessTests {
    @Suite("Client trial, tracker: two processes on one store")
    struct TrackerDomain {
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
}

extension TwoProcessTests {
    @Suite("Client trial, logistics: a second process writes while this one reads")
    struct LogisticsDomain {
        @Test("a second process writes while this one reads: every read is one committed state, in order",
              arguments: localBackends.filter { $0.name == "sqlite" || $0.name == "lmdb" })
        func readerBesideWriter(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("logistics-reader")
            let calls = 28
            let states = (0...calls).map { LogisticsWrites.state(after: $0, oneSpelling: false).shipmentList.map(fingerprint) }
            try withLogistics(backend, in: directory.url) { daos, _ in
                let helper = try HelperProcess(["logistics-write", backend.name, directory.url.path, "0", "\(calls)"])
                var done = 0
                var seen = 0
                var reads = 0
                var problems: [String] = []
                func readOnce() throws {
                    let shipments = try daos.shipments.read()
                    reads += 1
                    // No earlier state than the one this process saw last; the
                    // writer may be ahead of the lines read so far.
                    let read = shipments.map(fingerprint)
                    guard let found = (seen...calls).first(where: { states[$0] == read }) else {
                        problems.append("read \(reads) after \(done) returned calls: \(shipments.count) shipments, no committed state")
                        return
                    }
                    seen = found
                }
                while let line = helper.readLine() {
                    if line.hasPrefix("done "), let index = Int(line.dropFirst(5)) { done = index + 1 }
                    try readOnce()
                }
                let (status, errors) = helper.wait()
                #expect(status == 0, "the writer on \(backend.name): \(errors)")
                try readOnce()
                #expect(problems.isEmpty, "\(backend.name): \(problems.prefix(3))")
                #expect(states[seen] == states[calls], "\(backend.name): the last read saw \(seen) of \(calls) calls")
            }
        }
    }
}
