import DAOCore

/// How one entity is stored in SQLite: its table, the SQL the storage runs on
/// it, and its relations' child tables. Immutable, built from the entity's
/// declaration.
final class SQLiteTable<R: Record>: Sendable {
    let entity: Entity<R>
    /// The table's name (unquoted).
    let name: String
    let layout: RowLayout
    let links: [any ChildLink<R>]
    /// Whether ``links`` has a link: testing the existential array itself looks
    /// up its metadata (an extended existential over `R`).
    let hasLinks: Bool
    /// The foreign key this table holds to a parent, when it is a relation's child.
    let foreignKey: ForeignKey?
    /// Writes a record's fields by position, when `R` is a ``FieldwiseRecord``
    /// (made once per table: finding it casts the binder's type).
    let fieldBinder: (any FieldBinder<R>)?
    /// Reads rows into records in the record type's own module, when `R` is
    /// a ``FieldwiseRecord`` (``FieldwiseRecord/readRows(_:into:)``; made
    /// once per table, as ``fieldBinder``).
    let rowsReader: (any RowsReader<R>)?
    /// Binds records in the record type's own module, likewise
    /// (``FieldwiseRecord/writeRows(_:to:_:)``).
    let rowsWriter: (any RowsWriter<R>)?
    /// Reads a row into a record in place, by position when `R` is a
    /// ``FieldwiseRecord`` (made once per table, as ``fieldBinder``).
    let fieldReader: (any FieldSlotReader<R>)?
    /// Makes the errors of the `ColumnRowReader`s over this table's rows.
    let columnAccess: ColumnAccess
    /// What the views of this table's rows know of its fields.
    let viewLayout: ViewLayout
    /// An empty children array (`[Child]()`) per relation, in declaration
    /// order: what a `Codable` record's relation keys read before the
    /// children are attached (``CodableFields/read(_:from:relations:)``).
    let relationPlaceholders: [any Sendable]

    /// The quoted column list, in field order.
    let selectList: String
    let upsertSQL: SQLText
    /// A plain `INSERT` of one row, for rows known not to be stored yet.
    let insertSQL: SQLText
    /// For a relation's child: `UPDATE … SET <other columns> WHERE key = ?1
    /// AND fk = ?n`, for a row known to be stored under the parent it names;
    /// `nil` when the table has no foreign key or no other column.
    let updateUnderParentSQL: String?
    let selectAllSQL: SQLText
    let selectByKeySQL: SQLText
    let deleteByKeySQL: SQLText
    /// The `DELETE`s of every row below the row whose key is `?1`, deepest
    /// first (``ChildLink/deletes(ofChildrenOf:)``), run before its own
    /// ``deleteByKeySQL``.
    let deleteDescendantsSQL: [SQLText]
    /// `SELECT count(*)` of every row.
    let countSQL: SQLText
    /// `DELETE` of every row.
    let deleteAllSQL: SQLText

    /// The names of this table and of every table below it through relations.
    let treeNames: [String]

    /// Set when a relation leads back to an entity that owns this one: such a
    /// table cannot be set up (``ensureSchema(_:foreignKey:)`` throws this).
    let cycle: String?

    /// Describes how `entity` is stored. `owners` are the entities whose
    /// relations lead to this one, to stop at a relation that loops back.
    init(_ entity: Entity<R>, foreignKey: ForeignKey? = nil, owners: [String] = []) {
        self.entity = entity
        self.name = entity.name
        self.foreignKey = foreignKey
        let links: [any ChildLink<R>]
        if owners.contains(entity.name) {
            cycle = "its relations lead back to it through \((owners + [entity.name]).joined(separator: " → "))"
            links = []
        } else {
            links = entity.relations.map {
                makeLink($0, parentTable: entity.name, parentKey: entity.primaryKeyField.name, owners: owners + [entity.name])
            }
            cycle = links.lazy.compactMap(\.cycle).first
        }
        self.links = links
        hasLinks = !links.isEmpty
        treeNames = [entity.name] + links.flatMap(\.tableNames)
        deleteDescendantsSQL = Self.descendantDeletes(links, ofKeys: "?1").map(SQLText.init(sql:))
        fieldBinder = (R.self as? any FieldwiseRecord.Type).map { makeFieldBinder($0, for: R.self) }
        fieldReader = (R.self as? any FieldwiseRecord.Type).flatMap { makeFieldReader($0, for: R.self) }
        rowsReader = (R.self as? any FieldwiseRecord.Type).flatMap { makeRowsReader($0, for: R.self) }
        rowsWriter = (R.self as? any FieldwiseRecord.Type).flatMap { makeRowsWriter($0, for: R.self) }
        relationPlaceholders = links.map(\.placeholder)
        let names = entity.fields.map(\.name)
        self.layout = RowLayout(entityName: entity.name, names: names, optional: entity.fields.map(\.isOptional))
        columnAccess = LayoutAccess(layout: layout)
        viewLayout = ViewLayout(entity)

        let table = quoted(entity.name)
        let key = quoted(names[0])
        let columns = names.map(quoted)
        selectList = columns.joined(separator: ", ")
        let values = (1...columns.count).map { "?\($0)" }.joined(separator: ", ")
        let updates = columns.dropFirst().map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        insertSQL = SQLText(sql: "INSERT INTO \(table) (\(selectList)) VALUES (\(values))")
        upsertSQL = SQLText(
            sql: "INSERT INTO \(table) (\(selectList)) VALUES (\(values)) ON CONFLICT (\(key)) "
                + (updates.isEmpty ? "DO NOTHING" : "DO UPDATE SET \(updates)"))
        if let foreignKey, let fkIndex = names.firstIndex(of: foreignKey.column), fkIndex != 0 {
            let assignments = names.indices.filter { $0 != 0 && $0 != fkIndex }
                .map { "\(columns[$0]) = ?\($0 + 1)" }
            updateUnderParentSQL =
                assignments.isEmpty
                ? nil
                : "UPDATE \(table) SET \(assignments.joined(separator: ", ")) WHERE \(key) = ?1 AND \(columns[fkIndex]) = ?\(fkIndex + 1)"
        } else {
            updateUnderParentSQL = nil
        }
        selectAllSQL = SQLText(sql: "SELECT \(selectList) FROM \(table) ORDER BY \(key)")
        selectByKeySQL = SQLText(sql: "SELECT \(selectList) FROM \(table) WHERE \(key) = ?1")
        deleteByKeySQL = SQLText(sql: "DELETE FROM \(table) WHERE \(key) = ?1")
        countSQL = SQLText(sql: "SELECT count(*) FROM \(table)")
        deleteAllSQL = SQLText(sql: "DELETE FROM \(table)")
    }

    /// Whether emptying ``treeNames`` with foreign keys off could do what
    /// emptying them with foreign keys enforced would not, read from the
    /// stored schema (another program's tables and triggers count): a table
    /// outside them has a foreign key to one of them, or one of them has a
    /// trigger (which would run with foreign keys off; SQLite deletes row
    /// by row from a table with triggers anyway).
    func needsForeignKeysToEmpty(_ connection: Connection) throws -> Bool {
        let triggers = try connection.statement(triggerTablesSQL)
        do {
            defer { triggers.reset() }
            while try triggers.step() {
                if let table = triggers.text(0), names(treeNames, contain: table) { return true }
            }
        }
        let keys = try connection.statement(foreignKeysSQL)
        defer { keys.reset() }
        while try keys.step() {
            guard let child = keys.text(0), let parent = keys.text(1) else { continue }
            if names(treeNames, contain: parent) && !names(treeNames, contain: child) { return true }
        }
        return false
    }

    /// `SELECT count(*) … WHERE condition`.
    func countSQL(where condition: String) -> String { countSQL.sql + " WHERE " + condition }

    /// `DELETE … WHERE condition`.
    func deleteSQL(where condition: String) -> String { deleteAllSQL.sql + " WHERE " + condition }

    /// The `DELETE`s of every row below the rows that meet `condition` (SQL
    /// over this table's own columns), deepest first, each with the
    /// condition once (so the same parameters), run before
    /// ``deleteSQL(where:)``: the cascade then finds nothing. A condition
    /// over the children would change as they are deleted; conditions
    /// compiled to SQL never read another table.
    func deleteDescendantsSQL(where condition: String) -> [String] {
        Self.descendantDeletes(
            links, ofKeys: "SELECT \(quoted(entity.primaryKeyField.name)) FROM \(quoted(name)) WHERE \(condition)")
    }

    /// The `DELETE`s below the rows whose keys `keys` gives (a parameter or a
    /// `SELECT`), through `links`, deepest first.
    private static func descendantDeletes(_ links: [any ChildLink<R>], ofKeys keys: String) -> [String] {
        links.flatMap { $0.deletes(ofChildrenOf: keys) }
    }

    /// `SELECT … WHERE condition ORDER BY terms, key LIMIT ?` (each part
    /// optional). Without `keyLast` the primary key is left out of the
    /// `ORDER BY` (the caller orders rows with equal terms itself).
    func selectSQL(where condition: String?, orderBy terms: [String], limit: Bool, keyLast: Bool = true) -> String {
        var sql = "SELECT \(selectList) FROM \(quoted(name))"
        if let condition { sql += " WHERE \(condition)" }
        let terms = keyLast ? terms + [quoted(entity.primaryKeyField.name)] : terms
        if !terms.isEmpty { sql += " ORDER BY " + terms.joined(separator: ", ") }
        if limit { sql += " LIMIT ?" }
        return sql
    }
}

/// Builds the link of a relation, opening its existential to reach the child type.
private func makeLink<Rel: ToManyRelation>(_ relation: Rel, parentTable: String, parentKey: String, owners: [String])
    -> any ChildLink<Rel.Parent>
{
    RelationLink(
        relation, foreignKey: ForeignKey(column: relation.foreignKeyField, parentTable: parentTable, parentColumn: parentKey),
        owners: owners)
}

// MARK: - Fieldwise access (FieldwiseAccess.swift), found once per table

/// The ``FieldBinder`` of `F`, which is `R` (the caller found `F` by casting
/// `R.self`), so a record converts to it without a cast per row.
private func makeFieldBinder<F: FieldwiseRecord, R>(_ type: F.Type, for record: R.Type) -> any FieldBinder<R> {
    // `F` is `R`: the cast succeeds, and the binder then takes each record as
    // an `F` without converting (and so copying) it.
    if let binder = FieldwiseBinder<F>() as? any FieldBinder<R> { return binder }
    return ConvertingBinder<R, F>()
}

/// The ``FieldSlotReader`` of `F`, which is `R` (the caller found `F` by
/// casting `R.self`); `nil` if it were not.
private func makeFieldReader<F: FieldwiseRecord, R>(_ type: F.Type, for record: R.Type) -> (any FieldSlotReader<R>)? {
    FieldwiseSlotReader<F>() as? any FieldSlotReader<R>
}

/// The ``RowsReader`` of `F`, which is `R` (the caller found `F` by casting
/// `R.self`); `nil` if it were not.
private func makeRowsReader<F: FieldwiseRecord, R>(_ type: F.Type, for record: R.Type) -> (any RowsReader<R>)? {
    FieldwiseRowsReader<F>() as? any RowsReader<R>
}

/// The ``RowsWriter`` of `F`, which is `R`; `nil` if it were not.
private func makeRowsWriter<F: FieldwiseRecord, R>(_ type: F.Type, for record: R.Type) -> (any RowsWriter<R>)? {
    FieldwiseRowsWriter<F>() as? any RowsWriter<R>
}

// MARK: - The stored schema's foreign keys and triggers

/// Every foreign key of the main database: the table holding it and the
/// table it refers to.
private let foreignKeysSQL = SQLText(
    sql: "SELECT m.name, f.\"table\" FROM sqlite_master AS m JOIN pragma_foreign_key_list(m.name) AS f"
        + " WHERE m.type = 'table'")

/// The table of every trigger of the main database.
private let triggerTablesSQL = SQLText(sql: "SELECT tbl_name FROM sqlite_master WHERE type = 'trigger'")

/// Whether `names` holds `name` as SQLite compares table names
/// (``EntityName/sameTable(_:_:)``).
func names(_ names: [String], contain name: String) -> Bool {
    names.contains { EntityName.sameTable($0, name) }
}
