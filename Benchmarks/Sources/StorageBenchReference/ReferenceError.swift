import Foundation

/// An error of a reference backend: what it was doing, and the engine's own
/// code and message.
public struct ReferenceError: Error, CustomStringConvertible, Sendable {
    /// The engine (`sqlite`, `lmdb`).
    public let engine: String
    /// What the backend was doing (`prepare`, `step`, `put message`, …).
    public let operation: String
    /// The engine's result code.
    public let code: Int32
    /// The engine's message for the code.
    public let message: String
    /// The SQL of the statement, when there is one.
    public let sql: String?

    /// Creates an error.
    public init(engine: String, operation: String, code: Int32, message: String, sql: String? = nil) {
        self.engine = engine
        self.operation = operation
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// One sentence: `sqlite step failed (code 19): UNIQUE constraint failed … in INSERT …`.
    public var description: String {
        var text = "\(engine) \(operation) failed (code \(code)): \(message)"
        if let sql { text += " in \(sql)" }
        return text
    }
}
