import DAOCore
import Foundation
import TestSupport
import Testing

// A store in a directory whose name a client might choose: spaces, `#`, `?`,
// `%20`, NFD text. It must open, write, close and read back there, and
// create nothing outside it.

@Suite("Client trial, tracker: directories with awkward names")
struct TrackerPathTests {
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
}
