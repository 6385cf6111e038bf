import Foundation
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
        let result = try HelperProcess.run(["drop", "postgres", directory.path])
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
