import DAOCore
import Foundation
import PostgresStorage
import Synchronization

/// The PostgreSQL server the tests run against: `DAO_POSTGRES_URL`, or none
/// (the PostgreSQL backend is then left out of ``allBackends``).
///
/// Each test directory gets a schema of its own, named after the
/// directory, so that opening the same directory again opens the same
/// store; the schema is dropped when the directory is removed.
public enum PostgresTestServer {
    public static let url: String? = {
        guard let url = ProcessInfo.processInfo.environment["DAO_POSTGRES_URL"], !url.isEmpty else { return nil }
        return url
    }()

    /// The schemas opened, by the directory they stand for.
    private static let schemas = Mutex<[String: String]>([:])

    private static let cleanup: Void = TemporaryDirectory.whenRemoved { directory in
        let prefix = directory.standardizedFileURL.path
        let removed = schemas.withLock { schemas -> [String] in
            let under = schemas.filter { $0.key == prefix || $0.key.hasPrefix(prefix + "/") }
            for key in under.keys { schemas[key] = nil }
            return Array(under.values)
        }
        for schema in removed {
            do {
                try PostgresStore(configuration(schema: schema, durability: .none)).removeSchema()
            } catch {
                // Test clean-up: a schema left behind in a throwaway cluster is harmless, but say so.
                print("PostgresTestServer: schema \(schema) was not dropped: \(error)")
            }
        }
    }

    /// The name of the schema that stands for `directory`.
    public static func schema(for directory: URL) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in directory.standardizedFileURL.path.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return "dao_test_" + String(hash, radix: 16)
    }

    public static func configuration(schema: String, durability: Durability) throws -> PostgresConfiguration {
        guard let url else {
            throw StorageError(.invalidArgument, .open, message: "DAO_POSTGRES_URL is not set")
        }
        var configuration = try PostgresConfiguration(url: url)
        configuration.schema = schema
        configuration.durability = durability
        configuration.poolSize = 3
        return configuration
    }

    /// Opens the store of `directory`.
    public static func open(_ directory: URL, _ durability: Durability) throws -> PostgresStore {
        _ = cleanup
        let schema = schema(for: directory)
        schemas.withLock { $0[directory.standardizedFileURL.path] = schema }
        return try PostgresStore(configuration(schema: schema, durability: durability))
    }

    /// Drops the schema of `directory`: what a process that did not open the
    /// store (the crash tests, whose stores a child process opened) calls
    /// when it removes the directory.
    public static func drop(_ directory: URL) throws {
        try PostgresStore(configuration(schema: schema(for: directory), durability: .none)).removeSchema()
    }
}
