import Foundation

/// The load sections of the HTML report (``HTMLReport``): per mix, a table of
/// throughput and p99 per backend and client count, throughput and p99
/// against the client count, latency percentile spectra and cumulative
/// distributions from the HDR histograms, and memory.
///
/// Chart ids are fixed, so that a test finds them: with `S` the mix's
/// ``HTMLReport/slug(_:)``, `load-throughput-S`, `load-p99-S`,
/// `load-spectrum-S-cN` (every operation at N clients),
/// `load-spectrum-S-OP-cN` (one operation type at the most clients),
/// `load-cdf-S-cN`, `load-memory-S`.
extension HTMLReport {
    /// The role of a load backend: `roles` first, then what its name implies.
    static func loadRole(_ backend: String, _ roles: [String: BackendRole]) -> BackendRole {
        BackendRole.inferred(for: backend, known: roles)
    }

    /// Backends in the order a load chart names them: each choice followed
    /// by its raw engine and any third-party library on that engine, so a
    /// reference is named right below the backend it is measured against.
    static func loadOrder(_ rows: [LoadReportRow], roles: [String: BackendRole]) -> [String] {
        let names = SummaryTable.orderedUnique(rows.map(\.backend))
        func reference(_ name: String) -> String? { rows.first { $0.backend == name }?.reference }
        var ordered: [String] = []
        for name in names where loadRole(name, roles) == .choice {
            ordered.append(name)
            guard let engine = reference(name) else { continue }
            for other in names where !ordered.contains(other) {
                if other == engine || (loadRole(other, roles) == .thirdParty && reference(other) == engine) {
                    ordered.append(other)
                }
            }
        }
        return ordered + names.filter { !ordered.contains($0) }
    }

    /// The label of a load backend in a chart: a reference's with its role.
    static func loadLabel(_ backend: String, _ roles: [String: BackendRole]) -> String {
        switch loadRole(backend, roles) {
        case .choice: return backend
        case .raw: return "\(backend) (raw)"
        case .thirdParty: return "\(backend) (3rd party)"
        }
    }

    /// The metadata of a page with load rows only.
    static func loadMetadata(_ rows: [LoadReportRow]) -> String {
        guard let first = rows.first else { return "" }
        var items: [(String, String)] = [("workload", "dialog-graph load mixes")]
        if let p = first.provenance {
            items += [
                ("run", p.runId), ("started", p.timestamp), ("commit", p.gitCommit.isEmpty ? "unknown" : p.gitCommit),
                ("host", p.host), ("CPU", p.cpu), ("OS", p.os), ("toolchain", "Swift \(p.swiftVersion), \(p.build) build"),
            ]
        }
        let clients = SummaryTable.orderedUnique(rows.map { String($0.clients) })
        items += [
            ("mixes", SummaryTable.orderedUnique(rows.map(\.mix)).joined(separator: ", ")),
            ("clients", clients.joined(separator: ", ")),
            ("durability", SummaryTable.orderedUnique(rows.map(\.durability)).joined(separator: ", ")),
            ("seed", String(first.seed)),
        ]
        var text = "<section id=\"metadata\"><h2>The run</h2>\n<dl class=\"meta\">\n"
        for (name, value) in items { text += "<dt>\(escape(name))</dt><dd>\(escape(value))</dd>\n" }
        return text + "</dl>\n</section>\n"
    }

    /// The settings each load backend ran with, and the errors it counted.
    static func loadSettings(_ rows: [LoadReportRow], roles: [String: BackendRole]) -> String {
        var text = "<details><summary>Settings in force under load, as each store read them back</summary>\n"
        text += "<dl class=\"meta\">\n"
        for backend in loadOrder(rows, roles: roles) {
            guard let row = rows.first(where: { $0.backend == backend && !$0.settings.isEmpty }) else { continue }
            text += "<dt>\(swatch(backend))\(escape(backend))</dt><dd>\(escape(row.api)): \(escape(row.settings))</dd>\n"
        }
        text += "</dl></details>\n"
        let failures = SummaryTable.orderedUnique(
            rows.filter { $0.errors > 0 }.map { "\($0.backend) \($0.mix) C=\($0.clients) \($0.operation): \($0.errors) errors, first: \($0.error ?? "?")" })
        if !failures.isEmpty {
            text += "<details open><summary>\(failures.count) runs with errors</summary><ul>\n"
            for failure in failures { text += "<li>\(escape(failure))</li>\n" }
            text += "</ul></details>\n"
        }
        return text
    }

    /// Every mix of `rows`, a section each.
    static func loadSections(_ rows: [LoadReportRow], roles: [String: BackendRole]) -> String {
        guard !rows.isEmpty else { return "" }
        var text = "<section id=\"load\"><h2>Under load: operation mixes with concurrent clients</h2>\n"
        text += "<p class=\"explain\">Each backend runs each mix on a fresh store at each client count "
        text += "(docs/WORKLOAD.md, \"Load mixes\"). Throughput counts the operations of every client; latencies "
        text += "are each operation's service time, from HDR histograms merged across clients. References are "
        text += "dashed and named right below the backend they are measured against.</p>\n"
        let runs = SummaryTable.orderedUnique(rows.compactMap { row in
            row.provenance.map { p in
                "load run \(p.runId): started \(p.timestamp), commit \(p.gitCommit.isEmpty ? "unknown" : p.gitCommit), "
                    + "\(p.host), \(p.cpu), Swift \(p.swiftVersion) \(p.build) build"
            }
        })
        for run in runs { text += "<p class=\"explain\">\(escape(run))</p>\n" }
        text += loadSettings(rows, roles: roles)
        for mix in SummaryTable.orderedUnique(rows.map(\.mix)) {
            text += loadMix(rows.filter { $0.mix == mix }, roles: roles)
        }
        return text + "</section>\n"
    }

    static func loadMix(_ rows: [LoadReportRow], roles: [String: BackendRole]) -> String {
        guard let first = rows.first else { return "" }
        let id = slug(first.mix)
        let backends = loadOrder(rows, roles: roles)
        let clients = Set(rows.map(\.clients)).sorted()
        let most = clients.last ?? 1
        let all = rows.filter { $0.operation == "all" && $0.operations > 0 }
        func row(_ backend: String, _ count: Int, _ operation: String = "all") -> LoadReportRow? {
            rows.first { $0.backend == backend && $0.clients == count && $0.operation == operation }
        }
        // A backend's memory: its worker's peak over the runs, with the
        // ratio to its raw engine's at the most clients; else the rise.
        func memoryCell(_ backend: String, top: LoadReportRow?) -> String {
            let mine = rows.filter { $0.backend == backend }
            if let peak = mine.compactMap(\.peakResidentMiB).max() {
                let ratio = top?.peakResidentRatioToRaw.map { " · " + Format.ratio($0) } ?? ""
                return Format.bytes(Int64(peak * 1_048_576)) + ratio
            }
            guard let rise = mine.compactMap(\.peakResidentRiseMiB).max() else { return "–" }
            return "rise " + Format.bytes(Int64(rise * 1_048_576))
        }
        let seconds = all.map(\.seconds).max() ?? 0
        var text = "<section class=\"group mix\" id=\"load-\(escape(id))\">\n<h3>Mix \(escape(first.mix))</h3>\n"
        text += "<p class=\"explain\">\(escape(first.mixDescription)). \(first.dialogs) dialogs × "
        text += "\(first.messagesPerDialog) messages, durability \(escape(first.durability)), about "
        text += "\(String(format: "%.1f", seconds)) s per run"
        if let rate = first.targetRate { text += ", target \(String(format: "%g", rate)) operations/s" }
        text += ".</p>\n"

        // The table: ops/s and p99 per backend and client count.
        text += "<table class=\"load\"><thead><tr><th>backend</th>"
        for count in clients { text += "<th>\(count) client\(count == 1 ? "" : "s")<br><span class=\"unit\">ops/s · p99 µs</span></th>" }
        text += "<th>÷ raw at \(most)<br><span class=\"unit\">ops/s · p99</span></th><th>peak memory<br><span class=\"unit\">÷ raw at \(most)</span></th></tr></thead><tbody>\n"
        for backend in backends {
            let role = loadRole(backend, roles)
            let tag = role == .choice ? "" : " <span class=\"tag\">\(role == .raw ? "raw engine" : "third party")</span>"
            text += "<tr data-backend=\"\(escape(backend))\"><th>\(swatch(backend))\(escape(backend))\(tag)</th>"
            for count in clients {
                guard let cell = row(backend, count) else {
                    text += "<td></td>"
                    continue
                }
                if cell.operations == 0 {
                    text += "<td class=\"error\" title=\"\(escape(cell.error ?? ""))\">error</td>"
                    continue
                }
                text += "<td\(cell.errors > 0 ? " class=\"error\"" : "")><b>\(Format.compact(cell.throughputPerSecond))</b>"
                text += " · \(Format.micro(cell.p99Microseconds))"
                if cell.errors > 0 { text += "<br><small>\(cell.errors) errors</small>" }
                text += "</td>"
            }
            let top = row(backend, most)
            let ratios = [top?.throughputRatioToRaw, top?.p99RatioToRaw].map { $0.map(Format.ratio) ?? "–" }
            text += "<td>\(top?.reference == nil ? "" : ratios.joined(separator: " · "))</td>"
            text += "<td>\(memoryCell(backend, top: top))</td></tr>\n"
        }
        text += "</tbody></table>\n<div class=\"charts\">\n"

        // Scaling with clients.
        func series(_ value: (LoadReportRow) -> Double?) -> [Series] {
            backends.map { backend in
                Series(
                    backend: backend, label: loadLabel(backend, roles),
                    points: clients.compactMap { count in
                        guard let cell = row(backend, count), cell.operations > 0, let v = value(cell), v > 0 else {
                            return nil
                        }
                        return (x: Double(count), y: v)
                    }, reference: loadRole(backend, roles) != .choice)
            }
        }
        let clientAxis = logAxis(clients.map(Double.init), ticks: clients.map(Double.init), title: "clients")
        let throughput = series { $0.throughputPerSecond }
        text += plot(
            id: "load-throughput-\(id)", title: "\(first.mix): throughput against clients (operations/s)",
            series: throughput, x: clientAxis,
            y: linearAxis(throughput.flatMap { $0.points.map(\.y) }, title: "operations/s"), markers: true)
        let p99 = series { $0.p99Microseconds }
        text += plot(
            id: "load-p99-\(id)", title: "\(first.mix): p99 latency against clients (µs)", series: p99, x: clientAxis,
            y: logAxis(p99.flatMap { $0.points.map(\.y) }, title: "µs (log)"), markers: true)

        // Memory over the runs: each backend's own process's peak (a load
        // worker's), else the rise since its store opened.
        let wholePeaks = rows.contains { $0.peakResidentMiB != nil }
        let memoryBars = backends.compactMap { backend -> Bar? in
            let mine = rows.filter { $0.backend == backend }
            guard let mib = (wholePeaks ? mine.compactMap(\.peakResidentMiB) : mine.compactMap(\.peakResidentRiseMiB)).max()
            else {
                return nil
            }
            let bytes = Int64(mib * 1_048_576)
            return Bar(
                label: loadLabel(backend, roles), backend: backend, value: max(Double(bytes), 1), low: nil, high: nil,
                reference: loadRole(backend, roles) != .choice, text: Format.bytes(bytes))
        }
        if !memoryBars.isEmpty {
            text += chart(
                id: "load-memory-\(id)",
                title: "\(first.mix): " + (wholePeaks ? "peak resident memory of each backend's process" : "peak resident memory rise over the runs"),
                bars: memoryBars, scale: .linear, line: nil)
        }
        text += "</div>\n"

        // Spectra and distributions.
        func spectra(_ count: Int, _ operation: String)
            -> [(backend: String, label: String, spectrum: LatencySpectrum, reference: Bool)]
        {
            backends.compactMap { backend in
                guard let cell = row(backend, count, operation), cell.operations > 0, let spectrum = cell.spectrum else {
                    return nil
                }
                return (backend, loadLabel(backend, roles), spectrum, loadRole(backend, roles) != .choice)
            }
        }
        text += "<h4>Latency percentile spectrum</h4>\n<p class=\"explain\">The latency under which each share of "
        text += "operations finished, from the median (p50) to p99.99 and the slowest, spaced by their nines; one "
        text += "chart per client count, every operation type together, then each type at \(most) clients. "
        text += "Lower is better; a line that rises late has a short tail.</p>\n<div class=\"charts\">\n"
        for count in clients {
            text += spectrumChart(
                id: "load-spectrum-\(id)-c\(count)", title: "\(first.mix), \(count) client\(count == 1 ? "" : "s"): every operation",
                spectra: spectra(count, "all"))
        }
        let operations = SummaryTable.orderedUnique(rows.map(\.operation)).filter { $0 != "all" }
        if operations.count > 1 {
            for operation in operations {
                text += spectrumChart(
                    id: "load-spectrum-\(id)-\(slug(operation))-c\(most)",
                    title: "\(first.mix), \(most) client\(most == 1 ? "" : "s"): \(operation)",
                    spectra: spectra(most, operation))
            }
        }
        text += "</div>\n<h4>Cumulative distribution</h4>\n<p class=\"explain\">The share of operations done within "
        text += "a latency (log axis), at each client count; further left is faster.</p>\n<div class=\"charts\">\n"
        for count in clients {
            text += cdfChart(
                id: "load-cdf-\(id)-c\(count)", title: "\(first.mix), \(count) client\(count == 1 ? "" : "s"): every operation",
                spectra: spectra(count, "all"))
        }
        return text + "</div>\n</section>\n"
    }
}
