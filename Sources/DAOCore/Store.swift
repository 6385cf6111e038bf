import Foundation

/// A database, environment or directory that holds the records of several
/// entities and hands out a ``Storage`` for each record type.
///
/// A parent and its children live in the same store and commit together. Each
/// adapter's store also has a typed `storage(for:)` that returns its concrete
/// storage type, for use with ``DAO`` without type erasure; this requirement is
/// for code that picks an adapter at run time.
public protocol Store: Sendable {
    /// Where the store lives: a file or a directory.
    var location: URL { get }

    /// A storage for records of type `type`, creating what the engine needs
    /// for its entity (tables, databases, documents) on first use.
    /// - Throws: ``StorageError``, e.g. ``StorageError/Kind/schemaMismatch`` when
    ///   what is stored does not match the record's declaration.
    func anyStorage<R: Record>(for type: R.Type) throws -> AnyStorage<R>

    /// The settings in force, read back from the engine where it can say, as one
    /// line (e.g. `journal_mode=wal synchronous=FULL …`): what a benchmark
    /// report should name, rather than what was asked for.
    var settingsDescription: String { get }

    /// Closes the store: waits for the calls in progress to finish, then
    /// releases the engine's handles, memory maps and locks, so the same
    /// location can be opened again, in this process or another.
    ///
    /// Every later call through the store or any storage it handed out throws
    /// ``StorageError`` of kind ``StorageError/Kind/closed``. Closing a closed
    /// store does nothing. Calls made from other threads while the store closes
    /// either finish before it closes or fail with that error.
    ///
    /// - Throws: ``StorageError`` when the engine reports a failure while
    ///   closing; the store is closed all the same.
    func close() throws
}

extension Store {
    /// No settings to report.
    public var settingsDescription: String { "" }
}

extension StorageError {
    /// The error of a call made after ``Store/close()``.
    public static func closed(_ operation: Operation, entity: String? = nil, path: String?) -> StorageError {
        StorageError(.closed, operation, entity: entity, path: path, message: "the store was closed")
    }
}

/// A ``Storage`` whose adapter is chosen at run time: it forwards every call to
/// the storage it wraps.
///
/// ```swift
/// let dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self),
///                   translator: DialogTranslator())
/// ```
public struct AnyStorage<Record: DAOCore.Record>: Storage {
    /// The wrapped storage.
    public let base: any Storage<Record>

    /// Wraps `base`.
    public init(_ base: some Storage<Record>) {
        self.base = base
    }

    public func persist(_ records: [Record]) throws { try base.persist(records) }
    public func persist(handingOver produce: (_ hand: RecordHandoff<Record>) throws -> Void) throws {
        try base.persist(handingOver: produce)
    }
    public func read(primaryKey key: Record.PrimaryKey) throws -> Record? { try base.read(primaryKey: key) }
    public func read(primaryKeys keys: [Record.PrimaryKey]) throws -> [Record] { try base.read(primaryKeys: keys) }
    public func read(_ query: Query<Record>) throws -> [Record] { try base.read(query) }
    public func read(_ query: Query<Record>, handingOut body: RecordHandoff<Record>) throws {
        try base.read(query, handingOut: body)
    }
    public var handsOutWhileReading: Bool { base.handsOutWhileReading }
    public func forEach(_ query: Query<Record>, _ body: (borrowing Record) throws -> Void) throws {
        try base.forEach(query, body)
    }
    public func forEach(_ call: PreparedQueryCall<Record>, _ body: (borrowing Record) throws -> Void) throws {
        try base.forEach(call, body)
    }
    public func forEachView(_ query: Query<Record>, _ body: (borrowing RecordView<Record>) throws -> Void) throws {
        try base.forEachView(query, body)
    }
    public func forEachView(
        _ call: PreparedQueryCall<Record>, _ body: (borrowing RecordView<Record>) throws -> Void
    ) throws {
        try base.forEachView(call, body)
    }
    @discardableResult
    public func forEachView(
        primaryKey key: Record.PrimaryKey, _ body: (borrowing RecordView<Record>) throws -> Void
    ) throws -> Bool {
        try base.forEachView(primaryKey: key, body)
    }
    public func read(_ call: PreparedQueryCall<Record>) throws -> [Record] { try base.read(call) }
    public func prepare<Parameters>(_ query: PreparedQuery<Record, Parameters>) throws { try base.prepare(query) }
    public func count(where predicate: Predicate<Record>?) throws -> Int { try base.count(where: predicate) }
    @discardableResult
    public func erase(primaryKeys keys: [Record.PrimaryKey]) throws -> Int { try base.erase(primaryKeys: keys) }
    @discardableResult
    public func erase(where predicate: Predicate<Record>?) throws -> Int { try base.erase(where: predicate) }
    public var commits: CommitBroadcaster? { base.commits }
    public var executor: StoreExecutor { base.executor }
}
