import DAOCore
import Foundation

/// Where and how a report was made: the columns every row of a run shares.
public struct Provenance: Sendable, Hashable, Codable {
    /// A unique id of the run.
    public var runId: String
    /// When the run started, ISO 8601 in UTC.
    public var timestamp: String
    /// The commit of the working tree (with `-dirty` when it had changes), or empty.
    public var gitCommit: String
    /// The machine's host name.
    public var host: String
    /// The operating system and kernel.
    public var os: String
    /// The processor model and the number of logical cores.
    public var cpu: String
    /// The Swift compiler that built the harness.
    public var swiftVersion: String
    /// `release` or `debug`.
    public var build: String

    /// Creates a provenance.
    public init(
        runId: String, timestamp: String, gitCommit: String, host: String, os: String, cpu: String,
        swiftVersion: String, build: String
    ) {
        self.runId = runId
        self.timestamp = timestamp
        self.gitCommit = gitCommit
        self.host = host
        self.os = os
        self.cpu = cpu
        self.swiftVersion = swiftVersion
        self.build = build
    }
}

extension Provenance {
    /// The provenance of a run on this machine and build that starts at
    /// `started`: a run id of its time, host and a random suffix.
    public static func thisRun(startedAt started: Date) -> Provenance {
        let host = SystemInfo.host
        return Provenance(
            runId: "\(ReportWriter.compactTimestamp(started))-\(host)-\(UUID().uuidString.prefix(8).lowercased())",
            timestamp: ISO8601DateFormatter().string(from: started), gitCommit: SystemInfo.gitCommit, host: host,
            os: SystemInfo.os, cpu: SystemInfo.cpu, swiftVersion: SystemInfo.swiftVersion, build: SystemInfo.build)
    }
}

/// One row of a report: one backend × durability × size × operation.
public struct ReportRow: Sendable, Hashable {
    /// The columns of the CSV report, in order. The first 28 are fixed by the
    /// issue; more may only be added after them.
    public static let columns = [
        "workload", "run_id", "timestamp", "git_commit", "host", "os", "cpu", "swift_version", "build",
        "backend", "durability", "operation", "dialogs", "messages_per_dialog", "units", "unit", "iterations",
        "median_s", "min_s", "max_s", "mean_s", "stddev_s", "throughput_per_s", "p50_us", "p90_us", "p99_us",
        "bytes_on_disk", "peak_rss_bytes", "seed", "warmup", "note", "error", "settings", "reference", "ratio_to_raw",
        "instructions", "allocations", "ci_low", "ci_high", "ratio_paired", "ratio_paired_low", "ratio_paired_high",
        "ratio_instructions", "peak_rss_workload_bytes", "op_peak_rss_bytes", "decoded_bytes",
        "runs_in_place", "ratio_paired_rounds", "role", "latency_spectrum_us",
    ]

    /// The workload name and version (`dialog-graph-v1`).
    public var workload: String
    /// The run's provenance.
    public var provenance: Provenance
    /// The backend's name.
    public var backend: String
    /// The durability the store was opened with.
    public var durability: String
    /// The operation's name.
    public var operation: String
    /// `D`.
    public var dialogs: Int
    /// `M`.
    public var messagesPerDialog: Int
    /// The counted units timed per iteration.
    public var units: Int?
    /// The counted unit (`messages`, `lookups`, …).
    public var unit: String
    /// The number of measured iterations (warm-up not counted).
    public var iterations: Int
    /// The median wall time of the timed work, in seconds.
    public var medianSeconds: Double?
    /// The fastest iteration, in seconds.
    public var minSeconds: Double?
    /// The slowest iteration, in seconds.
    public var maxSeconds: Double?
    /// The mean, in seconds.
    public var meanSeconds: Double?
    /// The sample standard deviation, in seconds.
    public var stddevSeconds: Double?
    /// Units per second at the median time.
    public var throughputPerSecond: Double?
    /// The median call latency, in microseconds (per-call operations only).
    public var p50Microseconds: Double?
    /// The 90th percentile call latency, in microseconds.
    public var p90Microseconds: Double?
    /// The 99th percentile call latency, in microseconds.
    public var p99Microseconds: Double?
    /// The store's size on disk after `update` (median over iterations), in bytes.
    public var bytesOnDisk: Int64?
    /// The largest peak resident memory of the backend's worker processes, in bytes.
    public var peakRSSBytes: Int64?
    /// The generator seed.
    public var seed: UInt64?
    /// The number of warm-up iterations run before the measured ones.
    public var warmup: Int?
    /// What was done differently from WORKLOAD.md (a bounded number of calls).
    public var note: String
    /// Why the backend has no figures (an error or a failed correctness check), or empty.
    public var error: String
    /// The store's settings in force, as the store read them back (for SQLite,
    /// the pragmas; for LMDB, the environment flags), or empty.
    public var settings: String = ""
    /// The backend this one is measured against (its raw engine, e.g. `sqlite-raw`
    /// for `sqlite`), as the backend declares it, or empty.
    public var reference: String = ""
    /// This row's throughput divided by the throughput of its ``reference``'s
    /// row of the same run, durability, size and operation: 1 is as fast as the
    /// raw engine, 0.25 a quarter of its speed. `nil` when the reference did not
    /// run or either row has no throughput.
    public var ratioToRaw: Double?
    /// Instructions executed inside the operation's timed region(s) per
    /// iteration, median of the callgrind iterations; `nil` when not counted.
    public var instructions: Int64?
    /// Calls to the C allocator inside the timed region(s) per iteration,
    /// median of the callgrind iterations; `nil` when not counted.
    public var allocations: Int64?
    /// The lower bound of the 95% confidence interval of ``medianSeconds``
    /// (distribution-free, from the order statistics), in seconds.
    public var ciLowSeconds: Double?
    /// The upper bound of the 95% confidence interval of ``medianSeconds``, in seconds.
    public var ciHighSeconds: Double?
    /// The ratio to the ``reference`` taken round by round (``PairedRatio``):
    /// the median of this backend's throughput divided by the reference's in
    /// the same round, each pair run side by side. `nil` without a reference
    /// in the run.
    public var ratioPaired: Double?
    /// The lower bound of the 95% interval of ``ratioPaired``.
    public var ratioPairedLow: Double?
    /// The upper bound of the 95% interval of ``ratioPaired``.
    public var ratioPairedHigh: Double?
    /// The per-round ratios ``ratioPaired`` is the median of, in round order
    /// (``PairedRatio/ratios``), so that a reader can judge the estimate and
    /// its interval, or compute another; written as one cell, the values
    /// separated by `;`. `nil` without a paired ratio (and in reports made
    /// before the column).
    public var ratioPairedRounds: [Double]?
    /// The reference's instructions per unit divided by this row's (1 = as
    /// few instructions as the reference, 0.5 = twice as many); `nil` unless
    /// both rows were counted.
    public var ratioInstructions: Double?
    /// The largest rise of the worker's resident memory above what it held
    /// once the workload's data was generated, over the whole iteration
    /// (median over iterations): the backend's own peak memory, without the
    /// data every backend is handed. `nil` when not measured (in-process runs).
    public var peakRSSWorkloadBytes: Int64?
    /// The rise of resident memory during this operation above what the
    /// worker held when it began (median over iterations); `nil` when not measured.
    public var operationPeakRSSBytes: Int64?
    /// For `read-all`: the heap bytes the decoded graph holds (the allocator's
    /// bytes in use with the result alive, less before the call; median).
    public var decodedBytes: Int64?
    /// For an operation that may run in place more than once (a read-only
    /// one, `erase-all`; ``BenchOperation/runsInPlace``): how many times it
    /// ran per iteration (median over iterations; each iteration's time is
    /// the median of its runs); `nil` for the other operations. Reports
    /// written before `erase-all` ran in place named the column `read_runs`.
    public var runsInPlace: Int?
    /// What the backend is to a reader (``BackendRole``): a choice, a raw
    /// engine, or a third-party library. `nil` in reports made before the
    /// column (``Report/assigningRoles(_:)`` infers it).
    public var role: BackendRole?
    /// The per-call operations' call latency at each percentile of
    /// ``LatencySpectrum/ladder`` (all measured iterations' calls pooled).
    public var latencySpectrum: LatencySpectrum?

    /// The row's role, or the one its name implies (``BackendRole/inferred(for:known:)``).
    public var effectiveRole: BackendRole { role ?? BackendRole.inferred(for: backend) }

    /// Creates a row.
    public init(
        workload: String, provenance: Provenance, backend: String, durability: String, operation: String,
        dialogs: Int, messagesPerDialog: Int, units: Int?, unit: String, iterations: Int,
        medianSeconds: Double? = nil, minSeconds: Double? = nil, maxSeconds: Double? = nil,
        meanSeconds: Double? = nil, stddevSeconds: Double? = nil, throughputPerSecond: Double? = nil,
        p50Microseconds: Double? = nil, p90Microseconds: Double? = nil, p99Microseconds: Double? = nil,
        bytesOnDisk: Int64? = nil, peakRSSBytes: Int64? = nil, seed: UInt64? = nil, warmup: Int? = nil,
        note: String = "", error: String = ""
    ) {
        self.workload = workload
        self.provenance = provenance
        self.backend = backend
        self.durability = durability
        self.operation = operation
        self.dialogs = dialogs
        self.messagesPerDialog = messagesPerDialog
        self.units = units
        self.unit = unit
        self.iterations = iterations
        self.medianSeconds = medianSeconds
        self.minSeconds = minSeconds
        self.maxSeconds = maxSeconds
        self.meanSeconds = meanSeconds
        self.stddevSeconds = stddevSeconds
        self.throughputPerSecond = throughputPerSecond
        self.p50Microseconds = p50Microseconds
        self.p90Microseconds = p90Microseconds
        self.p99Microseconds = p99Microseconds
        self.bytesOnDisk = bytesOnDisk
        self.peakRSSBytes = peakRSSBytes
        self.seed = seed
        self.warmup = warmup
        self.note = note
        self.error = error
    }

    /// The key that matches a row across runs: backend × durability × size × operation.
    public var key: String { "\(backend)/\(durability)/\(dialogs)x\(messagesPerDialog)/\(operation)" }

    /// The row's fields, in ``columns`` order; empty where a figure does not apply.
    public var fields: [String] {
        [
            workload, provenance.runId, provenance.timestamp, provenance.gitCommit, provenance.host,
            provenance.os, provenance.cpu, provenance.swiftVersion, provenance.build, backend, durability,
            operation, String(dialogs), String(messagesPerDialog), text(units), unit, String(iterations),
            text(medianSeconds), text(minSeconds), text(maxSeconds), text(meanSeconds), text(stddevSeconds),
            text(throughputPerSecond), text(p50Microseconds), text(p90Microseconds), text(p99Microseconds),
            text(bytesOnDisk), text(peakRSSBytes), text(seed), text(warmup), note, error, settings,
            reference, text(ratioToRaw),
            text(instructions), text(allocations), text(ciLowSeconds), text(ciHighSeconds),
            text(ratioPaired), text(ratioPairedLow), text(ratioPairedHigh), text(ratioInstructions),
            text(peakRSSWorkloadBytes), text(operationPeakRSSBytes), text(decodedBytes),
            text(runsInPlace),
            ratioPairedRounds.map { $0.map { String(format: "%.6g", $0) }.joined(separator: ";") } ?? "",
            role?.rawValue ?? "", latencySpectrum?.text ?? "",
        ]
    }

    /// Reads a row from CSV fields named by `header`.
    /// - Throws: ``ConfigurationError`` when a required column is missing or a number does not parse.
    public init(fields: [String], header: [String]) throws {
        var byName: [String: String] = [:]
        for (name, value) in zip(header, fields) { byName[name] = value }
        func string(_ name: String) throws -> String {
            guard let value = byName[name] else { throw ConfigurationError("the report has no '\(name)' column") }
            return value
        }
        func number<T: LosslessStringConvertible>(_ name: String, _: T.Type = T.self) throws -> T? {
            let value = try string(name)
            if value.isEmpty { return nil }
            guard let number = T(value) else {
                throw ConfigurationError("'\(value)' in column \(name) is not a number")
            }
            return number
        }
        func required<T: LosslessStringConvertible>(_ name: String, _: T.Type = T.self) throws -> T {
            guard let value: T = try number(name) else { throw ConfigurationError("column \(name) is empty") }
            return value
        }
        provenance = Provenance(
            runId: try string("run_id"), timestamp: try string("timestamp"), gitCommit: try string("git_commit"),
            host: try string("host"), os: try string("os"), cpu: try string("cpu"),
            swiftVersion: try string("swift_version"), build: try string("build"))
        workload = try string("workload")
        backend = try string("backend")
        durability = try string("durability")
        operation = try string("operation")
        dialogs = try required("dialogs")
        messagesPerDialog = try required("messages_per_dialog")
        units = try number("units")
        unit = try string("unit")
        iterations = try number("iterations") ?? 0
        medianSeconds = try number("median_s")
        minSeconds = try number("min_s")
        maxSeconds = try number("max_s")
        meanSeconds = try number("mean_s")
        stddevSeconds = try number("stddev_s")
        throughputPerSecond = try number("throughput_per_s")
        p50Microseconds = try number("p50_us")
        p90Microseconds = try number("p90_us")
        p99Microseconds = try number("p99_us")
        bytesOnDisk = try number("bytes_on_disk")
        peakRSSBytes = try number("peak_rss_bytes")
        seed = byName["seed"].flatMap { UInt64($0) }
        warmup = byName["warmup"].flatMap { Int($0) }
        note = byName["note"] ?? ""
        settings = byName["settings"] ?? ""
        error = byName["error"] ?? ""
        reference = byName["reference"] ?? ""
        if let ratio = byName["ratio_to_raw"], !ratio.isEmpty {
            guard let value = Double(ratio) else {
                throw ConfigurationError("'\(ratio)' in column ratio_to_raw is not a number")
            }
            ratioToRaw = value
        }
        // Columns added after the first reports: absent in older ones.
        func optional<T: LosslessStringConvertible>(_ name: String, _: T.Type = T.self) throws -> T? {
            byName[name] == nil ? nil : try number(name)
        }
        instructions = try optional("instructions")
        allocations = try optional("allocations")
        ciLowSeconds = try optional("ci_low")
        ciHighSeconds = try optional("ci_high")
        ratioPaired = try optional("ratio_paired")
        ratioPairedLow = try optional("ratio_paired_low")
        ratioPairedHigh = try optional("ratio_paired_high")
        ratioInstructions = try optional("ratio_instructions")
        peakRSSWorkloadBytes = try optional("peak_rss_workload_bytes")
        operationPeakRSSBytes = try optional("op_peak_rss_bytes")
        decodedBytes = try optional("decoded_bytes")
        runsInPlace = try optional("runs_in_place") ?? optional("read_runs")
        if let text = byName["role"], !text.isEmpty {
            guard let value = BackendRole(rawValue: text) else {
                throw ConfigurationError(
                    "'\(text)' in column role is not a role (\(BackendRole.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            role = value
        }
        if let text = byName["latency_spectrum_us"], !text.isEmpty {
            latencySpectrum = try LatencySpectrum(parsing: text)
        }
        if let rounds = byName["ratio_paired_rounds"], !rounds.isEmpty {
            ratioPairedRounds = try rounds.split(separator: ";").map { item in
                guard let value = Double(item) else {
                    throw ConfigurationError("'\(item)' in column ratio_paired_rounds is not a number")
                }
                return value
            }
        }
    }

    private func text<T: CustomStringConvertible>(_ value: T?) -> String {
        value.map(\.description) ?? ""
    }

    private func text(_ value: Double?) -> String {
        guard let value else { return "" }
        // Nine significant digits: enough for nanoseconds of a 1 s run, short to read.
        return String(format: "%.9g", value)
    }
}

/// A benchmark report: rows for every backend × durability × size × operation.
public struct Report: Sendable, Hashable {
    /// The rows, ordered by durability, size, operation and backend.
    public var rows: [ReportRow]

    /// A report of `rows`.
    public init(rows: [ReportRow]) {
        self.rows = rows
    }

    /// This report with each row that has no ``ReportRow/role`` given the one
    /// `known` (a registry's ``BackendRegistry/roles``) or its name implies.
    public func assigningRoles(_ known: [String: BackendRole]) -> Report {
        Report(
            rows: rows.map { row in
                var row = row
                if row.role == nil { row.role = BackendRole.inferred(for: row.backend, known: known) }
                return row
            })
    }

    /// The report as CSV with ``ReportRow/columns`` as its header.
    public func csv() -> String {
        CSV.document(header: ReportRow.columns, rows: rows.map(\.fields))
    }

    /// The report as a JSON array of objects keyed by column name; numbers as
    /// JSON numbers, empty cells as `null`.
    public func json() throws -> String {
        let numeric: Set<String> = [
            "dialogs", "messages_per_dialog", "units", "iterations", "median_s", "min_s", "max_s", "mean_s",
            "stddev_s", "throughput_per_s", "p50_us", "p90_us", "p99_us", "bytes_on_disk", "peak_rss_bytes", "seed",
            "warmup", "ratio_to_raw", "instructions", "allocations", "ci_low", "ci_high", "ratio_paired",
            "ratio_paired_low", "ratio_paired_high", "ratio_instructions", "peak_rss_workload_bytes", "op_peak_rss_bytes",
            "decoded_bytes", "runs_in_place",
        ]
        var objects: [[String: Any]] = []
        for row in rows {
            var object: [String: Any] = [:]
            for (name, value) in zip(ReportRow.columns, row.fields) {
                if numeric.contains(name) {
                    object[name] = Self.jsonNumber(value)
                } else {
                    object[name] = value
                }
            }
            objects.append(object)
        }
        let data = try JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys])
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// A CSV cell as a JSON number: integers exactly (a seed may exceed 2^53),
    /// others as doubles, an empty cell as null.
    static func jsonNumber(_ value: String) -> Any {
        if let integer = Int64(value) { return NSNumber(value: integer) }
        if let integer = UInt64(value) { return NSNumber(value: integer) }
        if let real = Double(value) { return NSNumber(value: real) }
        return NSNull()
    }

    /// The report as a Markdown table of the figures that differ between rows.
    public func markdown() -> String {
        var text = ""
        if let first = rows.first {
            let p = first.provenance
            text += "Workload `\(first.workload)`, run `\(p.runId)` at \(p.timestamp) on \(p.host) "
            text += "(\(p.cpu); \(p.os); Swift \(p.swiftVersion), \(p.build) build; commit \(p.gitCommit.isEmpty ? "unknown" : p.gitCommit)).\n\n"
        }
        let header = [
            "backend", "durability", "size", "operation", "units", "iterations", "median s", "min s", "max s",
            "throughput/s", "ratio to raw", "p50 µs", "p90 µs", "p99 µs", "bytes on disk", "peak RSS", "note",
        ]
        text += "| " + header.joined(separator: " | ") + " |\n"
        text += "|" + header.map { _ in " --- " }.joined(separator: "|") + "|\n"
        for row in rows {
            let units = row.units.map { "\($0) \(row.unit)" } ?? ""
            var cells = [
                row.backend, row.durability, "\(row.dialogs)x\(row.messagesPerDialog)", row.operation, units,
                String(row.iterations), Format.seconds(row.medianSeconds), Format.seconds(row.minSeconds),
                Format.seconds(row.maxSeconds), Format.compact(row.throughputPerSecond),
                row.ratioToRaw.map { Format.ratio($0) + " " + row.reference } ?? "",
                Format.micro(row.p50Microseconds), Format.micro(row.p90Microseconds), Format.micro(row.p99Microseconds),
                Format.bytes(row.bytesOnDisk), Format.bytes(row.peakRSSBytes),
                row.error.isEmpty ? row.note : "error: \(row.error)",
            ]
            cells = cells.map { $0.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ") }
            text += "| " + cells.joined(separator: " | ") + " |\n"
        }
        return text
    }

    /// Reads a CSV report.
    /// - Throws: ``CSV/ParseError`` or ``ConfigurationError`` for a malformed report.
    public init(csv text: String) throws {
        let records = try CSV.parse(text)
        guard let header = records.first else { throw ConfigurationError("the report is empty") }
        for column in ReportRow.columns.prefix(28) where !header.contains(column) {
            throw ConfigurationError("the report has no '\(column)' column")
        }
        var rows: [ReportRow] = []
        for (index, record) in records.dropFirst().enumerated() {
            if record == [""] { continue }
            guard record.count == header.count else {
                throw ConfigurationError("row \(index + 1) has \(record.count) fields; the header has \(header.count)")
            }
            do {
                rows.append(try ReportRow(fields: record, header: header))
            } catch let error as ConfigurationError {
                throw ConfigurationError("row \(index + 1): \(error.message)")
            }
        }
        self.rows = rows
    }

    /// Reads the CSV report at `url`.
    /// - Throws: ``ConfigurationError`` whose message begins with the file's
    ///   path, when it cannot be read or is not a report.
    public init(contentsOf url: URL) throws {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ConfigurationError("\(url.relativePath): cannot be read: \(error.localizedDescription)")
        }
        do {
            try self.init(csv: String(decoding: data, as: UTF8.self))
        } catch let error as ConfigurationError {
            throw ConfigurationError("\(url.relativePath): \(error.message)")
        } catch let error as CSV.ParseError {
            throw ConfigurationError("\(url.relativePath): not CSV: \(error.description)")
        }
    }
}

/// Number formatting for tables.
enum Format {
    static func seconds(_ value: Double?) -> String {
        guard let value else { return "" }
        return String(format: value < 0.001 ? "%.6f" : "%.4f", value)
    }

    /// `3%`, `0.5%`.
    static func percent(_ fraction: Double) -> String {
        String(format: "%g%%", fraction * 100)
    }

    static func micro(_ value: Double?) -> String {
        guard let value else { return "" }
        return String(format: value < 10 ? "%.2f" : "%.0f", value)
    }

    /// `12.3k`, `4.56M`.
    static func compact(_ value: Double?) -> String {
        guard let value else { return "" }
        // Round to three digits first, so 999.6k reads 1M, not 1e+03k.
        let magnitude = abs(Double(String(format: "%.3g", value)) ?? value)
        if magnitude >= 1e9 { return String(format: "%.3gG", value / 1e9) }
        if magnitude >= 1e6 { return String(format: "%.3gM", value / 1e6) }
        if magnitude >= 1e3 { return String(format: "%.3gk", value / 1e3) }
        return String(format: "%.3g", value)
    }

    /// `0.45×`, `0.031×`: a ratio with two significant digits below 0.1.
    static func ratio(_ value: Double) -> String {
        String(format: value >= 0.1 ? "%.2f×" : "%.2g×", value)
    }

    static func bytes(_ value: Int64?) -> String {
        guard let value else { return "" }
        let v = Double(value)
        let kib = 1024.0
        if v >= kib * kib * kib { return String(format: "%.2f GiB", v / (kib * kib * kib)) }
        if v >= kib * kib { return String(format: "%.1f MiB", v / (kib * kib)) }
        if v >= kib { return String(format: "%.1f KiB", v / kib) }
        return "\(value) B"
    }
}
