import DAOCore
import Foundation
import Synchronization
import Testing

// A record of another shape than the benchmark's, written through Codable: a
// text key, an optional text and a real.
private struct MeterRecord: Record, Equatable {
    typealias PrimaryKey = String
    var key: String
    var label: String?
    var value: Double
    static let entity = Entity<MeterRecord>(
        "readings", primaryKey: "key", \.key, fields: [Field("label", \.label), Field("value", \.value)])
}

private struct Meter: Plain {
    let uniqueId: String
    let value: Double
}

private struct Refused: Error {}
private struct EngineFailure: Error, Equatable { var key: String }

/// Translates gauges, counting the translations, refusing the keys in `refusing`.
private final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

private struct CountingTranslator: Translator {
    let translated = Counter()
    var refusing: Set<String> = []
    func record(from plain: Meter) throws -> MeterRecord {
        if refusing.contains(plain.uniqueId) { throw Refused() }
        translated.value.add(1, ordering: .relaxed)
        return MeterRecord(key: plain.uniqueId, label: nil, value: plain.value)
    }
    func plain(from record: MeterRecord) throws -> Meter { Meter(uniqueId: record.key, value: record.value) }
}

/// A storage that writes each handed record as it comes, noting how many
/// records its translator had made when each one arrived.
private final class StreamRecorder: Storage, Sendable {
    typealias Record = MeterRecord
    let translator: CountingTranslator
    let arrivals = Mutex<[(key: String, translatedSoFar: Int)]>([])
    let arrays = Mutex<Int>(0)
    init(_ translator: CountingTranslator) { self.translator = translator }
    func persist(_ records: [MeterRecord]) throws { arrays.withLock { $0 += 1 } }
    func persist(handingOver produce: (_ hand: RecordHandoff<MeterRecord>) throws -> Void) throws {
        try produce { record in
            let count = translator.translated.value.load(ordering: .relaxed)
            arrivals.withLock { $0.append((record.key, count)) }
        }
    }
    func read(primaryKey key: String) throws -> MeterRecord? { nil }
    func read(primaryKeys keys: [String]) throws -> [MeterRecord] { [] }
    func read(_ query: Query<MeterRecord>) throws -> [MeterRecord] { [] }
    func count(where predicate: Predicate<MeterRecord>?) throws -> Int { 0 }
    func erase(primaryKeys keys: [String]) throws -> Int { 0 }
    func erase(where predicate: Predicate<MeterRecord>?) throws -> Int { 0 }
}

private func readings(_ keys: [String], nanAt: Set<String> = []) -> [MeterRecord] {
    keys.map { MeterRecord(key: $0, label: $0 == "b" ? "é🚀" : nil, value: nanAt.contains($0) ? .nan : 1.5) }
}

/// How many times a producer ran.
private final class Runs {
    var count = 0
}

/// Hands `records` over, throwing `Refused` at `failingAt` (a translation
/// error); counts its runs.
private func producer(
    _ records: [MeterRecord], failingAt: Int? = nil, runs: Runs
) -> (RecordHandoff<MeterRecord>) throws -> Void {
    { hand in
        runs.count += 1
        for (index, record) in records.enumerated() {
            if index == failingAt { throw Refused() }
            try hand(record)
        }
    }
}

@Suite("Records handed over one at a time: the DAO's side and the adapters' bookkeeping")
struct PersistHandoffTests {
    @Test("the DAO translates each object as the storage takes it, not all before the first")
    func translatedAsHandedOver() throws {
        let translator = CountingTranslator()
        let storage = StreamRecorder(translator)
        let dao = DAO(storage: storage, translator: translator)
        let gauges = ["a", "b", "k\u{0}é"].map { Meter(uniqueId: $0, value: 2) }
        try dao.persist(gauges)
        try dao.persist(gauges.lazy.filter { $0.uniqueId != "b" })
        try dao.persist(gauges[1])
        let arrivals = storage.arrivals.withLock { $0 }
        #expect(arrivals.map(\.key) == ["a", "b", "k\u{0}é", "a", "k\u{0}é", "b"])
        #expect(arrivals.map(\.translatedSoFar) == [1, 2, 3, 4, 5, 6])
        // No object: the storage is given the empty array, as before.
        try dao.persist([Meter]())
        #expect(storage.arrays.withLock { $0 } == 1)
        #expect(storage.arrivals.withLock { $0 }.count == 6)
    }

    @Test("a write failure lets the producer run on, writing nothing; a later NaN refuses nothing")
    func noRefusalAfterWriteFailure() throws {
        let runs = Runs()
        var written: [String] = []
        let records = readings(["a", "b", "c", "d"], nanAt: ["c"])
        let produce = producer(records, runs: runs)
        var handoff = PersistHandoff<MeterRecord>(keepingRecords: false)
        let failure = #expect(throws: EngineFailure.self) {
            try handoff.run(produce) { record in
                if record.key == "b" { throw EngineFailure(key: "b") }
                written.append(record.key)
            }
        }
        #expect(failure == EngineFailure(key: "b"))
        #expect(written == ["a"])
        #expect(handoff.count == 4)
        #expect(try handoff.refusal(after: EngineFailure(key: "b"), produce) == nil)
        #expect(runs.count == 1)
    }

    @Test("without a refused real the write's error stands; a translation error after it wins, as it is")
    func producerErrorWins() throws {
        let runs = Runs()
        let clean = producer(readings(["a", "b", "c"]), runs: runs)
        var handoff = PersistHandoff<MeterRecord>(keepingRecords: true)
        #expect(throws: EngineFailure.self) {
            try handoff.run(clean) { _ in throw EngineFailure(key: "a") }
        }
        #expect(try handoff.refusal(after: EngineFailure(key: "a"), clean) == nil)

        let failing = producer(readings(["a", "b", "c"], nanAt: ["a"]), failingAt: 2, runs: runs)
        #expect(throws: Refused.self) {
            try handoff.run(failing) { _ in throw EngineFailure(key: "a") }
        }
        #expect(throws: Refused.self) { _ = try handoff.refusal(after: EngineFailure(key: "a"), failing) }
        #expect(runs.count == 2)
    }

    @Test("a producer that never ran is run once, writing nothing, when the call failed before it")
    func producerRunAfterEarlyFailure() throws {
        let runs = Runs()
        var handoff = PersistHandoff<MeterRecord>(keepingRecords: false)
        let withNaN = producer(readings(["a", "b"], nanAt: ["b"]), runs: runs)
        #expect(try handoff.refusal(after: EngineFailure(key: "closed"), withNaN) == nil)
        #expect(runs.count == 1)
        var fresh = PersistHandoff<MeterRecord>(keepingRecords: false)
        let failing = producer(readings(["a", "b"], nanAt: ["b"]), failingAt: 1, runs: runs)
        #expect(throws: Refused.self) { _ = try fresh.refusal(after: EngineFailure(key: "closed"), failing) }
    }

    @Test("an error that starts the transaction again stops the producer at once, and a new run starts afresh")
    func stopAndRunAgain() throws {
        let runs = Runs()
        var attempts = 0
        var written: [String] = []
        let produce = producer(readings(["a", "b", "c"]), runs: runs)
        var handoff = PersistHandoff<MeterRecord>(keepingRecords: true)
        while true {
            attempts += 1
            do {
                written = []
                try handoff.run(produce, stoppingAt: { $0 is EngineFailure }) { record in
                    if attempts == 1, record.key == "b" { throw EngineFailure(key: "full") }
                    written.append(record.key)
                }
                break
            } catch is EngineFailure {
                #expect(handoff.count == 2)  // "c" was never made
            }
        }
        #expect(attempts == 2)
        #expect(runs.count == 2)
        #expect(written == ["a", "b", "c"])
        #expect(handoff.count == 3)
    }
}
