import Foundation
import TestSupport

// What a test that runs on several domains asks of a domain: the writer of
// StoreHelper that writes it in a second process, how that writer is killed,
// and the domain's invariants when its store is opened again.

/// A domain of the trial, for the tests parameterized over domains.
protocol TrialDomain: Sendable, CustomStringConvertible {
    /// StoreHelper's writer of the domain: `<writer> <backend> <directory>
    /// <from> <to>` makes the domain's seeded writes `from..<to`, printing
    /// `done <i>` after each call that returned.
    var writer: String { get }
    /// Where DurabilityTests kills the writer, round by round.
    var kills: KillPlan { get }
    /// Opens the store `backend` keeps in `directory`, records an issue for
    /// each of the domain's invariants it breaks (every level's own count
    /// agrees with the tree, every index with the records), and returns
    /// whether what it holds is the state after the first `calls` writes.
    func reopened(_ backend: TestBackend, in directory: URL, round: Int) throws -> (_ calls: Int) -> Bool
    /// Checks of the domain's own on the kill points of a whole run.
    func checkKillPoints(_ targets: [Int])
}

extension TrialDomain {
    func checkKillPoints(_ targets: [Int]) {}
}

/// Where a writer is killed: after how many returned calls, how long after
/// that, and how far it would write if not killed.
struct KillPlan: Sendable {
    /// How many times the writer is killed.
    var rounds: Int
    /// The seed of a backend's kill points: `start`, then `* factor + byte`
    /// over the backend's name.
    var seedStart: UInt64
    var seedFactor: UInt64
    /// The kill comes up to this many microseconds after the target call.
    var delayBound: Int
    /// The call after whose `done` line round `round` kills the writer,
    /// `written` calls being in the store before it.
    var target: @Sendable (_ round: Int, _ written: Int, _ random: inout TestRandom) -> Int
    /// The end of the writes the round's writer is asked for.
    var end: @Sendable (_ written: Int, _ target: Int) -> Int

    /// The generator of `backend`'s kill points.
    func random(for backend: TestBackend) -> TestRandom {
        TestRandom(seed: backend.name.utf8.reduce(seedStart) { $0 &* seedFactor &+ UInt64($1) })
    }
}

/// The domains that DurabilityTests kills a writer of.
let killedDomains: [any TrialDomain] = [LibraryTrial(), LogisticsTrial(), TrackerTrial()]
