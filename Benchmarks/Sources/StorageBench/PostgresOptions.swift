import ArgumentParser
import Foundation
import StorageBenchKit
import StorageBenchReference

/// `--postgres-url`: the PostgreSQL server of the run, handed to its worker
/// processes through `DAO_POSTGRES_URL`.
enum PostgresURLOption {
    static let help = ArgumentHelp(
        "A PostgreSQL server, postgres://user[:password]@host[:port]/database, to run the server backends on (default: DAO_POSTGRES_URL; without either they are not offered). Each run makes a schema of its own there and drops it, and nothing else, at its end."
    )

    /// Sets `DAO_POSTGRES_URL` to `url` when one is given (for this process
    /// and the workers it starts), then checks the URL in force.
    /// - Throws: ``ConfigurationError`` when it is malformed.
    static func apply(_ url: String?) throws {
        if let url {
            _ = try PostgresServer(url: url)
            setenv(PostgresServer.environmentVariable, url, 1)
        }
        _ = try PostgresServer.fromEnvironment()
    }
}
