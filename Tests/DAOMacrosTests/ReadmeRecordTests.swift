import DAOCore
import DAOMacros
import Foundation
import Testing

// README.md's record declaration ("Quick start"), as written there.
@StoredRecord("notes", indexes: [Index("notes_by_pinned", on: ["pinned"])])
struct NoteRecord: Equatable {
    var id: Int64
    var text: String
    var pinned: Bool
}

// Every storable type of FieldValue, through the generated positional code.
enum Mood: Int32, Codable, Sendable, FieldValue { case calm = 1, busy = 2 }

@StoredRecord("samples", primaryKey: "key")
struct Sample: Equatable {
    var uuid: UUID
    var key: String
    var int: Int
    var int64: Int64
    var int32: Int32
    var int16: Int16
    var int8: Int8
    var uint32: UInt32
    var double: Double
    var float: Float
    var bool: Bool
    var text: String
    var date: Date
    var data: Data
    var mood: Mood
    var optionalMood: Mood?
    var optionalFloat: Float?
    var optionalUUID: UUID?
    var nested: Int64??
}

@Suite("@StoredRecord records")
struct ReadmeRecordTests {
    @Test func theReadmeRecordIsAFieldwiseRecord() throws {
        #expect(NoteRecord.entity.name == "notes")
        #expect(NoteRecord.entity.fields.map(\.name) == ["id", "text", "pinned"])
        #expect(NoteRecord.entity.indexes == [Index("notes_by_pinned", on: ["pinned"])])
        let note = NoteRecord(id: 7, text: "Hello, world", pinned: true)
        #expect(try note.writtenFields() == [.integer(7), .text("Hello, world"), .integer(1)])
        #expect(try note.rebuiltFromFields() == note)
        #expect((NoteRecord.self as Any.Type) is any FieldwiseRecord.Type)
    }

    @Test func everyFieldValueTypeRoundTrips() throws {
        let samples = [
            Sample(
                uuid: UUID(), key: "a", int: .min, int64: .max, int32: .min, int16: .max, int8: .min, uint32: .max,
                double: .leastNonzeroMagnitude, float: .greatestFiniteMagnitude, bool: true, text: "nul\u{0} 🚀",
                date: Date(timeIntervalSinceReferenceDate: -1e10), data: Data([0, 255]), mood: .busy,
                optionalMood: nil, optionalFloat: -1.5, optionalUUID: UUID(), nested: .some(nil)),
            Sample(
                uuid: UUID(), key: "b", int: 0, int64: 0, int32: 0, int16: 0, int8: 0, uint32: 0, double: .infinity, float: 0,
                bool: false, text: "", date: .distantFuture, data: Data(), mood: .calm, optionalMood: .calm,
                optionalFloat: nil, optionalUUID: nil, nested: 5),
        ]
        for sample in samples {
            let fields = try sample.writtenFields()
            #expect(fields == Sample.entity.fields.map { $0.value(in: sample) })
            var rebuilt = try sample.rebuiltFromFields()
            // A stored null cannot tell `.some(nil)` from `nil`; both read back as `nil`.
            if case .some(.none) = sample.nested { #expect(rebuilt.nested == .none) ; rebuilt.nested = sample.nested }
            #expect(rebuilt == sample)
        }
    }

    @Test func outOfRangeValuesAreDecodingErrors() {
        var reader = StoredValueReader(
            [.integer(Int64(Int32.max) + 1)], entity: "samples")
        #expect { _ = try Int32.read(from: &reader) } throws: { ($0 as? StorageError)?.kind == .decoding }
        var uuid = StoredValueReader([.text("not a uuid")], entity: "samples")
        #expect { _ = try UUID.read(from: &uuid) } throws: { ($0 as? StorageError)?.kind == .decoding }
        var float = StoredValueReader([.real(1e300)], entity: "samples")
        #expect { _ = try Float.read(from: &float) } throws: { ($0 as? StorageError)?.kind == .decoding }
        var mood = StoredValueReader([.integer(9)], entity: "samples")
        #expect { _ = try Mood.read(from: &mood) } throws: { ($0 as? StorageError)?.kind == .decoding }
    }
}

// README.md's relation example ("Children"), as written there.
@StoredRecord("authors")
struct AuthorRecord: Equatable {
    var id: String
    var name: String
    @Children(foreignKey: "authorId") var books: [BookRecord]
}

@StoredRecord(
    "books", indexes: [Index("books_by_author_year", on: ["authorId", "year"])],
    ownedBy: AuthorRecord.self)
struct BookRecord: Equatable {
    var id: String
    var authorId: String
    var year: Int64
    var subtitle: String?
}

@Suite("The README's relation example")
struct ReadmeRelationTests {
    @Test func declaresTheRelationAndTheOwner() throws {
        try AuthorRecord.entity.validate()
        #expect(AuthorRecord.entity.fields.map(\.name) == ["id", "name"])
        #expect(AuthorRecord.entity.relations.map(\.name) == ["books"])
        #expect(AuthorRecord.entity.relations.first?.foreignKeyField == "authorId")
        #expect(BookRecord.entity.owner.map { $0 == AuthorRecord.self } == true)
        let author = AuthorRecord(
            id: "a", name: "Ann", books: [BookRecord(id: "b", authorId: "a", year: 2001, subtitle: nil)])
        #expect(try author.writtenFields() == [.text("a"), .text("Ann")])
        #expect(try author.rebuiltFromFields() == AuthorRecord(id: "a", name: "Ann", books: []))
    }
}
