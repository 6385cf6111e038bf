import DAOCore
import DialogGraph
import Foundation

/// The tables printed after a run. ``render(_:)`` (in Summary.swift) is the
/// one-screen summary; ``detailed(_:)`` is every figure: operations as rows,
/// backends as columns, throughput with its unit and each backend's ratio to
/// the fastest, the ratios to the raw engine, counts, memory and scale.
public enum SummaryTable {
    /// The detailed table(s) of `report`, one per durability × size, as plain
    /// text (`storage-bench run --verbose`).
    public static func detailed(_ report: Report) -> String {
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
            let counts = rows.filter(\.error.isEmpty).map(\.iterations)
            let fewest = counts.min() ?? rows.first?.iterations ?? 0
            let most = counts.max() ?? fewest
            let iterations = fewest == most ? "\(fewest)" : "\(fewest)–\(most)"
            text += "\(title) (median of \(iterations) iterations; ratio = throughput / fastest)\n"
            text += align(table)
            text += ratioTable(rows, backends: backends, operations: operations)
            for note in Array(Set(notes)).sorted() { text += "  note: \(note)\n" }
            for backend in backends {
                if let settings = rows.first(where: { $0.backend == backend && !$0.settings.isEmpty })?.settings {
                    text += "  settings in force: \(backend): \(settings)\n"
                }
            }
            text += countsTable(rows, backends: backends, operations: operations)
            text += memoryTable(rows, backends: backends)
            text += "\n"
        }
        text += scaleTable(report)
        return text
    }

    /// Memory and disk: each backend's own peak (above the generated data),
    /// read-all's peak against the decoded graph, and, for a backend with a
    /// reference, both and the bytes on disk divided by the reference's.
    static func memoryTable(_ rows: [ReportRow], backends: [String]) -> String {
        guard rows.contains(where: { $0.peakRSSWorkloadBytes != nil || $0.decodedBytes != nil }) else { return "" }
        func first(_ backend: String, _ operation: String? = nil) -> ReportRow? {
            rows.first { $0.backend == backend && $0.error.isEmpty && (operation == nil || $0.operation == operation) }
        }
        func ratio(_ a: Int64?, _ b: Int64?) -> String {
            guard let a, let b, b > 0 else { return "–" }
            return Format.ratio(Double(a) / Double(b))
        }
        var table: [[String]] = [["memory and disk"] + backends]
        table.append(["peak RSS above the data"] + backends.map { Format.bytes(first($0)?.peakRSSWorkloadBytes) })
        table.append(
            ["  ÷ the raw engine's"]
                + backends.map { b in
                    guard let row = first(b), !row.reference.isEmpty else { return "" }
                    return ratio(row.peakRSSWorkloadBytes, first(row.reference)?.peakRSSWorkloadBytes)
                })
        let readAll = BenchOperation.readAll.rawValue
        table.append(["read-all: peak RSS rise"] + backends.map { Format.bytes(first($0, readAll)?.operationPeakRSSBytes) })
        table.append(["read-all: decoded graph"] + backends.map { Format.bytes(first($0, readAll)?.decodedBytes) })
        table.append(
            ["read-all: peak ÷ graph"]
                + backends.map { b in ratio(first(b, readAll)?.operationPeakRSSBytes, first(b, readAll)?.decodedBytes) })
        table.append(
            ["bytes on disk ÷ the raw engine's"]
                + backends.map { b in
                    guard let row = first(b), !row.reference.isEmpty else { return "" }
                    return ratio(row.bytesOnDisk, first(row.reference)?.bytesOnDisk)
                })
        var text = "  memory (median over iterations; peak RSS above the data = the worker's highest resident memory "
        text += "less what it held once the workload's data was generated) and disk (after update):\n"
        return text + align(table)
    }

    /// For a report with several sizes: each backend's throughput at each
    /// larger size divided by its throughput at the smallest, per durability
    /// and operation (1.00× = as fast per unit at the larger size).
    static func scaleTable(_ report: Report) -> String {
        var text = ""
        var durabilities: [String] = []
        for row in report.rows where !durabilities.contains(row.durability) { durabilities.append(row.durability) }
        for durability in durabilities {
            let rows = report.rows.filter { $0.durability == durability && $0.error.isEmpty }
            var sizes: [(Int, Int)] = []
            for row in rows where !sizes.contains(where: { $0 == (row.dialogs, row.messagesPerDialog) }) {
                sizes.append((row.dialogs, row.messagesPerDialog))
            }
            sizes.sort { $0.0 * $0.1 < $1.0 * $1.1 }
            guard let smallest = sizes.first, sizes.count > 1 else { continue }
            var backends: [String] = []
            var operations: [String] = []
            for row in rows {
                if !backends.contains(row.backend) { backends.append(row.backend) }
                if !operations.contains(row.operation) { operations.append(row.operation) }
            }
            for size in sizes.dropFirst() {
                var table: [[String]] = [["operation"] + backends]
                for operation in operations {
                    var line = [operation]
                    for backend in backends {
                        func throughput(_ s: (Int, Int)) -> Double? {
                            rows.first {
                                $0.backend == backend && $0.operation == operation && $0.dialogs == s.0
                                    && $0.messagesPerDialog == s.1
                            }?.throughputPerSecond
                        }
                        if let large = throughput(size), let small = throughput(smallest), small > 0 {
                            line.append(Format.ratio(large / small))
                        } else {
                            line.append("–")
                        }
                    }
                    table.append(line)
                }
                text += "Scale, durability \(durability): throughput at \(size.0) × \(size.1) ÷ throughput at "
                text += "\(smallest.0) × \(smallest.1) (1.00× = the same speed per unit at the larger size)\n"
                text += align(table) + "\n"
            }
        }
        return text
    }

    /// Instructions and allocations per counted unit, when the rows have them.
    static func countsTable(_ rows: [ReportRow], backends: [String], operations: [String]) -> String {
        guard rows.contains(where: { $0.instructions != nil }) else { return "" }
        var table: [[String]] = [["operation"] + backends]
        for operation in operations {
            var line = [operation]
            for backend in backends {
                guard let row = rows.first(where: { $0.backend == backend && $0.operation == operation }),
                    let instructions = row.instructions, let units = row.units, units > 0
                else {
                    line.append("–")
                    continue
                }
                let perUnit = Double(instructions) / Double(units)
                let allocations = row.allocations.map { String(format: " / %.3g", Double($0) / Double(units)) } ?? ""
                line.append(Format.compact(perUnit) + allocations)
            }
            table.append(line)
        }
        return "  instructions / allocations per unit (callgrind, timed regions only):\n" + align(table)
    }

    /// The rows whose wall time is too uncertain to compare: no 95% interval
    /// (fewer than 6 iterations), or one wider than `precision` around the median.
    public static func noisyRows(_ report: Report, precision: Double) -> [(row: ReportRow, reason: String)] {
        uncertainRows(
            report, precision: precision, figure: \.medianSeconds, low: \.ciLowSeconds, high: \.ciHighSeconds,
            named: { _ in "the median" },
            withoutInterval: { "\($0.iterations) iterations give no 95% interval of the median (6 at least)" })
    }

    /// The rows whose paired ratio to their reference (``ReportRow/ratioPaired``)
    /// is not known within `precision`: its 95% interval wider than that
    /// around the ratio, or no interval (fewer than 6 rounds with both).
    /// These are the figures extra rounds try to settle for a backend with a
    /// reference, and the ones `compare` judges by default.
    public static func unsettledRatioRows(_ report: Report, precision: Double) -> [(row: ReportRow, reason: String)] {
        uncertainRows(
            report, precision: precision, figure: \.ratioPaired, low: \.ratioPairedLow, high: \.ratioPairedHigh,
            named: { "the ratio to \($0.reference)" },
            withoutInterval: { "\($0.iterations) rounds give no 95% interval of the ratio to \($0.reference)" })
    }

    /// The rows without an error whose `figure` (when it is positive) is too
    /// uncertain to compare, each with the reason: no 95% interval (`low` or
    /// `high` missing, or fewer than 6 iterations; `withoutInterval` says
    /// so), or one wider than `precision` around the figure (`named` names
    /// the figure in the reason).
    private static func uncertainRows(
        _ report: Report, precision: Double, figure: KeyPath<ReportRow, Double?>, low: KeyPath<ReportRow, Double?>,
        high: KeyPath<ReportRow, Double?>, named name: (ReportRow) -> String,
        withoutInterval: (ReportRow) -> String
    ) -> [(row: ReportRow, reason: String)] {
        var rows: [(ReportRow, String)] = []
        for row in report.rows where row.error.isEmpty {
            guard let value = row[keyPath: figure], value > 0 else { continue }
            guard let lowBound = row[keyPath: low], let highBound = row[keyPath: high], row.iterations >= 6 else {
                rows.append((row, withoutInterval(row)))
                continue
            }
            if let reason = widerThan(precision, low: lowBound, figure: value, high: highBound, of: name(row)) {
                rows.append((row, reason))
            }
        }
        return rows
    }

    /// Why the 95% interval `low` … `high` of `figure` is too wide to compare
    /// (one side further from it than `precision`, relative), or `nil`.
    private static func widerThan(
        _ precision: Double, low: Double, figure: Double, high: Double, of name: String
    ) -> String? {
        let below = (low - figure) / figure
        let above = (high - figure) / figure
        guard max(-below, above) > precision else { return nil }
        return "95% interval of \(name) " + String(format: "%+.1f%% … %+.1f%%", below * 100, above * 100)
            + ", wider than ±\(Format.percent(precision))"
    }

    /// The ratio of each backend that names a reference to that reference, by
    /// operation, when the run has at least one such ratio; otherwise empty.
    static func ratioTable(_ rows: [ReportRow], backends: [String], operations: [String]) -> String {
        guard rows.contains(where: { $0.ratioToRaw != nil || $0.ratioPaired != nil || $0.ratioInstructions != nil })
        else { return "" }
        let measured = backends.compactMap { backend in
            rows.first { $0.backend == backend && !$0.reference.isEmpty }.map { (backend, $0.reference) }
        }
        var table: [[String]] = [["operation"] + measured.map { "\($0.0) ÷ \($0.1)" }]
        for operation in operations {
            var line = [operation]
            for (backend, _) in measured {
                let row = rows.first { $0.backend == backend && $0.operation == operation }
                if let row, let ratio = row.ratioPaired {
                    var cell = Format.ratio(ratio)
                    if let low = row.ratioPairedLow, let high = row.ratioPairedHigh {
                        let range = String(Format.ratio(low).dropLast()) + "–" + Format.ratio(high)
                        let rounds = row.ratioPairedRounds?.count ?? row.iterations
                        cell += rounds >= Comparison.fewestForInterval ? " (\(range))" : " [\(range)]"
                    }
                    line.append(cell)
                } else if let ratio = row?.ratioToRaw {
                    line.append(Format.ratio(ratio))
                } else {
                    line.append(row?.error.isEmpty == false ? "error" : "–")
                }
            }
            table.append(line)
        }
        var text = "  ratio to the raw engine: the median over rounds of throughput ÷ the raw engine's throughput "
        text += "in the same round, run side by side ((…) its 95% interval, from 6 rounds or more; […] the lowest "
        text += "and highest of fewer rounds, no 95% interval; 1.00× = as fast as its C API used directly; "
        text += "– = the reference did not run)\n"
        text += align(table)
        guard rows.contains(where: { $0.ratioInstructions != nil }) else { return text }
        var counts: [[String]] = [["operation"] + measured.map { "\($0.0) ÷ \($0.1)" }]
        for operation in operations {
            counts.append(
                [operation]
                    + measured.map { backend, _ in
                        rows.first { $0.backend == backend && $0.operation == operation }?.ratioInstructions
                            .map { Format.ratio($0) } ?? "–"
                    })
        }
        text += "  ratio to the raw engine by instructions: the raw engine's instructions per unit ÷ the "
        text += "backend's (callgrind; 1.00× = as few as the raw engine)\n"
        return text + align(counts)
    }

    /// Columns padded to their widest cell; the first left-aligned, the rest right-aligned.
    public static func align(_ table: [[String]]) -> String {
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
