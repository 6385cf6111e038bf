import DAOCore
import Foundation
import Synchronization

/// The records of one entity in an ``SQLiteDatabase``: one table, one typed
/// column per field, its relations in child tables.
///
/// Every call is one SQLite transaction. Predicates are compiled to a `WHERE`
/// clause with bound parameters and sort descriptors to `ORDER BY` where SQLite
/// can run them exactly as Foundation would; anything else is evaluated in
/// memory over the rows a coarser query returns.
///
/// ```swift
/// let messages = try db.storage(for: MessageRecord.self)
/// let unread = try messages.read(
///     where: #Predicate { $0.dialogId == 7 && !$0.isRead },
///     sortedBy: [SortDescriptor(\.date, order: .reverse)])
/// ```
public struct SQLiteRecordStorage<Record: DAOCore.Record>: Storage {
    /// The database that holds the table.
    public let database: SQLiteDatabase
    let table: SQLiteTable<Record>
    /// The class of what a prepared call's template keeps, as a value: named
    /// in this code, which is not specialized for the record type, the
    /// generic class's metadata was looked up at every call (about 350
    /// instructions).
    private let shapeTextType: ShapeText<Record>.Type

    init(database: SQLiteDatabase, table: SQLiteTable<Record>) {
        self.database = database
        self.table = table
        shapeTextType = ShapeText<Record>.self
    }

    /// The database's broadcaster.
    public var commits: CommitBroadcaster? { database.commits }
    /// The database's threads for `async` calls (``SQLiteDatabase/executor``).
    public var executor: StoreExecutor { database.executor }

    private var entityName: String { table.entity.name }
    private var hasChildren: Bool { table.hasLinks }

    /// Upserts the records with their children in one transaction.
    /// - Throws: ``StorageError``; nothing is written then.
    public func persist(_ records: [Record]) throws {
        guard !records.isEmpty else {
            // Nothing to write, but a closed database says so.
            try database.withConnection(.persist, entity: entityName) { _ in }
            return
        }
        try persist(handingOver: { hand in
            for record in records { try hand(record) }
        })
    }

    /// Upserts each record `produce` hands over, with its children, as it
    /// comes, in one transaction (``Storage/persist(handingOver:)``).
    /// - Throws: ``StorageError``, or what `produce` throws; nothing is
    ///   written then.
    public func persist(handingOver produce: (_ hand: RecordHandoff<Record>) throws -> Void) throws {
        var handoff = PersistHandoff<Record>(keepingRecords: database.commits.isObserved)
        do {
            try database.withConnection(.persist, entity: entityName) { connection in
                try connection.transaction(immediate: true) {
                    let writer = try TableWriter(table, connection)
                    try handoff.run(produce) { record in try writer.write(record) }
                }
            }
        } catch {
            // Whatever stopped the write (a record, the engine, the commit),
            // a translation error of a later plain object is the error to
            // report, as for an array (and on the other backends).
            if let refused = try handoff.refusal(after: error, produce) {
                guard let refused = refused as? StorageError else { throw refused }
                throw refused.with(path: database.path)
            }
            throw error
        }
        guard handoff.count > 0 else { return }
        database.commits.didCommit(handoff.change)
    }

    /// The record with primary key `key`, with its children, or `nil`.
    /// - Throws: ``StorageError``.
    public func read(primaryKey key: Record.PrimaryKey) throws -> Record? {
        // One key bound as it is, and the records come out through a
        // variable, the closures returning nothing: reading an array of one
        // key (the array, its reserve, the records appended to another
        // array) and closures returning arrays made this code, generic over
        // the record type, look up array metadata about six more times a
        // call (about 330 instructions each).
        var records: [Record] = []
        try database.withReader(.read, entity: entityName) { connection in
            let reader = TableReader(table: table, connection: connection)
            if hasChildren {
                try connection.transaction(immediate: false) { records = try reader.read(key: key) }
            } else {
                records = try reader.read(key: key)
            }
        }
        return records.first
    }

    /// The records with these keys, in the order of `keys`, missing keys skipped.
    /// - Throws: ``StorageError``.
    public func read(primaryKeys keys: [Record.PrimaryKey]) throws -> [Record] {
        guard !keys.isEmpty else {
            try database.withConnection(.read, entity: entityName) { _ in }  // a closed database says so
            return []
        }
        return try database.withReader(.read, entity: entityName) { connection in
            let reader = TableReader(table: table, connection: connection)
            if hasChildren {
                return try connection.transaction(immediate: false) { try reader.read(keys: keys) }
            }
            return try reader.read(keys: keys)
        }
    }

    /// The records that answer `query`: filtered, sorted and limited by SQLite
    /// when it can run the predicate and the sort exactly, otherwise finished in
    /// memory.
    /// - Throws: ``StorageError``; ``StorageError/Kind/invalidArgument`` for a negative limit.
    public func read(_ query: Query<Record>) throws -> [Record] {
        try query.validate()
        if query.limit == 0 { return [] }
        let plan = Plan(query)
        let order = plan.orderBy
        return try database.withReader(.read, entity: entityName) { connection in
            try transactionIfNeeded(connection) {
                let reader = TableReader(table: table, connection: connection)
                if plan.isExact, let order {
                    let (sql, sortColumns) = selectSQL(plan, orderBy: order, limited: query.limit != nil)
                    return try readExact(
                        sql, sortColumns: sortColumns, parameters: plan.condition?.parameters ?? [], limit: query.limit,
                        sort: plan.core.sort, all: plan.condition == nil && query.limit == nil, reader, connection)
                }
                return try plan.core.finish(candidates(plan, reader, connection), filtered: plan.isExact)
            }
        }
    }

    /// The records that answer a prepared query's call. When the prepared
    /// query keeps a template for values of these kinds and SQLite runs its
    /// condition and sort exactly, the call runs the statement kept with the
    /// template and binds its parameters straight from the call's values
    /// (`PreparedQueryCall.boundSlots()`, `CallParameter`): no predicate,
    /// query, ``QueryPlan`` or condition is built, and the `SELECT` and
    /// where each parameter comes from are found once per template and
    /// table. Otherwise as `read(_:)` with the call's query. The answer is
    /// the same either way.
    /// - Throws: ``StorageError``; ``StorageError/Kind/invalidArgument`` for a negative limit.
    public func read(_ call: PreparedQueryCall<Record>) throws -> [Record] {
        guard call.limit.map({ $0 > 0 }) ?? true, let bound = call.boundSlots() else { return try read(call.query) }
        let template = unsafeDowncast(bound.template, to: PlanTemplate<Record>.self)
        let sort = template.sort
        let limited = bound.limit != nil
        let shape = unsafeDowncast(
            template.memo(of: shapeTextType) { makeShapeText(bound, template, sort: sort, limited: limited) },
            to: ShapeText<Record>.self)
        guard let order = shape.orderTerms, let parameters = shape.callParameters else { return try read(call.query) }
        let (sql, sortColumns) = shape.select(for: table) {
            makeSelect(where: shape.callCondition, orderBy: order, sort: sort, limited: limited)
        }
        // The records come out through a variable, the closures returning
        // nothing: closures returning `[Record]` looked up the array's
        // metadata twice a call.
        var records: [Record] = []
        try database.withReader(.read, entity: entityName) { connection in
            try transactionIfNeeded(connection) {
                records = try readExact(
                    sql, sortColumns: sortColumns, limit: bound.limit, sort: sort,
                    all: shape.callCondition == nil && bound.limit == nil,
                    TableReader(table: table, connection: connection), connection
                ) { statement in
                    try CallParameter.bind(parameters, of: bound, to: statement, entity: entityName)
                }
            }
        }
        return records
    }

    /// Prepares the calls of `query`: for each template it was planned
    /// with when prepared, what ``read(_:)-(PreparedQueryCall<Record>)``
    /// keeps of its shape, and its `SELECT` and that of its views compiled
    /// on a reader connection (SQLite keeps each connection's statements).
    /// Reads no rows.
    /// - Throws: ``StorageError``.
    public func prepare<Parameters>(_ query: PreparedQuery<Record, Parameters>) throws {
        for call in query.preparationCalls {
            guard call.limit.map({ $0 > 0 }) ?? true, let bound = call.boundSlots() else { continue }
            let template = unsafeDowncast(bound.template, to: PlanTemplate<Record>.self)
            let sort = template.sort
            let limited = bound.limit != nil
            let shape = unsafeDowncast(
                template.memo(of: shapeTextType) { makeShapeText(bound, template, sort: sort, limited: limited) },
                to: ShapeText<Record>.self)
            guard let order = shape.orderTerms, shape.callParameters != nil else { continue }
            let read = shape.select(for: table) {
                makeSelect(where: shape.callCondition, orderBy: order, sort: sort, limited: limited)
            }
            try database.withReader(.read, entity: entityName) { connection in
                _ = try connection.statement(read.0)
                // The view reads' `SELECT` too, found (and compiled) here
                // rather than by the first call.
                guard !limited else { return }
                let (viewSQL, _) = try viewSelect(
                    shape, where: shape.callCondition, orderBy: order, read: read, connection)
                _ = try connection.statement(viewSQL)
            }
        }
    }

    /// What SQLite keeps of a prepared call's shape, made from its first
    /// call (`bound`): the `ORDER BY` terms, the `WHERE` text, where each of
    /// its parameters comes from, and the `SELECT` for this storage's
    /// table, so that later calls of the shape find them without a lock.
    private func makeShapeText(
        _ bound: BoundSlots, _ template: PlanTemplate<Record>, sort: SortPlan<Record>, limited: Bool
    ) -> ShapeText<Record> {
        guard let order = PredicateSQL.orderBy(sort) else { return ShapeText(orderTerms: nil) }
        var conditionText: String?? = nil
        var parameters: [CallParameter] = []
        if bound.hasCondition(template) {
            // A condition that does not instantiate is ruled out by
            // `boundSlots()`; one that does not compile runs through the
            // call's query.
            guard let expression = bound.condition(template) else {
                return ShapeText(orderTerms: order, condition: .some(nil))
            }
            if expression != .constant(true) {
                guard let compiled = PredicateSQL.compile(expression, entity: Record.entity),
                    let made = CallParameter.parameters(bound, of: template, compiled: compiled.parameters)
                else { return ShapeText(orderTerms: order, condition: .some(nil)) }
                conditionText = .some(compiled.sql)
                parameters = made
            }
        }
        let (sql, sortColumns) = makeSelect(where: conditionText ?? nil, orderBy: order, sort: sort, limited: limited)
        return ShapeText(
            orderTerms: order, condition: conditionText,
            firstSelect: SelectText(table: table, sql: sql, sortColumns: sortColumns), callParameters: parameters)
    }

    /// The records of an exact `SELECT` (the whole condition, sort and limit
    /// in SQL), with their children: `all` when it reads every row.
    private func readExact(
        _ sql: SQLText, sortColumns: [Int32]?, parameters: [SQLParameter], limit: Int?, sort: SortPlan<Record>,
        all: Bool, _ reader: TableReader<Record>, _ connection: Connection
    ) throws -> [Record] {
        try readExact(sql, sortColumns: sortColumns, limit: limit, sort: sort, all: all, reader, connection) {
            statement in
            try statement.bind(parameters)
            return Int32(parameters.count)
        }
    }

    /// The records of an exact `SELECT` (the whole condition, sort and limit
    /// in SQL), with their children, the condition's parameters bound by
    /// `bind`, which returns how many it bound: `all` when it reads every row.
    private func readExact(
        _ sql: SQLText, sortColumns: [Int32]?, limit: Int?, sort: SortPlan<Record>, all: Bool,
        _ reader: TableReader<Record>, _ connection: Connection, bind: (Statement) throws -> Int32
    ) throws -> [Record] {
        let statement = try connection.statement(sql)
        let bound = try bind(statement)
        if let limit {
            try statement.bind(Int64(limit), at: bound + 1)
        }
        var records: [Record]
        if let sortColumns {
            // Rows with equal sort values come in SQLite's order;
            // only then is the core's sort (which ends with the key) needed.
            var tied = false
            records = try reader.rows(statement, orderedBy: sortColumns, tied: &tied)
            if tied { records = sort.sorted(records) }
        } else {
            records = try reader.rows(statement)
        }
        try reader.attachChildren(to: &records, all: all)
        return records
    }

    /// Lends a view of each record that answers `query` to `body`
    /// (``RecordView``): when SQLite runs the query's condition and sort
    /// exactly, each view reads the columns of a row of the statement
    /// ``read(_:)-(Query<Record>)`` runs, or of one that orders rows of
    /// equal sort values by key (`viewSelect`);
    /// otherwise views of the records the read returns.
    /// - Throws: ``StorageError``, or what `body` throws, as it threw it.
    public func forEachView(_ query: Query<Record>, _ body: (borrowing RecordView<Record>) throws -> Void) throws {
        try query.validate()
        let plan = Plan(query)
        guard plan.isExact, let order = plan.orderBy else { return try lendViews(of: read(query), to: body) }
        if query.limit == 0 { return }
        let limited = query.limit != nil
        let read = selectSQL(plan, orderBy: order, limited: limited)
        let parameters = plan.condition?.parameters ?? []
        let condition = plan.condition?.sql
        try lendRows(
            body,
            select: { connection in
                limited ? (read.0, nil) : try viewSelect(plan.shape, where: condition, orderBy: order, read: read, connection)
            },
            bind: { statement in
                try statement.bind(parameters)
                if let limit = query.limit { try statement.bind(Int64(limit), at: Int32(parameters.count) + 1) }
            })
    }

    /// Lends a view of each record that answers a prepared query's call:
    /// the rows of the `SELECT` kept with its template, its parameters bound
    /// from the call's values, as ``read(_:)-(PreparedQueryCall<Record>)``
    /// runs it (rows of equal sort values lent in key order, as in
    /// `forEachView(_:_:)`); otherwise the views of the call's query.
    /// - Throws: ``StorageError``, or what `body` throws, as it threw it.
    public func forEachView(_ call: PreparedQueryCall<Record>, _ body: (borrowing RecordView<Record>) throws -> Void)
        throws
    {
        guard call.limit.map({ $0 > 0 }) ?? true, let bound = call.boundSlots() else {
            return try forEachView(call.query, body)
        }
        let template = unsafeDowncast(bound.template, to: PlanTemplate<Record>.self)
        let sort = template.sort
        let limited = bound.limit != nil
        let shape = unsafeDowncast(
            template.memo(of: shapeTextType) { makeShapeText(bound, template, sort: sort, limited: limited) },
            to: ShapeText<Record>.self)
        guard let order = shape.orderTerms, let parameters = shape.callParameters else {
            return try forEachView(call.query, body)
        }
        let read = shape.select(for: table) {
            makeSelect(where: shape.callCondition, orderBy: order, sort: sort, limited: limited)
        }
        let entityName = entityName
        try lendRows(
            body,
            select: { connection in
                limited
                    ? (read.0, nil)
                    : try viewSelect(shape, where: shape.callCondition, orderBy: order, read: read, connection)
            },
            bind: { statement in
                let count = try CallParameter.bind(parameters, of: bound, to: statement, entity: entityName)
                if let limit = bound.limit { try statement.bind(Int64(limit), at: count + 1) }
            })
    }

    /// The `SELECT` of an unlimited view read and the columns whose runs of
    /// equal values it copies and lends in key order (``ViewRun``; empty:
    /// the whole answer is one run), or `nil` columns when it lends each
    /// row as the statement steps onto it. `read` is the `SELECT` of
    /// ``read(_:)-(Query<Record>)`` and its tie columns.
    ///
    /// A view cannot be moved once lent, so rows of equal sort values must
    /// come in key order, the read's final tie-break. With the key last in
    /// the `ORDER BY` SQLite gives that order, but where the index it walks
    /// gives the order of the sort values only (a `(dialogId, date)` index
    /// for messages of one dialog by date, or by key alone), it builds a
    /// temporary B-tree per call to add the key. Then the view read runs
    /// the read's own `SELECT` (the key left out of the `ORDER BY`, no
    /// `ORDER BY` for a sort by key alone) and lends its runs of equal
    /// values in key order. Whether SQLite sorts the key-last `SELECT` for
    /// the key only is asked once per shape and table (`EXPLAIN QUERY
    /// PLAN`) and kept with the shape; a query without a template copies
    /// runs exactly when the read leaves the key out. A table whose key is
    /// not an integer always puts the key last.
    private func viewSelect(
        _ shape: ShapeText<Record>?, where condition: String?, orderBy order: [String],
        read: (SQLText, [Int32]?), _ connection: Connection
    ) throws -> (SQLText, [Int32]?) {
        // The read's own `SELECT` has the key last in its `ORDER BY`
        // (a sort by text, or by the key alone without a condition).
        let byKeyWithCondition = order.isEmpty && condition != nil
        if read.1 == nil && !byKeyWithCondition { return (read.0, nil) }
        func make() throws -> (SQLText, [Int32]?) {
            let keyLast =
                read.1 == nil ? read.0 : SQLText(sql: table.selectSQL(where: condition, orderBy: order, limit: false))
            guard table.entity.primaryKeyField.type == .integer else { return (keyLast, nil) }
            let unkeyed: SQLText
            let tieColumns: [Int32]
            if let sortColumns = read.1 {
                (unkeyed, tieColumns) = (read.0, sortColumns)
            } else {
                unkeyed = SQLText(sql: table.selectSQL(where: condition, orderBy: [], limit: false, keyLast: false))
                tieColumns = []
            }
            guard shape != nil else { return read.1 == nil ? (keyLast, nil) : (unkeyed, tieColumns) }
            // By the key alone, the `SELECT` without `ORDER BY` sorts
            // nothing; by fields, the read's sorts nothing more when SQLite
            // sorts the key-last `SELECT` only to order ties (the right
            // part of the `ORDER BY`).
            let plan = try queryPlan(of: keyLast, connection)
            let copies =
                read.1 == nil
                ? plan.contains("TEMP B-TREE")
                : plan.contains("TEMP B-TREE FOR RIGHT PART OF ORDER BY")
                    || plan.contains("TEMP B-TREE FOR LAST TERM OF ORDER BY")
            return copies ? (unkeyed, tieColumns) : (keyLast, nil)
        }
        guard let shape else { return try make() }
        return try shape.viewSelect(for: table, make)
    }

    /// The details of SQLite's plan for `sql` (`EXPLAIN QUERY PLAN`), one
    /// line each.
    private func queryPlan(of sql: SQLText, _ connection: Connection) throws -> String {
        let statement = try Statement(db: connection.handle, sql: "EXPLAIN QUERY PLAN " + sql.sql, persistent: false)
        var details = ""
        while try statement.step() {
            details += (statement.text(3) ?? "") + "\n"
        }
        return details
    }

    /// Lends a view of the row with primary key `key` to `body`, if there
    /// is one.
    /// - Returns: whether a view was lent.
    /// - Throws: ``StorageError``, or what `body` throws, as it threw it.
    @discardableResult
    public func forEachView(primaryKey key: Record.PrimaryKey, _ body: (borrowing RecordView<Record>) throws -> Void)
        throws -> Bool
    {
        try lendRows(table.selectByKeySQL, body) { statement in try statement.bind(key.storedValue, at: 1) } > 0
    }

    /// Runs `sql`, its parameters bound by `bind`, on a reader connection and
    /// lends a view of each row to `body`; returns how many it lent. What
    /// `body` throws stops the rows and is rethrown as it was thrown.
    @discardableResult
    private func lendRows(
        _ sql: SQLText, _ body: (borrowing RecordView<Record>) throws -> Void, bind: (Statement) throws -> Void
    ) throws -> Int {
        try lendRows(body, select: { _ in (sql, nil) }, bind: bind)
    }

    /// Runs the `SELECT` `select` gives on a reader connection, its
    /// parameters bound by `bind`, and lends a view of each row to `body`:
    /// as the statement steps onto it, or, when `select` gives tie columns,
    /// in runs of equal values in them, each in key order (``ViewRun``);
    /// returns how many it lent. What `body` throws stops the rows and is
    /// rethrown as it was thrown.
    @discardableResult
    private func lendRows(
        _ body: (borrowing RecordView<Record>) throws -> Void,
        select: (Connection) throws -> (SQLText, [Int32]?), bind: (Statement) throws -> Void
    ) throws -> Int {
        var thrownByBody: (any Error)?
        var lent = 0
        try database.withReader(.read, entity: entityName) { connection in
            let (sql, tieColumns) = try select(connection)
            let statement = try connection.statement(sql)
            defer { statement.reset() }
            try bind(statement)
            if let tieColumns {
                (lent, thrownByBody) = try lendRuns(statement, tieColumns: tieColumns, body)
                return
            }
            try withUnsafePointer(to: sqliteColumnFunctions) { functions in
                let context = ViewContext(columnsOf: table.viewLayout, functions: functions, access: table.columnAccess)
                // The views hold the context unowned: kept alive until the
                // last has been lent.
                try withExtendedLifetime(context) {
                    while try statement.step() {
                        context.nextRecord()
                        lent += 1
                        let view = RecordView<Record>(context, handle: statement.handle, base: nil, count: 0)
                        do {
                            try body(view)
                        } catch {
                            thrownByBody = error
                            return
                        }
                    }
                }
            }
        }
        if let thrownByBody { throw thrownByBody }
        return lent
    }

    /// Lends a view of each row of `statement` (bound) to `body` in runs of
    /// equal values in `tieColumns`, each in key order (``ViewRun``);
    /// returns how many rows it read and what `body` threw, which stopped
    /// the rows.
    private func lendRuns(
        _ statement: Statement, tieColumns: [Int32], _ body: (borrowing RecordView<Record>) throws -> Void
    ) throws -> (Int, (any Error)?) {
        try withUnsafePointer(to: copiedRowFunctions) { functions in
            let context = ViewContext(columnsOf: table.viewLayout, functions: functions, access: table.columnAccess)
            // The views hold the context unowned: kept alive until the last
            // has been lent.
            return try withExtendedLifetime(context) {
                try ViewRun.withRun(columns: table.layout.names.count) { run in
                    let handle = statement.handle
                    var read = 0
                    var more = try statement.step()
                    while more {
                        run.append(handle)
                        read += 1
                        more = try statement.step()
                        guard !more || !run.ties(handle, in: tieColumns) else { continue }
                        do {
                            try run.lend(context, to: body)
                        } catch {
                            return (read, error)
                        }
                    }
                    return (read, nil)
                }
            }
        }
    }

    /// How many records meet `predicate`.
    /// - Throws: ``StorageError``.
    public func count(where predicate: Predicate<Record>?) throws -> Int {
        let plan = Plan(Query(where: predicate))
        return try database.withReader(.count, entity: entityName) { connection in
            if plan.isExact {
                let statement = try connection.statement(
                    statementSQL(plan, CountStatement.self, all: table.countSQL, where: table.countSQL(where:)))
                defer { statement.reset() }
                try statement.bind(plan.condition?.parameters ?? [])
                guard try statement.step() else { return 0 }
                return Int(statement.int64(0))
            }
            return try transactionIfNeeded(connection) {
                let reader = TableReader(table: table, connection: connection)
                return try plan.core.count(candidates(plan, reader, connection), filtered: false)
            }
        }
    }

    /// Erases the records with these keys and their children; returns how many
    /// records were erased.
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase(primaryKeys keys: [Record.PrimaryKey]) throws -> Int {
        guard !keys.isEmpty else {
            try database.withConnection(.erase, entity: entityName) { _ in }  // a closed database says so
            return 0
        }
        let erased = try database.withConnection(.erase, entity: entityName) { connection in
            try connection.transaction(immediate: true) {
                try erase(keys, connection)
            }
        }
        if erased > 0 { database.commits.didCommit(.erased(Record.self, primaryKeys: keys)) }
        return erased
    }

    /// Erases the records that meet `predicate` (all when `nil`) and their
    /// children; returns how many records were erased.
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase(where predicate: Predicate<Record>?) throws -> Int {
        let plan = Plan(Query(where: predicate))
        let erased = try database.withConnection(.erase, entity: entityName) { connection in
            if predicate == nil, table.hasLinks || Record.entity.owner != nil, let erased = try eraseAll(connection) {
                return erased
            }
            return try connection.transaction(immediate: true) {
                if plan.isExact {
                    let parameters = plan.condition?.parameters ?? []
                    // The children first, deepest first, as erasing by key
                    // does: the parents' delete then cascades to nothing.
                    if plan.condition == nil {
                        for link in table.links {
                            try link.eraseAllChildren(connection)
                        }
                    } else if table.hasLinks {
                        for sql in descendantDeletesSQL(plan) {
                            let delete = try connection.statement(sql)
                            try delete.bind(parameters)
                            try delete.run()
                        }
                    }
                    let statement = try connection.statement(
                        statementSQL(plan, DeleteStatement.self, all: table.deleteAllSQL, where: table.deleteSQL(where:)))
                    try statement.bind(parameters)
                    try statement.run()
                    return connection.changes
                }
                let reader = TableReader(table: table, connection: connection)
                let keys = try candidates(plan, reader, connection).filter { try plan.core.matches($0) }.map(\.primaryKey)
                return try erase(keys, connection)
            }
        }
        if erased > 0 { database.commits.didCommit(.erased(Record.self)) }
        return erased
    }

    /// Empties this table and every table below it, with foreign keys off so
    /// that SQLite frees each table's pages whole (its truncate shortcut)
    /// rather than deleting row by row; returns how many records were erased,
    /// or `nil` (having changed nothing) when a table outside them has a
    /// foreign key to one of them, whose rows would then point at nothing,
    /// or one of them has a trigger (``SQLiteTable/needsForeignKeysToEmpty(_:)``).
    ///
    /// What is deleted is what the enforced path deletes: every row of every
    /// table of the tree, children first; a foreign key from a table of the
    /// tree to a table outside it (an owned entity's own storage: its key to
    /// its owner) cannot be broken by deleting its rows.
    private func eraseAll(_ connection: Connection) throws -> Int? {
        try connection.withForeignKeysOff {
            try connection.transaction(immediate: true) {
                guard try !table.needsForeignKeysToEmpty(connection) else { return nil }
                for link in table.links {
                    try link.eraseAllChildren(connection)
                }
                try connection.statement(table.deleteAllSQL).run()
                return connection.changes
            }
        }
    }

    /// The `EXPLAIN QUERY PLAN` details of the statement `read(query)` runs for
    /// the parent rows, and whether SQLite runs the whole query (filter, sort,
    /// limit) rather than leaving part of it to memory.
    func queryPlan(_ query: Query<Record>) throws -> (details: [String], pushedDown: Bool) {
        let plan = Plan(query)
        let order = PredicateSQL.orderBy(plan.core.sort)
        let pushedDown = plan.isExact && order != nil
        let keyLast = !pushedDown || query.limit != nil || Plan.tieColumns(of: plan.core.sort, in: table) == nil
        let sql = table.selectSQL(
            where: plan.condition?.sql, orderBy: pushedDown ? order ?? [] : [],
            limit: pushedDown && query.limit != nil, keyLast: keyLast)
        return try database.withConnection(.read, entity: entityName) { connection in
            let statement = try Statement(db: connection.handle, sql: "EXPLAIN QUERY PLAN " + sql, persistent: false)
            try statement.bind(plan.condition?.parameters ?? [])
            if pushedDown, let limit = query.limit {
                try statement.bind(Int64(limit), at: Int32((plan.condition?.parameters.count ?? 0) + 1))
            }
            var details: [String] = []
            while try statement.step() {
                details.append(statement.text(3) ?? "")
            }
            return (details, pushedDown)
        }
    }

    // MARK: Helpers

    /// The `SELECT` of an exact plan, and the columns of its sort whose ties
    /// the read watches (``Plan/tieColumns(of:in:)``, for a read without a
    /// limit; the key is then left out of the `ORDER BY`): kept with the
    /// plan's shape for this table when the plan has a template (both depend
    /// on the shape and the table only).
    private func selectSQL(_ plan: Plan, orderBy order: [String], limited: Bool) -> (SQLText, [Int32]?) {
        func make() -> (SQLText, [Int32]?) {
            makeSelect(where: plan.condition?.sql, orderBy: order, sort: plan.core.sort, limited: limited)
        }
        guard let shape = plan.shape else { return make() }
        return shape.select(for: table, make)
    }

    /// The `SELECT` of an exact read from this table with this `WHERE` text,
    /// sort and limit, and its tie columns (``Plan/tieColumns(of:in:)``,
    /// without a limit).
    private func makeSelect(
        where condition: String?, orderBy order: [String], sort: SortPlan<Record>, limited: Bool
    ) -> (SQLText, [Int32]?) {
        let sortColumns = limited ? nil : Plan.tieColumns(of: sort, in: table)
        let sql = table.selectSQL(where: condition, orderBy: order, limit: limited, keyLast: sortColumns == nil)
        return (SQLText(sql: sql), sortColumns)
    }

    /// The text of an exact plan's `COUNT` or `DELETE` (`Kind`): the table's
    /// own for every row, else kept with the plan's template for this table
    /// when it has one, built from the condition otherwise.
    private func statementSQL<Kind>(
        _ plan: Plan, _ kind: Kind.Type, all: SQLText, where build: (String) -> String
    ) -> SQLText {
        guard let condition = plan.condition else { return all }
        guard let template = plan.sqlTemplate else { return SQLText(sql: build(condition.sql)) }
        return template.memo(TableText<Record, Kind>.self) { TableText() }.sql(for: table) { build(condition.sql) }
    }

    /// The `DELETE`s of the descendants of the rows an exact plan's condition
    /// selects (``SQLiteTable/deleteDescendantsSQL(where:)``), kept with the plan's
    /// template for this table when it has one.
    private func descendantDeletesSQL(_ plan: Plan) -> [SQLText] {
        guard let condition = plan.condition else { return [] }
        func build() -> [String] { table.deleteDescendantsSQL(where: condition.sql) }
        guard let template = plan.sqlTemplate else { return build().map(SQLText.init(sql:)) }
        return template.memo(TableText<Record, DescendantDeletes>.self) { TableText() }.texts(for: table, build)
    }

    private func erase(_ keys: [Record.PrimaryKey], _ connection: Connection) throws -> Int {
        let statement = try connection.statement(table.deleteByKeySQL)
        // The record's descendants first, deepest first: its own delete
        // then cascades to nothing (``SQLiteTable/deleteDescendantsSQL``).
        let descendants = try table.deleteDescendantsSQL.map { try connection.statement($0) }
        var erased = 0
        for key in keys {
            let value = key.storedValue
            for delete in descendants {
                try delete.bind(value, at: 1)
                try delete.run()
            }
            try statement.bind(value, at: 1)
            try statement.run()
            erased += connection.changes
        }
        return erased
    }

    /// The records the plan's SQL condition selects (a superset of the answer
    /// when the plan is inexact), in primary-key order, with their children.
    private func candidates(_ plan: Plan, _ reader: TableReader<Record>, _ connection: Connection) throws -> [Record] {
        let statement = try connection.statement(table.selectSQL(where: plan.condition?.sql, orderBy: [], limit: false))
        try statement.bind(plan.condition?.parameters ?? [])
        var records = try reader.rows(statement)
        try reader.attachChildren(to: &records, all: plan.condition == nil)
        return records
    }

    /// Reads that run more than one statement (parents, then children) run in
    /// one read transaction, so they see one state of the database.
    private func transactionIfNeeded<T>(_ connection: Connection, _ body: () throws -> T) throws -> T {
        hasChildren ? try connection.transaction(immediate: false, body) : try body()
    }

    /// How a query runs: the core's plan, the SQL condition compiled from its
    /// engine condition (none = every row), and whether that condition is the
    /// whole predicate or a superset whose rows the core's condition filters.
    private struct Plan {
        let core: QueryPlan<Record>
        var condition: SQLCondition?
        var isExact: Bool
        /// The template whose shape gave ``condition``'s text, if any.
        let sqlTemplate: PlanTemplate<Record>?
        /// What SQLite keeps of that shape (``ShapeText``).
        let shape: ShapeText<Record>?

        /// `ORDER BY` terms of the sort (``PredicateSQL/orderBy(_:)``), kept
        /// with the template.
        var orderBy: [String]? {
            guard let shape else { return PredicateSQL.orderBy(core.sort) }
            return shape.orderTerms
        }

        /// The columns of the sort's fields when they are all numeric (integer,
        /// real, bool, date) and there is at least one: then `read` leaves the
        /// primary key out of the `ORDER BY` and sorts in memory only when
        /// neighbouring rows tie. SQLite orders a tie-break by the key against
        /// an index scanned backwards (`date DESC, id ASC`) with a temporary
        /// B-tree per group of equal values, about 1k instructions per row.
        /// `nil` otherwise (text would have to be read to compare it).
        static func tieColumns(of sort: SortPlan<Record>, in table: SQLiteTable<Record>) -> [Int32]? {
            guard let fields = sort.fields, !fields.isEmpty else { return nil }
            var columns: [Int32] = []
            for (field, _) in fields {
                switch field.type {
                case .integer, .real, .bool, .date:
                    guard let column = table.layout.indexByName[field.name] else { return nil }
                    columns.append(Int32(column))
                case .text, .blob:
                    return nil
                }
            }
            return columns
        }

        init(_ query: Query<Record>) {
            // SQLite walks no access path; an exact condition runs as SQL.
            var core = QueryPlan(query, parts: [])
            sqlTemplate = core.template
            let expression = core.engineCondition
            // The texts depend on the shape only: compiled once per shape,
            // the constants bound on every call.
            let sort = core.sort
            shape = core.template?.memo(ShapeText<Record>.self) { ShapeText(orderTerms: PredicateSQL.orderBy(sort)) }
            guard let expression else {
                self.core = core
                condition = nil
                isExact = true
                return
            }
            var condition: SQLCondition?
            if case .constant(true) = expression {
                condition = nil
            } else if let shape {
                condition = shape.sqlCondition(expression)
            } else {
                condition = PredicateSQL.compile(expression, entity: Record.entity)
            }
            let isExact = core.conditionIsExact && (condition != nil || expression == .constant(true))
            // An exact predicate SQLite cannot run (too many parameters) is
            // evaluated in memory after all.
            if !isExact && core.conditionIsExact { core = QueryPlan(query, parts: [.exactCondition]) }
            self.core = core
            self.condition = condition
            self.isExact = isExact
        }
    }
}

/// What SQLite derives from a plan's shape, kept with the core's
/// ``PlanTemplate`` (one memo, found once a call): the `WHERE` text, the
/// `ORDER BY` terms of the sort, and, for each table it was read from, the
/// `SELECT` of a read and the columns whose ties it watches, and those of a
/// view read. A table is
/// held, so its identity cannot be reused by another table while its text
/// is kept.
private final class ShapeText<Record: DAOCore.Record>: Sendable {
    let orderTerms: [String]?
    /// The `WHERE` text when the shape was made with it (`.some(nil)`:
    /// SQLite cannot run it), found without a lock (a lock taken and
    /// released cost a call about 600 instructions); `nil`: not made yet.
    private let madeCondition: String??
    /// The `WHERE` text, once a call with a condition made it (`.some(nil)`:
    /// SQLite cannot run it), when the shape was made without it.
    private let conditionText = BargingMutex<String??>(nil)
    /// The `SELECT` of the table the shape was made for, when it was made
    /// with it: found without a lock.
    private let firstSelect: SelectText?
    /// One entry per table read from, and one per table views were read
    /// from (a few at most: one per open database),
    /// found by identity, in terms that do not depend on the record type: a
    /// dictionary keyed by the table's identifier, unspecialized for the
    /// record type, cost about 3.6k instructions a call, mostly generic
    /// metadata look-ups.
    private let selects = BargingMutex<[SelectText]>([])
    /// The first view read's `SELECT` (a retained `SelectText`, 0 for none;
    /// the others are in ``selects``),
    /// found without a lock (a lock taken and released cost a call about
    /// 200 instructions).
    private let firstViewSelect = Atomic<UInt>(0)

    /// Where each parameter of the `WHERE` text comes from in a prepared
    /// call (``CallParameter``), when the shape was made by one whose
    /// condition SQLite runs (empty: no condition); `nil` otherwise.
    let callParameters: [CallParameter]?

    init(
        orderTerms: [String]?, condition: String?? = nil, firstSelect: SelectText? = nil,
        callParameters: [CallParameter]? = nil
    ) {
        self.orderTerms = orderTerms
        madeCondition = condition
        self.firstSelect = firstSelect
        self.callParameters = callParameters
    }

    /// The `WHERE` text a prepared call's shape was made with (`nil`: no
    /// condition), when ``callParameters`` is not `nil`.
    var callCondition: String? { madeCondition ?? nil }

    /// The `WHERE` text of the shape's condition (`nil`: SQLite cannot run
    /// it), made by `make` from the first call's condition.
    private func condition(_ make: () -> String?) -> String? {
        if let madeCondition { return madeCondition }
        if let kept = conditionText.withLock({ $0 }) { return kept }
        let made = make()
        conditionText.withLock { $0 = .some(made) }
        return made
    }

    /// The SQL condition of `expression`, a condition of this shape: the
    /// `WHERE` text kept for the shape (made from the first one), the
    /// parameters this one binds; `nil` when SQLite cannot run it.
    func sqlCondition(_ expression: QueryExpression) -> SQLCondition? {
        // Compiled for one condition of the shape, the text is the
        // shape's: every condition of it compiles, and binds its constants
        // as the shape's structure says (``PredicateSQL/shapeParameters(_:)``).
        guard let sql = condition({ PredicateSQL.compile(expression, entity: Record.entity)?.sql }),
            let parameters = PredicateSQL.shapeParameters(expression)
        else { return nil }
        return SQLCondition(sql: sql, parameters: parameters)
    }

    /// The `SELECT` of a view read from `table` and its tie columns
    /// (`SQLiteRecordStorage.viewSelect`), made by `make` the first time.
    func viewSelect(for table: SQLiteTable<Record>, _ make: () throws -> (SQLText, [Int32]?)) throws -> (
        SQLText, [Int32]?
    ) {
        if let first = UnsafeRawPointer(bitPattern: firstViewSelect.load(ordering: .acquiring)) {
            // Set once and released with the shape, so not retained here.
            let kept = Unmanaged<SelectText>.fromOpaque(first).takeUnretainedValue()
            if kept.table === table { return (kept.sql, kept.sortColumns) }
        }
        let kept = selects.withLock { selects -> SelectText? in
            for select in selects where select.table === table && select.isView { return select }
            return nil
        }
        if let kept { return (kept.sql, kept.sortColumns) }
        let (sql, tieColumns) = try make()
        let made = SelectText(table: table, sql: sql, sortColumns: tieColumns, isView: true)
        selects.withLock { selects in
            if selects.count >= 16 { selects.removeAll() }
            selects.append(made)
        }
        // The first table's is also found without the lock from now on.
        let retained = Unmanaged.passRetained(made)
        let first = UInt(bitPattern: retained.toOpaque())
        if !firstViewSelect.compareExchange(expected: 0, desired: first, ordering: .acquiringAndReleasing).exchanged {
            retained.release()
        }
        return (sql, tieColumns)
    }

    deinit {
        if let first = UnsafeRawPointer(bitPattern: firstViewSelect.load(ordering: .acquiring)) {
            Unmanaged<SelectText>.fromOpaque(first).release()
        }
    }

    /// The `SELECT` of a read from `table` and its sort columns, made by
    /// `make` the first time.
    func select(for table: SQLiteTable<Record>, _ make: () -> (SQLText, [Int32]?)) -> (SQLText, [Int32]?) {
        if let firstSelect, firstSelect.table === table { return (firstSelect.sql, firstSelect.sortColumns) }
        let kept = selects.withLock { selects -> SelectText? in
            for select in selects where select.table === table && !select.isView { return select }
            return nil
        }
        if let kept { return (kept.sql, kept.sortColumns) }
        let (sql, sortColumns) = make()
        selects.withLock { selects in
            // Start over past a few tables.
            if selects.count >= 16 { selects.removeAll() }
            selects.append(SelectText(table: table, sql: sql, sortColumns: sortColumns))
        }
        return (sql, sortColumns)
    }
}

/// The `SELECT` of a shape's read from one table (``ShapeText``). The table
/// is held, so its identity cannot be reused by another table while its
/// text is kept.
private final class SelectText: Sendable {
    let table: AnyObject & Sendable
    let sql: SQLText
    let sortColumns: [Int32]?
    /// Whether it is a view read's (`SQLiteRecordStorage.viewSelect`).
    let isView: Bool

    init(table: AnyObject & Sendable, sql: SQLText, sortColumns: [Int32]?, isView: Bool = false) {
        self.table = table
        self.sql = sql
        self.sortColumns = sortColumns
        self.isView = isView
    }
}

/// Names the `SELECT count(*)` text of a plan's shape.
private enum CountStatement {}
/// Names the `DELETE` text of a plan's shape.
private enum DeleteStatement {}
/// ``TableText`` of the `DELETE`s of an exact erasure's descendants.
private enum DescendantDeletes {}

/// The text of one kind of statement (`Kind`) for a plan's shape, for each
/// table it ran on, kept with the core's ``PlanTemplate``. The table is held,
/// so its identity cannot be reused by another table while the text is kept.
private final class TableText<Record: DAOCore.Record, Kind>: Sendable {
    private let texts = BargingMutex<[ObjectIdentifier: (table: SQLiteTable<Record>, sql: [SQLText])]>([:])

    func sql(for table: SQLiteTable<Record>, _ build: () -> String) -> SQLText {
        texts(for: table) { [build()] }[0]
    }

    /// The kept texts of `Kind` for `table`, made by `build` the first time.
    func texts(for table: SQLiteTable<Record>, _ build: () -> [String]) -> [SQLText] {
        let key = ObjectIdentifier(table)
        if let kept = texts.withLock({ $0[key] }), kept.table === table { return kept.sql }
        let sql = build().map(SQLText.init(sql:))
        texts.withLock { texts in
            // A few tables at most (one per open database); start over past that.
            if texts.count >= 16 { texts.removeAll() }
            texts[key] = (table, sql)
        }
        return sql
    }
}
