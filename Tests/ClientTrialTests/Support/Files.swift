import Foundation
import Testing

/// Every regular file under `directory` (relative path → bytes), for
/// checking that a call changed nothing.
func fileContents(_ directory: URL) throws -> [String: Data] {
    var files: [String: Data] = [:]
    let base = directory.standardizedFileURL.path
    guard let walker = FileManager.default.enumerator(atPath: base) else { return files }
    while let relative = walker.nextObject() as? String {
        let path = base + "/" + relative
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
            files[relative] = try Data(contentsOf: URL(fileURLWithPath: path))
        }
    }
    return files
}

// Files of the client's own beside a store (each domain's tests keep a set
// named like the store's files): written before the store works, and
// expected byte for byte after it.

/// Writes each of `files` (a name under `directory`, and its bytes).
func plant(_ files: [String: Data], in directory: URL) throws {
    for (name, bytes) in files { try bytes.write(to: directory.appending(path: name)) }
}

/// Records an issue for each of `files` that is missing from `directory` or changed.
func expectUntouched(
    _ files: [String: Data], in directory: URL, _ context: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    for (name, bytes) in files {
        let now = FileManager.default.contents(atPath: directory.appending(path: name).path)
        #expect(now == bytes, "\(context): \(name) was \(now == nil ? "removed" : "changed")", sourceLocation: sourceLocation)
    }
}
