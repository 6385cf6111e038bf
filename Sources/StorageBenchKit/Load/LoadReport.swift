import Foundation

/// One row of a load report: a backend × mix × client count × operation
/// type (or `all`, every operation merged).
public struct LoadReportRow: Sendable, Codable, Hashable {
    public var backend: String
    public var reference: String?
    public var mix: String
    public var clients: Int
    public var operation: String
    public var operations: Int
    public var seconds: Double
    public var throughputPerSecond: Double
    public var throughputRatioToRaw: Double?
    public var p50Microseconds: Double
    public var p90Microseconds: Double
    public var p99Microseconds: Double
    public var p999Microseconds: Double
    public var maxMicroseconds: Double
    public var p99RatioToRaw: Double?
    public var intendedP50Microseconds: Double?
    public var intendedP90Microseconds: Double?
    public var intendedP99Microseconds: Double?
    public var intendedP999Microseconds: Double?
    public var intendedMaxMicroseconds: Double?
    public var targetRate: Double?
    public var errors: Int
    public var retries: Int
    public var rows: Int
    public var observerSnapshots: Int?
    public var peakResidentRiseMiB: Double?
    public var api: String
    public var durability: String
    public var dialogs: Int
    public var messagesPerDialog: Int
    public var seed: UInt64
    public var settings: String
    public var mixDescription: String
    public var error: String?

    /// The CSV header, in column order.
    public static let header = [
        "backend", "reference", "mix", "clients", "operation", "operations", "seconds", "throughput_ops_s",
        "throughput_ratio_to_raw", "p50_us", "p90_us", "p99_us", "p999_us", "max_us", "p99_ratio_to_raw",
        "intended_p50_us", "intended_p90_us", "intended_p99_us", "intended_p999_us", "intended_max_us",
        "target_rate", "errors", "retries", "rows", "observer_snapshots", "peak_rss_rise_mib", "api", "durability",
        "dialogs", "messages_per_dialog", "seed", "settings", "mix_description", "error",
    ]

    /// The row's fields, in ``header``'s order.
    public var fields: [String] {
        func number(_ value: Double?, _ digits: Int = 3) -> String {
            guard let value else { return "" }
            return String(format: "%.\(digits)f", value)
        }
        return [
            backend, reference ?? "", mix, String(clients), operation, String(operations), number(seconds),
            number(throughputPerSecond, 1), number(throughputRatioToRaw), number(p50Microseconds),
            number(p90Microseconds), number(p99Microseconds), number(p999Microseconds), number(maxMicroseconds),
            number(p99RatioToRaw), number(intendedP50Microseconds), number(intendedP90Microseconds),
            number(intendedP99Microseconds), number(intendedP999Microseconds), number(intendedMaxMicroseconds),
            number(targetRate, 1), String(errors), String(retries), String(rows),
            observerSnapshots.map(String.init) ?? "", number(peakResidentRiseMiB, 1), api, durability,
            String(dialogs), String(messagesPerDialog), String(seed), settings, mixDescription, error ?? "",
        ]
    }
}

/// The load command's report: rows, CSV, JSON and the terminal summary.
public enum LoadReport {
    /// The rows of `results`: each run's operations then `all`; a run that
    /// could not run gives one `all` row with its failure.
    public static func rows(_ results: [LoadRunResult]) -> [LoadReportRow] {
        var rows: [LoadReportRow] = []
        for result in results {
            let figures =
                result.figures.isEmpty
                ? [
                    LoadOperationFigures(
                        operation: "all", operations: 0, throughput: 0, errors: 0, retries: 0, rows: 0, p50: 0,
                        p90: 0, p99: 0, p999: 0, max: 0, firstError: nil)
                ] : result.figures
            for figure in figures {
                let ratio = LoadRatio.of(figure, in: result, among: results)
                rows.append(
                    LoadReportRow(
                        backend: result.backend, reference: result.reference, mix: result.mix,
                        clients: result.clients, operation: figure.operation, operations: figure.operations,
                        seconds: result.seconds, throughputPerSecond: figure.throughput,
                        throughputRatioToRaw: ratio.throughput, p50Microseconds: figure.p50,
                        p90Microseconds: figure.p90, p99Microseconds: figure.p99, p999Microseconds: figure.p999,
                        maxMicroseconds: figure.max, p99RatioToRaw: ratio.p99,
                        intendedP50Microseconds: figure.intendedP50, intendedP90Microseconds: figure.intendedP90,
                        intendedP99Microseconds: figure.intendedP99, intendedP999Microseconds: figure.intendedP999,
                        intendedMaxMicroseconds: figure.intendedMax, targetRate: result.targetRate,
                        errors: figure.errors + (result.failure == nil ? 0 : 1), retries: figure.retries,
                        rows: figure.rows, observerSnapshots: figure.operation == "all" ? result.observerSnapshots : nil,
                        peakResidentRiseMiB: result.peakResidentRise.map { Double($0) / 1_048_576 },
                        api: result.api, durability: result.durability, dialogs: result.dialogs,
                        messagesPerDialog: result.messagesPerDialog, seed: result.seed, settings: result.settings,
                        mixDescription: result.mixDescription, error: result.failure ?? figure.firstError))
            }
        }
        return rows
    }

    /// The rows as CSV (RFC 4180).
    public static func csv(_ rows: [LoadReportRow]) -> String {
        CSV.document(header: LoadReportRow.header, rows: rows.map(\.fields))
    }

    /// The rows as a JSON document: `{"workload": "load", "rows": […]}`.
    /// - Throws: when encoding fails.
    public static func json(_ rows: [LoadReportRow]) throws -> String {
        struct Document: Encodable {
            let workload = "dialog-graph-load"
            let rows: [LoadReportRow]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: try encoder.encode(Document(rows: rows)), as: UTF8.self) + "\n"
    }

    /// The compact terminal summary (at most 100 columns a line): per mix, the
    /// settings in force once per backend, then a line per backend × clients ×
    /// operation.
    public static func summary(_ results: [LoadRunResult]) -> String {
        let rows = Self.rows(results)
        var text = ""
        var mixes: [String] = []
        for row in rows where !mixes.contains(row.mix) { mixes.append(row.mix) }
        for mix in mixes {
            let mixRows = rows.filter { $0.mix == mix }
            guard let first = mixRows.first else { continue }
            let seconds = results.first { $0.mix == mix && $0.failure == nil }?.seconds ?? 0
            text += "\(mix): \(first.mixDescription)\n"
            text += "  \(first.dialogs) dialogs × \(first.messagesPerDialog) messages, durability \(first.durability)"
            text += ", about \(String(format: "%.1f", seconds)) s per run"
            if let rate = first.targetRate { text += ", target \(String(format: "%g", rate)) ops/s" }
            text += "\n"
            var described: Set<String> = []
            for row in mixRows where !described.contains(row.backend) && !row.settings.isEmpty {
                described.insert(row.backend)
                text += wrap("  \(row.backend) (\(row.api)): \(row.settings)", indent: "      ")
            }
            text += pad("backend", 10) + pad("C", 3, right: true) + " " + pad("operation", 17)
            text += pad("ops/s", 10, right: true) + pad("p50 µs", 9, right: true) + pad("p99 µs", 9, right: true)
            text += pad("p99.9 µs", 10, right: true) + pad("max µs", 10, right: true) + pad("err", 5, right: true)
            text += pad("×raw", 6, right: true) + pad("×p99", 6, right: true) + "\n"
            for row in mixRows {
                text += pad(row.backend, 10) + pad(String(row.clients), 3, right: true) + " " + pad(row.operation, 17)
                if let error = row.error, row.operations == 0 {
                    text += wrap("  failed: \(error)", indent: "      ")
                    continue
                }
                text += pad(format(row.throughputPerSecond), 10, right: true)
                text += pad(format(row.p50Microseconds), 9, right: true)
                text += pad(format(row.p99Microseconds), 9, right: true)
                text += pad(format(row.p999Microseconds), 10, right: true)
                text += pad(format(row.maxMicroseconds), 10, right: true)
                text += pad(String(row.errors), 5, right: true)
                text += pad(row.throughputRatioToRaw.map(ratio) ?? "", 6, right: true)
                text += pad(row.p99RatioToRaw.map(ratio) ?? "", 6, right: true)
                text += "\n"
                if let p99 = row.intendedP99Microseconds, let p50 = row.intendedP50Microseconds {
                    text += pad("", 14) + pad("  from intended", 17) + pad("", 10)
                    text += pad(format(p50), 9, right: true) + pad(format(p99), 9, right: true)
                    text += pad(row.intendedP999Microseconds.map(format) ?? "", 10, right: true)
                    text += pad(row.intendedMaxMicroseconds.map(format) ?? "", 10, right: true) + "\n"
                }
            }
            let failing = Set(mixRows.filter { $0.errors > 0 }.map(\.backend))
            for backend in failing.sorted() {
                let first = mixRows.first { $0.backend == backend && $0.error != nil }?.error ?? "?"
                text += wrap("  \(backend) had errors under load; first: \(first)", indent: "      ")
            }
            text += "\n"
        }
        return text
    }

    /// A figure with 3 significant digits or as an integer when large.
    static func format(_ value: Double) -> String {
        if value >= 10_000 { return String(format: "%.0f", value) }
        if value >= 100 { return String(format: "%.1f", value) }
        return String(format: "%.2f", value)
    }

    /// A ratio with 2 decimals, or fewer when large.
    static func ratio(_ value: Double) -> String {
        String(format: value >= 100 ? "%.0f" : value >= 10 ? "%.1f" : "%.2f", value)
    }

    static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let count = text.count
        // A figure wider than its column keeps one space before it.
        guard count < width else { return right ? " " + text : text }
        let spaces = String(repeating: " ", count: width - count)
        return right ? spaces + text : text + spaces
    }

    /// `text` broken at spaces into lines of at most 100 columns, later lines indented.
    static func wrap(_ text: String, indent: String) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            let candidate = line.isEmpty ? String(word) : line + " " + word
            if candidate.count > 100 && !line.isEmpty {
                lines.append(line)
                line = indent + word
            } else {
                line = candidate
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines.joined(separator: "\n") + "\n"
    }
}
