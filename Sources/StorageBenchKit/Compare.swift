import Foundation

/// The comparison of a current report with a baseline, row by row
/// (backend × durability × size × operation), on each metric both reports have:
///
/// - **time**: the throughput, or (with a ``Normalization``) the throughput's
///   ratio to a reference backend of the same run, which cancels the machine's
///   speed. A row has **regressed** when it fell by more than the threshold
///   *and* the two runs' 95% confidence intervals of the median (`ci_low` …
///   `ci_high`; min … max for reports without them) do not overlap; past the
///   threshold with overlapping intervals is `noise`.
/// - **instructions** and **allocations** per iteration, counted under
///   callgrind: deterministic, so a change past ``instructionThreshold`` is a
///   verdict by itself.
public struct Comparison: Sendable {
    /// How one row compares.
    public enum Verdict: String, Sendable, Hashable {
        /// Worse past the threshold (and, for time, outside both intervals).
        case regressed
        /// Better past the threshold (and, for time, outside both intervals).
        case improved
        /// Within the threshold.
        case unchanged
        /// Past the threshold but inside a run's confidence interval.
        case noise
        /// In the baseline, not in the current report.
        case missing
        /// In the current report, not in the baseline.
        case new
        /// The baseline had figures; the current run has an error row.
        case failed
        /// Neither run has figures for it (both error rows).
        case noFigures = "no figures"
        /// A reference backend's own throughput, shown for information: it
        /// measures the machine, so it is not judged.
        case reference
    }

    /// What a comparison compares time against.
    public enum Normalization: Sendable, Hashable {
        /// Absolute throughputs.
        case none
        /// Each backend against the reference its rows declare (the `reference`
        /// column: `sqlite-raw` for `sqlite` and `grdb`), or else against
        /// `B-raw`, when both reports have that backend; others absolutely.
        case automatic
        /// Each backend against the backend the map names for it (all of them
        /// against one with `["*": name]`); others absolutely.
        case backends([String: String])

        /// Parses `none`, `auto`, a backend name (every row against it), or
        /// pairs `B=REF,…`.
        /// - Throws: ``ConfigurationError`` for an empty or malformed value.
        public init(parsing text: String) throws {
            let items = try parseList(text, option: "--normalize")
            if items == ["none"] {
                self = .none
            } else if items == ["auto"] {
                self = .automatic
            } else if items.count == 1, !items[0].contains("=") {
                self = .backends(["*": items[0]])
            } else {
                var map: [String: String] = [:]
                for item in items {
                    let parts = item.split(separator: "=", omittingEmptySubsequences: false).map(String.init)
                    guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                        throw ConfigurationError(
                            "'\(item)' in --normalize is not BACKEND=REFERENCE; write auto, none, a backend, or pairs such as grdb=sqlite-raw")
                    }
                    map[parts[0]] = parts[1]
                }
                self = .backends(map)
            }
        }

        /// The backend `backend`'s rows are divided by, among `available`
        /// (the backends both reports have), or `nil` to compare it absolutely;
        /// `declared` is the reference its rows name, if any.
        public func reference(for backend: String, declared: String = "", available: Set<String>) -> String? {
            let candidate: String?
            switch self {
            case .none: candidate = nil
            case .automatic: candidate = declared.isEmpty ? "\(backend)-raw" : declared
            case .backends(let map): candidate = map[backend] ?? map["*"]
            }
            guard let candidate, candidate != backend, available.contains(candidate) else { return nil }
            return candidate
        }
    }

    /// What an entry compares.
    public enum Metric: Sendable, Hashable, CustomStringConvertible {
        /// Units per second.
        case throughput
        /// Units per second divided by the reference backend's, in the same run.
        case ratio(to: String)
        /// Instructions per iteration (fewer is better).
        case instructions
        /// Allocations per iteration (fewer is better).
        case allocations

        /// `throughput`, `÷ sqlite-raw`, `instructions`, `allocations`.
        public var description: String {
            switch self {
            case .throughput: "throughput"
            case .ratio(let reference): "÷ \(reference)"
            case .instructions: "instructions"
            case .allocations: "allocations"
            }
        }

        /// Whether the metric is a count, where fewer is better.
        var isCount: Bool {
            switch self {
            case .instructions, .allocations: true
            default: false
            }
        }
    }

    /// Which metrics to compare.
    public enum Metrics: String, Sendable, CaseIterable {
        /// Time (normalized as asked) and, where both reports have them, counts.
        case all
        /// Time only.
        case time
        /// Instruction and allocation counts only.
        case instructions
    }

    /// One compared row and metric.
    public struct Entry: Sendable, Hashable {
        /// The row key: backend/durability/DxM/operation.
        public let key: String
        /// What is compared.
        public let metric: Metric
        /// The baseline figure, if any.
        public let baseline: Double?
        /// The current figure, if any.
        public let current: Double?
        /// The relative change (−0.25 for 25% less throughput, +0.25 for 25%
        /// more instructions), if both have a figure.
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
    /// The time threshold, as a fraction (0.1 for 10%).
    public let threshold: Double
    /// The threshold for instruction and allocation counts, as a fraction.
    public let instructionThreshold: Double
    /// How time was normalized.
    public let normalization: Normalization

    /// Compares `current` with `baseline`.
    ///
    /// - Parameters:
    ///   - threshold: the largest change of time (or of its ratio) that is not a verdict, as a fraction.
    ///   - instructionThreshold: the same for instruction and allocation counts (default 1%).
    ///   - normalization: what time is compared against.
    ///   - metrics: which metrics to compare.
    /// - Throws: ``ConfigurationError`` when the reports are of different workloads.
    public init(
        baseline: Report, current: Report, threshold: Double, instructionThreshold: Double = 0.01,
        normalization: Normalization = .none, metrics: Metrics = .all
    ) throws {
        self.threshold = threshold
        self.instructionThreshold = instructionThreshold
        self.normalization = normalization
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
        var baselineByKey: [String: ReportRow] = [:]
        for row in baseline.rows { baselineByKey[row.key] = row }
        let available = Set(baseline.rows.map(\.backend)).intersection(current.rows.map(\.backend))
        var declared: [String: String] = [:]
        for row in baseline.rows + current.rows where !row.reference.isEmpty { declared[row.backend] = row.reference }
        let references = Set(
            available.compactMap { normalization.reference(for: $0, declared: declared[$0] ?? "", available: available) })

        /// The same operation's row of `backend` in the same run.
        func sibling(of row: ReportRow, backend: String, in rows: [String: ReportRow]) -> ReportRow? {
            var other = row
            other.backend = backend
            return rows[other.key]
        }

        var seen: Set<String> = []
        var entries: [Entry] = []
        for base in baseline.rows {
            seen.insert(base.key)
            guard let now = currentByKey[base.key] else {
                entries.append(
                    Entry(
                        key: base.key, metric: .throughput, baseline: base.throughputPerSecond, current: nil,
                        change: nil, verdict: .missing, unit: base.unit))
                continue
            }
            if metrics != .instructions {
                if let reference = normalization.reference(
                    for: base.backend, declared: declared[base.backend] ?? "", available: available)
                {
                    entries.append(
                        Self.compareRatio(
                            base, now, reference: reference,
                            baseReference: sibling(of: base, backend: reference, in: baselineByKey),
                            nowReference: sibling(of: now, backend: reference, in: currentByKey), threshold: threshold))
                } else {
                    var entry = Self.compare(base, now, threshold: threshold)
                    if references.contains(base.backend), entry.change != nil {
                        entry = Entry(
                            key: entry.key, metric: entry.metric, baseline: entry.baseline, current: entry.current,
                            change: entry.change, verdict: .reference, unit: entry.unit)
                    }
                    entries.append(entry)
                }
            }
            if metrics != .time {
                if let b = base.instructions, let n = now.instructions {
                    entries.append(
                        Self.compareCount(
                            key: base.key, metric: .instructions, Double(b), Double(n), threshold: instructionThreshold,
                            unit: base.unit))
                }
                if let b = base.allocations, let n = now.allocations {
                    entries.append(
                        Self.compareCount(
                            key: base.key, metric: .allocations, Double(b), Double(n), threshold: instructionThreshold,
                            unit: base.unit))
                }
                if metrics == .instructions, base.instructions == nil || now.instructions == nil,
                    base.error.isEmpty, now.error.isEmpty
                {
                    entries.append(
                        Entry(
                            key: base.key, metric: .instructions, baseline: base.instructions.map(Double.init),
                            current: now.instructions.map(Double.init), change: nil,
                            verdict: base.instructions == nil ? .noFigures : .missing, unit: base.unit))
                }
            }
        }
        for row in current.rows where !seen.contains(row.key) {
            entries.append(
                Entry(
                    key: row.key, metric: .throughput, baseline: nil, current: row.throughputPerSecond, change: nil,
                    verdict: .new, unit: row.unit))
        }
        self.entries = entries
    }

    /// A row's throughput interval: from the confidence interval of its median
    /// time, or its min … max, or the median alone.
    static func interval(_ row: ReportRow, median: Double) -> (low: Double, high: Double) {
        guard let units = row.units.map(Double.init) else { return (median, median) }
        let slowest = (row.ciHighSeconds ?? row.maxSeconds).flatMap { $0 > 0 ? units / $0 : nil } ?? median
        let fastest = (row.ciLowSeconds ?? row.minSeconds).flatMap { $0 > 0 ? units / $0 : nil } ?? median
        return (min(slowest, median), max(fastest, median))
    }

    /// The verdict of a change of a higher-is-better figure with intervals.
    static func verdict(
        change: Double, base: (low: Double, high: Double), now: (low: Double, high: Double), threshold: Double
    ) -> Verdict {
        if change <= -threshold {
            return now.high < base.low ? .regressed : .noise
        } else if change >= threshold {
            return now.low > base.high ? .improved : .noise
        }
        return .unchanged
    }

    static func compare(_ base: ReportRow, _ now: ReportRow, threshold: Double) -> Entry {
        guard let baseThroughput = base.throughputPerSecond, baseThroughput > 0 else {
            return Entry(
                key: base.key, metric: .throughput, baseline: nil, current: now.throughputPerSecond, change: nil,
                verdict: now.throughputPerSecond == nil ? .noFigures : .new, unit: base.unit)
        }
        guard let nowThroughput = now.throughputPerSecond, now.error.isEmpty else {
            return Entry(
                key: base.key, metric: .throughput, baseline: baseThroughput, current: nil, change: nil,
                verdict: .failed, unit: base.unit)
        }
        let change = nowThroughput / baseThroughput - 1
        let verdict = verdict(
            change: change, base: interval(base, median: baseThroughput), now: interval(now, median: nowThroughput),
            threshold: threshold)
        return Entry(
            key: base.key, metric: .throughput, baseline: baseThroughput, current: nowThroughput, change: change,
            verdict: verdict, unit: base.unit)
    }

    /// A row's throughput divided by its reference's, in each run: the
    /// paired ratio and its interval (``ReportRow/ratioPaired``) when the row
    /// has one against that reference, else the ratio of the two medians,
    /// whose interval is the widest the two rows' intervals allow.
    static func compareRatio(
        _ base: ReportRow, _ now: ReportRow, reference: String, baseReference: ReportRow?, nowReference: ReportRow?,
        threshold: Double
    ) -> Entry {
        let name = reference
        func ratio(_ row: ReportRow, _ reference: ReportRow?) -> (value: Double, low: Double, high: Double)? {
            if row.error.isEmpty, row.reference == name, let paired = row.ratioPaired, paired > 0,
                let low = row.ratioPairedLow, let high = row.ratioPairedHigh
            {
                return (paired, min(low, paired), max(high, paired))
            }
            guard let reference, row.error.isEmpty, reference.error.isEmpty, let t = row.throughputPerSecond,
                let r = reference.throughputPerSecond, t > 0, r > 0
            else { return nil }
            let ti = interval(row, median: t)
            let ri = interval(reference, median: r)
            return (t / r, ti.low / ri.high, ti.high / ri.low)
        }
        let metric = Metric.ratio(to: reference)
        guard let b = ratio(base, baseReference) else {
            let n = ratio(now, nowReference)
            return Entry(
                key: base.key, metric: metric, baseline: nil, current: n?.value, change: nil,
                verdict: n == nil ? .noFigures : .new, unit: base.unit)
        }
        guard let n = ratio(now, nowReference) else {
            return Entry(
                key: base.key, metric: metric, baseline: b.value, current: nil, change: nil, verdict: .failed,
                unit: base.unit)
        }
        let change = n.value / b.value - 1
        let verdict = verdict(
            change: change, base: (b.low, b.high), now: (n.low, n.high), threshold: threshold)
        return Entry(
            key: base.key, metric: metric, baseline: b.value, current: n.value, change: change, verdict: verdict,
            unit: base.unit)
    }

    /// Counts are deterministic: the change alone decides.
    static func compareCount(
        key: String, metric: Metric, _ base: Double, _ now: Double, threshold: Double, unit: String
    ) -> Entry {
        let change = base > 0 ? now / base - 1 : (now > 0 ? Double.infinity : 0)
        let verdict: Verdict
        if change > threshold {
            verdict = .regressed
        } else if change < -threshold {
            verdict = .improved
        } else {
            verdict = .unchanged
        }
        return Entry(key: key, metric: metric, baseline: base, current: now, change: change, verdict: verdict, unit: unit)
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
        let header = ["row", "metric", "baseline", "current", "change", "verdict"]
        var rows: [[String]] = []
        for entry in entries {
            let change = entry.change.map { String(format: "%+.1f%%", $0 * 100) } ?? ""
            func figure(_ value: Double?) -> String {
                guard let value else { return "" }
                switch entry.metric {
                case .throughput: return Format.compact(value) + "/s"
                case .ratio: return String(format: value >= 0.1 ? "%.3f×" : "%.3g×", value)
                case .instructions, .allocations: return Format.compact(value)
                }
            }
            rows.append([
                entry.key, entry.metric.description, figure(entry.baseline), figure(entry.current), change,
                entry.verdict.rawValue,
            ])
        }
        let counts = Dictionary(grouping: entries, by: \.verdict).mapValues(\.count)
        let order: [Verdict] = [
            .regressed, .failed, .missing, .noise, .improved, .unchanged, .reference, .new, .noFigures,
        ]
        let summary = order.compactMap { verdict in counts[verdict].map { "\($0) \(verdict.rawValue)" } }
            .joined(separator: ", ")
        let outcome: String
        switch exitStatus {
        case Self.exitRegressed: outcome = "REGRESSION"
        case Self.exitMissing: outcome = "MISSING ROWS"
        default: outcome = "OK"
        }
        let basis: String
        switch normalization {
        case .none: basis = "absolute throughput"
        case .automatic: basis = "each backend's throughput ÷ its reference's (its raw engine) where both reports have it"
        case .backends(let map):
            basis = "throughput ÷ " + map.sorted { $0.key < $1.key }
                .map { $0.key == "*" ? $0.value : "\($0.value) for \($0.key)" }.joined(separator: ", ")
        }
        let thresholds = "time threshold \(Format.percent(threshold)) (\(basis); past it and outside both runs' 95% intervals), counts threshold \(Format.percent(instructionThreshold))"
        if markdown {
            var text = "### Benchmark comparison: \(outcome)\n\n\(thresholds). \(summary).\n\n"
            text += "| " + header.joined(separator: " | ") + " |\n"
            text += "| --- | --- | ---: | ---: | ---: | --- |\n"
            for row in rows {
                var cells = row
                if cells[5] == Verdict.regressed.rawValue || cells[5] == Verdict.failed.rawValue {
                    cells[5] = "**\(cells[5])**"
                }
                text += "| " + cells.joined(separator: " | ") + " |\n"
            }
            return text
        }
        return "Comparison: \(outcome); \(summary)\n\(thresholds)\n" + SummaryTable.align([header] + rows)
    }
}
