import DAOCore
import Foundation

/// `name` as an SQL identifier: quoted, and shortened to PostgreSQL's 63
/// bytes when longer (its first bytes, then a hash of the whole name, so
/// two long names never become one).
func identifier(_ name: String) -> String {
    var name = name
    if name.utf8.count > 63 {
        let hash = fnv1a(name)
        var prefix = ""
        for scalar in name.unicodeScalars {
            if prefix.utf8.count + String(scalar).utf8.count > 46 { break }
            prefix.unicodeScalars.append(scalar)
        }
        name = prefix + "_" + String(hash, radix: 16)
    }
    guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
    return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

/// FNV-1a of `text`'s UTF-8 bytes: fixed across runs and processes.
func fnv1a(_ text: String) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return hash
}

/// The name of a table, shortened as ``identifier(_:)`` does, unquoted.
func tableName(_ name: String) -> String {
    let quoted = identifier(name)
    return String(quoted.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"")
}

/// The SQL of one entity's table, made from its ``EntitySchema`` once per
/// storage: the statements every call runs, by their text (each connection
/// prepares a text once).
struct TableSQL: Sendable {
    let schema: EntitySchema
    /// The schema (PostgreSQL's namespace) the table is in, unquoted.
    let namespace: String
    /// `"namespace"."table"`.
    let qualified: String
    /// The quoted columns, in field order (the primary key first).
    let columns: [String]
    let types: [FieldType]
    /// The child's foreign-key column to its holder, when the entity is held
    /// by a relation (its field's position).
    let foreignKey: Int?

    let selectList: String
    /// The upsert of a batch of rows: one array a column, `unnest`ed.
    let upsertRows: String
    /// For a child table: the upsert of a batch of rows as ``upsertRows``,
    /// which first deletes the rows of the parents bound as `$n+1` that the
    /// batch does not hold (keys not in `$1`); `nil` for an entity no
    /// relation holds.
    let replaceChildren: String?
    /// ``upsertRows`` with the call's `pg_notify` (its channel and token
    /// bound after the arrays) as its final `SELECT`: the call's one
    /// statement, heard when it commits.
    let upsertRowsNotifying: String
    /// The plain `INSERT` of a batch of rows, bound as ``upsertRows``: the
    /// call's one statement when it tries inserting first
    /// (``InsertFirst``), which fails (SQLSTATE 23505) on a key the table holds.
    let insertRows: String
    /// ``insertRows`` with the call's `pg_notify`, as ``upsertRowsNotifying``.
    let insertRowsNotifying: String
    let selectByKey: String
    let selectByKeys: String
    let deleteByKeys: String
    /// ``deleteByKeys`` with the call's `pg_notify` bound as `$2`, `$3`.
    let deleteByKeysNotifying: String
    let selectByParents: String?
    let countAll: String

    init(_ schema: EntitySchema, namespace: String, foreignKeyField: String?) {
        self.schema = schema
        self.namespace = namespace
        qualified = identifier(namespace) + "." + identifier(schema.entity)
        columns = schema.fields.map { identifier($0.name) }
        types = schema.fields.map(\.type)
        foreignKey = foreignKeyField.flatMap { name in schema.fields.firstIndex { $0.name == name } }
        let key = columns[0]
        selectList = columns.joined(separator: ", ")
        let upsertRows = Self.upsert(qualified, columns: columns, types: types, firstParameter: 1)
        self.upsertRows = upsertRows
        upsertRowsNotifying =
            "WITH _dao_rows AS (\(upsertRows)) SELECT pg_notify($\(columns.count + 1), $\(columns.count + 2))"
        let insertRows = Self.insert(qualified, columns: columns, types: types, firstParameter: 1)
        self.insertRows = insertRows
        insertRowsNotifying =
            "WITH _dao_rows AS (\(insertRows)) SELECT pg_notify($\(columns.count + 1), $\(columns.count + 2))"
        selectByKey = "SELECT \(selectList) FROM \(qualified) WHERE \(key) = $1"
        selectByKeys = "SELECT \(selectList) FROM \(qualified) WHERE \(key) = ANY($1)"
        deleteByKeys = Self.deletion(qualified, where: "\(key) = ANY($1)", notice: nil)
        deleteByKeysNotifying = Self.deletion(qualified, where: "\(key) = ANY($1)", notice: 2)
        countAll = "SELECT count(*) FROM \(qualified)"
        if let foreignKey {
            let column = columns[foreignKey]
            selectByParents = "SELECT \(selectList) FROM \(qualified) WHERE \(column) = ANY($1) ORDER BY \(key)"
            // The rows the batch does not hold, deleted in the same statement:
            // they are never rows it upserts, so no row is touched twice.
            replaceChildren =
                "WITH gone AS ("
                + Self.childDeletion(qualified, columns: columns, types: types, foreignKey: foreignKey,
                                     parents: columns.count + 1, keys: 1)
                + ") " + upsertRows
        } else {
            selectByParents = nil
            replaceChildren = nil
        }
    }

    /// The upsert of a batch of rows of `columns`, one array a column bound
    /// as `$firstParameter` onwards, `unnest`ed.
    private static func upsert(_ qualified: String, columns: [String], types: [FieldType], firstParameter: Int) -> String {
        let key = columns[0]
        let others = columns.dropFirst()
        let updates =
            others.isEmpty ? "\(key) = EXCLUDED.\(key)" : others.map { "\($0) = EXCLUDED.\($0)" }.joined(separator: ", ")
        return insert(qualified, columns: columns, types: types, firstParameter: firstParameter)
            + " ON CONFLICT (\(key)) DO UPDATE SET \(updates)"
    }

    /// The plain `INSERT` of a batch of rows of `columns`, one array a
    /// column bound as `$firstParameter` onwards, `unnest`ed.
    private static func insert(_ qualified: String, columns: [String], types: [FieldType], firstParameter: Int) -> String {
        let arrays = types.enumerated().map { "$\($0 + firstParameter)::\(PostgresValue.sqlArrayType($1))" }
            .joined(separator: ", ")
        return "INSERT INTO \(qualified) (\(columns.joined(separator: ", "))) SELECT * FROM unnest(\(arrays))"
    }

    /// The plain `INSERT` of a batch of rows as ``insertRows``, its arrays
    /// bound as `$firstParameter` onwards.
    func insertRows(firstParameter: Int) -> String {
        Self.insert(qualified, columns: columns, types: types, firstParameter: firstParameter)
    }

    /// The upsert of a batch of rows as ``upsertRows``, its arrays bound as
    /// `$firstParameter` onwards.
    func upsertRows(firstParameter: Int) -> String {
        Self.upsert(qualified, columns: columns, types: types, firstParameter: firstParameter)
    }

    /// For a child table: the deletion of the rows of the parents bound as
    /// `$parents` (an array of the foreign key's type) whose keys are not in
    /// `$keys` (an array of the key's type); `nil` for an entity no relation holds.
    func deleteChildren(parents: Int, keys: Int) -> String? {
        foreignKey.map { Self.childDeletion(qualified, columns: columns, types: types, foreignKey: $0, parents: parents, keys: keys) }
    }

    /// The deletion of the rows whose foreign key (`columns[foreignKey]`)
    /// is in the array `$parents` and whose key is not in the array `$keys`.
    ///
    /// The rows are found through an index on the foreign key, and the keys
    /// the batch holds are left out by an anti-join on them (`NOT EXISTS`,
    /// which the server runs as a hash anti-join): a test of each row
    /// against the whole array (`<> ALL`) would compare every child of the
    /// parents with every key of the batch.
    private static func childDeletion(
        _ qualified: String, columns: [String], types: [FieldType], foreignKey: Int, parents: Int, keys: Int
    ) -> String {
        "DELETE FROM \(qualified) WHERE \(columns[foreignKey]) = ANY($\(parents)::\(PostgresValue.sqlArrayType(types[foreignKey]))) AND NOT EXISTS (SELECT FROM unnest($\(keys)::\(PostgresValue.sqlArrayType(types[0]))) AS _dao_kept(key) WHERE _dao_kept.key = \(qualified).\(columns[0]))"
    }

    /// `SELECT` of the rows where `condition` holds, in `order`, with a
    /// `LIMIT $n` when `limitParameter` is given.
    func select(where condition: String?, orderBy order: [String], limitParameter: Int?) -> String {
        var sql = "SELECT \(selectList) FROM \(qualified)"
        if let condition { sql += " WHERE \(condition)" }
        sql += " ORDER BY " + (order + ["\(columns[0]) ASC"]).joined(separator: ", ")
        if let limitParameter { sql += " LIMIT $\(limitParameter)" }
        return sql
    }

    func count(where condition: String) -> String {
        "SELECT count(*) FROM \(qualified) WHERE \(condition)"
    }

    /// The deletion of the rows where `condition` holds, answering their
    /// count; with the call's `pg_notify` bound as `$notice` and the one
    /// after it when `notice` is given.
    func delete(where condition: String?, notice: Int? = nil) -> String {
        Self.deletion(qualified, where: condition, notice: notice)
    }

    private static func deletion(_ qualified: String, where condition: String?, notice: Int?) -> String {
        let filter = condition.map { " WHERE \($0)" } ?? ""
        let notify = notice.map { ", pg_notify($\($0), $\($0 + 1))" } ?? ""
        return "WITH erased AS (DELETE FROM \(qualified)\(filter) RETURNING 1) SELECT count(*)\(notify) FROM erased"
    }

    // MARK: DDL

    /// `CREATE TABLE` with typed columns, the primary key, and the foreign
    /// key to the holder's table (cascading deletes and key changes).
    func createTable(holder: (table: String, key: String)?) -> String {
        var parts = zip(schema.fields, columns).map { field, column in
            "\(column) \(PostgresValue.columnType(field.type))\(field.optional ? "" : " NOT NULL")"
        }
        parts.append("PRIMARY KEY (\(columns[0]))")
        if let holder, let foreignKey {
            parts.append(
                "CONSTRAINT \(constraintName) FOREIGN KEY (\(columns[foreignKey])) REFERENCES \(holder.table) (\(holder.key)) ON DELETE CASCADE ON UPDATE CASCADE"
            )
        }
        return "CREATE TABLE \(qualified) (\(parts.joined(separator: ", ")))"
    }

    var constraintName: String { identifier("_dao_fk_" + schema.entity) }

    /// The quoted name of the declared index `index` of `entity`'s table.
    static func indexName(_ index: String, of entity: String) -> String {
        identifier("_dao_ix_" + entity + "_" + index)
    }

    /// The quoted name of the index on `entity`'s foreign-key column `field`.
    static func foreignKeyIndexName(_ field: String, of entity: String) -> String {
        identifier("_dao_fk_" + entity + "_" + field)
    }

    func addForeignKey(holder: (table: String, key: String)) -> String? {
        guard let foreignKey else { return nil }
        return "ALTER TABLE \(qualified) ADD CONSTRAINT \(constraintName) FOREIGN KEY (\(columns[foreignKey])) REFERENCES \(holder.table) (\(holder.key)) ON DELETE CASCADE ON UPDATE CASCADE"
    }

    /// `CREATE INDEX` of the declared index `index`.
    func createIndex(_ index: EntitySchema.IndexSchema) -> String {
        let fields = index.fields.map { name in identifier(name) }.joined(separator: ", ")
        return "CREATE INDEX \(Self.indexName(index.name, of: schema.entity)) ON \(qualified) (\(fields))"
    }

    /// The declared indexes, and ``createForeignKeyIndex`` when there is one.
    func createIndexes() -> [String] {
        schema.indexes.map(createIndex) + (createForeignKeyIndex.map { [$0] } ?? [])
    }

    /// Whether a declared index starts with the foreign key's column: it
    /// finds a parent's children (the reads of children, the deletion of
    /// those a parent no longer holds, the cascades), so the foreign key
    /// needs no index of its own, which every write would keep up too.
    var declaredIndexLeadsWithForeignKey: Bool {
        guard let foreignKey else { return false }
        let field = schema.fields[foreignKey].name
        return schema.indexes.contains { $0.fields.first == field }
    }

    /// The index on the foreign key (children by parent) when the table has
    /// one and no declared index starts with its column
    /// (``declaredIndexLeadsWithForeignKey``); `nil` otherwise.
    var createForeignKeyIndex: String? {
        guard let foreignKey, !declaredIndexLeadsWithForeignKey else { return nil }
        return "CREATE INDEX IF NOT EXISTS \(foreignKeyIndexName) ON \(qualified) (\(columns[foreignKey]))"
    }

    /// After a migration changed the declared indexes or fields: the
    /// statement that gives the foreign key its own index when no declared
    /// index serves it any more, or drops that index when one now does;
    /// `nil` for a table without a foreign key.
    var reconcileForeignKeyIndex: String? {
        guard foreignKey != nil else { return nil }
        if let create = createForeignKeyIndex { return create }
        return "DROP INDEX IF EXISTS \(identifier(namespace)).\(foreignKeyIndexName)"
    }

    /// The quoted name of the index on the foreign key (``foreignKeyIndexName(_:of:)``).
    private var foreignKeyIndexName: String {
        Self.foreignKeyIndexName(foreignKey.map { schema.fields[$0].name } ?? "", of: schema.entity)
    }
}
