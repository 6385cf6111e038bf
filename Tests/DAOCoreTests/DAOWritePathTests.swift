import DAOCore
import Foundation
import Synchronization
import Testing

// A record of another shape than the benchmark's: a text key, an optional
// text and a real.
private struct Note: Plain {
    let uniqueId: String
    let body: String?
    let weight: Double
}

private struct NoteRecord: Record, Equatable {
    typealias PrimaryKey = String
    var key: String
    var body: String?
    var weight: Double
    static let entity = Entity<NoteRecord>(
        "notes", primaryKey: "key", \.key, fields: [Field("body", \.body), Field("weight", \.weight)])
}

private struct Refused: Error {}

/// Translates notes, refusing the ones whose key is in `refusing` (and,
/// back, the records whose key is in `refusingRecords`).
private struct NoteTranslator: Translator {
    var refusing: Set<String> = []
    var refusingRecords: Set<String> = []
    func record(from plain: Note) throws -> NoteRecord {
        if refusing.contains(plain.uniqueId) { throw Refused() }
        return NoteRecord(key: plain.uniqueId, body: plain.body, weight: plain.weight)
    }
    func plain(from record: NoteRecord) throws -> Note {
        if refusingRecords.contains(record.key) { throw Refused() }
        return Note(uniqueId: record.key, body: record.body, weight: record.weight)
    }
}

/// A storage that only notes the batches `persist` receives.
private final class BatchRecorder: Storage, Sendable {
    typealias Record = NoteRecord
    let batches = Mutex<[[NoteRecord]]>([])
    func persist(_ records: [NoteRecord]) throws { batches.withLock { $0.append(records) } }
    /// The records of the last batch.
    private var last: [NoteRecord] { batches.withLock { $0.last ?? [] } }
    func read(primaryKey key: String) throws -> NoteRecord? { last.first { $0.key == key } }
    func read(primaryKeys keys: [String]) throws -> [NoteRecord] {
        keys.compactMap { key in last.first { $0.key == key } }
    }
    func read(_ query: Query<NoteRecord>) throws -> [NoteRecord] { last }
    func count(where predicate: Predicate<NoteRecord>?) throws -> Int { 0 }
    func erase(primaryKeys keys: [String]) throws -> Int { 0 }
    func erase(where predicate: Predicate<NoteRecord>?) throws -> Int { 0 }
}

/// A sequence that is not a collection and underestimates its count as 0.
private struct Countdown: Sequence, IteratorProtocol {
    var notes: [Note]
    mutating func next() -> Note? { notes.isEmpty ? nil : notes.removeFirst() }
}

@Suite("The DAO hands the storage translated records and translates what it reads")
struct DAOWritePathTests {
    private let notes = [
        Note(uniqueId: "b", body: nil, weight: 0.5),
        Note(uniqueId: "a\u{0}é🚀", body: "e\u{301}", weight: -2),
        Note(uniqueId: String(repeating: "k", count: 5_000), body: "", weight: 1e300),
    ]

    private var expected: [NoteRecord] {
        notes.map { NoteRecord(key: $0.uniqueId, body: $0.body, weight: $0.weight) }
    }

    @Test("an array, a lazy map and a plain sequence each reach the storage as one batch, in order")
    func batches() throws {
        let storage = BatchRecorder()
        let dao = DAO(storage: storage, translator: NoteTranslator())
        try dao.persist(notes)
        try dao.persist(notes.lazy.map { $0 })
        try dao.persist(Countdown(notes: notes))
        try dao.persist(notes[1])
        try dao.persist([Note]())
        let batches = storage.batches.withLock { $0 }
        #expect(batches == [expected, expected, expected, [expected[1]], []])
    }

    @Test("a translator's refusal is a translation error naming the object, and the storage is not called")
    func refusal() throws {
        let storage = BatchRecorder()
        let dao = DAO(storage: storage, translator: NoteTranslator(refusing: ["a\u{0}é🚀"]))
        for persist in [{ try dao.persist(notes) }, { try dao.persist(Countdown(notes: notes)) },
                        { try dao.persist(notes[1]) }] {
            let error = #expect(throws: StorageError.self) { try persist() }
            #expect(error?.kind == .translation)
            #expect(error?.operation == .translate)
            #expect(error?.entity == "notes")
            #expect(error?.message.contains("plain object a\u{0}é🚀 could not be translated") == true)
            #expect(error?.underlying is Refused)
        }
        #expect(storage.batches.withLock { $0 }.isEmpty)
    }

    @Test("reads translate every record the storage gives back, and a refusal names the record")
    func reads() throws {
        let storage = BatchRecorder()
        try DAO(storage: storage, translator: NoteTranslator()).persist(notes)
        let dao = DAO(storage: storage, translator: NoteTranslator())
        #expect(try dao.read() == notes)
        #expect(try dao.read(byPrimaryKey: notes[2].uniqueId) == notes[2])
        #expect(try dao.read(byPrimaryKey: "missing") == nil)
        #expect(try dao.read(byPrimaryKeys: [notes[1].uniqueId, "missing", notes[1].uniqueId]) == [notes[1], notes[1]])
        #expect(try dao.read(where: nil) == notes)

        let refusing = DAO(storage: storage, translator: NoteTranslator(refusingRecords: ["b"]))
        for read in [{ _ = try refusing.read() }, { _ = try refusing.read(byPrimaryKey: "b") },
                     { _ = try refusing.read(byPrimaryKeys: ["b"]) }] {
            let error = #expect(throws: StorageError.self) { try read() }
            #expect(error?.kind == .translation)
            #expect(error?.message.contains("record b could not be translated to a plain object") == true)
            #expect(error?.underlying is Refused)
        }
    }
}
