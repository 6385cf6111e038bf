import DAOCore
import Foundation
import Testing

@testable import StorageBenchKit

/// Extra rounds go where a figure is still uncertain: only the backends with
/// an unsettled figure, beside their reference, and only up to the last
/// uncertain operation; the report takes each operation's figures from the
/// iterations that ran it.
@Suite struct ExtraRoundTests {
    static let size = try! BenchSize(dialogs: 2, messagesPerDialog: 1)
    static let operations: [BenchOperation] = [.persist, .readAll, .query, .eraseAll]

    static let dao = PairedRatioTests.dao
    static let other = PairedRatioTests.other
    static let raw = PairedRatioTests.raw
    static let alone = PairedRatioTests.alone

    /// One iteration of `backend` in `round` that ran `operations`, each
    /// taking `seconds(operation)`.
    static func result(
        _ backend: String, round: Int, operations: [BenchOperation] = operations,
        seconds: (BenchOperation) -> Double
    ) -> IterationResult {
        let job = IterationJob(
            backend: backend, size: size, seed: 42, durability: .full, operations: operations, round: round)
        var result = IterationResult(
            job: job,
            measurements: operations.map { OperationMeasurement(operation: $0, seconds: seconds($0), units: 2) })
        result.bytesOnDisk = operations == Self.operations ? 1000 : 1
        result.peakRSSBytes = operations == Self.operations ? 5000 : 1
        result.workloadPeakRSSBytes = operations == Self.operations ? 3000 : 1
        return result
    }

    static func configuration(_ backends: [Backend]) throws -> RunConfiguration {
        try RunConfiguration(
            backends: backends, sizes: [size], operations: operations, iterations: 6, warmup: 0,
            showsProgress: false, maxIterations: 30, precision: 0.03)
    }

    /// Six rounds in which every backend's ratio to `raw` and every median is
    /// steady, except `dao`'s read-all, whose ratio to `raw` swings round by round.
    static func sixRounds(noisy: (String, BenchOperation)? = ("dao", .readAll)) -> [IterationResult] {
        let swing = [1.0, 1.5, 0.7, 1.0, 1.2, 0.8]
        return (0..<6).flatMap { round in
            ["dao", "other", "raw", "alone"].map { backend in
                result(backend, round: round) { operation in
                    if let noisy, noisy == (backend, operation) { return swing[round] }
                    return backend == "raw" ? 1 : 2
                }
            }
        }
    }

    @Test func onlyTheUnsettledBackendRunsBesideItsReferenceUpToItsLastUncertainOperation() throws {
        let configuration = try Self.configuration([Self.dao, Self.raw, Self.other, Self.alone])
        let results = Self.sixRounds()
        #expect(configuration.unsettledOperations(results) == ["dao": [.readAll]])
        let jobs = configuration.extraRound(6, after: results, size: Self.size, durability: .full)
        // Round 6 is even: the backend first, then its reference; `other` and
        // `alone` are settled and do not run.
        #expect(jobs.map(\.backend) == ["dao", "raw"])
        #expect(jobs.allSatisfy { $0.operations == [.persist, .readAll] && $0.round == 6 && !$0.isWarmup })
        #expect(configuration.extraRound(7, after: results, size: Self.size, durability: .full).map(\.backend) == [
            "raw", "dao",
        ])
        // Another size or durability has no results yet, so nothing to settle there.
        #expect(configuration.extraRound(6, after: results, size: Self.size, durability: .none).isEmpty)
    }

    @Test func theSummarySaysWhatEndedTheRoundsAndWhatIsStillWide() throws {
        let configuration = try Self.configuration([Self.dao, Self.raw, Self.other, Self.alone])
        // dao's read-all and other's query swing, other's more, so other's
        // comes first; one round more of other's query than of dao's read-all.
        let swing = [1.0, 1.5, 0.7, 1.0, 1.2, 0.8, 1.0]
        let results = (0..<7).flatMap { round in
            ["dao", "other", "raw", "alone"].compactMap { backend -> IterationResult? in
                if round == 6 && backend != "other" && backend != "raw" { return nil }
                return Self.result(backend, round: round) { operation in
                    if backend == "dao" && operation == .readAll { return 2 * swing[round] }
                    if backend == "other" && operation == .query { return 2 * swing[round] * swing[round] }
                    return backend == "raw" ? 1 : 2
                }
            }
        }
        let widths = configuration.unsettledWidths(results)
        let daoWidth = try #require(widths["dao"]?[.readAll]) * 0.03 * 100
        let otherWidth = try #require(widths["other"]?[.query]) * 0.03 * 100
        #expect(otherWidth > daoWidth)
        let line = configuration.extraRoundsSummary(
            results, size: Self.size, durability: .full, end: .timeLimit, rounds: 1, seconds: 12.4)
        #expect(
            line == "2x1 full: 1 extra rounds in 12 s, ended by --time-limit (60 s); still unsettled: "
                + String(format: "other query ±%.1f%% (7 rounds), dao read-all ±%.1f%% (6 rounds)", otherWidth, daoWidth))
        let settled = configuration.extraRoundsSummary(
            Self.sixRounds(noisy: nil), size: Self.size, durability: .full, end: .settled, rounds: 0, seconds: 0)
        #expect(settled == "2x1 full: 0 extra rounds in 0 s, every figure within ±3%")
        let capped = configuration.extraRoundsSummary(
            results, size: Self.size, durability: .full, end: .maxIterations, rounds: 24, seconds: 100)
        #expect(capped.contains("ended at --max-iterations (30); still unsettled: other query"))
        // On a terminal: one short line, the unsettled figures counted (the warnings list them).
        let brief = configuration.extraRoundsSummary(
            results, size: Self.size, durability: .full, end: .maxIterations, rounds: 24, seconds: 100, brief: true)
        #expect(brief == "2x1 full: 24 extra rounds in 100 s (--max-iterations reached); 2 figures still unsettled")
        // A log line: the twelve widest, then how many more.
        let many = try RunConfiguration(
            backends: (0..<14).map { Backend(name: "b\($0)", subject: { _, _ in MemorySubject() }) }, sizes: [Self.size],
            operations: Self.operations, iterations: 6, warmup: 0, showsProgress: false, maxIterations: 30)
        let wide = (0..<6).flatMap { round in
            (0..<14).map { index in Self.result("b\(index)", round: round) { _ in swing[round] * Double(index + 1) } }
        }
        let long = many.extraRoundsSummary(wide, size: Self.size, durability: .full, end: .timeLimit, rounds: 0, seconds: 0)
        #expect(long.hasSuffix(" and \(14 * Self.operations.count - 12) more"))
        #expect(long.components(separatedBy: " rounds)").count - 1 == 12)
    }

    @Test func aSettledRunHasNoExtraRound() throws {
        let configuration = try Self.configuration([Self.dao, Self.raw, Self.other, Self.alone])
        let results = Self.sixRounds(noisy: nil)
        #expect(configuration.unsettledOperations(results).isEmpty)
        #expect(configuration.extraRound(6, after: results, size: Self.size, durability: .full).isEmpty)
    }

    @Test func aReferencesOwnMedianDoesNotAskForRoundsButALoneBackendsDoes() throws {
        let configuration = try Self.configuration([Self.dao, Self.raw, Self.other, Self.alone])
        // The reference's query time swings, and the backends' with it: the
        // ratios stay steady, so no round is needed for them.
        let swing = [1.0, 1.5, 0.7, 1.0, 1.2, 0.8]
        let results = (0..<6).flatMap { round in
            ["dao", "other", "raw", "alone"].map { backend in
                Self.result(backend, round: round) { operation in
                    let base = backend == "raw" ? 1.0 : 2.0
                    if operation == .query && backend != "alone" { return base * swing[round] }
                    if operation == .eraseAll && backend == "alone" { return swing[round] }
                    return base
                }
            }
        }
        #expect(configuration.unsettledOperations(results) == ["alone": [.eraseAll]])
        let jobs = configuration.extraRound(6, after: results, size: Self.size, durability: .full)
        #expect(jobs.map(\.backend) == ["alone"])
        #expect(jobs.first?.operations == Self.operations)
    }

    @Test func aGroupRunsUpToTheLastOperationAnyOfItsBackendsNeeds() throws {
        let configuration = try Self.configuration([Self.dao, Self.raw, Self.other])
        let swing = [1.0, 1.5, 0.7, 1.0, 1.2, 0.8]
        let results = (0..<6).flatMap { round in
            ["dao", "other", "raw"].map { backend in
                Self.result(backend, round: round) { operation in
                    if backend == "dao" && operation == .readAll { return swing[round] }
                    if backend == "other" && operation == .query { return swing[round] }
                    return backend == "raw" ? 1 : 2
                }
            }
        }
        #expect(configuration.unsettledOperations(results) == ["dao": [.readAll], "other": [.query]])
        let jobs = configuration.extraRound(6, after: results, size: Self.size, durability: .full)
        #expect(jobs.map(\.backend) == ["dao", "raw", "other"])
        #expect(jobs.allSatisfy { $0.operations == [.persist, .readAll, .query] })
    }

    /// Six rounds of `dao` beside `raw` in which read-all's ratio swings by
    /// `readAllSwing` and erase-all's by `eraseAllSwing`; erase-all comes
    /// after a query that takes `querySeconds` on each side.
    static func twoUncertainOperations(
        readAllSwing: [Double], eraseAllSwing: [Double], querySeconds: Double
    ) -> [IterationResult] {
        (0..<6).flatMap { round in
            ["dao", "raw"].map { backend in
                Self.result(backend, round: round) { operation in
                    let base = backend == "raw" ? 1.0 : 2.0
                    guard backend == "dao" else { return operation == .query ? querySeconds : base }
                    switch operation {
                    case .readAll: return base * readAllSwing[round]
                    case .eraseAll: return base * eraseAllSwing[round]
                    case .query: return querySeconds
                    default: return base
                    }
                }
            }
        }
    }

    @Test func roundsGoWhereTheWidthIsForTheTimeTheyCost() throws {
        let configuration = try Self.configuration([Self.dao, Self.raw])
        let wide = [1.0, 1.5, 0.7, 1.0, 1.2, 0.8]
        let narrow = [1.0, 1.05, 0.96, 1.0, 1.04, 0.97]
        // read-all's ratio is far wider than erase-all's: each unsettled.
        let uneven = Self.twoUncertainOperations(readAllSwing: wide, eraseAllSwing: narrow, querySeconds: 30)
        let widths = try #require(configuration.unsettledWidths(uneven)["dao"])
        #expect(Set(widths.keys) == [.readAll, .eraseAll])
        #expect((widths[.readAll] ?? 0) > 5 * (widths[.eraseAll] ?? 0))
        #expect(configuration.extraRound(6, after: uneven, size: Self.size, durability: .full).allSatisfy {
            $0.operations == [.persist, .readAll]
        })
        // Both as wide, but erase-all needs a slow query run first: the round stops after read-all.
        let slowQuery = Self.twoUncertainOperations(readAllSwing: wide, eraseAllSwing: wide, querySeconds: 30)
        let jobs = configuration.extraRound(6, after: slowQuery, size: Self.size, durability: .full)
        #expect(jobs.map(\.backend) == ["dao", "raw"])
        #expect(jobs.allSatisfy { $0.operations == [.persist, .readAll] })
        // Both as wide and a quick query: one round serves both for little more time.
        let quickQuery = Self.twoUncertainOperations(readAllSwing: wide, eraseAllSwing: wide, querySeconds: 0.01)
        #expect(
            configuration.extraRound(6, after: quickQuery, size: Self.size, durability: .full)
                .allSatisfy { $0.operations == Self.operations })
        // After rounds that stopped at read-all, erase-all, which had none of
        // them, draws the next one.
        var starved = Self.twoUncertainOperations(readAllSwing: wide, eraseAllSwing: wide, querySeconds: 3)
        #expect(configuration.extraRound(6, after: starved, size: Self.size, durability: .full).allSatisfy {
            $0.operations == [.persist, .readAll]
        })
        for round in 6..<16 {
            for backend in ["dao", "raw"] {
                starved.append(
                    Self.result(backend, round: round, operations: [.persist, .readAll]) { operation in
                        backend == "raw" ? 1 : (operation == .readAll ? 2 * wide[round % 6] : 2)
                    })
            }
        }
        #expect(configuration.unsettledOperations(starved) == ["dao": [.readAll, .eraseAll]])
        #expect(
            configuration.extraRound(16, after: starved, size: Self.size, durability: .full)
                .allSatisfy { $0.operations == Self.operations })
        // Once read-all has settled, erase-all draws the rounds, whatever they cost.
        let settled = Self.twoUncertainOperations(
            readAllSwing: Array(repeating: 1, count: 6), eraseAllSwing: narrow, querySeconds: 30)
        #expect(configuration.unsettledOperations(settled) == ["dao": [.eraseAll]])
        #expect(
            configuration.extraRound(6, after: settled, size: Self.size, durability: .full)
                .allSatisfy { $0.operations == Self.operations })
    }

    @Test func theRoundsEndWeighsWidthPerRoundAgainstTheSecondsUpToEachOperation() {
        let operations: [BenchOperation] = [.persist, .readAll, .readById, .update, .eraseAll]
        let costs: [BenchOperation: Double] = [.persist: 1, .readAll: 1, .readById: 1, .update: 1, .eraseAll: 6]
        // 4 / 2 = 2 at read-all; (4 + 1) / 10 at erase-all.
        #expect(
            RunConfiguration.roundEnd(operations: operations, widths: [.readAll: 4, .eraseAll: 1], costs: costs) == 1)
        // 1.5 / 2 at read-all; (1.5 + 6) / 10 = 0.75 at erase-all: a tie goes to the later one.
        #expect(
            RunConfiguration.roundEnd(operations: operations, widths: [.readAll: 1.5, .eraseAll: 6], costs: costs)
                == 4)
        // A wide figure early, a wider one late.
        #expect(
            RunConfiguration.roundEnd(operations: operations, widths: [.readById: 2, .eraseAll: 40], costs: costs)
                == 4)
        // A figure with few rounds weighs more than one with many: (4 ÷ 30) ÷ 2
        // at read-all against (4 ÷ 30 + 1 ÷ 6) ÷ 10, then (4 ÷ 30 + 1) ÷ 10.
        #expect(
            RunConfiguration.roundEnd(
                operations: operations, widths: [.readAll: 4, .eraseAll: 1], costs: costs,
                rounds: [.readAll: 30, .eraseAll: 6]) == 1)
        #expect(
            RunConfiguration.roundEnd(
                operations: operations, widths: [.readAll: 4, .eraseAll: 1], costs: costs,
                rounds: [.readAll: 30, .eraseAll: 1]) == 4)
        // Nothing measured yet: every unsettled operation up to the last.
        #expect(RunConfiguration.roundEnd(operations: operations, widths: [.readAll: 2, .update: 1.1], costs: [:]) == 3)
        #expect(RunConfiguration.roundEnd(operations: operations, widths: [:], costs: costs) == nil)
    }

    @Test func anOperationsCostAddsUpItsInPlaceRuns() throws {
        let configuration = try Self.configuration([Self.dao, Self.raw])
        var results = (0..<3).map { round in Self.result("dao", round: round) { _ in 2 } }
        for index in results.indices {
            results[index].measurements[1].runSeconds = [2, 2, 3]
        }
        let costs = configuration.operationCosts(results, backend: "dao")
        #expect(costs[.persist] == 2)
        #expect(costs[.readAll] == 7)
        #expect(configuration.operationCosts(results, backend: "raw")[.readAll] == 0)
    }

    @Test func theReportTakesEachOperationFromTheIterationsThatRanIt() throws {
        let configuration = try Self.configuration([Self.dao, Self.raw])
        // Six full rounds, then four that stop after read-all: read-all's
        // ratio is 0.5 in the full rounds and 0.25 in the short ones.
        var results = (0..<6).flatMap { round in
            ["dao", "raw"].map { backend in Self.result(backend, round: round) { _ in backend == "raw" ? 1 : 2 } }
        }
        results += (6..<10).flatMap { round in
            ["dao", "raw"].map { backend in
                Self.result(backend, round: round, operations: [.persist, .readAll]) { operation in
                    backend == "raw" ? 1 : (operation == .readAll ? 4 : 2)
                }
            }
        }
        let report = ReportBuilder.report(
            of: results, configuration: configuration, provenance: CountedReportTests.provenance)
        func row(_ backend: String, _ operation: BenchOperation) throws -> ReportRow {
            try #require(report.rows.first { $0.backend == backend && $0.operation == operation.rawValue })
        }
        for backend in ["dao", "raw"] {
            #expect(try row(backend, .persist).iterations == 10)
            #expect(try row(backend, .readAll).iterations == 10)
            #expect(try row(backend, .query).iterations == 6)
            #expect(try row(backend, .eraseAll).iterations == 6)
            for operation in Self.operations {
                let figures = try row(backend, operation)
                #expect(figures.error.isEmpty)
                // Memory and disk come from the complete iterations only.
                #expect(figures.bytesOnDisk == 1000 && figures.peakRSSBytes == 5000)
                #expect(figures.peakRSSWorkloadBytes == 3000)
            }
        }
        #expect(try row("dao", .query).ratioPaired == 0.5)
        // Ten per-round ratios of read-all, four of them 0.25: the median is
        // still 0.5, and the interval reaches down to 0.25.
        let readAll = try row("dao", .readAll)
        #expect(readAll.ratioPaired == 0.5 && readAll.ratioPairedLow == 0.25 && readAll.ratioPairedHigh == 0.5)
        #expect(SummaryTable.detailed(report).contains("median of 6–10 iterations"))
    }

    /// Returns scripted timings for the operations each job asks for, and
    /// keeps the jobs it was given.
    final class ScriptedExecutor: IterationExecutor, @unchecked Sendable {
        let lock = NSLock()
        var jobs: [IterationJob] = []
        let seconds: @Sendable (IterationJob, BenchOperation) -> Double

        init(seconds: @escaping @Sendable (IterationJob, BenchOperation) -> Double) { self.seconds = seconds }

        func run(_ job: IterationJob) throws -> IterationResult {
            lock.withLock { jobs.append(job) }
            return IterationResult(
                job: job,
                measurements: job.operations.map {
                    OperationMeasurement(operation: $0, seconds: seconds(job, $0), units: 2)
                })
        }
    }

    @Test func theRunnerRunsShortExtraRoundsOfTheUnsettledPairOnly() throws {
        let configuration = try RunConfiguration(
            backends: [Self.dao, Self.raw, Self.alone], sizes: [Self.size], operations: [.persist, .readAll, .query],
            iterations: 6, warmup: 1, showsProgress: false, maxIterations: 9, precision: 0.03, timeLimit: 600)
        // dao's read-all swings from round to round, the rest is steady.
        let executor = ScriptedExecutor { job, operation in
            guard job.backend == "dao", operation == .readAll else { return 1 }
            return [1.0, 1.5, 0.7, 1.0, 1.2, 0.8][job.round % 6]
        }
        let results = try BenchmarkRunner(configuration: configuration, executor: executor).measure()
        let extra = executor.jobs.filter { $0.round >= 7 }
        // Three extra rounds (9 iterations at most), of the pair, up to read-all.
        #expect(extra.map(\.backend) == ["raw", "dao", "dao", "raw", "raw", "dao"])
        #expect(extra.allSatisfy { $0.operations == [.persist, .readAll] })
        #expect(results.count == 6 * 3 + 6)  // the warm-up round is not kept
        let report = ReportBuilder.report(
            of: results, configuration: configuration, provenance: CountedReportTests.provenance)
        let iterations = Dictionary(
            uniqueKeysWithValues: report.rows.map { ("\($0.backend) \($0.operation)", $0.iterations) })
        #expect(iterations["dao read-all"] == 9 && iterations["raw read-all"] == 9)
        #expect(iterations["dao query"] == 6 && iterations["alone read-all"] == 6)
        #expect(report.rows.allSatisfy { $0.error.isEmpty })
    }
}
