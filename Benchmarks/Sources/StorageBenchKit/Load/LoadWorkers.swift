import DAOCore
import Foundation

/// One backend × mix of a load sweep, as a load worker runs it: the mix by
/// its file, the backend by its name, and the sweep's overrides.
public struct LoadWorkerJob: Codable, Sendable, Equatable {
    /// The mix file (a built-in mix's resource, or a user's file).
    public var mixFile: String
    /// The backend's name.
    public var backend: String
    /// The options' overrides (``LoadSweepOptions``).
    public var clients: [Int]?
    public var durationSeconds: Double?
    public var operationCount: Int?
    public var targetRate: Double?
    public var warmupSeconds: Double
    /// `full` or `none`.
    public var durability: String

    /// The job of `backend` at the mix in `mixFile` under `options`.
    public init(_ options: LoadSweepOptions, mixFile: String, backend: String) {
        self.mixFile = mixFile
        self.backend = backend
        clients = options.clients
        durationSeconds = options.durationSeconds
        operationCount = options.operationCount
        targetRate = options.targetRate
        warmupSeconds = options.warmupSeconds
        durability = options.durability.rawValue
    }

    /// Runs the job in this process, which runs nothing else, and returns
    /// its results as JSON (each with the process's peak memory).
    /// - Throws: ``ConfigurationError`` for a job that cannot be run (an
    ///   unknown backend or durability); ``LoadMixError`` for a refused mix.
    public static func run(
        jobJSON: String, registry: LoadBackendRegistry, progress: (String) -> Void, problems: (String) -> Void
    ) async throws -> String {
        let job: LoadWorkerJob
        do {
            job = try JSONDecoder().decode(LoadWorkerJob.self, from: Data(jobJSON.utf8))
        } catch {
            throw ConfigurationError("the load job is not valid JSON: \(error)")
        }
        guard let durability = Durability(rawValue: job.durability) else {
            throw ConfigurationError("unknown durability '\(job.durability)' in the load job")
        }
        let mix = try LoadMix.load(URL(fileURLWithPath: job.mixFile))
        guard let backend = registry.backends.first(where: { $0.name == job.backend }) else {
            throw ConfigurationError("unknown backend '\(job.backend)' in the load job")
        }
        let options = LoadSweepOptions(
            mixes: [mix], backends: [backend], clients: job.clients, durationSeconds: job.durationSeconds,
            operationCount: job.operationCount, targetRate: job.targetRate, warmupSeconds: job.warmupSeconds,
            durability: durability)
        let results = await LoadSweep.runBackend(
            backend, mix: mix, data: LoadData(mix: mix), counts: job.clients ?? mix.clients, options: options,
            measuresProcessPeak: true, progress: progress, problems: problems)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(results), as: UTF8.self)
    }
}

/// Starts a load worker per backend × mix (`executable load-worker --job
/// JSON`), which prints its results as JSON on standard output; its progress
/// and problems go to the terminal through its standard error.
public struct LoadWorkers: Sendable {
    /// The program to start: normally this very `storage-bench` binary.
    public let executable: URL
    /// The arguments before the job's JSON.
    public let arguments: [String]

    /// Workers started as `executable` with `arguments` and the job's JSON.
    public init(executable: URL, arguments: [String] = ["load-worker", "--job"]) {
        self.executable = executable
        self.arguments = arguments
    }

    /// A worker that failed: it exited with a status other than 0, or what it
    /// printed is not its results.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs `job` in a worker and returns its results; the wait holds a
    /// thread of its own, not one of the cooperative pool.
    /// - Throws: ``Failure`` when the worker fails; an error of `Process` when it cannot start.
    public func run(_ job: LoadWorkerJob) async throws -> [LoadRunResult] {
        let json = String(decoding: try JSONEncoder().encode(job), as: UTF8.self)
        let executable = executable
        let arguments = arguments + [json]
        let (status, output) = try await onOwnThread { () throws -> (Int32, Data) in
            let process = Process()
            process.executableURL = executable
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let output = try pipe.fileHandleForReading.readToEnd() ?? Data()
            process.waitUntilExit()
            return (process.terminationStatus, output)
        }
        guard status == 0 else {
            throw Failure(description: "its load worker exited with status \(status)")
        }
        do {
            return try JSONDecoder().decode([LoadRunResult].self, from: output)
        } catch {
            throw Failure(description: "its load worker printed no results (\(error))")
        }
    }
}
