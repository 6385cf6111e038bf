import DAOCore
import Foundation
import PostgresNIO

/// The records of one entity in a ``PostgresStore``: one table, one typed
/// column per field, its relations in child tables whose foreign keys cascade.
///
/// Every call is one transaction. Predicates are compiled to a `WHERE`
/// clause with bound parameters and sort descriptors to `ORDER BY` where
/// PostgreSQL runs them with the library's meaning; the rest is evaluated
/// by the core over the rows a coarser query returns, as on SQLite.
///
/// ```swift
/// let messages = try store.storage(for: MessageRecord.self)
/// let unread = try messages.read(
///     where: #Predicate { $0.dialogId == 7 && !$0.isRead },
///     sortedBy: [SortDescriptor(\.date, order: .reverse)])
/// ```
public struct PostgresRecordStorage<Record: DAOCore.Record>: Storage {
    /// The store that holds the table.
    public let store: PostgresStore
    let table: RecordTable<Record>

    init(store: PostgresStore, table: RecordTable<Record>) {
        self.store = store
        self.table = table
    }

    /// The store's broadcaster.
    public var commits: CommitBroadcaster? { store.commits }
    /// The store's threads for `async` calls.
    public var executor: StoreExecutor { store.executor }

    private var entityName: String { table.name }

    // MARK: Writes

    /// Upserts the records with their children in one transaction.
    /// - Throws: ``StorageError``; nothing is written then.
    public func persist(_ records: [Record]) throws {
        try persist(handingOver: { hand in
            for record in records { try hand(record) }
        })
    }

    /// Upserts each record `produce` hands over, with its children, as it
    /// comes, in one transaction.
    /// - Throws: ``StorageError``, or what `produce` throws; nothing is
    ///   written then.
    public func persist(handingOver produce: (_ hand: RecordHandoff<Record>) throws -> Void) throws {
        var handoff = PersistHandoff<Record>(keepingRecords: store.commits.isObserved)
        let bound = store.configuration.rowsPerStatement
        do {
            try store.transaction(.persist, entity: entityName) { connection in
                var batch = WriteBatch(table: table, bound: bound)
                try handoff.run(produce) { record in
                    let record = copy record
                    try batch.add(record, connection)
                }
                try batch.finish(connection)
            }
        } catch {
            if let refused = try handoff.refusal(after: error, produce) { throw refused }
            throw error
        }
        guard handoff.count > 0 else { return }
        store.commits.didCommit(handoff.change)
    }

    // MARK: Reads

    /// The record with primary key `key`, with its children, or `nil`.
    /// - Throws: ``StorageError``.
    public func read(primaryKey key: Record.PrimaryKey) throws -> Record? {
        try read(primaryKeys: [key]).first
    }

    /// The records with these keys, in the order of `keys`, missing keys skipped.
    /// - Throws: ``StorageError``.
    public func read(primaryKeys keys: [Record.PrimaryKey]) throws -> [Record] {
        let values = keys.map(\.storedValue)
        // A table without relations, or whose children hold none (its TreeSQL), is read by one statement.
        let tree = table.tree
        let oneStatement = !table.hasLinks || tree != nil
        return try store.transaction(.read, entity: entityName, readOnly: true, oneStatement: oneStatement) { connection in
            guard !keys.isEmpty else { return [] }
            let found: [Record]
            // The children are asked for by the keys asked for (a child's foreign key names a stored parent), with the parents.
            if keys.count == 1, let key = PostgresValue.bind(values[0], as: table.sql.types[0]) {
                if let tree {
                    found = try table.readTree(tree.selectByKey, [key], tree, connection)
                } else {
                    found = try table.read(table.sql.selectByKey, [key], keys: values, connection)
                }
            } else {
                guard let array = table.keyArray(values) else { return [] }
                if let tree {
                    found = try table.readTree(tree.selectByKeys, [array], tree, connection)
                } else {
                    found = try table.read(table.sql.selectByKeys, [array], keys: values, connection)
                }
            }
            if keys.count == 1 { return found }
            var byKey: [StoredValue: Record] = [:]
            for record in found { byKey[record.primaryKey.storedValue] = record }
            return values.compactMap { byKey[$0] }
        }
    }

    /// The records that answer `query`: filtered, sorted and limited by the
    /// server when it can run the predicate and the sort with the library's
    /// meaning, otherwise finished by the core.
    /// - Throws: ``StorageError``; ``StorageError/Kind/invalidArgument`` for a negative limit.
    public func read(_ query: Query<Record>) throws -> [Record] {
        try query.validate()
        if query.limit == 0 {
            try store.transaction(.read, entity: entityName, readOnly: true, oneStatement: true) { _ in }
            return []
        }
        let plan = QueryPlan(query)
        let condition = compiledCondition(plan)
        let order = PredicateSQL.orderBy(plan.sort, table.sql)
        // Without relations every way below is one statement.
        return try store.transaction(.read, entity: entityName, readOnly: true, oneStatement: !table.hasLinks) { connection in
            if let condition, plan.conditionIsExact || plan.query.predicate == nil, let order {
                var binds = condition.binds
                var limitParameter: Int?
                if let limit = query.limit {
                    binds.append(PostgresValue.int8(Int64(limit)))
                    limitParameter = binds.count
                }
                let sql = table.sql.select(
                    where: condition.sql == "TRUE" ? nil : condition.sql, orderBy: order, limitParameter: limitParameter)
                var records = try table.records(connection.rows(sql, binds))
                try table.attachChildren(&records, connection)
                return records
            }
            var candidates = try candidates(condition, connection)
            if plan.needsCompleteRecords {
                try table.attachChildren(&candidates, connection)
                return try plan.finish(candidates, filtered: false)
            }
            var records = try plan.finish(candidates, filtered: false)
            try table.attachChildren(&records, connection)
            return records
        }
    }

    /// How many records meet `predicate`.
    /// - Throws: ``StorageError``.
    public func count(where predicate: Predicate<Record>?) throws -> Int {
        let plan = QueryPlan(Query(where: predicate))
        let condition = compiledCondition(plan)
        let oneStatement = !table.hasLinks || (condition != nil && (plan.conditionIsExact || predicate == nil))
        return try store.transaction(.count, entity: entityName, readOnly: true, oneStatement: oneStatement) { connection in
            if let condition, plan.conditionIsExact || predicate == nil {
                let sql = condition.sql == "TRUE" ? table.sql.countAll : table.sql.count(where: condition.sql)
                return try count(connection.rows(sql, condition.binds))
            }
            var candidates = try candidates(condition, connection)
            if plan.needsCompleteRecords { try table.attachChildren(&candidates, connection) }
            return try plan.count(candidates, filtered: false)
        }
    }

    // MARK: Erase

    /// Erases the records with these keys and their children; returns how many
    /// records were erased.
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase(primaryKeys keys: [Record.PrimaryKey]) throws -> Int {
        let values = keys.map(\.storedValue)
        // One statement (the children go by the foreign keys' cascades): atomic without BEGIN.
        let erased = try store.transaction(.erase, entity: entityName, oneStatement: true) { connection -> Int in
            guard !keys.isEmpty, let array = table.keyArray(values) else { return 0 }
            // The call's notice goes in the statement (heard when it commits).
            if let notice = connection.takeNotice() {
                return try count(connection.rows(table.sql.deleteByKeysNotifying, [array] + notice))
            }
            return try count(connection.rows(table.sql.deleteByKeys, [array]))
        }
        if erased > 0 { store.commits.didCommit(.erased(Record.self, primaryKeys: keys)) }
        return erased
    }

    /// Erases the records that meet `predicate` (all when `nil`) and their
    /// children; returns how many records were erased.
    /// - Throws: ``StorageError``; nothing is erased then.
    @discardableResult
    public func erase(where predicate: Predicate<Record>?) throws -> Int {
        let plan = QueryPlan(Query(where: predicate))
        let condition = compiledCondition(plan)
        let exact = condition != nil && (plan.conditionIsExact || predicate == nil)
        let erased = try store.transaction(.erase, entity: entityName, oneStatement: exact) { connection -> Int in
            if let condition, plan.conditionIsExact || predicate == nil {
                // One statement, which carries the call's notice (heard when it commits).
                let notice = connection.takeNotice()
                let sql = table.sql.delete(
                    where: condition.sql == "TRUE" ? nil : condition.sql, notice: notice.map { _ in condition.binds.count + 1 })
                return try count(connection.rows(sql, condition.binds + (notice ?? [])))
            }
            var candidates = try candidates(condition, connection)
            if plan.needsCompleteRecords { try table.attachChildren(&candidates, connection) }
            var keys: [StoredValue] = []
            for record in candidates where try plan.matches(record) { keys.append(record.primaryKey.storedValue) }
            guard !keys.isEmpty, let array = table.keyArray(keys) else { return 0 }
            return try count(connection.rows(table.sql.deleteByKeys, [array]))
        }
        if erased > 0 { store.commits.didCommit(.erased(Record.self)) }
        return erased
    }

    // MARK: Helpers

    /// The plan's engine condition as SQL (`TRUE` without a predicate), or
    /// `nil` when some part has no faithful SQL form.
    private func compiledCondition(_ plan: QueryPlan<Record>) -> SQLCondition? {
        guard plan.query.predicate != nil, let expression = plan.engineCondition else {
            return SQLCondition(sql: "TRUE", binds: [])
        }
        return PredicateSQL.compile(expression, table.sql)
    }

    /// The rows the condition (a superset of the answer, or every row) finds, as records.
    private func candidates(_ condition: SQLCondition?, _ connection: ServerConnection) throws -> [Record] {
        let filter = condition.flatMap { $0.sql == "TRUE" ? nil : $0 }
        let sql = table.sql.select(where: filter?.sql, orderBy: [], limitParameter: nil)
        return try table.records(connection.rows(sql, filter?.binds ?? []))
    }

    private func count(_ rows: [PostgresRow]) throws -> Int {
        guard let row = rows.first else { return 0 }
        var reader = CellReader(row, entity: entityName)
        return Int(try reader.decode(Int64.self))
    }
}
