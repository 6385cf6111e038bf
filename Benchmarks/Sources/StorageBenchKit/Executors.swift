import DialogGraph
import Foundation

/// Runs one iteration somewhere: in this process, or in a worker process of its own.
public protocol IterationExecutor: Sendable {
    /// Runs `job` and returns what it measured. A backend's failure is the
    /// result's ``IterationResult/error``; this throws only when the job could
    /// not be run at all.
    func run(_ job: IterationJob) throws -> IterationResult

    /// Runs the iterations of one round's paired group (a backend beside its
    /// reference, ``RunConfiguration/pairedGroups(_:)``), in the order given,
    /// and returns their results in the same order. The default runs them one
    /// after another with ``run(_:)``.
    func run(group jobs: [IterationJob]) throws -> [IterationResult]
}

extension IterationExecutor {
    /// Runs `jobs` one after another.
    public func run(group jobs: [IterationJob]) throws -> [IterationResult] {
        try jobs.map { try run($0) }
    }
}

/// Runs iterations in the calling process: for tests and for embedding the
/// harness; peak memory is not reported, since one process holds every backend.
public struct InProcessExecutor: IterationExecutor {
    /// Where backends are looked up by name.
    public let registry: BackendRegistry
    /// Whether iterations measure the rise of resident memory: only when this
    /// process runs one iteration at a time and nothing else (a worker).
    let measuresMemory: Bool
    /// Where the iteration waits for its turn before each step (a worker
    /// stepped by its parent), or `nil`.
    let gate: (@Sendable (BenchOperation, Int) throws -> Bool)?

    /// An executor over `registry`.
    public init(registry: BackendRegistry) {
        self.init(registry: registry, measuresMemory: false)
    }

    init(
        registry: BackendRegistry, measuresMemory: Bool, gate: (@Sendable (BenchOperation, Int) throws -> Bool)? = nil
    ) {
        self.registry = registry
        self.measuresMemory = measuresMemory
        self.gate = gate
    }

    /// - Throws: ``ConfigurationError`` for a backend the registry does not have.
    public func run(_ job: IterationJob) throws -> IterationResult {
        guard let backend = registry.backend(named: job.backend) else {
            throw ConfigurationError("unknown backend '\(job.backend)'")
        }
        let data = WorkloadData(dialogs: job.size.dialogs, messagesPerDialog: job.size.messagesPerDialog, seed: job.seed)
        let printer = ProgressPrinter(label: job.progressLabel)
        let gate = self.gate
        return WorkloadRunner.run(
            job, backend: backend, data: data, measuresMemory: measuresMemory, progress: { printer.show($0) },
            gate: { operation, run in try gate?(operation, run) ?? true })
    }
}

/// Runs each iteration in a child process, `executable worker --job JSON`, so
/// that each backend's peak memory is its own and no backend inherits another's
/// heap; the child prints its ``IterationResult`` as JSON on standard output.
public struct SubprocessExecutor: IterationExecutor {
    /// The program to start: normally this very `storage-bench` binary.
    public let executable: URL
    /// The arguments before the job's JSON.
    public let arguments: [String]
    /// How to run the jobs that count instructions (``IterationJob/countsInstructions``).
    public let callgrind: Callgrind?
    /// Whether the iterations of a paired group run in workers started
    /// together and stepped in turn, operation by operation (``SteppedWorkers``),
    /// rather than one worker after another.
    public let stepsGroups: Bool
    /// Whether the timed workers hash with Swift's fixed seed
    /// (`SWIFT_DETERMINISTIC_HASHING=1`, as the callgrind workers always do)
    /// rather than a random seed per process. A dictionary's layout, and so
    /// how far apart in memory the entries one lookup after another touch,
    /// follows the seed: a reference that answers from dictionaries of
    /// 100,000 records read 13.7–19.5 ms per run in four processes with
    /// random seeds, 18.8–19.9 ms in five with the fixed one. With the fixed
    /// seed every iteration measures the same layout.
    public let fixedHashSeed: Bool

    /// An executor that starts `executable` with `arguments` and the job's JSON,
    /// under `callgrind` for the jobs that count instructions; with
    /// `stepsGroups`, a paired group's workers run in step (``SteppedWorkers``);
    /// with `fixedHashSeed`, timed workers hash with Swift's fixed seed.
    public init(
        executable: URL, arguments: [String] = ["worker", "--job"], callgrind: Callgrind? = nil,
        stepsGroups: Bool = false, fixedHashSeed: Bool = false
    ) {
        self.executable = executable
        self.arguments = arguments
        self.callgrind = callgrind
        self.stepsGroups = stepsGroups
        self.fixedHashSeed = fixedHashSeed
    }

    /// The environment of a timed worker: `nil` (this process's) unless
    /// ``fixedHashSeed``, then this process's with deterministic hashing.
    var timedEnvironment: [String: String]? {
        guard fixedHashSeed else { return nil }
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_DETERMINISTIC_HASHING"] = "1"
        return environment
    }

    /// With ``stepsGroups``, runs a group of two or more timed jobs in step
    /// (``SteppedWorkers``); otherwise one after another.
    public func run(group jobs: [IterationJob]) throws -> [IterationResult] {
        guard stepsGroups, jobs.count > 1, !jobs.contains(where: \.countsInstructions) else {
            return try jobs.map { try run($0) }
        }
        return try SteppedWorkers.run(jobs, executable: executable, arguments: arguments, environment: timedEnvironment)
    }

    /// - Throws: when the worker cannot be started, or a job counts
    ///   instructions and the executor has no ``callgrind``.
    public func run(_ job: IterationJob) throws -> IterationResult {
        guard job.countsInstructions else { return try start(job, callgrindOutput: nil) }
        guard let callgrind else {
            throw ConfigurationError("a job counts instructions but the executor has no callgrind to run it under")
        }
        let directory = try makeScratchDirectory("callgrind")
        defer { removeScratchDirectory(directory) }
        let outputBase = directory.appendingPathComponent("callgrind.out")
        var result = try start(job, callgrindOutput: (callgrind, outputBase))
        guard result.error == nil else { return result }
        do {
            let dumps = try Callgrind.readDumps(outputBase: outputBase)
            for index in result.measurements.indices {
                let name = result.measurements[index].operation.rawValue
                guard let dump = dumps[name] else {
                    result.error = "callgrind wrote no dump for \(name); was the worker built without valgrind's headers?"
                    return result
                }
                result.measurements[index].instructions = dump.instructions
                result.measurements[index].allocations = dump.allocations
            }
        } catch {
            result.error = "the callgrind dumps could not be read: \(error)"
        }
        return result
    }

    private func start(_ job: IterationJob, callgrindOutput: (Callgrind, URL)?) throws -> IterationResult {
        let encoder = JSONEncoder()
        let jobJSON = String(decoding: try encoder.encode(job), as: UTF8.self)
        let process = Process()
        if let (callgrind, outputBase) = callgrindOutput {
            process.executableURL = callgrind.valgrind
            process.arguments = callgrind.arguments(outputBase: outputBase) + [(callgrind.program ?? executable).path] + arguments + [jobJSON]
            process.environment = Callgrind.environment()
            process.currentDirectoryURL = Callgrind.workingDirectory
        } else {
            process.executableURL = executable
            process.arguments = arguments + [jobJSON]
            if let environment = timedEnvironment { process.environment = environment }
        }
        let output = Pipe()
        process.standardOutput = output
        // Standard error is inherited: the worker shows its progress and errors there.
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let how = process.terminationReason == .exit ? "exited with status" : "was killed by signal"
            return IterationResult(job: job, error: "the worker process \(how) \(process.terminationStatus)")
        }
        do {
            return try JSONDecoder().decode(IterationResult.self, from: data)
        } catch {
            return IterationResult(job: job, error: "the worker's result could not be read: \(error)")
        }
    }
}

/// The worker side of ``SubprocessExecutor``: runs one job and returns its
/// result as JSON, with this process's peak memory.
public enum Worker {
    /// Runs the job encoded in `jobJSON` on a backend of `registry`; with
    /// `stepped`, waits for its parent's word before each step
    /// (``SteppedWorkers``).
    /// - Returns: the ``IterationResult`` as JSON (one line).
    /// - Throws: ``ConfigurationError`` for a malformed job or an unknown backend.
    public static func run(jobJSON: String, registry: BackendRegistry, stepped: Bool = false) throws -> String {
        let job: IterationJob
        do {
            job = try JSONDecoder().decode(IterationJob.self, from: Data(jobJSON.utf8))
        } catch {
            throw ConfigurationError("the worker's job is not valid: \(error)")
        }
        if job.countsInstructions && !TimedRegion.canCountInstructions {
            throw ConfigurationError(
                "this storage-bench was built without valgrind's headers and cannot count instructions; "
                    + "install valgrind (scripts/setup.sh instructions), then rebuild it (touch Benchmarks/Sources/CCallgrind/CCallgrind.c first if it was built before)")
        }
        let gate: (@Sendable (BenchOperation, Int) throws -> Bool)? = stepped ? SteppedWorkers.waitForTurn : nil
        var result = try InProcessExecutor(registry: registry, measuresMemory: true, gate: gate).run(job)
        result.peakRSSBytes = MemoryProbe.processPeakBytes()
        return String(decoding: try JSONEncoder().encode(result), as: UTF8.self)
    }
}
