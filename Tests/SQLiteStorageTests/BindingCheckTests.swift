import DAOCore
import DialogGraph
import Foundation
@testable import SQLiteStorage
import Testing

/// Records bound by position bind each real as it is: a NaN as the blob
/// SQLite keeps it in, a -0.0 as a REAL in a column without affinity; these
/// check that both come back bit for bit through both read paths, and that
/// they change nothing about what else a batch is refused for.
@Suite("Reals bound as given")
struct BindingCheckTests {
    func dialog(_ id: Int64, messages: Int64 = 4) -> DialogRecord {
        DialogRecord(id: id, isPinned: id % 2 == 0, messages: (1...messages).map { message(id * 100 + $0, dialog: id) })
    }

    @Test("a NaN or -0.0 date deep in a batch comes back bit for bit", arguments: [Double.nan, -0.0, -Double.nan])
    func realInChild(value: Double) throws {
        try withDatabase(durability: .none) { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            let messages = try database.storage(for: MessageRecord.self)
            var batch = [dialog(2), dialog(3), dialog(4)]
            batch[1].messages[2].date = Date(timeIntervalSinceReferenceDate: value)
            try dialogs.persist(batch)
            // SQLite stores every NaN as one: the canonical NaN comes back.
            let expected = value.isNaN ? Double.nan.bitPattern : value.bitPattern
            let id = batch[1].messages[2].id
            let viaParent = try dialogs.read(primaryKey: 3)?.messages[2].date.timeIntervalSinceReferenceDate
            #expect(viaParent?.bitPattern == expected)
            let viaChild = try messages.read(primaryKey: id)?.date.timeIntervalSinceReferenceDate
            #expect(viaChild?.bitPattern == expected)
            // A Codable record (bound and read through Codable) the same.
            let users = try database.storage(for: UserRecord.self)
            let user = UserRecord(
                id: "u", name: "n", bio: nil, email: nil, birthDate: Date(timeIntervalSinceReferenceDate: value), gender: nil)
            try users.persist(user)
            #expect(try users.read(primaryKey: "u")?.birthDate?.timeIntervalSinceReferenceDate.bitPattern == expected)
            #expect(try users.readAll().map { $0.birthDate?.timeIntervalSinceReferenceDate.bitPattern } == [expected])
        }
    }

    @Test("a batch with a foreign child first and a NaN later reports the constraint")
    func nanDoesNotHideConstraint() throws {
        try withDatabase(durability: .none) { database in
            let dialogs = try database.storage(for: DialogRecord.self)
            var batch = [dialog(1), dialog(2)]
            // The first dialog holds a message that names another dialog: the
            // write stops there, before the second dialog is bound.
            batch[0].messages[1].dialogId = 9
            batch[1].messages[0].date = Date(timeIntervalSinceReferenceDate: .nan)
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
