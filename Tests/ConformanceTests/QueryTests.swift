import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

/// A query over messages and the name it is reported under.
struct MessageQuery: Sendable, CustomTestStringConvertible {
    let name: String
    let query: Query<MessageRecord>
    var testDescription: String { name }
}

/// A query over users and the name it is reported under.
struct UserQuery: Sendable, CustomTestStringConvertible {
    let name: String
    let query: Query<UserRecord>
    var testDescription: String { name }
}

let midDate = Date(timeIntervalSince1970: 1_700_000_000 + 150 * 60)
let someIds: [Int64] = [3, 17, 42, 250, 9999]
let noIds: [Int64] = []
let female: Gender? = .female
let otherGender: Gender? = .other

/// Predicates an engine can run, predicates it can only partly run, and
/// predicates it must evaluate in memory; with and without sort and limit.
let messageQueries: [MessageQuery] = [
    MessageQuery(name: "all", query: Query()),
    MessageQuery(name: "the workload query", query: Query(
        where: #Predicate { $0.dialogId == 7 && !$0.isRead }, sortedBy: [SortDescriptor(\.date, order: .reverse)])),
    MessageQuery(name: "equality", query: Query(where: #Predicate { $0.type == 3 })),
    MessageQuery(name: "reversed operands", query: Query(where: #Predicate { 3 < $0.type })),
    MessageQuery(name: "inequality", query: Query(where: #Predicate { $0.type != 3 }, limit: 25)),
    MessageQuery(name: "range", query: Query(
        where: #Predicate { $0.senderId >= 2000 && $0.senderId < 6000 }, sortedBy: [SortDescriptor(\.senderId)])),
    MessageQuery(name: "date range", query: Query(
        where: #Predicate { $0.date > midDate }, sortedBy: [SortDescriptor(\.date)], limit: 10)),
    MessageQuery(name: "or", query: Query(where: #Predicate { $0.dialogId == 2 || $0.type == 0 })),
    MessageQuery(name: "not", query: Query(where: #Predicate { !($0.dialogId == 2 || $0.isIncoming) })),
    MessageQuery(name: "bool field", query: Query(where: #Predicate { $0.isRead })),
    MessageQuery(name: "bool equality", query: Query(where: #Predicate { $0.isRead == false })),
    MessageQuery(name: "contains", query: Query(where: #Predicate { $0.text.contains("swift") })),
    MessageQuery(name: "contains non-ASCII", query: Query(where: #Predicate { $0.text.contains("café") })),
    MessageQuery(name: "contains emoji", query: Query(where: #Predicate { $0.text.contains("🚀") })),
    MessageQuery(name: "contains is case-sensitive", query: Query(where: #Predicate { $0.text.contains("Zürich") })),
    MessageQuery(name: "starts with", query: Query(where: #Predicate { $0.text.starts(with: "the") })),
    MessageQuery(name: "in a list", query: Query(where: #Predicate { someIds.contains($0.id) })),
    MessageQuery(name: "in an empty list", query: Query(where: #Predicate { noIds.contains($0.id) })),
    MessageQuery(name: "constant true", query: Query(where: #Predicate { _ in true }, limit: 3)),
    MessageQuery(name: "constant false", query: Query(where: #Predicate { _ in false })),
    MessageQuery(name: "computed (in memory)", query: Query(
        where: #Predicate { $0.text.count > 200 }, sortedBy: [SortDescriptor(\.text)], limit: 5)),
    MessageQuery(name: "partly computed", query: Query(
        where: #Predicate { $0.dialogId == 4 && $0.senderId % 2 == 0 }, limit: 3)),
    MessageQuery(name: "field against field (in memory)", query: Query(where: #Predicate { $0.senderId < $0.receiverId })),
    MessageQuery(name: "two sort keys", query: Query(
        sortedBy: [SortDescriptor(\.type, order: .reverse), SortDescriptor(\.senderId)], limit: 40)),
    MessageQuery(name: "limit zero", query: Query(where: #Predicate { $0.isRead }, limit: 0)),
    MessageQuery(name: "limit past the end", query: Query(where: #Predicate { $0.dialogId == 1 }, limit: 1000)),
    MessageQuery(name: "primary key", query: Query(where: #Predicate { $0.id == 33 })),
    MessageQuery(name: "missing primary key", query: Query(where: #Predicate { $0.id == -5 })),
]

let userQueries: [UserQuery] = [
    UserQuery(name: "optional is nil", query: Query(where: #Predicate { $0.bio == nil })),
    UserQuery(name: "optional is not nil", query: Query(where: #Predicate { $0.email != nil }, sortedBy: [SortDescriptor(\.name)])),
    UserQuery(name: "optional equals a value", query: Query(where: #Predicate { $0.bio == "likes swift" })),
    UserQuery(name: "optional not equal to a value (nil included)", query: Query(where: #Predicate { $0.bio != "likes swift" })),
    UserQuery(name: "negated optional equality (nil included)", query: Query(where: #Predicate { !($0.bio == "") })),
    UserQuery(name: "enum", query: Query(where: #Predicate { $0.gender == female })),
    UserQuery(name: "optional enum is nil", query: Query(where: #Predicate { $0.gender == nil || $0.gender == otherGender })),
    UserQuery(name: "string contains, accents", query: Query(where: #Predicate { $0.name.contains("ë") || $0.name.contains("É") })),
    UserQuery(name: "string prefix", query: Query(where: #Predicate { $0.name.starts(with: "Ann") })),
    UserQuery(name: "empty string", query: Query(where: #Predicate { $0.name == "" })),
    UserQuery(name: "string range", query: Query(where: #Predicate { $0.name > "Bob" }, sortedBy: [SortDescriptor(\.name, order: .reverse)])),
    UserQuery(name: "optional chain (in memory)", query: Query(where: #Predicate { ($0.bio?.count ?? 0) > 3 })),
    UserQuery(name: "string key range", query: Query(where: #Predicate { $0.id >= "user-020" && $0.id < "user-030" })),
]

@Suite("Conformance: queries agree with evaluating the predicate in memory")
struct QueryTests {
    static let data = WorkloadData(dialogs: 12, messagesPerDialog: 25, seed: 5)
    static let messages: [MessageRecord] = data.initial.flatMap { dialog in
        dialog.messages.map { message in
            MessageRecord(
                id: message.uniqueId, dialogId: message.dialogId, date: message.date, text: message.text,
                senderId: message.senderId, receiverId: message.receiverId, type: Int64(message.type),
                isIncoming: message.isIncoming, isRead: message.isRead)
        }
    }
    static let users = sampleUsers(count: 60)

    static func populated(_ store: any Store) throws {
        let translator = DialogTranslator()
        try store.anyStorage(for: DialogRecord.self).persist(try data.initial.map(translator.record(from:)))
        try store.anyStorage(for: UserRecord.self).persist(users)
    }

    @Test("messages", arguments: allBackends, messageQueries)
    func messageQuery(backend: TestBackend, query: MessageQuery) throws {
        try withStore(backend, durability: .none) { store, _ in
            try Self.populated(store)
            let storage = try store.anyStorage(for: MessageRecord.self)
            let expected = try query.query.apply(to: Self.messages)
            #expect(try storage.read(query.query) == expected)
            var unlimited = query.query
            unlimited.limit = nil
            #expect(try storage.count(where: query.query.predicate) == unlimited.apply(to: Self.messages).count)
        }
    }

    @Test("users", arguments: allBackends, userQueries)
    func userQuery(backend: TestBackend, query: UserQuery) throws {
        try withStore(backend, durability: .none) { store, _ in
            try Self.populated(store)
            let storage = try store.anyStorage(for: UserRecord.self)
            #expect(try storage.read(query.query) == query.query.apply(to: Self.users))
            #expect(try storage.count(where: query.query.predicate) == Query(where: query.query.predicate).apply(to: Self.users).count)
        }
    }

    @Test("dialogs come with their messages, in key order", arguments: allBackends)
    func parentsWithChildren(backend: TestBackend) throws {
        try withStore(backend, durability: .none) { store, _ in
            try Self.populated(store)
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            let translator = DialogTranslator()
            let all = try Self.data.initial.map(translator.record(from:))
            #expect(try dialogs.readAll() == all)
            #expect(try dialogs.read(where: #Predicate { $0.isPinned }) == all.filter(\.isPinned))
            #expect(try dialogs.read(sortedBy: [SortDescriptor(\.id, order: .reverse)], limit: 2) == [all[11], all[10]])
        }
    }

    @Test("reading by keys keeps their order and skips missing keys", arguments: allBackends)
    func readByKeys(backend: TestBackend) throws {
        try withStore(backend, durability: .none) { store, _ in
            try Self.populated(store)
            let dialogs = try store.anyStorage(for: DialogRecord.self)
            #expect(try dialogs.read(primaryKeys: [5, 404, 1, 5]).map(\.id) == [5, 1, 5])
            #expect(try dialogs.read(primaryKeys: []) == [])
            #expect(try dialogs.read(primaryKeys: [3]).first?.messages.count == 25)
        }
    }

    @Test("erase where a predicate holds", arguments: allBackends)
    func eraseWhere(backend: TestBackend) throws {
        try withStore(backend, durability: .none) { store, _ in
            try Self.populated(store)
            let messages = try store.anyStorage(for: MessageRecord.self)
            let predicate = #Predicate<MessageRecord> { $0.dialogId == 3 && !$0.isRead }
            let doomed = try Query(where: predicate).apply(to: Self.messages)
            #expect(try messages.erase(where: predicate) == doomed.count)
            #expect(try messages.count() == Self.messages.count - doomed.count)
            #expect(try messages.count(where: predicate) == 0)
        }
    }

    @Test("a negative limit is an invalid argument", arguments: allBackends)
    func negativeLimit(backend: TestBackend) throws {
        try withStore(backend, durability: .none) { store, _ in
            let users = try store.anyStorage(for: UserRecord.self)
            let error = #expect(throws: StorageError.self) { try users.read(limit: -1) }
            #expect(error?.kind == .invalidArgument)
        }
    }
}
