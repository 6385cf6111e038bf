import DAOCore
import FileStorage
import Foundation
import LMDBStorage
import PostgresStorage
import SQLiteStorage

#if canImport(Glibc)
import Glibc
#endif

/// One backend under test: its name, how to open its store in a directory,
/// and the files it keeps there. Every test target and both helper
/// processes take their backends from ``allBackends`` and ``localBackends``.
public struct TestBackend: Sendable, CustomStringConvertible {
    /// The name the tests and the helpers' command lines use.
    public let name: String
    /// The files the store keeps in its directory, the one that holds its
    /// data first (the file stores also keep the documents their manifest
    /// names; the PostgreSQL store keeps none: its data is the server's).
    public let files: [String]
    /// The files the engine may create beside them while it works (SQLite's
    /// journal and WAL files, the file store's manifest temporary file of
    /// this process).
    public let sideFiles: [String]
    private let opener: @Sendable (_ directory: URL, _ durability: Durability) throws -> any MigratableStore

    init(
        _ name: String, files: [String], sideFiles: [String] = [],
        open: @escaping @Sendable (_ directory: URL, _ durability: Durability) throws -> any MigratableStore
    ) {
        self.name = name
        self.files = files
        self.sideFiles = sideFiles
        self.opener = open
    }

    /// Opens the backend's store in `directory`.
    public func open(_ directory: URL, _ durability: Durability = .full) throws -> any MigratableStore {
        try opener(directory, durability)
    }

    public var description: String { name }

    /// Whether the backend is a file store (JSON or property list), which
    /// keeps the records it was given in memory until it is opened again.
    public var isFileStore: Bool { name == "json" || name == "plist" }

    /// Whether the backend stores a date of `-0.0` seconds (the
    /// property-list store refuses it: its format stores equal dates once
    /// per document and has one spelling of a date; docs/SEMANTICS.md).
    public var keepsNegativeZeroDates: Bool { name != "plist" }

    /// Whether a NaN comes back with its sign and payload (the file stores,
    /// once opened again, and SQLite give back the canonical NaN; docs/SEMANTICS.md).
    public var keepsNaNPayloads: Bool { name == "lmdb" }
}

/// The four backends that keep their store in files of a directory: one
/// line each.
public let localBackends: [TestBackend] = [
    TestBackend("json", files: ["manifest.json"], sideFiles: [".manifest.json.\(getpid()).tmp"]) {
        try FileStore(directory: $0, format: .json, durability: $1)
    },
    TestBackend("plist", files: ["manifest.json"], sideFiles: [".manifest.json.\(getpid()).tmp"]) {
        try FileStore(directory: $0, format: .propertyList, durability: $1)
    },
    TestBackend("sqlite", files: ["store.sqlite"], sideFiles: ["store.sqlite-wal", "store.sqlite-shm", "store.sqlite-journal"]) {
        try SQLiteDatabase(path: $0.appending(path: "store.sqlite"), durability: $1)
    },
    TestBackend("lmdb", files: ["data.mdb", "lock.mdb"]) { try LMDBEnvironment(directory: $0, durability: $1) },
]

/// Every backend: ``localBackends``, and PostgreSQL when `DAO_POSTGRES_URL`
/// names a server (`scripts/setup.sh postgres` starts one), with a schema of
/// its own per directory (``PostgresTestServer``).
public let allBackends: [TestBackend] =
    localBackends
    + (PostgresTestServer.url == nil ? [] : [TestBackend("postgres", files: []) { try PostgresTestServer.open($0, $1) }])

/// The backend of ``allBackends`` named `name`, if there is one.
public func testBackend(named name: String) -> TestBackend? {
    allBackends.first { $0.name == name }
}
