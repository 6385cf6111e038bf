import DAOCore
import Foundation
import TestSupport
import Testing

// A domain's writer (StoreHelper, a second process) killed with SIGKILL
// mid-write, again and again on one store: each time the store must open
// with the domain's invariants kept and hold exactly the calls that
// returned, and of the one under way all or nothing; the next writer carries
// on over the leftovers of the last. The library's writer makes three-level
// persists; the logistics writer persists with 2 KB of bytes per parcel,
// moves a parcel by its own storage, erases by cascade and by a predicate
// over scans (4 kills per backend; 40 with STORAGE_TORTURE=1); the
// tracker's writer is killed in turn during a persist and an erasure.
// (`make torture` runs the crash tests of Tests/CrashTests with many more
// kills.)

@Suite("Durability: a writer killed mid-write loses no returned call and shows nothing half-written")
struct DurabilityTests {
    @Test("SIGKILL at seeded points: the store holds the returned calls, and of the next all or nothing",
          arguments: killedDomains, localBackends)
    func killedWriter(domain: any TrialDomain, backend: TestBackend) throws {
        let directory = try TemporaryDirectory("trial-kill")
        let plan = domain.kills
        var random = plan.random(for: backend)
        var targets: [Int] = []
        let held = try HelperProcess.killRepeatedly(
            rounds: plan.rounds, holding: 0, random: &random, delayBound: plan.delayBound,
            writer: { round, written, random in
                let target = plan.target(round, written, &random)
                targets.append(target)
                return ([domain.writer, backend.name, directory.url.path, "\(written)", "\(plan.end(written, target))"],
                        target - written)
            },
            holds: { round, done, killed, writer in
                if !killed { Issue.record("round \(round): the writer ended before it was killed: \(writer)") }
                let holds = try domain.reopened(backend, in: directory.url, round: round)
                if holds(done) { return done }
                if holds(done + 1) { return done + 1 }
                Issue.record("round \(round) on \(backend.name): after \(done) returned calls the store holds neither state")
                return nil
            })
        guard let written = held else { return }
        domain.checkKillPoints(targets)
        #expect(written >= plan.rounds)
    }
}
