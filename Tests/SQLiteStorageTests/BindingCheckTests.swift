import DAOCore
import DialogGraph
import Foundation
@testable import SQLiteStorage
import Testing

/// Records bound by position have their reals checked as they are bound, not by
/// a pass over every record before the write: these check that the answer is
/// the one of checking first (the core's error, nothing written), whatever else
/// is wrong with the batch.
@Suite("Reals checked while binding")
struct BindingCheckTests {
    func dialog(_ id: Int64, messages: Int64 = 4) -> DialogRecord {
        DialogRecord(id: id, isPinned: id % 2 == 0, messages: (1...messages).map { message(id * 100 + $0, dialog: id) })
    }

    @Test("the example's tree is checked while binding; a Codable record first")
    func whichTablesCheckWhileBinding() throws {
        #expect(Table(DialogRecord.entity).checksRealsWhileBinding)
        #expect(Table(MessageRecord.entity).checksRealsWhileBinding)
        #expect(!Table(UserRecord.entity).checksRealsWhileBinding)
    }

    @Test("a NaN or -0.0 date deep in a batch: the core's error, nothing written", arguments: [Double.nan, -0.0])
    func refusedRealInChild(bad: Double) throws {
        try withDatabase(durability: .none) { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            try dialogs.persist([dialog(1)])
            let before = try dialogs.readAll()
            var batch = [dialog(2), dialog(3), dialog(4)]
            batch[1].messages[2].date = Date(timeIntervalSinceReferenceDate: bad)
            var expected: StorageError?
            do {
                try DialogRecord.entity.checkStorable(batch)
            } catch let error as StorageError {
                expected = error
            }
            let core = try #require(expected)
            #expect {
                try dialogs.persist(batch)
            } throws: { error in
                guard let error = error as? StorageError else { return false }
                return error.kind == .invalidArgument && error.operation == .persist
                    && error.entity == core.entity && error.message == core.message
            }
            #expect(try dialogs.readAll() == before)
            // The connection is usable afterwards, and the batch without the bad value is written.
            batch[1].messages[2].date = Date(timeIntervalSinceReferenceDate: 1)
            try dialogs.persist(batch)
            #expect(try dialogs.readAll().map(\.id) == [1, 2, 3, 4])
        }
    }

    @Test("a batch with a foreign child first and a NaN later reports the NaN, as checking first does")
    func refusedRealWinsOverLaterConstraint() throws {
        try withDatabase(durability: .none) { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            var batch = [dialog(1), dialog(2)]
            // The first dialog holds a message that names another dialog: the
            // write stops there, before the second dialog is bound.
            batch[0].messages[1].dialogId = 9
            batch[1].messages[0].date = Date(timeIntervalSinceReferenceDate: .nan)
            #expect {
                try dialogs.persist(batch)
            } throws: { ($0 as? StorageError)?.kind == .invalidArgument }
            // Without the NaN the constraint is what is reported.
            batch[1].messages[0].date = Date(timeIntervalSinceReferenceDate: 2)
            #expect {
                try dialogs.persist(batch)
            } throws: { ($0 as? StorageError)?.kind == .constraint }
            #expect(try dialogs.readAll().isEmpty)
        }
    }
}

/// The concrete `decode()` overloads of `FieldReader` are picked only for
/// fields of exactly their type; an optional field read with `decode()` still
/// goes through `Optional`'s conformance and reads `nil` for a null.
@Suite("Field reader overloads")
struct FieldReaderOverloadTests {
    struct Sample: Equatable {
        var id: Int64
        var count: Int
        var note: String?
        var score: Double?
        var when: Date?
        var flag: Bool
        var small: Int32

        init(fields: inout some FieldReader) throws {
            id = try fields.decode()
            count = try fields.decode()
            // `decode()` for optionals: the generic version, not Int64's or String's.
            note = try fields.decode()
            score = try fields.decodeIfPresent()
            when = try fields.decode()
            flag = try fields.decode()
            small = try fields.decode()
        }

        init(id: Int64, count: Int, note: String?, score: Double?, when: Date?, flag: Bool, small: Int32) {
            (self.id, self.count, self.note, self.score, self.when, self.flag, self.small) =
                (id, count, note, score, when, flag, small)
        }
    }

    @Test("nulls read as nil, values as themselves")
    func optionalsAndValues() throws {
        var reader = StoredValueReader(
            [.integer(7), .integer(-3), .null, .null, .null, .integer(1), .integer(12)], entity: "sample")
        #expect(
            try Sample(fields: &reader)
                == Sample(id: 7, count: -3, note: nil, score: nil, when: nil, flag: true, small: 12))
        var full = StoredValueReader(
            [.integer(7), .integer(-3), .text("n"), .real(0.5), .real(10), .integer(0), .integer(12)], entity: "sample")
        #expect(
            try Sample(fields: &full)
                == Sample(
                    id: 7, count: -3, note: "n", score: 0.5, when: Date(timeIntervalSinceReferenceDate: 10), flag: false,
                    small: 12))
    }

    @Test("a null where a value must be is still an error")
    func nullForRequired() throws {
        var reader = StoredValueReader([.null, .integer(1), .null, .null, .null, .integer(1), .integer(1)], entity: "sample")
        #expect(throws: StorageError.self) { try Sample(fields: &reader) }
    }
}

/// A record that declares a field optional but reads it by position as a
/// required value: a NULL there is the column reader's typed error.
private struct StrictNote: Record, FieldwiseRecord, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var note: String?
    var count: Int64?
    var weight: Double?

    static let entity = Entity<StrictNote>(
        "strict_notes", primaryKey: "id", \.id,
        fields: [Field("note", \.note), Field("count", \.count), Field("weight", \.weight)])

    init(id: Int64, note: String?, count: Int64?, weight: Double?) {
        (self.id, self.note, self.count, self.weight) = (id, note, count, weight)
    }

    init(fields: inout some FieldReader) throws {
        id = try fields.decode()
        note = try fields.decode(String.self)
        count = try fields.decode(Int64.self)
        weight = try fields.decode(Double.self)
    }

    func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encodeIfPresent(note)
        try fields.encodeIfPresent(count)
        try fields.encodeIfPresent(weight)
    }
}

@Suite("Column reader")
struct ColumnReaderTests {
    @Test("a NULL read as a required text, integer or real is a decoding error naming the column")
    func nullForRequiredField() throws {
        try withDatabase(durability: .none) { database in
            let notes = try database.storage(for: StrictNote.self)
            let full = StrictNote(id: 1, note: "a", count: 0, weight: 0)
            try notes.persist([full])
            #expect(try notes.read(primaryKey: 1) == full)
            let cases: [(StrictNote, String)] = [
                (StrictNote(id: 2, note: nil, count: 1, weight: 1), "note"),
                (StrictNote(id: 3, note: "b", count: nil, weight: 1), "count"),
                (StrictNote(id: 4, note: "b", count: 1, weight: nil), "weight"),
            ]
            for (record, column) in cases {
                try notes.persist([record])
                #expect {
                    try notes.read(primaryKey: record.id)
                } throws: { error in
                    guard let error = error as? StorageError else { return false }
                    return error.kind == .decoding && error.message.contains("'\(column)'")
                }
                _ = try notes.erase(primaryKeys: [record.id])
            }
        }
    }
}
