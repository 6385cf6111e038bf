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
    /// The peak resident memory of the backend's own worker process, in MiB.
    public var peakResidentMiB: Double? = nil
    /// ``peakResidentMiB`` ÷ the reference's at the same mix and client count.
    public var peakResidentRatioToRaw: Double? = nil
    public var api: String
    public var durability: String
    public var dialogs: Int
    public var messagesPerDialog: Int
    public var seed: UInt64
    public var settings: String
    public var mixDescription: String
    public var error: String?
    /// The service-time latency at each percentile of ``LatencySpectrum/ladder``.
    public var spectrum: LatencySpectrum? = nil
    /// Where and how the load run was made.
    public var provenance: Provenance? = nil

    /// The CSV header, in column order.
    public static let header = [
        "backend", "reference", "mix", "clients", "operation", "operations", "seconds", "throughput_ops_s",
        "throughput_ratio_to_raw", "p50_us", "p90_us", "p99_us", "p999_us", "max_us", "p99_ratio_to_raw",
        "intended_p50_us", "intended_p90_us", "intended_p99_us", "intended_p999_us", "intended_max_us",
        "target_rate", "errors", "retries", "rows", "observer_snapshots", "peak_rss_rise_mib", "peak_rss_mib", "peak_rss_ratio_to_raw", "api", "durability",
        "dialogs", "messages_per_dialog", "seed", "settings", "mix_description", "error", "latency_spectrum_us",
        "run_id", "timestamp", "git_commit", "host", "os", "cpu", "swift_version", "build",
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
            observerSnapshots.map(String.init) ?? "", number(peakResidentRiseMiB, 1), number(peakResidentMiB, 1), number(peakResidentRatioToRaw),
            api, durability,
            String(dialogs), String(messagesPerDialog), String(seed), settings, mixDescription, error ?? "",
            spectrum?.text ?? "", provenance?.runId ?? "", provenance?.timestamp ?? "", provenance?.gitCommit ?? "",
            provenance?.host ?? "", provenance?.os ?? "", provenance?.cpu ?? "", provenance?.swiftVersion ?? "",
            provenance?.build ?? "",
        ]
    }
}

extension LoadReportRow {
    /// Reads a row from CSV fields named by `header` (a load report's).
    /// - Throws: ``ConfigurationError`` naming a missing column or a cell that is not a number.
    public init(fields: [String], header: [String]) throws {
        var byName: [String: String] = [:]
        for (name, value) in zip(header, fields) { byName[name] = value }
        func string(_ name: String) throws -> String {
            guard let value = byName[name] else { throw ConfigurationError("the load report has no '\(name)' column") }
            return value
        }
        func optional<T: LosslessStringConvertible>(_ name: String, _: T.Type = T.self) throws -> T? {
            guard let text = byName[name], !text.isEmpty else { return nil }
            guard let value = T(text) else { throw ConfigurationError("'\(text)' in column \(name) is not a number") }
            return value
        }
        func required<T: LosslessStringConvertible>(_ name: String, _: T.Type = T.self) throws -> T {
            guard let value: T = try optional(name) else { throw ConfigurationError("column \(name) is empty") }
            return value
        }
        backend = try string("backend")
        let referenceText = try string("reference")
        reference = referenceText.isEmpty ? nil : referenceText
        mix = try string("mix")
        clients = try required("clients")
        operation = try string("operation")
        operations = try required("operations")
        seconds = try required("seconds")
        throughputPerSecond = try required("throughput_ops_s")
        throughputRatioToRaw = try optional("throughput_ratio_to_raw")
        p50Microseconds = try required("p50_us")
        p90Microseconds = try required("p90_us")
        p99Microseconds = try required("p99_us")
        p999Microseconds = try required("p999_us")
        maxMicroseconds = try required("max_us")
        p99RatioToRaw = try optional("p99_ratio_to_raw")
        intendedP50Microseconds = try optional("intended_p50_us")
        intendedP90Microseconds = try optional("intended_p90_us")
        intendedP99Microseconds = try optional("intended_p99_us")
        intendedP999Microseconds = try optional("intended_p999_us")
        intendedMaxMicroseconds = try optional("intended_max_us")
        targetRate = try optional("target_rate")
        errors = try required("errors")
        retries = try required("retries")
        rows = try required("rows")
        observerSnapshots = try optional("observer_snapshots")
        peakResidentRiseMiB = try optional("peak_rss_rise_mib")
        peakResidentMiB = try optional("peak_rss_mib")
        peakResidentRatioToRaw = try optional("peak_rss_ratio_to_raw")
        api = try string("api")
        durability = try string("durability")
        dialogs = try required("dialogs")
        messagesPerDialog = try required("messages_per_dialog")
        seed = try required("seed")
        settings = try string("settings")
        mixDescription = try string("mix_description")
        let errorText = try string("error")
        error = errorText.isEmpty ? nil : errorText
        // Columns added after the first load reports: absent in older ones.
        if let text = byName["latency_spectrum_us"], !text.isEmpty {
            spectrum = try LatencySpectrum(parsing: text)
        }
        if let runId = byName["run_id"], !runId.isEmpty {
            provenance = Provenance(
                runId: runId, timestamp: byName["timestamp"] ?? "", gitCommit: byName["git_commit"] ?? "",
                host: byName["host"] ?? "", os: byName["os"] ?? "", cpu: byName["cpu"] ?? "",
                swiftVersion: byName["swift_version"] ?? "", build: byName["build"] ?? "")
        }
    }
}

/// The load command's report: rows, CSV, JSON and the terminal summary.
public enum LoadReport {
    /// The rows of `results`: each run's operations then `all`; a run that
    /// could not run gives one `all` row with its failure.
    public static func rows(_ results: [LoadRunResult], provenance: Provenance? = nil) -> [LoadReportRow] {
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
                let memoryRatio = LoadRatio.memory(of: result, among: results)
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
                        peakResidentMiB: result.peakResident.map { Double($0) / 1_048_576 },
                        peakResidentRatioToRaw: memoryRatio,
                        api: result.api, durability: result.durability, dialogs: result.dialogs,
                        messagesPerDialog: result.messagesPerDialog, seed: result.seed, settings: result.settings,
                        mixDescription: result.mixDescription, error: result.failure ?? figure.firstError,
                        spectrum: figure.spectrum, provenance: provenance))
            }
        }
        return rows
    }

    /// The rows of the load report (CSV) at `url`.
    /// - Throws: ``ConfigurationError`` naming the file, when it cannot be
    ///   read, is not CSV or is not a load report.
    public static func read(contentsOf url: URL) throws -> [LoadReportRow] {
        let text: String
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch {
            throw ConfigurationError("\(url.relativePath): cannot be read: \(error.localizedDescription)")
        }
        do {
            let records = try CSV.parse(text)
            guard let header = records.first else { throw ConfigurationError("the report is empty") }
            guard header.contains("mix"), header.contains("clients") else {
                throw ConfigurationError("not a load report (it has no mix and clients columns)")
            }
            var rows: [LoadReportRow] = []
            for (index, record) in records.dropFirst().enumerated() where record != [""] {
                guard record.count == header.count else {
                    throw ConfigurationError("row \(index + 1) has \(record.count) fields; the header has \(header.count)")
                }
                rows.append(try LoadReportRow(fields: record, header: header))
            }
            return rows
        } catch let error as ConfigurationError {
            throw ConfigurationError("\(url.relativePath): \(error.message)")
        } catch let error as CSV.ParseError {
            throw ConfigurationError("\(url.relativePath): not CSV: \(error.description)")
        }
    }

    /// Whether `csv`, a report's text, is a load report: its header has `mix` and `clients`.
    public static func isLoadReport(csv: String) -> Bool {
        let header = csv.prefix { $0 != "\n" && $0 != "\r\n" }.split(separator: ",").map(String.init)
        return header.contains("mix") && header.contains("clients")
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

    /// The one-screen summary (lines of at most 100 columns), the layout of
    /// `run`'s: per mix, the backends a user can choose ranked by throughput
    /// at the most clients (every operation type together), with their
    /// throughput at each client count, their p99 and their ratios to their
    /// raw engine at the most clients, and the references as columns. Rows
    /// take the role `roles` gives them, else the one their name implies.
    public static func summary(_ rows: [LoadReportRow], roles: [String: BackendRole] = [:]) -> String {
        let tables = screenTables(rows, roles: roles)
        // A reference column empty at the end of a row leaves no trailing spaces.
        func aligned(_ table: [[String]]) -> [String] {
            SummaryTable.align(table).split(separator: "\n").map { String($0.reversed().drop { $0 == " " }.reversed()) }
        }
        // Mixes with the same columns (the same client counts and references)
        // share one header and one alignment; each mix's title starts at the
        // margin above its rows.
        var text = ""
        var index = 0
        while index < tables.count {
            guard let header = tables[index].rows.first else {
                index += 1
                continue
            }
            var end = index + 1
            while end < tables.count, tables[end].rows.first == header { end += 1 }
            let group = tables[index..<end]
            let lines = aligned([header] + group.flatMap { $0.rows.dropFirst() })
            text += lines.prefix(2).map { $0 + "\n" }.joined()
            var next = 2
            for table in group {
                text += LoadReport.wrap(table.title, indent: "  ")
                let count = table.rows.count - 1
                text += lines[next..<min(next + count, lines.count)].map { $0 + "\n" }.joined()
                next += count
                for note in table.notes { text += LoadReport.wrap("  " + note, indent: "    ") }
            }
            index = end
        }
        return text
    }

    /// The legend of ``summary(_:roles:)``, once above it.
    public static let summaryLegend = """
        Under load (all operations): choices ranked by ops/s at the most clients C; p99, ÷ raw at that C

        """

    /// The summary as Markdown tables, one per mix.
    public static func markdown(_ rows: [LoadReportRow], roles: [String: BackendRole] = [:]) -> String {
        var text = ""
        for table in screenTables(rows, roles: roles) {
            text += "### \(table.title)\n\n"
            guard let header = table.rows.first else { continue }
            text += "| " + header.joined(separator: " | ") + " |\n"
            text += "| --- |" + String(repeating: " ---: |", count: max(header.count - 1, 0)) + "\n"
            for row in table.rows.dropFirst() {
                text += "| " + row.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " | ") + " |\n"
            }
            text += table.notes.map { "\n\($0)\n" }.joined() + "\n"
        }
        return text
    }

    /// Per mix: a title, the table (header first) and notes (errors).
    static func screenTables(_ rows: [LoadReportRow], roles: [String: BackendRole])
        -> [(title: String, rows: [[String]], notes: [String])]
    {
        var tables: [(String, [[String]], [String])] = []
        for mix in SummaryTable.orderedUnique(rows.map(\.mix)) {
            let here = rows.filter { $0.mix == mix && $0.operation == "all" }
            guard let first = here.first else { continue }
            let clients = Set(here.map(\.clients)).sorted()
            let most = clients.last ?? 1
            func role(_ backend: String) -> BackendRole { BackendRole.inferred(for: backend, known: roles) }
            func cell(_ backend: String, _ count: Int) -> LoadReportRow? {
                here.first { $0.backend == backend && $0.clients == count }
            }
            func ran(_ row: LoadReportRow?) -> LoadReportRow? { row.flatMap { $0.operations > 0 ? $0 : nil } }
            let backends = SummaryTable.orderedUnique(here.map(\.backend))
            let thirdParty = backends.filter { role($0) == .thirdParty }
            let hasReference = here.contains { role($0.backend) == .choice && $0.reference != nil }
            // Peak memory ÷ raw: with workers of their own (not --in-process).
            let hasMemory = hasReference && here.contains { $0.peakResidentRatioToRaw != nil }
            var header = ["choice"] + clients.map { "ops/s C=\($0)" } + ["p99 µs"]
            if hasReference { header += ["÷ raw", "p99 ÷ raw"] + (hasMemory ? ["mem ÷ raw"] : []) + ["raw engine"] }
            header += thirdParty
            var table = [header]
            let ranked = backends.filter { role($0) == .choice }.sorted {
                (ran(cell($0, most))?.throughputPerSecond ?? -1) > (ran(cell($1, most))?.throughputPerSecond ?? -1)
            }
            for (rank, backend) in ranked.enumerated() {
                var line = ["\(rank + 1) \(backend)"]
                for count in clients {
                    line.append(ran(cell(backend, count)).map { Format.compact($0.throughputPerSecond) } ?? "error")
                }
                let top = ran(cell(backend, most))
                line.append(top.map { Format.micro($0.p99Microseconds) } ?? "")
                if hasReference {
                    line.append(top?.throughputRatioToRaw.map(Format.ratio) ?? "–")
                    line.append(top?.p99RatioToRaw.map(Format.ratio) ?? "–")
                    if hasMemory { line.append(top?.peakResidentRatioToRaw.map(Format.ratio) ?? "–") }
                    let engine = top?.reference.flatMap { ran(cell($0, most)) }
                    line.append(engine.map { Format.compact($0.throughputPerSecond) } ?? "")
                }
                for library in thirdParty {
                    let other = cell(library, most)
                    let shares = other?.reference != nil && other?.reference == top?.reference
                    line.append(shares ? (ran(other).map { Format.compact($0.throughputPerSecond) } ?? "error") : "")
                }
                table.append(line)
            }
            let seconds = here.map(\.seconds).max() ?? 0
            // D=… × M=… (the docs' notation) keeps a built-in mix's title on one line of 100 columns.
            var title = "\(mix) (\(first.mixDescription)): D=\(first.dialogs) × M=\(first.messagesPerDialog), "
            title += "durability \(first.durability), \(String(format: "%.1f", seconds)) s"
            if let rate = first.targetRate { title += ", target \(String(format: "%g", rate)) ops/s" }
            var notes: [String] = []
            let failing = backends.filter { backend in
                rows.contains { $0.mix == mix && $0.backend == backend && $0.errors > 0 }
            }
            if !failing.isEmpty {
                notes.append("errors under load: \(failing.joined(separator: ", ")) (the error column; --verbose)")
            }
            tables.append((title, table, notes))
        }
        return tables
    }

    /// Every figure (`--verbose`): per mix, the settings in force once per
    /// backend, then a line per backend × clients × operation (at most 100
    /// columns a line).
    public static func detailed(_ rows: [LoadReportRow]) -> String {
        var text = ""
        var mixes: [String] = []
        for row in rows where !mixes.contains(row.mix) { mixes.append(row.mix) }
        for mix in mixes {
            let mixRows = rows.filter { $0.mix == mix }
            guard let first = mixRows.first else { continue }
            let seconds = mixRows.filter { $0.operations > 0 }.map(\.seconds).max() ?? 0
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
    static func wrap(_ text: String, indent: String, width: Int = 100) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            let candidate = line.isEmpty ? String(word) : line + " " + word
            if candidate.count > width && !line.isEmpty {
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
