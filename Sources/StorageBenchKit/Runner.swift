import DAOCore
import DialogGraph
import Foundation
import Synchronization

/// What a run measures: backends × durabilities × sizes, each operation, with
/// warm-up and measured iterations.
public struct RunConfiguration: Sendable {
    /// The backends, in report order.
    public var backends: [Backend]
    /// The workload sizes (a sweep when more than one).
    public var sizes: [BenchSize]
    /// The durabilities the stores are opened with.
    public var durabilities: [Durability]
    /// The operations reported, in workload order.
    public var operations: [BenchOperation]
    /// Measured iterations per backend × size × durability.
    public var iterations: Int
    /// Warm-up iterations run first and discarded.
    public var warmup: Int
    /// The generator seed.
    public var seed: UInt64
    /// Whether to show progress on standard error.
    public var showsProgress: Bool
    /// The most measured iterations per backend × size × durability: after
    /// ``iterations``, rounds of the backends whose medians are not yet known
    /// within ``precision`` continue up to this many (or ``timeLimit``).
    public var maxIterations: Int
    /// The half-width of the 95% interval of a median, relative to it, that
    /// ends the extra rounds (0.03 for ±3%).
    public var precision: Double
    /// The confidence of the interval of each median (0.95).
    public var confidence: Double
    /// The most seconds of extra rounds per size × durability: a paired
    /// group's extra round starts only when it is expected to end within
    /// them (its operations' median seconds so far and its workers' start,
    /// data and checks), so the limit holds to within how far one group's
    /// round runs past its expected time.
    public var timeLimit: Double
    /// Iterations run under callgrind per backend × size × durability to count
    /// instructions and allocations (0: not counted). They run after the timed
    /// ones, in parallel, and their wall times are not reported.
    public var instructionIterations: Int
    /// The most runs of each read-only operation per iteration
    /// (``IterationJob/readRuns``): it runs again in place while its runs are
    /// fewer and add up to less than ``readRunSeconds``; the iteration's time
    /// is their median. 1: one run.
    public var readRuns: Int
    /// The seconds the runs of a read-only operation may add up to before no
    /// further run starts (``IterationJob/readRunSeconds``).
    public var readRunSeconds: Double
    /// The fewest runs of each read-only operation per iteration, whatever
    /// ``readRunSeconds`` says (``IterationJob/minReadRuns``).
    public var minReadRuns: Int
    /// The most runs of `erase-all` per iteration (``IterationJob/eraseRuns``):
    /// the store is put back untimed before each further run. 1: one run.
    public var eraseRuns: Int
    /// The seconds the runs of `erase-all` and the restores before them may
    /// add up to before no further run starts (``IterationJob/eraseRunSeconds``).
    public var eraseRunSeconds: Double
    /// The most runs of `update` per iteration (``IterationJob/updateRuns``):
    /// the store is put back untimed to what it held before `update` ahead
    /// of each further run. 1: one run.
    public var updateRuns: Int
    /// The seconds the runs of `update` and the restores around them may add
    /// up to (``IterationJob/updateRunSeconds``).
    public var updateRunSeconds: Double

    /// Creates a configuration.
    /// - Throws: ``ConfigurationError`` when a list is empty or a count out of range.
    public init(
        backends: [Backend], sizes: [BenchSize], durabilities: [Durability] = [.full],
        operations: [BenchOperation] = BenchOperation.allCases, iterations: Int = 5, warmup: Int = 1,
        seed: UInt64 = 42, showsProgress: Bool = true, maxIterations: Int? = nil, precision: Double = 0.03,
        confidence: Double = 0.95, timeLimit: Double = 60, instructionIterations: Int = 0, readRuns: Int = 1,
        readRunSeconds: Double = 0.25, minReadRuns: Int = 1, eraseRuns: Int = 1, eraseRunSeconds: Double = 1,
        updateRuns: Int = 1, updateRunSeconds: Double = 1
    ) throws {
        guard !backends.isEmpty else { throw ConfigurationError("no backend to run") }
        guard !sizes.isEmpty else { throw ConfigurationError("no size to run") }
        guard !durabilities.isEmpty else { throw ConfigurationError("no durability to run") }
        guard !operations.isEmpty else { throw ConfigurationError("no operation to run") }
        try checkOption("--iterations", iterations, in: 1...1000)
        try checkOption("--warmup", warmup, in: 0...100)
        self.backends = backends
        self.sizes = sizes
        self.durabilities = durabilities
        self.operations = operations
        self.iterations = iterations
        self.warmup = warmup
        self.seed = seed
        self.showsProgress = showsProgress
        let maxIterations = maxIterations ?? iterations
        guard (iterations...1000).contains(maxIterations) else {
            throw ConfigurationError(
                "--max-iterations must be between --iterations (\(iterations)) and 1000, not \(maxIterations)")
        }
        guard precision > 0, precision < 1 else {
            throw ConfigurationError(
                "--precision must be more than 0% and less than 100%, e.g. 3%, not \(Format.percent(precision))")
        }
        guard confidence > 0, confidence < 1 else {
            throw ConfigurationError("the confidence must be between 0 and 1, not \(confidence)")
        }
        guard timeLimit >= 0, timeLimit.isFinite else {
            throw ConfigurationError("--time-limit must be a number of seconds, not \(timeLimit)")
        }
        try checkOption("--instruction-iterations", instructionIterations, in: 0...100)
        try checkOption("--read-runs", readRuns, in: 1...100)
        guard readRunSeconds >= 0, readRunSeconds.isFinite else {
            throw ConfigurationError("--read-time must be a number of seconds, not \(readRunSeconds)")
        }
        guard (1...readRuns).contains(minReadRuns) else {
            throw ConfigurationError("--min-read-runs must be between 1 and --read-runs (\(readRuns)), not \(minReadRuns)")
        }
        try checkOption("--erase-runs", eraseRuns, in: 1...100)
        guard eraseRunSeconds >= 0, eraseRunSeconds.isFinite else {
            throw ConfigurationError("--erase-time must be a number of seconds, not \(eraseRunSeconds)")
        }
        try checkOption("--update-runs", updateRuns, in: 1...100)
        guard updateRunSeconds >= 0, updateRunSeconds.isFinite else {
            throw ConfigurationError("--update-time must be a number of seconds, not \(updateRunSeconds)")
        }
        self.updateRuns = updateRuns
        self.updateRunSeconds = updateRunSeconds
        self.readRuns = readRuns
        self.readRunSeconds = readRunSeconds
        self.minReadRuns = minReadRuns
        self.eraseRuns = eraseRuns
        self.eraseRunSeconds = eraseRunSeconds
        self.maxIterations = maxIterations
        self.precision = precision
        self.confidence = confidence
        self.timeLimit = timeLimit
        self.instructionIterations = instructionIterations
    }

    /// How far the median wall time of each operation, over one backend's
    /// measured `results` (at one size and durability), is from being known
    /// within ``precision`` at ``confidence``: the 95% interval's relative
    /// half-width divided by ``precision`` (above 1: unsettled), or
    /// ``unknownWidth`` when there are too few iterations for an interval. A
    /// failed backend has none.
    func medianWidths(_ results: [IterationResult]) -> [BenchOperation: Double] {
        guard !results.isEmpty, results.allSatisfy({ $0.error == nil }) else { return [:] }
        var widths: [BenchOperation: Double] = [:]
        for operation in operations {
            let times = results.compactMap { $0.measurements.first { $0.operation == operation }?.seconds }
            guard let statistics = SampleStatistics(times), let interval = MedianInterval(times, confidence: confidence)
            else { continue }
            widths[operation] =
                interval.coverage < confidence
                ? Self.unknownWidth : interval.relativeHalfWidth(around: statistics.median) / precision
        }
        return widths
    }

    /// How far the ratio of `backend` to its reference, taken round by round
    /// (``PairedRatio``) over `results` (one size and durability), is from
    /// being known within ``precision`` at ``confidence``, per operation (as
    /// ``medianWidths(_:)``); none when the reference is not in the run or
    /// either side failed.
    func ratioWidths(_ results: [IterationResult], backend: Backend) -> [BenchOperation: Double] {
        guard let reference = backend.reference, backends.contains(where: { $0.name == reference }) else { return [:] }
        let mine = results.filter { $0.job.backend == backend.name }
        let theirs = results.filter { $0.job.backend == reference }
        guard !mine.isEmpty, !theirs.isEmpty,
            (mine + theirs).allSatisfy({ $0.error == nil })
        else { return [:] }
        var widths: [BenchOperation: Double] = [:]
        for operation in operations {
            guard let paired = PairedRatio(operation, results: mine, reference: theirs, confidence: confidence) else {
                continue
            }
            widths[operation] = paired.coverage < confidence ? Self.unknownWidth : paired.relativeHalfWidth / precision
        }
        return widths
    }

    /// What ended the extra rounds of one size and durability.
    enum ExtraRoundsEnd: Sendable, Equatable {
        /// Every figure was settled (or no backend had one to settle).
        case settled
        /// ``maxIterations`` was reached.
        case maxIterations
        /// ``timeLimit`` ran out.
        case timeLimit
        /// No unsettled group's next round was expected to end within what
        /// was left of ``timeLimit``.
        case nothingFits
    }

    /// One line on what the extra rounds of `size` and `durability` did,
    /// given the measured `results` of that size and durability: how many
    /// rounds in how many seconds, what ended them, and every figure still
    /// unsettled (``unsettledWidths(_:)``) with its interval's half-width
    /// and the rounds it had, widest first (the twelve widest, then how many
    /// more), so that a log shows where the budget went and what it left wide.
    /// `brief` (a terminal's): at most 100 columns, the unsettled figures
    /// only counted (the run's warnings list them with `--verbose`).
    func extraRoundsSummary(
        _ results: [IterationResult], size: BenchSize, durability: Durability, end: ExtraRoundsEnd,
        rounds: Int, seconds: Double, brief: Bool = false
    ) -> String {
        let why =
            switch end {
            case .settled: "every figure within ±\(Format.percent(precision))"
            case .maxIterations: "ended at --max-iterations (\(maxIterations))"
            case .timeLimit: "ended by --time-limit (" + String(format: "%.0f s", timeLimit) + ")"
            case .nothingFits:
                "ended by --time-limit (" + String(format: "%.0f s", timeLimit)
                    + "): no unsettled group's next round was expected to end within it"
            }
        var line = "\(size) \(durability.rawValue): \(rounds) extra rounds in " + String(format: "%.0f s", seconds) + ", \(why)"
        var open: [(name: String, width: Double, rounds: Int)] = []
        for (backend, widths) in unsettledWidths(results) {
            for (operation, width) in widths {
                let count = results.filter {
                    $0.job.backend == backend && !$0.job.countsInstructions && $0.job.operations.contains(operation)
                }.count
                open.append(("\(backend) \(operation.rawValue)", width, count))
            }
        }
        guard !open.isEmpty else { return line }
        if brief {
            let short =
                switch end {
                case .settled: "all within ±\(Format.percent(precision))"
                case .maxIterations: "--max-iterations reached"
                case .timeLimit, .nothingFits: "--time-limit reached"
                }
            return "\(size) \(durability.rawValue): \(rounds) extra rounds in " + String(format: "%.0f s", seconds)
                + " (\(short)); \(open.count) figures still unsettled"
        }
        open.sort { $0.width != $1.width ? $0.width > $1.width : $0.name < $1.name }
        // The widest first, up to twelve: a log line, not the report.
        let shown = 12
        line += "; still unsettled: "
        line += open.prefix(shown).map { item in
            // The sentinel is set exactly; a measured width is a ratio of measured times.
            let width = item.width == Self.unknownWidth ? "no interval" : String(format: "±%.1f%%", item.width * precision * 100)
            return "\(item.name) \(width) (\(item.rounds) rounds)"
        }.joined(separator: ", ")
        if open.count > shown { line += " and \(open.count - shown) more" }
        return line
    }

    /// The width given to a figure with too few iterations for an interval
    /// at ``confidence``: unsettled, and weighed as an interval ten times
    /// wider than ``precision`` when extra rounds are shared out.
    static let unknownWidth = 10.0

    /// The operations whose median wall time, over one backend's measured
    /// `results` (at one size and durability), is not yet known within
    /// ``precision`` at ``confidence``: rows that more rounds could settle, in
    /// workload order. A failed backend has none.
    func unsettledMedians(_ results: [IterationResult]) -> [BenchOperation] {
        let widths = medianWidths(results)
        return operations.filter { (widths[$0] ?? 0) > 1 }
    }

    /// The operations whose ratio of `backend` to its reference, taken round
    /// by round (``PairedRatio``) over `results` (one size and durability), is
    /// not yet known within ``precision`` at ``confidence``, in workload order;
    /// none when the reference is not in the run or either side failed.
    func unsettledRatios(_ results: [IterationResult], backend: Backend) -> [BenchOperation] {
        let widths = ratioWidths(results, backend: backend)
        return operations.filter { (widths[$0] ?? 0) > 1 }
    }

    /// The widths (``medianWidths(_:)``) of the figures each backend still
    /// needs rounds for, given the measured `results` of one size and
    /// durability, only those above 1: a backend measured against a
    /// reference in the run, its paired ratios (the figure it is compared
    /// by; its own median follows the machine); a reference, none of its own
    /// (it runs for the backends measured against it); any other backend,
    /// its medians.
    func unsettledWidths(_ results: [IterationResult]) -> [String: [BenchOperation: Double]] {
        let names = Set(backends.map(\.name))
        var unsettled: [String: [BenchOperation: Double]] = [:]
        for backend in backends {
            let widths: [BenchOperation: Double]
            if let reference = backend.reference, names.contains(reference) {
                widths = ratioWidths(results, backend: backend)
            } else if backends.contains(where: { $0.reference == backend.name }) {
                widths = [:]
            } else {
                widths = medianWidths(results.filter { $0.job.backend == backend.name })
            }
            let open = widths.filter { $0.value > 1 }
            if !open.isEmpty { unsettled[backend.name] = open }
        }
        return unsettled
    }

    /// The operations each backend still needs rounds for, in workload
    /// order (``unsettledWidths(_:)``).
    func unsettledOperations(_ results: [IterationResult]) -> [String: [BenchOperation]] {
        unsettledWidths(results).mapValues { widths in operations.filter { widths[$0] != nil } }
    }

    /// The seconds one iteration of `backend` spends in each operation, over
    /// its measured `results`: the median over the iterations that ran it of
    /// all its runs (an operation's in-place runs added up, with the untimed
    /// restores before `erase-all`'s); 0 for one not measured yet.
    func operationCosts(_ results: [IterationResult], backend: String) -> [BenchOperation: Double] {
        var costs: [BenchOperation: Double] = [:]
        for operation in operations {
            let seconds = results.compactMap { result -> Double? in
                guard result.job.backend == backend, !result.job.countsInstructions,
                    let m = result.measurements.first(where: { $0.operation == operation })
                else { return nil }
                return (m.runSeconds?.reduce(0, +) ?? m.seconds) + (m.restoreSeconds ?? 0)
            }
            costs[operation] = SampleStatistics(seconds)?.median ?? 0
        }
        return costs
    }

    /// The seconds an iteration spent in its operations, as
    /// ``operationCosts(_:backend:)`` counts them: each operation's in-place
    /// runs added up, with the untimed restores before `update`'s and
    /// `erase-all`'s further runs.
    static func operationSeconds(_ result: IterationResult) -> Double {
        result.measurements.reduce(0) { sum, m in sum + (m.runSeconds?.reduce(0, +) ?? m.seconds) + (m.restoreSeconds ?? 0) }
    }

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

/// Runs a configuration and turns what it measured into a ``Report``.
public struct BenchmarkRunner: Sendable {
    /// What to run.
    public let configuration: RunConfiguration
    /// Where each iteration runs.
    public let executor: any IterationExecutor

    /// Seconds on a monotonic clock: the machine's uptime, or a test's
    /// scripted clock. The extra rounds' ``RunConfiguration/timeLimit`` is
    /// kept by it.
    let clock: @Sendable () -> Double

    /// A runner of `configuration` on `executor`.
    public init(configuration: RunConfiguration, executor: any IterationExecutor) {
        self.init(configuration: configuration, executor: executor) {
            Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        }
    }

    /// A runner of `configuration` on `executor` that reads the time from `clock`.
    init(configuration: RunConfiguration, executor: any IterationExecutor, clock: @escaping @Sendable () -> Double) {
        self.configuration = configuration
        self.executor = executor
        self.clock = clock
    }

    /// Runs every job and returns the measured (not warm-up) results: for each
    /// durability and size, the warm-up and ``RunConfiguration/iterations``
    /// rounds, then extra rounds (``RunConfiguration/extraRound(_:after:size:durability:)``)
    /// of the backends whose paired ratios to their reference (without one in
    /// the run, whose medians) are not yet known within the precision, each
    /// beside its reference and up to its last uncertain operation (up to
    /// ``RunConfiguration/maxIterations`` or ``RunConfiguration/timeLimit``;
    /// within a round, a paired group starts only when it is expected to end
    /// within the limit, ``RunConfiguration/expectedSeconds(of:after:overheads:)``,
    /// and runs whole, so a backend and its reference take the same rounds),
    /// then the callgrind iterations.
    /// - Throws: when an iteration could not be run at all (not when a backend fails).
    public func measure() throws -> [IterationResult] {
        let c = configuration
        var results: [IterationResult] = []
        defer { if c.showsProgress { ProgressPrinter.finish() } }
        var count = 0
        // Per backend, the seconds each of its iterations of the current size
        // and durability took beyond its operations (the group's wall time less what its operations took,
        // shared among the group's jobs): what an extra round pays besides
        // the operations it runs.
        var overheads: [String: [Double]] = [:]
        // One paired group at a time (a backend beside its reference), in
        // the round's order; the executor may run a group's workers in step.
        // With a `deadline`, a group starts only when it is expected to end
        // by then (``RunConfiguration/expectedSeconds(of:after:overheads:)``);
        // a group runs whole or not at all, so a backend and its reference
        // take the same rounds. Returns how many groups ran.
        func run(_ jobs: [IterationJob], until deadline: Double? = nil, _ label: (IterationJob) -> String) throws -> Int {
            var ran = 0
            for group in c.pairedGroups(of: jobs) {
                if let deadline, let first = group.first {
                    let here = results.filter { $0.job.size == first.size && $0.job.durability == first.durability }
                    let expected = c.expectedSeconds(of: group, after: here, overheads: overheads)
                    guard clock() + expected <= deadline else { continue }
                }
                let labelled = group.map { job in
                    var job = job
                    count += 1
                    if c.showsProgress {
                        job.progressLabel = "[\(count)] \(job.size) \(job.durability.rawValue) \(job.backend), \(label(job))"
                    }
                    return job
                }
                let began = clock()
                let groupResults = try executor.run(group: labelled)
                let wall = clock() - began
                let work = groupResults.reduce(0) { $0 + RunConfiguration.operationSeconds($1) }
                for (job, result) in zip(labelled, groupResults) {
                    report(result)
                    if !job.isWarmup { results.append(result) }
                    if result.error == nil {
                        overheads[job.backend, default: []].append(max(0, wall - work) / Double(labelled.count))
                    }
                }
                ran += 1
            }
            return ran
        }
        for durability in c.durabilities {
            for size in c.sizes {
                // What a worker takes besides its operations follows the size.
                overheads = [:]
                for round in 0..<(c.warmup + c.iterations) {
                    _ = try run(c.round(round, of: c.backends, size: size, durability: durability)) { job in
                        job.isWarmup
                            ? "warm-up \(round + 1)/\(c.warmup)" : "iteration \(round - c.warmup + 1)/\(c.iterations)"
                    }
                }
                let started = clock()
                let deadline = started + c.timeLimit
                var round = c.warmup + c.iterations
                var end = RunConfiguration.ExtraRoundsEnd.settled
                while true {
                    guard round - c.warmup < c.maxIterations else {
                        end = .maxIterations
                        break
                    }
                    guard clock() < deadline else {
                        end = .timeLimit
                        break
                    }
                    let jobs = c.extraRound(round, after: results, size: size, durability: durability)
                    if jobs.isEmpty { break }
                    let ran = try run(jobs, until: deadline) { job in
                        let which = job.operations == c.operations ? "" : ", up to \(job.operations.last?.rawValue ?? "")"
                        return "iteration \(round - c.warmup + 1) of at most \(c.maxIterations)\(which) (not yet within ±\(Format.percent(c.precision)))"
                    }
                    // No group fits in the time left: the limit ends the rounds.
                    guard ran > 0 else {
                        end = .nothingFits
                        break
                    }
                    round += 1
                }
                if c.showsProgress, c.maxIterations > c.iterations {
                    let seconds = clock() - started
                    let here = results.filter { $0.job.size == size && $0.job.durability == durability }
                    ProgressPrinter.write(
                        c.extraRoundsSummary(
                            here, size: size, durability: durability, end: end,
                            rounds: round - c.warmup - c.iterations, seconds: seconds,
                            brief: ProgressPrinter.isTerminal))
                    if ProgressPrinter.isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
                }
            }
        }
        results += try countInstructions()
        return results
    }

    /// Runs the callgrind iterations, in parallel (their counts do not depend
    /// on the machine's load).
    func countInstructions() throws -> [IterationResult] {
        let c = configuration
        guard c.instructionIterations > 0 else { return [] }
        var jobs: [IterationJob] = []
        for durability in c.durabilities {
            for size in c.sizes {
                for index in 0..<c.instructionIterations {
                    for var job in c.round(c.warmup + index, of: c.backends, size: size, durability: durability) {
                        job.countsInstructions = true
                        jobs.append(job)
                    }
                }
            }
        }
        if c.showsProgress {
            ProgressPrinter.write("counting instructions: \(jobs.count) iterations under callgrind, \(ProcessInfo.processInfo.activeProcessorCount) at a time")
        }
        let executor = self.executor
        let all = jobs
        let outcomes = Mutex<[Int: Result<IterationResult, any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: jobs.count) { index in
            let outcome = Result { try executor.run(all[index]) }
            outcomes.withLock { $0[index] = outcome }
        }
        let finished = outcomes.withLock { $0 }
        var results: [IterationResult] = []
        for index in jobs.indices {
            guard let outcome = finished[index] else { continue }
            let result = try outcome.get()
            report(result)
            results.append(result)
        }
        return results
    }

    private func report(_ result: IterationResult) {
        if let error = result.error, configuration.showsProgress {
            let job = result.job
            let what = job.countsInstructions ? "\(job.size) \(job.durability.rawValue) \(job.backend) under callgrind" : (job.progressLabel ?? job.backend)
            ProgressPrinter.write("\(what): failed: \(error)")
            if ProgressPrinter.isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
        }
    }

    /// Runs every job and builds the report.
    /// - Throws: when an iteration could not be run at all.
    public func run(provenance: Provenance) throws -> Report {
        ReportBuilder.report(of: try measure(), configuration: configuration, provenance: provenance)
    }
}

/// Turns iteration results into report rows.
public enum ReportBuilder {
    /// One row per backend × durability × size × operation of `configuration`.
    ///
    /// Times come from each iteration's measurement; throughput from the median;
    /// latency percentiles from an HDR histogram of every timed call of every
    /// iteration. A backend with a failed iteration gets rows with the error and
    /// no figures. A backend that names a reference gets its ratio to it
    /// (``ReportRow/ratioToRaw``) when the reference ran too.
    public static func report(
        of results: [IterationResult], configuration: RunConfiguration, provenance: Provenance
    ) -> Report {
        var rows: [ReportRow] = []
        for durability in configuration.durabilities {
            for size in configuration.sizes {
                for operation in configuration.operations {
                    for backend in configuration.backends {
                        let mine = results.filter {
                            $0.job.backend == backend.name && $0.job.size == size && $0.job.durability == durability
                        }
                        var row = row(
                            operation, results: mine, backend: backend.name, size: size,
                            durability: durability, configuration: configuration, provenance: provenance)
                        row.reference = backend.reference ?? ""
                        row.role = backend.role
                        if let reference = backend.reference, row.error.isEmpty {
                            let theirs = results.filter {
                                $0.job.backend == reference && $0.job.size == size && $0.job.durability == durability
                            }
                            if theirs.allSatisfy({ $0.error == nil }),
                                let paired = PairedRatio(
                                    operation, results: mine, reference: theirs, confidence: configuration.confidence)
                            {
                                row.ratioPaired = paired.median
                                row.ratioPairedLow = paired.low
                                row.ratioPairedHigh = paired.high
                                row.ratioPairedRounds = paired.ratios
                            }
                        }
                        rows.append(row)
                    }
                }
            }
        }
        return Report(rows: ratiosToRaw(rows))
    }

    /// `rows` with ``ReportRow/ratioToRaw`` set for every row whose reference
    /// has a row of the same durability, size and operation, both with a
    /// throughput: the row's throughput divided by the reference's; and
    /// ``ReportRow/ratioInstructions`` where both rows have instruction counts:
    /// the reference's instructions per unit divided by the row's.
    public static func ratiosToRaw(_ rows: [ReportRow]) -> [ReportRow] {
        var byKey: [String: ReportRow] = [:]
        for row in rows where row.error.isEmpty { byKey[row.key] = row }
        return rows.map { row in
            var row = row
            row.ratioToRaw = nil
            row.ratioInstructions = nil
            guard !row.reference.isEmpty, row.error.isEmpty else { return row }
            var key = row
            key.backend = row.reference
            guard let raw = byKey[key.key] else { return row }
            if let throughput = row.throughputPerSecond, let rawThroughput = raw.throughputPerSecond, rawThroughput > 0 {
                row.ratioToRaw = throughput / rawThroughput
            }
            if let instructions = row.instructions, let units = row.units, instructions > 0, units > 0,
                let rawInstructions = raw.instructions, let rawUnits = raw.units, rawUnits > 0
            {
                row.ratioInstructions =
                    (Double(rawInstructions) / Double(rawUnits)) / (Double(instructions) / Double(units))
            }
            return row
        }
    }

    static func row(
        _ operation: BenchOperation, results: [IterationResult], backend: String, size: BenchSize,
        durability: Durability, configuration: RunConfiguration, provenance: Provenance
    ) -> ReportRow {
        var row = ReportRow(
            workload: WorkloadData.name, provenance: provenance, backend: backend, durability: durability.rawValue,
            operation: operation.rawValue, dialogs: size.dialogs, messagesPerDialog: size.messagesPerDialog,
            units: nil, unit: operation.unit, iterations: results.count, seed: configuration.seed,
            warmup: configuration.warmup)
        if let failed = results.first(where: { $0.error != nil }), let error = failed.error {
            row.error = error
            return row
        }
        let counted = results.filter(\.job.countsInstructions)
        let timed = results.filter { !$0.job.countsInstructions }
        // Extra rounds may stop before the end of the workload
        // (RunConfiguration.extraRound): an operation's figures come from the
        // iterations that ran it, the memory and disk figures from those that
        // ran every operation.
        let results = timed.filter { $0.job.operations.contains(operation) }
        let complete = timed.filter { $0.job.operations == configuration.operations }
        row.iterations = results.count
        let measurements = results.compactMap { result in
            result.measurements.first { $0.operation == operation }
        }
        let counts = counted.compactMap { result in result.measurements.first { $0.operation == operation } }
        if !counted.isEmpty {
            guard counts.count == counted.count, counts.allSatisfy({ $0.instructions != nil && $0.allocations != nil })
            else {
                row.error = "instructions not counted in every callgrind iteration"
                return row
            }
            row.instructions = SampleStatistics(counts.compactMap(\.instructions).map(Double.init)).map { Int64($0.median.rounded()) }
            row.allocations = SampleStatistics(counts.compactMap(\.allocations).map(Double.init)).map { Int64($0.median.rounded()) }
        }
        guard !measurements.isEmpty, measurements.count == results.count,
            let statistics = SampleStatistics(measurements.map(\.seconds))
        else {
            row.error = results.isEmpty ? "not run" : "not measured in every iteration"
            return row
        }
        let units = measurements[0].units
        guard measurements.allSatisfy({ $0.units == units }) else {
            row.error = "the iterations counted different units: \(measurements.map(\.units))"
            return row
        }
        let expected = operation.expectedUnits(for: size)
        // A bounded operation (see Backend.singleCallLimit) says so in its note.
        let bounded = measurements.contains { $0.note != nil } && units < expected
        guard units == expected || bounded else {
            row.error = "counted \(units) \(operation.unit); WORKLOAD.md says \(operation.unitsFormula) = \(expected)"
            return row
        }
        row.units = units
        row.medianSeconds = statistics.median
        row.minSeconds = statistics.min
        row.maxSeconds = statistics.max
        row.meanSeconds = statistics.mean
        row.stddevSeconds = statistics.standardDeviation
        row.throughputPerSecond = statistics.median > 0 ? Double(units) / statistics.median : nil
        if let interval = MedianInterval(measurements.map(\.seconds), confidence: configuration.confidence) {
            row.ciLowSeconds = interval.low
            row.ciHighSeconds = interval.high
        }
        if operation.isPerCall {
            let calls = measurements.flatMap { $0.callNanoseconds ?? [] }
            if let percentiles = LatencyPercentiles(nanoseconds: calls) {
                row.p50Microseconds = percentiles.p50Microseconds
                row.p90Microseconds = percentiles.p90Microseconds
                row.p99Microseconds = percentiles.p99Microseconds
            }
            row.latencySpectrum = LatencySpectrum(nanoseconds: calls)
        }
        func median(_ values: [Int64]) -> Int64? {
            SampleStatistics(values.map(Double.init)).map { Int64($0.median.rounded()) }
        }
        row.bytesOnDisk = median(complete.compactMap(\.bytesOnDisk))
        row.peakRSSBytes = complete.compactMap(\.peakRSSBytes).max()
        row.peakRSSWorkloadBytes = median(complete.compactMap(\.workloadPeakRSSBytes))
        row.operationPeakRSSBytes = median(measurements.compactMap(\.peakRSSRiseBytes))
        row.decodedBytes = median(measurements.compactMap(\.decodedBytes))
        if operation.runsInPlace {
            row.runsInPlace = median(measurements.map { Int64($0.runSeconds?.count ?? 1) }).map(Int.init)
        }
        row.note = measurements.compactMap(\.note).first ?? ""
        row.settings = results.compactMap(\.settings).first ?? ""
        return row
    }
}

/// The tables printed after a run. ``render(_:)`` (in Summary.swift) is the
/// one-screen summary; ``detailed(_:)`` is every figure: operations as rows,
/// backends as columns, throughput with its unit and each backend's ratio to
/// the fastest, the ratios to the raw engine, counts, memory and scale.
public enum SummaryTable {
    /// The detailed table(s) of `report`, one per durability × size, as plain
    /// text (`storage-bench run --verbose`).
    public static func detailed(_ report: Report) -> String {
        var groups: [(String, [ReportRow])] = []
        for row in report.rows {
            let title = "\(row.workload), \(row.dialogs) dialogs × \(row.messagesPerDialog) messages, durability \(row.durability)"
            if let index = groups.firstIndex(where: { $0.0 == title }) {
                groups[index].1.append(row)
            } else {
                groups.append((title, [row]))
            }
        }
        var text = ""
        for (title, rows) in groups {
            var backends: [String] = []
            var operations: [String] = []
            for row in rows {
                if !backends.contains(row.backend) { backends.append(row.backend) }
                if !operations.contains(row.operation) { operations.append(row.operation) }
            }
            var table: [[String]] = [["operation"] + backends]
            var notes: [String] = []
            for operation in operations {
                let cells = rows.filter { $0.operation == operation }
                let fastest = cells.compactMap(\.throughputPerSecond).max()
                let unit = BenchOperation(rawValue: operation)?.shortUnit ?? "/s"
                var line = [operation]
                for backend in backends {
                    guard let row = cells.first(where: { $0.backend == backend }) else {
                        line.append("")
                        continue
                    }
                    if !row.error.isEmpty {
                        line.append("error")
                        notes.append("\(backend) \(operation): \(row.error)")
                    } else if let throughput = row.throughputPerSecond, let fastest, fastest > 0 {
                        line.append("\(Format.compact(throughput)) \(unit) \(Format.ratio(throughput / fastest))")
                    } else {
                        line.append("–")
                    }
                    if !row.note.isEmpty { notes.append("\(backend) \(operation): \(row.note)") }
                }
                table.append(line)
            }
            let firstRows = backends.compactMap { backend in rows.first { $0.backend == backend && $0.error.isEmpty } }
            if !firstRows.isEmpty {
                table.append(
                    ["bytes on disk"]
                        + backends.map { b in Format.bytes(rows.first { $0.backend == b && $0.bytesOnDisk != nil }?.bytesOnDisk) })
                table.append(
                    ["peak RSS"]
                        + backends.map { b in Format.bytes(rows.first { $0.backend == b && $0.peakRSSBytes != nil }?.peakRSSBytes) })
            }
            let counts = rows.filter(\.error.isEmpty).map(\.iterations)
            let fewest = counts.min() ?? rows.first?.iterations ?? 0
            let most = counts.max() ?? fewest
            let iterations = fewest == most ? "\(fewest)" : "\(fewest)–\(most)"
            text += "\(title) (median of \(iterations) iterations; ratio = throughput / fastest)\n"
            text += align(table)
            text += ratioTable(rows, backends: backends, operations: operations)
            for note in Array(Set(notes)).sorted() { text += "  note: \(note)\n" }
            for backend in backends {
                if let settings = rows.first(where: { $0.backend == backend && !$0.settings.isEmpty })?.settings {
                    text += "  settings in force: \(backend): \(settings)\n"
                }
            }
            text += countsTable(rows, backends: backends, operations: operations)
            text += memoryTable(rows, backends: backends)
            text += "\n"
        }
        text += scaleTable(report)
        return text
    }

    /// Memory and disk: each backend's own peak (above the generated data),
    /// read-all's peak against the decoded graph, and, for a backend with a
    /// reference, both and the bytes on disk divided by the reference's.
    static func memoryTable(_ rows: [ReportRow], backends: [String]) -> String {
        guard rows.contains(where: { $0.peakRSSWorkloadBytes != nil || $0.decodedBytes != nil }) else { return "" }
        func first(_ backend: String, _ operation: String? = nil) -> ReportRow? {
            rows.first { $0.backend == backend && $0.error.isEmpty && (operation == nil || $0.operation == operation) }
        }
        func ratio(_ a: Int64?, _ b: Int64?) -> String {
            guard let a, let b, b > 0 else { return "–" }
            return Format.ratio(Double(a) / Double(b))
        }
        var table: [[String]] = [["memory and disk"] + backends]
        table.append(["peak RSS above the data"] + backends.map { Format.bytes(first($0)?.peakRSSWorkloadBytes) })
        table.append(
            ["  ÷ the raw engine's"]
                + backends.map { b in
                    guard let row = first(b), !row.reference.isEmpty else { return "" }
                    return ratio(row.peakRSSWorkloadBytes, first(row.reference)?.peakRSSWorkloadBytes)
                })
        let readAll = BenchOperation.readAll.rawValue
        table.append(["read-all: peak RSS rise"] + backends.map { Format.bytes(first($0, readAll)?.operationPeakRSSBytes) })
        table.append(["read-all: decoded graph"] + backends.map { Format.bytes(first($0, readAll)?.decodedBytes) })
        table.append(
            ["read-all: peak ÷ graph"]
                + backends.map { b in ratio(first(b, readAll)?.operationPeakRSSBytes, first(b, readAll)?.decodedBytes) })
        table.append(
            ["bytes on disk ÷ the raw engine's"]
                + backends.map { b in
                    guard let row = first(b), !row.reference.isEmpty else { return "" }
                    return ratio(row.bytesOnDisk, first(row.reference)?.bytesOnDisk)
                })
        var text = "  memory (median over iterations; peak RSS above the data = the worker's highest resident memory "
        text += "less what it held once the workload's data was generated) and disk (after update):\n"
        return text + align(table)
    }

    /// For a report with several sizes: each backend's throughput at each
    /// larger size divided by its throughput at the smallest, per durability
    /// and operation (1.00× = as fast per unit at the larger size).
    static func scaleTable(_ report: Report) -> String {
        var text = ""
        var durabilities: [String] = []
        for row in report.rows where !durabilities.contains(row.durability) { durabilities.append(row.durability) }
        for durability in durabilities {
            let rows = report.rows.filter { $0.durability == durability && $0.error.isEmpty }
            var sizes: [(Int, Int)] = []
            for row in rows where !sizes.contains(where: { $0 == (row.dialogs, row.messagesPerDialog) }) {
                sizes.append((row.dialogs, row.messagesPerDialog))
            }
            sizes.sort { $0.0 * $0.1 < $1.0 * $1.1 }
            guard let smallest = sizes.first, sizes.count > 1 else { continue }
            var backends: [String] = []
            var operations: [String] = []
            for row in rows {
                if !backends.contains(row.backend) { backends.append(row.backend) }
                if !operations.contains(row.operation) { operations.append(row.operation) }
            }
            for size in sizes.dropFirst() {
                var table: [[String]] = [["operation"] + backends]
                for operation in operations {
                    var line = [operation]
                    for backend in backends {
                        func throughput(_ s: (Int, Int)) -> Double? {
                            rows.first {
                                $0.backend == backend && $0.operation == operation && $0.dialogs == s.0
                                    && $0.messagesPerDialog == s.1
                            }?.throughputPerSecond
                        }
                        if let large = throughput(size), let small = throughput(smallest), small > 0 {
                            line.append(Format.ratio(large / small))
                        } else {
                            line.append("–")
                        }
                    }
                    table.append(line)
                }
                text += "Scale, durability \(durability): throughput at \(size.0) × \(size.1) ÷ throughput at "
                text += "\(smallest.0) × \(smallest.1) (1.00× = the same speed per unit at the larger size)\n"
                text += align(table) + "\n"
            }
        }
        return text
    }

    /// Instructions and allocations per counted unit, when the rows have them.
    static func countsTable(_ rows: [ReportRow], backends: [String], operations: [String]) -> String {
        guard rows.contains(where: { $0.instructions != nil }) else { return "" }
        var table: [[String]] = [["operation"] + backends]
        for operation in operations {
            var line = [operation]
            for backend in backends {
                guard let row = rows.first(where: { $0.backend == backend && $0.operation == operation }),
                    let instructions = row.instructions, let units = row.units, units > 0
                else {
                    line.append("–")
                    continue
                }
                let perUnit = Double(instructions) / Double(units)
                let allocations = row.allocations.map { String(format: " / %.3g", Double($0) / Double(units)) } ?? ""
                line.append(Format.compact(perUnit) + allocations)
            }
            table.append(line)
        }
        return "  instructions / allocations per unit (callgrind, timed regions only):\n" + align(table)
    }

    /// The rows whose wall time is too uncertain to compare: no 95% interval
    /// (fewer than 6 iterations), or one wider than `precision` around the median.
    public static func noisyRows(_ report: Report, precision: Double) -> [(row: ReportRow, reason: String)] {
        var noisy: [(ReportRow, String)] = []
        for row in report.rows where row.error.isEmpty {
            guard let median = row.medianSeconds, median > 0 else { continue }
            guard let low = row.ciLowSeconds, let high = row.ciHighSeconds, row.iterations >= 6 else {
                noisy.append((row, "\(row.iterations) iterations give no 95% interval of the median (6 at least)"))
                continue
            }
            if let reason = widerThan(precision, low: low, figure: median, high: high, of: "the median") {
                noisy.append((row, reason))
            }
        }
        return noisy
    }

    /// The rows whose paired ratio to their reference (``ReportRow/ratioPaired``)
    /// is not known within `precision`: its 95% interval wider than that
    /// around the ratio, or no interval (fewer than 6 rounds with both).
    /// These are the figures extra rounds try to settle for a backend with a
    /// reference, and the ones `compare` judges by default.
    public static func unsettledRatioRows(_ report: Report, precision: Double) -> [(row: ReportRow, reason: String)] {
        var unsettled: [(ReportRow, String)] = []
        for row in report.rows where row.error.isEmpty {
            guard let ratio = row.ratioPaired, ratio > 0 else { continue }
            guard let low = row.ratioPairedLow, let high = row.ratioPairedHigh, row.iterations >= 6 else {
                unsettled.append((row, "\(row.iterations) rounds give no 95% interval of the ratio to \(row.reference)"))
                continue
            }
            if let reason = widerThan(precision, low: low, figure: ratio, high: high, of: "the ratio to \(row.reference)") {
                unsettled.append((row, reason))
            }
        }
        return unsettled
    }

    /// Why the 95% interval `low` … `high` of `figure` is too wide to compare
    /// (one side further from it than `precision`, relative), or `nil`.
    private static func widerThan(
        _ precision: Double, low: Double, figure: Double, high: Double, of name: String
    ) -> String? {
        let below = (low - figure) / figure
        let above = (high - figure) / figure
        guard max(-below, above) > precision else { return nil }
        return "95% interval of \(name) " + String(format: "%+.1f%% … %+.1f%%", below * 100, above * 100)
            + ", wider than ±\(Format.percent(precision))"
    }

    /// The ratio of each backend that names a reference to that reference, by
    /// operation, when the run has at least one such ratio; otherwise empty.
    static func ratioTable(_ rows: [ReportRow], backends: [String], operations: [String]) -> String {
        guard rows.contains(where: { $0.ratioToRaw != nil || $0.ratioPaired != nil || $0.ratioInstructions != nil })
        else { return "" }
        let measured = backends.compactMap { backend in
            rows.first { $0.backend == backend && !$0.reference.isEmpty }.map { (backend, $0.reference) }
        }
        var table: [[String]] = [["operation"] + measured.map { "\($0.0) ÷ \($0.1)" }]
        for operation in operations {
            var line = [operation]
            for (backend, _) in measured {
                let row = rows.first { $0.backend == backend && $0.operation == operation }
                if let row, let ratio = row.ratioPaired {
                    var cell = Format.ratio(ratio)
                    if let low = row.ratioPairedLow, let high = row.ratioPairedHigh {
                        let range = String(Format.ratio(low).dropLast()) + "–" + Format.ratio(high)
                        let rounds = row.ratioPairedRounds?.count ?? row.iterations
                        cell += rounds >= Comparison.fewestForInterval ? " (\(range))" : " [\(range)]"
                    }
                    line.append(cell)
                } else if let ratio = row?.ratioToRaw {
                    line.append(Format.ratio(ratio))
                } else {
                    line.append(row?.error.isEmpty == false ? "error" : "–")
                }
            }
            table.append(line)
        }
        var text = "  ratio to the raw engine: the median over rounds of throughput ÷ the raw engine's throughput "
        text += "in the same round, run side by side ((…) its 95% interval, from 6 rounds or more; […] the lowest "
        text += "and highest of fewer rounds, no 95% interval; 1.00× = as fast as its C API used directly; "
        text += "– = the reference did not run)\n"
        text += align(table)
        guard rows.contains(where: { $0.ratioInstructions != nil }) else { return text }
        var counts: [[String]] = [["operation"] + measured.map { "\($0.0) ÷ \($0.1)" }]
        for operation in operations {
            counts.append(
                [operation]
                    + measured.map { backend, _ in
                        rows.first { $0.backend == backend && $0.operation == operation }?.ratioInstructions
                            .map { Format.ratio($0) } ?? "–"
                    })
        }
        text += "  ratio to the raw engine by instructions: the raw engine's instructions per unit ÷ the "
        text += "backend's (callgrind; 1.00× = as few as the raw engine)\n"
        return text + align(counts)
    }

    /// Columns padded to their widest cell; the first left-aligned, the rest right-aligned.
    public static func align(_ table: [[String]]) -> String {
        let columns = table.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columns)
        for row in table {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        var text = ""
        for (rowIndex, row) in table.enumerated() {
            var cells: [String] = []
            for (index, cell) in row.enumerated() {
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                cells.append(index == 0 ? cell + padding : padding + cell)
            }
            text += "  " + cells.joined(separator: "  ") + "\n"
            if rowIndex == 0 {
                text += "  " + widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n"
            }
        }
        return text
    }
}
