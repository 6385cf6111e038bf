import DAOCore
import Foundation
import NIOCore
import NIOSSL
import PostgresNIO

/// How a ``PostgresStore`` reaches its server and what it asks of it.
///
/// ```swift
/// var configuration = try PostgresConfiguration(url: "postgres://app:secret@db.example.com:5432/app")
/// configuration.schema = "inventory"
/// configuration.poolSize = 8
/// let database = try PostgresStore(configuration)
/// ```
public struct PostgresConfiguration: Sendable {
    /// How the connections use TLS.
    public enum TLSMode: String, Sendable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it, plain TCP otherwise.
        case prefer
        /// TLS, or no connection.
        case require
    }

    /// The isolation level of every transaction the store runs.
    public enum IsolationLevel: String, Sendable {
        /// `READ COMMITTED`, PostgreSQL's default.
        case readCommitted = "READ COMMITTED"
        /// `REPEATABLE READ`.
        case repeatableRead = "REPEATABLE READ"
        /// `SERIALIZABLE`: conflicting transactions fail with SQLSTATE 40001
        /// and are run again (``PostgresConfiguration/retries``).
        case serializable = "SERIALIZABLE"
    }

    /// The server's host name or address.
    public var host: String
    /// The server's port.
    public var port: Int
    /// The role to log in as.
    public var user: String
    /// Its password, if the server asks for one.
    public var password: String?
    /// The database.
    public var database: String
    /// The schema that holds the store's tables (created when missing). Several
    /// stores share one database under different schemas.
    public var schema: String = "public"
    /// TLS: ``TLSMode/disable`` unless the URL says `sslmode=prefer` or `require`.
    public var tls: TLSMode = .disable
    /// How many connections the store keeps open at most (at least 1).
    public var poolSize: Int = 4
    /// The isolation level of every transaction. At `readCommitted`, a read
    /// of several statements (records with children) still runs at
    /// `REPEATABLE READ`, so that it sees one committed state.
    public var isolation: IsolationLevel = .readCommitted
    /// Whether each write transaction tells other stores on the schema that
    /// it committed (`pg_notify` on the schema's channel, one more statement
    /// in the transaction's round trip), so that their observers hear
    /// commits made in other processes (see ``PostgresStore``). Off, a
    /// store's observers still hear its own commits. Turn it off on servers
    /// without `pg_notify` (CockroachDB, YugabyteDB).
    public var notifiesCommits = true
    /// How long a connection attempt may take before open (or a call that
    /// needs a new connection) fails with ``StorageError/Kind/io``.
    public var connectTimeout: Duration = .seconds(10)
    /// The server's `statement_timeout` for the store's connections: a
    /// statement that runs longer fails with ``StorageError/Kind/busy``
    /// (`nil`: the server's own setting).
    public var statementTimeout: Duration?
    /// How often a transaction that failed with SQLSTATE 40001
    /// (serialization failure) or 40P01 (deadlock) is run again, with a
    /// growing, jittered pause between tries, before its error is thrown.
    /// The default, 30, lets a call outlast heavy contention: four writers
    /// upserting the same rows at `SERIALIZABLE` exhausted 8 tries in about
    /// one run of 100 calls in 25 (the pauses cap at 200 ms, so 30 tries
    /// wait at most about 5 s in all).
    public var retries: Int = 30
    /// How many rows a `persist` call writes with one statement a table, at
    /// most: more are written in batches of about this many rows, one after
    /// another in the call's transaction (a record goes whole into one
    /// batch, with every child it holds, so a batch can be larger). Each
    /// batch is encoded as one array a column; the bound keeps the memory a
    /// call holds in proportion to it, not to the number of records handed over.
    /// A migration that rewrites a table writes its rows back in statements
    /// of this many rows too.
    public var rowsPerStatement: Int = 4096
    /// The most bytes a statement's parameters may come to
    /// (``ServerConnection/messageLimit``, what PostgreSQL reads in one
    /// message); lowered by tests.
    var messageLimit = ServerConnection.messageLimit
    /// `synchronous_commit` for the store's sessions: `on` for
    /// ``Durability/full``, `off` for ``Durability/none`` (a crash of the
    /// server may lose the last commits, never leave one half-written).
    public var durability: Durability = .full

    /// A configuration from its parts.
    public init(host: String, port: Int = 5432, user: String, password: String? = nil, database: String) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
    }

    /// A configuration from a URL `postgres://user[:password]@host[:port]/database`
    /// (`postgresql://` too), with optional query items `sslmode`
    /// (`disable`, `prefer`, `require`), `schema`, `pool_size`,
    /// `connect_timeout` and `statement_timeout` (seconds).
    ///
    /// - Throws: ``StorageError/Kind/invalidArgument`` naming what is wrong.
    public init(url string: String) throws {
        func refuse(_ message: String) -> StorageError {
            StorageError(.invalidArgument, .open, path: Self.redacted(string), message: message)
        }
        guard let components = URLComponents(string: string), let scheme = components.scheme,
            scheme == "postgres" || scheme == "postgresql"
        else { throw refuse("not a postgres:// URL") }
        guard let host = components.host, !host.isEmpty else { throw refuse("the URL names no host") }
        guard let user = components.user, !user.isEmpty else { throw refuse("the URL names no user") }
        let database = String(components.path.drop { $0 == "/" })
        self.init(
            host: host, port: components.port ?? 5432, user: user.removingPercentEncoding ?? user,
            password: components.password.map { $0.removingPercentEncoding ?? $0 },
            database: database.isEmpty ? user : database)
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else { throw refuse("sslmode '\(value)' is not disable, prefer or require") }
                tls = mode
            case "schema":
                schema = value
            case "pool_size":
                guard let size = Int(value), size > 0 else { throw refuse("pool_size '\(value)' is not a positive integer") }
                poolSize = size
            case "connect_timeout":
                guard let seconds = Double(value), seconds > 0 else { throw refuse("connect_timeout '\(value)' is not a number of seconds") }
                connectTimeout = .milliseconds(Int64(seconds * 1000))
            case "statement_timeout":
                guard let seconds = Double(value), seconds > 0 else { throw refuse("statement_timeout '\(value)' is not a number of seconds") }
                statementTimeout = .milliseconds(Int64(seconds * 1000))
            default:
                throw refuse("unknown query item '\(item.name)'")
            }
        }
    }

    /// `host:port`, as errors name the server.
    public var address: String { "\(host):\(port)" }

    /// The URL without its password, as errors and settings print it.
    public var description: String { "postgres://\(user)@\(address)/\(database)?schema=\(schema)" }

    /// `string` with the password of a URL replaced by `***`.
    static func redacted(_ string: String) -> String {
        guard var components = URLComponents(string: string), components.password != nil else { return string }
        components.password = "***"
        return components.string ?? string
    }

    /// The connection configuration postgres-nio takes.
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let tlsConfiguration: PostgresConnection.Configuration.TLS
        switch tls {
        case .disable:
            tlsConfiguration = .disable
        case .prefer, .require:
            let context: NIOSSLContext
            do {
                context = try NIOSSLContext(configuration: .makeClientConfiguration())
            } catch {
                throw StorageError(.io, .open, path: description, message: "TLS could not be set up", underlying: error)
            }
            tlsConfiguration = tls == .prefer ? .prefer(context) : .require(context)
        }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tlsConfiguration)
        let (seconds, attoseconds) = connectTimeout.components
        configuration.options.connectTimeout = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        var parameters: [(String, String)] = [
            ("synchronous_commit", durability == .full ? "on" : "off"),
            ("TimeZone", "UTC"),
            // A call of one statement runs without BEGIN, at the session's level.
            ("default_transaction_isolation", isolation.rawValue.lowercased()),
        ]
        if let statementTimeout {
            let (s, a) = statementTimeout.components
            parameters.append(("statement_timeout", "\(max(1, s * 1000 + a / 1_000_000_000_000_000))"))
        }
        configuration.options.additionalStartupParameters = parameters
        return configuration
    }
}
