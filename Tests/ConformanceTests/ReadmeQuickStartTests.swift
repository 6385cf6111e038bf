import DAOCore
import DAOMacros
import FileStorage
import Foundation
import LMDBStorage
import SQLiteStorage
import TestSupport
import Testing

// README.md, "Quick start": the plain object, the record, the translator and the
// DAO calls, as written there (the store's directory aside). If this stops
// compiling or passing, the README is wrong.

// --- README quick start: the types ---
struct Note: Plain {
    let uniqueId: Int64
    let text: String
    let pinned: Bool
}

@StoredRecord("notes", indexes: [Index("notes_by_pinned", on: ["pinned"])])
struct NoteRecord {
    var id: Int64       // the primary key: `id`, or name another with primaryKey:
    var text: String
    var pinned: Bool
}

struct NoteTranslator: Translator {
    func record(from note: Note) -> NoteRecord {
        NoteRecord(id: note.uniqueId, text: note.text, pinned: note.pinned)
    }
    func plain(from record: NoteRecord) -> Note {
        Note(uniqueId: record.id, text: record.text, pinned: record.pinned)
    }
}
// --- README quick start: the types end ---

/// README.md, "Without the macro": the same record declared by hand, as written
/// there (inside a namespace, beside the macro's `NoteRecord`).
enum HandWritten {
    // --- README without the macro begins ---
    struct NoteRecord: Record {
        typealias PrimaryKey = Int64
        var id: Int64
        var text: String
        var pinned: Bool

        static let entity = Entity<NoteRecord>(
            "notes",
            primaryKey: "id", \.id,
            fields: [Field("text", \.text), Field("pinned", \.pinned)],
            indexes: [Index("notes_by_pinned", on: ["pinned"])])
    }
    // --- README without the macro ends ---

    struct NoteTranslator: Translator {
        func record(from note: Note) -> NoteRecord {
            NoteRecord(id: note.uniqueId, text: note.text, pinned: note.pinned)
        }
        func plain(from record: NoteRecord) -> Note {
            Note(uniqueId: record.id, text: record.text, pinned: record.pinned)
        }
    }
}

// --- README fieldwise begins ---
extension HandWritten.NoteRecord: FieldwiseRecord {
    init(fields: inout some FieldReader) throws {
        self.init(id: try fields.decode(), text: try fields.decode(), pinned: try fields.decode())
    }
    func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encode(text)
        try fields.encode(pinned)
    }
}
// --- README fieldwise ends ---

@Suite("README quick start")
struct ReadmeQuickStartTests {
    @Test func theQuickStartRunsAsWritten() throws {
        let scratch = try TemporaryDirectory("readme-quick-start")
        let path = scratch.url.appending(path: "notes.sqlite")

        // --- README quick start: the calls ---
        let store = try SQLiteDatabase(path: path)   // or FileStore(directory:format:), LMDBEnvironment(directory:)
        let notes = DAO(storage: try store.storage(for: NoteRecord.self), translator: NoteTranslator())

        try notes.persist([
            Note(uniqueId: 1, text: "Buy milk", pinned: true),
            Note(uniqueId: 2, text: "Call Ann", pinned: false),
        ])
        let note = try notes.read(byPrimaryKey: 1)          // Note(uniqueId: 1, …)
        let pinned = try notes.read(
            where: #Predicate { $0.pinned == true },
            sortedBy: [SortDescriptor(\.id, order: .reverse)])
        let howMany = try notes.count()                     // 2
        try notes.erase(byPrimaryKey: 2)
        try store.close()
        // --- README quick start: the calls end ---

        #expect(note == Note(uniqueId: 1, text: "Buy milk", pinned: true))
        #expect(pinned == [Note(uniqueId: 1, text: "Buy milk", pinned: true)])
        #expect(howMany == 2)
        let reopened = try SQLiteDatabase(path: path)
        let again = DAO(storage: try reopened.storage(for: NoteRecord.self), translator: NoteTranslator())
        #expect(try again.read() == [Note(uniqueId: 1, text: "Buy milk", pinned: true)])
        try reopened.close()
    }

    /// Both declarations store the same entity, read and written by position,
    /// and answer alike on every backend.
    @Test(arguments: allBackends)
    func theMacroAndTheHandWrittenRecordAgree(_ backend: TestBackend) throws {
        #expect(HandWritten.NoteRecord.entity.name == NoteRecord.entity.name)
        #expect(HandWritten.NoteRecord.entity.fields.map(\.name) == NoteRecord.entity.fields.map(\.name))
        #expect(HandWritten.NoteRecord.entity.indexes == NoteRecord.entity.indexes)
        let written = (1...40).map { Note(uniqueId: Int64($0), text: "note \($0)", pinned: $0 % 3 == 0) }
        var answers: [[Note]] = []
        for declaration in 0..<2 {
            let scratch = try TemporaryDirectory("readme-\(backend.name)-\(declaration)")
            let store = try backend.open(scratch.url, .none)
            if declaration == 0 {
                let notes = DAO(storage: try store.anyStorage(for: NoteRecord.self), translator: NoteTranslator())
                try notes.persist(written)
                answers.append(try notes.read(where: #Predicate { $0.pinned == true }, sortedBy: [SortDescriptor(\.id, order: .reverse)]))
            } else {
                let notes = DAO(
                    storage: try store.anyStorage(for: HandWritten.NoteRecord.self),
                    translator: HandWritten.NoteTranslator())
                try notes.persist(written)
                answers.append(try notes.read(where: #Predicate { $0.pinned == true }, sortedBy: [SortDescriptor(\.id, order: .reverse)]))
            }
            try store.close()
        }
        let expected = Array(written.filter(\.pinned).reversed())
        #expect(answers == [expected, expected])
    }
}
