import Foundation
import Synchronization

/// A fresh directory for one test, removed when the last reference to it goes.
///
/// ```swift
/// let directory = try TemporaryDirectory()
/// let store = try FileStore(directory: directory.url, format: .json)
/// ```
public final class TemporaryDirectory: Sendable {
    /// The directory.
    public let url: URL

    /// Creates a directory named after `label` and a fresh UUID under the
    /// system's temporary directory.
    public init(_ label: String = "dao-test") throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(label)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        remove()
    }

    /// The file `name` inside the directory.
    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Removes the directory and what it holds now (also done when it is released).
    public func remove() {
        for hook in Self.removalHooks.withLock({ $0 }) { hook(url) }
        // Test clean-up: a leftover in the temporary directory is harmless.
        try? FileManager.default.removeItem(at: url)
    }
}

extension TemporaryDirectory {
    private static let removalHooks = Mutex<[@Sendable (URL) -> Void]>([])

    /// Registers `hook`, called with a directory's URL each time a
    /// temporary directory is removed: for what a test keeps outside it
    /// under its name (the PostgreSQL backend's schema of the directory).
    public static func whenRemoved(_ hook: @escaping @Sendable (URL) -> Void) {
        removalHooks.withLock { $0.append(hook) }
    }
}

/// Runs `body` with a fresh temporary directory, removed afterwards.
public func withTemporaryDirectory<T>(_ label: String = "dao-test", _ body: (URL) throws -> T) throws -> T {
    let directory = try TemporaryDirectory(label)
    return try withExtendedLifetime(directory) { try body(directory.url) }
}
