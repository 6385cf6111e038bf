import DAOCore
import DAOMacros
import DialogGraph
import Foundation
import Testing

// The example domain's records declared with @StoredRecord: the same entities
// as DialogGraph's hand-written declarations, read and written the same way.

@StoredRecord(
    "messages", indexes: [Index("messages_by_dialog_date", on: ["dialogId", "date"])],
    ownedBy: MacroDialogRecord.self)
struct MacroMessageRecord: Equatable {
    var id: Int64
    var dialogId: Int64
    var date: Date
    var text: String
    var senderId: Int64
    var receiverId: Int64
    var type: Int64
    var isIncoming: Bool
    var isRead: Bool
}

@StoredRecord("dialogs")
struct MacroDialogRecord: Equatable {
    var id: Int64
    var isPinned: Bool
    @Children(foreignKey: "dialogId") var messages: [MacroMessageRecord]
}

@Suite("DialogGraph's hand-written records and their @StoredRecord copies")
struct DialogGraphEquivalenceTests {
    @Test func sameEntities() {
        #expect(EntitySchema(MacroMessageRecord.entity) == EntitySchema(MessageRecord.entity))
        #expect(EntitySchema(MacroDialogRecord.entity) == EntitySchema(DialogRecord.entity))
    }

    @Test func sameFieldsWrittenAndRead() throws {
        let message = MessageRecord(
            id: 3, dialogId: 1, date: Date(timeIntervalSinceReferenceDate: 12.5), text: "hi 🚀", senderId: 7,
            receiverId: 8, type: 2, isIncoming: true, isRead: false)
        let copy = MacroMessageRecord(
            id: 3, dialogId: 1, date: message.date, text: message.text, senderId: 7, receiverId: 8, type: 2,
            isIncoming: true, isRead: false)
        #expect(try copy.writtenFields() == message.writtenFields())
        var reader = StoredValueReader(try message.writtenFields(), entity: "messages")
        #expect(try MacroMessageRecord(fields: &reader) == copy)
        let dialog = DialogRecord(id: 1, isPinned: true, messages: [message])
        let dialogCopy = MacroDialogRecord(id: 1, isPinned: true, messages: [copy])
        #expect(try dialogCopy.writtenFields() == dialog.writtenFields())
    }
}
