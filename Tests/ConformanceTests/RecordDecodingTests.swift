import DAOCore
import Foundation
import TestSupport
import Testing

// A record type whose own decoding refuses a value the store holds (a reading
// over its range, written by an older, laxer build) is not a damaged store:
// every backend reports it as `.decoding`, with the record's error kept as
// `underlying`, even when that error is a `DecodingError`, and the store
// keeps every record. `.corrupt` is for bytes the store did not write.

/// What the strict records below throw for a value they refuse.
private let refusal = "reading over 1000"

/// The refusal as a record would throw it: a `DecodingError` of its own.
private func isRefusal(_ error: (any Error)?) -> Bool {
    guard case .dataCorrupted(let context)? = error as? DecodingError else { return false }
    return context.debugDescription == refusal
}

/// The stored shape: String keys, a real, an optional text and an optional date.
struct LaxReading: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var value: Double
    var note: String?
    var takenAt: Date?

    static let entity = Entity<LaxReading>(
        "decoding_readings", primaryKey: "id", \.id,
        fields: [Field("value", \.value), Field("note", \.note), Field("takenAt", \.takenAt)],
        indexes: [Index("decoding_readings_by_value_note", on: ["value", "note"])])
}

/// The same entity through `Codable` only; `init(from:)` refuses a value over
/// 1000 with the keyed container's own `dataCorruptedError`.
struct StrictReading: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var value: Double
    var note: String?
    var takenAt: Date?

    static let entity = Entity<StrictReading>(
        "decoding_readings", primaryKey: "id", \.id,
        fields: [Field("value", \.value), Field("note", \.note), Field("takenAt", \.takenAt)],
        indexes: [Index("decoding_readings_by_value_note", on: ["value", "note"])])

    enum CodingKeys: String, CodingKey { case id, value, note, takenAt }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        value = try container.decode(Double.self, forKey: .value)
        note = try container.decodeIfPresent(String.self, forKey: .note)
        takenAt = try container.decodeIfPresent(Date.self, forKey: .takenAt)
        if value > 1000 {
            throw DecodingError.dataCorruptedError(forKey: .value, in: container, debugDescription: refusal)
        }
    }
}

/// The same entity read by position; both of its initializers refuse a value
/// over 1000 with a `DecodingError` that names no coding path.
struct StrictFieldwiseReading: Record, FieldwiseRecord, Equatable {
    typealias PrimaryKey = String
    var id: String
    var value: Double
    var note: String?
    var takenAt: Date?

    static let entity = Entity<StrictFieldwiseReading>(
        "decoding_readings", primaryKey: "id", \.id,
        fields: [Field("value", \.value), Field("note", \.note), Field("takenAt", \.takenAt)],
        indexes: [Index("decoding_readings_by_value_note", on: ["value", "note"])])

    enum CodingKeys: String, CodingKey { case id, value, note, takenAt }

    static func check(_ value: Double) throws {
        if value > 1000 { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: refusal)) }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        value = try container.decode(Double.self, forKey: .value)
        note = try container.decodeIfPresent(String.self, forKey: .note)
        takenAt = try container.decodeIfPresent(Date.self, forKey: .takenAt)
        try Self.check(value)
    }

    init(fields: inout some FieldReader) throws {
        id = try fields.decode()
        value = try fields.decode()
        note = try fields.decode()
        takenAt = try fields.decode()
        try Self.check(value)
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encode(value)
        try fields.encode(note)
        try fields.encode(takenAt)
    }
}

/// A parent owning laxly written children.
struct LaxStation: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var readings: [LaxStationReading]

    static let entity = Entity<LaxStation>(
        "decoding_stations", primaryKey: "id", \.id, fields: [Field("name", \.name)],
        relations: [Relation("readings", \.readings, foreignKey: "stationId", \LaxStationReading.stationId)])
}

struct LaxStationReading: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var stationId: String
    var value: Double

    static let entity = Entity<LaxStationReading>(
        "decoding_station_readings", primaryKey: "id", \.id,
        fields: [Field("stationId", \.stationId), Field("value", \.value)], ownedBy: LaxStation.self)
}

/// The same parent, whose children refuse a value over 1000.
struct StrictStation: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var readings: [StrictStationReading]

    static let entity = Entity<StrictStation>(
        "decoding_stations", primaryKey: "id", \.id, fields: [Field("name", \.name)],
        relations: [Relation("readings", \.readings, foreignKey: "stationId", \StrictStationReading.stationId)])
}

struct StrictStationReading: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var stationId: String
    var value: Double

    static let entity = Entity<StrictStationReading>(
        "decoding_station_readings", primaryKey: "id", \.id,
        fields: [Field("stationId", \.stationId), Field("value", \.value)], ownedBy: StrictStation.self)

    enum CodingKeys: String, CodingKey { case id, stationId, value }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        stationId = try container.decode(String.self, forKey: .stationId)
        value = try container.decode(Double.self, forKey: .value)
        if value > 1000 {
            throw DecodingError.dataCorruptedError(forKey: .value, in: container, debugDescription: refusal)
        }
    }
}

@Suite("Conformance: a record's own decoding refusing a stored value is .decoding, not .corrupt, on every backend")
struct RecordDecodingTests {
    static let readings = [
        LaxReading(id: "a", value: 12.5, note: "calm", takenAt: Date(timeIntervalSince1970: 1_700_000_000)),
        LaxReading(id: "b 🚀", value: 1000.5, note: nil, takenAt: nil),
        LaxReading(id: "c", value: 0.0, note: "", takenAt: Date(timeIntervalSince1970: -1)),
    ]

    /// Stores ``readings`` laxly, runs `read` on a reopened store and returns
    /// its error; then checks that the store still holds every reading.
    private func refusedRead(
        _ backend: TestBackend, sourceLocation: SourceLocation = #_sourceLocation, _ read: (any Store) throws -> Void
    ) throws -> StorageError? {
        let directory = try TemporaryDirectory()
        try withOpened(backend, at: directory.url) { try $0.anyStorage(for: LaxReading.self).persist(Self.readings) }
        let error = try withOpened(backend, at: directory.url) { store in
            expectStorageError(sourceLocation: sourceLocation) { try read(store) }
        }
        let kept = try withOpened(backend, at: directory.url) {
            try $0.anyStorage(for: LaxReading.self).readAll().sorted { $0.id < $1.id }
        }
        #expect(kept == Self.readings, "the refused read lost records", sourceLocation: sourceLocation)
        return error
    }

    @Test("init(from:) throwing its own DecodingError", arguments: allBackends)
    func codableRefusal(backend: TestBackend) throws {
        // The file stores decode an entity's records when its storage is
        // opened, SQLite and LMDB when they are read: either way the call fails.
        let error = try refusedRead(backend) { _ = try $0.anyStorage(for: StrictReading.self).readAll() }
        #expect(error?.kind == .decoding, "\(String(describing: error))")
        #expect(error?.entity == "decoding_readings")
        #expect(isRefusal(error?.underlying), "\(String(describing: error))")
    }

    @Test("init(fields:) and init(from:) throwing a DecodingError without a coding path", arguments: allBackends)
    func fieldwiseRefusal(backend: TestBackend) throws {
        let error = try refusedRead(backend) { _ = try $0.anyStorage(for: StrictFieldwiseReading.self).readAll() }
        #expect(error?.kind == .decoding, "\(String(describing: error))")
        #expect(error?.entity == "decoding_readings")
        #expect(isRefusal(error?.underlying), "\(String(describing: error))")
    }

    @Test("a read by key of the refused record", arguments: allBackends)
    func readByKey(backend: TestBackend) throws {
        let error = try refusedRead(backend) { _ = try $0.anyStorage(for: StrictReading.self).read(primaryKey: "b 🚀") }
        #expect(error?.kind == .decoding, "\(String(describing: error))")
        #expect(isRefusal(error?.underlying), "\(String(describing: error))")
    }

    @Test("a child refusing a value, read through its parent", arguments: allBackends)
    func childRefusal(backend: TestBackend) throws {
        let stations = [
            LaxStation(id: "north", name: "North", readings: [
                LaxStationReading(id: 1, stationId: "north", value: 3), LaxStationReading(id: 2, stationId: "north", value: 2000),
            ]),
            LaxStation(id: "south", name: "Süd", readings: [LaxStationReading(id: 3, stationId: "south", value: .infinity)]),
        ]
        let directory = try TemporaryDirectory()
        try withOpened(backend, at: directory.url) { try $0.anyStorage(for: LaxStation.self).persist(stations) }
        let error = try withOpened(backend, at: directory.url) { store in
            expectStorageError { _ = try store.anyStorage(for: StrictStation.self).readAll() }
        }
        #expect(error?.kind == .decoding, "\(String(describing: error))")
        #expect(isRefusal(error?.underlying), "\(String(describing: error))")
        let kept = try withOpened(backend, at: directory.url) {
            try $0.anyStorage(for: LaxStation.self).readAll().sorted { $0.id < $1.id }
        }
        #expect(kept == stations)
    }
}
