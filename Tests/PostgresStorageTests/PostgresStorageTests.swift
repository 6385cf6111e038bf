import DAOCore
import DAOMacros
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
@testable import PostgresStorage
import Synchronization
import TestSupport
import Testing

// The PostgreSQL adapter's own tests: what only a server shows (a closed
// port, a refused login, a statement timeout, a table altered by another
// client, serialization failures retried). The conformance suite runs every
// shared test on this backend too. All of them need DAO_POSTGRES_URL.

@StoredRecord("gauges")
struct GaugeRecord: Equatable {
    var id: Int64
    var label: String
    var reading: Double
    var taken: Date
    var note: String?
}

/// The server of the tests, and a schema per test, dropped afterwards.
enum Server {
    static let url: String? = {
        guard let url = ProcessInfo.processInfo.environment["DAO_POSTGRES_URL"], !url.isEmpty else { return nil }
        return url
    }()

    static func configuration(_ schema: String) throws -> PostgresConfiguration {
        var configuration = try PostgresConfiguration(url: url ?? "")
        configuration.schema = schema
        configuration.poolSize = 2
        return configuration
    }

    /// Runs `body` with a store in a fresh schema, dropped afterwards.
    static func withStore<T>(
        _ configure: (inout PostgresConfiguration) -> Void = { _ in }, _ body: (PostgresStore, String) throws -> T
    ) throws -> T {
        let schema = "dao_pgtest_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var configuration = try configuration(schema)
        configure(&configuration)
        let database = try PostgresStore(configuration)
        defer {
            do {
                try PostgresStore(try self.configuration(schema)).removeSchema()
            } catch {
                print("schema \(schema) was not dropped: \(error)")
            }
            _ = database
        }
        return try body(database, schema)
    }

    /// Runs `sql` on a connection of its own, as another client would.
    static func raw(_ sql: String) throws {
        try rawSession { connection in
            _ = try connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).wait()
        }
    }

    static let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A connection of its own for `body`, closed afterwards.
    static func rawSession<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let configuration = try self.configuration("public")
        let connection = try PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(),
            configuration: PostgresConnection.Configuration(
                host: configuration.host, port: configuration.port, username: configuration.user,
                password: configuration.password, database: configuration.database, tls: .disable),
            id: 1, logger: logger
        ).wait()
        defer { _ = try? connection.close().wait() }
        return try body(connection)
    }

    /// Whether a statement whose text contains `schema` and then `table`
    /// comes to wait for a lock within 10 seconds, as another client sees it
    /// in `pg_stat_activity`.
    static func waitsForLock(_ schema: String, _ table: String) throws -> Bool {
        for _ in 0..<500 {
            let waiting = try rawSession { watcher in
                let rows = try watcher.query(
                    PostgresQuery(unsafeSQL: """
                        SELECT count(*)::bigint FROM pg_stat_activity
                        WHERE wait_event_type = 'Lock' AND query LIKE '%\(schema)%\(table)%'
                        """), logger: logger
                ).wait()
                var count: Int64 = 0
                for row in rows { count = try row.decode(Int64.self) }
                return count > 0
            }
            if waiting { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return false
    }
}

@Suite(.enabled(if: Server.url != nil, "DAO_POSTGRES_URL names no server"), .serialized)
struct PostgresStorageTests {
    @Test func storesAndReadsTypedColumns() throws {
        try Server.withStore { database, schema in
            let gauges = try database.storage(for: GaugeRecord.self)
            let records = [
                GaugeRecord(id: 1, label: "a\u{0}b\u{1}c", reading: -0.0, taken: Date(timeIntervalSinceReferenceDate: -0.0), note: nil),
                GaugeRecord(id: 2, label: "Zoe\u{308}", reading: .nan, taken: Date(timeIntervalSinceReferenceDate: .infinity), note: ""),
                GaugeRecord(id: 3, label: "Zo\u{EB}", reading: 2.5, taken: Date(timeIntervalSince1970: 1_700_000_000.123456789), note: "x"),
            ]
            try gauges.persist(records)
            let back = try gauges.read(primaryKeys: [1, 2, 3])
            #expect(back.count == 3)
            #expect(back[0].label == "a\u{0}b\u{1}c")
            #expect(back[0].reading.bitPattern == (-0.0 as Double).bitPattern)
            #expect(back[0].taken.timeIntervalSinceReferenceDate.bitPattern == (-0.0 as Double).bitPattern)
            #expect(back[1].reading.isNaN)
            #expect(back[2] == records[2])
            #expect(StoredValue.sameScalars(back[1].label, "Zoe\u{308}"))
            // The columns are typed, and text sorts by bytes.
            let sorted = try gauges.read(sortedBy: [SortDescriptor(\.label)]).map(\.id)
            // "Zoe\u{308}" < "Zo\u{EB}" < "a\u{0}…" by UTF-8 bytes.
            #expect(sorted == [2, 3, 1])
            #expect(try gauges.count(where: #Predicate { $0.label.starts(with: "a\u{0}") }) == 1)
            #expect(try gauges.count(where: #Predicate { $0.reading > 1 }) == 1)
            #expect(try gauges.count(where: #Predicate { $0.reading <= 1 }) == 1)
            #expect(try gauges.count(where: #Predicate { $0.reading == 0 }) == 1)
            _ = schema
        }
    }

    /// The store's size on the server counts its own schema's tables, grows
    /// with the rows written (by at least their text's bytes), and is not
    /// moved by another schema's rows.
    @Test func bytesOnServerGrowWithTheRowsWritten() throws {
        try Server.withStore { database, _ in
            let gauges = try database.storage(for: GaugeRecord.self)
            let empty = try database.bytesOnServer()
            #expect(empty > 0, "the metadata table and the entity's empty table and index")
            var generator = TestRandom(seed: 34)
            let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789")
            let records = (1...3000).map { id in
                let label = String((0..<120).map { _ in generator.pick(letters) })
                return GaugeRecord(id: Int64(id), label: label, reading: Double(id), taken: Date(), note: nil)
            }
            let written = Int64(records.map(\.label.utf8.count).reduce(0, +))
            try Server.withStore { other, _ in
                try other.storage(for: GaugeRecord.self).persist(records)
                #expect(try other.bytesOnServer() >= empty + written)
                #expect(try database.bytesOnServer() == empty, "another schema's rows are not this store's")
            }
            try gauges.persist(records)
            let full = try database.bytesOnServer()
            #expect(full >= empty + written, "\(empty) bytes empty, \(full) with \(written) bytes of labels")
            try database.close()
            #expect(throws: StorageError.self) { _ = try database.bytesOnServer() }
        }
    }

    @Test func aClosedPortIsATypedErrorNamingHostAndPort() throws {
        // A port nothing listens on: bind one, note it, close it.
        let channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).wait()
        let port = channel.localAddress?.port ?? 1
        try channel.close().wait()
        var configuration = PostgresConfiguration(host: "127.0.0.1", port: port, user: "nobody", database: "nothing")
        configuration.connectTimeout = .seconds(2)
        let started = ContinuousClock.now
        do {
            _ = try PostgresStore(configuration)
            Issue.record("opened a store on a closed port")
        } catch let error as StorageError {
            #expect(error.kind == .io)
            #expect(error.operation == .open)
            #expect(error.message.contains("127.0.0.1:\(port)"))
        }
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func aRefusedLoginIsATypedErrorNamingHostAndPort() throws {
        var configuration = try Server.configuration("public")
        configuration.user = "no_such_role_\(UInt32.random(in: 0...UInt32.max))"
        do {
            _ = try PostgresStore(configuration)
            Issue.record("logged in as a role that does not exist")
        } catch let error as StorageError {
            #expect(error.kind == .io)
            #expect(error.message.contains(configuration.address))
            #expect(error.message.contains(configuration.user))
        }
    }

    @Test func aBadURLIsRefused() {
        for url in ["http://x@y/z", "postgres://host/db", "postgres://u@/db", "postgres://u@h/db?pool_size=0", "postgres://u@h/db?what=1"] {
            #expect(throws: StorageError.self) { _ = try PostgresConfiguration(url: url) }
        }
        let parsed = try? PostgresConfiguration(url: "postgres://me:secret@db.local:6543/app?sslmode=require&schema=s1&pool_size=3&statement_timeout=1.5")
        #expect(parsed?.host == "db.local")
        #expect(parsed?.port == 6543)
        #expect(parsed?.password == "secret")
        #expect(parsed?.database == "app")
        #expect(parsed?.tls == .require)
        #expect(parsed?.schema == "s1")
        #expect(parsed?.poolSize == 3)
        #expect(parsed?.statementTimeout == .milliseconds(1500))
        #expect(parsed?.description.contains("secret") == false)
    }

    @Test func aStatementTimeoutIsATypedError() throws {
        try Server.withStore({ $0.statementTimeout = .milliseconds(200) }) { database, schema in
            let gauges = try database.storage(for: GaugeRecord.self)
            try gauges.persist(GaugeRecord(id: 1, label: "x", reading: 1, taken: Date(), note: nil))
            // Another client holds the table's lock past the timeout.
            try Server.rawSession { other in
                _ = try other.query(PostgresQuery(unsafeSQL: "BEGIN"), logger: Server.logger).wait()
                _ = try other.query(
                    PostgresQuery(unsafeSQL: "LOCK TABLE \"\(schema)\".gauges IN ACCESS EXCLUSIVE MODE"), logger: Server.logger
                ).wait()
                do {
                    _ = try gauges.count()
                    Issue.record("the count did not time out")
                } catch let error as StorageError {
                    #expect(error.kind == .busy)
                    #expect(error.context == "SQLSTATE 57014")
                }
                _ = try other.query(PostgresQuery(unsafeSQL: "ROLLBACK"), logger: Server.logger).wait()
            }
            #expect(try gauges.count() == 1)
        }
    }

    @Test func aTableAlteredByAnotherClientIsASchemaMismatch() throws {
        try Server.withStore { database, schema in
            _ = try database.storage(for: GaugeRecord.self)
            try Server.raw("ALTER TABLE \"\(schema)\".gauges ADD COLUMN extra integer")
            let again = try PostgresStore(try Server.configuration(schema))
            do {
                _ = try again.storage(for: GaugeRecord.self)
                Issue.record("opened a table someone else altered")
            } catch let error as StorageError {
                #expect(error.kind == .schemaMismatch)
                #expect(error.message.contains("extra"))
            }
            try again.close()
        }
    }

    @Test func aTableTheStoreDidNotCreateIsLeftAlone() throws {
        try Server.withStore { database, schema in
            try Server.raw("CREATE TABLE \"\(schema)\".gauges (id bigint PRIMARY KEY)")
            #expect(throws: StorageError.self) { _ = try database.storage(for: GaugeRecord.self) }
            // Nor is its schema dropped with it.
            #expect(throws: StorageError.self) { try PostgresStore(try Server.configuration(schema)).removeSchema() }
            try Server.raw("DROP TABLE \"\(schema)\".gauges")
        }
    }

    @Test func aSerializationFailureRunsTheTransactionAgain() throws {
        try Server.withStore({ $0.isolation = .serializable }) { database, schema in
            let gauges = try database.storage(for: GaugeRecord.self)
            try gauges.persist(GaugeRecord(id: 1, label: "first", reading: 1, taken: Date(), note: nil))
            let retriesBefore = database.retryCount
            // Another client updates the row in a serializable transaction
            // and commits while the store's upsert waits for the row: the
            // upsert fails with 40001, and the store runs it again. (The
            // write goes straight to the upsert, as after a collision of a
            // plain INSERT: InsertFirstTests and OneStatementTreeTests test
            // that way.)
            gauges.table.insertFirst.collided()
            try Server.rawSession { other in
                _ = try other.query(PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL SERIALIZABLE"), logger: Server.logger).wait()
                _ = try other.query(
                    PostgresQuery(unsafeSQL: "UPDATE \"\(schema)\".gauges SET label = 'other' WHERE id = 1"), logger: Server.logger
                ).wait()
                let failure = Mutex<String?>(nil)
                let done = DispatchSemaphore(value: 0)
                Thread {
                    do {
                        try gauges.persist(GaugeRecord(id: 1, label: "store", reading: 2, taken: Date(), note: nil))
                    } catch {
                        failure.withLock { $0 = "\(error)" }
                    }
                    done.signal()
                }.start()
                Thread.sleep(forTimeInterval: 0.5)
                _ = try other.query(PostgresQuery(unsafeSQL: "COMMIT"), logger: Server.logger).wait()
                done.wait()
                #expect(failure.withLock { $0 } == nil)
            }
            #expect(try gauges.read(primaryKey: 1)?.label == "store")
            #expect(database.retryCount > retriesBefore)
        }
    }

    @Test func conflictingWritersAtSerializableAllSucceed() throws {
        try Server.withStore({ $0.isolation = .serializable; $0.poolSize = 4 }) { database, _ in
            let gauges = try database.storage(for: GaugeRecord.self)
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { writer in
                for round in 0..<25 {
                    let records = (1...5).map {
                        GaugeRecord(id: Int64($0), label: "w\(writer) r\(round)", reading: Double(round), taken: Date(), note: nil)
                    }
                    do {
                        try gauges.persist(records)
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
            // Each commit was whole: the five rows carry one writer's round.
            let labels = Set(try gauges.readAll().map(\.label))
            #expect(labels.count == 1)
        }
    }
}
