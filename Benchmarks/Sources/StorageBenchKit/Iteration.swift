import DAOCore
import Foundation

/// One backend's run of the workload, once, on a fresh store: what a worker
/// process is asked to do.
public struct IterationJob: Sendable, Codable, Hashable {
    /// The backend's name in the registry.
    public var backend: String
    /// The workload size.
    public var size: BenchSize
    /// The generator seed.
    public var seed: UInt64
    /// The durability the store is opened with.
    public var durability: Durability
    /// The operations to time and report, in workload order.
    public var operations: [BenchOperation]
    /// The round this iteration belongs to (warm-up rounds first), for progress.
    public var round: Int
    /// Whether this is a warm-up iteration, whose figures are discarded.
    public var isWarmup: Bool
    /// Whether the iteration runs under callgrind to count instructions and
    /// allocations (its wall times are then not reported).
    public var countsInstructions: Bool = false
    /// The most runs of each read-only operation (``BenchOperation/isReadOnly``)
    /// in this iteration: after its first run, it runs again in place, on the
    /// unchanged store, while its runs are fewer than this and either fewer
    /// than ``minReadRuns`` or add up to less than ``readRunSeconds``; in a
    /// stepped group (``SteppedWorkers``) every worker takes as many runs as
    /// the first to stop. The iteration's time for it
    /// is the median of its runs. 1: one run. Under callgrind always one run.
    public var readRuns: Int = 1
    /// The time, in seconds, the runs of a read-only operation may add up to
    /// before no further run starts (see ``readRuns``), once it has run
    /// ``minReadRuns`` times.
    public var readRunSeconds: Double = 0
    /// The fewest runs of each read-only operation per iteration, whatever
    /// their time (up to ``readRuns``), so that a slow store's median is of
    /// several runs too. 1: the time budget alone decides.
    public var minReadRuns: Int = 1
    /// The most runs of `erase-all` (``BenchOperation/restoresInPlace``) in
    /// this iteration: after its first run, the store is put back untimed
    /// (what it erased, persisted again in one call and checked) and it runs
    /// again, while its runs are fewer than this and its runs and restores
    /// add up to less than ``eraseRunSeconds``; in a stepped group every
    /// worker takes as many runs as the first to stop. The iteration's time
    /// for it is the median of its runs. 1: one run. Under callgrind always
    /// one run.
    public var eraseRuns: Int = 1
    /// The time, in seconds, the runs of `erase-all` and the restores
    /// before them may add up to before no further run starts (see
    /// ``eraseRuns``).
    public var eraseRunSeconds: Double = 0
    /// The most runs of `update` in this iteration: after its first run,
    /// the store is put back untimed to what it held before `update` (the
    /// dialogs as `persist` wrote them, upserted again in one call through
    /// the subject's own `update`, then checked) and it runs again, checked
    /// as the first run is, while its runs are fewer than this and one more
    /// restore and run, each reckoned as long as the last run, fit in
    /// ``updateRunSeconds`` with what was spent; in a stepped
    /// group every worker takes as many runs as the first to stop. The
    /// iteration's time for it is the median of its runs. 1: one run. Under
    /// callgrind always one run.
    public var updateRuns: Int = 1
    /// The time, in seconds, the runs of `update` and the restores around
    /// them may add up to (see ``updateRuns``).
    public var updateRunSeconds: Double = 0
    /// A prefix for progress lines (`[3/24]`), or `nil` for no progress.
    public var progressLabel: String?

    /// Creates a job.
    public init(
        backend: String, size: BenchSize, seed: UInt64, durability: Durability,
        operations: [BenchOperation], round: Int = 0, isWarmup: Bool = false, progressLabel: String? = nil
    ) {
        self.backend = backend
        self.size = size
        self.seed = seed
        self.durability = durability
        self.operations = operations
        self.round = round
        self.isWarmup = isWarmup
        self.progressLabel = progressLabel
    }
}

/// What one operation measured in one iteration.
public struct OperationMeasurement: Sendable, Codable, Hashable {
    /// The operation.
    public var operation: BenchOperation
    /// Wall time of the timed work, in seconds (monotonic clock): for an
    /// operation run several times in place, the median of its runs.
    public var seconds: Double
    /// For an operation run more than once in place (a read-only one,
    /// ``IterationJob/readRuns``; `erase-all`, ``IterationJob/eraseRuns``;
    /// `update`, ``IterationJob/updateRuns``), each run's wall time in seconds, in order; `nil` after one run.
    public var runSeconds: [Double]?
    /// For `erase-all` or `update` run more than once in place, the seconds
    /// spent putting the store back (and checking it) around the further runs,
    /// untimed and added up: part of what the iteration cost, not of the
    /// figure.
    public var restoreSeconds: Double?
    /// How many counted units the timed work did.
    public var units: Int
    /// For per-call operations, each timed call's latency in nanoseconds.
    public var callNanoseconds: [UInt64]?
    /// What was done differently from WORKLOAD.md, if anything (a bounded count).
    public var note: String?
    /// Instructions executed inside the timed region(s), when the iteration ran
    /// under callgrind.
    public var instructions: Int64?
    /// Calls to the C allocator (`malloc`, `calloc`, `realloc`, the aligned
    /// variants) inside the timed region(s), when the iteration ran under callgrind.
    public var allocations: Int64?
    /// How far the process's resident memory rose during the operation above
    /// what it held when the operation began, in bytes, when measured
    /// (worker processes only).
    public var peakRSSRiseBytes: Int64?
    /// For `read-all`: the heap bytes the decoded graph holds (the C
    /// allocator's bytes in use with the result alive, less before the call),
    /// when measured.
    public var decodedBytes: Int64?

    /// Creates a measurement.
    public init(
        operation: BenchOperation, seconds: Double, units: Int, callNanoseconds: [UInt64]? = nil, note: String? = nil,
        instructions: Int64? = nil, allocations: Int64? = nil
    ) {
        self.operation = operation
        self.seconds = seconds
        self.units = units
        self.callNanoseconds = callNanoseconds
        self.note = note
        self.instructions = instructions
        self.allocations = allocations
    }
}

/// What one iteration measured, or why it failed.
public struct IterationResult: Sendable, Codable, Hashable {
    /// The job that was run.
    public var job: IterationJob
    /// The operations measured, in order (those before a failure, when it failed).
    public var measurements: [OperationMeasurement]
    /// The size of the store's directory right after `update`, in bytes.
    public var bytesOnDisk: Int64?
    /// The peak resident memory of the process that ran the iteration, in bytes,
    /// when it ran in a process of its own.
    public var peakRSSBytes: Int64?
    /// Why the iteration failed (an error, or a failed correctness check), or `nil`.
    public var error: String?
    /// The store's settings in force, as it read them back (``Store/settingsDescription``).
    public var settings: String?
    /// The largest rise of the process's resident memory, from the moment the
    /// workload's data was generated to the end of the iteration, in bytes:
    /// the backend's own peak memory, when measured (worker processes only).
    public var workloadPeakRSSBytes: Int64?

    /// Creates a result.
    public init(
        job: IterationJob, measurements: [OperationMeasurement] = [], bytesOnDisk: Int64? = nil,
        peakRSSBytes: Int64? = nil, error: String? = nil
    ) {
        self.job = job
        self.measurements = measurements
        self.bytesOnDisk = bytesOnDisk
        self.peakRSSBytes = peakRSSBytes
        self.error = error
    }
}
