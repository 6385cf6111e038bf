import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@testable import FileStorage

// A file store's query tests its candidates where they are stored, compares
// only the remaining fields of an exact index path, reads the fields of a
// positional record by position for that test and for the sort keys, and
// walks the candidates in the direction its shape learnt: the answers must be
// those of a filter and a sort written here, call after call, whether the
// dates rise with the keys, fall, or neither.

@Suite("File store: queries answer the same whichever way their candidates come")
struct QueryOrderTests {
    /// Three dialogs of 30 messages: dates rising with the key in dialog 1,
    /// falling in dialog 2, shuffled with ties in dialog 3.
    private static let dialogs: [DialogRecord] = (Int64(1)...3).map { dialog in
        let messages = (Int64(0)..<30).map { index -> MessageRecord in
            let id = dialog * 100 + index
            let minutes: Int64 =
                switch dialog {
                case 1: index
                case 2: 30 - index
                default: (index * 7) % 11
                }
            return MessageRecord(
                id: id, dialogId: dialog, date: Date(timeIntervalSinceReferenceDate: Double(minutes) * 60),
                text: "m\((index * 13) % 17)", senderId: index % 4, receiverId: 1, type: index % 3,
                isIncoming: index % 2 == 0, isRead: index % 3 == 0)
        }
        return DialogRecord(id: dialog, isPinned: false, messages: messages)
    }

    private static var messages: [MessageRecord] { dialogs.flatMap(\.messages) }

    private static func newestFirst(_ a: MessageRecord, _ b: MessageRecord) -> Bool {
        a.date != b.date ? a.date > b.date : a.id < b.id
    }

    private static func oldestFirst(_ a: MessageRecord, _ b: MessageRecord) -> Bool {
        a.date != b.date ? a.date < b.date : a.id < b.id
    }

    @Test("exact index paths, filtered predicates, sorts of both directions, limits", arguments: FileFormat.allCases)
    func answers(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        defer { scratch.remove() }
        let store = try FileStore(directory: scratch.url, format: format)
        try store.storage(for: DialogRecord.self).persist(Self.dialogs)
        let storage = try store.storage(for: MessageRecord.self)
        for dialog in Int64(1)...3 {
            let mine = Self.messages.filter { $0.dialogId == dialog }
            let unread = mine.filter { !$0.isRead }
            let cases: [(Query<MessageRecord>, [MessageRecord])] = [
                (
                    Query(
                        where: #Predicate { $0.dialogId == dialog && !$0.isRead },
                        sortedBy: [SortDescriptor(\.date, order: .reverse)]),
                    unread.sorted(by: Self.newestFirst)
                ),
                (
                    Query(where: #Predicate { $0.dialogId == dialog && !$0.isRead }, sortedBy: [SortDescriptor(\.date)]),
                    unread.sorted(by: Self.oldestFirst)
                ),
                (
                    Query(
                        where: #Predicate { $0.dialogId == dialog && $0.isRead == true },
                        sortedBy: [SortDescriptor(\.senderId), SortDescriptor(\.date, order: .reverse)], limit: 3),
                    Array(
                        mine.filter(\.isRead).sorted {
                            $0.senderId != $1.senderId ? $0.senderId < $1.senderId : Self.newestFirst($0, $1)
                        }.prefix(3))
                ),
                (
                    Query(
                        where: #Predicate { $0.dialogId == dialog && $0.senderId > 1 },
                        sortedBy: [SortDescriptor(\.text, order: .reverse)]),
                    mine.filter { $0.senderId > 1 }.sorted {
                        $0.text != $1.text ? Array($0.text.utf8).lexicographicallyPrecedes(Array($1.text.utf8)) == false
                            : $0.id < $1.id
                    }
                ),
                (Query(where: #Predicate { $0.dialogId == dialog && !$0.isRead }), unread.sorted { $0.id < $1.id }),
            ]
            for (query, expected) in cases {
                #expect(!expected.isEmpty)
                // The first call walks the keys ascending; later ones in the
                // direction the first found the asked order in.
                for _ in 0..<3 { #expect(try storage.read(query) == expected, "dialog \(dialog)") }
            }
        }
    }
}
