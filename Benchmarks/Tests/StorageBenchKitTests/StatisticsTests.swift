import Testing

@testable import StorageBenchKit

@Suite struct StatisticsTests {
    @Test func medianOfAnOddSampleIsTheMiddleValue() throws {
        let statistics = try #require(SampleStatistics([5, 1, 3]))
        #expect(statistics.median == 3)
        #expect(statistics.min == 1)
        #expect(statistics.max == 5)
        #expect(statistics.mean == 3)
        #expect(statistics.standardDeviation == 2)
        #expect(statistics.count == 3)
    }

    @Test func medianOfAnEvenSampleIsTheMeanOfTheMiddleTwo() throws {
        let statistics = try #require(SampleStatistics([4, 1, 3, 10]))
        #expect(statistics.median == 3.5)
        #expect(statistics.mean == 4.5)
    }

    @Test func oneValueHasNoSpread() throws {
        let statistics = try #require(SampleStatistics([0.5]))
        #expect(statistics.median == 0.5)
        #expect(statistics.standardDeviation == 0)
    }

    @Test func noValuesHaveNoStatistics() {
        #expect(SampleStatistics([]) == nil)
        #expect(LatencyPercentiles(nanoseconds: []) == nil)
    }

    @Test func percentilesComeFromTheHistogramInMicroseconds() throws {
        // 1 µs … 100 µs, one call each.
        let calls = (1...100).map { UInt64($0) * 1000 }
        let percentiles = try #require(LatencyPercentiles(nanoseconds: calls.shuffled()))
        // Three significant digits: within 0.1% of the exact value.
        #expect(abs(percentiles.p50Microseconds - 50) <= 0.05)
        #expect(abs(percentiles.p90Microseconds - 90) <= 0.09)
        #expect(abs(percentiles.p99Microseconds - 99) <= 0.1)
    }

    @Test func percentilesOfASkewedSample() throws {
        // 95 fast calls of 10 µs and 5 slow ones of 5 ms: p90 is fast, p99 slow.
        let calls = [UInt64](repeating: 10_000, count: 95) + [UInt64](repeating: 5_000_000, count: 5)
        let percentiles = try #require(LatencyPercentiles(nanoseconds: calls))
        #expect(abs(percentiles.p50Microseconds - 10) < 0.1)
        #expect(abs(percentiles.p90Microseconds - 10) < 0.1)
        #expect(abs(percentiles.p99Microseconds - 5000) < 5)
    }
}
