import Foundation

// The view read path: `forEachView` lends a view of each record's fields
// (`RecordView`) where the engine keeps them. These defaults read the
// records and lend a view of each; an adapter whose engine allows it lends
// views of its rows or values without making records (docs/ARCHITECTURE.md,
// "Views").

extension Storage {
    /// Reads the records of `query` and lends a view of each to `body`.
    /// - Throws: what ``Storage/read(_:)-(Query<Self.Record>)`` or `body` throws.
    public func forEachView(_ query: Query<Record>, _ body: (borrowing RecordView<Record>) throws -> Void) throws {
        try lendViews(of: read(query), to: body)
    }

    /// Lends the views of the call's query (`forEachView(_:_:)`).
    /// - Throws: what `forEachView(_:_:)` throws.
    public func forEachView(_ call: PreparedQueryCall<Record>, _ body: (borrowing RecordView<Record>) throws -> Void)
        throws
    {
        try forEachView(call.query, body)
    }

    /// Reads the record with primary key `key` and lends a view of it to
    /// `body`.
    /// - Returns: whether a view was lent.
    /// - Throws: what ``read(primaryKey:)`` or `body` throws.
    @discardableResult
    public func forEachView(primaryKey key: Record.PrimaryKey, _ body: (borrowing RecordView<Record>) throws -> Void)
        throws -> Bool
    {
        guard let record = try read(primaryKey: key) else { return false }
        try ViewContext(recordsOf: ViewLayout(Record.entity)).lend(record, of: Record.entity, to: body)
        return true
    }

    /// Lends a view of each of `records` to `body`, in order: what an
    /// adapter lends for a read it answers with records.
    /// - Throws: what `body` throws; no view is lent after it.
    public func lendViews(of records: borrowing [Record], to body: (borrowing RecordView<Record>) throws -> Void)
        throws
    {
        let context = ViewContext(recordsOf: ViewLayout(Record.entity))
        try records.withUnsafeBufferPointer { records in
            for position in records.indices {
                try context.lend(records[position], of: Record.entity, to: body)
            }
        }
    }

    /// Lends a view of each record where `predicate` holds (every record
    /// when it is `nil`), sorted by `sortedBy` and then by primary key, at
    /// most `limit` of them, to `body`: the records
    /// `read(where:sortedBy:limit:)` returns, in its order, as views of
    /// their fields (``RecordView``).
    ///
    /// ```swift
    /// let text = try MessageRecord.entity.position(of: \.text)
    /// var bytes = 0
    /// try messages.forEachView(where: #Predicate { $0.dialogId == 7 }) { message in
    ///     bytes += try message.text(text).count
    /// }
    /// ```
    ///
    /// `body` must not read or write the same store. The view and the spans
    /// it hands out are valid only inside `body`.
    /// - Throws: ``StorageError``, or what `body` throws.
    public func forEachView(
        where predicate: Predicate<Record>? = nil,
        sortedBy: [SortDescriptor<Record>] = [],
        limit: Int? = nil,
        _ body: (borrowing RecordView<Record>) throws -> Void
    ) throws {
        try forEachView(Query(where: predicate, sortedBy: sortedBy, limit: limit), body)
    }

    /// Lends a view of each record that answers `prepared` with these
    /// values of its parameters to `body`, in the order `read(_:values:)`
    /// returns the records.
    /// - Throws: ``StorageError``, or what `body` throws.
    public func forEachView<Parameters>(
        _ prepared: PreparedQuery<Record, Parameters>, values: Parameters,
        _ body: (borrowing RecordView<Record>) throws -> Void
    ) throws {
        try forEachView(prepared.call(values: values), body)
    }
}

extension DAO {
    /// Lends a view of the record of each object that
    /// `read(where:sortedBy:limit:)` returns to `body`, in its order: the
    /// record's own fields where the engine keeps them (``RecordView``),
    /// without translating them into objects. For code that consumes what
    /// is stored without keeping it (a sum, a digest, a row drawn on a
    /// screen).
    /// - Throws: ``StorageError``, or what `body` throws.
    public func forEachView(
        where predicate: Predicate<Record>? = nil,
        sortedBy: [SortDescriptor<Record>] = [],
        limit: Int? = nil,
        _ body: (borrowing RecordView<Record>) throws -> Void
    ) throws {
        try storage.forEachView(Query(where: predicate, sortedBy: sortedBy, limit: limit), body)
    }

    /// Lends a view of the record of the object with `uniqueId == key` to
    /// `body` when one is stored.
    /// - Returns: whether a view was lent.
    /// - Throws: ``StorageError``, or what `body` throws.
    @discardableResult
    public func forEachView(byPrimaryKey key: PlainObject.ID, _ body: (borrowing RecordView<Record>) throws -> Void)
        throws -> Bool
    {
        try storage.forEachView(primaryKey: key, body)
    }
}
