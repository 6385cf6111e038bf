import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

/// Opens `backend` in a fresh directory and runs `body` with its store; the
/// store is released before the directory is removed.
func withStore<T>(
    _ backend: TestBackend, durability: Durability = .full, _ body: (any Store, URL) throws -> T
) throws -> T {
    let directory = try TemporaryDirectory()
    return try withExtendedLifetime(directory) {
        let store = try backend.open(directory.url, durability)
        return try body(store, directory.url)
    }
}

func messageRecord(
    _ id: Int64, dialog: Int64, text: String = "hello", date: Date = Date(timeIntervalSince1970: 1_700_000_000),
    isRead: Bool = false, type: Int64 = 0
) -> MessageRecord {
    MessageRecord(
        id: id, dialogId: dialog, date: date, text: text, senderId: 1, receiverId: 2, type: type,
        isIncoming: id % 2 == 0, isRead: isRead)
}

func dialogRecord(_ id: Int64, pinned: Bool = false, messageIds: [Int64]) -> DialogRecord {
    DialogRecord(id: id, isPinned: pinned, messages: messageIds.map { messageRecord($0, dialog: id) })
}

/// Users with every combination of set and missing optionals, from a seed.
func sampleUsers(count: Int, seed: UInt64 = 7) -> [UserRecord] {
    var random = SplitMix64(seed: seed)
    let names = ["Ann", "anna", "Bob", "Zoë", "Émile", "李雷", "", "O'Brien", "🚀 Rocket", "Ann-Marie"]
    return (0..<count).map { index in
        let draw = random.next()
        return UserRecord(
            id: String(format: "user-%03d", index),
            name: names[Int(draw % UInt64(names.count))],
            bio: draw & 2 == 0 ? nil : ["", "likes swift", "café naïve", "привет мир"][Int(draw >> 8 % 4)],
            email: draw & 4 == 0 ? nil : "u\(index)@example.com",
            birthDate: draw & 8 == 0 ? nil : Date(timeIntervalSince1970: Double(draw % 2_000_000_000) / 3),
            gender: draw & 16 == 0 ? nil : Gender.allCases[Int(draw >> 16 % 4)])
    }
}
