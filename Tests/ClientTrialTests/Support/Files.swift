import Foundation

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
