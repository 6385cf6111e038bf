import Foundation

/// One adapter's access to the records of one entity. Every call is one
/// transaction: it happens whole or not at all.
///
/// A storage stores a record's to-many relations natively (a dialog's messages
/// as message rows or entries), so persisting a parent persists its children and
/// erasing a parent erases them. Storages are `Sendable`: calls from many tasks
/// at once are safe.
///
/// Adapters implement these requirements; the conveniences below are built on
/// them.
public protocol Storage<Record>: Sendable {
    /// The record type this storage holds.
    associatedtype Record: DAOCore.Record

    /// Inserts the records, or replaces those whose primary key is already
    /// stored (upsert), with their children, in one transaction.
    ///
    /// A replaced parent keeps exactly the children it now holds.
    /// - Throws: ``StorageError``; the store is left as it was.
    func persist(_ records: [Record]) throws

    /// The record with primary key `key`, with its children, or `nil`.
    /// - Throws: ``StorageError``.
    func read(primaryKey key: Record.PrimaryKey) throws -> Record?

    /// The records with these primary keys, in the order of `keys`; a key with no
    /// record is skipped, and a key given twice gives its record twice.
    /// - Throws: ``StorageError``.
    func read(primaryKeys keys: [Record.PrimaryKey]) throws -> [Record]

    /// The records that answer `query`, sorted by its descriptors and then by
    /// primary key, at most `query.limit` of them.
    /// - Throws: ``StorageError``.
    func read(_ query: Query<Record>) throws -> [Record]

    /// How many records meet `predicate` (all records when it is `nil`).
    /// - Throws: ``StorageError``.
    func count(where predicate: Predicate<Record>?) throws -> Int

    /// Erases the records with these primary keys, with their children, in one
    /// transaction, and returns how many records (not counting children) were
    /// erased. Keys with no record are ignored.
    /// - Throws: ``StorageError``; the store is left as it was.
    @discardableResult
    func erase(primaryKeys keys: [Record.PrimaryKey]) throws -> Int

    /// Erases the records that meet `predicate` (every record when it is `nil`),
    /// with their children, in one transaction, and returns how many were erased.
    /// - Throws: ``StorageError``; the store is left as it was.
    @discardableResult
    func erase(where predicate: Predicate<Record>?) throws -> Int

    /// The broadcaster of the store this storage belongs to, which its writes
    /// report their commits to and ``DAO/observe(where:sortedBy:limit:pollInterval:)``
    /// listens on; `nil` (the default) for a storage that cannot be observed.
    var commits: CommitBroadcaster? { get }
}

extension Storage {
    /// No broadcaster: the storage cannot be observed.
    public var commits: CommitBroadcaster? { nil }

    /// Inserts or replaces one record with its children.
    public func persist(_ record: Record) throws {
        try persist([record])
    }

    /// Every record, ordered by primary key.
    public func readAll() throws -> [Record] {
        try read(Query())
    }

    /// The records where `predicate` holds, sorted, up to `limit`.
    public func read(
        where predicate: Predicate<Record>? = nil,
        sortedBy: [SortDescriptor<Record>] = [],
        limit: Int? = nil
    ) throws -> [Record] {
        try read(Query(where: predicate, sortedBy: sortedBy, limit: limit))
    }

    /// How many records there are.
    public func count() throws -> Int {
        try count(where: nil)
    }

    /// Erases the record with primary key `key` and its children; returns
    /// whether there was one.
    @discardableResult
    public func erase(primaryKey key: Record.PrimaryKey) throws -> Bool {
        try erase(primaryKeys: [key]) > 0
    }

    /// Erases every record of this entity and their children.
    @discardableResult
    public func eraseAll() throws -> Int {
        try erase(where: nil)
    }
}
