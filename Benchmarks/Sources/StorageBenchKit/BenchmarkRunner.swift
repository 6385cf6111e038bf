import DAOCore
import DialogGraph
import Foundation
import Synchronization

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
                    // On a terminal the line is progress, rewritten by the next: the
                    // warnings line counts the unsettled figures, --verbose lists them.
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
