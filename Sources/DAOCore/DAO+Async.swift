import Foundation

// The `async` form of every DAO call: the synchronous call, translation
// included, run on a thread of the storage's ``Storage/executor`` (writes on
// its writer thread; reads in place on the task's thread when they need not
// wait, else on a reader thread: ``StoreExecutor/read(_:)``), so the awaiting
// task never holds a thread of Swift's cooperative pool while the store waits.
// Each answers and throws what the synchronous call of the same name does,
// and adds only cancellation (docs/CONCURRENCY.md): cancelled before its job
// starts, a call throws `CancellationError` and does nothing; a persist
// cancelled between two records, or after the last before its commit, throws
// it too and stores nothing of the call; a call that finished returns its
// answer.
//
// ```swift
// try await dialogs.persist(dialog)
// let pinned = try await dialogs.read(where: #Predicate { $0.isPinned })
// ```

extension DAO {
    // MARK: Persist

    /// Inserts or replaces `plain` (upsert), with everything it owns, on the
    /// store's writer thread.
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   job starts; else ``StorageError``. Nothing is written then.
    @inlinable
    public func persist(_ plain: PlainObject) async throws {
        try await storage.executor.write { cancellation in
            try self.storage.persist(handingOver: { hand in
                try hand(self.toRecord(plain))
                try cancellation.check()
            })
        }
    }

    /// Inserts or replaces all of `plains` in one transaction on the store's
    /// writer thread, translating each as the storage asks for it.
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   transaction commits (before the job starts or between two objects):
    ///   the transaction rolls back and nothing of the call is stored.
    ///   Otherwise ``StorageError``; nothing is written then.
    @inlinable
    public func persist(_ plains: some Sequence<PlainObject>) async throws {
        let plains = Array(plains)
        try await storage.executor.write { cancellation in
            guard !plains.isEmpty else { return try self.storage.persist([]) }
            try self.storage.persist(handingOver: { hand in
                for index in plains.indices {
                    try cancellation.check()
                    try hand(self.toRecord(plains[index]))
                }
                try cancellation.check()
            })
        }
    }

    // MARK: Read

    /// Every object, ordered by `uniqueId`, read by the store's executor.
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   read starts; else ``StorageError``.
    @inlinable
    public func read() async throws -> [PlainObject] {
        try await storage.executor.read { _ in try self.read() }
    }

    /// The object with `uniqueId == key`, or `nil`, read by the store's executor.
    /// - Throws: as `read()`.
    @inlinable
    public func read(byPrimaryKey key: PlainObject.ID) async throws -> PlainObject? {
        try await storage.executor.read { _ in try self.read(byPrimaryKey: key) }
    }

    /// The objects with these keys, in the order of `keys`, read on a reader
    /// thread.
    /// - Throws: as `read()`.
    @inlinable
    public func read(byPrimaryKeys keys: [PlainObject.ID]) async throws -> [PlainObject] {
        try await storage.executor.read { _ in try self.read(byPrimaryKeys: keys) }
    }

    /// The objects whose records meet `predicate`, sorted by `sortedBy` and
    /// then by key, at most `limit` of them, read by the store's executor.
    /// - Throws: as `read()`.
    @inlinable
    public func read(
        where predicate: Predicate<Record>? = nil,
        sortedBy: [SortDescriptor<Record>] = [],
        limit: Int? = nil
    ) async throws -> [PlainObject] {
        try await storage.executor.read { _ in
            try self.read(where: predicate, sortedBy: sortedBy, limit: limit)
        }
    }

    /// How many objects have records that meet `predicate` (all when `nil`),
    /// counted by the store's executor.
    /// - Throws: as `read()`.
    public func count(where predicate: Predicate<Record>? = nil) async throws -> Int {
        try await storage.executor.read { _ in try self.storage.count(where: predicate) }
    }

    // MARK: Erase

    /// Erases every object of this type on the store's writer thread;
    /// returns how many there were.
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   job starts; else ``StorageError``. Nothing is erased then.
    @discardableResult
    public func erase() async throws -> Int {
        try await storage.executor.write { _ in try self.storage.erase(where: nil) }
    }

    /// Erases the object with `uniqueId == key` and what it owns; returns
    /// whether there was one.
    /// - Throws: as `erase()`.
    @discardableResult
    public func erase(byPrimaryKey key: PlainObject.ID) async throws -> Bool {
        try await storage.executor.write { _ in try self.storage.erase(primaryKeys: [key]) > 0 }
    }

    /// Erases the objects with these keys in one transaction; returns how
    /// many were erased.
    /// - Throws: as `erase()`.
    @discardableResult
    public func erase(byPrimaryKeys keys: [PlainObject.ID]) async throws -> Int {
        try await storage.executor.write { _ in try self.storage.erase(primaryKeys: keys) }
    }

    /// Erases the objects whose records meet `predicate` in one transaction;
    /// returns how many were erased.
    /// - Throws: as `erase()`.
    @discardableResult
    public func erase(where predicate: Predicate<Record>) async throws -> Int {
        try await storage.executor.write { _ in try self.storage.erase(where: predicate) }
    }
}

extension PreparedObjectQuery {
    /// The objects whose records meet the predicate with these values, sorted
    /// and limited as prepared, read by the store's executor.
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   read starts; else ``StorageError``.
    @inlinable
    public func read(values: Parameters) async throws -> [T.PlainObject] {
        let call = prepared.call(values: values)
        return try await dao.storage.executor.read { _ in try self.dao.toPlains(self.dao.storage.read(call)) }
    }

    /// How many objects have records that meet the predicate with these
    /// values, counted by the store's executor.
    /// - Throws: as `read(values:)`.
    public func count(values: Parameters) async throws -> Int {
        let predicate = prepared.predicate(values: values)
        return try await dao.storage.executor.read { _ in try self.dao.storage.count(where: predicate) }
    }

    /// Erases the objects whose records meet the predicate with these values
    /// in one transaction on the store's writer thread; returns how many were
    /// erased.
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   job starts; else ``StorageError``. Nothing is erased then.
    @discardableResult
    public func erase(values: Parameters) async throws -> Int {
        let predicate = prepared.predicate(values: values)
        return try await dao.storage.executor.write { _ in try self.dao.storage.erase(where: predicate) }
    }
}

extension PreparedObjectQuery where Parameters: FieldValue {
    /// `read(values:)` with this value of the parameter.
    @inlinable
    public func read(_ a: Parameters) async throws -> [T.PlainObject] { try await read(values: a) }
    /// `count(values:)` with this value of the parameter.
    public func count(_ a: Parameters) async throws -> Int { try await count(values: a) }
    /// `erase(values:)` with this value of the parameter.
    @discardableResult
    public func erase(_ a: Parameters) async throws -> Int { try await erase(values: a) }
}

extension PreparedObjectQuery {
    /// `read(values:)` with these values of the parameters.
    @inlinable
    public func read<A, B>(_ a: A, _ b: B) async throws -> [T.PlainObject] where Parameters == (A, B) {
        try await read(values: (a, b))
    }
    /// `count(values:)` with these values of the parameters.
    public func count<A, B>(_ a: A, _ b: B) async throws -> Int where Parameters == (A, B) {
        try await count(values: (a, b))
    }
    /// `erase(values:)` with these values of the parameters.
    @discardableResult
    public func erase<A, B>(_ a: A, _ b: B) async throws -> Int where Parameters == (A, B) {
        try await erase(values: (a, b))
    }
    /// `read(values:)` with these values of the parameters.
    @inlinable
    public func read<A, B, C>(_ a: A, _ b: B, _ c: C) async throws -> [T.PlainObject] where Parameters == (A, B, C) {
        try await read(values: (a, b, c))
    }
    /// `count(values:)` with these values of the parameters.
    public func count<A, B, C>(_ a: A, _ b: B, _ c: C) async throws -> Int where Parameters == (A, B, C) {
        try await count(values: (a, b, c))
    }
    /// `erase(values:)` with these values of the parameters.
    @discardableResult
    public func erase<A, B, C>(_ a: A, _ b: B, _ c: C) async throws -> Int where Parameters == (A, B, C) {
        try await erase(values: (a, b, c))
    }
}
