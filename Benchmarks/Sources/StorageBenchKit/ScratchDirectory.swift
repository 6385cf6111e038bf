import Foundation

/// Makes a fresh directory `storage-bench-<label>-<UUID>` under the system's
/// temporary directory: the scratch directory of one measurement, removed by
/// its caller with ``removeScratchDirectory(_:)`` (usually in a `defer`).
public func makeScratchDirectory(_ label: String) throws -> URL {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("storage-bench-\(label)-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

/// Removes a directory ``makeScratchDirectory(_:)`` made (nothing else: the
/// caller names only its own), reporting a failure on standard error.
public func removeScratchDirectory(_ directory: URL) {
    do {
        try FileManager.default.removeItem(at: directory)
    } catch {
        FileHandle.standardError.write(Data("storage-bench: could not remove \(directory.path): \(error)\n".utf8))
    }
}
