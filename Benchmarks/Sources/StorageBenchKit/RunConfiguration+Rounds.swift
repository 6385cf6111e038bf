import DAOCore
import DialogGraph
import Foundation

// Which iterations a run makes, in which order: the measured rounds, the
// paired groups of backends, and the extra rounds while figures are unsettled.

extension RunConfiguration {
    /// The seconds a paired group of an extra round (`jobs`) is expected to
    /// take, given the measured `results` of its size and durability: for
    /// each job, what its backend's iterations spent in the job's operations
    /// (``operationCosts(_:backend:)``), plus the median of that backend's
    /// `overheads` (the seconds its earlier iterations took beyond their
    /// operations: the worker's start, generating the data, the checks; none
    /// known, 0). The runner starts a group only when this fits in what is
    /// left of ``timeLimit``.
    func expectedSeconds(
        of jobs: [IterationJob], after results: [IterationResult], overheads: [String: [Double]]
    ) -> Double {
        jobs.reduce(0) { sum, job in
            let costs = operationCosts(results, backend: job.backend)
            let work = job.operations.reduce(0) { $0 + (costs[$1] ?? 0) }
            return sum + work + (SampleStatistics(overheads[job.backend] ?? [])?.median ?? 0)
        }
    }

    /// Where a paired group's extra round ends, as an index into
    /// ``operations``: among the group's unsettled operations (`widths`, the
    /// widest of the group's backends for each), the one that takes the most
    /// width off for the time. One more round takes about w ÷ 2n off the
    /// width w of a figure that has n rounds (an interval narrows with the
    /// square root of the rounds), so a round that ends at an operation is
    /// worth the sum of w ÷ n (`rounds`, at least 1) of the unsettled
    /// operations up to it, and costs the seconds (`costs`, the group's
    /// backends added up) of every operation up to it; the round ends where
    /// worth ÷ cost is the largest, at the later one on a tie. So a round
    /// pays for the slow writes at the end of the workload only when their
    /// figures weigh as much as the reads before them, a figure that has
    /// had few rounds weighs more than one that has had many, and a figure
    /// that settles stops drawing rounds. `nil` when nothing is unsettled.
    static func roundEnd(
        operations: [BenchOperation], widths: [BenchOperation: Double], costs: [BenchOperation: Double],
        rounds: [BenchOperation: Int] = [:]
    ) -> Int? {
        var best: (index: Int, score: Double)?
        var worth = 0.0
        var cost = 0.0
        for (index, operation) in operations.enumerated() {
            cost += max(0, costs[operation] ?? 0)
            guard let open = widths[operation] else { continue }
            worth += open / Double(max(1, rounds[operation] ?? 1))
            let score = cost > 0 ? worth / cost : .infinity
            if best == nil || score >= best?.score ?? 0 { best = (index, score) }
        }
        return best?.index
    }

    /// The jobs of extra round `round` after the measured `results` of `size`
    /// and `durability` (empty when every figure is settled): only the
    /// backends with an unsettled operation (``unsettledOperations(_:)``),
    /// each beside its reference in ABBA order (``round(_:of:size:durability:)``),
    /// and only the operations up to where the round takes the most width
    /// off for its time (``roundEnd(operations:widths:costs:rounds:)``), in workload
    /// order, so that the store is in the same state at each of them as in
    /// a full iteration, and a round does not pay for the slow writes at the
    /// end of the workload while a cheaper read is much less certain.
    func extraRound(
        _ round: Int, after results: [IterationResult], size: BenchSize, durability: Durability
    ) -> [IterationJob] {
        let here = results.filter { $0.job.size == size && $0.job.durability == durability }
        let unsettled = unsettledWidths(here)
        guard !unsettled.isEmpty else { return [] }
        let chosen = backends.filter { backend in
            unsettled[backend.name] != nil
                || backends.contains { $0.reference == backend.name && unsettled[$0.name] != nil }
        }
        var last: [String: Int] = [:]
        for group in Self.pairedGroups(chosen) {
            var widths: [BenchOperation: Double] = [:]
            var costs: [BenchOperation: Double] = [:]
            var rounds: [BenchOperation: Int] = [:]
            for backend in group {
                widths.merge(unsettled[backend.name] ?? [:]) { max($0, $1) }
                costs.merge(operationCosts(here, backend: backend.name)) { $0 + $1 }
                let mine = here.filter { $0.job.backend == backend.name && !$0.job.countsInstructions }
                for operation in operations {
                    let count = mine.filter { $0.job.operations.contains(operation) }.count
                    rounds[operation] = min(rounds[operation] ?? count, count)
                }
            }
            let end = Self.roundEnd(operations: operations, widths: widths, costs: costs, rounds: rounds)
            for backend in group { last[backend.name] = end ?? operations.count - 1 }
        }
        return self.round(round, of: chosen, size: size, durability: durability).map { job in
            var job = job
            job.operations = Array(operations[...(last[job.backend] ?? operations.count - 1)])
            return job
        }
    }

    /// `backends` in groups that run side by side: each reference backend
    /// with the backends measured against it, the reference second
    /// (`sqlite`, `sqlite-raw`, `grdb`), so that every backend's iteration is
    /// next to its reference's; a backend without a reference in `backends`
    /// is a group of its own. Groups keep the order of their first member.
    static func pairedGroups(_ backends: [Backend]) -> [[Backend]] {
        let names = Set(backends.map(\.name))
        var keys: [String] = []
        var members: [String: [Backend]] = [:]
        var references: [String: Backend] = [:]
        for backend in backends {
            let isReference = backends.contains { $0.reference == backend.name }
            let key: String
            if isReference {
                key = backend.name
            } else if let reference = backend.reference, names.contains(reference) {
                key = reference
            } else {
                key = backend.name
            }
            if !keys.contains(key) { keys.append(key) }
            if isReference { references[key] = backend } else { members[key, default: []].append(backend) }
        }
        return keys.map { key in
            var group = members[key] ?? []
            if let reference = references[key] { group.insert(reference, at: min(1, group.count)) }
            return group
        }
    }

    /// `jobs` (a round's, in order) split into the paired groups they run in
    /// (``pairedGroups(_:)`` of this configuration's backends): consecutive
    /// jobs of one group stay together, in their order.
    func pairedGroups(of jobs: [IterationJob]) -> [[IterationJob]] {
        var groupOf: [String: Int] = [:]
        for (index, group) in Self.pairedGroups(backends).enumerated() {
            for backend in group { groupOf[backend.name] = index }
        }
        var groups: [[IterationJob]] = []
        var last: Int?
        for job in jobs {
            let group = groupOf[job.backend]
            if let group, group == last, !groups.isEmpty {
                groups[groups.count - 1].append(job)
            } else {
                groups.append([job])
            }
            last = group
        }
        return groups
    }

    /// One round's jobs: one iteration of each of `backends`. Each backend
    /// runs next to its reference (``pairedGroups(_:)``), in the order
    /// A B in even rounds and B A in odd ones (ABBA over two rounds), so that
    /// a drift of the machine falls on both sides of a ratio alike; the
    /// groups' order rotates by the round number.
    func round(_ round: Int, of backends: [Backend], size: BenchSize, durability: Durability) -> [IterationJob] {
        guard !backends.isEmpty else { return [] }
        let groups = Self.pairedGroups(backends).map { round % 2 == 1 ? Array($0.reversed()) : $0 }
        let shift = round % groups.count
        let ordered = Array(groups[shift...] + groups[..<shift]).flatMap { $0 }
        return ordered.map { backend in
            var job = IterationJob(
                backend: backend.name, size: size, seed: seed, durability: durability, operations: operations,
                round: round, isWarmup: round < warmup)
            job.readRuns = readRuns
            job.readRunSeconds = readRunSeconds
            job.minReadRuns = minReadRuns
            job.eraseRuns = eraseRuns
            job.eraseRunSeconds = eraseRunSeconds
            job.updateRuns = updateRuns
            job.updateRunSeconds = updateRunSeconds
            return job
        }
    }

    /// The fixed jobs of the run, in the order they run (extra rounds and
    /// callgrind iterations come after them): for each durability and size,
    /// rounds of one iteration per backend, warm-up rounds first; within a round
    /// the backends take turns, each beside its reference in ABBA order, and
    /// the groups' order rotates from round to round, so drift of the machine
    /// falls on all of them alike (``round(_:of:size:durability:)``).
    public func jobs() -> [IterationJob] {
        var jobs: [IterationJob] = []
        for durability in durabilities {
            for size in sizes {
                for round in 0..<(warmup + iterations) {
                    jobs += self.round(round, of: backends, size: size, durability: durability)
                }
            }
        }
        if showsProgress {
            for index in jobs.indices {
                let job = jobs[index]
                let which = job.isWarmup
                    ? "warm-up \(job.round + 1)/\(warmup)" : "iteration \(job.round - warmup + 1)/\(iterations)"
                jobs[index].progressLabel =
                    "[\(index + 1)/\(jobs.count)] \(job.size) \(job.durability.rawValue) \(job.backend), \(which)"
            }
        }
        return jobs
    }
}
