import Testing

@testable import StorageBenchKit

/// Comparisons that cancel the machine, on synthetic reports.
@Suite struct NormalizedCompareTests {
    static let provenance = CompareTests.provenance

    /// A row of 100 units at `median` seconds with a 95% interval of ±`spread`.
    static func row(
        _ backend: String, _ operation: String = "persist", median: Double, spread: Double = 0.01,
        instructions: Int64? = nil, allocations: Int64? = nil
    ) -> ReportRow {
        var row = ReportRow(
            workload: "dialog-graph-v1", provenance: provenance, backend: backend, durability: "full",
            operation: operation, dialogs: 10, messagesPerDialog: 2, units: 100, unit: "messages", iterations: 10,
            medianSeconds: median, minSeconds: median * 0.5, maxSeconds: median * 2, throughputPerSecond: 100 / median)
        row.ciLowSeconds = median * (1 - spread)
        row.ciHighSeconds = median * (1 + spread)
        row.instructions = instructions
        row.allocations = allocations
        return row
    }

    static func verdicts(_ comparison: Comparison) -> [String: Comparison.Verdict] {
        Dictionary(uniqueKeysWithValues: comparison.entries.map { ("\($0.key) \($0.metric)", $0.verdict) })
    }

    @Test func aFasterMachineIsNoChangeOnceNormalized() throws {
        // Every backend twice as fast: absolutely all improved; divided by the raw engine, unchanged.
        let names = ["sqlite", "sqlite-raw", "lmdb", "lmdb-raw", "json"]
        let base = Report(rows: names.enumerated().map { Self.row($1, median: 1 + Double($0)) })
        let now = Report(rows: names.enumerated().map { Self.row($1, median: (1 + Double($0)) / 2) })
        let absolute = try Comparison(baseline: base, current: now, threshold: 0.1, normalization: .none)
        #expect(absolute.entries.allSatisfy { $0.verdict == .improved })
        let normalized = try Comparison(baseline: base, current: now, threshold: 0.1, normalization: .automatic)
        let verdicts = Self.verdicts(normalized)
        #expect(verdicts["sqlite/full/10x2/persist ÷ sqlite-raw"] == .unchanged)
        #expect(verdicts["lmdb/full/10x2/persist ÷ lmdb-raw"] == .unchanged)
        // The raw engines measure the machine: shown, not judged.
        #expect(verdicts["sqlite-raw/full/10x2/persist throughput"] == .reference)
        #expect(verdicts["lmdb-raw/full/10x2/persist throughput"] == .reference)
        // No raw engine for json: compared absolutely.
        #expect(verdicts["json/full/10x2/persist throughput"] == .improved)
        #expect(normalized.exitStatus == Comparison.exitOK)
    }

    @Test func aSlowerAdapterOnTheSameMachineRegressesAgainstItsEngine() throws {
        let base = Report(rows: [Self.row("lmdb", median: 1), Self.row("lmdb-raw", median: 0.5)])
        // The machine is 20% faster, but lmdb itself lost 30% against its engine.
        let now = Report(rows: [Self.row("lmdb", median: 0.8 / 0.7), Self.row("lmdb-raw", median: 0.4)])
        let comparison = try Comparison(baseline: base, current: now, threshold: 0.1, normalization: .automatic)
        let entry = try #require(comparison.entries.first { $0.metric == .ratio(to: "lmdb-raw") })
        #expect(entry.verdict == .regressed)
        #expect(abs((entry.change ?? 0) - (-0.3)) < 1e-9)
        #expect(abs((entry.baseline ?? 0) - 0.5) < 1e-12)
        #expect(comparison.exitStatus == Comparison.exitRegressed)
        // Absolutely, the same rows look only 12.5% slower.
        let absolute = try Comparison(baseline: base, current: now, threshold: 0.2, normalization: .none)
        #expect(absolute.exitStatus == Comparison.exitOK)
    }

    @Test func aRatioChangeInsideTheIntervalsIsNoise() throws {
        let base = Report(rows: [Self.row("sqlite", median: 1, spread: 0.1), Self.row("sqlite-raw", median: 1, spread: 0.1)])
        let now = Report(rows: [Self.row("sqlite", median: 1.15, spread: 0.1), Self.row("sqlite-raw", median: 1, spread: 0.1)])
        let comparison = try Comparison(baseline: base, current: now, threshold: 0.1, normalization: .automatic)
        #expect(Self.verdicts(comparison)["sqlite/full/10x2/persist ÷ sqlite-raw"] == .noise)
        #expect(comparison.exitStatus == Comparison.exitOK)
    }

    @Test func oneReferenceOrPairsNameTheDivisor() throws {
        #expect(try Comparison.Normalization(parsing: "sqlite-raw") == .backends(["*": "sqlite-raw"]))
        #expect(try Comparison.Normalization(parsing: "auto") == .automatic)
        #expect(try Comparison.Normalization(parsing: "none") == .none)
        let pairs = try Comparison.Normalization(parsing: "grdb=sqlite-raw, sqlite=sqlite-raw")
        #expect(pairs == .backends(["grdb": "sqlite-raw", "sqlite": "sqlite-raw"]))
        #expect(throws: ConfigurationError.self) { try Comparison.Normalization(parsing: "grdb=") }
        #expect(throws: ConfigurationError.self) { try Comparison.Normalization(parsing: " , ") }
        let available: Set = ["grdb", "sqlite", "sqlite-raw", "lmdb"]
        #expect(pairs.reference(for: "grdb", available: available) == "sqlite-raw")
        #expect(pairs.reference(for: "lmdb", available: available) == nil)
        #expect(Comparison.Normalization.backends(["*": "sqlite"]).reference(for: "sqlite", available: available) == nil)
        #expect(Comparison.Normalization.automatic.reference(for: "lmdb", available: available) == nil)
        // A reference missing from either report leaves the row absolute.
        let base = Report(rows: [Self.row("grdb", median: 1), Self.row("sqlite-raw", median: 1)])
        let now = Report(rows: [Self.row("grdb", median: 0.5)])
        let comparison = try Comparison(
            baseline: base, current: now, threshold: 0.1, normalization: .backends(["grdb": "sqlite-raw"]))
        #expect(comparison.entries.first?.metric == .throughput)
    }

    @Test func theDeclaredReferenceWinsOverTheName() throws {
        // grdb declares sqlite-raw in its reference column; nothing is called grdb-raw.
        var grdb = Self.row("grdb", median: 1)
        grdb.reference = "sqlite-raw"
        var faster = Self.row("grdb", median: 0.5)
        faster.reference = "sqlite-raw"
        let base = Report(rows: [grdb, Self.row("sqlite-raw", median: 1)])
        let now = Report(rows: [faster, Self.row("sqlite-raw", median: 0.5)])
        let comparison = try Comparison(baseline: base, current: now, threshold: 0.1, normalization: .automatic)
        let verdicts = Self.verdicts(comparison)
        #expect(verdicts["grdb/full/10x2/persist ÷ sqlite-raw"] == .unchanged)
        #expect(verdicts["sqlite-raw/full/10x2/persist throughput"] == .reference)
        #expect(
            Comparison.Normalization.automatic.reference(for: "grdb", declared: "sqlite-raw", available: ["grdb"])
                == nil)
    }

    @Test func instructionCountsAreComparedDirectly() throws {
        let base = Report(rows: [
            Self.row("sqlite", median: 1, instructions: 1_000_000, allocations: 1000),
            Self.row("sqlite", "query", median: 1, instructions: 2_000_000, allocations: 10),
        ])
        let now = Report(rows: [
            // Wall time says nothing (a noisy machine); the counts do.
            Self.row("sqlite", median: 1, spread: 0.5, instructions: 1_003_000, allocations: 1000),
            Self.row("sqlite", "query", median: 1, spread: 0.5, instructions: 2_100_000, allocations: 9),
        ])
        let comparison = try Comparison(
            baseline: base, current: now, threshold: 0.1, instructionThreshold: 0.01, metrics: .instructions)
        let verdicts = Self.verdicts(comparison)
        #expect(verdicts["sqlite/full/10x2/persist instructions"] == .unchanged)  // +0.3%
        #expect(verdicts["sqlite/full/10x2/persist allocations"] == .unchanged)
        #expect(verdicts["sqlite/full/10x2/query instructions"] == .regressed)  // +5%
        #expect(verdicts["sqlite/full/10x2/query allocations"] == .improved)  // −10%
        #expect(comparison.entries.count == 4)
        #expect(comparison.exitStatus == Comparison.exitRegressed)
        let timeOnly = try Comparison(baseline: base, current: now, threshold: 0.1, metrics: .time)
        #expect(timeOnly.entries.allSatisfy { $0.metric == .throughput })
    }

    @Test func aReportWithoutCountsCannotBeComparedOnCounts() throws {
        let base = Report(rows: [Self.row("sqlite", median: 1)])
        let now = Report(rows: [Self.row("sqlite", median: 1, instructions: 10, allocations: 1)])
        let comparison = try Comparison(baseline: base, current: now, threshold: 0.1, metrics: .instructions)
        #expect(comparison.entries.map(\.verdict) == [.noFigures])
        let missing = try Comparison(baseline: now, current: base, threshold: 0.1, metrics: .instructions)
        #expect(missing.entries.map(\.verdict) == [.missing])
        #expect(missing.exitStatus == Comparison.exitMissing)
    }
}
