import Foundation
import TestSupport
import Testing

@testable import StorageBenchKit

@Suite struct MedianIntervalTests {
    @Test func fiveValuesCannotReachNinetyFivePercent() throws {
        let interval = try #require(MedianInterval([3, 1, 2, 5, 4]))
        #expect(interval.low == 1 && interval.high == 5)
        #expect(interval.coverage == 1 - 2.0 / 32)
        #expect(interval.coverage < 0.95)
    }

    @Test func sixValuesReachItWithTheExtremes() throws {
        let interval = try #require(MedianInterval([6, 1, 2, 5, 4, 3]))
        #expect(interval.low == 1 && interval.high == 6)
        #expect(interval.coverage == 1 - 2.0 / 64)
    }

    @Test func twentyValuesUseTheSixthAndFifteenth() throws {
        // P(B ≤ 5) = 0.0207 for B ~ Binomial(20, ½): [x(6), x(15)] covers 95.9%.
        let values = (1...20).map(Double.init).shuffled()
        let interval = try #require(MedianInterval(values))
        #expect(interval.low == 6 && interval.high == 15)
        #expect(abs(interval.coverage - 0.958610) < 1e-5)
        #expect(abs(interval.relativeHalfWidth(around: 10.5) - 4.5 / 10.5) < 1e-12)
    }

    @Test func outliersOutsideTheOrderStatisticsDoNotWidenIt() throws {
        var values = [Double](repeating: 1.0, count: 18)
        values += [50, 0.001]
        let interval = try #require(MedianInterval(values))
        #expect(interval.low == 1 && interval.high == 1)
        #expect(interval.relativeHalfWidth(around: 1) == 0)
        #expect(MedianInterval([]) == nil)
    }
}

@Suite struct CallgrindTests {
    /// The shape of a dump callgrind 3.19 writes with --compress-strings=no.
    static let dump = """
        # callgrind format
        version: 1
        creator: callgrind-3.19.0
        pid: 21182
        part: 5

        desc: I1 cache: 
        desc: Timerange: Basic block 32253228 - 39393107
        desc: Trigger: Client Request: update

        positions: line
        events: Ir
        summary: 23208137

        ob=/usr/lib/x86_64-linux-gnu/libc.so.6
        fl=./malloc/malloc.c
        fn=swift_slowAlloc
        3579 3
        cob=/usr/lib/x86_64-linux-gnu/libc.so.6
        cfi=./malloc/malloc.c
        cfn=malloc
        calls=51 3281 
        3531 41
        cfn=_int_malloc
        calls=7 3281 
        3531 41
        fn=grow
        cfn=realloc'2
        calls=4 12 
        12 400
        cfn=posix_memalign
        calls=6 1 
        1 70
        fn=other
        calls=1000 5 
        5 5
        cfn=calloc
        calls=2 9 
        9 9

        totals: 23208137
        """

    @Test func aDumpGivesItsOperationInstructionsAndAllocatorCalls() throws {
        let dump = try Callgrind.parse(Self.dump)
        #expect(dump.name == "update")
        #expect(dump.instructions == 23_208_137)
        // malloc 51 + realloc 4 + posix_memalign 6 + calloc 2; not _int_malloc,
        // not a call whose callee was named before another function began.
        #expect(dump.allocations == 63)
    }

    @Test func aDumpWithoutTotalsIsRefused() {
        #expect(throws: ConfigurationError.self) { try Callgrind.parse("desc: Trigger: Client Request: persist\n") }
    }

    @Test func theLastDumpIsNotAnOperation() throws {
        let text = "desc: Trigger: Program termination\nevents: Ir\ntotals: 0\n"
        #expect(try Callgrind.parse(text).name == "Program termination")
    }

    @Test func dumpsAreReadByOperationName() throws {
        try withTemporaryDirectory { directory in
            let base = directory.appendingPathComponent("callgrind.out")
            try Data(Self.dump.utf8).write(to: directory.appendingPathComponent("callgrind.out.1"))
            try Data("desc: Trigger: Program termination\nevents: Ir\ntotals: 0\n".utf8)
                .write(to: directory.appendingPathComponent("callgrind.out"))
            try Data("not a dump".utf8).write(to: directory.appendingPathComponent("callgrind.out-valgrind.log"))
            let dumps = try Callgrind.readDumps(outputBase: base)
            #expect(dumps.keys.sorted() == ["update"])
            #expect(dumps["update"]?.allocations == 63)
        }
    }

    /// An operation's regions each give a dump of its name, added up; the
    /// dumps written at each region's start (the costs between regions:
    /// the data generated, the checks, with their allocations) are skipped.
    @Test func anOperationsDumpsAreAddedUpAndTheGapsBetweenRegionsSkipped() throws {
        try withTemporaryDirectory { directory in
            let base = directory.appendingPathComponent("callgrind.out")
            func dump(_ name: String, instructions: Int, mallocs: Int) -> String {
                """
                desc: Trigger: Client Request: \(name)
                events: Ir
                fn=work
                cfn=malloc
                calls=\(mallocs) 3
                4 100

                totals: \(instructions)

                """
            }
            let files = [
                dump(TimedRegion.gapDumpName, instructions: 900_000, mallocs: 5_000),
                dump("persist-single", instructions: 1_000, mallocs: 7),
                dump(TimedRegion.gapDumpName, instructions: 800_000, mallocs: 3_000),
                dump("persist-single", instructions: 2_000, mallocs: 5),
                dump(TimedRegion.gapDumpName, instructions: 700_000, mallocs: 2_000),
                dump("update", instructions: 3_000, mallocs: 11),
            ]
            for (number, text) in files.enumerated() {
                try Data(text.utf8).write(to: directory.appendingPathComponent("callgrind.out.\(number + 1)"))
            }
            let dumps = try Callgrind.readDumps(outputBase: base)
            #expect(dumps.keys.sorted() == ["persist-single", "update"])
            #expect(dumps["persist-single"]?.instructions == 3_000)
            #expect(dumps["persist-single"]?.allocations == 12)
            #expect(dumps["update"]?.instructions == 3_000)
            #expect(dumps["update"]?.allocations == 11)
        }
    }

    @Test func outsideValgrindTheClientRequestsDoNothing() {
        #expect(!TimedRegion.isRunningOnValgrind)
        let start = TimedRegion.begin()
        #expect(TimedRegion.seconds(since: start, in: .persist) >= 0)
    }

    /// Callgrind counts an arc's calls even while collection is off, so the
    /// collection must run throughout and each region be bracketed by dumps.
    @Test func callgrindCollectsThroughout() {
        let arguments = Callgrind(valgrind: URL(fileURLWithPath: "/usr/bin/valgrind"))
            .arguments(outputBase: URL(fileURLWithPath: "/tmp/callgrind.out"))
        #expect(arguments.contains("--collect-atstart=yes"))
        #expect(!arguments.contains("--collect-atstart=no"))
    }
}

@Suite struct CountedReportTests {
    static let provenance = Provenance(
        runId: "t", timestamp: "now", gitCommit: "", host: "h", os: "o", cpu: "c", swiftVersion: "6", build: "debug")

    static func result(
        _ configuration: RunConfiguration, seconds: Double, instructions: Int64? = nil, counts: Bool = false
    ) -> IterationResult {
        var job = IterationJob(
            backend: "memory", size: configuration.sizes[0], seed: 42, durability: .full,
            operations: [.persist])
        job.countsInstructions = counts
        return IterationResult(
            job: job,
            measurements: [
                OperationMeasurement(
                    operation: .persist, seconds: seconds, units: 2, instructions: instructions,
                    allocations: instructions.map { $0 / 100 })
            ])
    }

    @Test func countsComeFromTheCallgrindIterationsAndTimesFromTheOthers() throws {
        let configuration = try RunConfiguration(
            backends: [TestBackends.memory], sizes: [BenchSize(dialogs: 2, messagesPerDialog: 1)],
            operations: [.persist], iterations: 6, showsProgress: false)
        var results = [1.0, 1.1, 0.9, 1.2, 1.05, 0.95].map { Self.result(configuration, seconds: $0) }
        // Callgrind iterations run for minutes: their wall time must not count.
        results += [1000, 1002, 1001].map { Self.result(configuration, seconds: 99, instructions: $0, counts: true) }
        let row = try #require(
            ReportBuilder.report(of: results, configuration: configuration, provenance: Self.provenance).rows.first)
        #expect(row.iterations == 6)
        #expect(row.maxSeconds == 1.2)
        #expect(row.instructions == 1001)
        #expect(row.allocations == 10)
        #expect(row.ciLowSeconds == 0.9 && row.ciHighSeconds == 1.2)
        let parsed = try #require(try Report(csv: Report(rows: [row]).csv()).rows.first)
        #expect(parsed.instructions == 1001 && parsed.allocations == 10)
        #expect(parsed.ciLowSeconds == 0.9 && parsed.ciHighSeconds == 1.2)
    }

    @Test func withoutCallgrindTheCountsAreEmpty() throws {
        let configuration = try RunConfiguration(
            backends: [TestBackends.memory], sizes: [BenchSize(dialogs: 2, messagesPerDialog: 1)],
            operations: [.persist], iterations: 1, showsProgress: false)
        let row = try #require(
            ReportBuilder.report(
                of: [Self.result(configuration, seconds: 1)], configuration: configuration, provenance: Self.provenance
            ).rows.first)
        #expect(row.instructions == nil && row.allocations == nil)
        let fields = Dictionary(uniqueKeysWithValues: zip(ReportRow.columns, row.fields))
        #expect(fields["instructions"] == "" && fields["allocations"] == "")
        #expect(ReportRow.columns[35..<39] == ["instructions", "allocations", "ci_low", "ci_high"])
    }

    @Test func aReportWithoutTheNewColumnsStillReads() throws {
        let header = ReportRow.columns.prefix(33)
        let row = try #require(
            ReportBuilder.report(
                of: [Self.result(try RunConfiguration(
                    backends: [TestBackends.memory], sizes: [BenchSize(dialogs: 2, messagesPerDialog: 1)],
                    operations: [.persist], iterations: 1, showsProgress: false), seconds: 1)],
                configuration: try RunConfiguration(
                    backends: [TestBackends.memory], sizes: [BenchSize(dialogs: 2, messagesPerDialog: 1)],
                    operations: [.persist], iterations: 1, showsProgress: false),
                provenance: Self.provenance
            ).rows.first)
        let text = CSV.document(header: Array(header), rows: [Array(row.fields.prefix(33))])
        let parsed = try #require(try Report(csv: text).rows.first)
        #expect(parsed.medianSeconds == 1 && parsed.instructions == nil && parsed.ciLowSeconds == nil)
    }

    @Test func moreRoundsRunUntilEveryMedianIsKnownWithinThePrecision() throws {
        let configuration = try RunConfiguration(
            backends: [TestBackends.memory], sizes: [BenchSize(dialogs: 2, messagesPerDialog: 1)],
            operations: [.persist], iterations: 5, showsProgress: false, maxIterations: 20, precision: 0.03)
        let steady = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98].map { Self.result(configuration, seconds: $0) }
        #expect(configuration.unsettledMedians(steady).isEmpty)
        // Five iterations cannot give a 95% interval, however steady.
        #expect(configuration.unsettledMedians(Array(steady.prefix(5))) == [.persist])
        let noisy = [1.0, 1.3, 0.8, 1.0, 1.1, 0.9].map { Self.result(configuration, seconds: $0) }
        #expect(configuration.unsettledMedians(noisy) == [.persist])
        var failed = noisy
        failed[0].error = "broken"
        #expect(configuration.unsettledMedians(failed).isEmpty)
    }

    @Test func theRunnerStopsAtTheMostIterationsWhenTheMedianStaysUncertain() throws {
        // A precision no wall time reaches: the extra rounds stop at maxIterations.
        let configuration = try RunConfiguration(
            backends: [TestBackends.memory, TestBackends.failing], sizes: [BenchSize(dialogs: 2, messagesPerDialog: 1)],
            operations: [.persist, .readAll], iterations: 2, warmup: 0, showsProgress: false, maxIterations: 7,
            precision: 1e-12, timeLimit: 600)
        let runner = BenchmarkRunner(configuration: configuration, executor: InProcessExecutor(registry: TestBackends.registry))
        let results = try runner.measure()
        #expect(results.filter { $0.job.backend == "memory" }.count == 7)
        // A failing backend gains nothing from more rounds.
        #expect(results.filter { $0.job.backend == "failing" }.count == 2)
        let none = try RunConfiguration(
            backends: [TestBackends.memory], sizes: [BenchSize(dialogs: 2, messagesPerDialog: 1)],
            operations: [.persist], iterations: 2, warmup: 0, showsProgress: false, maxIterations: 7,
            precision: 1e-12, timeLimit: 0)
        #expect(try BenchmarkRunner(configuration: none, executor: InProcessExecutor(registry: TestBackends.registry)).measure().count == 2)
    }
}

@Suite struct NoisyRowTests {
    @Test func rowsWithoutANarrowIntervalAreFlagged() {
        func row(_ backend: String, iterations: Int, low: Double?, high: Double?) -> ReportRow {
            var row = ReportRow(
                workload: "dialog-graph-v1", provenance: CompareTests.provenance, backend: backend, durability: "full",
                operation: "query", dialogs: 1, messagesPerDialog: 1, units: 1, unit: "queries",
                iterations: iterations, medianSeconds: 1, throughputPerSecond: 1)
            row.ciLowSeconds = low
            row.ciHighSeconds = high
            return row
        }
        let report = Report(rows: [
            row("steady", iterations: 6, low: 0.98, high: 1.02),
            row("wide", iterations: 20, low: 0.9, high: 1.01),
            row("few", iterations: 5, low: 0.99, high: 1.01),
        ])
        let noisy = SummaryTable.noisyRows(report, precision: 0.03)
        #expect(noisy.map(\.row.backend) == ["wide", "few"])
        #expect(noisy[0].reason.contains("-10.0%"))
        #expect(SummaryTable.noisyRows(report, precision: 0.2).map(\.row.backend) == ["few"])
    }
}

@Suite struct UnsettledRatioRowTests {
    @Test func ratiosWithoutANarrowIntervalAreFlagged() {
        func row(_ backend: String, iterations: Int, ratio: Double?, low: Double?, high: Double?) -> ReportRow {
            var row = ReportRow(
                workload: "dialog-graph-v1", provenance: CompareTests.provenance, backend: backend, durability: "full",
                operation: "query", dialogs: 1, messagesPerDialog: 1, units: 1, unit: "queries",
                iterations: iterations, medianSeconds: 1, throughputPerSecond: 1)
            row.reference = "raw"
            row.ratioPaired = ratio
            row.ratioPairedLow = low
            row.ratioPairedHigh = high
            return row
        }
        var failed = row("failed", iterations: 6, ratio: 0.5, low: 0.1, high: 0.9)
        failed.error = "boom"
        let report = Report(rows: [
            row("steady", iterations: 12, ratio: 0.5, low: 0.49, high: 0.51),
            row("wide", iterations: 12, ratio: 0.5, low: 0.45, high: 0.505),
            row("few", iterations: 5, ratio: 0.5, low: 0.5, high: 0.5),
            row("unpaired", iterations: 12, ratio: nil, low: nil, high: nil),
            failed,
        ])
        let unsettled = SummaryTable.unsettledRatioRows(report, precision: 0.03)
        #expect(unsettled.map(\.row.backend) == ["wide", "few"])
        #expect(unsettled[0].reason.contains("-10.0%") && unsettled[0].reason.contains("raw"))
        #expect(SummaryTable.unsettledRatioRows(report, precision: 0.2).map(\.row.backend) == ["few"])
    }
}

@Suite struct OperationDescriptionTests {
    @Test func theDescriptionsAreTheOperationsAsData() throws {
        let size = try BenchSize(dialogs: 100, messagesPerDialog: 10)
        let descriptions = BenchOperation.workload.map { $0.describe(sizes: [size]) }
        #expect(descriptions.map(\.name) == BenchOperation.workload.map(\.rawValue))
        let json = try JSONEncoder().encode(descriptions)
        let objects = try #require(try JSONSerialization.jsonObject(with: json) as? [[String: Any]])
        let query = try #require(objects.first { $0["name"] as? String == "query" })
        #expect(query["per_call"] as? Bool == true)
        #expect(query["unit"] as? String == "queries")
        #expect((query["expected_units"] as? [String: Int])?["100x10"] == 100)
        let eraseById = try #require(objects.first { $0["name"] as? String == "erase-by-id" })
        #expect((eraseById["expected_units"] as? [String: Int])?["100x10"] == 1000)  // (100 + 100) / 2 × 10
        #expect(try JSONDecoder().decode([OperationDescription].self, from: json) == descriptions)
    }

    @Test func aRowThatTouchedOtherUnitsThanTheWorkloadSaysIsAnError() throws {
        let configuration = try RunConfiguration(
            backends: [TestBackends.memory], sizes: [BenchSize(dialogs: 2, messagesPerDialog: 1)],
            operations: [.persist], iterations: 1, showsProgress: false)
        var result = CountedReportTests.result(configuration, seconds: 1)
        result.measurements[0].units = 3
        let row = try #require(
            ReportBuilder.report(of: [result], configuration: configuration, provenance: CountedReportTests.provenance)
                .rows.first)
        #expect(row.error == "counted 3 messages; WORKLOAD.md says D × M = 2")
        #expect(row.throughputPerSecond == nil)
        // Fewer units with a note is a bounded operation, reported as such.
        result.measurements[0].units = 1
        result.measurements[0].note = "timed 1 of 2"
        let bounded = try #require(
            ReportBuilder.report(of: [result], configuration: configuration, provenance: CountedReportTests.provenance)
                .rows.first)
        #expect(bounded.error.isEmpty && bounded.units == 1)
    }
}

@Suite struct CallgrindExecutorTests {
    /// A stand-in for valgrind: checks the worker's environment, writes the
    /// dumps callgrind would, and prints the worker's result.
    static func fakeValgrind(in directory: URL, result: IterationResult) throws -> URL {
        let resultFile = directory.appendingPathComponent("result.json")
        try JSONEncoder().encode(result).write(to: resultFile)
        let script = directory.appendingPathComponent("valgrind")
        let text = """
            #!/bin/sh
            [ "$SWIFT_DETERMINISTIC_HASHING" = 1 ] || exit 9
            for a in "$@"; do case "$a" in --callgrind-out-file=*) out="${a#--callgrind-out-file=}";; esac; done
            [ -n "$out" ] || exit 8
            printf 'desc: Trigger: Client Request: persist\\nevents: Ir\\nfn=f\\ncfn=malloc\\ncalls=7 1\\n1 1\\ntotals: 1234\\n' > "$out.1"
            printf 'desc: Trigger: Program termination\\nevents: Ir\\ntotals: 0\\n' > "$out"
            cat '\(resultFile.path)'

            """
        try writeExecutable(text, to: script)
        return script
    }

    static func job() throws -> IterationJob {
        var job = IterationJob(
            backend: "memory", size: try BenchSize(dialogs: 2, messagesPerDialog: 1), seed: 42, durability: .none,
            operations: [.persist, .readAll])
        job.countsInstructions = true
        return job
    }

    @Test func theCountsOfEachOperationComeFromItsDump() throws {
        try withTemporaryDirectory { directory in
            let job = try Self.job()
            let result = IterationResult(
                job: job, measurements: [OperationMeasurement(operation: .persist, seconds: 9, units: 2)])
            let valgrind = try Self.fakeValgrind(in: directory, result: result)
            let executor = SubprocessExecutor(
                executable: URL(fileURLWithPath: "/bin/false"), callgrind: Callgrind(valgrind: valgrind))
            let counted = try executor.run(job)
            #expect(counted.error == nil)
            #expect(counted.measurements.first?.instructions == 1234)
            #expect(counted.measurements.first?.allocations == 7)
        }
    }

    @Test func anOperationWithoutADumpIsAnError() throws {
        try withTemporaryDirectory { directory in
            let job = try Self.job()
            let result = IterationResult(
                job: job,
                measurements: [
                    OperationMeasurement(operation: .persist, seconds: 9, units: 2),
                    OperationMeasurement(operation: .readAll, seconds: 9, units: 2),
                ])
            let valgrind = try Self.fakeValgrind(in: directory, result: result)
            let executor = SubprocessExecutor(
                executable: URL(fileURLWithPath: "/bin/false"), callgrind: Callgrind(valgrind: valgrind))
            let counted = try executor.run(job)
            #expect(counted.error?.hasPrefix("callgrind wrote no dump for read-all") == true)
        }
    }

    @Test func aJobThatCountsNeedsCallgrind() throws {
        let executor = SubprocessExecutor(executable: URL(fileURLWithPath: "/bin/false"))
        #expect(throws: ConfigurationError.self) { try executor.run(try Self.job()) }
    }
}
