import Foundation

/// Line charts of the HTML report: scaling curves, latency percentile
/// spectra and cumulative distributions. Like the bar charts, each is a
/// `<figure class="chart">` whose `data-backends` names the backends it draws,
/// and each line a `<g data-backend>`.
extension HTMLReport {
    /// One line of a line chart.
    struct Series {
        var backend: String
        /// The name at the line's end (a reference's with its role).
        var label: String
        var points: [(x: Double, y: Double)]
        /// A reference (raw engine, third party): dashed, its label in italics.
        var reference: Bool
    }

    /// An axis of ``plot(id:title:series:x:y:markers:)``: where a value
    /// falls, from 0 (left or bottom) to 1, and the ticks it labels.
    struct PlotAxis {
        var position: (Double) -> Double
        var ticks: [(value: Double, label: String)]
        var title: String
    }

    /// A log axis spanning `values` out to whole powers of ten, ticked at
    /// each power of ten, or at `ticks` when given.
    static func logAxis(_ values: [Double], ticks given: [Double]? = nil, title: String) -> PlotAxis {
        let positive = values.filter { $0 > 0 && $0.isFinite }
        var low = positive.min() ?? 1
        var high = positive.max() ?? 10
        if given == nil {
            low = pow(10, floor(log10(low)))
            high = pow(10, ceil(log10(high * 1.0001)))
        }
        if high <= low {
            low /= 2
            high *= 2
        }
        let span = log10(high) - log10(low)
        var ticks: [(Double, String)] = []
        if let given {
            ticks = given.map { ($0, Format.compact($0)) }
        } else {
            var tick = low
            while tick <= high * 1.0001 {
                ticks.append((tick, Format.compact(tick)))
                tick *= 10
            }
        }
        return PlotAxis(
            position: { (log10(max($0, low)) - log10(low)) / span }, ticks: ticks, title: title)
    }

    /// A linear axis from 0 to above the largest of `values`.
    static func linearAxis(_ values: [Double], title: String, format: (Double) -> String = { Format.compact($0) })
        -> PlotAxis
    {
        let largest = max(values.filter(\.isFinite).max() ?? 1, 1e-9)
        let step = niceStep(largest * 1.08 / 4)
        let high = ceil(largest * 1.08 / step) * step
        var ticks: [(Double, String)] = []
        var tick = 0.0
        while tick <= high * 1.0001 {
            ticks.append((tick, format(tick)))
            tick += step
        }
        return PlotAxis(position: { max(0, $0) / high }, ticks: ticks, title: title)
    }

    /// The percentile axis of a spectrum: p50 to p99.99 spaced by their
    /// nines (log of 1 ÷ (1 − p)), then the slowest call (percentile 100).
    static func ninesAxis() -> PlotAxis {
        let first = log10(2.0)
        let last = 4.5
        func place(_ percentile: Double) -> Double {
            let nines = percentile >= 100 ? last : log10(100 / (100 - percentile))
            return (nines - first) / (last - first)
        }
        return PlotAxis(
            position: place,
            ticks: [(50, "p50"), (90, "p90"), (99, "p99"), (99.9, "p99.9"), (99.99, "p99.99"), (100, "max")],
            title: "percentile")
    }

    static let plotLeft = 62.0
    static let plotRight = chartWidth - 140
    static let plotTop = 10.0
    static let plotBottom = 196.0

    /// A line chart of `series` on `x` and `y`: one line per backend in its
    /// colour (references dashed), its name at the right in the series'
    /// order, so that a raw engine's line is named right below its choice's.
    static func plot(
        id: String, title: String, series: [Series], x: PlotAxis, y: PlotAxis, markers: Bool
    ) -> String {
        let drawn = series.filter { !$0.points.isEmpty }
        guard !drawn.isEmpty else { return "" }
        func px(_ value: Double) -> Double { plotLeft + x.position(value) * (plotRight - plotLeft) }
        func py(_ value: Double) -> Double { plotBottom - y.position(value) * (plotBottom - plotTop) }
        var text = ""
        for tick in y.ticks {
            let at = py(tick.value)
            text += "<path class=\"grid\" d=\"M\(f(plotLeft)),\(f(at))H\(f(plotRight))\"/>"
            text += "<text class=\"tick\" x=\"\(f(plotLeft - 4))\" y=\"\(f(at + 4))\" text-anchor=\"end\">"
            text += "\(escape(tick.label))</text>"
        }
        for tick in x.ticks {
            let at = px(tick.value)
            text += "<path class=\"grid\" d=\"M\(f(at)),\(f(plotTop))V\(f(plotBottom))\"/>"
            text += "<text class=\"tick\" x=\"\(f(at))\" y=\"\(f(plotBottom + 14))\" text-anchor=\"middle\">"
            text += "\(escape(tick.label))</text>"
        }
        text += "<text class=\"axis\" x=\"\(f((plotLeft + plotRight) / 2))\" y=\"\(f(plotBottom + 30))\" "
        text += "text-anchor=\"middle\">\(escape(x.title))</text>"
        text += "<text class=\"axis\" transform=\"translate(12,\(f((plotTop + plotBottom) / 2))) rotate(-90)\" "
        text += "text-anchor=\"middle\">\(escape(y.title))</text>"
        var labelY = plotTop + 8
        for line in drawn {
            let colour = colour(for: line.backend)
            let path = line.points.enumerated()
                .map { "\($0.offset == 0 ? "M" : "L")\(f(px($0.element.x))),\(f(py($0.element.y)))" }.joined()
            text += "<g class=\"mark\" data-backend=\"\(escape(line.backend))\"><title>\(escape(line.label))</title>"
            text += "<path d=\"\(path)\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"\(line.reference ? "1.6" : "2.2")\""
            text += "\(line.reference ? " stroke-dasharray=\"5 3\"" : "")/>"
            if markers || line.points.count == 1 {
                for point in line.points {
                    text += "<circle cx=\"\(f(px(point.x)))\" cy=\"\(f(py(point.y)))\" r=\"3\" fill=\"\(colour)\"/>"
                }
            }
            text += "<path d=\"M\(f(plotRight + 8)),\(f(labelY - 4))h14\" stroke=\"\(colour)\" stroke-width=\"2\""
            text += "\(line.reference ? " stroke-dasharray=\"4 2\"" : "")/>"
            text += "<text class=\"label\(line.reference ? " ref" : "")\" x=\"\(f(plotRight + 26))\" y=\"\(f(labelY))\">"
            text += "\(escape(line.label))</text></g>"
            labelY += 13
        }
        let height = max(plotBottom + 38, labelY)
        let backends = SummaryTable.orderedUnique(drawn.map(\.backend)).joined(separator: ",")
        return "<figure class=\"chart\" id=\"\(escape(id))\" data-backends=\"\(escape(backends))\">"
            + "<figcaption>\(escape(title))</figcaption>"
            + "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(f(chartWidth)) \(f(height))\" "
            + "width=\"\(f(chartWidth))\" height=\"\(f(height))\" role=\"img\" aria-label=\"\(escape(title))\">"
            + text + "</svg></figure>\n"
    }

    /// A percentile spectrum: latency (µs, log) against the percentile, p50
    /// to p99.99 and the slowest call; one line per entry of `spectra`.
    static func spectrumChart(
        id: String, title: String, spectra: [(backend: String, label: String, spectrum: LatencySpectrum, reference: Bool)]
    ) -> String {
        let series = spectra.map { entry in
            Series(
                backend: entry.backend, label: entry.label,
                points: entry.spectrum.points.filter { $0.percentile >= 50 && $0.microseconds > 0 }
                    .map { (x: $0.percentile, y: $0.microseconds) },
                reference: entry.reference)
        }
        let values = series.flatMap { $0.points.map(\.y) }
        return plot(
            id: id, title: title, series: series, x: ninesAxis(), y: logAxis(values, title: "µs (log)"), markers: false)
    }

    /// A cumulative distribution: the share of calls (%) done within a
    /// latency (µs, log), from the fastest to the slowest call.
    static func cdfChart(
        id: String, title: String, spectra: [(backend: String, label: String, spectrum: LatencySpectrum, reference: Bool)]
    ) -> String {
        let series = spectra.map { entry in
            Series(
                backend: entry.backend, label: entry.label,
                points: entry.spectrum.points.filter { $0.microseconds > 0 }.map { (x: $0.microseconds, y: $0.percentile) },
                reference: entry.reference)
        }
        let values = series.flatMap { $0.points.map(\.x) }
        return plot(
            id: id, title: title, series: series, x: logAxis(values, title: "µs (log)"),
            y: PlotAxis(
                position: { $0 / 100 }, ticks: [0.0, 25, 50, 75, 100].map { ($0, String(format: "%g%%", $0)) },
                title: "% of calls within"),
            markers: false)
    }

    /// `name` as a fragment of an element id: letters and digits, other runs as `-`.
    public static func slug(_ name: String) -> String {
        var out = ""
        var dash = false
        for character in name {
            if character.isASCII && (character.isLetter || character.isNumber) {
                out.append(character)
                dash = false
            } else if !dash {
                out.append("-")
                dash = true
            }
        }
        return out
    }
}
