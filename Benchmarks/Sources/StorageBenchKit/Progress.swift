import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Shows progress on standard error: one line rewritten in place on a
/// terminal, plain lines otherwise (a log, CI).
struct ProgressPrinter: Sendable {
    /// The prefix of every line (`[3/24] 1000x100 full json, iteration 2/5`), or
    /// `nil` to show nothing.
    let label: String?

    /// Whether standard error is a terminal.
    static var isTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Shows that `operation` has started.
    func show(_ operation: BenchOperation) {
        guard let label else { return }
        Self.write("\(label): \(operation.rawValue)")
    }

    /// Writes one progress line.
    static func write(_ line: String) {
        let text = isTerminal ? "\r\u{1B}[K" + line : line + "\n"
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Ends an in-place line on a terminal.
    static func finish() {
        if isTerminal { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}

/// Progress for the commands (`load`): lines rewritten in place on a
/// terminal, so that only the summary stays on the screen; plain lines
/// otherwise (a log, CI).
public enum TerminalProgress {
    /// Shows `line` in place of the last progress line.
    public static func show(_ line: String) { ProgressPrinter.write(line) }

    /// Writes `line` to stay (a failure), in place of the progress line.
    public static func keep(_ line: String) {
        ProgressPrinter.finish()
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Clears the progress line on a terminal.
    public static func finish() { ProgressPrinter.finish() }
}
