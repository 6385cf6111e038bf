import DAOCore
import DialogGraph
import Foundation
import SQLiteStorage
import TestSupport

/// A fresh database in a fresh temporary directory, removed afterwards.
func withDatabase<T>(durability: Durability = .full, _ body: (SQLiteDatabase) throws -> T) throws -> T {
    try withTemporaryDirectory { directory in
        let database = try SQLiteDatabase(path: directory.appending(path: "store.sqlite"), durability: durability)
        return try body(database)
    }
}

/// The dialog records of a small seeded workload.
func workloadRecords(dialogs: Int = 12, messages: Int = 8) throws -> [DialogRecord] {
    let data = WorkloadData(dialogs: dialogs, messagesPerDialog: messages)
    let translator = DialogTranslator()
    return try data.initial.map { try translator.record(from: $0) }
}

/// A message for dialog `dialogId`.
func message(_ id: Int64, dialog dialogId: Int64, text: String = "hello", isRead: Bool = false) -> MessageRecord {
    MessageRecord(
        id: id, dialogId: dialogId, date: Date(timeIntervalSince1970: 1_700_000_000 + Double(id) * 60.125),
        text: text, senderId: id % 7, receiverId: id % 5, type: id % 5, isIncoming: id % 2 == 0, isRead: isRead)
}

/// Users with every combination of present and missing optional fields.
func sampleUsers() -> [UserRecord] {
    [
        UserRecord(id: "alice", name: "Alice", bio: "hello world", email: "alice@example.com",
                   birthDate: Date(timeIntervalSinceReferenceDate: 12_345.678), gender: .female),
        UserRecord(id: "bob", name: "Bob", bio: nil, email: "bob@example.com", birthDate: nil, gender: .male),
        UserRecord(id: "zoë", name: "Zoë", bio: "café naïve", email: nil,
                   birthDate: Date(timeIntervalSinceReferenceDate: -1_000.5), gender: nil),
        UserRecord(id: "carl", name: "Carl", bio: "x", email: nil, birthDate: nil, gender: .nonBinary),
        UserRecord(id: "dora", name: "Dora 🚀", bio: "", email: "", birthDate: Date(timeIntervalSinceReferenceDate: 0),
                   gender: .other),
        UserRecord(id: "Émile", name: "Émile", bio: nil, email: nil, birthDate: nil, gender: nil),
        // Names that Foundation's localized comparison orders differently from
        // their bytes: lowercase before capitals, numbers by value.
        UserRecord(id: "adam", name: "adam", bio: "item 10", email: nil, birthDate: nil, gender: .male),
        UserRecord(id: "item9", name: "item 9", bio: "item 9", email: "item9@example.com", birthDate: nil, gender: nil),
        UserRecord(id: "item10", name: "item 10", bio: nil, email: "item10@example.com", birthDate: nil, gender: nil),
    ]
}
