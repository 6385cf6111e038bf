import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the system counts for a timed region besides its wall time, written
/// on request for measuring by hand (`scripts/region-costs.sh`), never part
/// of a report: when the environment variable `STORAGE_BENCH_REGION_USAGE`
/// names a file, each timed region appends one line to it, the region's
/// operation and the rise of the process's counters over the region as
/// `name=value` pairs:
///
/// - `utime_us`, `stime_us`: user and system CPU time (`getrusage`);
/// - `minflt`, `majflt`: page faults without and with I/O;
/// - `nvcsw`, `nivcsw`: voluntary and involuntary context switches;
/// - `inblock`, `oublock`: blocks read and written by the file system;
/// - `wchar`, `syscw`: bytes passed to write calls (`write`, `pwrite64`,
///   `writev`) and their number; `write_bytes`: bytes the process caused
///   to be sent to storage (`/proc/self/io`, Linux only: `-1` elsewhere).
///
/// The counters are read just outside the region's clock readings (and
/// outside its callgrind dumps), and the line is written after the region
/// ends, so neither the time nor the counts of the region include them.
/// Without the variable (and always under callgrind, whose workers get an
/// environment of their own) nothing is read or written.
enum RegionUsage {
    /// The file the lines go to, or `nil`: read once, with `getenv` (the
    /// environment through `ProcessInfo` would allocate its dictionary in
    /// every worker, moving the allocator's state, and with it the
    /// instructions `malloc` counts inside the regions, by up to 0.1%).
    static let path: String? = getenv("STORAGE_BENCH_REGION_USAGE").map { String(cString: $0) }

    /// The counters at one instant.
    struct Counters: Sendable {
        var values: [(name: String, value: Int64)]
    }

    /// The counters at the start of the region in progress.
    private static let start = Mutex<Counters?>(nil)

    /// Reads the counters at a region's start, when asked for.
    @inline(__always)
    static func begin() {
        guard path != nil else { return }
        let counters = read()
        start.withLock { $0 = counters }
    }

    /// Reads the counters at a region's end and appends the region's line,
    /// when asked for.
    @inline(__always)
    static func end(_ operation: BenchOperation) {
        guard let path else { return }
        let after = read()
        guard let before = start.withLock({ $0 }) else { return }
        var line = "operation=\(operation.rawValue)"
        for (index, counter) in after.values.enumerated() {
            let rise = counter.value < 0 || before.values[index].value < 0 ? -1 : counter.value - before.values[index].value
            line += " \(counter.name)=\(rise)"
        }
        line += "\n"
        do {
            guard let handle = FileHandle(forWritingAtPath: path) ?? create(path) else {
                throw CocoaError(.fileWriteUnknown)
            }
            _ = try handle.seekToEnd()
            try handle.write(contentsOf: Data(line.utf8))
            try handle.close()
        } catch {
            FileHandle.standardError.write(Data("storage-bench: could not write to \(path): \(error)\n".utf8))
        }
    }

    private static func create(_ path: String) -> FileHandle? {
        guard FileManager.default.createFile(atPath: path, contents: nil) else { return nil }
        return FileHandle(forWritingAtPath: path)
    }

    /// The process's counters now.
    static func read() -> Counters {
        let read = SystemInfo.resourceUsage()
        let ok = read != nil
        let usage = read ?? rusage()
        func field(_ value: Int) -> Int64 { ok ? Int64(value) : -1 }
        func micros(_ time: timeval) -> Int64 { ok ? Int64(time.tv_sec) * 1_000_000 + Int64(time.tv_usec) : -1 }
        var values: [(name: String, value: Int64)] = [
            ("utime_us", micros(usage.ru_utime)), ("stime_us", micros(usage.ru_stime)),
            ("minflt", field(usage.ru_minflt)), ("majflt", field(usage.ru_majflt)),
            ("nvcsw", field(usage.ru_nvcsw)), ("nivcsw", field(usage.ru_nivcsw)),
            ("inblock", field(usage.ru_inblock)), ("oublock", field(usage.ru_oublock)),
        ]
        let io = processIO()
        for name in ["wchar", "syscw", "write_bytes"] { values.append((name, io[name] ?? -1)) }
        return Counters(values: values)
    }

    /// `/proc/self/io` as numbers by name; empty where there is none.
    private static func processIO() -> [String: Int64] {
        let text: String
        do {
            text = try String(contentsOfFile: "/proc/self/io", encoding: .utf8)
        } catch {
            return [:]  // not Linux: no figures
        }
        var fields: [String: Int64] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, let value = Int64(parts[1].trimmingCharacters(in: .whitespaces)) {
                fields[String(parts[0])] = value
            }
        }
        return fields
    }
}
