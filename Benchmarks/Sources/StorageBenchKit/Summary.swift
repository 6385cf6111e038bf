import Foundation

extension SummaryTable {
    /// The widest line ``render(_:)`` aims for.
    public static let screenWidth = 100

    /// The one-screen summary of `report`, per durability × size: for each
    /// operation, the backends a user can choose (``BackendRole/choice``)
    /// ranked by throughput, each with its throughput, the 95% interval of
    /// it (from 6 iterations or more), its paired ratio to its raw engine,
    /// and, as reference columns, the raw engine's throughput and each
    /// third-party library's on the same engine. Then one table of memory
    /// and disk. Rows without a role take the one their name implies
    /// (``BackendRole/inferred(for:known:)``), or `roles`.
    ///
    /// It takes rows, not a run: any command whose rows are ``ReportRow``s
    /// (run, migrate, observe, load) prints its summary with it.
    public static func render(_ report: Report, roles: [String: BackendRole] = [:]) -> String {
        let report = report.assigningRoles(roles)
        var groups: [(title: String, rows: [ReportRow])] = []
        for row in report.rows {
            let title = "\(row.workload), \(row.dialogs) dialogs × \(row.messagesPerDialog) messages, durability \(row.durability)"
            if let index = groups.firstIndex(where: { $0.title == title }) {
                groups[index].rows.append(row)
            } else {
                groups.append((title, [row]))
            }
        }
        var text = ""
        for (index, group) in groups.enumerated() {
            if index > 0 { text += "\n" }
            text += screen(title: group.title, rows: group.rows)
        }
        return text
    }

    /// The throughput interval of `row` from the 95% interval of its median
    /// time, or `nil` with fewer than ``Comparison/fewestForInterval`` iterations.
    public static func throughputInterval(_ row: ReportRow) -> (low: Double, high: Double)? {
        guard row.error.isEmpty, row.iterations >= Comparison.fewestForInterval, let units = row.units,
            let slow = row.ciHighSeconds, let fast = row.ciLowSeconds, slow > 0, fast > 0
        else { return nil }
        return (Double(units) / slow, Double(units) / fast)
    }

    /// The paired ratio's 95% interval, or `nil` when its rounds are fewer
    /// than ``Comparison/fewestForInterval`` (then its bounds are only the
    /// lowest and highest round).
    public static func ratioInterval(_ row: ReportRow) -> (low: Double, high: Double)? {
        guard let low = row.ratioPairedLow, let high = row.ratioPairedHigh,
            (row.ratioPairedRounds?.count ?? row.iterations) >= Comparison.fewestForInterval
        else { return nil }
        return (low, high)
    }

    /// The ratio of `row` to its raw engine: paired when it has one, else of the medians.
    public static func ratioToEngine(_ row: ReportRow) -> Double? {
        row.ratioPaired ?? row.ratioToRaw
    }

    /// One durability × size: the ranked choices per operation, then memory and disk.
    static func screen(title: String, rows: [ReportRow]) -> String {
        var operations: [String] = []
        for row in rows where !operations.contains(row.operation) { operations.append(row.operation) }
        let choices = rows.filter { $0.effectiveRole == .choice }
        let thirdParty = orderedUnique(rows.filter { $0.effectiveRole == .thirdParty }.map(\.backend))
        let hasReference = choices.contains { !$0.reference.isEmpty }
        let counted = choices.contains { $0.instructions != nil }
        func find(_ backend: String, _ operation: String) -> ReportRow? {
            rows.first { $0.backend == backend && $0.operation == operation }
        }
        var header = ["operation", "choice", "throughput", "95% interval"]
        if hasReference { header += ["÷ raw engine", "raw engine"] }
        header += thirdParty
        if counted { header.append("instr/unit") }
        var table: [[String]] = [header]
        // Each operation's name is the first cell of its first ranked row and
        // its unit that of the second, so that no line is a title alone.
        for operation in operations {
            let unit = BenchOperation(rawValue: operation)?.shortUnit
                ?? rows.first(where: { $0.operation == operation }).map { "\($0.unit)/s" } ?? "/s"
            let ranked = choices.filter { $0.operation == operation }.sorted { a, b in
                switch (a.error.isEmpty ? a.throughputPerSecond : nil, b.error.isEmpty ? b.throughputPerSecond : nil) {
                case let (x?, y?): return x > y
                case (_?, nil): return true
                default: return false
                }
            }
            if ranked.isEmpty { table.append(["\(operation) (\(unit))"] + Array(repeating: "", count: header.count - 1)) }
            for (rank, row) in ranked.enumerated() {
                let first =
                    switch rank {
                    case 0: ranked.count == 1 ? "\(operation) (\(unit))" : operation
                    case 1: "(\(unit))"
                    default: ""
                    }
                var line = [first, "\(rank + 1) \(row.backend)"]
                if !row.error.isEmpty {
                    line += ["error", ""]
                } else {
                    line.append(Format.compact(row.throughputPerSecond))
                    line.append(throughputInterval(row).map { Format.compact($0.low) + "–" + Format.compact($0.high) } ?? "–")
                }
                if hasReference {
                    if let ratio = ratioToEngine(row), row.error.isEmpty {
                        var cell = Format.ratio(ratio)
                        if let interval = ratioInterval(row) {
                            cell += " (" + String(Format.ratio(interval.low).dropLast()) + "–"
                                + String(Format.ratio(interval.high).dropLast()) + ")"
                        }
                        line.append(cell)
                    } else {
                        line.append("–")
                    }
                    let engine = row.reference.isEmpty ? nil : find(row.reference, operation)
                    line.append(engine.flatMap { $0.error.isEmpty ? Format.compact($0.throughputPerSecond) : "error" } ?? "")
                }
                for library in thirdParty {
                    let other = find(library, operation)
                    let shares = other.map { !$0.reference.isEmpty && $0.reference == row.reference } ?? false
                    line.append(shares ? (other?.error.isEmpty == true ? Format.compact(other?.throughputPerSecond) : "error") : "")
                }
                if counted {
                    line.append(
                        row.instructions.flatMap { i in row.units.map { $0 > 0 ? Format.compact(Double(i) / Double($0)) : "" } }
                            ?? "–")
                }
                table.append(line)
            }
        }
        let counts = rows.filter(\.error.isEmpty).map(\.iterations)
        let fewest = counts.min() ?? 0
        let most = counts.max() ?? fewest
        var text = "\(title): median of \(fewest == most ? "\(fewest)" : "\(fewest)–\(most)") iterations\n"
        // The legend is one paragraph, wrapped: two lines for make bench's screen.
        var legend = ["choices ranked by throughput; 95% interval of the median (6+ iterations; else –)"]
        if hasReference {
            legend.append("÷ raw engine: paired ratio to the engine, (…) its 95% interval")
            legend.append((["raw engine"] + thirdParty).joined(separator: ", ") + ": references, not choices")
        }
        if counted { legend.append("instr/unit: callgrind instructions per unit, timed region only (no I/O wait)") }
        text += LoadReport.wrap(legend.joined(separator: "; "), indent: "  ", width: SummaryTable.screenWidth - 2)
            .split(separator: "\n").map { "  " + $0.drop { $0 == " " } + "\n" }.joined()
        // The operation and the choice share the first column, both aligned left.
        let operationWidth = table.map { $0[0].count }.max() ?? 0
        table = table.map { row in
            guard row.count > 1 else { return row }
            let operationCell = row[0] + String(repeating: " ", count: operationWidth - row[0].count)
            return [operationCell + "  " + row[1]] + row.dropFirst(2)
        }
        text += align(table)
        text += screenMemory(rows: rows, choices: orderedUnique(choices.map(\.backend)))
        return text
    }

    /// Memory and disk of each choice, against its raw engine, when the rows have them.
    static func screenMemory(rows: [ReportRow], choices: [String]) -> String {
        func first(_ backend: String) -> ReportRow? { rows.first { $0.backend == backend && $0.error.isEmpty } }
        func disk(_ backend: String) -> Int64? {
            rows.first { $0.backend == backend && $0.error.isEmpty && $0.bytesOnDisk != nil }?.bytesOnDisk
        }
        guard choices.contains(where: { disk($0) != nil || first($0)?.peakRSSWorkloadBytes != nil }) else { return "" }
        func ratio(_ a: Int64?, _ b: Int64?) -> String {
            guard let a, let b, b > 0 else { return "–" }
            return Format.ratio(Double(a) / Double(b))
        }
        var table: [[String]] = [["memory and disk", "on disk", "÷ raw", "peak RSS above the data", "÷ raw"]]
        for backend in choices {
            let row = first(backend)
            let reference = row?.reference ?? ""
            table.append([
                "  \(backend)", Format.bytes(disk(backend)), reference.isEmpty ? "" : ratio(disk(backend), disk(reference)),
                Format.bytes(row?.peakRSSWorkloadBytes),
                reference.isEmpty ? "" : ratio(row?.peakRSSWorkloadBytes, first(reference)?.peakRSSWorkloadBytes),
            ])
        }
        return align(table)
    }

    /// `values` without repeats, in first-seen order.
    static func orderedUnique(_ values: [String]) -> [String] {
        var seen: Set<String> = []
        return values.filter { seen.insert($0).inserted }
    }
}

/// The warnings of a run, for the terminal: in full (`--verbose`), or folded
/// into one line with their count and a pointer.
public struct RunWarnings: Sendable {
    /// Rows whose wall time is too uncertain to compare (``SummaryTable/noisyRows(_:precision:)``).
    public let noisy: [(row: ReportRow, reason: String)]
    /// Ratios to a reference not settled within the precision (``SummaryTable/unsettledRatioRows(_:precision:)``).
    public let unsettled: [(row: ReportRow, reason: String)]
    /// Each row's note (bounded calls) and error, once each.
    public let notes: [String]
    let precision: Double
    let maxIterations: Int
    let timeLimit: Double

    /// The warnings of `report`, measured with `configuration`.
    public init(report: Report, configuration: RunConfiguration) {
        self.init(
            report: report, precision: configuration.precision, maxIterations: configuration.maxIterations,
            timeLimit: configuration.timeLimit)
    }

    /// The warnings of `report` for a run that aimed at `precision` with at
    /// most `maxIterations` iterations and `timeLimit` seconds of extra rounds.
    public init(report: Report, precision: Double, maxIterations: Int, timeLimit: Double) {
        self.precision = precision
        self.maxIterations = maxIterations
        self.timeLimit = timeLimit
        noisy = SummaryTable.noisyRows(report, precision: precision)
        unsettled = SummaryTable.unsettledRatioRows(report, precision: precision)
        notes = SummaryTable.orderedUnique(
            report.rows.compactMap { row in
                if !row.error.isEmpty { return "\(row.backend) \(row.operation): error: \(row.error)" }
                return row.note.isEmpty ? nil : "\(row.backend) \(row.operation): \(row.note)"
            })
    }

    /// How many there are.
    public var count: Int { noisy.count + unsettled.count + notes.count }

    /// `storage-bench: 14 warnings (…); --verbose prints them`, or `nil` without any.
    public var oneLine: String? {
        guard count > 0 else { return nil }
        var parts: [String] = []
        if !noisy.isEmpty { parts.append("\(noisy.count) noisy times") }
        if !unsettled.isEmpty { parts.append("\(unsettled.count) unsettled ratios") }
        if !notes.isEmpty { parts.append("\(notes.count) notes") }
        return "storage-bench: \(count) warnings (\(parts.joined(separator: ", "))); --verbose prints them"
    }

    /// Every warning, one line each, under a line that says what they mean.
    public var detailed: String {
        var text = ""
        if !noisy.isEmpty {
            text += "storage-bench: warning: \(noisy.count) rows are too noisy to compare on wall time "
            text += "(after \(maxIterations) iterations at most); compare them by ratio or instructions:\n"
            for (row, reason) in noisy {
                text += "  \(row.backend) \(row.operation) \(row.dialogs)x\(row.messagesPerDialog) \(row.durability): \(reason)\n"
            }
        }
        if !unsettled.isEmpty {
            text += "storage-bench: warning: \(unsettled.count) ratios to a reference are not settled within "
            text += "±\(Format.percent(precision)) (after \(maxIterations) iterations or \(Int(timeLimit)) s of extra "
            text += "rounds at most); compare them by instructions, or expect them to move between runs:\n"
            for (row, reason) in unsettled {
                text += "  \(row.backend) \(row.operation) \(row.dialogs)x\(row.messagesPerDialog) \(row.durability): \(reason)\n"
            }
        }
        if !notes.isEmpty {
            text += "storage-bench: notes:\n" + notes.map { "  \($0)\n" }.joined()
        }
        return text
    }
}
