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

    /// Inserts or replaces the records that `produce` hands over, one at a
    /// time, with their children, in one transaction: what ``persist(_:)``
    /// does for an array, without the array.
    ///
    /// The storage calls `produce` inside its transaction; `produce` calls
    /// the ``RecordHandoff`` it is given once per record, in order, and each
    /// record is written (or, after a failure, only checked) and let go
    /// before the next one is made. The ``DAO`` translates its plain objects
    /// this way, so a call never holds every record at once.
    ///
    /// The answer is the one ``persist(_:)`` gives for the array of the same
    /// records: the last of several records with one key wins; an error
    /// `produce` throws (a translation error) is thrown as it is, and
    /// nothing is written; a record the storage refuses is reported as
    /// ``persist(_:)`` would report it, after `produce` has handed over the
    /// rest (so that a later translation error, which ``persist(_:)`` would
    /// have seen before any record, still comes first). A call that hands
    /// over no record writes nothing and reports no commit.
    ///
    /// `produce` may be called more than once (a storage that must start
    /// its transaction again, as LMDB does when its map grows, calls it
    /// again); each call must hand over the same records. It runs inside
    /// the storage's write transaction, so it must not write to the same
    /// store.
    ///
    /// The default implementation collects the records into an array and
    /// calls ``persist(_:)``, so an adapter that implements only that keeps
    /// working; the SQLite and LMDB adapters write each record as it comes.
    /// - Throws: ``StorageError``, or what `produce` throws; the store is
    ///   left as it was.
    func persist(handingOver produce: (_ hand: RecordHandoff<Record>) throws -> Void) throws

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

    /// Reads the records that answer `query`, as ``Storage/read(_:)-(Query<Self.Record>)``
    /// does, and hands each to `body` in that order instead of returning
    /// them: a reader that turns each record into something else (the DAO
    /// its plain objects) does so while the record is fresh in the cache,
    /// and the record is let go before the next, so a large read does not
    /// hold every record and everything made from them at once.
    ///
    /// `body` is called once per record and may run inside the storage's
    /// read transaction, so it must not read or write the same store (a
    /// translator must not). When it throws, no record is handed out after
    /// it, and its error is rethrown unless the storage failed to read a
    /// record, whose error then comes first, as with ``Storage/read(_:)-(Query<Self.Record>)``.
    ///
    /// The default implementation reads the array with ``Storage/read(_:)-(Query<Self.Record>)``
    /// and hands its records over one by one; the LMDB adapter hands out
    /// each record of a read of every record (no predicate, sort or limit)
    /// of a record type with children and no parent entity as it decodes it.
    /// - Throws: ``StorageError``, or what `body` throws.
    func read(_ query: Query<Record>, handingOut body: RecordHandoff<Record>) throws

    /// Hands each record that answers `query` to `body`, borrowed, in the
    /// order and number ``Storage/read(_:)-(Query<Self.Record>)`` returns
    /// them, and returns nothing: for code that consumes records without
    /// keeping them (a sum, a digest, a row drawn on a screen). A storage
    /// may lend a record it decoded in place and let go of it, or reuse its
    /// memory, once `body` returns; keep a record beyond the call with
    /// `copy record`.
    ///
    /// `body` may run inside the storage's read transaction, so it must not
    /// read or write the same store. When it throws, no record is handed to
    /// it after that, and its error is rethrown unless the storage failed to
    /// read a record, whose error then comes first, as with
    /// ``Storage/read(_:)-(Query<Self.Record>)``.
    ///
    /// The default implementation reads with ``read(_:handingOut:)`` (the
    /// array first, unless the storage hands records out while reading).
    /// - Throws: ``StorageError``, or what `body` throws.
    func forEach(_ query: Query<Record>, _ body: (borrowing Record) throws -> Void) throws

    /// Hands each record that answers one call of a prepared query to
    /// `body`, borrowed, as `forEach(_:_:)` does for a
    /// query: the records `read(_:)` returns for the
    /// call, in its order. The default implementation reads
    /// that array and lends its records one by one.
    /// - Throws: ``StorageError``, or what `body` throws.
    func forEach(_ call: PreparedQueryCall<Record>, _ body: (borrowing Record) throws -> Void) throws

    /// Lends a view of each record that answers `query` to `body`: its own
    /// fields where the engine keeps them (``RecordView``), in the order and
    /// number ``read(_:)-(Query<Self.Record>)`` returns the records, with no
    /// record, `String` or array made. `body` must not read or write the same
    /// store: it may run inside the read transaction.
    ///
    /// The default implementation reads the records and lends a view of
    /// each; SQLite and LMDB lend views of their rows and values where the
    /// query's access path gives its order (docs/ARCHITECTURE.md, "Views").
    /// - Throws: ``StorageError``, or what `body` throws; no view is lent
    ///   after an error.
    func forEachView(_ query: Query<Record>, _ body: (borrowing RecordView<Record>) throws -> Void) throws

    /// Lends a view of each record that answers one call of a prepared
    /// query to `body`, as `forEachView(_:_:)` does for the call's
    /// ``PreparedQueryCall/query``, which the default implementation reads.
    /// An adapter that answers `read(_:)` for a call from its template
    /// lends the views the same way, without building the query.
    /// - Throws: ``StorageError``, or what `body` throws.
    func forEachView(_ call: PreparedQueryCall<Record>, _ body: (borrowing RecordView<Record>) throws -> Void) throws

    /// Lends a view of the record with primary key `key` to `body`, when
    /// one is stored: the fields of the record ``read(primaryKey:)`` returns.
    /// The default implementation reads that record.
    /// - Returns: whether a view was lent.
    /// - Throws: ``StorageError``, or what `body` throws.
    @discardableResult
    func forEachView(primaryKey key: Record.PrimaryKey, _ body: (borrowing RecordView<Record>) throws -> Void) throws
        -> Bool

    /// The records that answer one call of a prepared query: those of its
    /// ``PreparedQueryCall/query``, which the default implementation reads.
    /// An adapter that plans its own access path reads the call's
    /// ``PreparedQueryCall/boundPlan()`` instead, one that runs the whole
    /// condition itself its ``PreparedQueryCall/boundCondition()``, without
    /// building the query.
    /// - Throws: ``StorageError``.
    func read(_ call: PreparedQueryCall<Record>) throws -> [Record]

    /// Prepares what this storage keeps for the calls of `query` (SQLite:
    /// the `SELECT` of its template and the statement compiled on a
    /// connection; LMDB: the access path's reading of its template), as a
    /// hand-written prepared statement is compiled before its first use,
    /// so that the first call pays only what every call pays.
    /// `DAO.prepare(where:sortedBy:limit:)` calls it; the default does
    /// nothing, and a call prepares what it finds unprepared either way.
    /// Reads no records.
    /// - Throws: ``StorageError`` (``StorageError/Kind/closed`` after the
    ///   store was closed, from a storage that prepares something).
    func prepare<Parameters>(_ query: PreparedQuery<Record, Parameters>) throws

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

    /// Whether ``read(_:handingOut:)`` hands out the records of a read of
    /// every record as it reads them, rather than reading the array first
    /// (the default, `false`). `DAO.read()` hands records over only to a
    /// storage that does: from an array read first, handing them over one by
    /// one only adds a call per record to the DAO's own loop.
    var handsOutWhileReading: Bool { get }

    /// The threads the `async` calls of this storage run on: its store's
    /// ``StoreExecutor``, with as many reader threads as the store reads side
    /// by side. The default is ``StoreExecutor/shared``, so an adapter that
    /// names none keeps working; the adapters of this package name their
    /// store's own.
    var executor: StoreExecutor { get }
}

/// How ``Storage/persist(handingOver:)`` receives its records, and
/// ``Storage/read(_:handingOut:)`` hands them out: called once per record,
/// in order; the record is the receiver's from then on.
public typealias RecordHandoff<Record> = (consuming Record) throws -> Void

extension Storage {
    /// Nothing to prepare: each call finds what it needs.
    public func prepare<Parameters>(_ query: PreparedQuery<Record, Parameters>) throws {}
}

extension Storage {
    /// No broadcaster: the storage cannot be observed.
    public var commits: CommitBroadcaster? { nil }

    /// `false`: ``read(_:handingOut:)`` reads the array first.
    public var handsOutWhileReading: Bool { false }

    /// ``StoreExecutor/shared``.
    public var executor: StoreExecutor { StoreExecutor.shared }

    /// Collects the records `produce` hands over into an array and persists
    /// them with ``persist(_:)``: nothing is written when `produce` throws.
    /// - Throws: what `produce` or ``persist(_:)`` throws.
    public func persist(handingOver produce: (_ hand: RecordHandoff<Record>) throws -> Void) throws {
        var records: [Record] = []
        try produce { records.append($0) }
        try persist(records)
    }

    /// Reads the records of `query` with ``Storage/read(_:)-(Query<Self.Record>)`` and
    /// hands them to `body` with ``handOut(_:to:)``.
    /// - Throws: what ``Storage/read(_:)-(Query<Self.Record>)`` or `body` throws.
    @inlinable
    public func read(_ query: Query<Record>, handingOut body: RecordHandoff<Record>) throws {
        try handOut(read(query), to: body)
    }

    /// Hands `records` to `body` one by one, in order: the default
    /// ``read(_:handingOut:)``'s work once the array is read, for an adapter
    /// that hands out only some reads as it makes them. The array is held
    /// until the last record is handed over, as a caller of
    /// ``Storage/read(_:)-(Query<Self.Record>)`` holds it: letting each record go as it
    /// is handed over (reversing the array, then popping its last record)
    /// cost more than three times as much in the adapters' generic code.
    /// - Throws: what `body` throws; no record is handed out after it.
    @inlinable
    public func handOut(_ records: consuming [Record], to body: RecordHandoff<Record>) throws {
        for record in records {
            try body(record)
        }
    }

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
