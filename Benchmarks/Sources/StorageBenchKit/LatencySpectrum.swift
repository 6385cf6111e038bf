import Foundation
import Histogram

/// A latency distribution as a ladder of percentiles read from an HDR
/// histogram (three significant digits): what the HTML report draws as a
/// percentile spectrum (p50 to p99.99 and the slowest call, on a log axis of
/// nines) and as a cumulative distribution.
///
/// In a CSV report it is one cell, `percentile:microseconds` pairs joined by
/// `;` (``text``), e.g. `0:3.1;50:4.2;…;100:812`; 0 is the fastest call and
/// 100 the slowest.
public struct LatencySpectrum: Sendable, Hashable, Codable {
    /// One percentile and its latency.
    public struct Point: Sendable, Hashable, Codable {
        /// 0 to 100.
        public var percentile: Double
        /// Microseconds.
        public var microseconds: Double

        /// Creates a point.
        public init(percentile: Double, microseconds: Double) {
            self.percentile = percentile
            self.microseconds = microseconds
        }
    }

    /// The percentiles a spectrum made from a histogram keeps.
    public static let ladder: [Double] = [
        0, 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 97.5, 99, 99.5, 99.9, 99.95, 99.99, 100,
    ]

    /// The points, by rising percentile.
    public var points: [Point]

    /// A spectrum of `points` (sorted by percentile here).
    public init(points: [Point]) {
        self.points = points.sorted { $0.percentile < $1.percentile }
    }

    /// The spectrum of `histogram`, whose values are nanoseconds, at each
    /// percentile of ``ladder``; `nil` when it is empty.
    init?(histogram: Histogram<UInt64>) {
        guard histogram.totalCount > 0 else { return nil }
        points = Self.ladder.map { percentile in
            let nanoseconds: UInt64
            switch percentile {
            case 0: nanoseconds = histogram.min
            case 100: nanoseconds = histogram.max
            default: nanoseconds = histogram.valueAtPercentile(percentile)
            }
            return Point(percentile: percentile, microseconds: Double(nanoseconds) / 1000)
        }
    }

    /// The spectrum of per-call times in nanoseconds, or `nil` when there are none.
    public init?(nanoseconds: [UInt64]) {
        var histogram = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
        histogram.autoResize = true
        for value in nanoseconds { _ = histogram.record(Swift.max(value, 1)) }
        self.init(histogram: histogram)
    }

    /// The microseconds at `percentile`, when the spectrum has that point.
    public func microseconds(at percentile: Double) -> Double? {
        points.first { $0.percentile == percentile }?.microseconds
    }

    /// The CSV cell: `percentile:microseconds` pairs joined by `;`.
    public var text: String {
        points.map { String(format: "%g:%.3f", $0.percentile, $0.microseconds) }.joined(separator: ";")
    }

    /// Reads ``text``.
    /// - Throws: ``ConfigurationError`` naming the item that is not a
    ///   `percentile:microseconds` pair with a percentile from 0 to 100 and a
    ///   latency of 0 or more.
    public init(parsing text: String) throws {
        var points: [Point] = []
        for item in text.split(separator: ";") {
            let parts = item.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let percentile = Double(parts[0]), let microseconds = Double(parts[1]),
                (0...100).contains(percentile), microseconds >= 0, microseconds.isFinite
            else {
                throw ConfigurationError("'\(item)' in a latency spectrum is not a percentile:microseconds pair")
            }
            points.append(Point(percentile: percentile, microseconds: microseconds))
        }
        self.init(points: points)
    }
}
