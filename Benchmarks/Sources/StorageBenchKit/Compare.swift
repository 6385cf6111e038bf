import Foundation

/// The comparison of a current report with a baseline, row by row
/// (backend × durability × size × operation), on each metric both reports have:
///
/// - **time**: the throughput, or (with a ``Normalization``) the throughput's
///   ratio to a reference backend of the same run, which cancels the machine's
///   speed. A row has **regressed** when it fell by more than the threshold
///   *and* the two runs' 95% confidence intervals of the median (`ci_low` …
///   `ci_high`) do not overlap; past the threshold with overlapping intervals
///   is `noise`. Time judges a row only when both runs have such an interval
///   (at least ``fewestForInterval`` iterations, or paired rounds for a
///   ratio) and ran on the same CPU model and host; otherwise it is
///   `not judged`, and a note says why.
/// - **instructions** and **allocations** per iteration, counted under
///   callgrind: deterministic, so a change past ``instructionThreshold`` is a
///   verdict by itself, on any machine.
///
/// A third-party library's rows (``BackendRole/thirdParty``, GRDB) are
/// compared and shown, but never decide ``exitStatus``.
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
        /// A wall-time figure that cannot judge the row (``Unjudged``): the
        /// counts, where counted, judge it instead.
        case notJudged = "not judged"
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

    /// Why a wall-time figure was not judged.
    public enum Unjudged: Sendable, Hashable {
        /// The two rows were measured on another CPU model or host: their
        /// times measure the machines as much as the code.
        case otherMachine
        /// A side has fewer iterations (or paired rounds) than a 95% interval
        /// of the median needs, so a difference cannot be told from noise.
        case noInterval
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
        /// Whether the verdict counts towards the exit status: `false` for a
        /// third-party library's rows (``BackendRole/thirdParty``), which are
        /// shown for information only.
        public var decides: Bool = true
        /// Why a ``Verdict/notJudged`` figure was not judged.
        public var unjudged: Unjudged? = nil

        /// Creates an entry.
        public init(
            key: String, metric: Metric, baseline: Double?, current: Double?, change: Double?, verdict: Verdict,
            unit: String, decides: Bool = true, unjudged: Unjudged? = nil
        ) {
            self.key = key
            self.metric = metric
            self.baseline = baseline
            self.current = current
            self.change = change
            self.verdict = verdict
            self.unit = unit
            self.decides = decides
            self.unjudged = unjudged
        }

        /// This entry with another verdict.
        func with(_ verdict: Verdict, unjudged: Unjudged? = nil) -> Entry {
            Entry(
                key: key, metric: metric, baseline: baseline, current: current, change: change, verdict: verdict,
                unit: unit, decides: decides, unjudged: unjudged)
        }
    }

    /// Exit status when nothing regressed and no row is missing.
    public static let exitOK: Int32 = 0
    /// Exit status when a row regressed or failed.
    public static let exitRegressed: Int32 = 1
    /// Exit status when nothing regressed but baseline rows are missing from the
    /// current report, or the reports cannot be compared.
    public static let exitMissing: Int32 = 2

    /// The fewest iterations (or paired rounds) whose median has a 95%
    /// distribution-free interval (``MedianInterval``): 6. A wall-time figure
    /// with fewer on either side is not judged.
    public static let fewestForInterval = 6

    /// The compared rows, in the baseline's order, then the new ones.
    public let entries: [Entry]
    /// The time threshold, as a fraction (0.1 for 10%).
    public let threshold: Double
    /// The threshold for instruction and allocation counts, as a fraction.
    public let instructionThreshold: Double
    /// The threshold for counts of rows measured on another CPU model or
    /// host: the same program counts a little differently there, because the
    /// C library and runtime pick CPU-specific versions of their routines
    /// (glibc's string and memory functions), so it is wider than
    /// ``instructionThreshold``.
    public let otherMachineInstructionThreshold: Double
    /// How time was normalized.
    public let normalization: Normalization
    /// One line each on what differs between the reports as a whole (a
    /// workload version, sizes, durabilities) and on why wall times were
    /// not judged (another machine, no interval); printed before the rows.
    public let notes: [String]
    /// Whether the reports could be compared at all: the same workload and at
    /// least one row in both.
    public let comparable: Bool

    /// Compares `current` with `baseline`.
    ///
    /// Rows are matched by backend × durability × size × operation. Rows of a
    /// size or durability that only one report has are counted in a note,
    /// not compared. A row's wall time (throughput, or its ratio to a
    /// reference) is judged only when both sides have a 95% interval
    /// (``fewestForInterval``) and were measured on the same CPU model and
    /// host; otherwise it is ``Verdict/notJudged`` and only the instruction
    /// and allocation counts judge the row. A third-party library's rows
    /// never decide the exit status.
    ///
    /// - Parameters:
    ///   - threshold: the largest change of time (or of its ratio) that is not a verdict, as a fraction.
    ///   - instructionThreshold: the same for instruction and allocation counts (default 1%).
    ///   - otherMachineInstructionThreshold: the same for counts of rows
    ///     measured on another CPU model or host (default 3%; never below
    ///     `instructionThreshold`).
    ///   - normalization: what time is compared against.
    ///   - metrics: which metrics to compare.
    ///   - roles: the roles of backends whose rows do not carry one (reports
    ///     made before the `role` column), e.g. a registry's ``BackendRegistry/roles``.
    /// - Throws: nothing today; reports that cannot be compared give a note
    ///   and ``exitMissing`` instead.
    public init(
        baseline: Report, current: Report, threshold: Double, instructionThreshold: Double = 0.01,
        otherMachineInstructionThreshold: Double = 0.03, normalization: Normalization = .none,
        metrics: Metrics = .all, roles: [String: BackendRole] = [:]
    ) throws {
        self.threshold = threshold
        self.instructionThreshold = instructionThreshold
        self.otherMachineInstructionThreshold = max(otherMachineInstructionThreshold, instructionThreshold)
        self.normalization = normalization
        var notes: [String] = []
        let baselineWorkloads = Set(baseline.rows.map(\.workload))
        let currentWorkloads = Set(current.rows.map(\.workload))
        guard baselineWorkloads.isEmpty || currentWorkloads.isEmpty || baselineWorkloads == currentWorkloads else {
            notes.append(
                "The workload differs (baseline \(baselineWorkloads.sorted().joined(separator: ", ")), current "
                    + "\(currentWorkloads.sorted().joined(separator: ", "))): its figures measure other work, so no row is compared.")
            self.notes = notes
            self.entries = []
            self.comparable = false
            return
        }
        // Sizes and durabilities that only one report has: one line, not a row each.
        func group(_ row: ReportRow) -> String { "\(row.workload)/\(row.durability)/\(row.dialogs)x\(row.messagesPerDialog)" }
        let baselineGroups = Set(baseline.rows.map(group))
        let currentGroups = Set(current.rows.map(group))
        let sharedGroups = baselineGroups.intersection(currentGroups)
        if baselineGroups != currentGroups {
            func list<S: Sequence>(_ values: S) -> String where S.Element == String {
                let sorted = Set(values).sorted()
                return sorted.isEmpty ? "none" : sorted.joined(separator: ", ")
            }
            var parts: [String] = []
            let baselineSizes = list(baseline.rows.map { "\($0.dialogs)x\($0.messagesPerDialog)" })
            let currentSizes = list(current.rows.map { "\($0.dialogs)x\($0.messagesPerDialog)" })
            if baselineSizes != currentSizes { parts.append("size \(baselineSizes) → \(currentSizes)") }
            let baselineDurabilities = list(baseline.rows.map(\.durability))
            let currentDurabilities = list(current.rows.map(\.durability))
            if baselineDurabilities != currentDurabilities {
                parts.append("durability \(baselineDurabilities) → \(currentDurabilities)")
            }
            if parts.isEmpty { parts.append("the sizes run at each durability differ") }
            let onlyBaseline = baseline.rows.filter { !sharedGroups.contains(group($0)) }.count
            let onlyCurrent = current.rows.filter { !sharedGroups.contains(group($0)) }.count
            notes.append(
                "The reports differ: \(parts.joined(separator: "; ")); \(onlyBaseline) baseline and \(onlyCurrent) "
                    + "current rows outside what both ran are not compared.")
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
        /// The role either report gives the row's backend (the current one first), else the one `roles` or its name implies.
        func role(_ row: ReportRow) -> BackendRole {
            return currentByKey[row.key]?.role ?? baselineByKey[row.key]?.role ?? row.role
                ?? BackendRole.inferred(for: row.backend, known: roles)
        }

        /// The same operation's row of `backend` in the same run.
        func sibling(of row: ReportRow, backend: String, in rows: [String: ReportRow]) -> ReportRow? {
            var other = row
            other.backend = backend
            return rows[other.key]
        }
        /// Whether the two rows were measured on the same CPU model and host.
        func sameMachine(_ base: ReportRow, _ now: ReportRow) -> Bool {
            base.provenance.cpu == now.provenance.cpu && base.provenance.host == now.provenance.host
        }

        var seen: Set<String> = []
        var entries: [Entry] = []
        var machines: Set<String> = []
        for base in baseline.rows where sharedGroups.contains(group(base)) {
            seen.insert(base.key)
            let decides = role(base) != .thirdParty
            func add(_ entry: Entry) {
                var entry = entry
                entry.decides = decides
                entries.append(entry)
            }
            guard let now = currentByKey[base.key] else {
                add(
                    Entry(
                        key: base.key, metric: .throughput, baseline: base.throughputPerSecond, current: nil,
                        change: nil, verdict: .missing, unit: base.unit))
                continue
            }
            let machine = sameMachine(base, now)
            if !machine {
                machines.insert(
                    "the baseline ran on \(base.provenance.cpu) (host \(base.provenance.host)), this run on "
                        + "\(now.provenance.cpu) (host \(now.provenance.host))")
            }
            if metrics != .instructions {
                var entry: Entry
                if let reference = normalization.reference(
                    for: base.backend, declared: declared[base.backend] ?? "", available: available)
                {
                    entry = Self.compareRatio(
                        base, now, reference: reference,
                        baseReference: sibling(of: base, backend: reference, in: baselineByKey),
                        nowReference: sibling(of: now, backend: reference, in: currentByKey), threshold: threshold)
                } else {
                    entry = Self.compare(base, now, threshold: threshold)
                    if references.contains(base.backend), entry.change != nil { entry = entry.with(.reference) }
                }
                if entry.change != nil, entry.verdict != .reference {
                    if !machine {
                        entry = entry.with(.notJudged, unjudged: .otherMachine)
                    } else if !Self.hasInterval(
                        base, now, reference: entry.metric,
                        baseReference: { sibling(of: base, backend: $0, in: baselineByKey) },
                        nowReference: { sibling(of: now, backend: $0, in: currentByKey) })
                    {
                        entry = entry.with(.notJudged, unjudged: .noInterval)
                    }
                }
                add(entry)
            }
            if metrics != .time {
                let countThreshold = machine ? instructionThreshold : self.otherMachineInstructionThreshold
                if let b = base.instructions, let n = now.instructions {
                    add(
                        Self.compareCount(
                            key: base.key, metric: .instructions, Double(b), Double(n), threshold: countThreshold,
                            unit: base.unit))
                }
                if let b = base.allocations, let n = now.allocations {
                    add(
                        Self.compareCount(
                            key: base.key, metric: .allocations, Double(b), Double(n), threshold: countThreshold,
                            unit: base.unit))
                }
                if metrics == .instructions, base.instructions == nil || now.instructions == nil,
                    base.error.isEmpty, now.error.isEmpty
                {
                    add(
                        Entry(
                            key: base.key, metric: .instructions, baseline: base.instructions.map(Double.init),
                            current: now.instructions.map(Double.init), change: nil,
                            verdict: base.instructions == nil ? .noFigures : .missing, unit: base.unit))
                }
            }
        }
        for row in current.rows where !seen.contains(row.key) && sharedGroups.contains(group(row)) {
            entries.append(
                Entry(
                    key: row.key, metric: .throughput, baseline: nil, current: row.throughputPerSecond, change: nil,
                    verdict: .new, unit: row.unit, decides: role(row) != .thirdParty))
        }
        let otherMachine = entries.filter { $0.unjudged == .otherMachine }.count
        if otherMachine > 0 {
            var line = "Wall times not judged (\(otherMachine) figures measure the machine as much as the code): "
            line += machines.sorted().joined(separator: "; ")
            line += "; rows are judged by instructions and allocations only, past "
            line += "\(Format.percent(self.otherMachineInstructionThreshold)) (library routines differ by CPU)"
            let keysWithCounts = Set(entries.filter { $0.metric.isCount }.map(\.key))
            let uncounted = Set(entries.filter { $0.unjudged == .otherMachine && !keysWithCounts.contains($0.key) }.map(\.key))
            line += uncounted.isEmpty ? "." : " (\(uncounted.count) rows were not counted in both reports: not judged at all)."
            notes.append(line)
        }
        let noInterval = entries.filter { $0.unjudged == .noInterval }.count
        if noInterval > 0 {
            notes.append(
                "\(noInterval) wall-time figures not judged: a side has fewer than \(Self.fewestForInterval) iterations "
                    + "(or paired rounds), too few for a 95% interval; their rows are judged by counts where counted.")
        }
        if entries.isEmpty {
            notes.append("No row is in both reports: nothing was compared.")
        }
        self.notes = notes
        self.entries = entries
        self.comparable = !entries.isEmpty
    }

    /// Whether both sides of a wall-time figure have a 95% interval: for a
    /// throughput, both rows at least ``fewestForInterval`` iterations; for a
    /// paired ratio, that many rounds on both sides; for a ratio of medians,
    /// the rows and their references that many iterations.
    static func hasInterval(
        _ base: ReportRow, _ now: ReportRow, reference metric: Metric, baseReference: (String) -> ReportRow?,
        nowReference: (String) -> ReportRow?
    ) -> Bool {
        func enough(_ row: ReportRow?) -> Bool { (row?.iterations ?? 0) >= fewestForInterval }
        switch metric {
        case .ratio(let name):
            func side(_ row: ReportRow, _ reference: ReportRow?) -> Bool {
                if row.reference == name, row.ratioPaired != nil, row.ratioPairedLow != nil {
                    return (row.ratioPairedRounds?.count ?? row.iterations) >= fewestForInterval
                }
                return enough(row) && enough(reference)
            }
            return side(base, baseReference(name)) && side(now, nowReference(name))
        default:
            return enough(base) && enough(now)
        }
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
    /// ``exitMissing`` when a baseline row is missing or nothing could be
    /// compared, else ``exitOK``. A third-party library's rows (``Entry/decides``
    /// false) never count.
    public var exitStatus: Int32 {
        let deciding = entries.filter(\.decides)
        if deciding.contains(where: { $0.verdict == .regressed || $0.verdict == .failed }) { return Self.exitRegressed }
        if !comparable || deciding.contains(where: { $0.verdict == .missing }) { return Self.exitMissing }
        return Self.exitOK
    }

    /// The verdicts listed row by row (the rest are counted), in this order.
    static let listed: [Verdict] = [.regressed, .failed, .improved, .missing]

    /// The width a terminal line of ``render(markdown:verbose:)`` keeps within.
    public static let terminalWidth = 100

    /// `text` as lines of at most ``terminalWidth`` columns, broken between
    /// words, each line after the first indented by two spaces; a word longer
    /// than a line stays whole.
    static func wrap(_ text: String, width: Int = terminalWidth) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if line.isEmpty {
                line = (lines.isEmpty ? "" : "  ") + word
            } else if line.count + 1 + word.count <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = "  " + word
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines.map { $0 + "\n" }.joined()
    }

    /// The comparison as text or Markdown (for a CI job summary): the
    /// outcome, the notes, the regressed and failed rows, the improved ones,
    /// the missing ones, then a count of the rest (every row with `verbose`).
    public func render(markdown: Bool, verbose: Bool = false) -> String {
        let header = ["row", "metric", "baseline", "current", "change", "verdict"]
        func cells(_ entry: Entry) -> [String] {
            let change = entry.change.map { String(format: "%+.1f%%", $0 * 100) } ?? ""
            func figure(_ value: Double?) -> String {
                guard let value else { return "" }
                switch entry.metric {
                case .throughput: return Format.compact(value) + "/s"
                case .ratio: return String(format: value >= 0.1 ? "%.3f×" : "%.3g×", value)
                case .instructions, .allocations: return Format.compact(value)
                }
            }
            var verdict = entry.verdict.rawValue
            if !entry.decides, Self.listed.contains(entry.verdict) { verdict += " (third-party, not judged)" }
            return [entry.key, entry.metric.description, figure(entry.baseline), figure(entry.current), change, verdict]
        }
        let outcome: String
        switch exitStatus {
        case Self.exitRegressed: outcome = "REGRESSION"
        case Self.exitMissing: outcome = comparable ? "MISSING ROWS" : "NOT COMPARABLE"
        default: outcome = "OK"
        }
        let deciding = entries.filter(\.decides)
        func count(_ verdict: Verdict) -> Int { deciding.filter { $0.verdict == verdict }.count }
        var headline = "\(count(.regressed)) regressed"
        if count(.failed) > 0 { headline += ", \(count(.failed)) failed" }
        headline += ", \(count(.improved)) improved"
        if count(.missing) > 0 { headline += ", \(count(.missing)) missing" }
        let basis: String
        switch normalization {
        case .none: basis = "absolute throughput"
        case .automatic: basis = "throughput ÷ the raw engine's in the same run where both reports have it"
        case .backends(let map):
            basis = "throughput ÷ " + map.sorted { $0.key < $1.key }
                .map { $0.key == "*" ? $0.value : "\($0.value) for \($0.key)" }.joined(separator: ", ")
        }
        let thresholds = "Judged: time past \(Format.percent(threshold)) and outside both runs' 95% intervals "
            + "(\(basis)); instruction and allocation counts past \(Format.percent(instructionThreshold))."
        var sections: [(title: String, rows: [[String]])] = []
        let shown = verbose ? entries : entries.filter { Self.listed.contains($0.verdict) }
        if verbose {
            sections.append(("Every row", shown.map(cells)))
        } else {
            let titles: [(Verdict, String)] = [
                (.regressed, "Regressed"), (.failed, "Failed"), (.improved, "Improved"), (.missing, "Missing"),
            ]
            // Judged rows first, each verdict's own; the third-party ones after them.
            for (verdict, title) in titles {
                let rows = shown.filter { $0.verdict == verdict && $0.decides }.map(cells)
                if !rows.isEmpty { sections.append(("\(title) (\(rows.count))", rows)) }
            }
            let thirdParty = shown.filter { !$0.decides }.map(cells)
            if !thirdParty.isEmpty {
                sections.append(("Third-party references (for information; never decide the outcome)", thirdParty))
            }
        }
        let rest = verbose ? [] : entries.filter { !Self.listed.contains($0.verdict) }
        let order: [Verdict] = [.unchanged, .noise, .notJudged, .reference, .new, .noFigures]
        let restCounts = order.compactMap { verdict -> String? in
            let n = rest.filter { $0.verdict == verdict }.count
            return n == 0 ? nil : "\(n) \(verdict.rawValue)"
        }
        let restLine = restCounts.isEmpty ? "" : "Not listed: " + restCounts.joined(separator: ", ") + " (--verbose lists every row)."
        if markdown {
            var text = "### Benchmark comparison: \(outcome)\n\n\(headline).\n\n"
            for note in notes { text += "- \(note)\n" }
            text += "- \(thresholds)\n\n"
            for section in sections {
                text += "#### \(section.title)\n\n"
                text += "| " + header.joined(separator: " | ") + " |\n"
                text += "| --- | --- | ---: | ---: | ---: | --- |\n"
                for row in section.rows {
                    var row = row.map { $0.replacingOccurrences(of: "|", with: "\\|") }
                    if row[5] == Verdict.regressed.rawValue || row[5] == Verdict.failed.rawValue { row[5] = "**\(row[5])**" }
                    text += "| " + row.joined(separator: " | ") + " |\n"
                }
                text += "\n"
            }
            if !restLine.isEmpty { text += restLine + "\n" }
            return text
        }
        var text = "Comparison: \(outcome); \(headline)\n"
        for note in notes { text += Self.wrap(note) }
        text += Self.wrap(thresholds)
        for section in sections {
            text += "\(section.title):\n" + SummaryTable.align([header] + section.rows)
        }
        if !restLine.isEmpty { text += restLine + "\n" }
        return text
    }
}
