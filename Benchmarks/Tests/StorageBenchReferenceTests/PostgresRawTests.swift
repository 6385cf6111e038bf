import DAOCore
import DialogGraph
import Foundation
import StorageBenchKit
import StorageBenchReference
import TestSupport
import Testing

/// Whether `DAO_POSTGRES_URL` names a PostgreSQL server (`scripts/setup.sh postgres` prints one).
private let serverGiven = !(ProcessInfo.processInfo.environment["DAO_POSTGRES_URL"] ?? "").isEmpty

/// The server of `DAO_POSTGRES_URL`.
private func configuredServer() throws -> PostgresServer { try #require(try PostgresServer.fromEnvironment()) }

@Suite(
    "postgres-raw: the workload on a PostgreSQL server, hand-written SQL",
    .enabled(if: serverGiven, "DAO_POSTGRES_URL names no PostgreSQL server"))
struct PostgresRawTests {
    private func subject(_ durability: Durability = .none) throws -> PostgresRawSubject {
        try PostgresRawSubject(server: try configuredServer(), durability: durability)
    }

    /// The whole workload at a small size through the harness's runner: its
    /// checks pass, the units are WORKLOAD.md's, and the settings line says
    /// what the server runs with.
    @Test(arguments: [Durability.none, .full])
    func runsTheWorkload(_ durability: Durability) throws {
        let backend = try #require(BackendRegistry.postgres(.success(try configuredServer())).backend(named: "postgres-raw"))
        let size = try BenchSize(dialogs: 30, messagesPerDialog: 7)
        let job = IterationJob(
            backend: backend.name, size: size, seed: 42, durability: durability, operations: BenchOperation.workload)
        let result = WorkloadRunner.run(job, backend: backend, data: WorkloadData(dialogs: 30, messagesPerDialog: 7))
        #expect(result.error == nil, "\(result.error ?? "")")
        #expect(result.measurements.map(\.operation) == BenchOperation.workload)
        #expect((result.bytesOnDisk ?? 0) > 8192, "the tables' size on the server")
        for measurement in result.measurements {
            #expect(measurement.units == measurement.operation.expectedUnits(for: size), "\(measurement.operation)")
        }
        let settings = try #require(result.settings)
        #expect(settings.contains("synchronous_commit=\(durability == .full ? "on" : "off")"), "\(settings)")
        #expect(settings.contains("postgresql=") && settings.contains("shared_buffers="), "\(settings)")
        #expect(settings.contains("schema=storage_bench_") && settings.contains("pool=1 connection"), "\(settings)")
    }

    /// Both server backends, the adapter through the DAO and its reference,
    /// run the workload through the harness's runner and report their tables'
    /// size on the server as `bytes_on_disk`: what a fresh subject's empty
    /// tables take, plus at least the bytes of the messages' text the store
    /// holds after update (the run directory stays empty).
    @Test(arguments: ["postgres", "postgres-raw"])
    func reportsTheTablesSizeOnTheServer(_ name: String) throws {
        let backend = try #require(BackendRegistry.postgres(.success(try configuredServer())).backend(named: name))
        let empty = try withTemporaryDirectory { directory in
            try backend.open(directory, .none).bytesStoredElsewhere()
        }
        let size = try BenchSize(dialogs: 40, messagesPerDialog: 20)
        let data = WorkloadData(dialogs: 40, messagesPerDialog: 20)
        let job = IterationJob(
            backend: backend.name, size: size, seed: 42, durability: .none, operations: [.persist, .update])
        let result = WorkloadRunner.run(job, backend: backend, data: data)
        #expect(result.error == nil, "\(result.error ?? "")")
        let text = Int64(data.updated.flatMap(\.messages).map(\.text.utf8.count).reduce(0, +))
        let bytes = try #require(result.bytesOnDisk)
        #expect(bytes >= (empty ?? 0) + text, "\(bytes) bytes on the server, \(empty ?? 0) empty, \(text) of text")
        #expect(empty != nil && text > 0)
    }

    /// Each call gives back exactly what was written (dates to the
    /// millisecond), as the other references do.
    @Test func answersEveryCallLikeTheData() throws {
        let subject = try subject()
        let data = WorkloadData(dialogs: 25, messagesPerDialog: 9, seed: 7)
        typealias T = ReferenceBackendTests
        try subject.persist(data.initial)
        #expect(T.ms(try subject.readAll()) == T.ms(data.initial))
        for id in data.readIds {
            #expect(T.ms([try subject.read(dialogId: id)]) == T.ms([data.initial[Int(id) - 1]]))
        }
        #expect(try subject.read(dialogId: 9999) == nil)
        for id in data.queryIds {
            let expected = data.initial[Int(id) - 1].messages.filter { !$0.isRead }.sorted { $0.date > $1.date }
            #expect(T.ms(try subject.unreadMessages(dialogId: id)) == T.ms(expected))
        }
        #expect(try subject.unreadMessageCount() == data.initial.flatMap(\.messages).filter { !$0.isRead }.count)
        try subject.update(data.updated)
        #expect(T.ms(try subject.readAll()) == T.ms(data.updated))
        #expect(try subject.unreadMessageCount() == 0)
        for dialog in data.extra { try subject.persistSingle(dialog) }
        #expect(
            T.ms(try subject.read(dialogIds: [26, 3, 9999, 50])) == T.ms([data.extra[0], data.updated[2], data.extra[24]]))
        #expect(try subject.dialogCount() == 50)
        #expect(try subject.messageCount() == 450)
        #expect(try subject.erase(dialogIds: [2, 4, 4, 9999]) == 2)
        #expect(try subject.messageCount() == 48 * 9)
        #expect(try subject.read(dialogId: 2) == nil)
        #expect(try subject.eraseAll() == 48)
        #expect(try subject.dialogCount() == 0 && subject.messageCount() == 0)
        #expect(try subject.readAll().isEmpty)
    }

    /// Text of every kind PostgreSQL holds, with COPY's escapes among it,
    /// round-trips byte for byte through both the INSERT and the COPY path; a
    /// NUL, which PostgreSQL's text cannot hold, is the server's error and
    /// writes nothing.
    @Test func textRoundTripsAndANulIsRefused() throws {
        let texts = [
            "", "caf\u{E9}", "cafe\u{301}", "tab\there", "line\nbreak\r\n", "back\\slash\\N", "🚀👩‍👩‍👧",
            String(repeating: "Zürich ", count: 5000),
        ]
        func dialog(_ id: Int64, _ texts: [String]) -> Dialog {
            Dialog(
                uniqueId: id, isPinned: true,
                messages: texts.enumerated().map { index, text in
                    Message(
                        uniqueId: id * 100 + Int64(index), dialogId: id,
                        date: Date(timeIntervalSince1970: 1_700_000_000.125 + Double(index)), text: text, senderId: -5,
                        receiverId: Int64.max, type: 4, isIncoming: index % 2 == 0, isRead: false)
                })
        }
        let inserted = try subject()
        try inserted.persist([dialog(1, texts)])
        #expect(try inserted.read(dialogId: 1) == dialog(1, texts))
        let copied = try subject()
        try copied.copy([dialog(1, texts)])
        #expect(try copied.read(dialogId: 1) == dialog(1, texts))

        let error = try #require(throws: ReferenceError.self) { try inserted.persist([dialog(2, ["a\u{0}b"])]) }
        #expect(error.engine == "postgres")
        #expect(try inserted.dialogCount() == 1 && inserted.messageCount() == texts.count)
    }

    /// COPY writes what persist writes.
    @Test func copyWritesTheGraph() throws {
        let data = WorkloadData(dialogs: 40, messagesPerDialog: 11, seed: 3)
        let subject = try subject()
        try subject.copy(data.initial)
        #expect(try subject.readAll() == data.initial)
        #expect(try subject.dialogCount() == 40 && subject.messageCount() == 440)
    }

    /// A second `persist` of an existing id is the server's constraint error
    /// (SQLSTATE 23505), and the failed statement wrote nothing.
    @Test func reportsTheServersError() throws {
        let subject = try subject()
        let data = WorkloadData(dialogs: 2, messagesPerDialog: 2)
        try subject.persist(data.initial)
        let error = try #require(throws: ReferenceError.self) { try subject.persist(data.initial) }
        #expect(error.description.contains("SQLSTATE 23505"), "\(error)")
        #expect(try subject.messageCount() == 4)
    }

    /// Each subject works in a schema of its own and drops it, and nothing
    /// else, when released: another subject's schema and data stay.
    @Test func dropsOnlyItsOwnSchema() throws {
        let keeper = try subject()
        try keeper.persist(WorkloadData(dialogs: 3, messagesPerDialog: 2).initial)
        var name = ""
        do {
            let other = try subject()
            name = other.schema
            #expect(name != keeper.schema)
            #expect(try keeper.schemaExists(name))
            try other.persist(WorkloadData(dialogs: 5, messagesPerDialog: 2).initial)
        }
        #expect(try !keeper.schemaExists(name))
        #expect(try keeper.schemaExists(keeper.schema))
        #expect(try keeper.dialogCount() == 3)
    }

    /// The load subject runs every operation a mix can draw with two clients
    /// through its pool, counting the same rows as the DAO's SQLite backend.
    @Test func runsAMixUnderLoad() async throws {
        let object: [String: Any] = [
            "name": "every-operation", "dialogs": 30, "messagesPerDialog": 5,
            "operations": ["read": 0.3, "update": 0.2, "scan": 0.2, "page": 0.2, "read-modify-write": 0.1],
            "distribution": "zipfian", "scanLength": 3, "pageSize": 4,
        ]
        let mix = try LoadMix.parse(try JSONSerialization.data(withJSONObject: object), file: "every-operation.json")
        let backends = LoadBackendRegistry(
            LoadBackendRegistry.withReferences.backends.filter { $0.name == "sqlite" }
                + LoadBackendRegistry.postgres(.success(try configuredServer())).backends)
        let results = await LoadSweep.run(
            LoadSweepOptions(
                mixes: [mix], backends: backends.backends, clients: [2], durationSeconds: nil, operationCount: 200,
                targetRate: nil, warmupSeconds: 0, durability: .none),
            progress: { _ in })
        #expect(results.map(\.backend) == ["sqlite", "postgres", "postgres-raw"])
        for result in results {
            #expect(result.failure == nil, "\(result.backend): \(result.failure ?? "")")
            #expect(result.all?.operations == 200 && result.all?.errors == 0, "\(result.backend): \(result.all?.firstError ?? "")")
        }
        for operation in ["read", "update", "scan", "page", "all"] {
            let rows = results.map { result in result.figures.first { $0.operation == operation }?.rows ?? -1 }
            #expect(Set(rows).count == 1, "\(operation): \(rows)")
        }
        let settings = try #require(results.last?.settings)
        #expect(settings.contains("synchronous_commit=off") && settings.contains("PostgresClient"), "\(settings)")
    }
}

@Suite("PostgreSQL server URLs")
struct PostgresServerURLTests {
    @Test func parsesAURL() throws {
        let server = try PostgresServer(url: "postgres://bench:s%40cret@127.0.0.1:55433/storage?sslmode=disable")
        #expect(server.host == "127.0.0.1" && server.port == 55433)
        #expect(server.username == "bench" && server.password == "s@cret" && server.database == "storage")
        let defaults = try PostgresServer(url: "postgresql://me@db.example")
        #expect(defaults.port == 5432 && defaults.database == "me" && defaults.password == nil)
    }

    @Test(arguments: [
        "mysql://u@h/d", "postgres:///d", "postgres://h:5432/d", "postgres://u@h/d?sslmode=require", "not a url",
    ])
    func refusesAMalformedURL(_ url: String) {
        #expect(throws: ConfigurationError.self) { try PostgresServer(url: url) }
    }

    /// A server that does not answer is an error at open that names host and port, not a hang.
    @Test func anUnreachableServerFailsAtOpen() throws {
        let server = try PostgresServer(url: "postgres://nobody@127.0.0.1:1/none")
        let error = try #require(throws: ReferenceError.self) { try PostgresRawSubject(server: server, durability: .none) }
        #expect(error.operation.contains("127.0.0.1:1"), "\(error)")
    }
}
