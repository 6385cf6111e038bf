import Foundation
import Testing

@testable import StorageBenchKit

/// The one-screen summary and the HTML report, on synthetic rows and on the
/// committed `make bench` and smoke baselines.
@Suite struct SummaryTests {
    static let provenance = Provenance(
        runId: "r1", timestamp: "t", gitCommit: "abc", host: "h", os: "o", cpu: "CPU <x>", swiftVersion: "6",
        build: "release")

    /// The repository's results folder (results/ beside Benchmarks/).
    static var results: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("results")
    }

    static func row(
        _ backend: String, _ operation: String, throughput: Double, iterations: Int = 6, role: BackendRole,
        reference: String = "", ratio: Double? = nil, rounds: Int = 6
    ) -> ReportRow {
        var row = ReportRow(
            workload: "dialog-graph-v1", provenance: provenance, backend: backend, durability: "full",
            operation: operation, dialogs: 10, messagesPerDialog: 2, units: 100, unit: "messages",
            iterations: iterations, medianSeconds: 100 / throughput, throughputPerSecond: throughput)
        row.ciLowSeconds = 100 / throughput * 0.98
        row.ciHighSeconds = 100 / throughput * 1.03
        row.role = role
        row.reference = reference
        if let ratio {
            row.ratioPaired = ratio
            row.ratioPairedLow = ratio * 0.97
            row.ratioPairedHigh = ratio * 1.02
            row.ratioPairedRounds = Array(repeating: ratio, count: rounds)
        }
        row.bytesOnDisk = 4096
        return row
    }

    /// Two choices on one engine, the engine, and a third-party library on it.
    static var report: Report {
        var rows: [ReportRow] = []
        for (index, operation) in ["persist", "query"].enumerated() {
            let scale = Double(index + 1)
            rows.append(Self.row("slow", operation, throughput: 100 * scale, role: .choice, reference: "engine", ratio: 0.1))
            rows.append(Self.row("fast", operation, throughput: 900 * scale, role: .choice, reference: "engine", ratio: 0.9))
            rows.append(Self.row("engine", operation, throughput: 1000 * scale, role: .raw))
            rows.append(Self.row("lib", operation, throughput: 500 * scale, role: .thirdParty, reference: "engine", ratio: 0.5))
        }
        return Report(rows: rows)
    }

    /// Whether `line` is the row of `name` ranked `rank`, after its operation cell.
    static func isRanked(_ line: String, _ rank: Int, _ name: String) -> Bool {
        line.range(of: "^  (\\S.*)?\\s\(rank) \(name) ", options: .regularExpression) != nil
    }

    @Test func choicesAreRankedAndReferencesAreColumns() throws {
        let text = SummaryTable.render(Self.report)
        let lines = text.split(separator: "\n").map(String.init)
        let fast = try #require(lines.firstIndex { Self.isRanked($0, 1, "fast") })
        let slow = try #require(lines.firstIndex { Self.isRanked($0, 2, "slow") })
        #expect(fast < slow)
        // The engine and the library are columns, never ranked rows.
        #expect(!lines.contains { $0.range(of: #"^  \S*\s+\d (engine|lib) "#, options: .regularExpression) != nil })
        let header = try #require(lines.first { $0.hasPrefix("  operation") })
        #expect(header.contains("lib"))
        // fast: 900/s, ratio 0.90× with its interval, the engine's 1000/s and lib's 500/s beside it.
        let fastLine = lines.first { Self.isRanked($0, 1, "fast") } ?? ""
        #expect(fastLine.contains("900"))
        #expect(fastLine.contains("0.90× (0.87–0.92)"))
        #expect(fastLine.contains("1k"))
        #expect(fastLine.contains("500"))
        // The operation beside its first choice, its unit beside the second; no title line.
        #expect(lines[fast].hasPrefix("  persist "))
        #expect(lines[slow].hasPrefix("  (msg/s) "))
        #expect(!lines.contains { $0.trimmingCharacters(in: .whitespaces) == "persist (msg/s)" })
        #expect(lines.allSatisfy { $0.count <= SummaryTable.screenWidth })
    }

    @Test func fewIterationsShowNoInterval() {
        let rows = [
            Self.row("a", "persist", throughput: 100, iterations: 1, role: .choice, reference: "e", ratio: 0.5, rounds: 1),
            Self.row("e", "persist", throughput: 200, iterations: 1, role: .raw),
        ]
        let text = SummaryTable.render(Report(rows: rows))
        let line = text.split(separator: "\n").first { Self.isRanked(String($0), 1, "a") } ?? ""
        #expect(line.contains("–"))
        #expect(line.contains("0.50×"))
        // No interval after the figures (the one "(" is the operation's unit, before them).
        #expect(!(line.components(separatedBy: "1 a ").last ?? "(").contains("("))
        #expect(!line.contains("98"))  // no throughput interval from the one iteration
        // The detailed ratio table does not call the lowest and highest of one round a 95% interval.
        let detailed = SummaryTable.detailed(Report(rows: rows))
        #expect(detailed.contains("0.50× [0.48–0.51×]"))
        #expect(!detailed.contains("0.50× (0.48"))
    }

    @Test func makeBenchsBaselineFitsOneScreen() throws {
        let report = try Report(contentsOf: Self.results.appendingPathComponent("baseline.csv"))
        let text = SummaryTable.render(report, roles: ["grdb": .thirdParty])
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        // The rest of the screen: one line of warnings and one of files written.
        #expect(lines.count + 2 <= 60, "\(lines.count) lines:\n\(text)")
        let widest = lines.map(\.count).max() ?? 0
        #expect(widest <= SummaryTable.screenWidth, "a line of \(widest) columns:\n\(text)")
        // Each choice ranked once per operation; the references never.
        for choice in ["json", "plist", "sqlite", "lmdb"] {
            let ranked = lines.filter { $0.range(of: "^  \\S*\\s+[1-4] \(choice) ", options: .regularExpression) != nil }
            #expect(ranked.count == 8, "\(choice)")
        }
        #expect(!lines.contains { $0.range(of: #"^  \S*\s+\d (\w+-raw|grdb) "#, options: .regularExpression) != nil })
    }

    @Test func warningsFoldIntoOneLine() throws {
        var rows = Self.report.rows
        rows[0].iterations = 3
        rows[1].note = "10 of 200 calls timed"
        let warnings = RunWarnings(report: Report(rows: rows), precision: 0.03, maxIterations: 6, timeLimit: 60)
        #expect(warnings.count == warnings.noisy.count + warnings.unsettled.count + 1)
        let line = try #require(warnings.oneLine)
        #expect(line.hasPrefix("storage-bench: \(warnings.count) warnings ("))
        #expect(line.hasSuffix("--verbose prints them"))
        #expect(line.count <= SummaryTable.screenWidth)
        #expect(warnings.detailed.contains("fast persist: 10 of 200 calls timed"))
        #expect(RunWarnings(report: Report(rows: []), precision: 0.03, maxIterations: 6, timeLimit: 60).oneLine == nil)
    }

    @Test func theHTMLReportDrawsEveryBackendInEveryThroughputChart() throws {
        let html = HTMLReport.render(Self.report)
        for operation in ["persist", "query"] {
            let id = "throughput-10x2-full-\(operation)"
            let start = try #require(html.range(of: "<figure class=\"chart\" id=\"\(id)\""))
            let end = try #require(html.range(of: "</figure>", range: start.upperBound..<html.endIndex))
            let figure = html[start.lowerBound..<end.upperBound]
            #expect(figure.contains("data-backends=\"fast,engine,lib,slow\""))
            for backend in ["fast", "slow", "engine", "lib"] {
                #expect(figure.contains("data-backend=\"\(backend)\""), "\(id): \(backend)")
            }
            // Its raw engine right after the fastest choice, not ranked among the choices.
            let order = ["fast", "engine", "lib", "slow"].compactMap { figure.range(of: "data-backend=\"\($0)\"")?.lowerBound }
            #expect(order == order.sorted())
        }
        #expect(html.contains("ratio-10x2-full-persist"))
        #expect(html.contains("<script type=\"text/csv\" id=\"report-data\">"))
        // Nothing fetched: no src, no link, no url(…), no http(s) but the SVG namespace.
        #expect(!html.contains("src=") && !html.contains("<link") && !html.contains("url("))
        let http = html.components(separatedBy: "http").count - 1
        let namespaces = html.components(separatedBy: "http://www.w3.org/2000/svg").count - 1
        #expect(http == namespaces)
        // Provenance is escaped.
        #expect(html.contains("CPU &lt;x&gt;"))
    }

    @Test func eachBackendHasOneColourInEveryReport() {
        #expect(HTMLReport.colour(for: "sqlite") == "#2b8a3e")
        #expect(HTMLReport.colour(for: "lmdb-raw") == "#ffc08a")
        #expect(HTMLReport.colour(for: "someone-elses") == HTMLReport.colour(for: "someone-elses"))
        let html = HTMLReport.render(Self.report)
        let other = HTMLReport.render(Report(rows: Self.report.rows.filter { $0.backend != "fast" }))
        let slow = HTMLReport.colour(for: "slow")
        #expect(html.contains("fill=\"\(slow)\"") && other.contains("fill=\"\(slow)\""))
    }

    @Test func theBaselinesReportsAreSmall() throws {
        for name in ["baseline.csv", "baseline-smoke.csv"] {
            let report = try Report(contentsOf: Self.results.appendingPathComponent(name))
            let html = HTMLReport.render(report, roles: ["grdb": .thirdParty])
            #expect(html.utf8.count < HTMLReport.sizeLimit, "\(name): \(html.utf8.count) bytes")
            #expect(html.contains("id=\"matrix-1"))
        }
    }

    @Test func theComparisonIsInTheReportWhenGiven() throws {
        var slower = Self.report.rows
        slower[1].ratioPaired = 0.5
        slower[1].ratioPairedLow = 0.49
        slower[1].ratioPairedHigh = 0.51
        let comparison = try Comparison(
            baseline: Self.report, current: Report(rows: slower), threshold: 0.1, normalization: .automatic)
        #expect(comparison.exitStatus == Comparison.exitRegressed)
        let html = HTMLReport.render(Report(rows: slower), comparison: comparison)
        #expect(html.contains("<section id=\"comparison\">"))
        #expect(html.contains("<tr class=\"regressed\"><td>fast/full/10x2/persist</td>"))
        #expect(!HTMLReport.render(Self.report).contains("id=\"comparison\""))
    }
}
