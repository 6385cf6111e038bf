import Foundation
import Testing

@testable import StorageBenchKit

@Suite struct CSVTests {
    @Test func plainFieldsAreNotQuoted() {
        #expect(CSV.line(["a", "b c", "1.5"]) == "a,b c,1.5\r\n")
    }

    @Test func awkwardFieldsAreQuoted() {
        #expect(CSV.escape("a,b") == "\"a,b\"")
        #expect(CSV.escape("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(CSV.escape("two\nlines") == "\"two\nlines\"")
        #expect(CSV.escape("cr\rhere") == "\"cr\rhere\"")
        #expect(CSV.escape("") == "")
    }

    @Test func writeThenReadRoundTrips() throws {
        let rows = [
            ["plain", "with,comma", "with \"quotes\"", "line\nbreak", "crlf\r\nbreak"],
            ["", "\"", ",", "\n", "Zürich 🚀 привет"],
            ["trailing,", ",leading", "\"\"", " spaced ", "end"],
        ]
        let text = CSV.document(header: ["a", "b", "c", "d", "e"], rows: rows)
        let parsed = try CSV.parse(text)
        #expect(parsed == [["a", "b", "c", "d", "e"]] + rows)
    }

    @Test func parsesLineFeedsAndAFinalLineWithoutEnd() throws {
        #expect(try CSV.parse("a,b\n1,2\n3,\"x\"") == [["a", "b"], ["1", "2"], ["3", "x"]])
    }

    @Test func rejectsAnUnclosedQuote() {
        #expect(throws: CSV.ParseError.self) { try CSV.parse("a,\"b\n") }
        #expect(throws: CSV.ParseError.self) { try CSV.parse("a,\"b\"c\n") }
    }

    @Test func reportRoundTripsThroughCSVWithAwkwardProvenance() throws {
        let provenance = Provenance(
            runId: "r1", timestamp: "2026-01-01T00:00:00Z", gitCommit: "abc",
            host: "host,with,commas", os: "Linux \"quoted\"", cpu: "CPU\nwith newline",
            swiftVersion: "6.3.1", build: "release")
        let rows = [
            ReportRow(
                workload: "dialog-graph-v1", provenance: provenance, backend: "json", durability: "full",
                operation: "read-by-id", dialogs: 10, messagesPerDialog: 3, units: 10, unit: "lookups",
                iterations: 3, medianSeconds: 0.25, minSeconds: 0.2, maxSeconds: 0.3, meanSeconds: 0.25,
                stddevSeconds: 0.05, throughputPerSecond: 40, p50Microseconds: 12.5, p90Microseconds: 20,
                p99Microseconds: 31.25, bytesOnDisk: 4096, peakRSSBytes: 1 << 24, seed: 42, warmup: 1,
                note: "timed 3 of 10, \"bounded\"\nsee README"),
            ReportRow(
                workload: "dialog-graph-v1", provenance: provenance, backend: "plist", durability: "full",
                operation: "update", dialogs: 10, messagesPerDialog: 3, units: nil, unit: "messages",
                iterations: 3, seed: 42, warmup: 1, error: "update: check failed, text \"a\" ≠ \"b\""),
        ]
        let report = Report(rows: rows)
        let text = report.csv()
        #expect(text.hasPrefix(ReportRow.columns.joined(separator: ",") + "\r\n"))
        let read = try Report(csv: text)
        #expect(read == report)
    }

    @Test func headerStartsWithTheColumnsOfTheIssue() {
        let required = "workload,run_id,timestamp,git_commit,host,os,cpu,swift_version,build,backend,durability,operation,dialogs,messages_per_dialog,units,unit,iterations,median_s,min_s,max_s,mean_s,stddev_s,throughput_per_s,p50_us,p90_us,p99_us,bytes_on_disk,peak_rss_bytes"
        #expect(ReportRow.columns.joined(separator: ",").hasPrefix(required))
    }

    @Test func jsonKeepsIntegersExact() throws {
        let provenance = Provenance(
            runId: "r", timestamp: "t", gitCommit: "", host: "h", os: "o", cpu: "c", swiftVersion: "6", build: "release")
        let row = ReportRow(
            workload: "dialog-graph-v1", provenance: provenance, backend: "json", durability: "full",
            operation: "persist", dialogs: 1, messagesPerDialog: 1, units: 1, unit: "messages", iterations: 1,
            medianSeconds: 0.5, throughputPerSecond: 2, seed: UInt64.max)
        let json = try Report(rows: [row]).json()
        #expect(json.contains("\"seed\" : 18446744073709551615"))
        #expect(json.contains("\"median_s\" : 0.5"))
        #expect(json.contains("\"p50_us\" : null"))
    }

    @Test func aReportWithoutARequiredColumnIsRejected() {
        #expect(throws: ConfigurationError.self) { try Report(csv: "workload,backend\r\nx,y\r\n") }
    }
}

@Suite("Compact numbers")
struct CompactNumberTests {
    @Test("a value that rounds up to the next unit reads in that unit")
    func roundsIntoTheNextUnit() {
        #expect(Format.compact(999_600) == "1M")
        #expect(Format.compact(999_400) == "999k")
        #expect(Format.compact(12_345) == "12.3k")
        #expect(Format.compact(999.7) == "1k")
        #expect(Format.compact(4_560_000) == "4.56M")
        #expect(Format.compact(nil) == "")
    }
}
