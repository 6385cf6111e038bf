import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A child process writes a seeded sequence of transactions (three levels of
/// relations with String keys and optionals, and DialogGraph dialogs through
/// the DAO) and is killed with SIGKILL at a random point; then, in another
/// child, the store must open and hold exactly the transactions whose calls
/// returned before the kill (plus, possibly, the one under way, whole), and the
/// next writer carries on from there. Several kills hit the same store, so the
/// leftovers of one crash meet the recovery of the next.
@Suite("Crash: kill -9 while writing")
struct KillTests {
    static var kills: Int { Torture.isOn ? 150 : 4 }

    @Test("every transaction that returned survives SIGKILL, nothing partial", arguments: killBackends)
    func killWhileWriting(backend: String) throws {
        let directory = try TemporaryDirectory("crash-kill-\(backend)")
        defer {
            dropServerSchema(backend, directory.url)
            directory.remove()
        }
        var random = TestRandom(seed: Torture.seed ^ UInt64(backend.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }))
        let seed = String(random.next() % 1_000_000)
        // The store is created (and its first transaction committed) before the
        // first kill: a kill while an empty store is being created is not what
        // this test is about.
        let first = try HelperProcess.run(["write", backend, directory.url.path, seed, "1"])
        try #require(first.status == 0, "\(first)")
        let held = try HelperProcess.killRepeatedly(
            rounds: Self.kills, holding: 1, random: &random, delayBound: 4000,
            writer: { _, held, random in
                (["write", backend, directory.url.path, seed, "1000000", String(held)], random.below(6))
            },
            holds: { round, returned, _, writer in
                #expect(writer.signal == 9, "round \(round): the writer was not killed: \(writer)")
                let verify = try HelperProcess.run(
                    ["verify", backend, directory.url.path, seed, String(returned), String(returned + 1)])
                try #require(
                    verify.status == 0,
                    "round \(round), seed \(seed), torture seed \(Torture.seed): after \(returned) returned transactions: \(verify)")
                let words = verify.output.split(whereSeparator: \.isWhitespace)
                return words.count >= 2 ? Int(words[1]) ?? returned : returned
            })
        #expect(held != nil)
    }
}

/// Opening a store while another process commits to it is not damage: the
/// checks made at open (LMDB's meta pages, SQLite's header, the file store's
/// manifest) must not take a live store for a damaged one.
@Suite("Crash: opening while another process writes")
struct LiveOpenTests {
    @Test("a store opens while another process commits to it", arguments: killBackends)
    func openWhileWriting(backend: String) throws {
        let directory = try TemporaryDirectory("crash-live-\(backend)")
        defer {
            dropServerSchema(backend, directory.url)
            directory.remove()
        }
        let first = try HelperProcess.run(["write", backend, directory.url.path, "5", "1"])
        try #require(first.status == 0, "\(first)")
        let writer = Process()
        writer.executableURL = try HelperProcess.executable()
        // Bounded, so that it ends even if this test does not get to stop it.
        writer.arguments = ["write", backend, directory.url.path, "5", "3000", "1"]
        writer.standardOutput = FileHandle.nullDevice
        try writer.run()
        defer {
            // SIGKILL: a child may inherit a signal mask that blocks SIGTERM.
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
        }
        // The file store admits one process at a time; it is refused as busy.
        let opens = Torture.isOn ? 40 : 6
        for round in 0..<opens {
            let verdict = try HelperProcess.run(["open", backend, directory.url.path, "5", "20"])
            let busy = verdict.output.hasPrefix("error busy")
            #expect(verdict.status == 0 || busy, "round \(round): \(verdict)")
        }
    }
}
