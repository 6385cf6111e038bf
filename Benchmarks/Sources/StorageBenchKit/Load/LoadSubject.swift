import DAOCore
import DialogGraph
import FileStorage
import Foundation
import LMDBStorage
import SQLiteStorage
import Synchronization

/// What one client of a load run calls, synchronously, on a thread of its own
/// (never on Swift's cooperative pool). Each call is one transaction; each
/// returns the rows it read or wrote (a dialog counts 1 + its messages), which
/// the report sums so that backends can be seen to do the same work.
public protocol LoadClient: Sendable {
    /// `read`: the dialog `id` with its messages (0 rows when there is none).
    func read(dialogId id: Int64) throws -> Int
    /// `update` and `insert`: writes `dialog` with its messages (an upsert).
    func write(_ dialog: Dialog) throws -> Int
    /// `scan` (`newestFirst == false`) and `page`: up to `limit` messages of
    /// dialog `id` by date. `limit` is the mix's `scanLength` or `pageSize`.
    func messages(dialogId id: Int64, limit: Int, newestFirst: Bool) throws -> Int
    /// `append`: writes one new message.
    func append(_ message: Message) throws -> Int
}

/// What one client of a load run awaits: the same calls as ``LoadClient``,
/// through an `async` API that runs them on threads the store owns.
public protocol AsyncLoadClient: Sendable {
    /// As ``LoadClient/read(dialogId:)``.
    func read(dialogId id: Int64) async throws -> Int
    /// As ``LoadClient/write(_:)``.
    func write(_ dialog: Dialog) async throws -> Int
    /// As ``LoadClient/messages(dialogId:limit:newestFirst:)``.
    func messages(dialogId id: Int64, limit: Int, newestFirst: Bool) async throws -> Int
    /// As ``LoadClient/append(_:)``.
    func append(_ message: Message) async throws -> Int
}

/// A client, and how the runner drives it.
public enum LoadClientHandle: Sendable {
    /// Synchronous calls, on a dedicated thread per client.
    case sync(any LoadClient)
    /// `async` calls, from a task per client.
    case async(any AsyncLoadClient)
}

/// Observers a subject keeps running during a run (the chat mix's).
public protocol LoadObservers: Sendable {
    /// The snapshots delivered so far, first results included.
    var snapshots: Int { get }
    /// The errors the observations ended with.
    var errors: Int { get }
    /// Ends every observation.
    func stop()
}

/// One backend under load: a store loaded with the mix's dialogs, handing out clients.
public protocol LoadSubject: Sendable {
    /// The settings in force, read back from the engine, as one line.
    var settingsDescription: String { get }
    /// How clients call the backend (e.g. `DAO sync calls, a thread per client`).
    var apiDescription: String { get }
    /// Writes the initial `dialogs`, in one call (untimed).
    func load(_ dialogs: [Dialog]) throws
    /// The client numbered `index` (0-based) of a run of the mix's.
    func client(index: Int, scanLength: Int, pageSize: Int) throws -> LoadClientHandle
    /// Starts observing the newest `pageSize` messages of each of `dialogIds`,
    /// or returns `nil` when the backend cannot observe.
    func observe(dialogIds: [Int64], pageSize: Int) throws -> (any LoadObservers)?
    /// Closes the store.
    func close() throws
}

/// A backend the `load` command can run: its name, the backend its figures
/// are divided by (its raw engine), and how to open it.
public struct LoadBackend: Sendable {
    /// The name on the command line and in reports.
    public let name: String
    /// The backend whose throughput and p99 the report divides this one's by, or `nil`.
    public let reference: String?
    /// Opens an empty store in `directory` (which exists and is empty).
    public let open: @Sendable (_ directory: URL, _ durability: Durability) throws -> any LoadSubject

    /// Declares a backend.
    public init(
        name: String, reference: String? = nil,
        open: @escaping @Sendable (_ directory: URL, _ durability: Durability) throws -> any LoadSubject
    ) {
        self.name = name
        self.reference = reference
        self.open = open
    }
}

/// The backends `load` may choose from, in report order.
public struct LoadBackendRegistry: Sendable {
    /// The backends, in order.
    public let backends: [LoadBackend]

    /// A registry of `backends`.
    public init(_ backends: [LoadBackend]) { self.backends = backends }

    /// The names, in order.
    public var names: [String] { backends.map(\.name) }

    /// The backends named in `list` (comma-separated, or `all`), in registry order.
    /// - Throws: ``ConfigurationError`` naming an unknown backend.
    public func select(_ list: String) throws -> [LoadBackend] {
        let names = try parseList(list, option: "--backends")
        if names == ["all"] { return backends }
        for name in names where !self.names.contains(name) {
            throw ConfigurationError(
                "unknown backend '\(name)' in --backends; known: \(self.names.joined(separator: ", ")) or all")
        }
        return backends.filter { names.contains($0.name) }
    }

    /// This registry's backends with each of `others` placed after the first
    /// backend it is the reference of (or shares a reference with).
    public func followed(by others: LoadBackendRegistry) -> LoadBackendRegistry {
        var ordered: [LoadBackend] = []
        var placed: Set<String> = []
        for backend in backends {
            ordered.append(backend)
            guard let engine = backend.reference else { continue }
            for candidate in others.backends where !placed.contains(candidate.name) {
                if candidate.name == engine || candidate.reference == engine {
                    ordered.append(candidate)
                    placed.insert(candidate.name)
                }
            }
        }
        return LoadBackendRegistry(ordered + others.backends.filter { !placed.contains($0.name) })
    }

    /// The library's backends, run through the DAO, opened as `run` opens them.
    public static let standard = LoadBackendRegistry([
        LoadBackend(name: "json") {
            try DAOLoadSubject(store: FileStore(directory: $0, format: .json, durability: $1))
        },
        LoadBackend(name: "plist") {
            try DAOLoadSubject(store: FileStore(directory: $0, format: .propertyList, durability: $1))
        },
        LoadBackend(name: "sqlite", reference: "sqlite-raw") {
            try DAOLoadSubject(store: SQLiteDatabase(path: $0.appendingPathComponent("store.sqlite"), durability: $1))
        },
        LoadBackend(name: "lmdb", reference: "lmdb-raw") {
            try DAOLoadSubject(store: LMDBEnvironment(directory: $0, durability: $1))
        },
    ])
}

// MARK: - Through the DAO

/// Runs a mix through the public ``DAO`` on any ``Store``.
///
/// The clients await the DAO's `async` calls, from a task each: the store runs
/// them on its own threads (its writer and its readers), so no client waits on
/// a thread of Swift's cooperative pool. ``DAOLoadClient`` also keeps the
/// synchronous form, for a subject made with `callsAsync: false`.
public final class DAOLoadSubject: LoadSubject {
    /// The store.
    public let store: any Store
    let dialogs: DAO<AnyStorage<DialogRecord>, DialogTranslator>
    let messages: DAO<AnyStorage<MessageRecord>, MessageTranslator>

    /// A subject over `store`.
    /// - Throws: ``StorageError`` when the store cannot hand out its storages.
    public init(store: any Store) throws {
        self.store = store
        dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self), translator: DialogTranslator())
        messages = DAO(storage: try store.anyStorage(for: MessageRecord.self), translator: MessageTranslator())
    }

    public var settingsDescription: String { store.settingsDescription }

    /// Whether the clients await the DAO's `async` calls (from a task each)
    /// rather than making its synchronous calls (from a thread each). The GRDB
    /// peer follows, so that the two compare like for like.
    public static let callsAsync = true

    public var apiDescription: String {
        Self.callsAsync
            ? "DAO async calls, a task per client on a thread of its own" : "DAO synchronous calls, a thread per client"
    }

    public func load(_ dialogs: [Dialog]) throws { try self.dialogs.persist(dialogs) }

    public func client(index: Int, scanLength: Int, pageSize: Int) throws -> LoadClientHandle {
        let client = try DAOLoadClient(dialogs: dialogs, messages: messages, scanLength: scanLength, pageSize: pageSize)
        return Self.callsAsync ? .async(client) : .sync(client)
    }

    public func observe(dialogIds: [Int64], pageSize: Int) throws -> (any LoadObservers)? {
        guard !dialogIds.isEmpty else { return nil }
        return DAOObservers(messages: messages, dialogIds: dialogIds, pageSize: pageSize)
    }

    public func close() throws { try store.close() }
}

/// One client of ``DAOLoadSubject``: the DAO's calls, its queries prepared once.
struct DAOLoadClient: LoadClient, AsyncLoadClient {
    let dialogs: DAO<AnyStorage<DialogRecord>, DialogTranslator>
    let messages: DAO<AnyStorage<MessageRecord>, MessageTranslator>
    let oldest: PreparedObjectQuery<AnyStorage<MessageRecord>, MessageTranslator, Int64>
    let newest: PreparedObjectQuery<AnyStorage<MessageRecord>, MessageTranslator, Int64>
    let scanLength: Int
    let pageSize: Int

    init(
        dialogs: DAO<AnyStorage<DialogRecord>, DialogTranslator>,
        messages: DAO<AnyStorage<MessageRecord>, MessageTranslator>, scanLength: Int, pageSize: Int
    ) throws {
        self.dialogs = dialogs
        self.messages = messages
        self.scanLength = scanLength
        self.pageSize = pageSize
        oldest = try messages.prepare(
            where: #Predicate<MessageRecord, Int64> { message, dialog in message.dialogId == dialog },
            sortedBy: [SortDescriptor(\MessageRecord.date)], limit: scanLength)
        newest = try messages.prepare(
            where: #Predicate<MessageRecord, Int64> { message, dialog in message.dialogId == dialog },
            sortedBy: [SortDescriptor(\MessageRecord.date, order: .reverse)], limit: pageSize)
    }

    func read(dialogId id: Int64) throws -> Int {
        guard let dialog = try dialogs.read(byPrimaryKey: id) else { return 0 }
        return 1 + dialog.messages.count
    }

    func write(_ dialog: Dialog) throws -> Int {
        try dialogs.persist(dialog)
        return 1 + dialog.messages.count
    }

    func messages(dialogId id: Int64, limit: Int, newestFirst: Bool) throws -> Int {
        if newestFirst {
            precondition(limit == pageSize, "the page query was prepared with the mix's page size")
            return try newest.read(id).count
        }
        precondition(limit == scanLength, "the scan query was prepared with the mix's scan length")
        return try oldest.read(id).count
    }

    func append(_ message: Message) throws -> Int {
        try messages.persist(message)
        return 1
    }

    // The same calls, awaited: each runs on a thread of the store's executor.

    func read(dialogId id: Int64) async throws -> Int {
        guard let dialog = try await dialogs.read(byPrimaryKey: id) else { return 0 }
        return 1 + dialog.messages.count
    }

    func write(_ dialog: Dialog) async throws -> Int {
        try await dialogs.persist(dialog)
        return 1 + dialog.messages.count
    }

    func messages(dialogId id: Int64, limit: Int, newestFirst: Bool) async throws -> Int {
        if newestFirst {
            precondition(limit == pageSize, "the page query was prepared with the mix's page size")
            return try await newest.read(id).count
        }
        precondition(limit == scanLength, "the scan query was prepared with the mix's scan length")
        return try await oldest.read(id).count
    }

    func append(_ message: Message) async throws -> Int {
        try await messages.persist(message)
        return 1
    }
}

/// The DAO's observations of dialogs' newest messages, each iterated by a task.
final class DAOObservers: LoadObservers {
    private let tasks: [Task<Void, Never>]

    init(messages: DAO<AnyStorage<MessageRecord>, MessageTranslator>, dialogIds: [Int64], pageSize: Int) {
        var tasks: [Task<Void, Never>] = []
        let box = Counters()
        for id in dialogIds {
            let observation = messages.observe(
                where: #Predicate<MessageRecord> { $0.dialogId == id },
                sortedBy: [SortDescriptor(\MessageRecord.date, order: .reverse)], limit: pageSize)
            tasks.append(
                Task {
                    do {
                        for try await _ in observation { box.snapshots.add(1, ordering: .relaxed) }
                    } catch is CancellationError {
                    } catch {
                        box.errors.add(1, ordering: .relaxed)
                    }
                })
        }
        self.tasks = tasks
        counters = box
    }

    private final class Counters: Sendable {
        let snapshots = Atomic<Int>(0)
        let errors = Atomic<Int>(0)
    }
    private let counters: Counters

    var snapshots: Int { counters.snapshots.load(ordering: .relaxed) }
    var errors: Int { counters.errors.load(ordering: .relaxed) }

    func stop() {
        for task in tasks { task.cancel() }
    }
}
