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
