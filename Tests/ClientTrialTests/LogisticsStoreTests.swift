import DAOCore
import DAOMacros
import Foundation
import LMDBStorage
import TestSupport
import Testing

// The logistics store as a whole: a migration the README's way, a record
// type changed without one, a second process writing while this one reads,
// LMDB's map filling with bytes, and what the store finds in its directory
// that it did not write.

/// Shipments in a second version: a carrier, added last.
@StoredRecord(
    "lg_shipments", primaryKey: "code",
    indexes: [Index("lg_shipments_by_destination_due", on: ["destination", "due"])])
struct ShipmentRecordV2: Equatable {
    var code: String
    var destination: String
    var due: Date?
    var priority: Int8
    var insured: Bool?
    var declaredValue: Double?
    var createdAt: Date
    var carrier: String?
    @Children(foreignKey: "shipmentCode") var parcels: [ParcelRecord]
}

/// Scans whose parcel key is declared a String instead of a UUID: the same
/// storage class (text), so the same stored schema.
@StoredRecord(
    "lg_scans",
    indexes: [
        Index("lg_scans_by_parcel_at", on: ["parcelId", "at"]),
        Index("lg_scans_by_place_temperature", on: ["place", "temperature"]),
    ],
    ownedBy: ParcelRecord.self)
struct ScanRecordStringParcel: Equatable {
    var id: Int64
    var parcelId: String
    var at: Date
    var place: String
    var temperature: Double?
    var ok: Bool
    var raw: Data?
}

/// Shipments whose destination is declared a UUID: text that is no UUID
/// must come back as a typed error, not as a crash or another value.
@StoredRecord(
    "lg_shipments", primaryKey: "code",
    indexes: [Index("lg_shipments_by_destination_due", on: ["destination", "due"])])
struct ShipmentRecordUUIDDestination: Equatable {
    var code: String
    var destination: UUID
    var due: Date?
    var priority: Int8
    var insured: Bool?
    var declaredValue: Double?
    var createdAt: Date
    @Children(foreignKey: "shipmentCode") var parcels: [ParcelRecord]
}

/// Shipments with a field removed (`insured`).
@StoredRecord(
    "lg_shipments", primaryKey: "code",
    indexes: [Index("lg_shipments_by_destination_due", on: ["destination", "due"])])
struct ShipmentRecordDropped: Equatable {
    var code: String
    var destination: String
    var due: Date?
    var priority: Int8
    var declaredValue: Double?
    var createdAt: Date
    @Children(foreignKey: "shipmentCode") var parcels: [ParcelRecord]
}

/// Files of other programs in the store's directory, named like the store's own.
let logisticsForeignFiles: [String: Data] = [
    "notes.txt": Data("keep me".utf8),
    "lg_shipments-1.json.bak": Data("{\"not\":\"ours\"}".utf8),
    "lg_shipments-7.json": Data("{\"entity\":\"somebody else's\"}".utf8),
    "store.sqlite.backup": Data(repeating: 7, count: 100),
    "data.mdb.old": Data(repeating: 9, count: 100),
    ".manifest.json.1.tmp.keep": Data("x".utf8),
]

@Suite("Client trial, logistics: the store as a whole")
struct LogisticsStoreTests {
    static func seeded(_ backend: TestBackend, in directory: URL, calls: Int) throws -> LogisticsModel {
        try withLogistics(backend, in: directory) { daos, _ in
            for index in 0..<calls { try LogisticsWrites.apply(index, oneSpelling: oneSpelling(backend), to: daos) }
        }
        return LogisticsWrites.state(after: calls, oneSpelling: oneSpelling(backend))
    }

    @Test("a lightweight migration adds a field; every value of the three levels stays, others' files too", arguments: localBackends)
    func migration(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("logistics-migration")
        for (name, bytes) in logisticsForeignFiles { try bytes.write(to: directory.url.appending(path: name)) }
        let model = try Self.seeded(backend, in: directory.url, calls: 12)
        // Before the migration the new type is refused, and nothing changes.
        let before = try fileContents(directory.url).filter { $0.key != "lock.mdb" }
        do {
            let store = try backend.open(directory.url)
            defer { closeRecordingFailure(store, backend) }
            let error = expectStorageError(.schemaMismatch, "v2 before the migration on \(backend.name)") {
                _ = try store.anyStorage(for: ShipmentRecordV2.self)
            }
            #expect(error?.message.contains("carrier") == true, "\(String(describing: error))")
            expectStorageError(.schemaMismatch, "a dropped field on \(backend.name)") {
                _ = try store.anyStorage(for: ShipmentRecordDropped.self)
            }
        }
        #expect(try fileContents(directory.url).filter { $0.key != "lock.mdb" } == before, "\(backend.name): a refusal wrote")
        do {
            let store = try backend.open(directory.url)
            defer { closeRecordingFailure(store, backend) }
            var migrator = Migrator()
            migrator.register("v2: shipments have a carrier", [.lightweight(to: ShipmentRecordV2.self)])
            #expect(try migrator.migrate(store) == ["v2: shipments have a carrier"])
            let shipments = try store.anyStorage(for: ShipmentRecordV2.self).readAll()
            let want = model.shipmentList.map(ShipmentTranslator().record(from:))
            #expect(shipments.map(\.carrier) == Array(repeating: nil, count: want.count))
            #expect(sameBits(shipments.map(\.parcels), want.map(\.parcels)), "\(backend.name): the parcels after the migration")
            #expect(shipments.map(\.code) == want.map(\.code) && shipments.map(\.declaredValue) == want.map(\.declaredValue))
            // The child types name the first version as their owner
            // (`ownedBy:`), so they are reached through the new one.
        }
        for (name, bytes) in logisticsForeignFiles {
            #expect((try? Data(contentsOf: directory.url.appending(path: name))) == bytes, "\(backend.name): \(name) changed")
        }
    }

    @Test("a second record type of a child entity, and text read as a UUID: typed answers", arguments: localBackends)
    func textRetyped(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("logistics-retyped")
        let model = try Self.seeded(backend, in: directory.url, calls: 5)
        do {
            let store = try backend.open(directory.url)
            defer { closeRecordingFailure(store, backend) }
            // A second record type of a child entity is refused (its owner's
            // relation holds the first), with a message that says so.
            _ = try store.anyStorage(for: ParcelRecord.self)
            let error = expectStorageError(.schemaMismatch, "a second type of lg_scans on \(backend.name)") {
                _ = try store.anyStorage(for: ScanRecordStringParcel.self)
            }
            #expect(error?.message.contains("relation 'scans' holds 'lg_scans' as ScanRecord") == true, "\(String(describing: error))")
        }
        do {
            let store = try backend.open(directory.url)
            defer { closeRecordingFailure(store, backend) }
            // Destinations that are no UUIDs: a decoding error, at open on the
            // file stores and at the read elsewhere (docs/SEMANTICS.md).
            let error = expectStorageError(.decoding, "destinations read as UUIDs on \(backend.name)") {
                _ = try store.anyStorage(for: ShipmentRecordUUIDDestination.self).readAll()
            }
            #expect(error?.entity == "lg_shipments", "\(String(describing: error))")
        }
        try withLogistics(backend, in: directory.url) { daos, _ in
            let read = try daos.shipments.read()
            #expect(sameBits(read, model.shipmentList), "\(backend.name): the data after the retyped reads")
        }
    }

    @Test("a second process writes while this one reads: every read is one committed state, in order",
          arguments: localBackends.filter { $0.name == "sqlite" || $0.name == "lmdb" })
    func readerBesideWriter(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("logistics-reader")
        let calls = 28
        let states = (0...calls).map { LogisticsWrites.state(after: $0, oneSpelling: false).shipmentList.map(fingerprint) }
        try withLogistics(backend, in: directory.url) { daos, _ in
            let helper = try HelperProcess(["logistics-write", backend.name, directory.url.path, "0", "\(calls)"])
            var done = 0
            var seen = 0
            var reads = 0
            var problems: [String] = []
            func readOnce() throws {
                let shipments = try daos.shipments.read()
                reads += 1
                // No earlier state than the one this process saw last; the
                // writer may be ahead of the lines read so far.
                let read = shipments.map(fingerprint)
                guard let found = (seen...calls).first(where: { states[$0] == read }) else {
                    problems.append("read \(reads) after \(done) returned calls: \(shipments.count) shipments, no committed state")
                    return
                }
                seen = found
            }
            while let line = helper.readLine() {
                if line.hasPrefix("done "), let index = Int(line.dropFirst(5)) { done = index + 1 }
                try readOnce()
            }
            let (status, errors) = helper.wait()
            #expect(status == 0, "the writer on \(backend.name): \(errors)")
            try readOnce()
            #expect(problems.isEmpty, "\(backend.name): \(problems.prefix(3))")
            #expect(states[seen] == states[calls], "\(backend.name): the last read saw \(seen) of \(calls) calls")
        }
    }

    @Test("LMDB's map fills with bytes and grows; a move and an erasure after it; all back after reopening")
    func lmdbMapFills() throws {
        let directory = try TemporaryDirectory("logistics-map")
        var random = TestRandom(seed: 3)
        var next: Int64 = 0
        var model = LogisticsModel()
        let env = try LMDBEnvironment(directory: directory.url, durability: .none, mapSize: 1 << 16)
        let start = try env.mapSize
        do {
            let daos = try LogisticsDAOs(env)
            for index in 0..<12 {
                let shipment = Logistics.shipment("s\(index)", parcels: 3, &random, next: &next, oneSpelling: false, payload: 30_000)
                try daos.shipments.persist(shipment)
                model.persist(shipment)
            }
            var moved = model.parcelList[0]
            moved.shipmentCode = "s11"
            try daos.parcels.persist(moved)
            model.persist(moved)
            #expect(try daos.shipments.erase(byPrimaryKey: "s3"))
            model.erase(shipment: "s3")
            #expect(sameBits(try daos.shipments.read(), model.shipmentList))
        }
        let grown = try env.mapSize
        #expect(grown > start, "the map did not grow: \(grown)")
        env.close()
        let again = try LMDBEnvironment(directory: directory.url)
        defer { again.close() }
        let daos = try LogisticsDAOs(again)
        #expect(sameBits(try daos.shipments.read(), model.shipmentList))
        #expect(sameBits(try daos.scans.read(), model.scanList))
    }

    @Test("a directory where the store's file goes: a typed error, and nothing removed", arguments: localBackends)
    func directoryInTheWay(backend: TestBackend) throws {
        let directory = try TemporaryDirectory("logistics-dir")
        let name = backend.files[0]
        let blocker = directory.url.appending(path: name)
        try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: false)
        try Data("mine".utf8).write(to: blocker.appending(path: "inside.txt"))
        var random = TestRandom(seed: 1)
        var next: Int64 = 0
        let shipment = Logistics.shipment("x", parcels: 1, &random, next: &next, oneSpelling: true)
        expectStorageError(nil, "a directory named \(name) on \(backend.name)") {
            try withLogistics(backend, in: directory.url) { daos, _ in try daos.shipments.persist(shipment) }
        }
        #expect((try? Data(contentsOf: blocker.appending(path: "inside.txt"))) == Data("mine".utf8), "\(backend.name)")
    }
}

@Suite("Client trial, logistics: a client's file under a name SQLite keeps for itself")
struct LogisticsSQLiteSidecarTests {
    @Test("a file named like SQLite's rollback journal beside the database is refused and left alone")
    func journalNamedFile() throws {
        let directory = try TemporaryDirectory("logistics-journal")
        let backend = try #require(localBackends.first { $0.name == "sqlite" })
        let model = try LogisticsStoreTests.seeded(backend, in: directory.url, calls: 3)
        let journal = directory.url.appending(path: backend.files[0] + "-journal")
        let bytes = Data(repeating: 1, count: 100)
        try bytes.write(to: journal)
        // libsqlite3 takes any file at `<database>-journal` for a rollback
        // journal of its own: one whose header is not a journal's it deletes
        // when the database is first read, a journal of another copy of the
        // database it plays back. The store's database is in write-ahead-log
        // mode, so the file is not SQLite's: the open is refused and the file
        // kept (docs/CRASHES.md).
        let error = #expect(throws: StorageError.self) {
            try withLogistics(backend, in: directory.url) { daos, _ in _ = try daos.shipments.read() }
        }
        #expect(error?.kind == .io, "\(String(describing: error))")
        #expect(error?.path == journal.path(percentEncoded: false), "\(String(describing: error))")
        #expect(FileManager.default.contents(atPath: journal.path) == bytes)
        try FileManager.default.removeItem(at: journal)
        try withLogistics(backend, in: directory.url) { daos, _ in
            let read = try daos.shipments.read()
            #expect(sameBits(read, model.shipmentList))
        }
    }
}
