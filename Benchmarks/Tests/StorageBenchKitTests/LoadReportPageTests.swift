import DAOCore
import Foundation
import Testing

@testable import StorageBenchKit

@Suite("Latency spectra, and the load run's report: its CSV read back, its screen, its page")
struct LoadReportPageTests {
    @Test func aSpectrumHoldsTheHistogramsPercentiles() throws {
        // 1000 calls of 1…1000 µs: the percentiles are known to three digits.
        let spectrum = try #require(LatencySpectrum(nanoseconds: (1...1000).map { UInt64($0) * 1000 }))
        #expect(spectrum.points.map(\.percentile) == LatencySpectrum.ladder)
        let p50 = try #require(spectrum.microseconds(at: 50))
        let p99 = try #require(spectrum.microseconds(at: 99))
        #expect(abs(p50 - 500) <= 1, "\(p50)")
        #expect(abs(p99 - 990) <= 1, "\(p99)")
        #expect(abs((spectrum.microseconds(at: 0) ?? 0) - 1) <= 0.01)
        #expect(abs((spectrum.microseconds(at: 100) ?? 0) - 1000) <= 1)
        // Rising with the percentile.
        let values = spectrum.points.map(\.microseconds)
        #expect(zip(values, values.dropFirst()).allSatisfy { $0 <= $1 })
        // Its CSV cell reads back.
        #expect(try LatencySpectrum(parsing: spectrum.text) == spectrum)
        #expect(LatencySpectrum(nanoseconds: []) == nil)
        for bad in ["50", "50:x", "101:3", "50:-1", "a:b"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try LatencySpectrum(parsing: bad) }
        }
    }

    /// Rows of a real sweep (json and lmdb at 1 and 2 clients), with an
    /// `lmdb-raw` reference and a third-party library made from lmdb's rows
    /// at other throughputs, so that the page and the screen have every role.
    static func rows() async throws -> [LoadReportRow] {
        let mix = try LoadRunTests.mix(["read": 0.5, "update": 0.5])
        let results = try await LoadRunTests.run(mix, backends: ["json", "lmdb"], clients: [1, 2], operations: 60)
        let provenance = Provenance.thisRun(startedAt: Date())
        var rows = LoadReport.rows(results, provenance: provenance)
        for index in rows.indices where rows[index].backend == "lmdb" { rows[index].reference = "lmdb-raw" }
        let lmdb = rows.filter { $0.backend == "lmdb" }
        rows += lmdb.map { row in
            var raw = row
            raw.backend = "lmdb-raw"
            raw.reference = nil
            raw.throughputPerSecond *= 1.25
            return raw
        }
        rows += lmdb.map { row in
            var other = row
            other.backend = "someones-lib"
            other.throughputPerSecond *= 0.5
            return other
        }
        return rows
    }

    static let roles: [String: BackendRole] = ["someones-lib": .thirdParty]

    @Test func theLoadCSVReadsBack() async throws {
        let rows = try await Self.rows()
        #expect(rows.allSatisfy { $0.spectrum != nil && $0.provenance != nil })
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("load-\(UUID().uuidString).csv")
        defer {
            do { try FileManager.default.removeItem(at: url) } catch { Issue.record("\(error)") }
        }
        try Data(LoadReport.csv(rows).utf8).write(to: url)
        #expect(LoadReport.isLoadReport(csv: LoadReport.csv(rows)))
        #expect(!LoadReport.isLoadReport(csv: Report(rows: []).csv()))
        let read = try LoadReport.read(contentsOf: url)
        #expect(read.count == rows.count)
        #expect(LoadReport.csv(read) == LoadReport.csv(rows))
        // A damaged file is refused with its name.
        try Data("mix,clients\n1,2,3\n".utf8).write(to: url)
        do {
            _ = try LoadReport.read(contentsOf: url)
            Issue.record("a damaged load report was read")
        } catch let error as ConfigurationError {
            #expect(error.message.hasPrefix(url.relativePath))
        }
    }

    @Test func theScreenRanksTheChoicesAndFitsOneScreen() async throws {
        let rows = try await Self.rows()
        let text = LoadReport.summaryLegend + LoadReport.summary(rows, roles: Self.roles)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.allSatisfy { $0.count <= SummaryTable.screenWidth }, "\(text)")
        #expect(!lines.contains { $0.hasSuffix(" ") }, "\(text)")
        #expect(lines.count <= 12, "\(text)")
        // The choices ranked; references are columns, never ranked rows.
        let ranked = lines.filter { $0.range(of: #"^  \d (\S+) "#, options: .regularExpression) != nil }
        #expect(ranked.count == 2, "\(text)")
        #expect(!ranked.contains { $0.contains("lmdb-raw") || $0.contains("someones-lib") })
        let header = try #require(lines.first { $0.hasPrefix("  choice") })
        for column in ["ops/s C=1", "ops/s C=2", "p99 µs", "÷ raw", "raw engine", "someones-lib"] {
            #expect(header.contains(column), "\(header)")
        }
        // lmdb's ratio to its raw engine is the one its rows carry.
        let lmdbLine = try #require(ranked.first { $0.contains(" lmdb ") })
        let lmdbAtTwo = try #require(rows.first { $0.backend == "lmdb" && $0.clients == 2 && $0.operation == "all" })
        #expect(lmdbLine.contains(Format.compact(lmdbAtTwo.throughputPerSecond)))
        let markdown = LoadReport.markdown(rows, roles: Self.roles)
        #expect(markdown.contains("| choice | ops/s C=1 | ops/s C=2 |"))
    }

    @Test func theLoadPageDrawsEveryBackendInEveryChart() async throws {
        let rows = try await Self.rows()
        let html = HTMLReport.render(Report(rows: []), roles: Self.roles, load: rows)
        #expect(html.utf8.count < HTMLReport.sizeLimit)
        #expect(html.contains("id=\"load-data\""))
        #expect(html.contains(try #require(rows.first?.provenance?.runId)))
        let backends = ["json", "lmdb", "lmdb-raw", "someones-lib"]
        for id in ["load-throughput-test", "load-p99-test", "load-spectrum-test-c1", "load-spectrum-test-c2",
            "load-cdf-test-c2", "load-spectrum-test-read-c2", "load-spectrum-test-update-c2", "load-memory-test"]
        {
            let start = try #require(html.range(of: "<figure class=\"chart\" id=\"\(id)\""), "\(id)")
            let end = try #require(html.range(of: "</figure>", range: start.upperBound..<html.endIndex))
            let figure = html[start.lowerBound..<end.upperBound]
            // The reference is named right after the backend it is measured against.
            let names = figure.firstMatch(of: /data-backends="([^"]*)"/).map { String($0.1) }
            #expect(names == backends.joined(separator: ","), "\(id)")
            for backend in backends {
                #expect(figure.contains("data-backend=\"\(backend)\""), "\(id) \(backend)")
                #expect(figure.contains(HTMLReport.colour(for: backend)), "\(id) \(backend)")
            }
            #expect(figure.contains("lmdb-raw (raw)"))
        }
        // One colour per backend, the same as in a run's page; the PostgreSQL backends have theirs.
        #expect(HTMLReport.colour(for: "lmdb") == "#e8590c")
        #expect(HTMLReport.colour(for: "postgres") != HTMLReport.colour(for: "postgres-raw"))
        #expect(!HTMLReport.otherColours.contains(HTMLReport.colour(for: "postgres")))
    }

    @Test func aRunsPageTakesTheLoadRowsAndItsOwnSpectra() async throws {
        let rows = try await Self.rows()
        let spectrum = try #require(LatencySpectrum(nanoseconds: (1...200).map { UInt64($0) * 997 }))
        var run = ReportRow(
            workload: "dialog-graph-v1", provenance: Provenance.thisRun(startedAt: Date()), backend: "lmdb",
            durability: "full", operation: "read-by-id", dialogs: 10, messagesPerDialog: 2, units: 10, unit: "lookups",
            iterations: 6, medianSeconds: 0.001, throughputPerSecond: 10_000, p50Microseconds: 100,
            p90Microseconds: 180, p99Microseconds: 198)
        run.latencySpectrum = spectrum
        let report = Report(rows: [run])
        // The spectrum goes through the run's CSV.
        let readBack = try Report(csv: report.csv())
        #expect(readBack.rows.first?.latencySpectrum == spectrum)
        let html = HTMLReport.render(report, load: rows)
        for id in ["spectrum-10x2-full-read-by-id", "cdf-10x2-full-read-by-id", "load-throughput-test"] {
            #expect(html.contains("id=\"\(id)\""), "\(id)")
        }
        #expect(html.contains("id=\"report-data\"") && html.contains("id=\"load-data\""))
    }
}
