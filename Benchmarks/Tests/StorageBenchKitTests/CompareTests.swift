import Foundation
import Testing

@testable import StorageBenchKit

@Suite struct CompareTests {
    static let provenance = Provenance(
        runId: "r", timestamp: "t", gitCommit: "", host: "h", os: "o", cpu: "c", swiftVersion: "6", build: "release")

    /// A row of 100 units timed at `median` seconds over `iterations`, with
    /// the 95% interval of its median `min`…`max`.
    static func row(
        _ backend: String = "json", _ operation: String = "persist", median: Double, min: Double, max: Double,
        workload: String = "dialog-graph-v1", error: String = "", iterations: Int = 6
    ) -> ReportRow {
        var row = ReportRow(
            workload: workload, provenance: provenance, backend: backend, durability: "full", operation: operation,
            dialogs: 10, messagesPerDialog: 2, units: error.isEmpty ? 100 : nil, unit: "messages",
            iterations: iterations, medianSeconds: error.isEmpty ? median : nil,
            minSeconds: error.isEmpty ? min : nil, maxSeconds: error.isEmpty ? max : nil,
            throughputPerSecond: error.isEmpty ? 100 / median : nil, error: error)
        if error.isEmpty {
            row.ciLowSeconds = min
            row.ciHighSeconds = max
        }
        return row
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

    @Test func differentWorkloadsAreOneLineAndNotCompared() throws {
        let comparison = try Self.compare(
            [Self.row(median: 1, min: 1, max: 1)], [Self.row(median: 2, min: 2, max: 2, workload: "dialog-graph-v2")])
        #expect(comparison.entries.isEmpty)
        #expect(!comparison.comparable)
        #expect(comparison.exitStatus == Comparison.exitMissing)
        #expect(comparison.notes.count == 1)
        #expect(comparison.notes.first?.contains("dialog-graph-v1") == true)
        #expect(comparison.notes.first?.contains("dialog-graph-v2") == true)
        #expect(comparison.render(markdown: false).hasPrefix("Comparison: NOT COMPARABLE"))
    }

    @Test func rowsMatchByBackendDurabilitySizeAndOperation() throws {
        let base = [Self.row(median: 1, min: 1, max: 1), Self.row("plist", median: 1, min: 1, max: 1)]
        let now = [Self.row(median: 1, min: 1, max: 1), Self.row("lmdb", median: 1, min: 1, max: 1)]
        let comparison = try Self.compare(base, now)
        #expect(comparison.entries.map(\.verdict) == [.unchanged, .missing, .new])
        #expect(comparison.entries.map(\.key) == ["json/full/10x2/persist", "plist/full/10x2/persist", "lmdb/full/10x2/persist"])
    }

    /// `rows` at another size (or durability): every row's key changes.
    static func resized(_ rows: [ReportRow], dialogs: Int = 10, durability: String = "full") -> [ReportRow] {
        rows.map { row in
            var row = row
            row.dialogs = dialogs
            row.durability = durability
            return row
        }
    }

    @Test func aChangeOfSizeIsOneLineNotARowEach() throws {
        let operations = ["persist", "read-all", "query", "update"]
        let base = operations.flatMap { op in ["json", "plist"].map { Self.row($0, op, median: 1, min: 1, max: 1) } }
        let now = Self.resized(base, dialogs: 100)
        let comparison = try Self.compare(base, now)
        #expect(comparison.entries.isEmpty)
        #expect(comparison.exitStatus == Comparison.exitMissing)
        let sizeNotes = comparison.notes.filter { $0.contains("size 10x2 → 100x2") }
        #expect(sizeNotes.count == 1)
        #expect(sizeNotes.first?.contains("8 baseline and 8 current rows") == true)
        let text = comparison.render(markdown: false)
        #expect(!text.contains("missing"))
        #expect(!text.contains("json/full"))
        // A few lines (the notes wrapped at 100 columns), not one of the 16 rows each.
        #expect(text.split(separator: "\n").count <= 8)
        #expect(text.split(separator: "\n").allSatisfy { $0.count <= Comparison.terminalWidth })
    }

    @Test func theSharedSizeIsComparedAndADurabilityChangeNamed() throws {
        let base = [Self.row(median: 1, min: 0.99, max: 1.01)] + Self.resized([Self.row(median: 1, min: 1, max: 1)], dialogs: 50)
        let now = [Self.row(median: 1, min: 0.99, max: 1.01)]
            + Self.resized([Self.row(median: 1, min: 1, max: 1)], dialogs: 50, durability: "none")
        let comparison = try Self.compare(base, now)
        #expect(comparison.entries.map(\.verdict) == [.unchanged])
        #expect(comparison.exitStatus == Comparison.exitOK)
        #expect(comparison.notes.count == 1)
        #expect(comparison.notes.first?.contains("durability full → full, none") == true)
        #expect(comparison.notes.first?.contains("1 baseline and 1 current rows") == true)
    }

    /// `row` as measured on another machine.
    static func onCPU(_ cpu: String, host: String = "h", _ row: ReportRow) -> ReportRow {
        var row = row
        row.provenance.cpu = cpu
        row.provenance.host = host
        return row
    }

    static func counted(_ row: ReportRow, instructions: Int64, allocations: Int64) -> ReportRow {
        var row = row
        row.instructions = instructions
        row.allocations = allocations
        return row
    }

    @Test func anotherCPUIsJudgedByCountsOnlyWithOneLineSayingWhy() throws {
        // 40% slower on the other CPU, same counts: not a regression.
        let base = [Self.counted(Self.row(median: 1, min: 0.99, max: 1.01), instructions: 1000, allocations: 10)]
        let now = [
            Self.onCPU(
                "Other CPU × 4", Self.counted(Self.row(median: 1.4, min: 1.39, max: 1.41), instructions: 1000, allocations: 10))
        ]
        let comparison = try Self.compare(base, now)
        let time = try #require(comparison.entries.first { $0.metric == .throughput })
        #expect(time.verdict == .notJudged)
        #expect(time.unjudged == .otherMachine)
        #expect(comparison.entries.filter { $0.metric.isCount }.map(\.verdict) == [.unchanged, .unchanged])
        #expect(comparison.exitStatus == Comparison.exitOK)
        let lines = comparison.notes.filter { $0.hasPrefix("Wall times not judged") }
        #expect(lines.count == 1)
        #expect(lines.first?.contains("Other CPU × 4") == true)
        #expect(lines.first?.contains("(host h)") == true)
        // On a terminal the note, like every line, keeps within 100 columns, its words whole.
        let rendered = comparison.render(markdown: false).split(separator: "\n")
        #expect(rendered.allSatisfy { $0.count <= Comparison.terminalWidth })
        #expect(rendered.contains { $0.hasPrefix("Wall times not judged") })
        let words = rendered.joined(separator: " ").split(separator: " ").joined(separator: " ")
        #expect(words.contains("this run on Other CPU × 4 (host h)"))
        // A count that moved past the other-machine threshold (3%) still regresses on another CPU…
        let heavier = [
            Self.onCPU(
                "Other CPU × 4", Self.counted(Self.row(median: 1, min: 0.99, max: 1.01), instructions: 1100, allocations: 10))
        ]
        #expect(try Self.compare(base, heavier).exitStatus == Comparison.exitRegressed)
        // …but 2% more, which the CPU's own library routines may account for, does not; on one machine it would.
        let slightly = [Self.onCPU("Other CPU × 4", Self.counted(Self.row(median: 1, min: 0.99, max: 1.01), instructions: 1020, allocations: 10))]
        #expect(try Self.compare(base, slightly).exitStatus == Comparison.exitOK)
        let sameMachine = [Self.counted(Self.row(median: 1, min: 0.99, max: 1.01), instructions: 1020, allocations: 10)]
        #expect(try Self.compare(base, sameMachine).exitStatus == Comparison.exitRegressed)
        // Another host with the same CPU model is another machine too.
        let otherHost = [Self.onCPU("c", host: "elsewhere", now[0])]
        #expect(try Self.compare(base, otherHost).entries.first?.unjudged == .otherMachine)
    }

    @Test func withoutAnIntervalWallTimeIsNotJudged() throws {
        // One iteration each: a 2× slowdown from one round says nothing; the identical counts say unchanged.
        let base = [Self.counted(Self.row(median: 1, min: 1, max: 1, iterations: 1), instructions: 500, allocations: 5)]
        let now = [Self.counted(Self.row(median: 2, min: 2, max: 2, iterations: 1), instructions: 500, allocations: 5)]
        let comparison = try Self.compare(base, now)
        #expect(comparison.entries.map(\.verdict) == [.notJudged, .unchanged, .unchanged])
        #expect(comparison.entries.first?.unjudged == .noInterval)
        #expect(comparison.exitStatus == Comparison.exitOK)
        #expect(comparison.notes.count == 1)
        #expect(comparison.notes.first?.contains("fewer than 6 iterations") == true)
        // Five iterations on one side are still too few.
        let five = [Self.row(median: 2, min: 1.9, max: 2.1, iterations: 5)]
        #expect(try Self.compare([Self.row(median: 1, min: 0.99, max: 1.01)], five).exitStatus == Comparison.exitOK)
        #expect(
            try Self.compare([Self.row(median: 1, min: 0.99, max: 1.01)], [Self.row(median: 2, min: 1.9, max: 2.1)])
                .exitStatus == Comparison.exitRegressed)
    }

    @Test func aPairedRatioOfTooFewRoundsIsNotJudged() throws {
        func paired(_ ratio: Double, rounds: Int) -> [ReportRow] {
            var row = Self.row("sqlite", median: 1, min: 0.99, max: 1.01, iterations: rounds)
            row.reference = "sqlite-raw"
            row.ratioPaired = ratio
            row.ratioPairedLow = ratio * 0.99
            row.ratioPairedHigh = ratio * 1.01
            row.ratioPairedRounds = Array(repeating: ratio, count: rounds)
            return [row, Self.row("sqlite-raw", median: 1, min: 0.99, max: 1.01, iterations: rounds)]
        }
        let few = try Comparison(
            baseline: Report(rows: paired(0.9, rounds: 1)), current: Report(rows: paired(0.5, rounds: 1)),
            threshold: 0.1, normalization: .automatic)
        #expect(few.entries.first?.verdict == .notJudged)
        #expect(few.exitStatus == Comparison.exitOK)
        let enough = try Comparison(
            baseline: Report(rows: paired(0.9, rounds: 6)), current: Report(rows: paired(0.5, rounds: 6)),
            threshold: 0.1, normalization: .automatic)
        #expect(enough.entries.first?.verdict == .regressed)
        #expect(enough.exitStatus == Comparison.exitRegressed)
    }

    @Test func aThirdPartyLibraryNeverDecidesTheExitStatus() throws {
        let base = [
            Self.counted(Self.row("grdb", median: 1, min: 0.99, max: 1.01), instructions: 1000, allocations: 10),
            Self.row(median: 1, min: 0.99, max: 1.01),
        ]
        let now = [
            Self.counted(Self.row("grdb", median: 2, min: 1.99, max: 2.01), instructions: 2000, allocations: 20),
            Self.row(median: 1, min: 0.99, max: 1.01),
        ]
        // Known by the registry's roles (a report without the role column)…
        let byRegistry = try Comparison(
            baseline: Report(rows: base), current: Report(rows: now), threshold: 0.1, roles: ["grdb": .thirdParty])
        #expect(byRegistry.entries.filter { $0.key.hasPrefix("grdb") }.allSatisfy { $0.verdict == .regressed && !$0.decides })
        #expect(byRegistry.exitStatus == Comparison.exitOK)
        let text = byRegistry.render(markdown: false)
        #expect(text.hasPrefix("Comparison: OK; 0 regressed"))
        #expect(text.contains("Third-party references"))
        #expect(text.contains("regressed (third-party, not judged)"))
        // …or by the row's own role column.
        let marked = now.map { row -> ReportRow in
            var row = row
            if row.backend == "grdb" { row.role = .thirdParty }
            return row
        }
        #expect(try Self.compare(base, marked).exitStatus == Comparison.exitOK)
        // Without either, grdb is judged like any backend.
        #expect(try Self.compare(base, now).exitStatus == Comparison.exitRegressed)
    }

    @Test func regressionsComeFirstThenImprovementsThenACountOfTheRest() throws {
        let names = ["a", "b", "c", "d", "e"]
        let base = names.map { Self.row($0, median: 1, min: 0.99, max: 1.01) }
        let medians: [String: Double] = ["a": 0.5, "b": 1, "c": 2, "d": 1.01, "e": 1]
        let now = names.map { Self.row($0, median: medians[$0] ?? 1, min: (medians[$0] ?? 1) - 0.01, max: (medians[$0] ?? 1) + 0.01) }
        let text = try Self.compare(base, now).render(markdown: false)
        let regressed = try #require(text.range(of: "Regressed (1):"))
        let improved = try #require(text.range(of: "Improved (1):"))
        #expect(regressed.lowerBound < improved.lowerBound)
        #expect(text.contains("c/full/10x2/persist"))
        #expect(text.contains("a/full/10x2/persist"))
        #expect(!text.contains("b/full/10x2/persist"))
        #expect(text.contains("Not listed: 3 unchanged (--verbose lists every row)."))
        let verbose = try Self.compare(base, now).render(markdown: false, verbose: true)
        #expect(names.allSatisfy { verbose.contains("\($0)/full/10x2/persist") })
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

    @Test func everyUnreadableReportNamesItsFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("compare-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let good = Report(rows: [Self.row(median: 1, min: 1, max: 1)]).csv()
        let lines = good.split(separator: "\r\n").map(String.init)
        let cases: [(name: String, text: String, says: String)] = [
            ("short-row.csv", lines[0] + "\r\n" + "a,b,c\r\n", "row 1 has 3 fields"),
            ("unclosed.csv", lines[0] + "\r\n" + "\"open", "not CSV"),
            ("no-columns.csv", "a,b\r\n1,2\r\n", "no 'workload' column"),
            ("bad-number.csv", lines[0] + "\r\n" + lines[1].replacingOccurrences(of: ",10,2,", with: ",ten,2,") + "\r\n", "row 1: 'ten'"),
            ("empty.csv", "", "the report is empty"),
        ]
        for (name, text, says) in cases {
            let url = directory.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            let error = try #require(throws: ConfigurationError.self) { try Report(contentsOf: url) }
            #expect(error.message.hasPrefix(url.relativePath + ": "), "\(name): \(error.message)")
            #expect(error.message.contains(says), "\(name): \(error.message)")
        }
        let absent = directory.appendingPathComponent("absent.csv")
        let error = try #require(throws: ConfigurationError.self) { try Report(contentsOf: absent) }
        #expect(error.message.hasPrefix(absent.relativePath + ": cannot be read"))
    }

    @Test func theRoleColumnRoundTripsAndOldReportsInferIt() throws {
        var grdb = Self.row("grdb", median: 1, min: 1, max: 1)
        grdb.role = .thirdParty
        var raw = Self.row("sqlite-raw", median: 1, min: 1, max: 1)
        raw.role = .raw
        let read = try Report(csv: Report(rows: [grdb, raw, Self.row(median: 1, min: 1, max: 1)]).csv())
        #expect(read.rows.map(\.role) == [.thirdParty, .raw, nil])
        let inferred = Report(rows: [Self.row("grdb", median: 1, min: 1, max: 1), Self.row("lmdb-raw", median: 1, min: 1, max: 1), Self.row("json", median: 1, min: 1, max: 1)])
            .assigningRoles(["grdb": .thirdParty])
        #expect(inferred.rows.map(\.role) == [.thirdParty, .raw, .choice])
        let header = ReportRow.columns.joined(separator: ",")
        let fields = Self.row(median: 1, min: 1, max: 1).fields.dropLast() + ["king"]
        #expect(throws: ConfigurationError.self) { try Report(csv: header + "\n" + fields.joined(separator: ",") + "\n") }
    }
}
