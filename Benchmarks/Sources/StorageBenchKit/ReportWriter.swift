import Foundation

/// Writes reports to files: the requested formats, and, in the default
/// results folder, `latest.csv`.
public enum ReportWriter {
    /// The default results folder, `results` in the current directory.
    public static var defaultDirectory: URL { URL(fileURLWithPath: "results", isDirectory: true) }

    /// `results/<UTC date-time>-<host>.csv`, e.g. `results/20261122T031500Z-build1.csv`.
    public static func defaultOutput(startedAt date: Date, host: String) -> URL {
        defaultDirectory.appendingPathComponent("\(compactTimestamp(date))-\(host).csv")
    }

    /// A UTC date-time usable in a file name: `20261122T031500Z`.
    public static func compactTimestamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: date)
    }

    /// Writes `report` in each of `formats`: to `output` with its extension
    /// replaced by the format's (`.csv`, `.json`, `.md`), creating the directory;
    /// a CSV report written into the default results folder
    /// (``defaultDirectory``) is also copied to `latest.csv` there, so that
    /// `make compare` finds the newest run; elsewhere no `latest.csv` is written.
    ///
    /// - Returns: the files written.
    /// - Throws: when a directory or file cannot be written.
    /// - Parameter latestDirectory: the folder where `latest.csv` is kept
    ///   (``defaultDirectory``; a test names another), or `nil` for a report
    ///   that is not a `run`'s (migrate), which never becomes `latest.csv`.
    @discardableResult
    public static func write(
        _ report: Report, to output: URL, formats: [ReportFormat], latestDirectory: URL? = defaultDirectory
    ) throws -> [URL] {
        let directory = output.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let base = output.deletingPathExtension()
        var written: [URL] = []
        for format in formats {
            let url = base.appendingPathExtension(format.fileExtension)
            let text: String
            switch format {
            case .csv: text = report.csv()
            case .json: text = try report.json()
            case .markdown: text = report.markdown()
            }
            try Data(text.utf8).write(to: url, options: .atomic)
            written.append(url)
            if format == .csv, url.lastPathComponent != "latest.csv",
                directory.standardizedFileURL.path == latestDirectory?.standardizedFileURL.path
            {
                let latest = directory.appendingPathComponent("latest.csv")
                try Data(text.utf8).write(to: latest, options: .atomic)
                written.append(latest)
            }
        }
        return written
    }

    /// Writes the HTML report (``HTMLReport``) of `report` beside the CSV
    /// `output`, with its name and `.html`; in the folder of `latest.csv`
    /// (``defaultDirectory``) also as `report.html`.
    ///
    /// - Returns: the files written.
    /// - Throws: when a file cannot be written.
    @discardableResult
    public static func writeHTML(
        _ report: Report, beside output: URL, comparison: Comparison? = nil, roles: [String: BackendRole] = [:],
        latestDirectory: URL? = defaultDirectory
    ) throws -> [URL] {
        let directory = output.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let page = Data(HTMLReport.render(report, comparison: comparison, roles: roles).utf8)
        let url = output.deletingPathExtension().appendingPathExtension("html")
        try page.write(to: url, options: .atomic)
        var written = [url]
        if directory.standardizedFileURL.path == latestDirectory?.standardizedFileURL.path,
            url.lastPathComponent != "report.html"
        {
            let latest = directory.appendingPathComponent("report.html")
            try page.write(to: latest, options: .atomic)
            written.append(latest)
        }
        return written
    }

    /// Writes the rows of a load run in each of `formats` (`csv`, `json`,
    /// `markdown`) and its HTML report, each to `output` with its extension
    /// replaced; in the folder `latestDirectory` (``defaultDirectory``) also
    /// the CSV as `load-latest.csv` and the page as `load-report.html`, so
    /// that `make bench` and a reader find the newest load run.
    ///
    /// - Returns: the files written.
    /// - Throws: when a directory or file cannot be written.
    @discardableResult
    public static func writeLoad(
        _ rows: [LoadReportRow], to output: URL, formats: [String], roles: [String: BackendRole] = [:],
        latestDirectory: URL? = defaultDirectory
    ) throws -> [URL] {
        let directory = output.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let base = output.deletingPathExtension()
        let inLatest = directory.standardizedFileURL.path == latestDirectory?.standardizedFileURL.path
        var written: [URL] = []
        func write(_ text: String, _ url: URL, latest: String?) throws {
            try Data(text.utf8).write(to: url, options: .atomic)
            written.append(url)
            if inLatest, let latest, url.lastPathComponent != latest {
                let copy = directory.appendingPathComponent(latest)
                try Data(text.utf8).write(to: copy, options: .atomic)
                written.append(copy)
            }
        }
        for format in formats {
            switch format {
            case "csv": try write(LoadReport.csv(rows), base.appendingPathExtension("csv"), latest: "load-latest.csv")
            case "json": try write(try LoadReport.json(rows), base.appendingPathExtension("json"), latest: nil)
            default:
                try write(
                    LoadReport.summaryLegend + LoadReport.markdown(rows, roles: roles), base.appendingPathExtension("md"),
                    latest: nil)
            }
        }
        try write(
            HTMLReport.render(Report(rows: []), roles: roles, load: rows), base.appendingPathExtension("html"),
            latest: "load-report.html")
        return written
    }

    /// `wrote results/a.{csv,html}, latest.csv, report.html`: the files
    /// written, on one line; files of one folder and one name but for their
    /// extension share an entry, and a file in the first file's folder is
    /// given by its name only.
    public static func wroteLines(_ urls: [URL]) -> String {
        guard let first = urls.first else { return "" }
        func folder(_ url: URL) -> String { url.deletingLastPathComponent().standardizedFileURL.path }
        func shown(_ url: URL) -> String {
            let path = url.relativePath
            return String(path.dropLast(url.lastPathComponent.count))
        }
        var entries: [(url: URL, stem: String, extensions: [String])] = []
        for url in urls {
            let stem = url.deletingPathExtension().lastPathComponent
            if let index = entries.firstIndex(where: { folder($0.url) == folder(url) && $0.stem == stem }) {
                entries[index].extensions.append(url.pathExtension)
            } else {
                entries.append((url, stem, [url.pathExtension]))
            }
        }
        let names = entries.enumerated().map { index, entry in
            let prefix = index == 0 || folder(entry.url) != folder(first) ? shown(entry.url) : ""
            let suffix =
                entry.extensions.count == 1
                ? (entry.extensions[0].isEmpty ? "" : "." + entry.extensions[0]) : ".{" + entry.extensions.joined(separator: ",") + "}"
            return prefix + entry.stem + suffix
        }
        return "wrote " + names.joined(separator: ", ") + "\n"
    }

    /// Checks that `output` can be written before any work starts: its directory
    /// exists or can be made, and it is not a directory itself.
    /// - Throws: ``ConfigurationError`` otherwise.
    public static func validate(_ output: URL) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: output.path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ConfigurationError("--output \(output.path) is a directory; give a file name such as results/run.csv")
        }
        let directory = output.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw ConfigurationError("--output: the directory \(directory.path) cannot be created: \(error.localizedDescription)")
        }
        guard FileManager.default.isWritableFile(atPath: directory.path) else {
            throw ConfigurationError("--output: the directory \(directory.path) is not writable")
        }
    }
}
