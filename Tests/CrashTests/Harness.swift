import Foundation
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The names of `list` that `STORAGE_TORTURE_BACKENDS` keeps
/// (`STORAGE_TORTURE_BACKENDS=lmdb,sqlite` narrows a torture run).
private func selected(_ list: [TestBackend]) -> [String] {
    let names = list.map(\.name)
    guard let wanted = ProcessInfo.processInfo.environment["STORAGE_TORTURE_BACKENDS"] else { return names }
    return names.filter { wanted.split(separator: ",").map(String.init).contains($0) }
}

/// The backends every crash and corruption test runs against: those that
/// keep their store in files (``localBackends``).
let backends: [String] = selected(localBackends)

/// The backends of the kill tests: those of ``backends``, and PostgreSQL when
/// `DAO_POSTGRES_URL` names a server (``allBackends``; no damaged-file tests:
/// its files are the server's). The helper's stores of a directory live in a
/// schema named after it, dropped with ``dropServerSchema(_:_:)``.
let killBackends: [String] = selected(allBackends)

/// Drops the PostgreSQL schema of `directory` when `backend` is `postgres`.
func dropServerSchema(_ backend: String, _ directory: URL) {
    guard backend == "postgres" else { return }
    do {
        let result = try runHelper(["drop", "postgres", directory.path])
        if result.status != 0 { print("the schema of \(directory.path) was not dropped: \(result)") }
    } catch {
        print("the schema of \(directory.path) was not dropped: \(error)")
    }
}

/// Whether this is a `make torture` run (many more cases), and its seed.
enum Torture {
    static let isOn = ProcessInfo.processInfo.environment["STORAGE_TORTURE"] == "1"
    /// The seed of the random choices: fixed in `make test` so a failure
    /// repeats; in `make torture` from `STORAGE_TORTURE_SEED` or the clock,
    /// printed with every failure.
    static let seed: UInt64 = {
        if let text = ProcessInfo.processInfo.environment["STORAGE_TORTURE_SEED"], let seed = UInt64(text) {
            return seed
        }
        return isOn ? UInt64(Date().timeIntervalSince1970 * 1000) : 20_261_122
    }()
}

/// How a child process ended.
struct ChildResult: CustomStringConvertible {
    var status: Int32
    /// The signal that killed it, if one did.
    var signal: Int32?
    var output: String
    /// Whether it ran past its time and was killed (``runHelper(_:timeout:)``).
    var hung = false

    var description: String {
        let how =
            hung ? "hung: killed after \(Int(helperTimeout)) s" : signal.map { "killed by signal \($0)" } ?? "exit status \(status)"
        return "\(how): \(output.trimmingCharacters(in: .whitespacesAndNewlines))"
    }
}

/// The helper executable, built beside the test bundle.
let helperURL: URL = {
    if let path = ProcessInfo.processInfo.environment["CRASH_HELPER"] { return URL(fileURLWithPath: path) }
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    // On macOS the runner is inside the .xctest bundle.
    for _ in 0..<4 where !FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("CrashHelper").path) {
        directory.deleteLastPathComponent()
    }
    return directory.appendingPathComponent("CrashHelper")
}()

/// How long a helper may run before it counts as hung and is killed.
let helperTimeout: TimeInterval = {
    if let text = ProcessInfo.processInfo.environment["CRASH_HELPER_TIMEOUT"], let seconds = TimeInterval(text) {
        return seconds
    }
    return 300
}()

/// Runs the helper with `arguments` to its end, or kills it with SIGKILL
/// after `timeout` seconds: a helper that hangs (on a damaged file, say) is
/// a result marked ``ChildResult/hung``, not a test that never ends.
func runHelper(_ arguments: [String], timeout: TimeInterval = helperTimeout) throws -> ChildResult {
    let process = Process()
    process.executableURL = helperURL
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let pid = process.processIdentifier
    let fired = Mutex(false)
    let watchdog = DispatchWorkItem {
        fired.withLock { $0 = true }
        kill(pid, SIGKILL)
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    watchdog.cancel()
    var child = result(of: process, output: data)
    child.hung = fired.withLock { $0 }
    return child
}

/// Runs the helper's `write` and kills it with SIGKILL `extraMicroseconds`
/// after it reported `afterDone` finished transactions (or when it ends on its
/// own). Returns how many transactions it reported finished.
func runWriterAndKill(_ arguments: [String], afterDone: Int, extraMicroseconds: UInt32) throws -> (done: Int, result: ChildResult) {
    let process = Process()
    process.executableURL = helperURL
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let reader = pipe.fileHandleForReading
    var output = Data()
    var done = 0
    var killed = false
    while true {
        let chunk = reader.availableData
        if chunk.isEmpty { break }
        output.append(chunk)
        done = doneCount(output)
        if !killed && done >= afterDone {
            if extraMicroseconds > 0 { usleep(extraMicroseconds) }
            kill(process.processIdentifier, SIGKILL)
            killed = true
        }
    }
    process.waitUntilExit()
    return (doneCount(output), result(of: process, output: output))
}

private func doneCount(_ output: Data) -> Int {
    String(decoding: output, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("done ") }.count
}

private func result(of process: Process, output: Data) -> ChildResult {
    let text = String(decoding: output, as: UTF8.self)
    if process.terminationReason == .uncaughtSignal {
        return ChildResult(status: -1, signal: process.terminationStatus, output: text)
    }
    return ChildResult(status: process.terminationStatus, signal: nil, output: text)
}
