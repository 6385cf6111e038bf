import Foundation

/// Writes reports to files: the requested formats, and `latest.csv` beside them.
public enum ReportWriter {
    /// `results/<UTC date-time>-<host>.csv`, e.g. `results/20261122T031500Z-build1.csv`.
    public static func defaultOutput(startedAt date: Date, host: String) -> URL {
        URL(fileURLWithPath: "results", isDirectory: true)
            .appendingPathComponent("\(compactTimestamp(date))-\(host).csv")
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
    /// a CSV report is also copied to `latest.csv` in the same directory.
    ///
    /// - Returns: the files written.
    /// - Throws: when a directory or file cannot be written.
    @discardableResult
    public static func write(_ report: Report, to output: URL, formats: [ReportFormat]) throws -> [URL] {
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
            if format == .csv, url.lastPathComponent != "latest.csv" {
                let latest = directory.appendingPathComponent("latest.csv")
                try Data(text.utf8).write(to: latest, options: .atomic)
                written.append(latest)
            }
        }
        return written
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
