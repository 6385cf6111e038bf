import DAOCore
import Foundation
import TestSupport
import Testing

// The tracker domain (Tests/TestSupport/TrackerDomain.swift, so that
// StoreHelper writes it in a second process too) as the trial's tests open it.

/// Opens `backend` in `directory`, runs `body` with the tracker's DAOs, and
/// closes the store (also when `body` throws).
func withTracker<T>(_ backend: TestBackend, in directory: URL, _ body: (TrackerDAOs, any MigratableStore) throws -> T)
    throws -> T
{
    try withStore(backend, in: directory, TrackerDAOs.init, body)
}

/// The tracker's writes `0..<count` made in this process.
func writeTracker(_ backend: TestBackend, in directory: URL, calls: Range<Int>) throws {
    try withTracker(backend, in: directory) { daos, _ in
        for index in calls { try TrackerWrites.apply(index, oneSpelling: oneSpelling(backend), to: daos) }
    }
}

/// The tracker as the tests run on several domains see it.
struct TrackerTrial: TrialDomain {
    var description: String { "tracker" }
    var writer: String { "tracker-write" }
    var kills: KillPlan {
        // Even rounds kill during a persist (calls 0..<4 of every 6), odd ones
        // during an erasure (calls 4 and 5).
        KillPlan(
            rounds: 6, seedStart: 11, seedFactor: 31, delayBound: 3_000,
            target: { round, written, random in
                var target = written + 1 + random.below(4)
                while (target % 6 >= 4) != (round % 2 == 1) { target += 1 }
                return target
            },
            end: { _, target in target + 12 })
    }

    func reopened(_ backend: TestBackend, in directory: URL, round: Int) throws -> (_ calls: Int) -> Bool {
        let (read, agree, indexed) = try withTracker(backend, in: directory) { daos, _ in
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
        let spelled = oneSpelling(backend)
        return { exactly(read, TrackerWrites.state(after: $0, oneSpelling: spelled)) }
    }

    func checkKillPoints(_ targets: [Int]) {
        let killedDuring = targets.map { $0 % 6 >= 4 ? "erase" : "persist" }
        #expect(killedDuring.contains("erase") && killedDuring.contains("persist"))
    }
}
