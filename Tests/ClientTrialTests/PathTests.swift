import DAOCore
import DAOMacros
import Foundation
import LMDBStorage
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

// Paths: directories with awkward names, a directory where the store's file
// or an engine's side file goes, a path that is a client's file: a typed
// error or the call done, and nothing lost or removed.

@Suite("Paths: awkward names and things in the way")
struct PathTests {}

// A store in a directory whose name a client might choose: spaces, `#`, `?`,
// `%20`, NFD text. It must open, write, close and read back there, and
// create nothing outside it.

extension PathTests {
    @Suite("Client trial, tracker: awkward names and things in the way")
    struct TrackerDomain {
        @Test("names with #, ?, %, spaces and NFD text", arguments: localBackends)
        func awkwardNames(backend: TestBackend) throws {
            let parent = try TemporaryDirectory("tracker-paths")
            for name in ["My Projects #2", "what?x=1", "a%20b", "Cafe\u{301} ü", "semi;colon", "file:x"] {
                let directory = parent.url.appending(path: name)
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                var lines: [String] = []
                noteStep(name, in: &lines) {
                    try writeTracker(backend, in: directory, calls: 0..<3)
                    return try withTracker(backend, in: directory) { daos, _ in
                        let read = try daos.projects.read()
                        return exactly(read, TrackerWrites.state(after: 3, oneSpelling: oneSpelling(backend))) ? "ok" : "different"
                    }
                }
                #expect(lines == ["\(name): ok"], "\(backend.name): \(lines)")
            }
            let entries = try FileManager.default.contentsOfDirectory(atPath: parent.url.path).sorted()
            #expect(Set(entries.map { Array($0.utf8) }) == Set(
                ["My Projects #2", "what?x=1", "a%20b", "Cafe\u{301} ü", "semi;colon", "file:x"].map { Array($0.utf8) }),
                "\(backend.name) created \(entries)")
            let cwd = FileManager.default.currentDirectoryPath
            for stray in ["My Projects ", "what", "a b", "x"] {
                #expect(!FileManager.default.fileExists(atPath: cwd + "/" + stray), "\(stray) in the working directory")
            }
        }

        @Test("a directory where a side file goes: a typed error or the call done, and nothing lost", arguments: localBackends)
        func directoryAsSideFile(backend: TestBackend) throws {
            for name in backend.sideFiles {
                let directory = try TemporaryDirectory("tracker-side")
                try writeTracker(backend, in: directory.url, calls: 0..<3)
                let blocker = directory.url.appending(path: name)
                try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: false)
                try Data("mine".utf8).write(to: blocker.appending(path: "inside.txt"))
                var returned = 3
                var lines: [String] = []
                noteStep("open, read and write with \(name) a directory", in: &lines) {
                    try withTracker(backend, in: directory.url) { daos, _ in
                        let read = try daos.projects.read()
                        #expect(exactly(read, TrackerWrites.state(after: 3, oneSpelling: oneSpelling(backend))))
                        try TrackerWrites.apply(3, oneSpelling: oneSpelling(backend), to: daos)
                        returned = 4
                        return "ok"
                    }
                }
                #expect(try Data(contentsOf: blocker.appending(path: "inside.txt")) == Data("mine".utf8),
                        "the directory \(name) on \(backend.name)")
                try FileManager.default.removeItem(at: blocker)
                try withTracker(backend, in: directory.url) { daos, _ in
                    let read = try daos.projects.read()
                    #expect(exactly(read, TrackerWrites.state(after: returned, oneSpelling: oneSpelling(backend))),
                            "\(lines) on \(backend.name)")
                }
            }
        }

        @Test("a store opened at a path that is a client's file: a typed error, and the file stays as it was",
              arguments: localBackends)
        func pathIsAFile(backend: TestBackend) throws {
            let parent = try TemporaryDirectory("tracker-path-file")
            let path = parent.url.appending(path: "report.pdf")
            let bytes = Data("%PDF-1.7 the client's report".utf8)
            try bytes.write(to: path)
            expectStorageError(nil, "\(backend.name)") {
                let store = try backend.open(path)
                defer { closeRecordingFailure(store, backend) }
                _ = try TrackerDAOs(store)
            }
            #expect(try Data(contentsOf: path) == bytes, "\(backend.name)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: parent.url.path) == ["report.pdf"], "\(backend.name)")
        }
    }
}

extension PathTests {
    @Suite("Client trial, logistics: a directory in the way")
    struct LogisticsDomain {
        @Test("a directory where the store's file goes: a typed error, and nothing removed", arguments: localBackends)
        func directoryInTheWay(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("logistics-dir")
            let name = backend.files[0]
            let blocker = directory.url.appending(path: name)
            try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: false)
            try Data("mine".utf8).write(to: blocker.appending(path: "inside.txt"))
            var random = TestRandom(seed: 1)
            var next: Int64 = 0
            let shipment = Logistics.shipment("x", parcels: 1, &random, next: &next, oneSpelling: true)
            expectStorageError(nil, "a directory named \(name) on \(backend.name)") {
                try withLogistics(backend, in: directory.url) { daos, _ in try daos.shipments.persist(shipment) }
            }
            #expect((try? Data(contentsOf: blocker.appending(path: "inside.txt"))) == Data("mine".utf8), "\(backend.name)")
        }
    }
}
