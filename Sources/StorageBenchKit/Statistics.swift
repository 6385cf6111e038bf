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
