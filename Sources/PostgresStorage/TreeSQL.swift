import DAOCore

/// The statements that read records by key with their relations' children,
/// or write a batch of records with them, as one statement: for a table
/// whose children hold none, each child's foreign key of the parent key's
/// type. One statement is one transaction and one snapshot of its own, at
/// any isolation level, so it runs without `BEGIN` and `COMMIT` and the
/// call waits for the server once.
///
/// A read is a `UNION ALL` of the parents asked for and of each relation's
/// children of them, one result of rows as wide as all the tables together:
/// the first column says whose row it is (`0` a parent, `n` a child of the
/// `n`th relation), and a row holds that table's columns in its block, the
/// other blocks `NULL`. The children come in key order.
///
/// A write upserts the parents, and each relation's children as
/// ``TableSQL/replaceChildren`` does (the children of the parents that the
/// batch does not hold deleted, the rest upserted), each a data-modifying
/// `WITH`: the foreign keys are checked at the statement's end, and no row
/// is touched twice, as the batch holds each key once at every level. The
/// call's `pg_notify` is its final `SELECT`, so it is heard when the
/// statement commits.
///
/// The write's ``insert`` form, tried first when the call's records are
/// likely new (``InsertFirst``), inserts the parents and the children
/// plainly, with nothing deleted: a parent it inserts was not stored, and
/// the foreign keys hold no child of a parent that is not, so it had no
/// children to lose. A key the tables hold fails it whole (SQLSTATE 23505),
/// and the call sends ``write`` instead.
struct TreeSQL: Sendable {
    /// The parents keyed `$1`, with their children.
    let selectByKey: String
    /// The parents whose keys are in the array `$1`, with their children.
    let selectByKeys: String
    /// Per relation, the columns before its block (the kind and the
    /// parent's, then the blocks of the relations before it).
    let childColumns: [Int]
    /// The write of the parents' column arrays (`$1` onwards), then each
    /// relation's children's, in relation order.
    let write: String
    /// ``write``, with the call's `pg_notify` bound after the arrays.
    let writeNotifying: String
    /// The plain `INSERT`s of the parents and of their children, bound as ``write``.
    let insert: String
    /// ``insert``, with the call's `pg_notify` bound after the arrays.
    let insertNotifying: String

    init(_ parent: TableSQL, children: [TableSQL]) {
        let tables = [parent] + children
        let nulls = tables.map { table in table.types.map { "NULL::\(PostgresValue.catalogueType($0))" } }
        var starts: [Int] = []
        var next = 1
        for table in tables {
            starts.append(next)
            next += table.columns.count
        }
        childColumns = Array(starts.dropFirst())
        func select(_ condition: String) -> String {
            let arms = tables.indices.map { arm -> String in
                var list = ["\(arm)::bigint"]
                for block in tables.indices {
                    list += block == arm ? tables[block].columns : nulls[block]
                }
                let table = tables[arm]
                let column = arm == 0 ? table.columns[0] : table.columns[table.foreignKey ?? 0]
                return "SELECT \(list.joined(separator: ", ")) FROM \(table.qualified) WHERE \(column) \(condition)"
            }
            // Output positions are 1-based: the kind, then each child block's key.
            let order = ["1"] + starts.dropFirst().map { "\($0 + 1)" }
            return arms.joined(separator: " UNION ALL ") + " ORDER BY " + order.joined(separator: ", ")
        }
        selectByKey = select("= $1")
        selectByKeys = select("= ANY($1)")

        var parts = ["_dao_rows_0 AS (\(parent.upsertRows(firstParameter: 1)))"]
        var inserts = ["_dao_rows_0 AS (\(parent.insertRows(firstParameter: 1)))"]
        var parameter = parent.columns.count + 1
        for (index, child) in children.enumerated() {
            if let delete = child.deleteChildren(parents: 1, keys: parameter) {
                parts.append("_dao_gone_\(index + 1) AS (\(delete))")
            }
            parts.append("_dao_rows_\(index + 1) AS (\(child.upsertRows(firstParameter: parameter)))")
            inserts.append("_dao_rows_\(index + 1) AS (\(child.insertRows(firstParameter: parameter)))")
            parameter += child.columns.count
        }
        let notify = " SELECT pg_notify($\(parameter), $\(parameter + 1))"
        let with = "WITH " + parts.joined(separator: ", ")
        write = with + " SELECT 1"
        writeNotifying = with + notify
        let insertWith = "WITH " + inserts.joined(separator: ", ")
        insert = insertWith + " SELECT 1"
        insertNotifying = insertWith + notify
    }
}
