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
        var random = TestRandom(seed: Torture.seed ^ 0x6D69_6772 ^ UInt64(backend.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }))
        for round in 0..<Self.kills {
            let directory = try TemporaryDirectory("crash-migrate-kill-\(backend)")
            defer { directory.remove() }
            let seed = String(random.next() % 1_000_000)
            let count = "60"
            let written = try HelperProcess.run(["write", backend, directory.url.path, seed, count])
            try #require(written.status == 0, "\(written)")
            let extra = UInt32(random.below(30_000))
            let (_, _, migrator) = try HelperProcess.runAndKill(
                ["migrate", backend, directory.url.path, seed, count], afterDone: 0, delayMicroseconds: extra)
            let verify = try HelperProcess.run(["verify-migrated", backend, directory.url.path, seed, count])
            try #require(
                verify.status == 0,
                "round \(round), seed \(seed), killed after \(extra) µs (\(migrator)): \(verify)")
            let finished = try HelperProcess.run(["migrate", backend, directory.url.path, seed, count])
            #expect(finished.status == 0, "round \(round): \(finished)")
            let after = try HelperProcess.run(["verify-migrated", backend, directory.url.path, seed, count])
            #expect(after.status == 0 && after.output.hasPrefix("ok new"), "round \(round): \(after)")
        }
    }
}

/// Files a client keeps beside a store, planted once the store exists: a
/// migration (and its kill, and the recovery) must leave each byte for byte.
/// Some are named like documents of the entities the drop erases.
let foreignMigrationFiles: [String: Data] = [
    "notes.txt": Data("my notes\n".utf8),
    "store.sqlite.bak": Data(repeating: 0x5A, count: 100),
    // A version 1 document's shape of name, for the dropped entity, not named by the manifest.
    "author_labels-1.json": Data(#"{"entity":"author_labels","records":[],"version":1}"#.utf8),
    // A document of another file store (another identity), of the dropped entity.
    "dao-0123456789abcdef0123456789abcdef-1-author_labels.json": Data(#"{"entity":"author_labels","records":[]}"#.utf8),
    ".hidden": Data(),
]

/// A child process adds a relation to a stored parent (authors gain labels, a
/// new child entity with a child entity and indexes of their own: the
/// lightweight step), killed with SIGKILL at a random point; then, labels
/// written, `.dropRelation` erases them, killed the same way. After each kill
/// the store must be in the state before that migration or after it, as its
/// migrations record says, read with the record types of that state: every
/// committed value there; after the addition, no labels, then labels written
/// and read back; after the drop, the parents intact and nothing left of the
/// labels (the relation added again starts empty). Files in the directory
/// that the store did not write stay as they were.
@Suite("Crash: kill -9 while a migration adds or drops a relation")
struct RelationMigrationKillTests {
    static var rounds: Int { Torture.isOn ? 60 : 3 }

    func expectForeignFiles(in directory: URL, _ context: String) {
        for (name, data) in foreignMigrationFiles {
            let now = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path)
            #expect(now == data, "\(context): \(name) was \(now == nil ? "removed" : "changed")")
        }
    }

    /// Runs `readd-labels` on a copy of `directory` (so the store itself
    /// keeps its state), which must find the dropped labels gone.
    func expectDroppedEmpty(_ backend: String, _ directory: URL, seed: String, count: String, _ context: String) throws {
        let copy = try TemporaryDirectory("crash-relation-copy-\(backend)")
        defer { copy.remove() }
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            try FileManager.default.copyItem(
                at: directory.appendingPathComponent(name), to: copy.url.appendingPathComponent(name))
        }
        let again = try HelperProcess.run(["readd-labels", backend, copy.url.path, seed, count])
        #expect(again.status == 0 && again.output.hasPrefix("ok empty"), "\(context): \(again)")
    }

    @Test("a relation added or dropped by a migration killed at any point: the old state or the new", arguments: backends)
    func killWhileChangingRelations(backend: String) throws {
        var random = TestRandom(seed: Torture.seed ^ 0x7265_6C61 ^ UInt64(backend.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }))
        var outcomes: [String: Int] = [:]
        for round in 0..<Self.rounds {
            let directory = try TemporaryDirectory("crash-relation-kill-\(backend)")
            defer { directory.remove() }
            let path = directory.url.path
            let seed = String(random.next() % 1_000_000)
            let count = "60"
            let written = try HelperProcess.run(["write", backend, path, seed, count])
            try #require(written.status == 0, "\(written)")
            for (name, data) in foreignMigrationFiles { try data.write(to: directory.url.appendingPathComponent(name)) }

            // The relation added, killed.
            let context = "round \(round), seed \(seed), torture seed \(Torture.seed)"
            let addDelay = UInt32(random.below(8000))
            let (_, _, adder) = try HelperProcess.runAndKill(["migrate-labels", backend, path, seed, count], afterDone: 0, delayMicroseconds: addDelay)
            let added = try HelperProcess.run(["verify-labels", backend, path, seed, count])
            try #require(added.status == 0, "\(context): adding labels killed after \(addDelay) µs (\(adder)): \(added)")
            outcomes["add killed: " + (adder.signal == nil ? "ran to its end" : String(added.output.prefix(6))), default: 0] += 1
            expectForeignFiles(in: directory.url, "\(context), after the kill while adding")
            let addFinished = try HelperProcess.run(["migrate-labels", backend, path, seed, count])
            try #require(addFinished.status == 0, "\(context): \(addFinished)")
            let addedAfter = try HelperProcess.run(["verify-labels", backend, path, seed, count])
            try #require(addedAfter.status == 0 && addedAfter.output.hasPrefix("ok new"), "\(context): \(addedAfter)")
            // The new relation takes writes.
            let labelled = try HelperProcess.run(["write-labels", backend, path, seed, count])
            try #require(labelled.status == 0, "\(context): \(labelled)")
            let readBack = try HelperProcess.run(["verify-labels", backend, path, seed, count, "labelled"])
            try #require(readBack.status == 0 && readBack.output.hasPrefix("ok new"), "\(context): \(readBack)")

            // The relation dropped, killed.
            let dropDelay = UInt32(random.below(8000))
            let (_, _, dropper) = try HelperProcess.runAndKill(["migrate-drop", backend, path, seed, count], afterDone: 0, delayMicroseconds: dropDelay)
            let dropped = try HelperProcess.run(["verify-drop", backend, path, seed, count])
            try #require(dropped.status == 0, "\(context): dropping labels killed after \(dropDelay) µs (\(dropper)): \(dropped)")
            outcomes["drop killed: " + (dropper.signal == nil ? "ran to its end" : String(dropped.output.prefix(6))), default: 0] += 1
            expectForeignFiles(in: directory.url, "\(context), after the kill while dropping")
            if dropped.output.hasPrefix("ok new") {
                try expectDroppedEmpty(backend, directory.url, seed: seed, count: count, "\(context), after the kill")
            }
            let dropFinished = try HelperProcess.run(["migrate-drop", backend, path, seed, count])
            try #require(dropFinished.status == 0, "\(context): \(dropFinished)")
            let droppedAfter = try HelperProcess.run(["verify-drop", backend, path, seed, count])
            try #require(droppedAfter.status == 0 && droppedAfter.output.hasPrefix("ok new"), "\(context): \(droppedAfter)")
            try expectDroppedEmpty(backend, directory.url, seed: seed, count: count, "\(context), after the drop")
            expectForeignFiles(in: directory.url, "\(context), at the end")
        }
        print("relation migrations killed on \(backend): \(outcomes.sorted { $0.key < $1.key })")
    }
}
