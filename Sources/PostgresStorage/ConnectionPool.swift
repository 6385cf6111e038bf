import DAOCore
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// One open connection of the pool, used by one call at a time: its
/// statements, prepared on the server once per connection and text
/// (`PREPARE`d under a generated name, kept by their SQL).
///
/// A call's statements are pipelined: ``send(_:_:)`` writes a statement
/// without waiting for its answer (the driver runs the statements of a
/// connection one after another, in the order they were sent), and
/// ``collect(ending:)`` waits once for every answer. A transaction's
/// `BEGIN` goes out with its first statement, its `COMMIT` with its last
/// (``collect(ending:)``), so a call whose statements need no answer from
/// one another waits for the server once. A statement that fails aborts the
/// transaction on the server: the statements after it fail, `COMMIT` rolls
/// back, and the first failure, in the order sent, is the one thrown.
///
/// `@unchecked Sendable`: the pool hands a connection to one caller at a
/// time, and only that caller touches its statement cache and its call's state.
final class ServerConnection: @unchecked Sendable {
    let connection: PostgresConnection
    private var statements: [String: PostgresNIO.PreparedQuery] = [:]
    /// The pool's generation when it was opened: a migration that changes
    /// tables retires every connection opened before it (their prepared
    /// statements name the old columns).
    let generation: Int
    /// Set when a call on it failed in a way that leaves it unusable (the
    /// server went away): the pool closes it instead of keeping it.
    var isBroken = false

    /// How to fail the call waiting on this connection, if one is.
    private let pending = PendingCall()

    /// The `BEGIN` of the call's transaction, sent before its first statement.
    private var pendingBegin: String?
    /// Whether the call's `BEGIN` was sent and its transaction not ended.
    private(set) var inTransaction = false
    /// The statements sent and not yet waited for, in order; `control` for
    /// `BEGIN`, `COMMIT` and the call's notice, whose answers carry no rows
    /// for the caller.
    private var sent: [(answer: EventLoopFuture<[PostgresRow]>, control: Bool)] = []
    /// The statement that tells other stores of the call's commit, sent
    /// with the first statements the call waits for (in its transaction, so
    /// heard at the commit; after a lone statement, so heard once it
    /// committed), unless the call's one statement carries it
    /// (``takeNotice()``). Its failure is not the call's: a lone statement
    /// has committed by then, and a transaction's `COMMIT` fails after it.
    private var notice: (sql: String, binds: [PostgresData])?
    /// The index in `sent` of the notice, once sent.
    private var noticeIndex: Int?
    /// Whether the server answered anything of the current call: a
    /// connection found dead before that was dead before the call began.
    private var callAnswered = false
    /// Whether the current call sent a statement.
    private(set) var hasSent = false

    /// The most bytes one message of a statement's parameters may hold
    /// (``PostgresConfiguration/messageLimit``).
    let messageLimit: Int

    init(_ connection: PostgresConnection, generation: Int, messageLimit: Int = ServerConnection.messageLimit) {
        self.connection = connection
        self.generation = generation
        self.messageLimit = messageLimit
        // The driver drops a statement written to a connection that closed
        // meanwhile (a restarted server) without ever completing its future:
        // the call waiting on it fails when the connection closes instead.
        connection.closeFuture.whenComplete { [pending] _ in pending.fail(PostgresError.connectionClosed) }
    }

    // MARK: A call

    /// Starts a call: its first statement is preceded by `begin` (a
    /// transaction), or runs on its own when `begin` is `nil`. `notice`: a
    /// statement that goes after the call's first statements when it sends any.
    func startCall(begin: String?, notice: (sql: String, binds: [PostgresData])? = nil) {
        pendingBegin = begin
        self.notice = notice
        noticeIndex = nil
        inTransaction = false
        sent = []
        callAnswered = false
        hasSent = false
    }

    /// Sends `sql` with `binds` as a statement prepared on this connection
    /// (prepared the first time it runs here), without waiting for its answer.
    /// - Throws: the driver's error, or ``StaleConnection``.
    func send(_ sql: String, _ binds: [PostgresData]) throws {
        try checkSize(of: binds)
        let statement = try prepared(sql)
        try prepareNotice()
        try beginIfPending()
        hasSent = true
        sent.append((statement.execute(binds), false))
    }

    /// Sends the call's only statement: outside a transaction when nothing
    /// was sent before it (one statement is atomic on its own), else as
    /// ``send(_:_:)``.
    func sendAlone(_ sql: String, _ binds: [PostgresData]) throws {
        if sent.isEmpty, !inTransaction { pendingBegin = nil }
        try send(sql, binds)
    }

    /// The most bytes PostgreSQL reads in one message from a client
    /// (`PQ_LARGE_MESSAGE_LIMIT`, 1 GiB less 2 bytes): a longer one makes
    /// the server close the connection, and the driver traps on a parameter
    /// of 2 GiB or more.
    static let messageLimit = (1 << 30) - 2

    /// Refuses, before anything of it is sent, a statement whose parameters
    /// make its `Bind` message longer than ``messageLimit`` (the message's
    /// own fields counted generously).
    /// - Throws: ``OversizedStatement``.
    private func checkSize(of binds: [PostgresData]) throws {
        var bytes = 128
        for bind in binds { bytes += 6 + (bind.value?.readableBytes ?? 0) }
        if bytes > messageLimit { throw OversizedStatement(bytes: bytes, limit: messageLimit) }
    }

    /// The parameters of the call's notice, which the caller's one
    /// statement then sends itself (`pg_notify` with them as a part of it,
    /// so heard when that statement commits): the notice is no longer sent
    /// on its own. `nil` when the call sends none, or sent something already.
    func takeNotice() -> [PostgresData]? {
        guard let notice, !hasSent else { return nil }
        self.notice = nil
        return notice.binds
    }

    /// Sends `sql` unprepared (DDL, catalogue queries), without waiting.
    func sendOnce(_ sql: String, _ binds: [PostgresData] = []) throws {
        try checkSize(of: binds)
        try prepareNotice()
        try beginIfPending()
        var bindings = PostgresBindings(capacity: binds.count)
        for bind in binds { bindings.append(bind) }
        hasSent = true
        sent.append((connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: poolLogger).map(\.rows), false))
    }

    /// Waits for every statement sent and returns the rows of each (but
    /// `BEGIN` and `COMMIT`), in the order sent. `ending`: sends the
    /// transaction's `COMMIT` first, so that it goes with them.
    /// - Throws: the first failure in the order sent; ``StaleConnection``
    ///   when the connection was found dead before the server answered
    ///   anything of the call.
    func collect(ending: Bool = false) throws -> [[PostgresRow]] {
        if let notice, hasSent {
            // Prepared before the call's first statement (``prepareNotice()``).
            let statement = try prepared(notice.sql)
            noticeIndex = sent.count
            sent.append((statement.execute(notice.binds), true))
            self.notice = nil
        }
        if ending, inTransaction {
            let commit = try prepared("COMMIT")
            sent.append((commit.execute([]), true))
            inTransaction = false
        }
        let batch = sent
        sent = []
        guard let first = batch.first else { return [] }
        let answers: [Result<[PostgresRow], any Error>]
        do {
            answers = try wait(EventLoopFuture.whenAllComplete(batch.map(\.answer), on: first.answer.eventLoop))
        } catch {
            throw stale(error)
        }
        var rows: [[PostgresRow]] = []
        rows.reserveCapacity(batch.count)
        let notice = noticeIndex
        noticeIndex = nil
        for (index, (answer, statement)) in zip(answers, batch).enumerated() {
            if index == notice, case .failure(let error) = answer, !PostgresErrors.isConnectionLost(error) { continue }
            switch answer {
            case .success(let answered):
                callAnswered = true
                if !statement.control { rows.append(answered) }
            case .failure(let error):
                if PostgresErrors.isConnectionLost(error) {
                    isBroken = true
                    throw stale(error)
                }
                throw error
            }
        }
        return rows
    }

    /// Ends the call's transaction if one is open (`COMMIT`), after the
    /// statements sent.
    /// - Throws: as ``collect(ending:)``.
    func commit() throws {
        _ = try collect(ending: true)
    }

    /// Rolls the call's transaction back when one is open, after the
    /// statements sent, whose answers no longer matter. A connection that
    /// cannot roll back is marked broken.
    func rollback() {
        let open = inTransaction
        pendingBegin = nil
        inTransaction = false
        var batch = sent
        sent = []
        do {
            if open {
                let rollback = try prepared("ROLLBACK")
                batch.append((rollback.execute([]), true))
            }
            guard let first = batch.first else { return }
            let answers = try wait(EventLoopFuture.whenAllComplete(batch.map(\.answer), on: first.answer.eventLoop))
            if open, case .failure = answers.last { isBroken = true }
        } catch {
            isBroken = true
        }
    }

    /// `error`, or ``StaleConnection`` when it is the loss of a connection
    /// that answered nothing of this call.
    private func stale(_ error: any Error) -> any Error {
        guard isBroken || PostgresErrors.isConnectionLost(error) else { return error }
        isBroken = true
        return callAnswered ? error : StaleConnection(underlying: error)
    }

    /// Prepares the call's notice before its first statement is sent: in
    /// a transaction that failed, preparing it would fail too.
    private func prepareNotice() throws {
        guard let notice, !hasSent else { return }
        _ = try prepared(notice.sql)
    }

    private func beginIfPending() throws {
        guard let begin = pendingBegin else { return }
        // COMMIT and ROLLBACK are prepared with BEGIN, before the call sends
        // anything (a transaction that failed refuses to prepare anything else).
        let statement = try prepared(begin)
        _ = try prepared("COMMIT")
        _ = try prepared("ROLLBACK")
        pendingBegin = nil
        inTransaction = true
        sent.append((statement.execute([]), true))
    }

    private func prepared(_ sql: String) throws -> PostgresNIO.PreparedQuery {
        if let kept = statements[sql] { return kept }
        let statement: PostgresNIO.PreparedQuery
        do {
            statement = try wait(connection.prepare(query: sql))
        } catch {
            // A statement sent before it failed first (the transaction refuses the rest): that is the error.
            if !sent.isEmpty { _ = try collect() }
            throw stale(error)
        }
        callAnswered = true
        statements[sql] = statement
        return statement
    }

    // MARK: One statement, waited for

    /// The rows of `sql` run with `binds` as a prepared statement, after
    /// the statements sent before it. Blocks the calling thread until the
    /// server answers (the work runs on the connection's event loop).
    /// - Throws: the driver's error (see ``PostgresErrors``).
    func rows(_ sql: String, _ binds: [PostgresData] = []) throws -> [PostgresRow] {
        try send(sql, binds)
        return try collect().last ?? []
    }

    /// Runs `sql` (no parameters, no rows wanted), unprepared.
    func run(_ sql: String) throws {
        try sendOnce(sql)
        _ = try collect()
    }

    /// Runs `sql` once, without preparing it (DDL, catalogue queries).
    func once(_ sql: String, _ binds: [PostgresData] = []) throws -> [PostgresRow] {
        try sendOnce(sql, binds)
        return try collect().last ?? []
    }

    private func wait<T: Sendable>(_ future: EventLoopFuture<T>) throws -> T {
        let answer = future.eventLoop.makePromise(of: T.self)
        pending.set { answer.fail($0) }
        defer { pending.set(nil) }
        // Closed before the callback was set: it ran and found no call.
        if connection.isClosed { answer.fail(PostgresError.connectionClosed) }
        future.cascade(to: answer)
        do {
            return try answer.futureResult.wait()
        } catch {
            if PostgresErrors.isConnectionLost(error) { isBroken = true }
            throw error
        }
    }
}

/// A statement refused before it was sent: its parameters make a message
/// longer than the server reads (``ServerConnection/messageLimit``).
struct OversizedStatement: Error, CustomStringConvertible {
    let bytes: Int
    let limit: Int

    var description: String {
        "a statement's parameters come to \(bytes) bytes, more than the \(limit) one message to PostgreSQL may hold: "
            + "write fewer or smaller records a call, or lower PostgresConfiguration.rowsPerStatement"
    }
}

/// The one call waiting on a connection, failed when the connection closes.
final class PendingCall: Sendable {
    private let failure = Mutex<(@Sendable (any Error) -> Void)?>(nil)

    func set(_ fail: (@Sendable (any Error) -> Void)?) {
        failure.withLock { $0 = fail }
    }

    func fail(_ error: any Error) {
        let fail = failure.withLock { $0 }
        fail?(error)
    }
}

let poolLogger = Logger(label: "dao.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

/// The store's connections: at most ``PostgresConfiguration/poolSize`` open
/// at once, each lent to one call at a time. A call that finds none free
/// opens one (up to the size) or waits for one to come back, on its own
/// thread. A connection that lost its server is closed, not kept, so the
/// next call opens a new one: the pool reconnects by itself.
final class ConnectionPool: @unchecked Sendable {
    let configuration: PostgresConfiguration
    private let connectionConfiguration: PostgresConnection.Configuration
    private let group: any EventLoopGroup
    /// Guards every field below.
    private let condition = NSCondition()
    private var idle: [ServerConnection] = []
    private var openCount = 0
    private var nextID = 0
    private var generation = 0
    private var isClosed = false

    init(_ configuration: PostgresConfiguration) throws {
        self.configuration = configuration
        connectionConfiguration = try configuration.connectionConfiguration()
        group = MultiThreadedEventLoopGroup.singleton
    }

    /// A store released without ``close()`` leaves no session open on the server.
    deinit {
        for connection in idle { close(connection) }
    }

    /// Lends a connection to `body` and takes it back.
    /// - Throws: ``StorageError/Kind/closed`` after ``close()``;
    ///   ``StorageError/Kind/io`` when no connection can be opened; what
    ///   `body` throws.
    func withConnection<T>(_ operation: StorageError.Operation, entity: String?, _ body: (ServerConnection) throws -> T)
        throws -> T
    {
        let connection = try take(operation, entity: entity)
        defer { give(connection) }
        return try body(connection)
    }

    private func take(_ operation: StorageError.Operation, entity: String?) throws -> ServerConnection {
        condition.lock()
        while true {
            if isClosed {
                condition.unlock()
                throw StorageError.closed(operation, entity: entity, path: configuration.description)
            }
            if let connection = idle.popLast() {
                if connection.generation == generation {
                    condition.unlock()
                    return connection
                }
                openCount -= 1
                close(connection)
                continue
            }
            if openCount < max(1, configuration.poolSize) { break }
            condition.wait()
        }
        openCount += 1
        nextID += 1
        let id = nextID
        let generation = generation
        condition.unlock()
        do {
            let connection = try PostgresConnection.connect(
                on: group.next(), configuration: connectionConfiguration, id: id, logger: poolLogger
            ).wait()
            return ServerConnection(connection, generation: generation, messageLimit: configuration.messageLimit)
        } catch {
            condition.lock()
            openCount -= 1
            condition.signal()
            condition.unlock()
            throw PostgresErrors.connectFailed(error, operation, entity: entity, configuration)
        }
    }

    private func give(_ connection: ServerConnection) {
        condition.lock()
        if connection.isBroken || isClosed || connection.generation != generation {
            openCount -= 1
            close(connection)
        } else {
            idle.append(connection)
        }
        condition.signal()
        condition.unlock()
    }

    private func close(_ connection: ServerConnection) {
        // The connection is gone either way; a failure to say goodbye to a
        // server that went away changes nothing.
        // Kept until the close completes (postgres-nio asserts a connection is closed when it goes).
        connection.connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Retires every open connection: those lent out are closed when they
    /// come back, so no statement prepared before (on tables a migration
    /// changed) runs again.
    func retireConnections() {
        condition.lock()
        generation += 1
        let retired = idle
        openCount -= retired.count
        idle = []
        condition.broadcast()
        condition.unlock()
        for connection in retired { close(connection) }
    }

    /// Waits for the lent connections to come back, then closes them all;
    /// later calls throw ``StorageError/Kind/closed``.
    func close() {
        condition.lock()
        guard !isClosed else {
            condition.unlock()
            return
        }
        isClosed = true
        condition.broadcast()
        while openCount > idle.count { condition.wait() }
        let all = idle
        idle = []
        openCount = 0
        condition.unlock()
        for connection in all {
            // Closing is best effort: the server drops the session either way.
            close(connection)
        }
    }
}

/// How the driver's errors become ``StorageError``s.
enum PostgresErrors {
    // The driver throws two shapes of error: `PSQLError` from its current
    // API (connecting, simple queries) and the older `PostgresError` from
    // `prepare(query:)` and `PreparedQuery.execute`, which the store's
    // statements go through. Both carry the server's fields.

    /// The SQLSTATE of a server error, if `error` is one.
    static func sqlState(_ error: any Error) -> String? {
        serverField(error, psql: .sqlState, legacy: .sqlState)
    }

    /// A field of the server's error response, from either shape of error.
    private static func serverField(
        _ error: any Error, psql: PSQLError.ServerInfo.Field, legacy: PostgresMessage.Error.Field
    ) -> String? {
        if let error = error as? PSQLError { return error.serverInfo?[psql] }
        if case .server(let response) = error as? PostgresError { return response.fields[legacy] }
        return nil
    }

    /// Whether the connection is gone (the server closed it or restarted).
    static func isConnectionLost(_ error: any Error) -> Bool {
        if let error = error as? PostgresError {
            switch error {
            case .connectionClosed: return true
            case .protocol: return true
            case .server:
                guard let state = sqlState(error) else { return false }
                return state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03"
            }
        }
        // The socket's own errors (a reset by a server that went away) end the connection too.
        guard let error = error as? PSQLError else { return error is ChannelError || error is IOError }
        switch error.code {
        case .server:
            // 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now; class 08: connection exceptions.
            guard let state = error.serverInfo?[.sqlState] else { return false }
            return state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03"
        case .connectionError, .uncleanShutdown, .serverClosedConnection, .clientClosedConnection, .messageDecodingFailure,
            .unexpectedBackendMessage:
            return true
        default:
            return false
        }
    }

    /// Whether running the whole transaction again may succeed: a
    /// serialization failure (40001) or a deadlock (40P01).
    static func isRetryable(_ error: any Error) -> Bool {
        let state = sqlState(error)
        return state == "40001" || state == "40P01"
    }

    /// The typed error for a failure to open a connection.
    static func connectFailed(
        _ error: any Error, _ operation: StorageError.Operation, entity: String?, _ configuration: PostgresConfiguration
    ) -> StorageError {
        let state = sqlState(error)
        let reason: String
        switch state {
        case "28P01", "28000": reason = "the server refused the login of '\(configuration.user)'"
        case "3D000": reason = "the server has no database '\(configuration.database)'"
        case .some(let state): reason = "the server refused the connection (SQLSTATE \(state)): \(message(of: error))"
        case nil: reason = "no connection to \(configuration.address) (\(message(of: error)))"
        }
        return StorageError(
            .io, operation, entity: entity, path: configuration.description,
            message: "\(reason); server \(configuration.address)", context: state.map { "SQLSTATE \($0)" },
            underlying: error)
    }

    /// The server's message, or the driver's description.
    static func message(of error: any Error) -> String {
        if let message = serverField(error, psql: .message, legacy: .message) { return message }
        if let error = error as? PSQLError { return "\(error.code)" }
        return "\(error)"
    }

    /// Whether `error` comes from the driver or the network (and is made a
    /// ``StorageError``), rather than from the caller's code run inside the
    /// transaction (a translator, `CancellationError`), which is rethrown as it is.
    static func isDriverError(_ error: any Error) -> Bool {
        error is PSQLError || error is PostgresError || error is ChannelError || error is IOError
    }

    /// `error` as the call throws it: a driver's error typed, anything else as it is.
    static func thrown(
        _ error: any Error, _ operation: StorageError.Operation, entity: String?, _ configuration: PostgresConfiguration
    ) -> any Error {
        if let stale = error as? StaleConnection { return thrown(stale.underlying, operation, entity: entity, configuration) }
        if let oversized = error as? OversizedStatement {
            return StorageError(
                operation == .persist ? .encoding : .invalidArgument, operation, entity: entity,
                path: configuration.description, message: oversized.description)
        }
        return isDriverError(error) ? storageError(error, operation, entity: entity, configuration) : error
    }

    /// The typed error for a failed statement.
    static func storageError(
        _ error: any Error, _ operation: StorageError.Operation, entity: String?, _ configuration: PostgresConfiguration
    ) -> StorageError {
        let state = sqlState(error)
        let kind: StorageError.Kind
        switch state {
        case .some(let state) where state.hasPrefix("23"): kind = .constraint  // integrity constraint violation
        case "57014", "55P03", "40001", "40P01": kind = .busy  // statement timeout, lock not available, conflicts
        case "53100": kind = .full  // disk full
        case "25006": kind = .readOnly
        case "22021", "22P05", "22003", "22P02": kind = .invalidArgument
        case "42P01", "42703": kind = .schemaMismatch  // a table or column someone else dropped
        default: kind = isConnectionLost(error) ? .io : .engine
        }
        var message = message(of: error)
        if state == "57014" { message = "the statement ran past its timeout (statement_timeout): \(message)" }
        if kind == .io { message = "the connection to \(configuration.address) was lost: \(message)" }
        return StorageError(
            kind, operation, entity: entity, path: configuration.description, message: message,
            context: state.map { "SQLSTATE \($0)" }, underlying: error)
    }
}
