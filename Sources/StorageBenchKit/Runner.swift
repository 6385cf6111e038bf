import DAOCore
import DialogGraph
import Foundation

/// What a run measures: backends × durabilities × sizes, each operation, with
/// warm-up and measured iterations.
public struct RunConfiguration: Sendable {
    /// The backends, in report order.
    public var backends: [Backend]
    /// The workload sizes (a sweep when more than one).
    public var sizes: [BenchSize]
    /// The durabilities the stores are opened with.
    public var durabilities: [Durability]
    /// The operations reported, in workload order.
    public var operations: [BenchOperation]
    /// Measured iterations per backend × size × durability.
    public var iterations: Int
    /// Warm-up iterations run first and discarded.
    public var warmup: Int
    /// The generator seed.
    public var seed: UInt64
    /// Whether to show progress on standard error.
    public var showsProgress: Bool

    /// Creates a configuration.
    /// - Throws: ``ConfigurationError`` when a list is empty or a count out of range.
    public init(
        backends: [Backend], sizes: [BenchSize], durabilities: [Durability] = [.full],
        operations: [BenchOperation] = BenchOperation.allCases, iterations: Int = 5, warmup: Int = 1,
        seed: UInt64 = 42, showsProgress: Bool = true
    ) throws {
        guard !backends.isEmpty else { throw ConfigurationError("no backend to run") }
        guard !sizes.isEmpty else { throw ConfigurationError("no size to run") }
        guard !durabilities.isEmpty else { throw ConfigurationError("no durability to run") }
        guard !operations.isEmpty else { throw ConfigurationError("no operation to run") }
        guard (1...1000).contains(iterations) else {
            throw ConfigurationError("--iterations must be between 1 and 1000, not \(iterations)")
        }
        guard (0...100).contains(warmup) else {
            throw ConfigurationError("--warmup must be between 0 and 100, not \(warmup)")
        }
        self.backends = backends
        self.sizes = sizes
        self.durabilities = durabilities
        self.operations = operations
        self.iterations = iterations
        self.warmup = warmup
        self.seed = seed
        self.showsProgress = showsProgress
    }

    /// The jobs of the run, in the order they run: for each durability and size,
    /// rounds of one iteration per backend, warm-up rounds first; within a round
    /// the backends take turns, and their order rotates from round to round, so
    /// drift of the machine falls on all of them alike.
    public func jobs() -> [IterationJob] {
        var jobs: [IterationJob] = []
        let rounds = warmup + iterations
        for durability in durabilities {
            for size in sizes {
                for round in 0..<rounds {
                    let shift = round % backends.count
                    let order = Array(backends[shift...] + backends[..<shift])
                    for backend in order {
                        jobs.append(
                            IterationJob(
                                backend: backend.name, size: size, seed: seed, durability: durability,
                                operations: operations, round: round, isWarmup: round < warmup))
                    }
                }
            }
        }
        if showsProgress {
            for index in jobs.indices {
                let job = jobs[index]
                let which = job.isWarmup
                    ? "warm-up \(job.round + 1)/\(warmup)" : "iteration \(job.round - warmup + 1)/\(iterations)"
                jobs[index].progressLabel =
                    "[\(index + 1)/\(jobs.count)] \(job.size) \(job.durability.rawValue) \(job.backend), \(which)"
            }
        }
        return jobs
    }
}

/// Runs a configuration and turns what it measured into a ``Report``.
public struct BenchmarkRunner: Sendable {
    /// What to run.
    public let configuration: RunConfiguration
    /// Where each iteration runs.
    public let executor: any IterationExecutor

    /// A runner of `configuration` on `executor`.
    public init(configuration: RunConfiguration, executor: any IterationExecutor) {
        self.configuration = configuration
        self.executor = executor
    }

    /// Runs every job and returns the measured (not warm-up) results.
    /// - Throws: when an iteration could not be run at all (not when a backend fails).
    public func measure() throws -> [IterationResult] {
        var results: [IterationResult] = []
        defer { if configuration.showsProgress { ProgressPrinter.finish() } }
        for job in configuration.jobs() {
            let result = try executor.run(job)
            if let error = result.error, configuration.showsProgress {
                ProgressPrinter.write("\(job.progressLabel ?? job.backend): failed: \(error)")
                if ProgressPrinter.isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
            }
            if !job.isWarmup { results.append(result) }
        }
        return results
    }

    /// Runs every job and builds the report.
    /// - Throws: when an iteration could not be run at all.
    public func run(provenance: Provenance) throws -> Report {
        ReportBuilder.report(of: try measure(), configuration: configuration, provenance: provenance)
    }
}

/// Turns iteration results into report rows.
public enum ReportBuilder {
    /// One row per backend × durability × size × operation of `configuration`.
    ///
    /// Times come from each iteration's measurement; throughput from the median;
    /// latency percentiles from an HDR histogram of every timed call of every
    /// iteration. A backend with a failed iteration gets rows with the error and
    /// no figures. A backend that names a reference gets its ratio to it
    /// (``ReportRow/ratioToRaw``) when the reference ran too.
    public static func report(
        of results: [IterationResult], configuration: RunConfiguration, provenance: Provenance
    ) -> Report {
        var rows: [ReportRow] = []
        for durability in configuration.durabilities {
            for size in configuration.sizes {
                for operation in configuration.operations {
                    for backend in configuration.backends {
                        let mine = results.filter {
                            $0.job.backend == backend.name && $0.job.size == size && $0.job.durability == durability
                        }
                        rows.append(
                            row(
                                operation, results: mine, backend: backend.name, size: size,
                                durability: durability, configuration: configuration, provenance: provenance))
                        rows[rows.count - 1].reference = backend.reference ?? ""
                    }
                }
            }
        }
        return Report(rows: ratiosToRaw(rows))
    }

    /// `rows` with ``ReportRow/ratioToRaw`` set for every row whose reference
    /// has a row of the same durability, size and operation, both with a
    /// throughput: the row's throughput divided by the reference's.
    public static func ratiosToRaw(_ rows: [ReportRow]) -> [ReportRow] {
        var throughputs: [String: Double] = [:]
        for row in rows {
            if let throughput = row.throughputPerSecond, throughput > 0, row.error.isEmpty {
                throughputs[row.key] = throughput
            }
        }
        return rows.map { row in
            var row = row
            row.ratioToRaw = nil
            guard !row.reference.isEmpty, row.error.isEmpty, let throughput = row.throughputPerSecond else { return row }
            var reference = row
            reference.backend = row.reference
            if let raw = throughputs[reference.key] { row.ratioToRaw = throughput / raw }
            return row
        }
    }

    static func row(
        _ operation: BenchOperation, results: [IterationResult], backend: String, size: BenchSize,
        durability: Durability, configuration: RunConfiguration, provenance: Provenance
    ) -> ReportRow {
        var row = ReportRow(
            workload: WorkloadData.name, provenance: provenance, backend: backend, durability: durability.rawValue,
            operation: operation.rawValue, dialogs: size.dialogs, messagesPerDialog: size.messagesPerDialog,
            units: nil, unit: operation.unit, iterations: results.count, seed: configuration.seed,
            warmup: configuration.warmup)
        if let failed = results.first(where: { $0.error != nil }), let error = failed.error {
            row.error = error
            return row
        }
        let measurements = results.compactMap { result in
            result.measurements.first { $0.operation == operation }
        }
        guard !measurements.isEmpty, measurements.count == results.count,
            let statistics = SampleStatistics(measurements.map(\.seconds))
        else {
            row.error = results.isEmpty ? "not run" : "not measured in every iteration"
            return row
        }
        let units = measurements[0].units
        guard measurements.allSatisfy({ $0.units == units }) else {
            row.error = "the iterations counted different units: \(measurements.map(\.units))"
            return row
        }
        row.units = units
        row.medianSeconds = statistics.median
        row.minSeconds = statistics.min
        row.maxSeconds = statistics.max
        row.meanSeconds = statistics.mean
        row.stddevSeconds = statistics.standardDeviation
        row.throughputPerSecond = statistics.median > 0 ? Double(units) / statistics.median : nil
        if operation.isPerCall,
            let percentiles = LatencyPercentiles(nanoseconds: measurements.flatMap { $0.callNanoseconds ?? [] })
        {
            row.p50Microseconds = percentiles.p50Microseconds
            row.p90Microseconds = percentiles.p90Microseconds
            row.p99Microseconds = percentiles.p99Microseconds
        }
        let sizes = results.compactMap(\.bytesOnDisk).map(Double.init)
        row.bytesOnDisk = SampleStatistics(sizes).map { Int64($0.median.rounded()) }
        row.peakRSSBytes = results.compactMap(\.peakRSSBytes).max()
        row.note = measurements.compactMap(\.note).first ?? ""
        row.settings = results.compactMap(\.settings).first ?? ""
        return row
    }
}

/// The table printed after a run: operations as rows, backends as columns,
/// throughput with its unit and each backend's ratio to the fastest.
public enum SummaryTable {
    /// The table(s) of `report`, one per durability × size, as plain text.
    public static func render(_ report: Report) -> String {
        var groups: [(String, [ReportRow])] = []
        for row in report.rows {
            let title = "\(row.workload), \(row.dialogs) dialogs × \(row.messagesPerDialog) messages, durability \(row.durability)"
            if let index = groups.firstIndex(where: { $0.0 == title }) {
                groups[index].1.append(row)
            } else {
                groups.append((title, [row]))
            }
        }
        var text = ""
        for (title, rows) in groups {
            var backends: [String] = []
            var operations: [String] = []
            for row in rows {
                if !backends.contains(row.backend) { backends.append(row.backend) }
                if !operations.contains(row.operation) { operations.append(row.operation) }
            }
            var table: [[String]] = [["operation"] + backends]
            var notes: [String] = []
            for operation in operations {
                let cells = rows.filter { $0.operation == operation }
                let fastest = cells.compactMap(\.throughputPerSecond).max()
                let unit = BenchOperation(rawValue: operation)?.shortUnit ?? "/s"
                var line = [operation]
                for backend in backends {
                    guard let row = cells.first(where: { $0.backend == backend }) else {
                        line.append("")
                        continue
                    }
                    if !row.error.isEmpty {
                        line.append("error")
                        notes.append("\(backend) \(operation): \(row.error)")
                    } else if let throughput = row.throughputPerSecond, let fastest, fastest > 0 {
                        line.append("\(Format.compact(throughput)) \(unit) \(Format.ratio(throughput / fastest))")
                    } else {
                        line.append("–")
                    }
                    if !row.note.isEmpty { notes.append("\(backend) \(operation): \(row.note)") }
                }
                table.append(line)
            }
            let firstRows = backends.compactMap { backend in rows.first { $0.backend == backend && $0.error.isEmpty } }
            if !firstRows.isEmpty {
                table.append(
                    ["bytes on disk"]
                        + backends.map { b in Format.bytes(rows.first { $0.backend == b && $0.bytesOnDisk != nil }?.bytesOnDisk) })
                table.append(
                    ["peak RSS"]
                        + backends.map { b in Format.bytes(rows.first { $0.backend == b && $0.peakRSSBytes != nil }?.peakRSSBytes) })
            }
            text += "\(title) (median of \(rows.first?.iterations ?? 0) iterations; ratio = throughput / fastest)\n"
            text += align(table)
            text += ratioTable(rows, backends: backends, operations: operations)
            for note in Array(Set(notes)).sorted() { text += "  note: \(note)\n" }
            for backend in backends {
                if let settings = rows.first(where: { $0.backend == backend && !$0.settings.isEmpty })?.settings {
                    text += "  settings in force: \(backend): \(settings)\n"
                }
            }
            text += "\n"
        }
        return text
    }

    /// The ratio of each backend that names a reference to that reference, by
    /// operation, when the run has at least one such ratio; otherwise empty.
    static func ratioTable(_ rows: [ReportRow], backends: [String], operations: [String]) -> String {
        guard rows.contains(where: { $0.ratioToRaw != nil }) else { return "" }
        let measured = backends.compactMap { backend in
            rows.first { $0.backend == backend && !$0.reference.isEmpty }.map { (backend, $0.reference) }
        }
        var table: [[String]] = [["operation"] + measured.map { "\($0.0) ÷ \($0.1)" }]
        for operation in operations {
            var line = [operation]
            for (backend, _) in measured {
                let row = rows.first { $0.backend == backend && $0.operation == operation }
                if let ratio = row?.ratioToRaw {
                    line.append(Format.ratio(ratio))
                } else {
                    line.append(row?.error.isEmpty == false ? "error" : "–")
                }
            }
            table.append(line)
        }
        var text = "  ratio to the raw engine: throughput ÷ the raw engine's throughput in this run "
        text += "(1.00× = as fast as its C API used directly; – = the reference did not run)\n"
        return text + align(table)
    }

    /// Columns padded to their widest cell; the first left-aligned, the rest right-aligned.
    static func align(_ table: [[String]]) -> String {
        let columns = table.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columns)
        for row in table {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        var text = ""
        for (rowIndex, row) in table.enumerated() {
            var cells: [String] = []
            for (index, cell) in row.enumerated() {
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                cells.append(index == 0 ? cell + padding : padding + cell)
            }
            text += "  " + cells.joined(separator: "  ") + "\n"
            if rowIndex == 0 {
                text += "  " + widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n"
            }
        }
        return text
    }
}
