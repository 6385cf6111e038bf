import Foundation

/// The comparison of a current report with a baseline, row by row
/// (backend × durability × size × operation), noise-aware.
///
/// A row has **regressed** when its throughput fell by more than the threshold
/// *and* lies outside the min–max spread of both runs: the current median is
/// slower than the baseline's slowest iteration, and the baseline median is
/// faster than the current run's fastest iteration. A drop past the threshold
/// inside that spread is reported as noise, not as a regression.
public struct Comparison: Sendable {
    /// How one row compares.
    public enum Verdict: String, Sendable, Hashable {
        /// Slower past the threshold and outside both spreads.
        case regressed
        /// Faster past the threshold and outside both spreads.
        case improved
        /// Within the threshold.
        case unchanged
        /// Past the threshold but inside the min–max spread of a run.
        case noise
        /// In the baseline, not in the current report.
        case missing
        /// In the current report, not in the baseline.
        case new
        /// The baseline had figures; the current run has an error row.
        case failed
        /// Neither run has figures for it (both error rows).
        case noFigures = "no figures"
    }

    /// One compared row.
    public struct Entry: Sendable, Hashable {
        /// The row key: backend/durability/DxM/operation.
        public let key: String
        /// The baseline throughput per second, if any.
        public let baseline: Double?
        /// The current throughput per second, if any.
        public let current: Double?
        /// The throughput's relative change (−0.25 for 25% slower), if both have one.
        public let change: Double?
        /// The verdict.
        public let verdict: Verdict
        /// The counted unit.
        public let unit: String
    }

    /// Exit status when nothing regressed and no row is missing.
    public static let exitOK: Int32 = 0
    /// Exit status when a row regressed or failed.
    public static let exitRegressed: Int32 = 1
    /// Exit status when nothing regressed but baseline rows are missing from the
    /// current report, or the reports cannot be compared.
    public static let exitMissing: Int32 = 2

    /// The compared rows, in the baseline's order, then the new ones.
    public let entries: [Entry]
    /// The threshold, as a fraction (0.1 for 10%).
    public let threshold: Double

    /// Compares `current` with `baseline` at `threshold` (a fraction).
    /// - Throws: ``ConfigurationError`` when the reports are of different workloads.
    public init(baseline: Report, current: Report, threshold: Double) throws {
        self.threshold = threshold
        let baselineWorkloads = Set(baseline.rows.map(\.workload))
        let currentWorkloads = Set(current.rows.map(\.workload))
        guard baselineWorkloads.count <= 1, currentWorkloads.count <= 1,
            baselineWorkloads.isEmpty || currentWorkloads.isEmpty || baselineWorkloads == currentWorkloads
        else {
            throw ConfigurationError(
                "the reports are of different workloads (\(baselineWorkloads.sorted()) and \(currentWorkloads.sorted())); they cannot be compared")
        }
        var currentByKey: [String: ReportRow] = [:]
        for row in current.rows { currentByKey[row.key] = row }
        var seen: Set<String> = []
        var entries: [Entry] = []
        for base in baseline.rows {
            seen.insert(base.key)
            guard let now = currentByKey[base.key] else {
                entries.append(
                    Entry(key: base.key, baseline: base.throughputPerSecond, current: nil, change: nil, verdict: .missing, unit: base.unit))
                continue
            }
            entries.append(Self.compare(base, now, threshold: threshold))
        }
        for row in current.rows where !seen.contains(row.key) {
            entries.append(
                Entry(key: row.key, baseline: nil, current: row.throughputPerSecond, change: nil, verdict: .new, unit: row.unit))
        }
        self.entries = entries
    }

    static func compare(_ base: ReportRow, _ now: ReportRow, threshold: Double) -> Entry {
        guard let baseThroughput = base.throughputPerSecond, baseThroughput > 0 else {
            return Entry(
                key: base.key, baseline: nil, current: now.throughputPerSecond, change: nil,
                verdict: now.throughputPerSecond == nil ? .noFigures : .new, unit: base.unit)
        }
        guard let nowThroughput = now.throughputPerSecond, now.error.isEmpty else {
            return Entry(key: base.key, baseline: baseThroughput, current: nil, change: nil, verdict: .failed, unit: base.unit)
        }
        let change = nowThroughput / baseThroughput - 1
        // The spread of each run as throughputs: fastest iteration … slowest iteration.
        let (baseFast, baseSlow) = spread(base, median: baseThroughput)
        let (nowFast, nowSlow) = spread(now, median: nowThroughput)
        let verdict: Verdict
        if change <= -threshold {
            verdict = nowThroughput < baseSlow && baseThroughput > nowFast ? .regressed : .noise
        } else if change >= threshold {
            verdict = nowThroughput > baseFast && baseThroughput < nowSlow ? .improved : .noise
        } else {
            verdict = .unchanged
        }
        return Entry(
            key: base.key, baseline: baseThroughput, current: nowThroughput, change: change, verdict: verdict, unit: base.unit)
    }

    /// The throughputs of a row's fastest and slowest iterations (the median's
    /// when the row has no min or max).
    static func spread(_ row: ReportRow, median: Double) -> (fastest: Double, slowest: Double) {
        guard let units = row.units.map(Double.init) else { return (median, median) }
        let fastest = row.minSeconds.flatMap { $0 > 0 ? units / $0 : nil } ?? median
        let slowest = row.maxSeconds.flatMap { $0 > 0 ? units / $0 : nil } ?? median
        return (max(fastest, median), min(slowest, median))
    }

    /// The exit status: ``exitRegressed`` when a row regressed or failed, else
    /// ``exitMissing`` when a baseline row is missing, else ``exitOK``.
    public var exitStatus: Int32 {
        if entries.contains(where: { $0.verdict == .regressed || $0.verdict == .failed }) { return Self.exitRegressed }
        if entries.contains(where: { $0.verdict == .missing }) { return Self.exitMissing }
        return Self.exitOK
    }

    /// The comparison as a table, plain text or Markdown (for a CI job summary).
    public func render(markdown: Bool) -> String {
        let header = ["row", "baseline/s", "current/s", "change", "verdict"]
        var rows: [[String]] = []
        for entry in entries {
            let change = entry.change.map { String(format: "%+.1f%%", $0 * 100) } ?? ""
            rows.append([
                entry.key, Format.compact(entry.baseline), Format.compact(entry.current), change,
                entry.verdict.rawValue,
            ])
        }
        let counts = Dictionary(grouping: entries, by: \.verdict).mapValues(\.count)
        let order: [Verdict] = [.regressed, .failed, .missing, .noise, .improved, .unchanged, .new, .noFigures]
        let summary = order.compactMap { verdict in counts[verdict].map { "\($0) \(verdict.rawValue)" } }
            .joined(separator: ", ")
        let outcome: String
        switch exitStatus {
        case Self.exitRegressed: outcome = "REGRESSION"
        case Self.exitMissing: outcome = "MISSING ROWS"
        default: outcome = "OK"
        }
        let thresholdText = String(format: "%g%%", threshold * 100)
        if markdown {
            var text = "### Benchmark comparison: \(outcome)\n\nThreshold \(thresholdText) (noise-aware: past the threshold and outside both runs' min–max spread). \(summary).\n\n"
            text += "| " + header.joined(separator: " | ") + " |\n"
            text += "| --- | ---: | ---: | ---: | --- |\n"
            for row in rows {
                var cells = row
                if cells[4] == Verdict.regressed.rawValue || cells[4] == Verdict.failed.rawValue {
                    cells[4] = "**\(cells[4])**"
                }
                text += "| " + cells.joined(separator: " | ") + " |\n"
            }
            return text
        }
        return "Comparison (threshold \(thresholdText)): \(outcome); \(summary)\n" + SummaryTable.align([header] + rows)
    }
}
