import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

extension TemporaryDirectory {
    /// The environment's directory inside it.
    var store: URL { url.appendingPathComponent("store", isDirectory: true) }
}

/// Runs `body` with a temporary directory (``TemporaryDirectory``, which
/// names the environment's directory inside it) that is removed afterwards.
func withStoreDirectory<T>(_ body: (TemporaryDirectory) throws -> T) throws -> T {
    let directory = try TemporaryDirectory("lmdb-tests")
    defer { directory.remove() }
    return try body(directory)
}

/// The dialogs of a small seeded workload, as records.
func dialogRecords(dialogs: Int, messages: Int) throws -> [DialogRecord] {
    let data = WorkloadData(dialogs: dialogs, messagesPerDialog: messages, seed: 42)
    let translator = DialogTranslator()
    return try data.initial.map { try translator.record(from: $0) }
}

/// The error `body` throws, as a `StorageError`.
func storageError(_ body: () throws -> Void) -> StorageError? {
    do {
        try body()
        return nil
    } catch let error as StorageError {
        return error
    } catch {
        Issue.record("expected a StorageError, got \(error)")
        return nil
    }
}

let sampleUsers: [UserRecord] = [
    UserRecord(id: "ada", name: "Ada", bio: "first programmer", email: "ada@example.com",
               birthDate: Date(timeIntervalSinceReferenceDate: -5_000_000_000.123), gender: .female),
    UserRecord(id: "bob", name: "Bob", bio: nil, email: nil, birthDate: nil, gender: nil),
    UserRecord(id: "", name: "Empty key", bio: "", email: "e@example.com", birthDate: nil, gender: .other),
    UserRecord(id: "zoë\u{0}x", name: "Zoë 🚀", bio: "naïve façade", email: "ada@example.com",
               birthDate: Date(timeIntervalSinceReferenceDate: 0.1), gender: .nonBinary),
]
