import DAOCore
import Foundation
import TestSupport
import Testing

// A writer of the trial's domain (StoreHelper's `trial-write`, a second
// process) killed with SIGKILL mid-write, again and again on one store: each
// time the store must open and hold exactly the transactions whose calls
// returned, and of the one under way all or nothing; the next writer carries
// on over the leftovers of the last. (`make torture` runs the crash tests of
// Tests/CrashTests with many more kills.)

@Suite("Client trial: a writer killed mid-write loses no returned call")
struct KillTests {
    @Test("SIGKILL at seeded points: the store holds the returned calls, and of the next all or nothing",
          arguments: localBackends)
    func killedWriter(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("trial-kill")
        var random = TestRandom(seed: UInt64(backend.name.utf8.reduce(7) { $0 &* 31 &+ UInt64($1) }))
        var written = 0
        for round in 0..<4 {
            let target = written + 1 + Int(random.next() % 8)
            let (returned, killed, writer) = try HelperProcess.runAndKill(
                ["trial-write", backend.name, directory.url.path, "\(written)", "\(written + 60)"],
                afterDone: target - written, delayMicroseconds: UInt32(random.next() % 4_000))
            let done = written + returned
            if !killed { Issue.record("round \(round): the writer ended before it was killed: \(writer)") }
            let read = try withLibrary(backend, in: directory.url) { daos, _ in
                // Children counted on their own agree with those read through parents.
                let libraries = try daos.libraries.read()
                #expect(try daos.shelves.count() == libraries.flatMap(\.shelves).count)
                #expect(try daos.books.count() == libraries.flatMap(\.shelves).flatMap(\.books).count)
                return libraries
            }
            if read == TrialWrites.state(after: done) {
                written = done
            } else if read == TrialWrites.state(after: done + 1) {
                written = done + 1
            } else {
                Issue.record("round \(round): after \(done) returned calls the store holds \(read.map(\.name)), neither state")
                return
            }
        }
        #expect(written >= 4)
    }
}

