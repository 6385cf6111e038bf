import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The `StoreHelper` executable (Tests/StoreHelper) run as a second process,
/// talked to through its standard input and output.
public final class HelperProcess {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    private var buffered = Data()

    /// Starts the helper with `arguments`.
    public init(_ arguments: [String]) throws {
        process.executableURL = try Self.executable()
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    /// A helper the test left running (it failed before the end) is stopped.
    deinit {
        if process.isRunning { process.terminate() }
    }

    /// The helper built next to the tests: `.build/debug/StoreHelper` under
    /// the package root, or beside the test bundle.
    public static func executable() throws -> URL {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("StoreHelper"),
            root.appendingPathComponent(".build/debug/StoreHelper"),
        ]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: candidates[0].path])
        }
        return found
    }

    /// The next line the helper prints (without its newline), or `nil` when
    /// its output ends first.
    public func readLine() -> String? {
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }
            buffered.append(chunk)
        }
    }

    /// Kills the helper with SIGKILL: no clean-up, as in a crash.
    public func killAbruptly() {
        kill(process.processIdentifier, SIGKILL)
    }

    /// Ends the helper's standard input (what `sqlite-hold-write` waits for).
    public func closeInput() throws {
        try input.fileHandleForWriting.close()
    }

    /// Waits for the helper to exit; returns its status and what it wrote to
    /// standard error.
    public func wait() -> (status: Int32, errors: String) {
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}
