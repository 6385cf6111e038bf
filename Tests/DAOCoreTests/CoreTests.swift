import DAOCore
import DialogGraph
import Foundation
import Testing

struct Tag: Record, Hashable {
    typealias PrimaryKey = String
    var name: String
    var weight: Double
    static let entity = Entity<Tag>(
        "tags", primaryKey: "name", \.name, fields: [Field("weight", \.weight)],
        indexes: [Index("tags_by_colour", on: ["colour"])])
}

struct Twice: Record {
    typealias PrimaryKey = Int64
    var id: Int64
    static let entity = Entity<Twice>("twice", primaryKey: "id", \.id, fields: [Field("id", \.id)])
}

@Suite("The core: values, declarations, queries, errors")
struct CoreTests {
    @Test("stored values order like SQLite: null, numbers, text by UTF-8 bytes, blobs")
    func storedValueOrder() {
        let sorted: [StoredValue] = [.null, .integer(-5), .real(-4.5), .integer(0), .real(0.5), .integer(1),
                                     .text(""), .text("Z"), .text("a"), .text("é"), .text("🚀"), .blob([]), .blob([0])]
        #expect(sorted.shuffled().sorted() == sorted)
    }

    @Test("field values know their storage class")
    func fieldValues() {
        #expect(Date(timeIntervalSinceReferenceDate: 1.5).storedValue == .real(1.5))
        #expect(true.storedValue == .integer(1))
        #expect((nil as String?).storedValue == .null)
        #expect(Gender.female.storedValue == .text("female"))
        #expect(Gender?.none.storedValue == .null)
        #expect(String?.isOptional && !String.isOptional)
        #expect(Int64(storedValue: .text("1")) == nil)
        #expect(String(storedValue: .text("k")) == "k")
    }

    @Test("a declaration with an index over an unknown field is refused")
    func badIndex() {
        let error = #expect(throws: StorageError.self) { try Tag.entity.validate() }
        #expect(error?.kind == .schemaMismatch)
        #expect(error?.message.contains("colour") == true)
    }

    @Test("a declaration with a name twice is refused")
    func duplicateName() {
        let error = #expect(throws: StorageError.self) { try Twice.entity.validate() }
        #expect(error?.kind == .schemaMismatch)
    }

    @Test("the dialog graph's declarations are valid, and messages name their owner")
    func dialogGraphDeclarations() throws {
        try DialogRecord.entity.validate()
        try MessageRecord.entity.validate()
        try UserRecord.entity.validate()
        #expect(MessageRecord.entity.owner == DialogRecord.self)
        #expect(DialogRecord.ownedRelation(for: MessageRecord.self)?.foreignKeyField == "dialogId")
        #expect(DialogRecord.entity.codingKeys == ["id", "isPinned", "messages"])
    }

    @Test("in-memory queries sort by descriptors, then by primary key, then limit")
    func queryApply() throws {
        let tags = [Tag(name: "b", weight: 1), Tag(name: "a", weight: 1), Tag(name: "c", weight: 0.5), Tag(name: "d", weight: 3)]
        let query = Query<Tag>(where: #Predicate { $0.weight >= 1 }, sortedBy: [SortDescriptor(\.weight)], limit: 2)
        #expect(try query.apply(to: tags).map(\.name) == ["a", "b"])
        #expect(try Query<Tag>().apply(to: tags).map(\.name) == ["a", "b", "c", "d"])
        #expect(throws: StorageError.self) { try Query<Tag>(limit: -1).apply(to: tags) }
    }

    @Test("an error prints as one sentence with everything it knows")
    func errorDescription() {
        let error = StorageError(
            .constraint, .persist, entity: "messages", path: "/tmp/x.sqlite", engineCode: 787,
            message: "FOREIGN KEY constraint failed", context: "INSERT INTO messages")
        #expect("\(error)" == "persist 'messages' failed (constraint): FOREIGN KEY constraint failed [code 787] at /tmp/x.sqlite; INSERT INTO messages")
    }

    @Test("the predicate translator handles optionals, lists, prefixes and constants")
    func translator() {
        let ids: [String] = ["a", "b"]
        #expect(QueryExpression.translate(#Predicate<UserRecord> { $0.bio == nil }).expression
            == .compare(field: "bio", .equal, .null))
        #expect(QueryExpression.translate(#Predicate<UserRecord> { ids.contains($0.id) }).expression
            == .isIn(field: "id", values: [.text("a"), .text("b")]))
        #expect(QueryExpression.translate(#Predicate<UserRecord> { $0.name.starts(with: "An") }).expression
            == .hasPrefix(field: "name", prefix: "An"))
        #expect(QueryExpression.translate(#Predicate<UserRecord> { "m" <= $0.name }).expression
            == .compare(field: "name", .greaterOrEqual, .text("m")))
        let t = QueryExpression.translate(#Predicate<UserRecord> { _ in false })
        #expect(t.isExact && t.expression == .constant(false))
    }
}

struct Folder: Record {
    typealias PrimaryKey = Int64
    var id: Int64
    var parentId: Int64
    var folders: [Folder]
    static let entity = Entity<Folder>(
        "folders", primaryKey: "id", \.id, fields: [Field("parentId", \.parentId)],
        relations: [Relation("folders", \.folders, foreignKey: "parentId", \Folder.parentId)], ownedBy: Folder.self)
}

@Test("validating a relation that leads back to its own entity terminates with a schema mismatch")
func selfReferenceIsRefused() throws {
    #expect {
        try Folder.entity.validate()
    } throws: { error in
        guard let error = error as? StorageError else { return false }
        return error.kind == .schemaMismatch && error.message.contains("lead back")
    }
}

@Suite("Records that read their fields by position")
struct FieldwiseTests {
    @Test("messages and dialogs read their fields back in declaration order")
    func declarationOrder() throws {
        let message = MessageRecord(
            id: -3, dialogId: 9, date: Date(timeIntervalSince1970: 1_700_000_000.5), text: "héllo 🚀", senderId: Int64.max,
            receiverId: Int64.min, type: 4, isIncoming: true, isRead: false)
        #expect(try message.rebuiltFromFields() == message)
        #expect(try message.writtenFields() == MessageRecord.entity.fields.map { $0.value(in: message) })
        let dialog = DialogRecord(id: 9, isPinned: true, messages: [message])
        #expect(try dialog.rebuiltFromFields() == DialogRecord(id: 9, isPinned: true, messages: []))
        #expect(try dialog.writtenFields() == [.integer(9), .integer(1)])
    }

    @Test("a field of the wrong type, a missing field and an unknown enum case are errors")
    func badFields() throws {
        var wrongType = StoredValueReader([.text("1"), .integer(0)], entity: "dialogs")
        #expect(throws: StorageError.self) { try DialogRecord(fields: &wrongType) }
        var tooShort = StoredValueReader([.integer(1)], entity: "dialogs")
        let error = #expect(throws: StorageError.self) { try DialogRecord(fields: &tooShort) }
        #expect(error?.kind == .decoding)
        var unknownCase = StoredValueReader([.text("robot")], entity: "users")
        #expect(throws: StorageError.self) { try unknownCase.decode(Gender.self) }
        var optional = StoredValueReader([.null, .text("male")], entity: "users")
        #expect(try optional.decodeIfPresent(Gender.self) == nil)
        #expect(try optional.decodeIfPresent(Gender.self) == .male)
    }
}
