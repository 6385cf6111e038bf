import Foundation
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// Hears the commits of other stores on the same schema, in this process or
/// another: every write transaction of a store sends `pg_notify` on the
/// schema's channel with the store's token, and this listener, on a
/// connection of its own, counts the notifications that carry another token.
/// The count is the store's version source (``CommitBroadcaster/setVersionSource(_:)``),
/// read while an observer polls: reading it is an atomic load.
///
/// The connection is opened when the count is first read, and opened again
/// after it closed (a restarted server), without waiting, at most every half
/// second. Each time it starts listening the count moves by one, since
/// commits made before were not heard; an observer then reads again, and
/// rides out a server restart rather than meeting the error of a read made
/// while the server was away.
final class CommitListener: Sendable {
    /// The channel of the store's schema (a name `LISTEN` takes as it is).
    let channel: String
    /// This store's token: its own commits are told to its observers directly.
    let token: String
    private let configuration: PostgresConnection.Configuration
    private let heard = Atomic<UInt64>(0)
    private let state = Mutex(State.idle(nil))

    private enum State {
        /// Not connected; the next try not before the instant.
        case idle(ContinuousClock.Instant?)
        case connecting
        case listening(PostgresConnection)
        case closed
    }

    init(schema: String, configuration: PostgresConnection.Configuration) {
        channel = Self.channel(of: schema)
        token = UUID().uuidString
        self.configuration = configuration
    }

    /// A store released without ``PostgresStore/close()`` leaves no session open.
    deinit { close() }

    /// `dao_` and a hash of the schema's name (``fnv1a(_:)``, fixed across runs).
    static func channel(of schema: String) -> String {
        "dao_" + String(fnv1a(schema), radix: 16)
    }

    /// The number of other stores' commits heard, and of the times the
    /// listener started listening.
    func version() -> UInt64 {
        let now = ContinuousClock.now
        let start = state.withLock { state -> Bool in
            switch state {
            case .idle(let notBefore):
                if let notBefore, now < notBefore { return false }
                state = .connecting
                return true
            case .listening(let connection) where connection.isClosed:
                state = .connecting
                return true
            case .connecting, .listening, .closed:
                return false
            }
        }
        if start { connect() }
        return heard.load(ordering: .acquiring)
    }

    /// Opens the connection and listens, without waiting for either.
    private func connect() {
        let future = PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration, id: 0, logger: poolLogger)
        future.whenComplete { [self] result in
            switch result {
            case .failure:
                state.withLock { if case .connecting = $0 { $0 = .idle(.now + .milliseconds(500)) } }
            case .success(let connection):
                let token = self.token
                connection.addListener(channel: channel) { [self] _, notification in
                    if notification.payload != token { heard.add(1, ordering: .releasing) }
                }
                // The driver sends LISTEN before this query: once it answers, the connection listens.
                connection.query("SELECT 1", logger: poolLogger).whenComplete { [self] answer in
                    let keep = state.withLock { state -> Bool in
                        guard case .connecting = state else { return false }
                        if case .success = answer {
                            state = .listening(connection)
                        } else {
                            state = .idle(.now + .milliseconds(500))
                        }
                        return true
                    }
                    if !keep || answer.isFailure {
                        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
                    } else {
                        // Commits before now went unheard.
                        heard.add(1, ordering: .releasing)
                    }
                }
            }
        }
    }

    /// Closes the connection; the count is not read again.
    func close() {
        let connection = state.withLock { state -> PostgresConnection? in
            defer { state = .closed }
            if case .listening(let connection) = state { return connection }
            return nil
        }
        // Kept until the close completes (postgres-nio asserts a connection is closed when it goes).
        connection?.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }
}

extension Result {
    fileprivate var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}
