import Testing

@testable import StorageBenchKit

@Suite struct CompareTests {
    static let provenance = Provenance(
        runId: "r", timestamp: "t", gitCommit: "", host: "h", os: "o", cpu: "c", swiftVersion: "6", build: "release")

    /// A row of 100 units timed at `median` seconds, iterations spanning `min`…`max`.
    static func row(
        _ backend: String = "json", _ operation: String = "persist", median: Double, min: Double, max: Double,
        workload: String = "dialog-graph-v1", error: String = ""
    ) -> ReportRow {
        ReportRow(
            workload: workload, provenance: provenance, backend: backend, durability: "full", operation: operation,
            dialogs: 10, messagesPerDialog: 2, units: error.isEmpty ? 100 : nil, unit: "messages", iterations: 5,
            medianSeconds: error.isEmpty ? median : nil, minSeconds: error.isEmpty ? min : nil,
            maxSeconds: error.isEmpty ? max : nil, throughputPerSecond: error.isEmpty ? 100 / median : nil,
            error: error)
    }

    static func compare(_ base: [ReportRow], _ now: [ReportRow], threshold: Double = 0.1) throws -> Comparison {
        try Comparison(baseline: Report(rows: base), current: Report(rows: now), threshold: threshold)
    }

    @Test func theSameFiguresPass() throws {
        let rows = [Self.row(median: 1, min: 0.9, max: 1.1)]
        let comparison = try Self.compare(rows, rows)
        #expect(comparison.entries.map(\.verdict) == [.unchanged])
        #expect(comparison.exitStatus == 0)
    }

    @Test func aSlowdownPastTheThresholdAndOutsideBothSpreadsRegresses() throws {
        let comparison = try Self.compare(
            [Self.row(median: 1, min: 0.95, max: 1.05)], [Self.row(median: 1.3, min: 1.25, max: 1.35)])
        #expect(comparison.entries.map(\.verdict) == [.regressed])
        #expect(comparison.exitStatus == Comparison.exitRegressed)
        let change = try #require(comparison.entries.first?.change)
        #expect(abs(change - (1 / 1.3 - 1)) < 1e-9)
    }

    @Test func aSlowdownInsideTheBaselineSpreadIsNoise() throws {
        // 17% slower, but the baseline's slowest iteration was slower still.
        let comparison = try Self.compare(
            [Self.row(median: 1, min: 0.8, max: 1.4)], [Self.row(median: 1.2, min: 1.1, max: 1.3)])
        #expect(comparison.entries.map(\.verdict) == [.noise])
        #expect(comparison.exitStatus == 0)
    }

    @Test func aSlowdownInsideTheCurrentSpreadIsNoise() throws {
        // The current run's fastest iteration beat the baseline median.
        let comparison = try Self.compare(
            [Self.row(median: 1, min: 0.98, max: 1.02)], [Self.row(median: 1.2, min: 0.9, max: 1.5)])
        #expect(comparison.entries.map(\.verdict) == [.noise])
    }

    @Test func theThresholdDecides() throws {
        let base = [Self.row(median: 1, min: 0.99, max: 1.01)]
        let now = [Self.row(median: 1.05, min: 1.04, max: 1.06)]
        #expect(try Self.compare(base, now, threshold: 0.10).exitStatus == 0)
        #expect(try Self.compare(base, now, threshold: 0.03).exitStatus == Comparison.exitRegressed)
    }

    @Test func aSpeedupIsAnImprovement() throws {
        let comparison = try Self.compare(
            [Self.row(median: 1, min: 0.95, max: 1.05)], [Self.row(median: 0.5, min: 0.48, max: 0.52)])
        #expect(comparison.entries.map(\.verdict) == [.improved])
        #expect(comparison.exitStatus == 0)
    }

    @Test func aMissingRowFails() throws {
        let base = [Self.row(median: 1, min: 1, max: 1), Self.row("plist", median: 1, min: 1, max: 1)]
        let comparison = try Self.compare(base, [Self.row(median: 1, min: 1, max: 1)])
        #expect(comparison.entries.map(\.verdict) == [.unchanged, .missing])
        #expect(comparison.exitStatus == Comparison.exitMissing)
    }

    @Test func aRegressionOutranksAMissingRow() throws {
        let base = [Self.row(median: 1, min: 1, max: 1), Self.row("plist", median: 1, min: 1, max: 1)]
        let comparison = try Self.compare(base, [Self.row(median: 2, min: 2, max: 2)])
        #expect(comparison.exitStatus == Comparison.exitRegressed)
    }

    @Test func aNewRowIsReportedButPasses() throws {
        let comparison = try Self.compare(
            [Self.row(median: 1, min: 1, max: 1)],
            [Self.row(median: 1, min: 1, max: 1), Self.row("lmdb", median: 1, min: 1, max: 1)])
        #expect(comparison.entries.map(\.verdict) == [.unchanged, .new])
        #expect(comparison.exitStatus == 0)
    }

    @Test func anErrorRowNowIsAFailure() throws {
        let comparison = try Self.compare(
            [Self.row(median: 1, min: 1, max: 1)], [Self.row(median: 0, min: 0, max: 0, error: "update: check failed")])
        #expect(comparison.entries.map(\.verdict) == [.failed])
        #expect(comparison.exitStatus == Comparison.exitRegressed)
    }

    @Test func differentWorkloadsCannotBeCompared() {
        #expect(throws: ConfigurationError.self) {
            try Self.compare(
                [Self.row(median: 1, min: 1, max: 1)], [Self.row(median: 1, min: 1, max: 1, workload: "other-v2")])
        }
    }

    @Test func rowsMatchByBackendDurabilitySizeAndOperation() throws {
        var other = Self.row(median: 1, min: 1, max: 1)
        other.dialogs = 11
        let comparison = try Self.compare([Self.row(median: 1, min: 1, max: 1)], [other])
        #expect(comparison.entries.map(\.verdict) == [.missing, .new])
    }

    @Test func theMarkdownTableMarksRegressions() throws {
        let comparison = try Self.compare(
            [Self.row(median: 1, min: 0.95, max: 1.05)], [Self.row(median: 1.3, min: 1.25, max: 1.35)])
        let markdown = comparison.render(markdown: true)
        #expect(markdown.contains("| row | metric | baseline | current | change | verdict |"))
        #expect(markdown.contains("**regressed**"))
        #expect(markdown.contains("REGRESSION"))
        #expect(comparison.render(markdown: false).contains("json/full/10x2/persist"))
    }
}
