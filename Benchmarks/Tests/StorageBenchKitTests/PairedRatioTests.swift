import DAOCore
import Foundation
import Testing

@testable import StorageBenchKit

/// The ratio to the reference taken round by round, the order that puts each
/// backend beside its reference, and the memory, disk and scale figures.
@Suite struct PairedRatioTests {
    static let size = try! BenchSize(dialogs: 2, messagesPerDialog: 1)

    static func result(_ backend: String, round: Int, seconds: Double, units: Int = 2) -> IterationResult {
        let job = IterationJob(
            backend: backend, size: size, seed: 42, durability: .full, operations: [.persist], round: round)
        return IterationResult(
            job: job, measurements: [OperationMeasurement(operation: .persist, seconds: seconds, units: units)])
    }

    static let dao = Backend("dao", reference: "raw") { directory, _ in MemoryStore(location: directory) }
    static let other = Backend("other", reference: "raw") { directory, _ in MemoryStore(location: directory) }
    static let raw = Backend(name: "raw", subject: { _, _ in MemorySubject() })
    static let alone = Backend("alone") { directory, _ in MemoryStore(location: directory) }

    @Test func eachBackendRunsBesideItsReferenceInABBAOrder() throws {
        let lmdb = Backend("lmdb", reference: "lmdb-raw") { directory, _ in MemoryStore(location: directory) }
        let lmdbRaw = Backend(name: "lmdb-raw", subject: { _, _ in MemorySubject() })
        let backends = [Self.alone, Self.dao, Self.other, Self.raw, lmdb, lmdbRaw]
        #expect(RunConfiguration.pairedGroups(backends).map { $0.map(\.name) } == [
            ["alone"], ["dao", "raw", "other"], ["lmdb", "lmdb-raw"],
        ])
        let configuration = try RunConfiguration(
            backends: backends, sizes: [Self.size], iterations: 3, warmup: 0, showsProgress: false)
        let jobs = configuration.jobs()
        #expect(jobs.map(\.backend) == [
            "alone", "dao", "raw", "other", "lmdb", "lmdb-raw",
            "other", "raw", "dao", "lmdb-raw", "lmdb", "alone",
            "lmdb", "lmdb-raw", "alone", "dao", "raw", "other",
        ])
        // A reference that is not in the run leaves its backend on its own.
        #expect(RunConfiguration.pairedGroups([Self.dao, Self.alone]).map { $0.map(\.name) } == [["dao"], ["alone"]])
    }

    @Test func theRatioIsTakenRoundByRoundAndItsMedianReported() throws {
        // The machine's speed changes from round to round by up to 4×; the
        // backend always takes twice its reference's time in the same round.
        let factors = [1.0, 4.0, 1.5, 3.0, 1.0, 2.5, 1.2]
        let mine = factors.enumerated().map { Self.result("dao", round: $0.offset, seconds: 2 * $0.element) }
        var theirs = factors.enumerated().map { Self.result("raw", round: $0.offset, seconds: $0.element) }
        theirs.append(Self.result("raw", round: 99, seconds: 100))  // no partner: ignored
        let paired = try #require(PairedRatio(.persist, results: mine, reference: theirs))
        #expect(paired.ratios.count == 7)
        #expect(paired.median == 0.5 && paired.low == 0.5 && paired.high == 0.5)
        #expect(paired.coverage >= 0.95)
        #expect(paired.relativeHalfWidth == 0)
        // The same figures, shuffled across rounds, give ratios that vary.
        let shuffled = [4.0, 1.0, 3.0, 1.5, 2.5, 1.0, 1.2].enumerated().map {
            Self.result("raw", round: $0.offset, seconds: $0.element)
        }
        let unpaired = try #require(PairedRatio(.persist, results: mine, reference: shuffled))
        #expect(unpaired.relativeHalfWidth > 0.5)
        // No common round: no ratio. An operation not measured: no ratio.
        #expect(PairedRatio(.persist, results: mine, reference: [Self.result("raw", round: 50, seconds: 1)]) == nil)
        #expect(PairedRatio(.query, results: mine, reference: theirs) == nil)
    }

    @Test func theRatioDividesThroughputsNotTimes() throws {
        // A bounded backend counts fewer units: its throughput is what counts.
        let mine = [Self.result("dao", round: 0, seconds: 1, units: 1)]
        let theirs = [Self.result("raw", round: 0, seconds: 1, units: 4)]
        #expect(try #require(PairedRatio(.persist, results: mine, reference: theirs)).median == 0.25)
    }

    @Test func moreRoundsRunUntilThePairedRatioIsKnown() throws {
        let configuration = try RunConfiguration(
            backends: [Self.dao, Self.raw], sizes: [Self.size], operations: [.persist], iterations: 6,
            showsProgress: false, maxIterations: 20, precision: 0.03)
        let steady = (0..<6).flatMap { round in
            [Self.result("dao", round: round, seconds: 2 * Double(round + 1)), Self.result("raw", round: round, seconds: Double(round + 1))]
        }
        #expect(configuration.unsettledRatios(steady, backend: Self.dao).isEmpty)
        // The reference has no reference of its own.
        #expect(configuration.unsettledRatios(steady, backend: Self.raw).isEmpty)
        let noisy = (0..<6).flatMap { round in
            [Self.result("dao", round: round, seconds: [1, 1.5, 0.7, 1, 1.2, 0.8][round]), Self.result("raw", round: round, seconds: 1)]
        }
        #expect(configuration.unsettledRatios(noisy, backend: Self.dao) == [.persist])
    }

    @Test func extraRoundsRunABackendWithItsReference() throws {
        // A precision no wall time reaches: every extra round runs the pair.
        let configuration = try RunConfiguration(
            backends: [Self.dao, Self.raw, Self.alone], sizes: [Self.size], operations: [.persist, .readAll],
            iterations: 2, warmup: 0, showsProgress: false, maxIterations: 5, precision: 1e-12, timeLimit: 600)
        let registry = BackendRegistry([Self.dao, Self.raw, Self.alone])
        let results = try BenchmarkRunner(configuration: configuration, executor: InProcessExecutor(registry: registry))
            .measure()
        let daoRounds = results.filter { $0.job.backend == "dao" }.map(\.job.round)
        #expect(daoRounds.count == 5)
        #expect(results.filter { $0.job.backend == "raw" }.map(\.job.round) == daoRounds)
        let report = ReportBuilder.report(of: results, configuration: configuration, provenance: CountedReportTests.provenance)
        for row in report.rows {
            if row.backend == "dao" {
                let paired = try #require(row.ratioPaired)
                #expect(try #require(row.ratioPairedLow) <= paired && paired <= (try #require(row.ratioPairedHigh)))
                // The rounds it is the median of, in round order, in the row.
                let rounds = try #require(row.ratioPairedRounds)
                #expect(rounds.count == row.iterations)
                #expect(SampleStatistics(rounds)?.median == paired)
            } else {
                #expect(row.ratioPaired == nil)
            }
        }
        let table = SummaryTable.detailed(report)
        #expect(table.contains("in the same round"))
    }

    static func row(_ backend: String, _ operation: String, dialogs: Int = 10, reference: String = "") -> ReportRow {
        var row = ReportRow(
            workload: "dialog-graph-v1", provenance: CountedReportTests.provenance, backend: backend, durability: "full",
            operation: operation, dialogs: dialogs, messagesPerDialog: 2, units: 100, unit: "messages", iterations: 6,
            medianSeconds: 1, throughputPerSecond: 100)
        row.reference = reference
        return row
    }

    @Test func instructionRatiosDivideInstructionsPerUnit() {
        var dao = Self.row("dao", "persist", reference: "raw")
        dao.instructions = 4000
        var raw = Self.row("raw", "persist")
        raw.instructions = 500
        raw.units = 50  // 10 per unit against the DAO's 40
        var uncounted = Self.row("dao", "query", reference: "raw")
        uncounted.instructions = nil
        let rows = ReportBuilder.ratiosToRaw([dao, raw, uncounted, Self.row("raw", "query")])
        #expect(rows.map(\.ratioInstructions) == [0.25, nil, nil, nil])
        let table = SummaryTable.detailed(Report(rows: rows))
        #expect(table.contains("by instructions"))
        #expect(table.contains("0.25×"))
    }

    @Test func theNewColumnsSurviveTheCSVAndOldReportsLackThem() throws {
        var dao = Self.row("dao", "read-all", reference: "raw")
        dao.ratioPaired = 0.5
        dao.ratioPairedLow = 0.45
        dao.ratioPairedHigh = 0.56
        dao.ratioPairedRounds = [0.5, 0.45, 0.56, 0.125, 2.5e-7]
        dao.ratioInstructions = 0.3
        dao.peakRSSWorkloadBytes = 30 << 20
        dao.operationPeakRSSBytes = 24 << 20
        dao.decodedBytes = 16 << 20
        var raw = Self.row("raw", "read-all")
        raw.peakRSSWorkloadBytes = 20 << 20
        raw.operationPeakRSSBytes = 16 << 20
        raw.decodedBytes = 16 << 20
        raw.bytesOnDisk = 1000
        dao.bytesOnDisk = 1500
        let report = Report(rows: [dao, raw])
        let back = try Report(csv: report.csv())
        #expect(back == report)
        #expect(report.csv().contains(",0.5;0.45;0.56;0.125;2.5e-07,,\r\n"))  // then role and latency_spectrum_us, empty
        #expect(try report.json().contains("\"ratio_paired\" : 0.5"))
        #expect(throws: ConfigurationError.self) {
            try Report(csv: report.csv().replacingOccurrences(of: ";0.125;", with: ";x;"))
        }
        let table = SummaryTable.detailed(report)
        #expect(table.contains("0.50× [0.45–0.56×]"))  // 5 rounds: no 95% interval
        #expect(table.contains("peak RSS above the data"))
        #expect(table.contains("1.50×"))  // peak memory and bytes on disk against the raw engine's
        #expect(table.contains("read-all: peak ÷ graph"))
        // A report written before these columns reads with them empty.
        let columns = ReportRow.columns
        let old = CSV.document(header: Array(columns.prefix(39)), rows: [Array(dao.fields.prefix(39))])
        let parsed = try #require(try Report(csv: old).rows.first)
        #expect(parsed.ratioPaired == nil && parsed.decodedBytes == nil && parsed.ciHighSeconds == nil)
        #expect(parsed.ratioPairedRounds == nil)
    }

    @Test func comparisonsUseThePairedRatioAndItsInterval() throws {
        func pair(_ ratio: Double, low: Double, high: Double, run: String) -> Report {
            var dao = Self.row("dao", "persist", reference: "raw")
            dao.provenance.runId = run
            // The medians alone say the ratio halved; the paired ratio says otherwise.
            dao.throughputPerSecond = run == "a" ? 100 : 50
            dao.ratioPaired = ratio
            dao.ratioPairedLow = low
            dao.ratioPairedHigh = high
            var raw = Self.row("raw", "persist")
            raw.provenance.runId = run
            return Report(rows: [dao, raw])
        }
        let comparison = try Comparison(
            baseline: pair(0.50, low: 0.49, high: 0.51, run: "a"), current: pair(0.51, low: 0.5, high: 0.52, run: "b"),
            threshold: 0.05, normalization: .automatic, metrics: .time)
        let entry = try #require(comparison.entries.first { $0.key.hasPrefix("dao/") })
        #expect(entry.verdict == .unchanged)
        #expect(abs((entry.change ?? 1) - 0.02) < 1e-9)
    }

    @Test func aSweepReportsThroughputAtEachSizeAgainstTheSmallest() {
        var small = Self.row("dao", "persist", dialogs: 10)
        small.throughputPerSecond = 200
        var large = Self.row("dao", "persist", dialogs: 100)
        large.throughputPerSecond = 150
        let table = SummaryTable.detailed(Report(rows: [small, large]))
        #expect(table.contains("Scale, durability full: throughput at 100 × 2 ÷ throughput at 10 × 2"))
        #expect(table.contains("0.75×"))
        #expect(!SummaryTable.detailed(Report(rows: [small])).contains("Scale"))
    }

    #if os(Linux)
    @Test func theMemoryProbeSeesARiseOfResidentMemory() async throws {
        // Resident memory is the whole process's: the measurement runs in a
        // child process of its own (an exit test), where no other test
        // allocates or frees memory meanwhile. It prints its figures; they are
        // checked here.
        let result = try await #require(processExitsWith: .success, observing: [\.standardOutputContent]) {
            guard var probe = MemoryProbe() else {
                FileHandle.standardOutput.write(Data("no probe\n".utf8))
                return
            }
            // One operation touches every page of a 64 MiB block, the next
            // (after the block is returned) nothing.
            probe.beginOperation()
            let bytes = 64 << 20
            let block = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 4096)
            for offset in stride(from: 0, to: bytes, by: 4096) { block.storeBytes(of: 1, toByteOffset: offset, as: UInt8.self) }
            let rise = probe.endOperation() ?? -1
            block.deallocate()
            probe.beginOperation()
            let idleRise = probe.endOperation() ?? -1
            let peak = probe.workloadPeak()
            let heap = MemoryProbe.heapInUse() ?? -1
            FileHandle.standardOutput.write(Data("\(rise) \(idleRise) \(peak) \(heap)\n".utf8))
        }
        let output = String(decoding: result.standardOutputContent, as: UTF8.self)
        let figures = output.split(whereSeparator: \.isWhitespace).compactMap { Int64($0) }
        try #require(figures.count == 4, "the child printed: \(output)")
        let (rise, idleRise, peak, heap) = (figures[0], figures[1], figures[2], figures[3])
        let touched = Int64(64 << 20)
        // The block's pages, and not much more: nothing else runs in the child.
        #expect(rise >= touched && rise < touched + (16 << 20), "rise \(rise)")
        // The high-water mark was reset between the operations.
        #expect(idleRise >= 0 && idleRise < 16 << 20, "idle rise \(idleRise)")
        #expect(peak >= touched, "peak \(peak)")
        #expect(heap >= 0)
    }
    #endif
}
