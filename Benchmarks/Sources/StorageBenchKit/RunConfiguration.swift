import DAOCore
import DialogGraph
import Foundation


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

    /// The measured iterations (and ``maxIterations``) a run accepts.
    public static let iterationsRange = 1...1000
    /// The warm-up iterations (and the callgrind iterations) a run accepts.
    public static let warmupRange = 0...100
    /// The in-place runs of an operation (`--read-runs`, `--erase-runs`, `--update-runs`) a run accepts.
    public static let runsRange = 1...100

    /// Creates a configuration.
    /// - Throws: ``ConfigurationError`` when a list is empty or a count out of range.
    public init(
        backends: [Backend], sizes: [BenchSize], durabilities: [Durability] = [.full],
        operations: [BenchOperation] = BenchOperation.workload, iterations: Int = 5, warmup: Int = 1,
        seed: UInt64 = 42, showsProgress: Bool = true, maxIterations: Int? = nil, precision: Double = 0.03,
        confidence: Double = 0.95, timeLimit: Double = 60, instructionIterations: Int = 0, readRuns: Int = 1,
        readRunSeconds: Double = 0.25, minReadRuns: Int = 1, eraseRuns: Int = 1, eraseRunSeconds: Double = 1,
        updateRuns: Int = 1, updateRunSeconds: Double = 1
    ) throws {
        guard !backends.isEmpty else { throw ConfigurationError("no backend to run") }
        guard !sizes.isEmpty else { throw ConfigurationError("no size to run") }
        guard !durabilities.isEmpty else { throw ConfigurationError("no durability to run") }
        guard !operations.isEmpty else { throw ConfigurationError("no operation to run") }
        try checkOption("--iterations", iterations, in: Self.iterationsRange)
        try checkOption("--warmup", warmup, in: Self.warmupRange)
        self.backends = backends
        self.sizes = sizes
        self.durabilities = durabilities
        self.operations = operations
        self.iterations = iterations
        self.warmup = warmup
        self.seed = seed
        self.showsProgress = showsProgress
        let maxIterations = maxIterations ?? iterations
        guard (iterations...Self.iterationsRange.upperBound).contains(maxIterations) else {
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
            throw ConfigurationError("--time-limit must be a number of seconds, 0 or more, not \(timeLimit)")
        }
        try checkOption("--instruction-iterations", instructionIterations, in: Self.warmupRange)
        try checkOption("--read-runs", readRuns, in: Self.runsRange)
        guard readRunSeconds >= 0, readRunSeconds.isFinite else {
            throw ConfigurationError("--read-time must be a number of seconds, 0 or more, not \(readRunSeconds)")
        }
        guard (1...readRuns).contains(minReadRuns) else {
            throw ConfigurationError("--min-read-runs must be between 1 and --read-runs (\(readRuns)), not \(minReadRuns)")
        }
        try checkOption("--erase-runs", eraseRuns, in: Self.runsRange)
        guard eraseRunSeconds >= 0, eraseRunSeconds.isFinite else {
            throw ConfigurationError("--erase-time must be a number of seconds, 0 or more, not \(eraseRunSeconds)")
        }
        try checkOption("--update-runs", updateRuns, in: Self.runsRange)
        guard updateRunSeconds >= 0, updateRunSeconds.isFinite else {
            throw ConfigurationError("--update-time must be a number of seconds, 0 or more, not \(updateRunSeconds)")
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
}
