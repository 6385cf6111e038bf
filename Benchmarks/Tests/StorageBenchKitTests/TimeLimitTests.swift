import Foundation
import Synchronization
import Testing

@testable import StorageBenchKit

/// The extra rounds' time limit holds within a round: a paired group (a
/// backend beside its reference) starts only when it is expected to end
/// within the limit, and runs whole or not at all. Timed by a scripted
/// clock, never by the machine's.
@Suite struct TimeLimitTests {
    static let size = ExtraRoundTests.size
    static let operations: [BenchOperation] = [.persist, .readAll, .query]

    @Test func aGroupIsExpectedToTakeItsOperationsAndTheMedianOverheadOfEachBackend() throws {
        let configuration = try RunConfiguration(
            backends: [PairedRatioTests.dao, PairedRatioTests.raw], sizes: [Self.size],
            operations: [.persist, .readAll, .eraseAll], iterations: 6, warmup: 0, showsProgress: false)
        func result(_ backend: String, round: Int, persist: Double) -> IterationResult {
            let job = IterationJob(
                backend: backend, size: Self.size, seed: 42, durability: .full,
                operations: [.persist, .readAll, .eraseAll], round: round)
            var readAll = OperationMeasurement(operation: .readAll, seconds: 0.5, units: 2)
            readAll.runSeconds = [0.4, 0.5, 0.6]
            var eraseAll = OperationMeasurement(operation: .eraseAll, seconds: 0.1, units: 2)
            eraseAll.runSeconds = [0.1, 0.1]
            eraseAll.restoreSeconds = 0.3
            return IterationResult(
                job: job,
                measurements: [OperationMeasurement(operation: .persist, seconds: persist, units: 2), readAll, eraseAll])
        }
        let results = [
            result("dao", round: 0, persist: 1), result("dao", round: 1, persist: 3), result("dao", round: 2, persist: 2),
            result("raw", round: 0, persist: 4),
        ]
        #expect(RunConfiguration.operationSeconds(results[0]) == 1 + 1.5 + 0.5)
        func job(_ backend: String, _ operations: [BenchOperation]) -> IterationJob {
            IterationJob(backend: backend, size: Self.size, seed: 42, durability: .full, operations: operations, round: 6)
        }
        let overheads = ["dao": [1.0, 5.0, 2.0]]
        // dao: persist's median 2 s, read-all's three runs 1.5 s, overhead's median 2 s.
        #expect(configuration.expectedSeconds(of: [job("dao", [.persist, .readAll])], after: results, overheads: overheads) == 5.5)
        // raw: no overhead known yet; persist 4 s, erase-all's runs and restores 0.5 s.
        let pair = [job("dao", [.persist, .readAll]), job("raw", [.persist, .readAll, .eraseAll])]
        #expect(configuration.expectedSeconds(of: pair, after: results, overheads: overheads) == 5.5 + 4 + 1.5 + 0.5)
    }

    /// Advances a scripted clock by each job's scripted operation seconds
    /// plus a fixed overhead, and keeps each job with when it started and ended.
    final class ClockedExecutor: IterationExecutor, Sendable {
        let now = Mutex(0.0)
        let log = Mutex<[(job: IterationJob, start: Double, end: Double)]>([])
        let overhead: Double
        let seconds: @Sendable (IterationJob, BenchOperation) -> Double

        init(overhead: Double, seconds: @escaping @Sendable (IterationJob, BenchOperation) -> Double) {
            self.overhead = overhead
            self.seconds = seconds
        }

        func run(_ job: IterationJob) throws -> IterationResult {
            let measurements = job.operations.map {
                OperationMeasurement(operation: $0, seconds: seconds(job, $0), units: 2)
            }
            let spent = measurements.reduce(overhead) { $0 + $1.seconds }
            let (start, end) = now.withLock { now in
                defer { now += spent }
                return (now, now + spent)
            }
            log.withLock { $0.append((job, start, end)) }
            return IterationResult(job: job, measurements: measurements)
        }
    }

    @Test func anExtraRoundStartsAGroupOnlyWhenItFitsAndRunsItWhole() throws {
        let limit = 15.0
        let configuration = try RunConfiguration(
            backends: [PairedRatioTests.dao, PairedRatioTests.raw, PairedRatioTests.alone], sizes: [Self.size],
            operations: Self.operations, iterations: 6, warmup: 0, showsProgress: false, maxIterations: 30,
            precision: 0.03, timeLimit: limit)
        // dao's read-all (its ratio to raw) and alone's query (its median)
        // swing from round to round and never settle; everything else takes 1 s.
        let swing = [1.0, 1.5, 0.7, 1.0, 1.2, 0.8]
        let executor = ClockedExecutor(overhead: 1) { job, operation in
            if (job.backend == "dao" && operation == .readAll) || (job.backend == "alone" && operation == .query) {
                return swing[job.round % swing.count]
            }
            return 1
        }
        let runner = BenchmarkRunner(configuration: configuration, executor: executor) {
            executor.now.withLock { $0 }
        }
        _ = try runner.measure()
        let log = executor.log.withLock { $0 }
        let extra = log.filter { $0.job.round >= 6 }
        let started = try #require(log.last(where: { $0.job.round < 6 })).end
        // Round 6: the pair up to read-all (3 s + 3 s), then alone (4 s):
        // 10 s. Round 7: alone first (4 s, 14 s in all); the pair, expected
        // to take 6 s more, does not start; nothing fits in the last second.
        #expect(extra.map { "\($0.job.round) \($0.job.backend)" } == ["6 dao", "6 raw", "6 alone", "7 alone"])
        #expect(try #require(extra.last).end - started <= limit)
        // A backend and its reference took the same rounds.
        for round in Set(extra.map { $0.job.round }) {
            let here = Set(extra.filter { $0.job.round == round }.map { $0.job.backend })
            #expect(here.contains("dao") == here.contains("raw"))
        }
    }

    @Test func noExtraRoundStartsWhenNoGroupFits() throws {
        let configuration = try RunConfiguration(
            backends: [PairedRatioTests.dao, PairedRatioTests.raw], sizes: [Self.size], operations: Self.operations,
            iterations: 6, warmup: 0, showsProgress: false, maxIterations: 30, precision: 0.03, timeLimit: 5)
        let swing = [1.0, 1.5, 0.7, 1.0, 1.2, 0.8]
        let executor = ClockedExecutor(overhead: 1) { job, operation in
            job.backend == "dao" && operation == .readAll ? swing[job.round % swing.count] : 1
        }
        let runner = BenchmarkRunner(configuration: configuration, executor: executor) {
            executor.now.withLock { $0 }
        }
        let results = try runner.measure()
        // A round of the pair is expected to take 6 s, more than the 5 s.
        #expect(results.count == 12)
        #expect(executor.log.withLock { $0 }.allSatisfy { $0.job.round < 6 })
        let line = configuration.extraRoundsSummary(
            results, size: Self.size, durability: .full, end: .nothingFits, rounds: 0, seconds: 0)
        #expect(
            line.hasPrefix(
                "2x1 full: 0 extra rounds in 0 s, ended by --time-limit (5 s): no unsettled group's next round was expected to end within it; still unsettled: dao read-all"
            ))
    }
}
