import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The `StoreHelper` executable (Tests/StoreHelper) run as a second process,
/// talked to through its standard input and output: the one child process
/// of the tests (another process growing an LMDB map or holding an SQLite
/// write lock, a writer to kill, a reader of a damaged store).
public final class HelperProcess {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors: Pipe?
    private var buffered = Data()

    /// Starts the helper with `arguments`; with `combiningErrors`, what it
    /// writes to standard error comes with its output.
    public init(_ arguments: [String], combiningErrors: Bool = false) throws {
        errors = combiningErrors ? nil : Pipe()
        process.executableURL = try Self.executable()
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors ?? output
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
        var candidates: [URL] = []
        // On macOS the test runner is inside the .xctest bundle.
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            candidates.append(directory.appendingPathComponent("StoreHelper"))
            directory.deleteLastPathComponent()
        }
        candidates.append(root.appendingPathComponent(".build/debug/StoreHelper"))
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
            if chunk.isEmpty {
                guard !buffered.isEmpty else { return nil }
                let line = String(decoding: buffered, as: UTF8.self)
                buffered.removeAll()
                return line
            }
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
    /// standard error (nothing when it comes with the output).
    public func wait() -> (status: Int32, errors: String) {
        let text = errors.map { String(decoding: $0.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) } ?? ""
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    /// Waits for the helper to exit, having read its output to the end.
    private func result(output lines: [String]) -> HelperResult {
        process.waitUntilExit()
        let text = lines.map { $0 + "\n" }.joined()
        if process.terminationReason == .uncaughtSignal {
            return HelperResult(status: -1, signal: process.terminationStatus, output: text)
        }
        return HelperResult(status: process.terminationStatus, signal: nil, output: text)
    }

    /// How long a helper run by ``run(_:timeout:)`` may take before it counts
    /// as hung and is killed: `STORE_HELPER_TIMEOUT` seconds, or 300.
    public static let timeout: TimeInterval = {
        if let text = ProcessInfo.processInfo.environment["STORE_HELPER_TIMEOUT"], let seconds = TimeInterval(text) {
            return seconds
        }
        return 300
    }()

    /// Runs the helper with `arguments` to its end, or kills it with SIGKILL
    /// after `timeout` seconds: a helper that hangs (on a damaged file, say)
    /// is a result marked ``HelperResult/hung``, not a test that never ends.
    public static func run(_ arguments: [String], timeout: TimeInterval = timeout) throws -> HelperResult {
        let helper = try HelperProcess(arguments, combiningErrors: true)
        let pid = helper.process.processIdentifier
        let fired = Mutex(false)
        let watchdog = DispatchWorkItem {
            fired.withLock { $0 = true }
            kill(pid, SIGKILL)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        var lines: [String] = []
        while let line = helper.readLine() { lines.append(line) }
        var result = helper.result(output: lines)
        watchdog.cancel()
        result.hung = fired.withLock { $0 }
        return result
    }

    /// The kill loop of the crash tests: runs a writer of the helper (a
    /// command that prints `done <i>` after each call that returned) and
    /// kills it with SIGKILL `delayMicroseconds` after the first line it
    /// prints once `afterDone` such lines have come (or lets it end on its
    /// own first). Returns how many calls
    /// it reported returned, whether it was sent the kill, and how it ended.
    public static func runAndKill(_ arguments: [String], afterDone: Int, delayMicroseconds: UInt32) throws
        -> (done: Int, killed: Bool, result: HelperResult)
    {
        let helper = try HelperProcess(arguments, combiningErrors: true)
        var lines: [String] = []
        var done = 0
        var killed = false
        while let line = helper.readLine() {
            lines.append(line)
            if line.hasPrefix("done ") { done += 1 }
            if !killed && done >= afterDone {
                if delayMicroseconds > 0 { usleep(delayMicroseconds) }
                helper.killAbruptly()
                killed = true
            }
        }
        return (done, killed, helper.result(output: lines))
    }

    /// A writer killed again and again on one store, `rounds` times: each
    /// round `writer` gives, from the calls the store holds, the writer's
    /// arguments and after how many of its reported calls it is killed
    /// (``runAndKill(_:afterDone:delayMicroseconds:)``, up to `delayBound`
    /// microseconds later); then `holds` is told how many calls the store
    /// should hold (those before the round and those the writer reported
    /// returned) and says how many it does: that many, or one more (the call
    /// under way, whole), or `nil` when neither, which ends the loop. The
    /// next writer carries on over the leftovers of the last. Returns the
    /// calls the store holds at the end, `nil` if a round found neither.
    public static func killRepeatedly(
        rounds: Int, holding start: Int, random: inout TestRandom, delayBound: Int,
        writer: (_ round: Int, _ held: Int, _ random: inout TestRandom) -> (arguments: [String], afterDone: Int),
        holds: (_ round: Int, _ returned: Int, _ killed: Bool, _ writer: HelperResult) throws -> Int?
    ) throws -> Int? {
        var held = start
        for round in 0..<rounds {
            let (arguments, afterDone) = writer(round, held, &random)
            let delay = UInt32(random.below(delayBound))
            let (done, killed, result) = try runAndKill(arguments, afterDone: afterDone, delayMicroseconds: delay)
            guard let now = try holds(round, held + done, killed, result) else { return nil }
            held = now
        }
        return held
    }
}

/// How a helper run by ``HelperProcess/run(_:timeout:)`` or
/// ``HelperProcess/runAndKill(_:afterDone:delayMicroseconds:)`` ended.
public struct HelperResult: CustomStringConvertible, Sendable {
    public var status: Int32
    /// The signal that killed it, if one did.
    public var signal: Int32?
    /// What it wrote to standard output and standard error.
    public var output: String
    /// Whether it ran past its time and was killed (``HelperProcess/run(_:timeout:)``).
    public var hung = false

    public var description: String {
        let how =
            hung
            ? "hung: killed after \(Int(HelperProcess.timeout)) s"
            : signal.map { "killed by signal \($0)" } ?? "exit status \(status)"
        return "\(how): \(output.trimmingCharacters(in: .whitespacesAndNewlines))"
    }
}
