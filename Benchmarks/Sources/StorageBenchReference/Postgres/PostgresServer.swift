import DAOCore
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import StorageBenchKit
import Synchronization

/// A PostgreSQL server the harness measures against, from a URL
/// (`postgres://user[:password]@host[:port]/database`, `?sslmode=disable`
/// the only mode the references speak), and what every reference on it shares:
/// a schema of each subject's own, the session settings of a durability, and
/// the settings in force read back for the report.
public struct PostgresServer: Sendable {
    /// The URL as given (its password, if any, is never printed).
    public let url: String
    /// The host name or address.
    public let host: String
    /// The TCP port.
    public let port: Int
    /// The role to log in as.
    public let username: String
    /// The password, or `nil`.
    public let password: String?
    /// The database.
    public let database: String

    /// The connections a load subject's pool keeps at most: as many as the
    /// largest client count of `make bench-load`'s sweep, so that no client
    /// waits for a connection.
    public static let poolSize = 8

    /// The server of `url`.
    /// - Throws: ``ConfigurationError`` naming what is wrong with the URL.
    public init(url: String) throws {
        guard let components = URLComponents(string: url),
            components.scheme == "postgres" || components.scheme == "postgresql"
        else {
            throw ConfigurationError("the PostgreSQL URL '\(Self.redacted(url))' is not postgres://user@host:port/database")
        }
        guard let host = components.host, !host.isEmpty else {
            throw ConfigurationError("the PostgreSQL URL '\(Self.redacted(url))' names no host")
        }
        guard let user = components.user, !user.isEmpty else {
            throw ConfigurationError("the PostgreSQL URL '\(Self.redacted(url))' names no user")
        }
        for item in components.queryItems ?? [] {
            guard item.name == "sslmode", item.value == "disable" else {
                throw ConfigurationError(
                    "the PostgreSQL URL '\(Self.redacted(url))': the harness's references speak only sslmode=disable, not \(item.name)=\(item.value ?? "")"
                )
            }
        }
        self.url = url
        self.host = host
        port = components.port ?? 5432
        // URLComponents hands out user, password and path decoded.
        username = user
        password = components.password
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.isEmpty ? user : path
    }

    /// The server named by `DAO_POSTGRES_URL`, or `nil` when it is unset or empty.
    /// - Throws: ``ConfigurationError`` when the URL is malformed.
    public static func fromEnvironment() throws -> PostgresServer? {
        guard let url = ProcessInfo.processInfo.environment[environmentVariable], !url.isEmpty else { return nil }
        return try PostgresServer(url: url)
    }

    /// The variable that names the server to the harness, its worker processes and the tests.
    public static let environmentVariable = "DAO_POSTGRES_URL"

    /// `host:port/database`, for messages.
    public var address: String { "\(host):\(port)/\(database)" }

    /// `url` with its password replaced by `***`.
    static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? url
    }

    /// A schema name no other run uses: `storage_bench_` and 16 random hex digits.
    static func freshSchemaName() -> String {
        "storage_bench_" + String(UInt64.random(in: .min ... .max), radix: 16).leftPadded(to: 16)
    }

    /// The session settings every connection of a subject starts with: its
    /// schema first on the search path, and `synchronous_commit` on
    /// (``Durability/full``) or off (``Durability/none``).
    static func startupParameters(schema: String, durability: Durability) -> [(String, String)] {
        [("search_path", schema), ("synchronous_commit", durability == .full ? "on" : "off")]
    }

    /// A connection configuration with the startup parameters of `schema` and `durability`.
    func connectionConfiguration(schema: String, durability: Durability) -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: .disable)
        configuration.options.additionalStartupParameters = Self.startupParameters(schema: schema, durability: durability)
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    /// A pool configuration with the startup parameters of `schema` and `durability`.
    func clientConfiguration(schema: String, durability: Durability, poolSize: Int) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: .disable)
        configuration.options.additionalStartupParameters = Self.startupParameters(schema: schema, durability: durability)
        configuration.options.maximumConnections = poolSize
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    /// The settings in force on a connection, as one line: server version,
    /// `synchronous_commit`, `fsync`, `shared_buffers`, the schema and the pool.
    static func settings(_ connection: PostgresConnection, pool: String, logger: Logger) async throws -> String {
        let rows = try await connection.query(
            """
            SELECT current_setting('server_version'), current_setting('synchronous_commit'),
              current_setting('fsync'), current_setting('shared_buffers'), current_schema()
            """, logger: logger)
        for try await (version, synchronous, fsync, buffers, schema) in rows.decode(
            (String, String, String, String, String).self)
        {
            return "postgresql=\(version) synchronous_commit=\(synchronous) fsync=\(fsync) shared_buffers=\(buffers) "
                + "schema=\(schema) pool=\(pool)"
        }
        throw ReferenceError(engine: "postgres", operation: "read the settings", code: 0, message: "no row")
    }

    /// The logger of the references: silent (postgres-nio logs nothing below `.info`
    /// on its own, and the harness prints its own progress).
    static let logger = Logger(label: "storage-bench.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

extension ReferenceError {
    /// A `postgres` error for `operation`: the server's SQLSTATE and message when
    /// the server sent them, else postgres-nio's own code.
    static func postgres(_ operation: String, _ error: any Error) -> ReferenceError {
        if let error = error as? ReferenceError { return error }
        if let error = error as? PSQLError {
            if let info = error.serverInfo {
                let state = info[.sqlState] ?? "?"
                return ReferenceError(
                    engine: "postgres", operation: operation, code: 0,
                    message: "SQLSTATE \(state): \(info[.message] ?? "")", sql: error.query?.sql)
            }
            return ReferenceError(
                engine: "postgres", operation: operation, code: 0,
                message: "\(error.code)\(error.underlying.map { ": \($0)" } ?? "")", sql: error.query?.sql)
        }
        if let error = error as? PostgresTransactionError {
            let inner = error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError
            if let inner { return postgres(operation, inner) }
        }
        return ReferenceError(engine: "postgres", operation: operation, code: 0, message: "\(error)")
    }
}

/// One NIO event loop as the executor of the tasks that use a connection on
/// it: a task that prefers it (SE-0417) runs its code on the loop's thread,
/// so that sending a query, and resuming when its rows come, take no hop
/// between threads.
final class EventLoopExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// The synchronous form of the references' calls: the calling thread (the
/// harness's, never one of Swift's cooperative pool) waits while a task on
/// the connection's event loop does the work.
struct BlockingBridge: Sendable {
    let executor: EventLoopExecutor

    /// Runs `body` in a task on the event loop, and waits for its result.
    @discardableResult
    func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<T, any Error>?>(nil)
        Task(executorPreference: executor) {
            let outcome: Result<T, any Error>
            do {
                outcome = .success(try await body())
            } catch {
                outcome = .failure(error)
            }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        guard let outcome = result.withLock({ $0 }) else {
            throw ReferenceError(engine: "postgres", operation: "wait", code: 0, message: "the task ended without a result")
        }
        return try outcome.get()
    }
}
