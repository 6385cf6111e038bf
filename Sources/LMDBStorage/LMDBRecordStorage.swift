import CLMDB
import DAOCore
import Foundation

/// The records of one entity in an ``LMDBEnvironment``: one named database per
/// entity, keys that sort as the values do, a compact binary value per record,
/// children under their parent's key, and each declared index as its own
/// database kept in the same transaction, except an index that leads with a
/// child's foreign key: the parent's range of children serves it.
///
/// ```swift
/// let env = try LMDBEnvironment(directory: url)
/// let messages = try env.storage(for: MessageRecord.self)
/// let unread = try messages.read(
///     where: #Predicate { $0.dialogId == 7 && !$0.isRead },
///     sortedBy: [SortDescriptor(\.date, order: .reverse)])
/// ```
///
/// Every call is one LMDB transaction. Queries are answered in memory over
/// candidates narrowed first by the predicate's required equalities: on the
/// primary key one lookup, on the parent key one cursor range, on the leading
/// fields of an index that index's range (for an index that leads with the
/// foreign key, the parent's range filtered on the index's other fields).
/// Errors are ``StorageError``s naming the entity and the environment's path.
public struct LMDBRecordStorage<Record: DAOCore.Record>: Storage {
    let table: EntityTable<Record>

    /// The environment this storage writes to.
    public var environment: LMDBEnvironment { table.environment }

    /// The environment's broadcaster.
    public var commits: CommitBroadcaster? { table.environment.commits }
    /// The environment's threads for `async` calls (``LMDBEnvironment/executor``).
    public var executor: StoreExecutor { table.environment.executor }

    init(environment: LMDBEnvironment) throws {
        do {
            table = try EntityTable(environment: environment, link: nil)
        } catch let error as StorageError {
            throw error.with(operation: .open, entity: Record.entity.name, path: environment.path)
        }
    }

    /// `error` with the call's operation, and the entity and path where the
    /// thrower left them out. Any other error (one a record type's own
    /// `init(fields:)` or `write(fields:)` threw) is wrapped, as the SQLite
    /// storage does: ``StorageError/Kind/encoding`` when writing, else
    /// ``StorageError/Kind/decoding``, the error kept as `underlying`.
    private func failing(_ error: any Error, _ operation: StorageError.Operation) -> StorageError {
        guard var error = error as? StorageError else {
            return StorageError(
                operation == .persist ? .encoding : .decoding, operation, entity: Record.entity.name,
                path: table.environment.path, message: "\(error)", underlying: error)
        }
        if operation == .persist && error.engineCode == MDB_BAD_VALSIZE {
            // liblmdb's own text ("Unsupported size of key/DB name/data")
            // does not tell a client which limit was met, nor which record
            // (a child's, a grandchild's) met it: the record is named where
            // it was written (`StorageError.namingRecord(_:of:)`).
            error.message = "\(error.context ?? "a record") has a key longer than LMDB allows (511 bytes, with the "
                + "key's framing): its primary key with the keys of the parents it is stored under, or one of its "
                + "indexed values; nothing was written (liblmdb: \(error.message))"
        }
        return error.with(operation: operation, entity: Record.entity.name, path: table.environment.path)
    }

    /// Inserts or replaces the records with their children, in one write
    /// transaction; the last of several records with one key wins.
    ///
    /// - Throws: ``StorageError``: ``StorageError/Kind/constraint`` for a child
    ///   whose parent does not exist, ``StorageError/Kind/schemaMismatch`` or
    ///   ``StorageError/Kind/encoding`` for a record that does not fit its entity,
    ///   ``StorageError/Kind/readOnly`` in a read-only environment. Nothing is
    ///   stored then.
    public func persist(_ records: [Record]) throws {
        guard !records.isEmpty else {
            // Nothing to write, but a closed environment says so.
            do { try environment.checkOpen(.persist) } catch let error as StorageError { throw error.with(entity: table.entity.name) }
            return
        }
        try persist(handingOver: { hand in
            for record in records { try hand(record) }
        })
    }

    /// Inserts or replaces each record `produce` hands over, with its
    /// children, as it comes, in one write transaction
    /// (``Storage/persist(handingOver:)``); the last of several records with
    /// one key wins. When the map fills, the transaction is aborted, the map
    /// grown and `produce` called again.
    ///
    /// - Throws: as ``persist(_:)``, or what `produce` throws. Nothing is
    ///   stored then.
    public func persist(handingOver produce: (_ hand: RecordHandoff<Record>) throws -> Void) throws {
        // Records written by position have their reals checked as they are
        // encoded; the others are checked before they are written.
        var handoff = PersistHandoff<Record>(keepingRecords: table.environment.commits.isObserved)
        do {
            try table.environment.write(.persist) { txn in
                try table.withWriteCodecs { codecs in
                    defer { codecs.closeCursors() }
                    // Read once per call, not per record (see `EntityTable.persist`).
                    let writeFields = table.fieldsWriter
                    try handoff.run(produce, stoppingAt: LMDBEnvironment.startsWriteAgain) { record in
                        // The record lent where the handoff holds it, not copied.
                        do {
                            try withUnsafePointer(to: record) {
                                try table.persist($0, in: txn, codecs: codecs, writeFields: writeFields)
                            }
                        } catch let error as StorageError where error.engineCode == MDB_BAD_VALSIZE {
                            throw error.namingRecord(record.primaryKey.storedValue, of: Record.entity.name)
                        }
                    }
                    try codecs.flushRuns(in: txn)
                }
            }
        } catch {
            // A record the core's check refuses is the error to report,
            // whatever stopped the write, as when every record was checked
            // first.
            if let refused = try handoff.refusal(after: error, produce) { throw failing(refused, .persist) }
            throw failing(error, .persist)
        }
        guard handoff.count > 0 else { return }
        table.environment.commits.didCommit(handoff.change)
    }

    /// Checks every stored record of this storage's entity (not its
    /// children's: verify their storages too) and returns how many there are:
    /// each value decodes and its CRC-32C holds, each key is the one its
    /// record's fields give (under the parent its foreign key names, which is
    /// stored), each child is found through the `#id` runs under its own
    /// key and each run starts and ends with children of its parent, and
    /// each index entry matches a record, one for one. One read transaction.
    ///
    /// Reads answer from keys and indexes without these cross-checks, so a
    /// damaged key or index entry can hide a record from them; `verify()`
    /// finds it. liblmdb itself trusts the structure of its pages: on a file
    /// you do not trust, call this in a child process, where a crash inside
    /// liblmdb cannot take your process down (docs/LMDB.md).
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` naming the first inconsistency;
    ///   ``StorageError/Kind/decoding`` for a value the record type refuses.
    public func verify() throws -> Int {
        do {
            return try table.environment.read(.read) { txn in
                try table.verify(in: txn, codecs: table.makeCodecs())
            }
        } catch {
            throw failing(error, .read)
        }
    }

    /// The record with primary key `key`, with its children, or `nil`.
    ///
    /// - Throws: ``StorageError``: ``StorageError/Kind/corrupt`` or
    ///   ``StorageError/Kind/decoding`` for a stored value that does not decode.
    public func read(primaryKey key: Record.PrimaryKey) throws -> Record? {
        // The record comes out through a variable and the closures return
        // nothing: closures returning `Record?` made this code, generic over
        // the record type, look up `Optional<Record>`'s metadata in each of
        // them (about 330 instructions a look-up; the assignment looks it
        // up once).
        var record: Record?
        do {
            try table.environment.read(.read) { txn in
                try table.withReadCodecs { codecs in
                    record = try table.read(pk: KeyCodec.encode(primaryKey: key), in: txn, codecs: codecs)
                }
            }
        } catch {
            throw failing(error, .read)
        }
        return record
    }

    /// The records with these primary keys, in the order of `keys`, one per
    /// occurrence; keys with no record are skipped.
    ///
    /// - Throws: ``StorageError``.
    public func read(primaryKeys keys: [Record.PrimaryKey]) throws -> [Record] {
        do {
            return try table.environment.read(.read) { txn in
                try table.withReadCodecs { codecs in
                    var records: [Record] = []
                    records.reserveCapacity(keys.count)
                    for key in keys {
                        if let record = try table.read(pk: KeyCodec.encode(primaryKey: key), in: txn, codecs: codecs) {
                            records.append(record)
                        }
                    }
                    return records
                }
            }
        } catch {
            throw failing(error, .read)
        }
    }

    /// The records that meet `query`, sorted by its descriptors then by primary
    /// key, at most `query.limit` of them.
    ///
    /// - Throws: ``StorageError``: ``StorageError/Kind/invalidArgument`` for a
    ///   negative limit.
    public func read(_ query: Query<Record>) throws -> [Record] {
        do {
            try query.validate()
            // The condition is built only when the access path does not
            // answer the predicate by itself (an exact access path, as the
            // workload's query has, needs none: binding one cost about 1.5k
            // instructions per query); an inexact translation builds it
            // whatever the parts asked for.
            var plan = QueryPlan(query, parts: [.accessPath])
            let (path, isExact) = table.plan(for: plan)
            if !isExact, plan.conditionIsExact { plan = QueryPlan(query) }
            // The sort keys are read from the stored bytes as each candidate
            // is decoded, not through key paths from the records afterwards.
            let sortKeys = table.sortKeys(plan.sort)
            // A range is read in the direction that gave the asked order at
            // the last call of this shape (a parent's messages by date,
            // newest first, come from their keys in the reverse order): read
            // backwards, they need no reversing. Only with sort keys, by
            // which `finish` checks the order and learns the direction.
            let backwards = sortKeys != nil && plan.prefersDescendingCandidates
            let candidates = try table.environment.read(.read) { txn in
                try table.withReadCodecs { codecs in
                    try table.candidates(for: path, in: txn, codecs: codecs, sortKeys: sortKeys, backwards: backwards)
                }
            }
            if let sortKeys {
                if isExact, sortKeys.isOrdered {
                    return try plan.finish(candidates, orderedKeys: sortKeys.ordered, descending: backwards)
                }
                return try plan.finish(candidates, sortKeys: sortKeys.storedKeys, filtered: isExact, descending: backwards)
            }
            return try plan.finish(candidates, filtered: isExact)
        } catch {
            throw failing(error, .read)
        }
    }

    /// `true` for a record type with children and no parent entity, whose
    /// read of every record ``read(_:handingOut:)`` hands out as it decodes.
    public var handsOutWhileReading: Bool { table.hasRelations && table.link == nil }

    /// Reads the records that answer `query` and hands each to `body`, in
    /// the order ``read(_:)-(Query<Record>)`` returns them. A read of every
    /// record, unsorted and unlimited (in key order), of a record type with
    /// children and no parent hands each record out as it is decoded with its children,
    /// inside the read transaction, so that it is turned into what the
    /// caller makes of it while it is in the cache and let go before the
    /// next is read; any other query is read as an array first. `body` must
    /// not read or write this store's storages: it runs while the
    /// environment's lock against a map resize is held for reading, and a
    /// resize waiting for it would wait for ever.
    ///
    /// - Throws: ``StorageError`` (a record this store cannot read comes
    ///   first, wherever it lies), or what `body` threw, as it threw it.
    public func read(_ query: Query<Record>, handingOut body: RecordHandoff<Record>) throws {
        // A child entity's records lie under their parents' keys, not in
        // the order of their own: read as an array, and sorted.
        guard handsOutWhileReading, query.predicate == nil, query.sortedBy.isEmpty, query.limit == nil else {
            return try handOut(read(query), to: body)
        }
        // What `body` throws reaches the caller as it was thrown, not as
        // one of this store's read errors; after it, the rest is decoded
        // without being handed out, so that a record this store cannot read
        // is the answer, as it is when the array is read before any record
        // is handed out.
        var thrownByBody: (any Error)?
        do {
            try table.environment.read(.read) { txn in
                try table.withReadCodecs { codecs in
                    try txn.scan(table.main, prefix: []) { _, value in
                        let record = try table.decode(value, in: txn, codecs: codecs)
                        guard thrownByBody == nil else { return true }
                        do {
                            try body(record)
                        } catch {
                            thrownByBody = error
                        }
                        return true
                    }
                }
            }
        } catch {
            throw failing(error, .read)
        }
        if let thrownByBody { throw thrownByBody }
    }

    /// Lends a view of each record that answers `query` to `body`
    /// (``RecordView``), each over its value in the map, inside one read
    /// transaction, when the query's access path answers its predicate
    /// exactly from one key range (every record, a parent's children, those
    /// filtered on other fields' equalities) and its order is the keys' (no
    /// sort, or a child's foreign key ascending) or one field's of an
    /// integer, boolean, real or date that is not optional (the range's
    /// values are then checked and their keys gathered first, sorted, and
    /// lent from where they lie in the map). Any other query lends views of
    /// the records ``read(_:)-(Query<Record>)`` returns. `body` must not
    /// read or write this store's storages (as for ``read(_:handingOut:)``).
    /// - Throws: ``StorageError`` (a value this store cannot read stops the
    ///   views there), or what `body` throws, as it threw it.
    public func forEachView(_ query: Query<Record>, _ body: (borrowing RecordView<Record>) throws -> Void) throws {
        let scan: ViewScan
        let layout: ViewLayout
        do {
            try query.validate()
            guard let kept = table.viewLayout, let planned = try viewScan(query) else {
                return try lendViews(of: read(query), to: body)
            }
            (scan, layout) = (planned, kept)
        } catch {
            throw failing(error, .read)
        }
        try lend(scan, layout, limit: query.limit, body)
    }

    /// Lends a view of each record that answers a prepared query's call, as
    /// `forEachView(_:_:)` lends its query's, without building the query: a
    /// parent's range sorted by numbers walked as the call's `read` walks it
    /// (`lendParentRange`), else from the call's bound plan (its
    /// access path and other equalities bound from the call's values, the
    /// sort of its template); a call whose plan does not read one key range
    /// lends the views of its query.
    /// - Throws: ``StorageError``, or what `body` throws, as it threw it.
    public func forEachView(_ call: PreparedQueryCall<Record>, _ body: (borrowing RecordView<Record>) throws -> Void)
        throws
    {
        guard call.limit.map({ $0 > 0 }) ?? true, let layout = table.viewLayout, let slots = call.boundSlots() else {
            return try forEachView(call.query, body)
        }
        let template = unsafeDowncast(slots.template, to: PlanTemplate<Record>.self)
        if try lendParentRange(slots, template, layout, body) { return }
        guard let bound = slots.boundPlan(template) else { return try forEachView(call.query, body) }
        let (path, isExact) = table.filtered(table.plan(for: bound.access, isExact: bound.accessIsExact)) { _ in
            bound.otherEqualities
        }
        guard let scan = viewScan(path, isExact: isExact, sort: template.sort) else {
            return try forEachView(call.query, body)
        }
        try lend(scan, layout, limit: bound.limit, body)
    }

    /// Lends the views of a prepared call whose template's access path is a
    /// parent's range, sorted by fields with ordered sort keys, from the
    /// walk its read takes (``readParentRange(_:_:)``): the range read in
    /// the direction the template prefers, each child kept or skipped by
    /// the range filter on its bytes, and the sort keys of those kept read
    /// from their leading fields; then put in the answer's order as the
    /// read puts its records (sort fields, then primary key ascending), and
    /// the first `limit` lent, each loaded whole (its checksum checked)
    /// when it is lent. A call sorted by nothing but its integer primary
    /// key lends each child as the walk keeps it, in key order, up to the
    /// limit. `false` when the call does not fit that walk (the caller
    /// lends its views another way), having lent nothing.
    /// - Throws: ``StorageError``, or what `body` throws, as it threw it.
    private func lendParentRange(
        _ slots: BoundSlots, _ template: PlanTemplate<Record>, _ layout: ViewLayout,
        _ body: (borrowing RecordView<Record>) throws -> Void
    ) throws -> Bool {
        var walked = false
        var thrownByBody: (any Error)?
        do {
            try table.withReadCodecs { codecs in
                // Read once: each read of the lazy property retains it.
                let keeps = codecs.readCall
                let prepared: PreparedRead
                if let kept = table.keptPreparedRead(for: template, keeps: keeps) {
                    prepared = kept
                } else if let bound = slots.boundPlan(template) {
                    prepared = table.preparedRead(for: bound, codecs: codecs)
                } else {
                    return
                }
                guard let served = prepared.servedIndex, let positions = prepared.sortPositions,
                    let columns = prepared.sortColumns, template.ordersByKeys(width: positions.count),
                    let range = parentRange(slots, isExact: template.isAccessExact, served, keeps: keeps)
                else { return }
                walked = true
                let decoder = codecs.decoder
                let context = keeps.viewContext(layout, decoder)
                defer { context.nextRecord() }
                let limit = slots.limit ?? Int.max
                if positions.count == 1, columns[0] == .integer {
                    // In key order: the primary key's within a parent's range.
                    try table.environment.read(.read) { txn in
                        let rows = try RangeRows(
                            txn, table.main, prefix: range.parent, backwards: false, filter: range.filter,
                            decoder: decoder, sortKeys: nil, cursor: keeps.cursor(table.main))
                        defer { rows.close() }
                        var lent = 0
                        while lent < limit, let value = try rows.nextKept(layingOut: 0) {
                            if let error = try lend(value, decoder, context, body) {
                                thrownByBody = error
                                return
                            }
                            lent += 1
                        }
                    }
                    return
                }
                let sortKeys = keeps.sortKeys(for: prepared) ?? keeps.sortKeys(positions: positions, columns: columns)
                let backwards = template.prefersDescendingCandidates
                var fields = 0
                for position in positions { fields = max(fields, position + 1) }
                try table.environment.read(.read) { txn in
                    let rows = try RangeRows(
                        txn, table.main, prefix: range.parent, backwards: backwards, filter: range.filter,
                        decoder: decoder, sortKeys: sortKeys, cursor: keeps.cursor(table.main))
                    defer { rows.close() }
                    keeps.viewValues.removeAll(keepingCapacity: true)
                    defer { keeps.viewValues.removeAll(keepingCapacity: true) }
                    while let value = try rows.nextKept(layingOut: fields) { keeps.viewValues.append(value) }
                    var order = AnswerOrder.asRead
                    try keeps.viewValues.withUnsafeBufferPointer { values in
                        let count = values.count
                        sortKeys.withOrdered { keys in
                            order = template.answerOrder(orderedKeys: keys, count: count, descending: backwards)
                        }
                        for rank in 0..<min(limit, count) {
                            if let error = try lend(values[order.position(rank, of: count)], decoder, context, body) {
                                thrownByBody = error
                                return
                            }
                        }
                    }
                }
            }
        } catch {
            throw failing(error, .read)
        }
        if let thrownByBody { throw thrownByBody }
        return walked
    }

    /// Lends a view of the value `bytes` to `body`, loaded whole (its
    /// checksum checked) into `decoder`, whose fields `context`'s views
    /// read; returns what `body` threw, as it threw it, or `nil`.
    /// - Throws: ``StorageError`` for a value this store cannot read.
    @inline(__always)
    private func lend(
        _ bytes: UnsafeRawBufferPointer, _ decoder: ValueDecoder, _ context: ViewContext,
        _ body: (borrowing RecordView<Record>) throws -> Void
    ) throws -> (any Error)? {
        try decoder.load(bytes)
        context.nextRecord(textIsValidated: decoder.textIsValidated)
        let loaded = decoder.loaded
        do {
            try body(RecordView<Record>(context, handle: nil, base: loaded.baseAddress, count: loaded.count))
        } catch {
            return error
        }
        return nil
    }

    /// Lends a view of each value `scan` reads, at most `limit`.
    private func lend(
        _ scan: ViewScan, _ layout: ViewLayout, limit: Int?, _ body: (borrowing RecordView<Record>) throws -> Void
    ) throws {
        var remaining = limit ?? Int.max
        guard remaining > 0 else { return }
        // Read out of `scan` here: a closure that read `scan` per value
        // copied it (its arrays retained and released) each time.
        let filtering = !scan.filterFields.isEmpty
        try lendValues(layout, body) { txn, decoder, lend in
            guard let sort = scan.sort else {
                try txn.scan(table.main, prefix: scan.prefix) { _, value in
                    if filtering {
                        guard try scan.passes(value, decoder) else { return true }
                    }
                    remaining -= 1
                    return try lend(value) && remaining > 0
                }
                return
            }
            for entry in try scan.gather(txn, table.main, decoder, sort: sort).prefix(remaining) {
                guard try lend(entry.value) else { return }
            }
        }
    }

    /// Lends a view of the value of the record with primary key `key` to
    /// `body`, if there is one.
    /// - Returns: whether a view was lent.
    /// - Throws: ``StorageError``, or what `body` throws, as it threw it.
    @discardableResult
    public func forEachView(primaryKey key: Record.PrimaryKey, _ body: (borrowing RecordView<Record>) throws -> Void)
        throws -> Bool
    {
        guard let layout = table.viewLayout else {
            guard let record = try read(primaryKey: key) else { return false }
            try lendViews(of: [record], to: body)
            return true
        }
        var found = false
        try lendValues(layout, body) { txn, _, lend in
            guard let storageKey = try table.storageKey(of: KeyCodec.encode(primaryKey: key), in: txn) else { return }
            found = try txn.withValue(table.main, storageKey) { value in try lend(value) } != nil
        }
        return found
    }

    /// How `forEachView(_:_:)` reads `query` from one key range; `nil`
    /// when it does not.
    private func viewScan(_ query: Query<Record>) throws -> ViewScan? {
        let plan = QueryPlan(query, parts: [.accessPath])
        let (path, isExact) = table.plan(for: plan)
        return viewScan(path, isExact: isExact, sort: plan.sort)
    }

    /// How `forEachView(_:_:)` reads the candidates of `path` in the
    /// order of `sort`; `nil` when it does not read them from one key range.
    private func viewScan(_ path: EntityTable<Record>.Plan, isExact: Bool, sort: SortPlan<Record>) -> ViewScan? {
        guard isExact else { return nil }
        let link = table.link
        var scan: ViewScan
        switch path {
        case .everything: scan = ViewScan(prefix: [])
        case .parentRange(let parent): scan = ViewScan(prefix: parent)
        case .parentFilteredRange(let parent, let fields, let values):
            scan = ViewScan(prefix: parent, filterFields: fields, filterValues: values)
        default: return nil
        }
        if sort.descriptors.isEmpty {
            // A child's keys start with its parent's: every child in key
            // order is not in primary-key order.
            if case .everything = path, link != nil { return nil }
            return scan
        }
        guard let fields = sort.fields, fields.count == 1,
            let position = table.schema.names.firstIndex(of: fields[0].field.name)
        else { return nil }
        if let link, fields[0].ascending, position == link.foreignKeyIndex { return scan }
        let type = table.schema.types[position]
        guard !table.schema.optional[position], type != .text, type != .blob, table.schema.types[0] == .integer
        else { return nil }
        scan.sort = ViewScan.Sort(position: position, descending: !fields[0].ascending)
        return scan
    }

    /// Runs `scan` in a read transaction with a function that lends a view
    /// of a value to `body` (its checksum checked and its fields laid out
    /// first) and returns whether to go on: not after `body` threw. What
    /// `body` throws is rethrown as it was thrown.
    private func lendValues(
        _ layout: ViewLayout, _ body: (borrowing RecordView<Record>) throws -> Void,
        scan: (borrowing Transaction, ValueDecoder, _ lend: (UnsafeRawBufferPointer) throws -> Bool) throws -> Void
    ) throws {
        var thrownByBody: (any Error)?
        do {
            try table.environment.read(.read) { txn in
                try table.withReadCodecs { codecs in
                    let decoder = codecs.decoder
                    let context = ViewContext(
                        packedOf: layout, offsets: decoder.offsets, access: decoder, textIsValidated: false)
                    // `body` as an escaping closure (it does not escape):
                    // a non-escaping parameter may not be captured by a
                    // closure handed to another one (`scan`). The views hold
                    // the context unowned: kept alive until the last is lent.
                    try withExtendedLifetime(context) {
                        try withoutActuallyEscaping(body) { body in
                            try scan(txn, decoder) { value in
                                guard thrownByBody == nil else { return false }
                                try decoder.load(value)
                                context.nextRecord(textIsValidated: decoder.textIsValidated)
                                let loaded = decoder.loaded
                                let view = RecordView<Record>(
                                    context, handle: nil, base: loaded.baseAddress, count: loaded.count)
                                do {
                                    try body(view)
                                } catch {
                                    thrownByBody = error
                                }
                                return thrownByBody == nil
                            }
                        }
                    }
                }
            }
        } catch {
            throw failing(error, .read)
        }
        if let thrownByBody { throw thrownByBody }
    }

    /// The records that answer one call of a prepared query: as
    /// ``read(_:)-(Query<Record>)`` answers its query. When the call's access
    /// path answers the predicate exactly (the predicate's required
    /// equalities are the whole of it, as the workload's query's are), the
    /// candidates are read from the prepared query's template, without the
    /// predicate, the query or a `QueryPlan` made for the call: a parent's
    /// range straight from the call's values (`BoundSlots`), once this
    /// table has derived the template's walk; any other path through the
    /// plan bound from the template (``BoundPlan``). Any other call reads
    /// its query.
    ///
    /// - Throws: ``StorageError``.
    public func read(_ call: PreparedQueryCall<Record>) throws -> [Record] {
        guard let slots = call.boundSlots() else { return try read(call.query) }
        // The class is named here, where it costs nothing, so that the
        // template is handed on as itself.
        let template = unsafeDowncast(slots.template, to: PlanTemplate<Record>.self)
        do {
            if let records = try readParentRange(slots, template) { return records }
            if let bound = slots.boundPlan(template), bound.accessIsExact || bound.otherEqualities != nil,
                let records = try read(bound)
            {
                return records
            }
        } catch {
            throw failing(error, .read)
        }
        return try read(call.query)
    }

    /// Prepares the calls of `query`: for each template it was planned with
    /// when prepared, what a call bound from it derives for its walk (the
    /// positions of its sort keys, the index a parent's range serves),
    /// kept by the table. Reads no records.
    /// - Throws: ``StorageError`` (``StorageError/Kind/closed`` after the
    ///   store was closed).
    public func prepare<Parameters>(_ query: PreparedQuery<Record, Parameters>) throws {
        do { try environment.checkOpen(.read) } catch let error as StorageError { throw error.with(entity: table.entity.name) }
        for call in query.preparationCalls {
            if let bound = call.boundPlan() { _ = table.preparedRead(for: bound) }
        }
    }

    /// The records of a prepared call whose template's access path is a
    /// parent's range (``PreparedRead/servedIndex``), read from the call's
    /// values as ``read(_:)-(BoundPlan<Record>)`` reads them from its bound
    /// plan; `nil` when this table has not derived the template's walk yet
    /// or the call does not fit it (``parentRange(_:isExact:_:keeps:)``):
    /// the call reads its bound plan then.
    private func readParentRange(_ slots: BoundSlots, _ template: PlanTemplate<Record>) throws -> [Record]? {
        // As in `read(primaryKey:)`, the records come out through a variable.
        var records: [Record] = []
        var walked = false
        try table.withReadCodecs { codecs in
            // Read once: each read of the lazy property retains it.
            let keeps = codecs.readCall
            guard let prepared = table.keptPreparedRead(for: template, keeps: keeps),
                let served = prepared.servedIndex,
                let range = parentRange(slots, isExact: template.isAccessExact, served, keeps: keeps)
            else { return }
            walked = true
            records = try walk(
                range: range, path: .everything, prepared: prepared, template: template, limit: slots.limit,
                codecs: codecs, keeps: keeps)
        }
        return walked ? records : nil
    }

    /// The records of a prepared call bound from its template, whose access
    /// path is exact, or whose other equalities (``BoundPlan/otherEqualities``)
    /// make a parent's range exact; `nil` when this store cannot walk the
    /// path exactly (the call reads its query then).
    private func read(_ bound: BoundPlan<Record>) throws -> [Record]? {
        // The records come out through a variable and the closures return
        // nothing, as in `read(primaryKey:)`: returning `[Record]` looked up
        // the array's metadata twice a call. The codecs are taken first and
        // held until the answer is finished: what the call derives from
        // its template (the prepared read, the parent's key, the filter,
        // the sort keys) is kept with them for the next call.
        var records: [Record] = []
        var walked = false
        try table.withReadCodecs { codecs in
            let prepared = table.preparedRead(for: bound, codecs: codecs)
            // The parent's range, each child's stored fields checked against
            // the filter's values; else an exact path as it is, or an
            // inexact one, a parent's range, filtered on the call's other
            // equalities (as `EntityTable.plan(for:)` plans the query).
            var range: (parent: [UInt8], filter: RangeFilter?)?
            var path = EntityTable<Record>.Plan.everything
            if let served = prepared.servedIndex, let found = parentRange(bound, served, codecs: codecs) {
                range = found
            } else {
                let (filtered, isExact) = table.filtered(
                    table.plan(for: bound.access, isExact: bound.accessIsExact)) { _ in bound.otherEqualities }
                guard isExact else { return }
                path = filtered
            }
            walked = true
            records = try walk(
                range: range, path: path, prepared: prepared, template: bound.template, limit: bound.limit,
                codecs: codecs, keeps: codecs.readCall)
        }
        return walked ? records : nil
    }

    /// The answer of a prepared call from the candidates of `range` (a
    /// parent's key and the filter on its children) or else of `path`,
    /// exactly the records that meet the predicate: read with the sort keys
    /// `prepared` names, in the direction the template prefers, then sorted
    /// and limited to `limit`. `keeps` are the codecs' (``Codecs/readCall``).
    private func walk(
        range: (parent: [UInt8], filter: RangeFilter?)?, path: EntityTable<Record>.Plan, prepared: PreparedRead,
        template: PlanTemplate<Record>, limit: Int?, codecs: Codecs, keeps: ReadCallKeeps
    ) throws -> [Record] {
        let sortKeys = keeps.sortKeys(for: prepared)
        let backwards = sortKeys != nil && template.prefersDescendingCandidates
        var candidates: [Record] = []
        try table.environment.read(.read) { txn in
            if let range {
                candidates = try table.candidates(
                    parent: range.parent, filter: range.filter, in: txn, codecs: codecs, sortKeys: sortKeys,
                    backwards: backwards, cursor: keeps.cursor(table.main))
            } else {
                candidates = try table.candidates(
                    for: path, in: txn, codecs: codecs, sortKeys: sortKeys, backwards: backwards)
            }
        }
        guard let sortKeys else { return template.finishCall(candidates, limit: limit) }
        if sortKeys.isOrdered {
            var records: [Record] = []
            sortKeys.withOrdered { keys in
                records = template.finishCall(candidates, orderedKeys: keys, limit: limit, descending: backwards)
            }
            return records
        }
        return template.finishCall(candidates, sortKeys: sortKeys.storedKeys, limit: limit, descending: backwards)
    }

    /// ``parentRange(_:_:codecs:)`` for a call read by slot: the parent's
    /// key from the access path's first value, the filter on the index's
    /// bound fields after it and, when the path is not exact by itself
    /// (`isExact`), on the template's other equalities; `nil` when the call
    /// does not fit the template's walk (a value that does not coerce, a
    /// null parent key). The key is written in the buffer `keeps` holds
    /// (the codecs', ``Codecs/readCall``), and the filter is theirs when
    /// they kept one for the same values.
    private func parentRange(
        _ slots: BoundSlots, isExact: Bool, _ served: PreparedRead.ServedIndex, keeps: ReadCallKeeps
    ) -> (parent: [UInt8], filter: RangeFilter?)? {
        let count = slots.accessValueCount
        guard count >= 1, count - 1 == served.boundRest, let first = slots.accessValue(0), first != .null else {
            return nil
        }
        if case .integer(let key) = first {
            // Written over the buffer's 8 bytes, not emptied and appended.
            KeyCodec.set(integers: key, in: &keeps.parentKeyBuffer)
        } else {
            keeps.parentKeyBuffer.removeAll(keepingCapacity: true)
            KeyCodec.append(untagged: first, to: &keeps.parentKeyBuffer)
        }
        let parent = keeps.parentKeyBuffer
        if isExact {
            // The values after the foreign key, compared with the index's
            // next fields.
            guard count > 1 else { return (parent, nil) }
            let filter = keeps.rangeFilter(
                fields: served.rest, count: count - 1, value: { slots.accessValue($0 + 1) },
                types: table.schema.types, fromEnd: table.fieldsFromEnd)
            return filter.map { (parent, $0) }
        }
        guard let filterFields = served.filterFields, let others = slots.otherEqualityCount,
            served.boundRest + others == filterFields.count
        else { return nil }
        // The index's bound values after the foreign key, then the other
        // equalities' values, in the order of `filterFields`.
        let bound = served.boundRest
        let filter = keeps.rangeFilter(
            fields: filterFields, count: filterFields.count,
            value: { $0 < bound ? slots.accessValue($0 + 1) : slots.otherEqualityValue($0 - bound) },
            types: table.schema.types, fromEnd: table.fieldsFromEnd)
        return filter.map { (parent, $0) }
    }

    /// The parent's key and the filter of a bound call whose access path is
    /// a parent's range (`served`), as ``EntityTable/plan(for:)`` and
    /// ``EntityTable/filtered(_:others:)`` plan its query, from the
    /// positions kept for the template: the index's next fields bound by
    /// the access path, and the call's other equalities when the path is
    /// not exact by itself. `nil` when the call does not fit them (a null
    /// parent key; no other equalities for an inexact path). The key is
    /// written in the codecs' buffer, and the filter is theirs when they
    /// kept one for the same values.
    private func parentRange(
        _ bound: BoundPlan<Record>, _ served: PreparedRead.ServedIndex, codecs: Codecs
    ) -> (parent: [UInt8], filter: RangeFilter?)? {
        let values: [StoredValue]
        switch bound.access {
        case .index(_, let indexValues): values = indexValues
        case .parent(let value): values = [value]
        default: return nil
        }
        guard let first = values.first, first != .null, values.count - 1 == served.boundRest else { return nil }
        codecs.readCall.parentKeyBuffer.removeAll(keepingCapacity: true)
        KeyCodec.append(untagged: first, to: &codecs.readCall.parentKeyBuffer)
        let parent = codecs.readCall.parentKeyBuffer
        let types = table.schema.types
        if bound.accessIsExact {
            // The values after the foreign key, compared with the index's
            // next fields.
            guard values.count > 1 else { return (parent, nil) }
            return (
                parent,
                codecs.readCall.rangeFilter(
                    fields: served.rest, values: values, from: 1, others: [], types: types,
                    fromEnd: table.fieldsFromEnd)
            )
        }
        guard let filterFields = served.filterFields, let others = bound.otherEqualities,
            served.boundRest + others.count == filterFields.count
        else { return nil }
        // The index's bound values after the foreign key, then the other
        // equalities' values, in the order of `filterFields`.
        return (
            parent,
            codecs.readCall.rangeFilter(
                fields: filterFields, values: values, from: 1, others: others, types: types,
                fromEnd: table.fieldsFromEnd)
        )
    }

    /// How many records meet `predicate` (all of them for `nil`, counted by
    /// `mdb_stat` without reading a record).
    ///
    /// - Throws: ``StorageError``.
    public func count(where predicate: Predicate<Record>?) throws -> Int {
        do {
            return try table.environment.read(.count) { txn in
                guard predicate != nil else { return try txn.entryCount(table.main) }
                let plan = QueryPlan(Query(where: predicate))
                let (path, isExact) = table.plan(for: plan)
                let candidates = try table.candidates(for: path, in: txn, codecs: table.makeCodecs())
                return try plan.count(candidates, filtered: isExact)
            }
        } catch {
            throw failing(error, .count)
        }
    }

    /// Erases the records with these primary keys, with their children and
    /// index entries, in one write transaction; returns how many records were
    /// erased (children not counted).
    ///
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase(primaryKeys keys: [Record.PrimaryKey]) throws -> Int {
        guard !keys.isEmpty else {
            // Nothing to erase, but a closed environment says so.
            do { try environment.checkOpen(.erase) } catch let error as StorageError { throw error.with(entity: table.entity.name) }
            return 0
        }
        let erased: Int
        do {
            erased = try table.environment.write(.erase) { txn in
                try table.withWriteCodecs { codecs in
                    defer { codecs.closeCursors() }
                    return try erase(keys, in: txn, codecs: codecs)
                }
            }
        } catch {
            throw failing(error, .erase)
        }
        if erased > 0 { table.environment.commits.didCommit(.erased(Record.self, primaryKeys: keys)) }
        return erased
    }

    /// Erases the records that meet `predicate` (every record for `nil`) with
    /// their children and index entries, in one write transaction; returns how
    /// many records were erased (children not counted).
    ///
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase(where predicate: Predicate<Record>?) throws -> Int {
        let erased: Int
        do {
            erased = try table.environment.write(.erase) { txn in
                guard let predicate else {
                    let count = try txn.entryCount(table.main)
                    try table.eraseEverything(in: txn)
                    return count
                }
                let plan = QueryPlan(Query(where: predicate))
                let (path, isExact) = table.plan(for: plan)
                let codecs = table.makeCodecs()
                defer { codecs.closeCursors() }
                var doomed: [Record.PrimaryKey] = []
                for record in try table.candidates(for: path, in: txn, codecs: codecs)
                where try isExact || plan.matches(record) {
                    doomed.append(record.primaryKey)
                }
                return try erase(doomed, in: txn, codecs: codecs)
            }
        } catch {
            throw failing(error, .erase)
        }
        if erased > 0 { table.environment.commits.didCommit(.erased(Record.self)) }
        return erased
    }

    /// Erases the records with these keys, with their children and index
    /// entries, inside `txn`; returns how many there were.
    private func erase(_ keys: [Record.PrimaryKey], in txn: borrowing Transaction, codecs: Codecs) throws -> Int {
        var erased = 0
        // A top-level record is stored under its primary key, and erasing it
        // finds whether it is there (its delete, or the read of its index
        // keys): not looked up first (a search of the entity's database, and
        // of the environment's parent links, about 1,900 instructions a key).
        // `codecs.link` is the link in force for the call.
        let isChild = codecs.link != nil
        for key in keys {
            let pk = KeyCodec.encode(primaryKey: key)
            let storageKey: [UInt8]
            if isChild {
                guard let found = try table.storageKey(of: pk, in: txn) else { continue }
                storageKey = found
            } else {
                storageKey = pk
            }
            if try table.erase(storageKey: storageKey, pk: pk, in: txn, codecs: codecs) { erased += 1 }
        }
        // Erasing writes no run it keeps for later; written all the same,
        // so that no path commits with one unwritten.
        try codecs.flushRuns(in: txn)
        return erased
    }
}

extension StorageError {
    /// For a key too long for LMDB (`MDB_BAD_VALSIZE`) met while writing the
    /// record with primary key `key` of `entity`: the error with that record
    /// named in its ``StorageError/context`` (its key shortened), unless a
    /// record written below it (a child, a grandchild) is named already.
    func namingRecord(_ key: StoredValue, of entity: String) -> StorageError {
        guard context == nil else { return self }
        var error = self
        let shown: String
        switch key {
        case .text(let text):
            let scalars = text.unicodeScalars
            let head = String(String.UnicodeScalarView(scalars.prefix(24))).debugDescription
            shown = scalars.count > 24
                ? "\(head.dropLast())…\" (\(text.utf8.count) bytes in UTF-8)" : head
        default:
            shown = "\(key)"
        }
        error.context = "record \(shown) of '\(entity)'"
        return error
    }
}

/// How `forEachView(_:_:)` reads a query: the key
/// range, the equalities its values are checked for, and the field they
/// are sorted by when not in key order.
struct ViewScan {
    struct Sort {
        let position: Int
        let descending: Bool

        /// The ordered key (``SortKey``) of the field in the decoder's value.
        func key(_ decoder: ValueDecoder) throws -> UInt64 {
            try ViewScan.orderedKey(decoder, position)
        }
    }

    var prefix: [UInt8]
    var filterFields: [Int] = []
    var filterValues: [StoredValue] = []
    var sort: Sort?

    /// The number of leading fields the filter and the sort read.
    var fieldsRead: Int {
        max(filterFields.max() ?? 0, sort?.position ?? 0) + 1
    }

    /// Whether `value` holds the filter's values. Its fields up to those
    /// are laid out without its checksum, as a range filter reads them: a
    /// value lent is loaded whole, its checksum checked, when it is lent.
    func passes(_ value: UnsafeRawBufferPointer, _ decoder: ValueDecoder) throws -> Bool {
        try decoder.begin(value, checkingSum: false)
        try decoder.layOutPrefix(fields: fieldsRead)
        for index in filterFields.indices where try decoder.value(at: filterFields[index]) != filterValues[index] {
            return false
        }
        return true
    }

    /// A value gathered for a sorted scan: its sort key, its primary key's
    /// ordered form, and where it lies in the map.
    struct Gathered {
        let key: UInt64
        let id: UInt64
        let value: UnsafeRawBufferPointer
    }

    /// The values of the range that hold the filter's values, sorted by
    /// `sort`'s field, then by primary key ascending. Here rather than in
    /// the storage's code, which is generic over the record type: there the
    /// array's and the closures' generic metadata were looked up each call.
    func gather(_ txn: borrowing Transaction, _ dbi: MDB_dbi, _ decoder: ValueDecoder, sort: Sort) throws
        -> [Gathered]
    {
        var found: [Gathered] = []
        try txn.scan(dbi, prefix: prefix) { _, value in
            guard try passes(value, decoder) else { return true }
            found.append(Gathered(key: try sort.key(decoder), id: try Self.orderedKey(decoder, 0), value: value))
            return true
        }
        let descending = sort.descending
        found.sort { a, b in
            a.key != b.key ? (descending ? a.key > b.key : a.key < b.key) : a.id < b.id
        }
        return found
    }

    /// The ordered key of an integer, boolean, real or date field.
    static func orderedKey(_ decoder: ValueDecoder, _ position: Int) throws -> UInt64 {
        switch try decoder.value(at: position) {
        case .integer(let integer): SortKey.ordered(integer)
        case .real(let real): SortKey.ordered(real)
        default: throw decoder.corrupt("field \(position) holds no number to sort by")
        }
    }
}
