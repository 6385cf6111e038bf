import DAOCore
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

// Around the tracker's store: directories where an engine's side files go,
// a store written while one of its documents is damaged, and a closed store.

@Suite("Client trial, tracker: side files, damage beside writes, closing")
struct TrackerEdgeFilesTests {
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

    @Test("a file store written while one of its documents is damaged: the document put back reads as written",
          arguments: localBackends.filter(\.isFileStore))
    func writeBesideDamage(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("tracker-beside")
        try writeTracker(backend, in: directory.url, calls: 0..<4)
        try withLibrary(backend, in: directory.url) { daos, _ in try daos.libraries.persist(Sample.corpus().prefix(1)) }
        let files = try fileContents(directory.url)
        let comments = try #require(files.keys.first { $0.contains("tk_comments") && !$0.hasPrefix(".") })
        var damaged = try #require(files[comments])
        damaged[damaged.count / 2] ^= 0x01
        try damaged.write(to: directory.url.appending(path: comments))
        try withLibrary(backend, in: directory.url) { daos, _ in
            try daos.libraries.persist(Sample.corpus().suffix(2))
            #expect(try daos.libraries.count() == 3)
            let erased = try daos.libraries.erase(byPrimaryKey: "east")
            #expect(erased)
        }
        let store = try backend.open(directory.url)
        expectStorageError(.corrupt) { _ = try TrackerDAOs(store) }
        try store.close()
        // The damaged document is still there, as it was.
        #expect(try Data(contentsOf: directory.url.appending(path: comments)) == damaged)
        try files[comments]?.write(to: directory.url.appending(path: comments))
        try withTracker(backend, in: directory.url) { daos, _ in
            let read = try daos.projects.read()
            #expect(exactly(read, TrackerWrites.state(after: 4, oneSpelling: oneSpelling(backend))))
        }
        try withLibrary(backend, in: directory.url) { daos, _ in
            let codes = try daos.libraries.read().map(\.uniqueId)
            #expect(codes == ["", "central"])
        }
    }

    @Test("a closed store: every call through its DAOs is `closed`, its observations end, and it reopens",
          arguments: localBackends)
    func closed(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory("tracker-closed")
        try writeTracker(backend, in: directory.url, calls: 0..<2)
        let store = try backend.open(directory.url)
        let daos = try TrackerDAOs(store)
        let iterator = daos.comments.observe(where: nil, sortedBy: [SortDescriptor(\.postedAt)]).makeAsyncIterator()
        _ = try #require(try await nextSnapshot(iterator))
        try store.close()
        var lines: [String] = []
        noteStep("read", in: &lines) { "\(try daos.projects.read().count)" }
        noteStep("count", in: &lines) { "\(try daos.issues.count())" }
        noteStep("persist", in: &lines) {
            try TrackerWrites.apply(2, oneSpelling: oneSpelling(backend), to: daos)
            return "ok"
        }
        noteStep("erase", in: &lines) { "\(try daos.comments.erase())" }
        noteStep("close again", in: &lines) {
            try store.close()
            return "ok"
        }
        #expect(lines == ["read: closed", "count: closed", "persist: closed", "erase: closed", "close again: ok"],
                "\(backend.name): \(lines)")
        do {
            let next = try await nextSnapshot(iterator)
            #expect(next == nil, "an observation of a closed \(backend.name) store goes on")
        } catch let error as StorageError {
            #expect(error.kind == .closed, "\(error)")
        }
        try withTracker(backend, in: directory.url) { daos, _ in
            let read = try daos.projects.read()
            #expect(exactly(read, TrackerWrites.state(after: 2, oneSpelling: oneSpelling(backend))))
        }
    }
}

extension TrackerEdgeFilesTests {
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
