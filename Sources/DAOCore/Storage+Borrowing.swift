import Foundation

// The borrowing read path: `forEach` lends each record of a read to a closure
// instead of returning an array of them. Every storage answers it (these
// defaults read the array, or hand records out while reading where the
// storage does); an adapter whose engine allows it lends records without
// the array (docs/ARCHITECTURE.md, "The read path").

extension Storage {
    /// Lends the records of `query` to `body` through
    /// ``read(_:handingOut:)``: the array first, unless the storage hands
    /// records out while it reads them.
    /// - Throws: what ``read(_:handingOut:)`` or `body` throws.
    @inlinable
    public func forEach(_ query: Query<Record>, _ body: (borrowing Record) throws -> Void) throws {
        try read(query, handingOut: { record in try body(record) })
    }

    /// Lends the records `read(_:)` returns for `call` to `body`, one by one,
    /// in order.
    /// - Throws: what `read(_:)` or `body` throws.
    @inlinable
    public func forEach(_ call: PreparedQueryCall<Record>, _ body: (borrowing Record) throws -> Void) throws {
        try lend(read(call), to: body)
    }

    /// Lends `records` to `body` one by one, in order, each where it lies in
    /// the array (a `for … in` loop copied each record out first: a retain
    /// and a release of every reference it holds).
    /// - Throws: what `body` throws; no record is lent after it.
    @inlinable
    public func lend(_ records: borrowing [Record], to body: (borrowing Record) throws -> Void) throws {
        try records.withUnsafeBufferPointer { records in
            for position in records.indices {
                try body(records[position])
            }
        }
    }

    /// Lends each record where `predicate` holds (every record when it is
    /// `nil`), sorted by `sortedBy` and then by primary key, at most `limit`
    /// of them, to `body`: the records `read(where:sortedBy:limit:)` returns,
    /// in its order, without the array.
    ///
    /// ```swift
    /// var words = 0
    /// try messages.forEach(where: #Predicate { $0.dialogId == 7 }) { message in
    ///     words += message.text.split(separator: " ").count
    /// }
    /// ```
    ///
    /// `body` must not read or write the same store, and must not keep the
    /// record it is lent beyond the call (`copy record` keeps one).
    /// - Throws: ``StorageError``, or what `body` throws.
    @inlinable
    public func forEach(
        where predicate: Predicate<Record>? = nil,
        sortedBy: [SortDescriptor<Record>] = [],
        limit: Int? = nil,
        _ body: (borrowing Record) throws -> Void
    ) throws {
        try forEach(Query(where: predicate, sortedBy: sortedBy, limit: limit), body)
    }

    /// Lends the record with primary key `key`, with its children, to
    /// `body` when one is stored: the record `read(primaryKey:)` returns,
    /// without returning it. A lookup by key, not the query `id == key`: no
    /// plan and no predicate.
    ///
    /// ```swift
    /// var words = 0
    /// try dialogs.forEach(primaryKey: 7) { dialog in
    ///     words += dialog.messages.count
    /// }
    /// ```
    ///
    /// `body` must not read or write the same store, and must not keep the
    /// record beyond the call (`copy record` keeps it).
    /// - Returns: whether a record was lent.
    /// - Throws: ``StorageError``, or what `body` throws.
    @inlinable @discardableResult
    public func forEach(primaryKey key: Record.PrimaryKey, _ body: (borrowing Record) throws -> Void) throws -> Bool {
        guard let record = try read(primaryKey: key) else { return false }
        try body(record)
        return true
    }

    /// Lends the records with these primary keys to `body`, in the order of
    /// `keys`: those `read(primaryKeys:)` returns (a key with no record is
    /// skipped, a key given twice lends its record twice).
    /// - Throws: ``StorageError``, or what `body` throws; no record is lent
    ///   after it.
    @inlinable
    public func forEach(primaryKeys keys: [Record.PrimaryKey], _ body: (borrowing Record) throws -> Void) throws {
        try lend(read(primaryKeys: keys), to: body)
    }

    /// Lends the records that answer `prepared` with these values of its
    /// parameters to `body`, as `read(_:values:)` returns them.
    /// - Throws: ``StorageError``, or what `body` throws.
    @inlinable
    public func forEach<Parameters>(
        _ prepared: PreparedQuery<Record, Parameters>, values: Parameters, _ body: (borrowing Record) throws -> Void
    ) throws {
        try forEach(prepared.call(values: values), body)
    }

    /// Lends the records that answer `prepared` with this value of its
    /// parameter to `body`.
    /// - Throws: ``StorageError``, or what `body` throws.
    @inlinable
    public func forEach<A: FieldValue>(
        _ prepared: PreparedQuery<Record, A>, _ a: A, _ body: (borrowing Record) throws -> Void
    ) throws {
        try forEach(prepared.call(values: a), body)
    }
}

extension DAO {
    /// Lends each object whose record meets `predicate` (every object when it
    /// is `nil`), sorted by `sortedBy` and then by key, at most `limit` of
    /// them, to `body`: the objects `read(where:sortedBy:limit:)` returns, in
    /// its order, each translated as the storage lends its record, without
    /// an array of records or of objects.
    ///
    /// ```swift
    /// var unread = 0
    /// try messages.forEach(where: #Predicate { $0.dialogId == 7 && !$0.isRead }) { message in
    ///     unread += message.text.utf8.count
    /// }
    /// ```
    ///
    /// `body` runs inside the storage's read transaction on some adapters,
    /// so it must not read or write the same store; it must not keep the
    /// object beyond the call (`copy object` keeps one).
    /// - Throws: ``StorageError`` (a record the translator refuses is
    ///   ``StorageError/Kind/translation``), or what `body` throws.
    @inlinable
    public func forEach(
        where predicate: Predicate<Record>? = nil,
        sortedBy: [SortDescriptor<Record>] = [],
        limit: Int? = nil,
        _ body: (borrowing PlainObject) throws -> Void
    ) throws {
        try storage.forEach(Query(where: predicate, sortedBy: sortedBy, limit: limit)) { record in
            try body(toPlain(record))
        }
    }
}

extension DAO {
    /// Lends the object with `uniqueId == key` to `body` when one is stored:
    /// the object `read(byPrimaryKey:)` returns, translated as the storage
    /// lends its record, without returning it.
    ///
    /// ```swift
    /// var unread = 0
    /// let found = try dialogs.forEach(byPrimaryKey: 7) { dialog in
    ///     unread = dialog.messages.count { !$0.isRead }
    /// }
    /// ```
    ///
    /// `body` may run inside the storage's read transaction, so it must not
    /// read or write the same store; it must not keep the object beyond the
    /// call (`copy object` keeps it).
    /// - Returns: whether an object was lent.
    /// - Throws: ``StorageError`` (a record the translator refuses is
    ///   ``StorageError/Kind/translation``), or what `body` throws.
    @inlinable @discardableResult
    public func forEach(byPrimaryKey key: PlainObject.ID, _ body: (borrowing PlainObject) throws -> Void) throws -> Bool {
        try storage.forEach(primaryKey: key) { record in try body(toPlain(record)) }
    }

    /// Lends the objects with these keys to `body`, in the order of `keys`:
    /// those `read(byPrimaryKeys:)` returns (missing keys skipped, a key
    /// given twice lent twice).
    /// - Throws: as `forEach(byPrimaryKey:_:)`; no object is lent after an
    ///   error.
    @inlinable
    public func forEach(byPrimaryKeys keys: [PlainObject.ID], _ body: (borrowing PlainObject) throws -> Void) throws {
        try storage.forEach(primaryKeys: keys) { record in try body(toPlain(record)) }
    }
}

extension PreparedObjectQuery {
    /// Lends each object whose record meets the predicate with these values
    /// (a tuple for more than one parameter), sorted and limited as prepared,
    /// to `body`: the objects `read(values:)` returns, in its order.
    /// - Throws: ``StorageError``, or what `body` throws.
    @inlinable
    public func forEach(values: Parameters, _ body: (borrowing T.PlainObject) throws -> Void) throws {
        try dao.storage.forEach(prepared.call(values: values)) { record in
            try body(dao.toPlain(record))
        }
    }
}

extension PreparedObjectQuery where Parameters: FieldValue {
    /// `forEach(values:_:)` with this value of the parameter.
    /// - Throws: ``StorageError``, or what `body` throws.
    @inlinable
    public func forEach(_ a: Parameters, _ body: (borrowing T.PlainObject) throws -> Void) throws {
        try forEach(values: a, body)
    }
}

// MARK: - Async

// The `async` forms run the synchronous call as every async read does (in
// place on the task's thread when it need not wait, else on a reader thread
// of the store's executor) and call `body` there, outside the read in place
// (`StoreExecutor.outsideReadInPlace`: a read that lent a record is never run
// again); they check for cancellation before each record is lent
// (docs/CONCURRENCY.md).

extension Storage {
    /// Lends each record of `query` to `body` by the store's
    /// executor, as the synchronous `forEach(_:_:)` does.
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   read starts or before a record is lent (no record is lent after
    ///   it); else what the synchronous call throws.
    public func forEach(
        _ query: Query<Record>, _ body: @escaping @Sendable (borrowing Record) throws -> Void
    ) async throws {
        try await executor.read { cancellation in
            try self.forEach(query) { record in
                try cancellation.check()
                try StoreExecutor.outsideReadInPlace { try body(record) }
            }
        }
    }

    /// Lends each record where `predicate` holds, sorted and limited, to
    /// `body` by the store's executor.
    /// - Throws: as the `async` `forEach(_:_:)`.
    public func forEach(
        where predicate: Predicate<Record>? = nil,
        sortedBy: [SortDescriptor<Record>] = [],
        limit: Int? = nil,
        _ body: @escaping @Sendable (borrowing Record) throws -> Void
    ) async throws {
        try await forEach(Query(where: predicate, sortedBy: sortedBy, limit: limit), body)
    }

    /// Lends the record with primary key `key` to `body` by the store's
    /// executor, as the synchronous `forEach(primaryKey:_:)` does.
    /// - Returns: whether a record was lent.
    /// - Throws: as the `async` `forEach(_:_:)`.
    @discardableResult
    public func forEach(
        primaryKey key: Record.PrimaryKey, _ body: @escaping @Sendable (borrowing Record) throws -> Void
    ) async throws -> Bool {
        try await executor.read { cancellation in
            try self.forEach(primaryKey: key) { record in
                try cancellation.check()
                try StoreExecutor.outsideReadInPlace { try body(record) }
            }
        }
    }

    /// Lends the records with these primary keys to `body`, in the order of
    /// `keys`, by the store's executor.
    /// - Throws: as the `async` `forEach(_:_:)`.
    public func forEach(
        primaryKeys keys: [Record.PrimaryKey], _ body: @escaping @Sendable (borrowing Record) throws -> Void
    ) async throws {
        try await executor.read { cancellation in
            try self.forEach(primaryKeys: keys) { record in
                try cancellation.check()
                try StoreExecutor.outsideReadInPlace { try body(record) }
            }
        }
    }

    /// Lends the records that answer one call of a prepared query to `body`
    /// by the store's executor.
    /// - Throws: as the `async` `forEach(_:_:)`.
    public func forEach(
        _ call: PreparedQueryCall<Record>, _ body: @escaping @Sendable (borrowing Record) throws -> Void
    ) async throws {
        try await executor.read { cancellation in
            try self.forEach(call) { record in
                try cancellation.check()
                try StoreExecutor.outsideReadInPlace { try body(record) }
            }
        }
    }
}

extension DAO {
    /// Lends each object whose record meets `predicate`, sorted and limited,
    /// to `body` by the store's executor, as the synchronous
    /// `forEach(where:sortedBy:limit:_:)` does.
    /// - Throws: `CancellationError` when the task is cancelled before the
    ///   read starts or before an object is lent; else what the synchronous
    ///   call throws.
    @inlinable
    public func forEach(
        where predicate: Predicate<Record>? = nil,
        sortedBy: [SortDescriptor<Record>] = [],
        limit: Int? = nil,
        _ body: @escaping @Sendable (borrowing PlainObject) throws -> Void
    ) async throws {
        let query = Query(where: predicate, sortedBy: sortedBy, limit: limit)
        try await storage.executor.read { cancellation in
            try self.storage.forEach(query) { record in
                try cancellation.check()
                let plain = try self.toPlain(record)
                try StoreExecutor.outsideReadInPlace { try body(plain) }
            }
        }
    }
}

extension DAO {
    /// Lends the object with `uniqueId == key` to `body` by the store's
    /// executor, as the synchronous `forEach(byPrimaryKey:_:)` does.
    /// - Returns: whether an object was lent.
    /// - Throws: as the `async` `forEach(where:sortedBy:limit:_:)`.
    @inlinable @discardableResult
    public func forEach(
        byPrimaryKey key: PlainObject.ID, _ body: @escaping @Sendable (borrowing PlainObject) throws -> Void
    ) async throws -> Bool {
        try await storage.executor.read { cancellation in
            try self.storage.forEach(primaryKey: key) { record in
                try cancellation.check()
                let plain = try self.toPlain(record)
                try StoreExecutor.outsideReadInPlace { try body(plain) }
            }
        }
    }

    /// Lends the objects with these keys to `body`, in the order of `keys`,
    /// by the store's executor.
    /// - Throws: as the `async` `forEach(where:sortedBy:limit:_:)`.
    @inlinable
    public func forEach(
        byPrimaryKeys keys: [PlainObject.ID], _ body: @escaping @Sendable (borrowing PlainObject) throws -> Void
    ) async throws {
        try await storage.executor.read { cancellation in
            try self.storage.forEach(primaryKeys: keys) { record in
                try cancellation.check()
                let plain = try self.toPlain(record)
                try StoreExecutor.outsideReadInPlace { try body(plain) }
            }
        }
    }
}

extension PreparedObjectQuery {
    /// Lends each object whose record meets the predicate with these values
    /// to `body` by the store's executor.
    /// - Throws: as the `async` `DAO.forEach(where:sortedBy:limit:_:)`.
    @inlinable
    public func forEach(
        values: Parameters, _ body: @escaping @Sendable (borrowing T.PlainObject) throws -> Void
    ) async throws {
        let call = prepared.call(values: values)
        try await dao.storage.executor.read { cancellation in
            try self.dao.storage.forEach(call) { record in
                try cancellation.check()
                let plain = try self.dao.toPlain(record)
                try StoreExecutor.outsideReadInPlace { try body(plain) }
            }
        }
    }
}

extension PreparedObjectQuery where Parameters: FieldValue {
    /// The `async` `forEach(values:_:)` with this value of the parameter.
    /// - Throws: as the `async` `forEach(values:_:)`.
    @inlinable
    public func forEach(
        _ a: Parameters, _ body: @escaping @Sendable (borrowing T.PlainObject) throws -> Void
    ) async throws {
        try await forEach(values: a, body)
    }
}
