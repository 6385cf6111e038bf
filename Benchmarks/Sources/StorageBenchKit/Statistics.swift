import Foundation
import Histogram

/// Summary statistics of a sample of durations (or any values).
public struct SampleStatistics: Sendable, Hashable {
    /// The number of values.
    public let count: Int
    /// The median: the middle value, or the mean of the two middle values.
    public let median: Double
    /// The smallest value.
    public let min: Double
    /// The largest value.
    public let max: Double
    /// The arithmetic mean.
    public let mean: Double
    /// The sample standard deviation (n − 1 in the denominator; 0 for one value).
    public let standardDeviation: Double

    /// The statistics of `values`, or `nil` when there are none.
    public init?(_ values: [Double]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        count = sorted.count
        let middle = sorted.count / 2
        median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        min = sorted[0]
        max = sorted[sorted.count - 1]
        let mean = sorted.reduce(0, +) / Double(sorted.count)
        self.mean = mean
        if sorted.count > 1 {
            let squares = sorted.reduce(0) { $0 + ($1 - mean) * ($1 - mean) }
            standardDeviation = (squares / Double(sorted.count - 1)).squareRoot()
        } else {
            standardDeviation = 0
        }
    }
}

/// Latency percentiles of per-call timings, from an HDR histogram (three
/// significant digits).
public struct LatencyPercentiles: Sendable, Hashable {
    /// The median call, in microseconds.
    public let p50Microseconds: Double
    /// The 90th percentile, in microseconds.
    public let p90Microseconds: Double
    /// The 99th percentile, in microseconds.
    public let p99Microseconds: Double

    /// The percentiles of `nanoseconds`, or `nil` when there are none.
    public init?(nanoseconds: [UInt64]) {
        guard !nanoseconds.isEmpty else { return nil }
        var histogram = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
        for value in nanoseconds {
            // An auto-resizing histogram takes any value up to UInt64.max / 2.
            _ = histogram.record(Swift.max(value, 1))
        }
        p50Microseconds = Double(histogram.valueAtPercentile(50)) / 1000
        p90Microseconds = Double(histogram.valueAtPercentile(90)) / 1000
        p99Microseconds = Double(histogram.valueAtPercentile(99)) / 1000
    }
}

/// A distribution-free confidence interval for the median of a sample: the
/// order statistics x₍ₖ₎ and x₍ₙ₊₁₋ₖ₎ for the largest k whose coverage,
/// 1 − 2·P(Binomial(n, ½) < k), is at least the confidence asked for. It
/// assumes only that the values are independent draws of one distribution.
public struct MedianInterval: Sendable, Hashable {
    /// The lower bound.
    public let low: Double
    /// The upper bound.
    public let high: Double
    /// The coverage of the interval: at least the confidence asked for, or less
    /// when the sample is too small to reach it (then the interval is min…max).
    public let coverage: Double

    /// The interval of the median of `values` at `confidence` (0.95 for 95%),
    /// or `nil` when there are no values.
    public init?(_ values: [Double], confidence: Double = 0.95) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let n = sorted.count
        // cumulative[i] = P(B ≤ i) for B ~ Binomial(n, ½).
        var cumulative: [Double] = []
        var probability = pow(0.5, Double(n))
        var sum = 0.0
        for i in 0...n {
            if i > 0 {
                let factor = Double(n - i + 1) / Double(i)
                probability *= factor
            }
            sum += probability
            cumulative.append(sum)
        }
        // The interval [x(k), x(n+1-k)] (1-based) misses the median with
        // probability 2·P(B ≤ k − 1).
        var k = 1
        while k + 1 <= (n + 1) / 2, 1 - 2 * cumulative[k] >= confidence { k += 1 }
        low = sorted[k - 1]
        high = sorted[n - k]
        coverage = max(0, 1 - 2 * cumulative[k - 1])
    }

    /// The interval's widest distance from `median`, relative to it (0.03 for ±3%).
    public func relativeHalfWidth(around median: Double) -> Double {
        guard median > 0 else { return .infinity }
        return max(median - low, high - median) / median
    }
}

/// A backend's throughput relative to its reference's, taken pair by pair:
/// in each round where both ran the operation, the backend's throughput
/// divided by the reference's in that same round (the two iterations ran
/// side by side, so a slow moment of the machine slows both); then the median
/// of those per-round ratios and its distribution-free interval
/// (``MedianInterval``).
///
/// This cancels the machine's speed better than dividing one median by
/// another: each ratio compares two iterations run seconds apart, not the
/// middle of two spreads gathered over the whole run.
public struct PairedRatio: Sendable, Hashable {
    /// The median of the per-round ratios (1 = as fast as the reference).
    public let median: Double
    /// The lower bound of the median's interval.
    public let low: Double
    /// The upper bound of the median's interval.
    public let high: Double
    /// The coverage of the interval (below the confidence asked for when
    /// there are too few pairs: fewer than 6 at 95%).
    public let coverage: Double
    /// The per-round ratios, in round order.
    public let ratios: [Double]

    /// The paired ratio of `operation` between `results` (one backend's
    /// measured iterations at one size and durability) and `reference` (its
    /// reference's, of the same run, size and durability), matched by round;
    /// `nil` when no round has both with a positive time and count.
    public init?(
        _ operation: BenchOperation, results: [IterationResult], reference: [IterationResult],
        confidence: Double = 0.95
    ) {
        func throughputs(_ results: [IterationResult]) -> [Int: Double] {
            var byRound: [Int: Double] = [:]
            for result in results where result.error == nil && !result.job.countsInstructions {
                guard let m = result.measurements.first(where: { $0.operation == operation }), m.seconds > 0, m.units > 0
                else { continue }
                byRound[result.job.round] = Double(m.units) / m.seconds
            }
            return byRound
        }
        let mine = throughputs(results)
        let theirs = throughputs(reference)
        var ratios: [Double] = []
        for round in mine.keys.sorted() {
            if let a = mine[round], let b = theirs[round] { ratios.append(a / b) }
        }
        self.init(ratios: ratios, confidence: confidence)
    }

    /// The paired ratio of per-round `ratios`, or `nil` when there are none.
    public init?(ratios: [Double], confidence: Double = 0.95) {
        guard let statistics = SampleStatistics(ratios), let interval = MedianInterval(ratios, confidence: confidence)
        else { return nil }
        median = statistics.median
        low = interval.low
        high = interval.high
        coverage = interval.coverage
        self.ratios = ratios
    }

    /// The interval's widest distance from the median, relative to it.
    public var relativeHalfWidth: Double {
        guard median > 0 else { return .infinity }
        return max(median - low, high - median) / median
    }
}
