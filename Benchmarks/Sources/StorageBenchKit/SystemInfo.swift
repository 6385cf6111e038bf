import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Facts about the machine and the process, for a report's provenance columns.
///
/// Each fact falls back to a coarser source (or an empty value) when a system
/// file is missing; none of them is on a data path.
public enum SystemInfo {
    /// The peak resident memory of this process so far, in bytes: `VmHWM` from
    /// `/proc/self/status` on Linux, else `getrusage`'s `ru_maxrss`.
    public static func peakResidentBytes() -> Int64? {
        if let status = systemFile("/proc/self/status") {
            for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
                let digits = line.dropFirst(6).filter(\.isNumber)
                if let kib = Int64(String(digits)) { return kib * 1024 }
            }
        }
        guard let usage = resourceUsage() else { return nil }
        #if os(Linux)
        return Int64(usage.ru_maxrss) * 1024
        #else
        return Int64(usage.ru_maxrss)
        #endif
    }

    /// This process's `getrusage(RUSAGE_SELF)`, or `nil` when the call fails.
    static func resourceUsage() -> rusage? {
        var usage = rusage()
        #if os(Linux)
        let who = RUSAGE_SELF.rawValue
        #else
        let who = RUSAGE_SELF
        #endif
        return getrusage(who, &usage) == 0 ? usage : nil
    }

    /// The host name, without a domain.
    public static var host: String {
        let name = ProcessInfo.processInfo.hostName
        return name.split(separator: ".").first.map(String.init) ?? name
    }

    /// The operating system's name and version and the kernel release.
    public static var os: String {
        var kernel = ""
        var names = utsname()
        if uname(&names) == 0 {
            let sysname = withUnsafeBytes(of: names.sysname) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let release = withUnsafeBytes(of: names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let machine = withUnsafeBytes(of: names.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            kernel = "\(sysname) \(release) \(machine)"
        }
        if let release = systemFile("/etc/os-release") {
            for line in release.split(separator: "\n") where line.hasPrefix("PRETTY_NAME=") {
                let name = line.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                return kernel.isEmpty ? name : "\(name); \(kernel)"
            }
        }
        return kernel.isEmpty ? ProcessInfo.processInfo.operatingSystemVersionString : kernel
    }

    /// The processor model and the number of logical cores, e.g. `AMD EPYC 7B13 × 2`.
    public static var cpu: String {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        if let info = systemFile("/proc/cpuinfo") {
            for line in info.split(separator: "\n") where line.hasPrefix("model name") {
                if let colon = line.firstIndex(of: ":") {
                    let model = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                    return "\(model) × \(cores)"
                }
            }
        }
        #if arch(arm64)
        return "arm64 × \(cores)"
        #else
        return "x86_64 × \(cores)"
        #endif
    }

    /// The version of the Swift compiler that built the harness: the compiler's
    /// major.minor, made exact from `swift --version` when that agrees.
    public static var swiftVersion: String {
        #if compiler(>=6.5)
        let built = "6.5"
        #elseif compiler(>=6.4)
        let built = "6.4"
        #elseif compiler(>=6.3)
        let built = "6.3"
        #elseif compiler(>=6.2)
        let built = "6.2"
        #elseif compiler(>=6.1)
        let built = "6.1"
        #else
        let built = "6.0"
        #endif
        if let output = run(["swift", "--version"]),
            let range = output.range(of: #"Swift version [0-9][0-9.]*"#, options: .regularExpression)
        {
            let version = String(output[range].dropFirst("Swift version ".count))
            if version.hasPrefix(built) { return version }
        }
        return built
    }

    /// `release` or `debug`: how the harness was compiled.
    public static var build: String {
        #if DEBUG
        "debug"
        #else
        "release"
        #endif
    }

    /// The commit checked out in the current directory, `-dirty` when the
    /// working tree has changes, or empty outside a git repository.
    public static var gitCommit: String {
        guard let head = run(["git", "rev-parse", "--short=12", "HEAD"])?.trimmingCharacters(in: .whitespacesAndNewlines),
            !head.isEmpty
        else { return "" }
        let status = run(["git", "status", "--porcelain", "--untracked-files=no"]) ?? ""
        return status.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? head : "\(head)-dirty"
    }

    /// The path of the running executable.
    public static var executableURL: URL? {
        #if os(Linux)
        do {
            return URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        } catch {
            // Unreadable link: Bundle's idea of the executable, below, is the fallback.
        }
        #endif
        return Bundle.main.executableURL
    }

    /// The standard output of a program found on `PATH`, or `nil` when it cannot
    /// be run or fails.
    static func run(_ arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return nil
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The text of a system file that describes the machine, or `nil` where the
    /// system has no such file (not Linux, a container without it): each caller
    /// then falls back to a coarser source. These are report figures, never data.
    private static func systemFile(_ path: String) -> String? {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            return nil
        }
    }
}
