import DAOCore
import DialogGraph
import Foundation

/// Turns iteration results into report rows.
public enum ReportBuilder {
    /// One row per backend × durability × size × operation of `configuration`.
    ///
    /// Times come from each iteration's measurement; throughput from the median;
    /// latency percentiles from an HDR histogram of every timed call of every
    /// iteration. A backend with a failed iteration gets rows with the error and
    /// no figures. A backend that names a reference gets its ratio to it
    /// (``ReportRow/ratioToRaw``) when the reference ran too.
    public static func report(
        of results: [IterationResult], configuration: RunConfiguration, provenance: Provenance
    ) -> Report {
        var rows: [ReportRow] = []
        for durability in configuration.durabilities {
            for size in configuration.sizes {
                for operation in configuration.operations {
                    for backend in configuration.backends {
                        let mine = results.filter {
                            $0.job.backend == backend.name && $0.job.size == size && $0.job.durability == durability
                        }
                        var row = row(
                            operation, results: mine, backend: backend.name, size: size,
                            durability: durability, configuration: configuration, provenance: provenance)
                        row.reference = backend.reference ?? ""
                        row.role = backend.role
                        if let reference = backend.reference, row.error.isEmpty {
                            let theirs = results.filter {
                                $0.job.backend == reference && $0.job.size == size && $0.job.durability == durability
                            }
                            if theirs.allSatisfy({ $0.error == nil }),
                                let paired = PairedRatio(
                                    operation, results: mine, reference: theirs, confidence: configuration.confidence)
                            {
                                row.ratioPaired = paired.median
                                row.ratioPairedLow = paired.low
                                row.ratioPairedHigh = paired.high
                                row.ratioPairedRounds = paired.ratios
                            }
                        }
                        rows.append(row)
                    }
                }
            }
        }
        return Report(rows: ratiosToRaw(rows))
    }

    /// `rows` with ``ReportRow/ratioToRaw`` set for every row whose reference
    /// has a row of the same durability, size and operation, both with a
    /// throughput: the row's throughput divided by the reference's; and
    /// ``ReportRow/ratioInstructions`` where both rows have instruction counts:
    /// the reference's instructions per unit divided by the row's.
    public static func ratiosToRaw(_ rows: [ReportRow]) -> [ReportRow] {
        var byKey: [String: ReportRow] = [:]
        for row in rows where row.error.isEmpty { byKey[row.key] = row }
        return rows.map { row in
            var row = row
            row.ratioToRaw = nil
            row.ratioInstructions = nil
            guard !row.reference.isEmpty, row.error.isEmpty else { return row }
            var key = row
            key.backend = row.reference
            guard let raw = byKey[key.key] else { return row }
            if let throughput = row.throughputPerSecond, let rawThroughput = raw.throughputPerSecond, rawThroughput > 0 {
                row.ratioToRaw = throughput / rawThroughput
            }
            if let instructions = row.instructions, let units = row.units, instructions > 0, units > 0,
                let rawInstructions = raw.instructions, let rawUnits = raw.units, rawUnits > 0
            {
                row.ratioInstructions =
                    (Double(rawInstructions) / Double(rawUnits)) / (Double(instructions) / Double(units))
            }
            return row
        }
    }

    static func row(
        _ operation: BenchOperation, results: [IterationResult], backend: String, size: BenchSize,
        durability: Durability, configuration: RunConfiguration, provenance: Provenance
    ) -> ReportRow {
        var row = ReportRow(
            workload: WorkloadData.name, provenance: provenance, backend: backend, durability: durability.rawValue,
            operation: operation.rawValue, dialogs: size.dialogs, messagesPerDialog: size.messagesPerDialog,
            units: nil, unit: operation.unit, iterations: results.count, seed: configuration.seed,
            warmup: configuration.warmup)
        if let failed = results.first(where: { $0.error != nil }), let error = failed.error {
            row.error = error
            return row
        }
        let counted = results.filter(\.job.countsInstructions)
        let timed = results.filter { !$0.job.countsInstructions }
        // Extra rounds may stop before the end of the workload
        // (RunConfiguration.extraRound): an operation's figures come from the
        // iterations that ran it, the memory and disk figures from those that
        // ran every operation.
        let results = timed.filter { $0.job.operations.contains(operation) }
        let complete = timed.filter { $0.job.operations == configuration.operations }
        row.iterations = results.count
        let measurements = results.compactMap { result in
            result.measurements.first { $0.operation == operation }
        }
        let counts = counted.compactMap { result in result.measurements.first { $0.operation == operation } }
        if !counted.isEmpty {
            guard counts.count == counted.count, counts.allSatisfy({ $0.instructions != nil && $0.allocations != nil })
            else {
                row.error = "instructions not counted in every callgrind iteration"
                return row
            }
            row.instructions = SampleStatistics(counts.compactMap(\.instructions).map(Double.init)).map { Int64($0.median.rounded()) }
            row.allocations = SampleStatistics(counts.compactMap(\.allocations).map(Double.init)).map { Int64($0.median.rounded()) }
        }
        guard !measurements.isEmpty, measurements.count == results.count,
            let statistics = SampleStatistics(measurements.map(\.seconds))
        else {
            row.error = results.isEmpty ? "not run" : "not measured in every iteration"
            return row
        }
        let units = measurements[0].units
        guard measurements.allSatisfy({ $0.units == units }) else {
            row.error = "the iterations counted different units: \(measurements.map(\.units))"
            return row
        }
        let expected = operation.expectedUnits(for: size)
        // A bounded operation (see Backend.singleCallLimit) says so in its note.
        let bounded = measurements.contains { $0.note != nil } && units < expected
        guard units == expected || bounded else {
            row.error = "counted \(units) \(operation.unit); WORKLOAD.md says \(operation.unitsFormula) = \(expected)"
            return row
        }
        row.units = units
        row.medianSeconds = statistics.median
        row.minSeconds = statistics.min
        row.maxSeconds = statistics.max
        row.meanSeconds = statistics.mean
        row.stddevSeconds = statistics.standardDeviation
        row.throughputPerSecond = statistics.median > 0 ? Double(units) / statistics.median : nil
        if let interval = MedianInterval(measurements.map(\.seconds), confidence: configuration.confidence) {
            row.ciLowSeconds = interval.low
            row.ciHighSeconds = interval.high
        }
        if operation.isPerCall {
            let calls = measurements.flatMap { $0.callNanoseconds ?? [] }
            if let percentiles = LatencyPercentiles(nanoseconds: calls) {
                row.p50Microseconds = percentiles.p50Microseconds
                row.p90Microseconds = percentiles.p90Microseconds
                row.p99Microseconds = percentiles.p99Microseconds
            }
            row.latencySpectrum = LatencySpectrum(nanoseconds: calls)
        }
        func median(_ values: [Int64]) -> Int64? {
            SampleStatistics(values.map(Double.init)).map { Int64($0.median.rounded()) }
        }
        row.bytesOnDisk = median(complete.compactMap(\.bytesOnDisk))
        row.peakRSSBytes = complete.compactMap(\.peakRSSBytes).max()
        row.peakRSSWorkloadBytes = median(complete.compactMap(\.workloadPeakRSSBytes))
        row.operationPeakRSSBytes = median(measurements.compactMap(\.peakRSSRiseBytes))
        row.decodedBytes = median(measurements.compactMap(\.decodedBytes))
        if operation.runsInPlace {
            row.runsInPlace = median(measurements.map { Int64($0.runSeconds?.count ?? 1) }).map(Int.init)
        }
        row.note = measurements.compactMap(\.note).first ?? ""
        row.settings = results.compactMap(\.settings).first ?? ""
        return row
    }
}
