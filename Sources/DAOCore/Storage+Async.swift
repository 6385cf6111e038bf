import Foundation

// The `async` form of every storage call: the synchronous call, run on a
// thread of the storage's ``Storage/executor`` (writes on its writer thread;
// reads in place on the task's thread when they need not wait, else on a
// reader thread: ``StoreExecutor/read(_:)``), so the awaiting task never
// holds a thread of Swift's cooperative pool while the store waits. Each answers and
// throws what the synchronous call of the same name does, and adds only
// cancellation (docs/CONCURRENCY.md):
//
// - A call whose task is cancelled before its job starts throws
//   `CancellationError` and does nothing.
// - A persist checks again before each record it hands over and once after
//   the last, before its transaction commits: cancelled in the middle of a
//   batch, it throws `CancellationError` and its transaction rolls back, so
//   nothing of the call is stored.
// - A call that finished (a write that committed) returns its answer, even if
//   its task was cancelled meanwhile.

extension Storage {
    // MARK: Writes

    /// Inserts or replaces the records with their children in one
    /// transaction, on the store's writer thread (`persist(_:)`).
    ///
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   transaction commits (before the job starts or between two records):
    ///   nothing of the call is stored then. Otherwise what the synchronous
    ///   call throws; the store is left as it was.
    public func persist(_ records: [Record]) async throws {
        try await executor.write { cancellation in
            guard !records.isEmpty else { return try self.persist(records) }
            try self.persist(handingOver: { hand in
                for record in records {
                    try cancellation.check()
                    try hand(record)
                }
                try cancellation.check()
            })
        }
    }

    /// Inserts or replaces one record with its children, on the store's
    /// writer thread.
    /// - Throws: as `persist(_:)` of an array.
    public func persist(_ record: Record) async throws {
        try await executor.write { cancellation in
            try self.persist(handingOver: { hand in
                try hand(record)
                try cancellation.check()
            })
        }
    }

    /// Inserts or replaces the records `produce` hands over, in one
    /// transaction on the store's writer thread
    /// (`persist(handingOver:)`). `produce` runs on that thread.
    ///
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   job starts or before a record is handed over: the transaction rolls
    ///   back and nothing of the call is stored. Otherwise what the
    ///   synchronous call throws.
    public func persist(
        handingOver produce: @escaping @Sendable (_ hand: RecordHandoff<Record>) throws -> Void
    ) async throws {
        try await executor.write { cancellation in
            try self.persist(handingOver: { hand in
                try produce { record in
                    try cancellation.check()
                    try hand(record)
                }
                try cancellation.check()
            })
        }
    }

    /// Erases the records with these primary keys and their children in one
    /// transaction, on the store's writer thread; returns how many were erased.
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   job starts (nothing is erased); else ``StorageError``.
    @discardableResult
    public func erase(primaryKeys keys: [Record.PrimaryKey]) async throws -> Int {
        try await executor.write { _ in try self.erase(primaryKeys: keys) }
    }

    /// Erases the records that meet `predicate` (all when `nil`) and their
    /// children in one transaction, on the store's writer thread.
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   job starts (nothing is erased); else ``StorageError``.
    @discardableResult
    public func erase(where predicate: Predicate<Record>?) async throws -> Int {
        try await executor.write { _ in try self.erase(where: predicate) }
    }

    /// Erases the record with primary key `key` and its children; returns
    /// whether there was one.
    /// - Throws: as `erase(primaryKeys:)`.
    @discardableResult
    public func erase(primaryKey key: Record.PrimaryKey) async throws -> Bool {
        try await executor.write { _ in try self.erase(primaryKeys: [key]) > 0 }
    }

    /// Erases every record of this entity and their children.
    /// - Throws: as `erase(where:)`.
    @discardableResult
    public func eraseAll() async throws -> Int {
        try await executor.write { _ in try self.erase(where: nil) }
    }

    // MARK: Reads

    /// The record with primary key `key`, read by the store's executor.
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   read starts; else ``StorageError``.
    public func read(primaryKey key: Record.PrimaryKey) async throws -> Record? {
        try await executor.read { _ in try self.read(primaryKey: key) }
    }

    /// The records with these primary keys, in the order of `keys`, read by the
    /// store's executor.
    /// - Throws: as `read(primaryKey:)`.
    public func read(primaryKeys keys: [Record.PrimaryKey]) async throws -> [Record] {
        try await executor.read { _ in try self.read(primaryKeys: keys) }
    }

    /// The records that answer `query`, read by the store's executor.
    /// - Throws: as `read(primaryKey:)`.
    public func read(_ query: Query<Record>) async throws -> [Record] {
        try await executor.read { _ in try self.read(query) }
    }

    /// The records that answer one call of a prepared query, read by the
    /// store's executor.
    /// - Throws: as `read(primaryKey:)`.
    public func read(_ call: PreparedQueryCall<Record>) async throws -> [Record] {
        try await executor.read { _ in try self.read(call) }
    }

    /// The records that answer `prepared` with these values of its
    /// parameters, read by the store's executor.
    /// - Throws: as `read(primaryKey:)`.
    public func read<Parameters>(_ prepared: PreparedQuery<Record, Parameters>, values: Parameters) async throws
        -> [Record]
    {
        try await read(prepared.call(values: values))
    }

    /// The records that answer `prepared` with this value of its parameter.
    /// - Throws: as `read(primaryKey:)`.
    public func read<A: FieldValue>(_ prepared: PreparedQuery<Record, A>, _ a: A) async throws -> [Record] {
        try await read(prepared.call(values: a))
    }

    /// The records that answer `prepared` with these values of its parameters.
    /// - Throws: as `read(primaryKey:)`.
    public func read<A, B>(_ prepared: PreparedQuery<Record, (A, B)>, _ a: A, _ b: B) async throws -> [Record] {
        try await read(prepared.call(values: (a, b)))
    }

    /// The records that answer `prepared` with these values of its parameters.
    /// - Throws: as `read(primaryKey:)`.
    public func read<A, B, C>(_ prepared: PreparedQuery<Record, (A, B, C)>, _ a: A, _ b: B, _ c: C) async throws
        -> [Record]
    {
        try await read(prepared.call(values: (a, b, c)))
    }

    /// Every record, ordered by primary key, read by the store's executor.
    /// - Throws: as `read(primaryKey:)`.
    public func readAll() async throws -> [Record] {
        try await executor.read { _ in try self.read(Query()) }
    }

    /// The records where `predicate` holds, sorted, up to `limit`, read by the
    /// store's executor.
    /// - Throws: as `read(primaryKey:)`.
    public func read(
        where predicate: Predicate<Record>? = nil,
        sortedBy: [SortDescriptor<Record>] = [],
        limit: Int? = nil
    ) async throws -> [Record] {
        try await read(Query(where: predicate, sortedBy: sortedBy, limit: limit))
    }

    /// How many records meet `predicate` (all when `nil`), counted by the
    /// store's executor.
    /// - Throws: as `read(primaryKey:)`.
    public func count(where predicate: Predicate<Record>?) async throws -> Int {
        try await executor.read { _ in try self.count(where: predicate) }
    }

    /// How many records there are, counted by the store's executor.
    /// - Throws: as `read(primaryKey:)`.
    public func count() async throws -> Int {
        try await executor.read { _ in try self.count(where: nil) }
    }
}
