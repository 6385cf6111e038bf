import DAOCore
import FileStorage
import Foundation
import LMDBStorage
import PostgresStorage
import SQLiteStorage
import Testing

/// One adapter under test: how to open its store in a directory.
struct Backend: Sendable, CustomTestStringConvertible {
    let name: String
    let open: @Sendable (_ directory: URL, _ durability: Durability) throws -> any Store

    init(_ name: String, open: @escaping @Sendable (_ directory: URL, _ durability: Durability) throws -> any Store) {
        self.name = name
        self.open = open
    }

    var testDescription: String { name }

    /// Whether the backend stores a date of `-0.0` seconds (the
    /// property-list store refuses it: its format stores equal dates once
    /// per document and has one spelling of a date; docs/SEMANTICS.md).
    var keepsNegativeZeroDates: Bool { name != "plist" }

    /// Whether a NaN comes back with its sign and payload (the file stores,
    /// once opened again, and SQLite give back the canonical NaN; docs/SEMANTICS.md).
    var keepsNaNPayloads: Bool { name == "lmdb" }

    /// Whether the backend is a file store (JSON or property list), which
    /// keeps the records it was given in memory until it is opened again.
    var isFileStore: Bool { name == "json" || name == "plist" }
}

/// Every backend the conformance suite runs against: one line each. The
/// PostgreSQL backend runs when `DAO_POSTGRES_URL` names a server
/// (`scripts/setup.sh postgres` starts one), with a schema of its own per
/// directory.
let allBackends: [Backend] = [
    Backend("json") { try FileStore(directory: $0, format: .json, durability: $1) },
    Backend("plist") { try FileStore(directory: $0, format: .propertyList, durability: $1) },
    Backend("sqlite") { try SQLiteDatabase(path: $0.appending(path: "store.sqlite"), durability: $1) },
    Backend("lmdb") { try LMDBEnvironment(directory: $0, durability: $1) },
] + (PostgresTestServer.url == nil ? [] : [Backend("postgres") { try PostgresTestServer.open($0, $1) }])
