import DAOCore
import DialogGraph
import Foundation

// When a run has measured enough: how far each median and each ratio to the
// raw engine is from being known within the precision asked for, and what
// the operations of an iteration cost.

extension RunConfiguration {
    /// How far the median wall time of each operation, over one backend's
    /// measured `results` (at one size and durability), is from being known
    /// within ``precision`` at ``confidence``: the 95% interval's relative
    /// half-width divided by ``precision`` (above 1: unsettled), or
    /// ``unknownWidth`` when there are too few iterations for an interval. A
    /// failed backend has none.
    func medianWidths(_ results: [IterationResult]) -> [BenchOperation: Double] {
        guard !results.isEmpty, results.allSatisfy({ $0.error == nil }) else { return [:] }
        var widths: [BenchOperation: Double] = [:]
        for operation in operations {
            let times = results.compactMap { $0.measurements.first { $0.operation == operation }?.seconds }
            guard let statistics = SampleStatistics(times), let interval = MedianInterval(times, confidence: confidence)
            else { continue }
            widths[operation] =
                interval.coverage < confidence
                ? Self.unknownWidth : interval.relativeHalfWidth(around: statistics.median) / precision
        }
        return widths
    }

    /// How far the ratio of `backend` to its reference, taken round by round
    /// (``PairedRatio``) over `results` (one size and durability), is from
    /// being known within ``precision`` at ``confidence``, per operation (as
    /// ``medianWidths(_:)``); none when the reference is not in the run or
    /// either side failed.
    func ratioWidths(_ results: [IterationResult], backend: Backend) -> [BenchOperation: Double] {
        guard let reference = backend.reference, backends.contains(where: { $0.name == reference }) else { return [:] }
        let mine = results.filter { $0.job.backend == backend.name }
        let theirs = results.filter { $0.job.backend == reference }
        guard !mine.isEmpty, !theirs.isEmpty,
            (mine + theirs).allSatisfy({ $0.error == nil })
        else { return [:] }
        var widths: [BenchOperation: Double] = [:]
        for operation in operations {
            guard let paired = PairedRatio(operation, results: mine, reference: theirs, confidence: confidence) else {
                continue
            }
            widths[operation] = paired.coverage < confidence ? Self.unknownWidth : paired.relativeHalfWidth / precision
        }
        return widths
    }

    /// What ended the extra rounds of one size and durability.
    enum ExtraRoundsEnd: Sendable, Equatable {
        /// Every figure was settled (or no backend had one to settle).
        case settled
        /// ``maxIterations`` was reached.
        case maxIterations
        /// ``timeLimit`` ran out.
        case timeLimit
        /// No unsettled group's next round was expected to end within what
        /// was left of ``timeLimit``.
        case nothingFits
    }

    /// One line on what the extra rounds of `size` and `durability` did,
    /// given the measured `results` of that size and durability: how many
    /// rounds in how many seconds, what ended them, and every figure still
    /// unsettled (``unsettledWidths(_:)``) with its interval's half-width
    /// and the rounds it had, widest first (the twelve widest, then how many
    /// more), so that a log shows where the budget went and what it left wide.
    /// `brief` (a terminal's): at most 100 columns, the unsettled figures
    /// only counted (the run's warnings list them with `--verbose`).
    func extraRoundsSummary(
        _ results: [IterationResult], size: BenchSize, durability: Durability, end: ExtraRoundsEnd,
        rounds: Int, seconds: Double, brief: Bool = false
    ) -> String {
        let why =
            switch end {
            case .settled: "every figure within ±\(Format.percent(precision))"
            case .maxIterations: "ended at --max-iterations (\(maxIterations))"
            case .timeLimit: "ended by --time-limit (" + String(format: "%.0f s", timeLimit) + ")"
            case .nothingFits:
                "ended by --time-limit (" + String(format: "%.0f s", timeLimit)
                    + "): no unsettled group's next round was expected to end within it"
            }
        var line = "\(size) \(durability.rawValue): \(rounds) extra rounds in " + String(format: "%.0f s", seconds) + ", \(why)"
        var open: [(name: String, width: Double, rounds: Int)] = []
        for (backend, widths) in unsettledWidths(results) {
            for (operation, width) in widths {
                let count = results.filter {
                    $0.job.backend == backend && !$0.job.countsInstructions && $0.job.operations.contains(operation)
                }.count
                open.append(("\(backend) \(operation.rawValue)", width, count))
            }
        }
        guard !open.isEmpty else { return line }
        if brief {
            let short =
                switch end {
                case .settled: "all within ±\(Format.percent(precision))"
                case .maxIterations: "--max-iterations reached"
                case .timeLimit, .nothingFits: "--time-limit reached"
                }
            return "\(size) \(durability.rawValue): \(rounds) extra rounds in " + String(format: "%.0f s", seconds)
                + " (\(short)); \(open.count) figures still unsettled"
        }
        open.sort { $0.width != $1.width ? $0.width > $1.width : $0.name < $1.name }
        // The widest first, up to twelve: a log line, not the report.
        let shown = 12
        line += "; still unsettled: "
        line += open.prefix(shown).map { item in
            // The sentinel is set exactly; a measured width is a ratio of measured times.
            let width = item.width == Self.unknownWidth ? "no interval" : String(format: "±%.1f%%", item.width * precision * 100)
            return "\(item.name) \(width) (\(item.rounds) rounds)"
        }.joined(separator: ", ")
        if open.count > shown { line += " and \(open.count - shown) more" }
        return line
    }

    /// The width given to a figure with too few iterations for an interval
    /// at ``confidence``: unsettled, and weighed as an interval ten times
    /// wider than ``precision`` when extra rounds are shared out.
    static let unknownWidth = 10.0

    /// The operations whose median wall time, over one backend's measured
    /// `results` (at one size and durability), is not yet known within
    /// ``precision`` at ``confidence``: rows that more rounds could settle, in
    /// workload order. A failed backend has none.
    func unsettledMedians(_ results: [IterationResult]) -> [BenchOperation] {
        let widths = medianWidths(results)
        return operations.filter { (widths[$0] ?? 0) > 1 }
    }

    /// The operations whose ratio of `backend` to its reference, taken round
    /// by round (``PairedRatio``) over `results` (one size and durability), is
    /// not yet known within ``precision`` at ``confidence``, in workload order;
    /// none when the reference is not in the run or either side failed.
    func unsettledRatios(_ results: [IterationResult], backend: Backend) -> [BenchOperation] {
        let widths = ratioWidths(results, backend: backend)
        return operations.filter { (widths[$0] ?? 0) > 1 }
    }

    /// The widths (``medianWidths(_:)``) of the figures each backend still
    /// needs rounds for, given the measured `results` of one size and
    /// durability, only those above 1: a backend measured against a
    /// reference in the run, its paired ratios (the figure it is compared
    /// by; its own median follows the machine); a reference, none of its own
    /// (it runs for the backends measured against it); any other backend,
    /// its medians.
    func unsettledWidths(_ results: [IterationResult]) -> [String: [BenchOperation: Double]] {
        let names = Set(backends.map(\.name))
        var unsettled: [String: [BenchOperation: Double]] = [:]
        for backend in backends {
            let widths: [BenchOperation: Double]
            if let reference = backend.reference, names.contains(reference) {
                widths = ratioWidths(results, backend: backend)
            } else if backends.contains(where: { $0.reference == backend.name }) {
                widths = [:]
            } else {
                widths = medianWidths(results.filter { $0.job.backend == backend.name })
            }
            let open = widths.filter { $0.value > 1 }
            if !open.isEmpty { unsettled[backend.name] = open }
        }
        return unsettled
    }

    /// The operations each backend still needs rounds for, in workload
    /// order (``unsettledWidths(_:)``).
    func unsettledOperations(_ results: [IterationResult]) -> [String: [BenchOperation]] {
        unsettledWidths(results).mapValues { widths in operations.filter { widths[$0] != nil } }
    }

    /// The seconds one iteration of `backend` spends in each operation, over
    /// its measured `results`: the median over the iterations that ran it of
    /// all its runs (an operation's in-place runs added up, with the untimed
    /// restores before `erase-all`'s); 0 for one not measured yet.
    func operationCosts(_ results: [IterationResult], backend: String) -> [BenchOperation: Double] {
        var costs: [BenchOperation: Double] = [:]
        for operation in operations {
            let seconds = results.compactMap { result -> Double? in
                guard result.job.backend == backend, !result.job.countsInstructions,
                    let m = result.measurements.first(where: { $0.operation == operation })
                else { return nil }
                return (m.runSeconds?.reduce(0, +) ?? m.seconds) + (m.restoreSeconds ?? 0)
            }
            costs[operation] = SampleStatistics(seconds)?.median ?? 0
        }
        return costs
    }

    /// The seconds an iteration spent in its operations, as
    /// ``operationCosts(_:backend:)`` counts them: each operation's in-place
    /// runs added up, with the untimed restores before `update`'s and
    /// `erase-all`'s further runs.
    static func operationSeconds(_ result: IterationResult) -> Double {
        result.measurements.reduce(0) { sum, m in sum + (m.runSeconds?.reduce(0, +) ?? m.seconds) + (m.restoreSeconds ?? 0) }
    }
}
