import DAOCore
import DialogGraph
import Foundation
import Testing

@Suite("Entity schemas: the stored form and the differences it names")
struct EntitySchemaTests {
    @Test("the stored form is fixed JSON with sorted keys, and reads back to the same value")
    func storedForm() throws {
        let schema = EntitySchema(MessageRecord.entity)
        let text = String(decoding: try schema.encoded(), as: UTF8.self)
        #expect(
            text == #"{"entity":"messages","fields":[{"name":"id","optional":false,"type":"integer"},"#
                + #"{"name":"dialogId","optional":false,"type":"integer"},{"name":"date","optional":false,"type":"date"},"#
                + #"{"name":"text","optional":false,"type":"text"},{"name":"senderId","optional":false,"type":"integer"},"#
                + #"{"name":"receiverId","optional":false,"type":"integer"},{"name":"type","optional":false,"type":"integer"},"#
                + #"{"name":"isIncoming","optional":false,"type":"bool"},{"name":"isRead","optional":false,"type":"bool"}],"#
                + #""format":1,"indexes":[{"fields":["dialogId","date"],"name":"messages_by_dialog_date"}],"#
                + #""owner":"dialogs","relations":[]}"#)
        #expect(try EntitySchema.decode(schema.encoded(), entity: "messages") == schema)
        #expect(try EntitySchema.decode(EntitySchema(DialogRecord.entity).encoded(), entity: "dialogs").relations == [
            EntitySchema.RelationSchema(name: "messages", child: "messages", foreignKey: "dialogId")
        ])
    }

    @Test("bytes that are not a schema are corrupt; a later format is a schema mismatch")
    func unreadable() throws {
        let garbage = #expect(throws: StorageError.self) { try EntitySchema.decode(Array("{\"entity\":".utf8), entity: "x") }
        #expect(garbage?.kind == .corrupt)
        var later = EntitySchema(DialogRecord.entity)
        later.format = EntitySchema.currentFormat + 1
        let error = #expect(throws: StorageError.self) { try EntitySchema.decode(later.encoded(), entity: "dialogs") }
        #expect(error?.kind == .schemaMismatch)
    }

    @Test("a schema matches itself; every kind of difference is named, in a fixed order")
    func differences() throws {
        let stored = EntitySchema(MessageRecord.entity)
        try stored.check(against: stored)
        var changed = stored
        changed.fields.remove(at: 3)  // text
        changed.fields.append(.init(name: "edited", type: .date, optional: true))
        changed.fields[1].optional = true  // dialogId
        changed.indexes = []
        changed.owner = nil
        let error = #expect(throws: StorageError.self) { try changed.check(against: stored) }
        #expect(error?.kind == .schemaMismatch)
        #expect(error?.entity == "messages")
        #expect(error?.schemaChanges == [
            .fieldRemoved(.init(name: "text", type: .text, optional: false)),
            .fieldAdded(.init(name: "edited", type: .date, optional: true)),
            .fieldChanged(
                from: .init(name: "dialogId", type: .integer, optional: false),
                to: .init(name: "dialogId", type: .integer, optional: true)),
            .indexRemoved(.init(name: "messages_by_dialog_date", fields: ["dialogId", "date"])),
            .ownerChanged(from: "dialogs", to: nil),
        ])
        #expect(
            error?.message
                == "the stored schema of 'messages' differs from the record type: field 'text' (text) was removed; "
                + "field 'edited' (date?) was added; field 'dialogId' changed from integer to integer?; "
                + "index 'messages_by_dialog_date' on (dialogId, date) was removed; "
                + "the owner changed from 'dialogs' to none (a store is never changed to fit a record type; see docs/SCHEMA.md)")
    }

    @Test("the tree of a storage runs from the top owner down through every relation")
    func tree() {
        #expect(EntitySchema.tree(for: MessageRecord.self).map(\.entity) == ["dialogs", "messages"])
        #expect(EntitySchema.tree(for: DialogRecord.self).map(\.entity) == ["dialogs", "messages"])
        #expect(EntitySchema.tree(for: UserRecord.self).map(\.entity) == ["users"])
        #expect(EntitySchema.tree(for: Folder.self).map(\.entity) == ["folders"])
    }
}
