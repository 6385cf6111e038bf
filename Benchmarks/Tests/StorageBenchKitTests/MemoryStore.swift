import DAOCore
import DialogGraph
import Foundation
import StorageBenchKit

/// A tiny in-memory store of dialogs and their messages, for testing the harness
/// without a real adapter. It can be told to damage what it returns, to test the
/// correctness check.
final class MemoryStore: Store, @unchecked Sendable {
    // @unchecked Sendable is safe: every access to `dialogs` holds `lock`.
    let location: URL
    /// When set, dialogs whose messages are all read come back with a changed text.
    let tampersAfterUpdate: Bool
    private let lock = NSLock()
    private var dialogs: [Int64: DialogRecord] = [:]

    init(location: URL, tampersAfterUpdate: Bool = false) {
        self.location = location
        self.tampersAfterUpdate = tampersAfterUpdate
    }

    func anyStorage<R: Record>(for type: R.Type) throws -> AnyStorage<R> {
        if let storage = AnyStorage(DialogMemoryStorage(store: self)) as? AnyStorage<R> { return storage }
        if let storage = AnyStorage(MessageMemoryStorage(store: self)) as? AnyStorage<R> { return storage }
        throw StorageError(.schemaMismatch, .open, entity: R.entity.name, message: "the memory store holds dialogs only")
    }

    /// Nothing to release: the records live as long as the store.
    func close() {}

    func withDialogs<T>(_ body: (inout [Int64: DialogRecord]) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&dialogs)
    }

    func deliver(_ record: DialogRecord) -> DialogRecord {
        guard tampersAfterUpdate, !record.messages.isEmpty, record.messages.allSatisfy(\.isRead) else { return record }
        var copy = record
        copy.messages[0].text += "!"
        return copy
    }
}

struct DialogMemoryStorage: Storage {
    let store: MemoryStore

    func persist(_ records: [DialogRecord]) throws {
        store.withDialogs { dialogs in
            for record in records { dialogs[record.id] = record }
        }
    }

    func read(primaryKey key: Int64) throws -> DialogRecord? {
        store.withDialogs { $0[key] }.map(store.deliver)
    }

    func read(primaryKeys keys: [Int64]) throws -> [DialogRecord] {
        store.withDialogs { dialogs in keys.compactMap { dialogs[$0] } }.map(store.deliver)
    }

    func read(_ query: Query<DialogRecord>) throws -> [DialogRecord] {
        try query.apply(to: store.withDialogs { Array($0.values) }).map(store.deliver)
    }

    func count(where predicate: Predicate<DialogRecord>?) throws -> Int {
        try Query(where: predicate).apply(to: store.withDialogs { Array($0.values) }).count
    }

    func erase(primaryKeys keys: [Int64]) throws -> Int {
        store.withDialogs { dialogs in keys.reduce(0) { $0 + (dialogs.removeValue(forKey: $1) == nil ? 0 : 1) } }
    }

    func erase(where predicate: Predicate<DialogRecord>?) throws -> Int {
        let keys = try Query(where: predicate).apply(to: store.withDialogs { Array($0.values) }).map(\.id)
        return try erase(primaryKeys: keys)
    }
}

struct MessageMemoryStorage: Storage {
    let store: MemoryStore

    private var all: [MessageRecord] { store.withDialogs { $0.values.flatMap(\.messages) } }

    private func unsupported(_ operation: StorageError.Operation) -> StorageError {
        StorageError(.invalidArgument, operation, entity: "messages", message: "not supported by the memory store")
    }

    func persist(_ records: [MessageRecord]) throws { throw unsupported(.persist) }
    func read(primaryKey key: Int64) throws -> MessageRecord? { all.first { $0.id == key } }
    func read(primaryKeys keys: [Int64]) throws -> [MessageRecord] {
        let byId = Dictionary(all.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        return keys.compactMap { byId[$0] }
    }
    func read(_ query: Query<MessageRecord>) throws -> [MessageRecord] { try query.apply(to: all) }
    func count(where predicate: Predicate<MessageRecord>?) throws -> Int {
        try Query(where: predicate).apply(to: all).count
    }
    func erase(primaryKeys keys: [Int64]) throws -> Int { throw unsupported(.erase) }
    func erase(where predicate: Predicate<MessageRecord>?) throws -> Int { throw unsupported(.erase) }
}

/// Backends over memory stores, for the harness tests.
enum TestBackends {
    static let memory = Backend("memory") { directory, _ in MemoryStore(location: directory) }
    static let bounded = Backend("bounded", singleCallLimit: 3) { directory, _ in MemoryStore(location: directory) }
    static let broken = Backend("broken") { directory, _ in
        MemoryStore(location: directory, tampersAfterUpdate: true)
    }
    static let failing = Backend("failing") { directory, _ in
        throw StorageError(.io, .open, path: directory.path, message: "cannot open")
    }
    static let registry = BackendRegistry([memory, bounded, broken, failing])
}

/// A ``WorkloadSubject`` over a dictionary of plain dialogs, without a DAO: the
/// shape of a reference backend. It can be told to return a query's messages
/// oldest first, to test that subjects get the same checks as DAO backends.
final class MemorySubject: WorkloadSubject {
    private var dialogs: [Int64: Dialog] = [:]
    let sortsQueryWrongly: Bool

    init(sortsQueryWrongly: Bool = false) {
        self.sortsQueryWrongly = sortsQueryWrongly
    }

    var settingsDescription: String { "memory" }

    func persist(_ dialogs: [Dialog]) throws {
        for dialog in dialogs { self.dialogs[dialog.uniqueId] = dialog }
    }

    func update(_ dialogs: [Dialog]) throws { try persist(dialogs) }

    func persistSingle(_ dialog: Dialog) throws { try persist([dialog]) }

    func readAll() throws -> [Dialog] { dialogs.values.sorted { $0.uniqueId < $1.uniqueId } }

    func read(dialogId id: Int64) throws -> Dialog? { dialogs[id] }

    func unreadMessages(dialogId id: Int64) throws -> [Message] {
        let unread = (dialogs[id]?.messages ?? []).filter { !$0.isRead }
        return sortsQueryWrongly ? unread.sorted { $0.date < $1.date } : unread.sorted { $0.date > $1.date }
    }

    func erase(dialogIds ids: [Int64]) throws -> Int {
        ids.reduce(0) { $0 + (dialogs.removeValue(forKey: $1) == nil ? 0 : 1) }
    }

    func eraseAll() throws -> Int {
        defer { dialogs.removeAll() }
        return dialogs.count
    }

    func read(dialogIds ids: [Int64]) throws -> [Dialog] { ids.compactMap { dialogs[$0] } }

    func dialogCount() throws -> Int { dialogs.count }

    func messageCount() throws -> Int { dialogs.values.reduce(0) { $0 + $1.messages.count } }

    func unreadMessageCount() throws -> Int {
        dialogs.values.reduce(0) { $0 + $1.messages.filter { !$0.isRead }.count }
    }
}
