import DAOCore
import Foundation
import TestSupport
import Testing

// The tracker's writer (StoreHelper's `tracker-write`, a second process)
// killed with SIGKILL while a three-level persist, a cascading erase of a
// project or an erase of issues by a predicate is under way, again and again
// on one store. Each time the store must open and hold exactly the calls that
// returned and of the one under way all or nothing, with every level's own
// count and the composite index agreeing with the tree.

@Suite("Client trial, tracker: a writer killed mid-persist or mid-erase loses no returned call")
struct TrackerKillTests {
    @Test("SIGKILL during three-level persists and erasures, then reopen", arguments: localBackends)
    func killed(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("tracker-kill")
        var random = TestRandom(seed: UInt64(backend.name.utf8.reduce(11) { $0 &* 31 &+ UInt64($1) }))
        var written = 0
        var killedDuring: [String] = []
        for round in 0..<6 {
            // Even rounds kill during a persist, odd ones during an erasure.
            var target = written + 1 + random.below(4)
            while (target % 6 >= 4) != (round % 2 == 1) { target += 1 }
            let (returned, killed, writer) = try HelperProcess.runAndKill(
                ["tracker-write", backend.name, directory.url.path, "\(written)", "\(target + 12)"],
                afterDone: target - written, delayMicroseconds: UInt32(random.below(3_000)))
            let done = written + returned
            if !killed { Issue.record("round \(round): the writer ended before it was killed: \(writer)") }
            killedDuring.append(target % 6 >= 4 ? "erase" : "persist")
            let (read, agree, indexed) = try withTracker(backend, in: directory.url) { daos, _ in
                let projects = try daos.projects.read()
                let issues = projects.flatMap(\.issues)
                let agree = try daos.counts() == [projects.count, issues.count, issues.flatMap(\.comments).count]
                // The composite index (project, state, updatedAt) agrees with the tree.
                var indexed = true
                for project in projects {
                    let slug = project.uniqueId
                    for state in IssueState.allCases {
                        let got = try daos.issues.read(
                            where: #Predicate { $0.projectSlug == slug && $0.state == state },
                            sortedBy: [SortDescriptor(\.updatedAt)])
                        let want = project.issues.filter { $0.state == state }
                            .sorted { ($0.updatedAt, $0.uniqueId) < ($1.updatedAt, $1.uniqueId) }
                        if !exactly(got, want) { indexed = false }
                    }
                }
                return (projects, agree, indexed)
            }
            #expect(agree, "round \(round) on \(backend.name): the levels' own counts disagree with the tree")
            #expect(indexed, "round \(round) on \(backend.name): the composite index disagrees with the tree")
            if exactly(read, TrackerWrites.state(after: done, oneSpelling: oneSpelling(backend))) {
                written = done
            } else if exactly(read, TrackerWrites.state(after: done + 1, oneSpelling: oneSpelling(backend))) {
                written = done + 1
            } else {
                Issue.record("round \(round) on \(backend.name): after \(done) returned calls the store holds neither state")
                return
            }
        }
        #expect(killedDuring.contains("erase") && killedDuring.contains("persist"))
        #expect(written >= 6)
    }
}
