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

/// Rewrites every `#id` database of `env` as layout version 1 kept it (one
/// entry per child: its key → its storage key) and stamps it version 1, as
/// a store written before the runs of layout version 2. Only the databases
/// `env` has opened are known to it: open the storages first.
func writeLayoutVersion1(_ env: LMDBEnvironment) throws {
    // Handles are opened before the write transaction (opening one takes
    // the write lock).
    let names = try env.entryCounts().keys.filter { $0.hasSuffix("#id") }
    let databases = try names.map { name in
        (try #require(try env.database(name)), try #require(try env.database(String(name.dropLast(3)))))
    }
    let metadata = try #require(try env.database(LMDBEnvironment.metadataDatabase))
    try env.write(.persist) { txn in
        for (byId, main) in databases {
            var runs: [IdRun] = []
            try txn.scan(byId, prefix: []) { key, value in
                runs.append(try #require(IdRun(key: key, value: value)))
                return true
            }
            var entries: [([UInt8], [UInt8])] = []
            for run in runs {
                try txn.scan(main, prefix: run.parent) { key, _ in
                    let child = [UInt8](key.dropFirst(run.parent.count))
                    if compareKeys(child, run.first) >= 0, compareKeys(child, run.last) <= 0 {
                        entries.append((child, [UInt8](key)))
                    }
                    return true
                }
            }
            try txn.empty(byId)
            for (key, value) in entries { try txn.put(byId, key, value) }
        }
        try txn.put(metadata, LayoutStamp.key, LayoutStamp.encoded(version: 1))
    }
}
