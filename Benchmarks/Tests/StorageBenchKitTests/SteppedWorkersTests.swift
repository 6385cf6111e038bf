import DAOCore
import Foundation
import Testing

@testable import StorageBenchKit

/// A paired group's workers run in step: one step at a time, the earliest
/// first, the group's order for a run 0 and the reverse for a run 1; the
/// runner hands the executor one group at a time.
@Suite struct SteppedWorkersTests {
    /// A scripted worker: the steps it stops at, then its result line; every
    /// step it is let take is written to a shared log.
    final class ScriptedChannel: SteppedWorkers.Channel {
        final class Log {
            var steps: [String] = []
        }
        let name: String
        let log: Log
        var lines: [String]
        var current: String?
        let failsAtGo: Int?
        var goes = 0

        init(_ name: String, steps: [(BenchOperation, Int)], log: Log, failsAtGo: Int? = nil) {
            self.name = name
            self.log = log
            self.failsAtGo = failsAtGo
            lines = steps.map { "step \($0.0.rawValue) \($0.1)" } + ["{\"result\":\"\(name)\"}"]
        }

        func nextLine() -> String? {
            current = lines.isEmpty ? nil : lines.removeFirst()
            return current
        }

        func go() throws {
            goes += 1
            if goes == failsAtGo { throw ConfigurationError("\(name) has gone") }
            if let current { log.steps.append("\(name) \(current.dropFirst(5))") }
        }

        /// As a worker told to stop: the rest of its runs of this operation are skipped.
        func stop() throws {
            guard let current, case .step(let operation, _) = SteppedWorkers.State(line: current) else { return }
            log.steps.append("\(name) stops at \(current.dropFirst(5))")
            lines.removeAll { line in
                if case .step(operation, _) = SteppedWorkers.State(line: line) { return true }
                return false
            }
        }
    }

    static func steps(_ operations: [BenchOperation], runs: [BenchOperation: Int] = [:]) -> [(BenchOperation, Int)] {
        operations.flatMap { operation in (0..<(runs[operation] ?? 1)).map { (operation, $0) } }
    }

    @Test func stepsAlternateAndStayAlignedAndFurtherRunsStopTogether() {
        let log = ScriptedChannel.Log()
        // The backend would run its query three times, its reference five
        // times: both run it three times.
        let a = ScriptedChannel("a", steps: Self.steps([.persist, .query, .update], runs: [.query: 3]), log: log)
        let b = ScriptedChannel("b", steps: Self.steps([.persist, .query, .update], runs: [.query: 5]), log: log)
        let lines = SteppedWorkers.schedule([a, b])
        #expect(lines == ["{\"result\":\"a\"}", "{\"result\":\"b\"}"])
        #expect(
            log.steps == [
                "a persist 0", "b persist 0",
                "a query 0", "b query 0",
                "b query 1", "a query 1",
                "a query 2", "b query 2",
                // `a` has moved on to update: `b` takes no fourth run.
                "b stops at query 3",
                "a update 0", "b update 0",
            ])
    }

    @Test func aFurtherRunStopsForEveryWorkerOnceOneOfThreeHasMovedOn() {
        let log = ScriptedChannel.Log()
        let operations: [BenchOperation] = [.persist, .readById, .update]
        let a = ScriptedChannel("a", steps: Self.steps(operations, runs: [.readById: 4]), log: log)
        let b = ScriptedChannel("b", steps: Self.steps(operations, runs: [.readById: 2]), log: log)
        let c = ScriptedChannel("c", steps: Self.steps(operations, runs: [.readById: 4]), log: log)
        let lines = SteppedWorkers.schedule([a, b, c])
        #expect(lines == ["{\"result\":\"a\"}", "{\"result\":\"b\"}", "{\"result\":\"c\"}"])
        #expect(
            log.steps == [
                "a persist 0", "b persist 0", "c persist 0",
                "a read-by-id 0", "b read-by-id 0", "c read-by-id 0",
                "c read-by-id 1", "b read-by-id 1", "a read-by-id 1",
                "a stops at read-by-id 2", "c stops at read-by-id 2",
                "a update 0", "b update 0", "c update 0",
            ])
    }

    @Test func theGroupsOrderDecidesRunZeroForThreeWorkers() {
        let log = ScriptedChannel.Log()
        let operations: [BenchOperation] = [.persist, .readAll]
        let channels = ["grdb", "sqlite-raw", "sqlite"].map {
            ScriptedChannel($0, steps: Self.steps(operations, runs: [.readAll: 2]), log: log)
        }
        _ = SteppedWorkers.schedule(channels)
        #expect(
            log.steps == [
                "grdb persist 0", "sqlite-raw persist 0", "sqlite persist 0",
                "grdb read-all 0", "sqlite-raw read-all 0", "sqlite read-all 0",
                "sqlite read-all 1", "sqlite-raw read-all 1", "grdb read-all 1",
            ])
    }

    @Test func aWorkerThatEndsEarlyOrCannotBeToldLeavesTheOthersRunning() {
        let log = ScriptedChannel.Log()
        // `a` fails at read-all: it writes its (error) result instead of more steps.
        let a = ScriptedChannel("a", steps: [(.persist, 0), (.readAll, 0)], log: log)
        let b = ScriptedChannel("b", steps: Self.steps([.persist, .readAll, .update]), log: log)
        let c = ScriptedChannel("c", steps: Self.steps([.persist, .readAll, .update]), log: log, failsAtGo: 2)
        let lines = SteppedWorkers.schedule([a, b, c])
        #expect(lines == ["{\"result\":\"a\"}", "{\"result\":\"b\"}", nil])
        #expect(
            log.steps == [
                "a persist 0", "b persist 0", "c persist 0",
                "a read-all 0", "b read-all 0",
                "b update 0",
            ])
    }

    @Test func linesParseAsStepsOrResults() {
        #expect(SteppedWorkers.State(line: "step read-by-id 3") == .step(.readById, 3))
        #expect(SteppedWorkers.State(line: "step nothing 0") == .finished("step nothing 0"))
        #expect(SteppedWorkers.State(line: "step query -1") == .finished("step query -1"))
        #expect(SteppedWorkers.State(line: "{}") == .finished("{}"))
        #expect(SteppedWorkers.State(line: nil) == .finished(nil))
    }

    /// Records the groups it is handed, and runs them in process.
    final class GroupRecorder: IterationExecutor, @unchecked Sendable {
        // @unchecked Sendable is safe: the runner calls it from one thread.
        let inner = InProcessExecutor(
            registry: BackendRegistry([
                PairedRatioTests.dao, PairedRatioTests.raw, PairedRatioTests.other, PairedRatioTests.alone,
            ]))
        var groups: [[String]] = []

        func run(_ job: IterationJob) throws -> IterationResult { try inner.run(job) }

        func run(group jobs: [IterationJob]) throws -> [IterationResult] {
            groups.append(jobs.map(\.backend))
            return try jobs.map { try inner.run($0) }
        }
    }

    @Test func theRunnerHandsTheExecutorOneGroupAtATime() throws {
        let configuration = try RunConfiguration(
            backends: [PairedRatioTests.dao, PairedRatioTests.raw, PairedRatioTests.other, PairedRatioTests.alone],
            sizes: [try BenchSize(dialogs: 4, messagesPerDialog: 2)], iterations: 2, warmup: 0,
            showsProgress: false)
        let recorder = GroupRecorder()
        let results = try BenchmarkRunner(configuration: configuration, executor: recorder).measure()
        #expect(results.count == 8)
        #expect(
            recorder.groups == [
                ["dao", "raw", "other"], ["alone"],
                ["alone"], ["other", "raw", "dao"],
            ])
        // Results keep the order the groups ran in.
        #expect(results.map(\.job.backend) == ["dao", "raw", "other", "alone", "alone", "other", "raw", "dao"])
    }
}
