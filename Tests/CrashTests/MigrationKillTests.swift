import Foundation
import TestSupport
import Testing

/// A child process migrates a store (the example's added message field and a
/// rewrite of every message) and is killed with SIGKILL at a random point;
/// then the store must hold either the data before the migration, readable with
/// the old record types and no migration recorded, or all of it migrated,
/// with the migration recorded: never a mix. A migration run to its end
/// afterwards must then succeed.
@Suite("Crash: kill -9 while migrating")
struct MigrationKillTests {
    static var kills: Int { Torture.isOn ? 60 : 3 }

    @Test("a migration killed at any point leaves the old state or the new", arguments: backends)
    func killWhileMigrating(backend: String) throws {
        var random = TestRandom(Torture.seed ^ 0x6D69_6772 ^ UInt64(backend.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }))
        for round in 0..<Self.kills {
            let directory = try TemporaryDirectory("crash-migrate-kill-\(backend)")
            defer { directory.remove() }
            let seed = String(random.next() % 1_000_000)
            let count = "60"
            let written = try runHelper(["write", backend, directory.url.path, seed, count])
            try #require(written.status == 0, "\(written)")
            let extra = UInt32(random.below(30_000))
            let (_, migrator) = try runWriterAndKill(
                ["migrate", backend, directory.url.path, seed, count], afterDone: 0, extraMicroseconds: extra)
            let verify = try runHelper(["verify-migrated", backend, directory.url.path, seed, count])
            try #require(
                verify.status == 0,
                "round \(round), seed \(seed), killed after \(extra) µs (\(migrator)): \(verify)")
            let finished = try runHelper(["migrate", backend, directory.url.path, seed, count])
            #expect(finished.status == 0, "round \(round): \(finished)")
            let after = try runHelper(["verify-migrated", backend, directory.url.path, seed, count])
            #expect(after.status == 0 && after.output.hasPrefix("ok new"), "round \(round): \(after)")
        }
    }
}
