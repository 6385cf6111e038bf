import Foundation

/// The HTML report of a run: one self-contained page (no script, no network:
/// the data is embedded as CSV, the charts are inline SVG) that a person
/// reads to choose a backend.
///
/// It takes rows (``Report``), not a command's internals, so any command
/// whose rows are ``ReportRow``s can write one; ``render(_:comparison:roles:)``
/// is pure, ``write(_:to:comparison:roles:)`` writes the file.
///
/// Each chart is a `<figure class="chart">` whose `data-backends` attribute
/// lists the backends it draws, and each mark in its SVG carries
/// `data-backend`, so a test can check in a browser's DOM that every chart
/// drew what it should (scripts/check-report-html.py).
public enum HTMLReport {
    /// The fixed colour of each backend of this package, the same in every
    /// report: a choice a strong hue, its raw engine a light shade of it.
    static let fixedColours: [String: String] = [
        "json": "#1f77b4", "json-raw": "#9ecae1",
        "plist": "#7b4fb0", "plist-raw": "#c9b3e3",
        "sqlite": "#2b8a3e", "sqlite-raw": "#94d3a2",
        "lmdb": "#e8590c", "lmdb-raw": "#ffc08a",
        "sqlite-c": "#1b4d2b", "lmdb-c": "#8f3606",
        "postgres": "#0b7285", "postgres-raw": "#7fd3e0",
        "grdb": "#8c564b",
    ]

    /// Colours for other backends, chosen by a stable hash of the name.
    static let otherColours = ["#17becf", "#bcbd22", "#e377c2", "#7f7f7f", "#3b5bdb", "#a61e4d", "#5c940d", "#862e9c"]

    /// The colour of `backend`: fixed for this package's backends; for any
    /// other, one of ``otherColours`` picked by the FNV-1a hash of its name,
    /// so it too is the same in every report.
    public static func colour(for backend: String) -> String {
        if let fixed = fixedColours[backend] { return fixed }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in backend.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return otherColours[Int(hash % UInt64(otherColours.count))]
    }

    /// The largest report this writes for `make bench`'s run is far below
    /// this; a test holds every report to it.
    public static let sizeLimit = 2_000_000

    /// Writes the page for `report` to `url`.
    /// - Throws: when the file cannot be written.
    public static func write(
        _ report: Report, to url: URL, comparison: Comparison? = nil, roles: [String: BackendRole] = [:],
        load: [LoadReportRow] = []
    ) throws {
        try Data(render(report, comparison: comparison, roles: roles, load: load).utf8).write(to: url, options: .atomic)
    }

    /// The page for `report`, with `comparison` (against a baseline) when
    /// given, and the sections of a load run's rows (`storage-bench load`)
    /// after the single-thread operations'.
    public static func render(
        _ report: Report, comparison: Comparison? = nil, roles: [String: BackendRole] = [:],
        load: [LoadReportRow] = []
    ) -> String {
        let report = report.assigningRoles(roles)
        var body = ""
        body += report.rows.isEmpty && !load.isEmpty ? loadMetadata(load) : metadata(report)
        var groups: [(title: String, id: String, rows: [ReportRow])] = []
        for row in report.rows {
            let title = "\(row.dialogs) dialogs × \(row.messagesPerDialog) messages, durability \(row.durability)"
            if let index = groups.firstIndex(where: { $0.title == title }) {
                groups[index].rows.append(row)
            } else {
                groups.append((title, "\(row.dialogs)x\(row.messagesPerDialog)-\(row.durability)", [row]))
            }
        }
        for group in groups {
            body += "<section class=\"group\" id=\"g-\(escape(group.id))\">\n<h2>\(escape(group.title))</h2>\n"
            body += matrix(group.rows, id: group.id)
            body += throughputCharts(group.rows, id: group.id)
            body += engineCostChart(group.rows, id: group.id)
            body += latencyCharts(group.rows, id: group.id)
            body += countsTable(group.rows)
            body += memoryCharts(group.rows, id: group.id)
            body += "</section>\n"
        }
        body += scaling(report)
        body += loadSections(load, roles: roles)
        if let comparison { body += comparisonSection(comparison) }
        body += legend(ordered(report.rows) + loadOrder(load, roles: roles))
        if !report.rows.isEmpty {
            body += "<script type=\"text/csv\" id=\"report-data\">\n\(escape(report.csv()))</script>\n"
        }
        if !load.isEmpty {
            body += "<script type=\"text/csv\" id=\"load-data\">\n\(escape(LoadReport.csv(load)))</script>\n"
        }
        let title = report.rows.first.map { "storage-bench report: \($0.workload), \($0.provenance.runId)" }
            ?? load.first.map { "storage-bench load report: \($0.provenance?.runId ?? $0.mix)" }
            ?? "storage-bench report"
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title))</title>
            <style>\(style)</style>
            </head>
            <body>
            <h1>\(escape(title))</h1>
            \(body)</body>
            </html>

            """
    }

    // MARK: - Sections

    static func metadata(_ report: Report) -> String {
        guard let first = report.rows.first else { return "<p>The report has no rows.</p>\n" }
        let p = first.provenance
        let counts = report.rows.filter(\.error.isEmpty).map(\.iterations)
        let iterations = counts.isEmpty ? "–" : (counts.min() == counts.max() ? "\(counts[0])" : "\(counts.min() ?? 0)–\(counts.max() ?? 0)")
        let sizes = SummaryTable.orderedUnique(report.rows.map { "\($0.dialogs)x\($0.messagesPerDialog)" })
        let durabilities = SummaryTable.orderedUnique(report.rows.map(\.durability))
        var items: [(String, String)] = [
            ("workload", first.workload), ("run", p.runId), ("started", p.timestamp),
            ("commit", p.gitCommit.isEmpty ? "unknown" : p.gitCommit), ("host", p.host), ("CPU", p.cpu), ("OS", p.os),
            ("toolchain", "Swift \(p.swiftVersion), \(p.build) build"), ("sizes (D x M)", sizes.joined(separator: ", ")),
            ("durability", durabilities.joined(separator: ", ")), ("measured iterations", iterations),
            ("warm-up iterations", first.warmup.map(String.init) ?? "–"), ("seed", first.seed.map(String.init) ?? "–"),
        ]
        if report.rows.contains(where: { $0.instructions != nil }) {
            items.append(("instructions", "counted under callgrind (one iteration per backend)"))
        }
        var text = "<section id=\"metadata\"><h2>The run</h2>\n<dl class=\"meta\">\n"
        for (name, value) in items { text += "<dt>\(escape(name))</dt><dd>\(escape(value))</dd>\n" }
        text += "</dl>\n<details><summary>Settings in force, as each store read them back</summary>\n<dl class=\"meta\">\n"
        for backend in SummaryTable.orderedUnique(report.rows.map(\.backend)) {
            if let settings = report.rows.first(where: { $0.backend == backend && !$0.settings.isEmpty })?.settings {
                text += "<dt>\(swatch(backend))\(escape(backend))</dt><dd>\(escape(settings))</dd>\n"
            }
        }
        text += "</dl></details>\n"
        let notes = SummaryTable.orderedUnique(
            report.rows.compactMap { row in
                if !row.error.isEmpty { return "\(row.backend) \(row.operation): error: \(row.error)" }
                return row.note.isEmpty ? nil : "\(row.backend) \(row.operation): \(row.note)"
            })
        if !notes.isEmpty {
            text += "<details><summary>\(notes.count) notes and errors</summary><ul>\n"
            for note in notes { text += "<li>\(escape(note))</li>\n" }
            text += "</ul></details>\n"
        }
        return text + "</section>\n"
    }

    /// Backends in report order: the choices, then raw engines, then third-party libraries.
    static func ordered(_ rows: [ReportRow]) -> [String] {
        let names = SummaryTable.orderedUnique(rows.map(\.backend))
        func role(_ name: String) -> BackendRole { rows.first { $0.backend == name }?.effectiveRole ?? .choice }
        return names.filter { role($0) == .choice } + names.filter { role($0) == .raw }
            + names.filter { role($0) == .thirdParty }
    }

    static func operations(_ rows: [ReportRow]) -> [String] {
        SummaryTable.orderedUnique(rows.map(\.operation))
    }

    static func unit(_ operation: String, _ rows: [ReportRow]) -> String {
        BenchOperation(rawValue: operation)?.shortUnit
            ?? rows.first(where: { $0.operation == operation }).map { "\($0.unit)/s" } ?? "/s"
    }

    static func matrix(_ rows: [ReportRow], id: String) -> String {
        let backends = ordered(rows)
        let operations = operations(rows)
        var text = "<h3>Backend × operation</h3>\n"
        text += "<p class=\"explain\">Median throughput; below it the 95% interval of the median (from 6 iterations; "
        text += "– with fewer) and the paired ratio to the backend's raw engine. The colour of a cell is its "
        text += "throughput against the fastest choice of the operation, on a log scale: darker is faster.</p>\n"
        text += "<table class=\"matrix\" id=\"matrix-\(escape(id))\"><thead><tr><th>backend</th>"
        for operation in operations {
            text += "<th>\(escape(operation))<br><span class=\"unit\">\(escape(unit(operation, rows)))</span></th>"
        }
        text += "</tr></thead><tbody>\n"
        var fastest: [String: Double] = [:]
        for operation in operations {
            fastest[operation] = rows.filter { $0.operation == operation && $0.effectiveRole == .choice && $0.error.isEmpty }
                .compactMap(\.throughputPerSecond).max()
        }
        for backend in backends {
            let role = rows.first { $0.backend == backend }?.effectiveRole ?? .choice
            let tag = role == .choice ? "" : " <span class=\"tag\">\(role == .raw ? "raw engine" : "third party")</span>"
            text += "<tr data-backend=\"\(escape(backend))\"><th>\(swatch(backend))\(escape(backend))\(tag)</th>"
            for operation in operations {
                guard let row = rows.first(where: { $0.backend == backend && $0.operation == operation }) else {
                    text += "<td></td>"
                    continue
                }
                guard row.error.isEmpty, let throughput = row.throughputPerSecond else {
                    text += "<td class=\"error\" title=\"\(escape(row.error))\">error</td>"
                    continue
                }
                var style = ""
                if let best = fastest[operation], best > 0, throughput > 0 {
                    // 0 at a hundredth of the fastest or less, 1 at the fastest.
                    let level = max(0, min(1, 1 + log10(min(throughput / best, 1)) / 2))
                    let lightness = 96 - level * 58
                    style = " style=\"background:hsl(210,60%,\(String(format: "%.0f", lightness))%);"
                        + (lightness < 60 ? "color:#fff" : "") + "\""
                }
                text += "<td\(style)><b>\(Format.compact(throughput))</b>"
                if let interval = SummaryTable.throughputInterval(row) {
                    text += "<br><small>\(Format.compact(interval.low))–\(Format.compact(interval.high))</small>"
                } else {
                    text += "<br><small>–</small>"
                }
                if let ratio = SummaryTable.ratioToEngine(row) {
                    text += "<br><small>\(Format.ratio(ratio)) \(escape(row.reference))</small>"
                }
                text += "</td>"
            }
            text += "</tr>\n"
        }
        return text + "</tbody></table>\n"
    }

    /// Throughput per operation: each choice's bar, ranked, its raw engine
    /// and any third-party library on that engine as thin outlined bars
    /// right below it; whiskers for the 95% intervals.
    static func throughputCharts(_ rows: [ReportRow], id: String) -> String {
        var text = "<h3>Throughput</h3>\n<p class=\"explain\">Per operation, the choices ranked by median throughput "
        text += "(log scale; whiskers: the 95% interval of the median, where there are 6 iterations or more). Below "
        text += "each choice, as thinner bars with labels in italics, the references it is measured against: its raw "
        text += "engine and other libraries on that engine. They are not choices.</p>\n<div class=\"charts\">\n"
        for operation in operations(rows) {
            let here = rows.filter { $0.operation == operation }
            var bars: [Bar] = []
            var placed: Set<String> = []
            let choices = here.filter { $0.effectiveRole == .choice }.sorted {
                ($0.error.isEmpty ? $0.throughputPerSecond ?? 0 : 0) > ($1.error.isEmpty ? $1.throughputPerSecond ?? 0 : 0)
            }
            func bar(_ row: ReportRow, reference: Bool) -> Bar {
                let interval = SummaryTable.throughputInterval(row)
                let label = reference ? "\(row.backend) (\(row.effectiveRole == .raw ? "raw" : "3rd party"))" : row.backend
                return Bar(
                    label: label, backend: row.backend, value: row.error.isEmpty ? row.throughputPerSecond : nil,
                    low: interval?.low, high: interval?.high, reference: reference,
                    text: row.error.isEmpty ? Format.compact(row.throughputPerSecond) : "error")
            }
            for choice in choices {
                bars.append(bar(choice, reference: false))
                placed.insert(choice.backend)
                guard !choice.reference.isEmpty else { continue }
                let references = here.filter {
                    !placed.contains($0.backend)
                        && ($0.backend == choice.reference || ($0.effectiveRole == .thirdParty && $0.reference == choice.reference))
                }
                for reference in references.sorted(by: { $0.backend == choice.reference && $1.backend != choice.reference }) {
                    bars.append(bar(reference, reference: true))
                    placed.insert(reference.backend)
                }
            }
            for row in here where !placed.contains(row.backend) { bars.append(bar(row, reference: true)) }
            text += chart(
                id: "throughput-\(id)-\(operation)", title: "\(operation) (\(unit(operation, rows)))", bars: bars,
                scale: .log, line: nil)
        }
        return text + "</div>\n"
    }

    /// Each choice's paired ratio to its raw engine, per operation (and any
    /// third-party library's to the same engine, outlined), with intervals.
    static func engineCostChart(_ rows: [ReportRow], id: String) -> String {
        let measured = rows.filter { !$0.reference.isEmpty && $0.error.isEmpty && SummaryTable.ratioToEngine($0) != nil }
        guard !measured.isEmpty else { return "" }
        var text = "<h3>The DAO's cost against its engine</h3>\n<p class=\"explain\">Throughput ÷ the raw engine's "
        text += "throughput in the same round (the median over rounds of the paired ratio; whiskers: its 95% interval, "
        text += "from 6 rounds or more). 1.00× is as fast as the engine used directly; the dashed line marks it. "
        text += "A third-party library on the same engine, as a thinner bar, for comparison.</p>\n"
        text += "<div class=\"charts\">\n"
        for operation in operations(rows) {
            let here = measured.filter { $0.operation == operation }
            guard !here.isEmpty else { continue }
            let sorted = here.filter { $0.effectiveRole == .choice } + here.filter { $0.effectiveRole != .choice }
            let bars = sorted.map { row -> Bar in
                let ratio = SummaryTable.ratioToEngine(row)
                let interval = SummaryTable.ratioInterval(row)
                return Bar(
                    label: "\(row.backend) ÷ \(row.reference)", backend: row.backend, value: ratio, low: interval?.low,
                    high: interval?.high, reference: row.effectiveRole != .choice,
                    text: ratio.map { Format.ratio($0) } ?? "")
            }
            text += chart(id: "ratio-\(id)-\(operation)", title: operation, bars: bars, scale: .linear, line: 1)
        }
        return text + "</div>\n"
    }

    /// Call latencies (p50, p90, p99) of the per-call operations.
    static func latencyCharts(_ rows: [ReportRow], id: String) -> String {
        let timed = rows.filter { $0.error.isEmpty && $0.p50Microseconds != nil && $0.p99Microseconds != nil }
        guard !timed.isEmpty else { return "" }
        var text = "<h3>Call latency</h3>\n<p class=\"explain\">The per-call operations: each bar runs from the median "
        text += "call (p50) to the 99th percentile, the tick marks p90 (µs, log scale; all measured iterations' calls "
        text += "pooled). Shorter is better.</p>\n<div class=\"charts\">\n"
        let order = ordered(rows)
        for operation in operations(timed) {
            let here = timed.filter { $0.operation == operation }
                .sorted { (order.firstIndex(of: $0.backend) ?? 0) < (order.firstIndex(of: $1.backend) ?? 0) }
            let bars = here.map { row in
                Bar(
                    label: row.backend, backend: row.backend, value: row.p99Microseconds, low: row.p50Microseconds,
                    high: row.p99Microseconds, reference: row.effectiveRole != .choice,
                    text: "p50 \(Format.micro(row.p50Microseconds)) · p99 \(Format.micro(row.p99Microseconds))",
                    tick: row.p90Microseconds, span: true)
            }
            text += chart(id: "latency-\(id)-\(operation)", title: "\(operation) (µs per call)", bars: bars, scale: .log, line: nil)
        }
        text += "</div>\n"
        let spectra = timed.filter { $0.latencySpectrum != nil }
        guard !spectra.isEmpty else { return text }
        text += "<h3>Call latency: percentile spectrum and distribution</h3>\n<p class=\"explain\">From the same "
        text += "HDR histogram: per operation, the latency under which each share of calls finished, from the median "
        text += "(p50) to p99.99 and the slowest call, spaced by their nines; then the share of calls done within a "
        text += "latency (cumulative distribution, log axis). References dashed, named below their choice.</p>\n"
        text += "<div class=\"charts\">\n"
        for operation in operations(spectra) {
            let here = spectra.filter { $0.operation == operation }
            let entries = orderedWithReferences(here).compactMap { row in
                row.latencySpectrum.map { spectrum in
                    (
                        backend: row.backend,
                        label: row.effectiveRole == .choice
                            ? row.backend : "\(row.backend) (\(row.effectiveRole == .raw ? "raw" : "3rd party"))",
                        spectrum: spectrum, reference: row.effectiveRole != .choice
                    )
                }
            }
            text += spectrumChart(id: "spectrum-\(id)-\(operation)", title: "\(operation): call latency spectrum", spectra: entries)
            text += cdfChart(id: "cdf-\(id)-\(operation)", title: "\(operation): calls done within", spectra: entries)
        }
        return text + "</div>\n"
    }

    /// Rows of one operation in chart order: each choice followed by its
    /// raw engine and any third-party library on that engine.
    static func orderedWithReferences(_ rows: [ReportRow]) -> [ReportRow] {
        var out: [ReportRow] = []
        for choice in rows where choice.effectiveRole == .choice {
            out.append(choice)
            guard !choice.reference.isEmpty else { continue }
            for row in rows where !out.contains(where: { $0.backend == row.backend }) {
                if row.backend == choice.reference || (row.effectiveRole == .thirdParty && row.reference == choice.reference) {
                    out.append(row)
                }
            }
        }
        return out + rows.filter { row in !out.contains { $0.backend == row.backend } }
    }

    static func countsTable(_ rows: [ReportRow]) -> String {
        guard rows.contains(where: { $0.instructions != nil }) else { return "" }
        let backends = ordered(rows)
        let operations = operations(rows)
        var text = "<h3>Instructions and allocations per unit</h3>\n<p class=\"explain\">Counted under valgrind's "
        text += "callgrind in the timed region: user-space instructions only. They leave out I/O: the kernel's work "
        text += "and the wait for the disk, which the wall times include. Deterministic, so they compare across "
        text += "machines; below each, the raw engine's instructions ÷ the backend's (1.00× = as few).</p>\n"
        text += "<table class=\"counts\"><thead><tr><th>backend</th>"
        for operation in operations { text += "<th>\(escape(operation))</th>" }
        text += "</tr></thead><tbody>\n"
        for backend in backends {
            text += "<tr data-backend=\"\(escape(backend))\"><th>\(swatch(backend))\(escape(backend))</th>"
            for operation in operations {
                guard let row = rows.first(where: { $0.backend == backend && $0.operation == operation }),
                    let instructions = row.instructions, let units = row.units, units > 0
                else {
                    text += "<td>–</td>"
                    continue
                }
                text += "<td>\(Format.compact(Double(instructions) / Double(units)))"
                if let allocations = row.allocations {
                    text += " / " + String(format: "%.3g", Double(allocations) / Double(units)) + " alloc"
                }
                if let ratio = row.ratioInstructions { text += "<br><small>\(Format.ratio(ratio))</small>" }
                text += "</td>"
            }
            text += "</tr>\n"
        }
        return text + "</tbody></table>\n"
    }

    static func memoryCharts(_ rows: [ReportRow], id: String) -> String {
        let backends = ordered(rows)
        func first(_ backend: String, _ value: (ReportRow) -> Int64?) -> Int64? {
            rows.first { $0.backend == backend && $0.error.isEmpty && value($0) != nil }.flatMap(value)
        }
        let measures: [(String, String, (ReportRow) -> Int64?)] = [
            ("disk", "Bytes on disk after update", { $0.bytesOnDisk }),
            ("rss", "Peak resident memory above the generated data", { $0.peakRSSWorkloadBytes }),
            ("decoded", "read-all: peak memory rise (the decoded graph it returns is below it)", {
                $0.operation == BenchOperation.readAll.rawValue ? $0.operationPeakRSSBytes : nil
            }),
        ]
        var charts = ""
        for (key, title, value) in measures {
            let bars = backends.compactMap { backend -> Bar? in
                guard let bytes = first(backend, value) else { return nil }
                let role = rows.first { $0.backend == backend }?.effectiveRole ?? .choice
                return Bar(
                    label: backend, backend: backend, value: Double(bytes), low: nil, high: nil, reference: role != .choice,
                    text: Format.bytes(bytes))
            }
            guard !bars.isEmpty else { continue }
            charts += chart(id: "memory-\(id)-\(key)", title: title, bars: bars, scale: .linear, line: nil)
        }
        guard !charts.isEmpty else { return "" }
        return "<h3>Memory and disk</h3>\n<p class=\"explain\">Medians over iterations; smaller is better. References "
            + "as thinner bars.</p>\n<div class=\"charts\">\n" + charts + "</div>\n"
    }

    /// For a report with several sizes: throughput against the number of
    /// messages, one line per backend, per durability and operation.
    static func scaling(_ report: Report) -> String {
        var text = ""
        for durability in SummaryTable.orderedUnique(report.rows.map(\.durability)) {
            let rows = report.rows.filter { $0.durability == durability && $0.error.isEmpty }
            let sizes = Set(rows.map { $0.dialogs * $0.messagesPerDialog })
            guard sizes.count > 1 else { continue }
            text += "<h3>Scaling, durability \(escape(durability))</h3>\n<p class=\"explain\">Throughput against the "
            text += "number of messages (D × M), log–log; a flat line keeps its speed per unit as the store grows.</p>\n"
            text += "<div class=\"charts\">\n"
            for operation in operations(rows) {
                let here = rows.filter { $0.operation == operation && $0.throughputPerSecond != nil }
                var series: [(backend: String, points: [(Double, Double)], reference: Bool)] = []
                for backend in ordered(here) {
                    let points = here.filter { $0.backend == backend }
                        .map { (Double($0.dialogs * $0.messagesPerDialog), $0.throughputPerSecond ?? 0) }
                        .filter { $0.1 > 0 }
                        .sorted { $0.0 < $1.0 }
                    let role = here.first { $0.backend == backend }?.effectiveRole ?? .choice
                    series.append((backend, points, role != .choice))
                }
                text += lineChart(
                    id: "scaling-\(durability)-\(operation)", title: "\(operation) (\(unit(operation, rows)))",
                    series: series)
            }
            text += "</div>\n"
        }
        return text
    }

    static func comparisonSection(_ comparison: Comparison) -> String {
        var text = "<section id=\"comparison\"><h2>Against the baseline</h2>\n"
        let outcome: String
        switch comparison.exitStatus {
        case Comparison.exitRegressed: outcome = "regression"
        case Comparison.exitMissing: outcome = comparison.comparable ? "rows missing" : "not comparable"
        default: outcome = "no regression"
        }
        text += "<p class=\"outcome \(comparison.exitStatus == 0 ? "ok" : "bad")\">\(escape(outcome))</p>\n<ul>\n"
        for note in comparison.notes { text += "<li>\(escape(note))</li>\n" }
        text += "</ul>\n"
        let listed = comparison.entries.filter { Comparison.listed.contains($0.verdict) }
        let ordered = Comparison.listed.flatMap { verdict in listed.filter { $0.verdict == verdict && $0.decides } }
            + listed.filter { !$0.decides }
        if !ordered.isEmpty {
            text += "<table class=\"compare\"><thead><tr><th>row</th><th>metric</th><th>baseline</th><th>current</th>"
            text += "<th>change</th><th>verdict</th></tr></thead><tbody>\n"
            for entry in ordered {
                let change = entry.change.map { String(format: "%+.1f%%", $0 * 100) } ?? ""
                func figure(_ value: Double?) -> String {
                    guard let value else { return "" }
                    if case .ratio = entry.metric { return String(format: "%.3f×", value) }
                    return Format.compact(value)
                }
                let verdict = entry.decides ? entry.verdict.rawValue : "\(entry.verdict.rawValue) (third party, not judged)"
                text += "<tr class=\"\(entry.decides ? entry.verdict.rawValue : "info")\"><td>\(escape(entry.key))</td>"
                text += "<td>\(escape(entry.metric.description))</td><td>\(figure(entry.baseline))</td>"
                text += "<td>\(figure(entry.current))</td><td>\(change)</td><td>\(escape(verdict))</td></tr>\n"
            }
            text += "</tbody></table>\n"
        }
        let rest = comparison.entries.filter { !Comparison.listed.contains($0.verdict) }
        let counts = Dictionary(grouping: rest, by: \.verdict).map { "\($0.value.count) \($0.key.rawValue)" }.sorted()
        if !counts.isEmpty { text += "<p>Not listed: \(escape(counts.joined(separator: ", "))).</p>\n" }
        return text + "</section>\n"
    }

    static func legend(_ names: [String]) -> String {
        let backends = SummaryTable.orderedUnique(names)
        guard !backends.isEmpty else { return "" }
        var text = "<section id=\"colours\"><h2>Colours</h2><p class=\"explain\">One colour per backend, the same in "
        text += "every report; a raw engine is a light shade of its choice's colour.</p><p>"
        for backend in backends { text += "<span class=\"key\">\(swatch(backend))\(escape(backend))</span> " }
        return text + "</p></section>\n"
    }

    // MARK: - Charts

    /// One bar of a horizontal bar chart.
    struct Bar {
        var label: String
        var backend: String
        /// The bar's end, or `nil` for an error (drawn as text only).
        var value: Double?
        /// The whisker, when there is an interval.
        var low: Double?
        var high: Double?
        /// A reference (raw engine, third party): a thinner bar, its label in italics.
        var reference: Bool
        /// The figure written beside the bar.
        var text: String
        /// A tick inside the whisker (p90 of a latency).
        var tick: Double? = nil
        /// Draw only low…high as the bar (a latency from p50 to p99).
        var span: Bool = false
    }

    enum Scale { case log, linear }

    static let chartWidth = 560.0
    static let labelWidth = 150.0
    static let figureWidth = 90.0

    static func chart(id: String, title: String, bars: [Bar], scale: Scale, line: Double?) -> String {
        let values = bars.flatMap { [$0.value, $0.low, $0.high, $0.tick].compactMap { $0 } }.filter { $0 > 0 }
        let plotLeft = labelWidth
        let plotRight = chartWidth - figureWidth
        let rowHeight = 20.0
        let referenceHeight = 14.0
        let top = 8.0
        var y = top
        var marks = ""
        let axis: (Double) -> Double
        var ticks: [Double] = []
        switch scale {
        case .log:
            let low = pow(10, floor(log10((values.min() ?? 1) / 1.2)))
            let high = pow(10, ceil(log10((values.max() ?? 10) * 1.05)))
            let span = max(log10(high) - log10(low), 1)
            axis = { plotLeft + (log10(max($0, low)) - log10(low)) / span * (plotRight - plotLeft) }
            var tick = low
            while tick <= high * 1.0001 {
                ticks.append(tick)
                tick *= 10
            }
        case .linear:
            let high = max((values.max() ?? 1) * 1.08, (line ?? 0) * 1.1)
            let step = niceStep(high / 4)
            axis = { plotLeft + max(0, $0) / high * (plotRight - plotLeft) }
            var tick = 0.0
            while tick <= high {
                ticks.append(tick)
                tick += step
            }
        }
        for bar in bars {
            let height = bar.reference ? referenceHeight : rowHeight
            let barHeight = height - 6
            let middle = y + height / 2
            let colour = colour(for: bar.backend)
            marks += "<g class=\"mark\" data-backend=\"\(escape(bar.backend))\">"
            marks += "<title>\(escape(bar.label)): \(escape(bar.text))</title>"
            marks += "<text class=\"label\(bar.reference ? " ref" : "")\" x=\"\(f(plotLeft - 6))\" y=\"\(f(middle + 4))\" "
            marks += "text-anchor=\"end\">\(escape(bar.label))</text>"
            if let value = bar.value, value > 0 {
                let start = bar.span ? axis(bar.low ?? value) : plotLeft
                let end = axis(value)
                let fill = "fill=\"\(colour)\""
                marks += "<rect x=\"\(f(start))\" y=\"\(f(middle - barHeight / 2))\" width=\"\(f(max(end - start, 1)))\" "
                marks += "height=\"\(f(barHeight))\" \(fill)/>"
                if !bar.span, let low = bar.low, let high = bar.high {
                    let a = axis(low)
                    let b = axis(high)
                    marks += "<path class=\"whisker\" d=\"M\(f(a)),\(f(middle))H\(f(b))M\(f(a)),\(f(middle - 4))V\(f(middle + 4))"
                    marks += "M\(f(b)),\(f(middle - 4))V\(f(middle + 4))\"/>"
                }
                if let tick = bar.tick {
                    marks += "<path class=\"whisker\" d=\"M\(f(axis(tick))),\(f(middle - barHeight / 2 - 2))V\(f(middle + barHeight / 2 + 2))\"/>"
                }
            }
            marks += "<text class=\"figure\" x=\"\(f(plotRight + 6))\" y=\"\(f(middle + 4))\">\(escape(bar.text))</text></g>"
            y += height
        }
        let bottom = y + 4
        var grid = ""
        for tick in ticks {
            let x = axis(tick)
            grid += "<path class=\"grid\" d=\"M\(f(x)),\(f(top - 4))V\(f(bottom))\"/>"
            grid += "<text class=\"tick\" x=\"\(f(x))\" y=\"\(f(bottom + 14))\" text-anchor=\"middle\">\(Format.compact(tick))</text>"
        }
        if let line {
            let x = axis(line)
            grid += "<path class=\"one\" d=\"M\(f(x)),\(f(top - 4))V\(f(bottom))\"/>"
        }
        let height = bottom + 22
        let backends = SummaryTable.orderedUnique(bars.map(\.backend)).joined(separator: ",")
        return "<figure class=\"chart\" id=\"\(escape(id))\" data-backends=\"\(escape(backends))\">"
            + "<figcaption>\(escape(title))</figcaption>"
            + "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(f(chartWidth)) \(f(height))\" "
            + "width=\"\(f(chartWidth))\" height=\"\(f(height))\" role=\"img\" aria-label=\"\(escape(title))\">"
            + grid + marks + "</svg></figure>\n"
    }

    static func lineChart(
        id: String, title: String, series: [(backend: String, points: [(Double, Double)], reference: Bool)]
    ) -> String {
        let xs = series.flatMap { $0.points.map(\.0) }.filter { $0 > 0 }
        let ys = series.flatMap { $0.points.map(\.1) }.filter { $0 > 0 }
        guard let xMin = xs.min(), let xMax = xs.max(), let yMin = ys.min(), let yMax = ys.max() else { return "" }
        let left = 60.0
        let right = chartWidth - 110
        let top = 10.0
        let bottom = 200.0
        let lx = (log10(xMin), max(log10(xMax) - log10(xMin), 0.1))
        let ly0 = floor(log10(yMin / 1.2))
        let ly = (ly0, max(ceil(log10(yMax * 1.2)) - ly0, 1))
        func x(_ v: Double) -> Double { left + (log10(v) - lx.0) / lx.1 * (right - left) }
        func y(_ v: Double) -> Double { bottom - (log10(v) - ly.0) / ly.1 * (bottom - top) }
        var text = ""
        var exponent = ly.0
        while exponent <= ly.0 + ly.1 {
            let v = pow(10, exponent)
            text += "<path class=\"grid\" d=\"M\(f(left)),\(f(y(v)))H\(f(right))\"/>"
            text += "<text class=\"tick\" x=\"\(f(left - 4))\" y=\"\(f(y(v) + 4))\" text-anchor=\"end\">\(Format.compact(v))</text>"
            exponent += 1
        }
        for v in SummaryTable.orderedUnique(xs.map { String($0) }).compactMap(Double.init) {
            text += "<text class=\"tick\" x=\"\(f(x(v)))\" y=\"\(f(bottom + 14))\" text-anchor=\"middle\">\(Format.compact(v))</text>"
        }
        var labelY = top + 8
        for s in series {
            let colour = colour(for: s.backend)
            let path = s.points.enumerated().map { "\($0.offset == 0 ? "M" : "L")\(f(x($0.element.0))),\(f(y($0.element.1)))" }
                .joined()
            text += "<g class=\"mark\" data-backend=\"\(escape(s.backend))\"><title>\(escape(s.backend))</title>"
            text += "<path d=\"\(path)\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\"\(s.reference ? " stroke-dasharray=\"4 3\"" : "")/>"
            for point in s.points {
                text += "<circle cx=\"\(f(x(point.0)))\" cy=\"\(f(y(point.1)))\" r=\"3\" fill=\"\(colour)\"/>"
            }
            text += "<text class=\"figure\" x=\"\(f(right + 8))\" y=\"\(f(labelY))\" fill=\"\(colour)\">\(escape(s.backend))</text></g>"
            labelY += 13
        }
        let height = max(bottom + 22, labelY)
        let backends = series.map(\.backend).joined(separator: ",")
        return "<figure class=\"chart\" id=\"\(escape(id))\" data-backends=\"\(escape(backends))\">"
            + "<figcaption>\(escape(title))</figcaption>"
            + "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(f(chartWidth)) \(f(height))\" "
            + "width=\"\(f(chartWidth))\" height=\"\(f(height))\" role=\"img\" aria-label=\"\(escape(title))\">"
            + text + "</svg></figure>\n"
    }

    /// 1, 2 or 5 times a power of ten, at least `rough`.
    static func niceStep(_ rough: Double) -> Double {
        guard rough > 0, rough.isFinite else { return 1 }
        let power = pow(10, floor(log10(rough)))
        for factor in [1.0, 2, 5, 10] where factor * power >= rough { return factor * power }
        return 10 * power
    }

    static func swatch(_ backend: String) -> String {
        "<span class=\"swatch\" style=\"background:\(colour(for: backend))\"></span>"
    }

    static func f(_ value: Double) -> String { String(format: "%.1f", value) }

    /// `text` safe inside HTML text and attribute values.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    static let style = """
        body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;max-width:1240px}
        h1{font-size:20px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}
        h3{font-size:15px;margin:20px 0 4px}.explain{color:#555;margin:2px 0 8px;max-width:900px}
        dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:8px 0}
        dl.meta dt{color:#555}dl.meta dd{margin:0}
        table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}
        th:first-child{text-align:left}thead th{background:#f4f4f4;text-align:center}
        td small{color:inherit;opacity:.85}.unit{font-weight:normal;color:#666;font-size:12px}
        td.error{background:#fde2e1;color:#a00}.tag{font-size:11px;color:#666;font-weight:normal}
        .swatch{display:inline-block;width:10px;height:10px;margin-right:5px;border-radius:2px;vertical-align:baseline}
        .key{margin-right:14px;white-space:nowrap}
        .charts{display:flex;flex-wrap:wrap;gap:8px 24px}
        figure.chart{margin:4px 0}figcaption{font-weight:600;font-size:13px;margin-bottom:2px}
        svg text{font:11px system-ui,sans-serif;fill:#333}svg text.ref{fill:#666;font-style:italic}
        svg text.axis{fill:#555;font-size:10px}h4{font-size:14px;margin:14px 0 4px}
        table.load td{white-space:nowrap}section.mix{margin-top:18px}
        svg .tick{fill:#777;font-size:10px}svg .grid{stroke:#e6e6e6;stroke-width:1}
        svg .whisker{stroke:#222;stroke-width:1.2;fill:none}svg .one{stroke:#c00;stroke-width:1;stroke-dasharray:3 3}
        tr.regressed td,tr.failed td{background:#fde2e1}tr.improved td{background:#e3f6e5}tr.info td{color:#777}
        .outcome{font-weight:600}.outcome.ok{color:#2b8a3e}.outcome.bad{color:#c92a2a}
        """
}
