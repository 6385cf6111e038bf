import DialogGraph
import Foundation

/// Runs one iteration somewhere: in this process, or in a worker process of its own.
public protocol IterationExecutor: Sendable {
    /// Runs `job` and returns what it measured. A backend's failure is the
    /// result's ``IterationResult/error``; this throws only when the job could
    /// not be run at all.
    func run(_ job: IterationJob) throws -> IterationResult
}

/// Runs iterations in the calling process: for tests and for embedding the
/// harness; peak memory is not reported, since one process holds every backend.
public struct InProcessExecutor: IterationExecutor {
    /// Where backends are looked up by name.
    public let registry: BackendRegistry

    /// An executor over `registry`.
    public init(registry: BackendRegistry) {
        self.registry = registry
    }

    /// - Throws: ``ConfigurationError`` for a backend the registry does not have.
    public func run(_ job: IterationJob) throws -> IterationResult {
        guard let backend = registry.backend(named: job.backend) else {
            throw ConfigurationError("unknown backend '\(job.backend)'")
        }
        let data = WorkloadData(dialogs: job.size.dialogs, messagesPerDialog: job.size.messagesPerDialog, seed: job.seed)
        let printer = ProgressPrinter(label: job.progressLabel)
        let result = WorkloadRunner.run(job, backend: backend, data: data) { printer.show($0) }
        return result
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

    /// An executor that starts `executable` with `arguments` and the job's JSON.
    public init(executable: URL, arguments: [String] = ["worker", "--job"]) {
        self.executable = executable
        self.arguments = arguments
    }

    /// - Throws: when the worker cannot be started.
    public func run(_ job: IterationJob) throws -> IterationResult {
        let encoder = JSONEncoder()
        let jobJSON = String(decoding: try encoder.encode(job), as: UTF8.self)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments + [jobJSON]
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
    /// Runs the job encoded in `jobJSON` on a backend of `registry`.
    /// - Returns: the ``IterationResult`` as JSON (one line).
    /// - Throws: ``ConfigurationError`` for a malformed job or an unknown backend.
    public static func run(jobJSON: String, registry: BackendRegistry) throws -> String {
        let job: IterationJob
        do {
            job = try JSONDecoder().decode(IterationJob.self, from: Data(jobJSON.utf8))
        } catch {
            throw ConfigurationError("the worker's job is not valid: \(error)")
        }
        var result = try InProcessExecutor(registry: registry).run(job)
        result.peakRSSBytes = SystemInfo.peakResidentBytes()
        return String(decoding: try JSONEncoder().encode(result), as: UTF8.self)
    }
}
