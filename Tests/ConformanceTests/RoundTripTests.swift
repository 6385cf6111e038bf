import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@Suite("Conformance: values round-trip")
struct RoundTripTests {
    @Test("every field type, optionals set and nil, extremes and awkward text", arguments: allBackends)
    func everyFieldType(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let users = try store.anyStorage(for: UserRecord.self)
            let records = [
                UserRecord(
                    id: "all-set", name: "Zoë 🚀 привет", bio: "", email: "a@b.c",
                    birthDate: Date(timeIntervalSince1970: 1_234_567_890.123_456), gender: .nonBinary),
                UserRecord(id: "all-nil", name: "", bio: nil, email: nil, birthDate: nil, gender: nil),
                UserRecord(
                    id: "", name: "quote ' \" and \\ backslash, comma; newline\nend", bio: "tab\there",
                    email: "'); DROP TABLE users; --", birthDate: Date(timeIntervalSinceReferenceDate: -1e9),
                    gender: .female),
                UserRecord(
                    id: "ключ-🔑", name: "smörgåsbord façade", bio: String(repeating: "long ", count: 2000),
                    email: nil, birthDate: Date(timeIntervalSince1970: 0.001), gender: .other),
            ]
            try users.persist(records)
            for record in records {
                #expect(try users.read(primaryKey: record.id) == record)
            }

            let messages = try store.anyStorage(for: MessageRecord.self)
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            let extremes = DialogRecord(
                id: Int64.max, isPinned: true,
                messages: [
                    MessageRecord(
                        id: Int64.min, dialogId: Int64.max, date: Date(timeIntervalSince1970: -86_400.5),
                        text: "", senderId: Int64.min, receiverId: Int64.max, type: Int64.min, isIncoming: true,
                        isRead: false),
                    MessageRecord(
                        id: -1, dialogId: Int64.max, date: Date(timeIntervalSince1970: 1_700_000_000.007),
                        text: "e\u{301} vs \u{E9}, 👩‍👩‍👧‍👦, \u{10FFFF}", senderId: 0, receiverId: -1, type: Int64.max,
                        isIncoming: false, isRead: true),
                    MessageRecord(
                        id: Int64.max, dialogId: Int64.max, date: Date(timeIntervalSinceReferenceDate: 0),
                        text: String(repeating: "🚀", count: 300), senderId: 42, receiverId: 42, type: 3,
                        isIncoming: true, isRead: true),
                ])
            let negative = DialogRecord(id: Int64.min, isPinned: false, messages: [])
            try dialogs.persist([extremes, negative])
            #expect(try dialogs.read(primaryKey: Int64.max) == extremes)
            #expect(try dialogs.read(primaryKey: Int64.min) == negative)
            #expect(try messages.read(primaryKey: Int64.min) == extremes.messages[0])
            #expect(try dialogs.readAll().map(\.id) == [Int64.min, Int64.max])
            #expect(try messages.readAll().map(\.id) == [Int64.min, -1, Int64.max])
        }
    }

    @Test("dates round-trip exactly, which is more than to the millisecond", arguments: allBackends)
    func dates(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let messages = try store.anyStorage(for: MessageRecord.self)
            try store.anyStorage(for: DialogRecord.self).persist(DialogRecord(id: 1, isPinned: false, messages: []))
            let dates = [
                Date(timeIntervalSince1970: 1_700_000_000.001), Date(timeIntervalSince1970: 1_700_000_059.999),
                Date(timeIntervalSinceReferenceDate: 0.000_001), Date.distantPast, Date.distantFuture,
            ]
            try messages.persist(dates.enumerated().map { messageRecord(Int64($0.offset), dialog: 1, date: $0.element) })
            let read = try messages.readAll().map(\.date)
            #expect(read == dates)
        }
    }

    @Test("the DAO round-trips plain objects through the translators", arguments: allBackends)
    func plainObjects(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let data = WorkloadData(dialogs: 5, messagesPerDialog: 7, seed: 3)
            let dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self), translator: DialogTranslator())
            try dialogs.persist(data.initial)
            #expect(try dialogs.read() == data.initial)
            #expect(try dialogs.read(byPrimaryKey: 3) == data.initial[2])
            #expect(try dialogs.read(byPrimaryKey: 99) == nil)
            #expect(try dialogs.count() == 5)

            let users = DAO(storage: try store.anyStorage(for: UserRecord.self), translator: UserTranslator())
            let user = User(uniqueId: "u", name: "Ann", bio: nil, email: "ann@example.com", birthDate: nil, gender: .female)
            try users.persist(user)
            #expect(try users.read(byPrimaryKey: "u") == user)
        }
    }
}
