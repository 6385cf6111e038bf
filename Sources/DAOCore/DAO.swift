import Foundation

/// Persists, reads and erases plain objects through any ``Storage``: the one
/// type an app calls.
///
/// ```swift
/// let store = try FileStore(directory: url, format: .json)
/// let dialogs = DAO(storage: try store.storage(for: DialogRecord.self),
///                   translator: DialogTranslator())
/// try dialogs.persist(dialog)
/// let again = try dialogs.read(byPrimaryKey: dialog.uniqueId)
/// ```
///
/// Every call is one transaction of the storage. Queries are written over the
/// record type, with Foundation's `#Predicate` and `SortDescriptor`.
public struct DAO<S: Storage, T: Translator>: Sendable
where S.Record == T.Record, T.PlainObject.ID == S.Record.PrimaryKey {
    /// The plain object type.
    public typealias PlainObject = T.PlainObject
    /// The record type.
    public typealias Record = S.Record

    /// The storage the DAO reads and writes.
    public let storage: S
    /// The translator between plain objects and records.
    public let translator: T

    /// Creates a DAO over `storage` that translates with `translator`.
    public init(storage: S, translator: T) {
        self.storage = storage
        self.translator = translator
    }

    // MARK: Persist

    /// Inserts or replaces `plain` (upsert), with everything it owns.
    /// - Throws: ``StorageError``; nothing is written then.
    @inlinable
    public func persist(_ plain: PlainObject) throws {
        try storage.persist(handingOver: { hand in try hand(toRecord(plain)) })
    }

    /// Inserts or replaces all of `plains` in one transaction.
    /// - Throws: ``StorageError``; nothing is written then.
    ///
    /// Each object is translated as the storage asks for it, inside its
    /// transaction, and its record is written and let go before the next
    /// one is made (``Storage/persist(handingOver:)``): the call never holds
    /// every record at once, and each is written while it is still in the
    /// cache (docs/ARCHITECTURE.md, "The write path"). A translation error
    /// still leaves the store as it was.
    ///
    /// Inlinable, so that the caller's module specializes the translation
    /// loop for its plain, record and storage types: unspecialized, every
    /// plain object was fetched through the sequence's witness table (a
    /// heap-allocated frame each) and translated through the translator's
    /// (docs/ARCHITECTURE.md, "The write path").
    @inlinable
    public func persist(_ plains: some Sequence<PlainObject>) throws {
        // An array, which the storage may walk more than once (a transaction
        // started again); for an array already, the same storage, not a copy.
        let plains = Array(plains)
        guard !plains.isEmpty else { return try storage.persist([]) }
        try storage.persist(handingOver: { hand in
            for index in plains.indices {
                try hand(toRecord(plains[index]))
            }
        })
    }

    // MARK: Read

    /// Every object, ordered by `uniqueId`.
    ///
    /// Records that hold children are translated as a storage that hands
    /// them out while reading (``Storage/handsOutWhileReading``, LMDB) hands
    /// them out (``Storage/read(_:handingOut:)``), each while it is fresh in
    /// the cache, and let go before the next: the translator may run inside
    /// the storage's read transaction, so it must not read or write the
    /// store (see ``Translator``).
    /// - Throws: ``StorageError``.
    @inlinable
    public func read() throws -> [PlainObject] {
        guard Record.entity.hasRelations, storage.handsOutWhileReading else {
            return try toPlains(storage.read(Query()))
        }
        var plains: [PlainObject] = []
        try storage.read(Query(), handingOut: { record in plains.append(try toPlain(record)) })
        return plains
    }

    /// The object with `uniqueId == key`, or `nil`.
    /// - Throws: ``StorageError``.
    @inlinable
    public func read(byPrimaryKey key: PlainObject.ID) throws -> PlainObject? {
        // Not `.map(toPlain)`: the closure copied the DAO, and the first copy
        // in a process instantiated the metadata of its storage's existential
        // (`AnyStorage`): about 775k instructions, inside the first call.
        guard let record = try storage.read(primaryKey: key) else { return nil }
        return try toPlain(record)
    }

    /// The objects with these keys, in the order of `keys`; missing keys are
    /// skipped, and a key given twice gives its object twice.
    /// - Throws: ``StorageError``.
    @inlinable
    public func read(byPrimaryKeys keys: [PlainObject.ID]) throws -> [PlainObject] {
        try toPlains(storage.read(primaryKeys: keys))
    }

    /// The objects whose records meet `predicate`, sorted by `sortedBy` and then by
    /// key, at most `limit` of them.
    ///
    /// ```swift
    /// let unread = try messages.read(
    ///     where: #Predicate { $0.dialogId == 7 && !$0.isRead },
    ///     sortedBy: [SortDescriptor(\.date, order: .reverse)])
    /// ```
    /// - Throws: ``StorageError``.
    @inlinable
    public func read(
        where predicate: Predicate<Record>? = nil,
        sortedBy: [SortDescriptor<Record>] = [],
        limit: Int? = nil
    ) throws -> [PlainObject] {
        try toPlains(storage.read(Query(where: predicate, sortedBy: sortedBy, limit: limit)))
    }

    /// How many objects have records that meet `predicate` (all when `nil`).
    /// - Throws: ``StorageError``.
    public func count(where predicate: Predicate<Record>? = nil) throws -> Int {
        try storage.count(where: predicate)
    }

    /// Prepares a query with a parameter, to answer many times with its
    /// values: the predicate is translated and planned once, not on each
    /// call (``PreparedQuery``; two and three parameters below).
    ///
    /// ```swift
    /// let unread = try messages.prepare(
    ///     where: #Predicate<MessageRecord, Int64> { message, dialog in
    ///         message.dialogId == dialog && !message.isRead
    ///     },
    ///     sortedBy: [SortDescriptor(\.date, order: .reverse)])
    /// let inDialog7 = try unread.read(7)
    /// ```
    ///
    /// A call answers what `read(where:sortedBy:limit:)` answers for the
    /// same predicate with the values written in as constants. The storage
    /// prepares what it keeps for the calls here (``Storage/prepare(_:)``:
    /// SQLite compiles the statement), not at the first call.
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``
    ///   for a negative limit, or the storage's error preparing it
    ///   (``StorageError/Kind/closed`` after the store was closed); no
    ///   predicate is refused for its form.
    public func prepare<A: FieldValue>(
        where predicate: Predicate<Record, A>, sortedBy: [SortDescriptor<Record>] = [], limit: Int? = nil
    ) throws -> PreparedObjectQuery<S, T, A> {
        let prepared = try PreparedQuery(where: predicate, sortedBy: sortedBy, limit: limit)
        try storage.prepare(prepared)
        return PreparedObjectQuery(dao: self, prepared: prepared)
    }

    /// Prepares a query with two parameters (``prepare(where:sortedBy:limit:)``).
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``
    ///   for a negative limit.
    public func prepare<A: FieldValue, B: FieldValue>(
        where predicate: Predicate<Record, A, B>, sortedBy: [SortDescriptor<Record>] = [], limit: Int? = nil
    ) throws -> PreparedObjectQuery<S, T, (A, B)> {
        let prepared = try PreparedQuery(where: predicate, sortedBy: sortedBy, limit: limit)
        try storage.prepare(prepared)
        return PreparedObjectQuery(dao: self, prepared: prepared)
    }

    /// Prepares a query with three parameters.
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``
    ///   for a negative limit.
    public func prepare<A: FieldValue, B: FieldValue, C: FieldValue>(
        where predicate: Predicate<Record, A, B, C>, sortedBy: [SortDescriptor<Record>] = [], limit: Int? = nil
    ) throws -> PreparedObjectQuery<S, T, (A, B, C)> {
        let prepared = try PreparedQuery(where: predicate, sortedBy: sortedBy, limit: limit)
        try storage.prepare(prepared)
        return PreparedObjectQuery(dao: self, prepared: prepared)
    }

    // MARK: Erase

    /// Erases every object of this type; returns how many there were.
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase() throws -> Int {
        try storage.erase(where: nil)
    }

    /// Erases the object with `uniqueId == key` and what it owns; returns whether
    /// there was one.
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase(byPrimaryKey key: PlainObject.ID) throws -> Bool {
        try storage.erase(primaryKeys: [key]) > 0
    }

    /// Erases the objects with these keys in one transaction; returns how many
    /// were erased.
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase(byPrimaryKeys keys: [PlainObject.ID]) throws -> Int {
        try storage.erase(primaryKeys: keys)
    }

    /// Erases the objects whose records meet `predicate` in one transaction;
    /// returns how many were erased.
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase(where predicate: Predicate<Record>) throws -> Int {
        try storage.erase(where: predicate)
    }

    // MARK: Translation

    @inlinable
    func toRecord(_ plain: PlainObject) throws -> Record {
        do {
            return try translator.record(from: plain)
        } catch let error as StorageError {
            throw error
        } catch {
            throw translationFailure(plain, error)
        }
    }

    /// The error of a translator that failed on `plain`: out of line, so
    /// that the inlined write path carries only the call.
    @usableFromInline
    func translationFailure(_ plain: PlainObject, _ error: any Error) -> StorageError {
        StorageError(
            .translation, .translate, entity: Record.entity.name,
            message: "plain object \(plain.uniqueId) could not be translated to a record", underlying: error)
    }

    @inlinable
    func toPlain(_ record: Record) throws -> PlainObject {
        do {
            return try translator.plain(from: record)
        } catch let error as StorageError {
            throw error
        } catch {
            throw translationFailure(record, error)
        }
    }

    /// The error of a translator that failed on `record`, out of line.
    @usableFromInline
    func translationFailure(_ record: Record, _ error: any Error) -> StorageError {
        StorageError(
            .translation, .translate, entity: Record.entity.name,
            message: "record \(record.primaryKey) could not be translated to a plain object", underlying: error)
    }

    /// Inlinable with the reads, so that the caller's module specializes the
    /// loop: unspecialized, each record was fetched through the array's
    /// witness table (a heap-allocated frame each).
    @inlinable
    func toPlains(_ records: consuming [Record]) throws -> [PlainObject] {
        var plains: [PlainObject] = []
        plains.reserveCapacity(records.count)
        guard Record.entity.hasRelations else {
            // Each record borrowed where it lies: a `for … in` loop copied
            // every record out of the array first (a retain and a release
            // of each of its references).
            try records.withUnsafeBufferPointer { records in
                for position in records.indices {
                    plains.append(try toPlain(records[position]))
                }
            }
            return plains
        }
        // Records that hold children are let go one by one as they are
        // translated (from a reversed array, last first), so a large read
        // holds a record's children and the plain objects made from them
        // together for one record at a time, not for all of them
        // (docs/ARCHITECTURE.md, "The read path").
        var remaining = consume records
        remaining.reverse()
        while let record = remaining.popLast() {
            plains.append(try toPlain(record))
        }
        return plains
    }
}

/// A query of a ``DAO`` prepared with parameters
/// (`DAO.prepare(where:sortedBy:limit:)`): each call binds its values.
/// `Parameters` is the parameter's type, or the tuple of their types.
/// `Sendable`; safe from any number of tasks at once.
public struct PreparedObjectQuery<S: Storage, T: Translator, Parameters: Sendable>: Sendable
where S.Record == T.Record, T.PlainObject.ID == S.Record.PrimaryKey {
    /// The DAO the query reads through.
    public let dao: DAO<S, T>
    /// The prepared query over records.
    public let prepared: PreparedQuery<S.Record, Parameters>

    /// Creates the query of `dao` for `prepared`.
    public init(dao: DAO<S, T>, prepared: PreparedQuery<S.Record, Parameters>) {
        self.dao = dao
        self.prepared = prepared
    }

    /// The objects whose records meet the predicate with these values (a
    /// tuple for more than one parameter), sorted and limited as prepared.
    /// - Throws: ``StorageError``.
    @inlinable
    public func read(values: Parameters) throws -> [T.PlainObject] {
        try dao.toPlains(dao.storage.read(prepared.call(values: values)))
    }

    /// How many objects have records that meet the predicate with these
    /// values (the sort and the limit do not apply).
    /// - Throws: ``StorageError``.
    public func count(values: Parameters) throws -> Int {
        try dao.storage.count(where: prepared.predicate(values: values))
    }

    /// Erases the objects whose records meet the predicate with these values,
    /// in one transaction (the sort and the limit do not apply); returns how
    /// many were erased.
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase(values: Parameters) throws -> Int {
        try dao.storage.erase(where: prepared.predicate(values: values))
    }
}

extension PreparedObjectQuery where Parameters: FieldValue {
    /// `read(values:)` with this value of the parameter.
    /// - Throws: ``StorageError``.
    @inlinable
    public func read(_ a: Parameters) throws -> [T.PlainObject] { try read(values: a) }
    /// `count(values:)` with this value of the parameter.
    /// - Throws: ``StorageError``.
    public func count(_ a: Parameters) throws -> Int { try count(values: a) }
    /// `erase(values:)` with this value of the parameter.
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase(_ a: Parameters) throws -> Int { try erase(values: a) }
}

extension PreparedObjectQuery {
    /// `read(values:)` with these values of the parameters.
    /// - Throws: ``StorageError``.
    @inlinable
    public func read<A, B>(_ a: A, _ b: B) throws -> [T.PlainObject] where Parameters == (A, B) {
        try read(values: (a, b))
    }
    /// `count(values:)` with these values of the parameters.
    /// - Throws: ``StorageError``.
    public func count<A, B>(_ a: A, _ b: B) throws -> Int where Parameters == (A, B) { try count(values: (a, b)) }
    /// `erase(values:)` with these values of the parameters.
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase<A, B>(_ a: A, _ b: B) throws -> Int where Parameters == (A, B) { try erase(values: (a, b)) }
    /// `read(values:)` with these values of the parameters.
    /// - Throws: ``StorageError``.
    @inlinable
    public func read<A, B, C>(_ a: A, _ b: B, _ c: C) throws -> [T.PlainObject] where Parameters == (A, B, C) {
        try read(values: (a, b, c))
    }
    /// `count(values:)` with these values of the parameters.
    /// - Throws: ``StorageError``.
    public func count<A, B, C>(_ a: A, _ b: B, _ c: C) throws -> Int where Parameters == (A, B, C) {
        try count(values: (a, b, c))
    }
    /// `erase(values:)` with these values of the parameters.
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase<A, B, C>(_ a: A, _ b: B, _ c: C) throws -> Int where Parameters == (A, B, C) {
        try erase(values: (a, b, c))
    }
}
