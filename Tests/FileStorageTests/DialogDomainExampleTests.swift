import DAOCore
import DialogGraph
import FileStorage
import Foundation
import TestSupport
import Testing

/// The dialog domain through a file store, the way an app uses the library:
/// a dialog persisted with its message, read back, queried, erased with it.
@Test("the dialog domain's example compiles and does what it says")
func dialogDomainExample() throws {
    let scratch = try TemporaryDirectory("file-store")
    let directory = scratch.url.appendingPathComponent("chat")

    // --- example begins ---
    let store = try FileStore(directory: directory, format: .json)
    let dialogs = DAO(storage: try store.storage(for: DialogRecord.self), translator: DialogTranslator())
    let messages = DAO(storage: try store.storage(for: MessageRecord.self), translator: MessageTranslator())

    let hello = Message(
        uniqueId: 1, dialogId: 1, date: .now, text: "Hello, world", senderId: 7, receiverId: 8,
        type: 0, isIncoming: true, isRead: false)
    try dialogs.persist(Dialog(uniqueId: 1, isPinned: true, messages: [hello]))

    let dialog = try dialogs.read(byPrimaryKey: 1)  // the dialog with its message
    let unread = try messages.read(
        where: #Predicate { $0.dialogId == 1 && !$0.isRead },
        sortedBy: [SortDescriptor(\.date, order: .reverse)],
        limit: 20)
    try dialogs.erase(byPrimaryKey: 1)  // erases its messages too
    // --- example ends ---

    #expect(dialog?.messages == [hello])
    #expect(unread == [hello])
    #expect(try messages.count() == 0)
}
