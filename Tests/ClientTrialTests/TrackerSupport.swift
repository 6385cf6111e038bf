import DAOCore
import Foundation
import TestSupport
import Testing

// What the tracker's tests share (the domain is in Tests/TestSupport, so that
// StoreHelper writes it in a second process too).

/// Opens `backend` in `directory`, runs `body` with the tracker's DAOs, and
/// closes the store (also when `body` throws).
func withTracker<T>(_ backend: TestBackend, in directory: URL, _ body: (TrackerDAOs, any MigratableStore) throws -> T)
    throws -> T
{
    let store = try backend.open(directory)
    defer {
        do { try store.close() } catch { Issue.record("closing the \(backend.name) store failed: \(error)") }
    }
    return try body(try TrackerDAOs(store), store)
}

/// Closes `store`, recording a failure as an issue (for `defer`).
func closeRecordingFailure(_ store: any Store, _ backend: TestBackend) {
    do { try store.close() } catch { Issue.record("closing the \(backend.name) store failed: \(error)") }
}

/// Whether `a` and `b` are equal and spelled with the same Unicode scalars
/// (Swift's `==` on `String` takes NFC and NFD for one value).
func exactly<T: Equatable>(_ a: T, _ b: T) -> Bool {
    // A NaN is unequal to itself under `==`: then the bits decide
    // (`fingerprint`; Foundation cannot describe a date whose time is NaN).
    guard a == b else { return fingerprint(a) == fingerprint(b) }
    return Array(String(reflecting: a).utf8) == Array(String(reflecting: b).utf8)
}

/// Whether the property-list store is the backend: it refuses texts spelled
/// two ways in one entity's document, so its data is generated in NFC.
func oneSpelling(_ backend: TestBackend) -> Bool { backend.name == "plist" }

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

/// The tracker's writes `0..<count` made in this process.
func writeTracker(_ backend: TestBackend, in directory: URL, calls: Range<Int>) throws {
    try withTracker(backend, in: directory) { daos, _ in
        for index in calls { try TrackerWrites.apply(index, oneSpelling: oneSpelling(backend), to: daos) }
    }
}
