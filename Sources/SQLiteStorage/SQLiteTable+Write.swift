import DAOCore

/// Writes records of one table within one storage call: one upsert statement
/// for every row, and a writer per relation. Each record's fields are bound
/// by a ``ColumnRowWriter``: by the record's own `write(fields:)`, or for a
/// record that only conforms to `Codable`, by DAOCore's ``CodableFields``.
final class TableWriter<R: Record> {
    let upsert: Statement
    /// The plain `INSERT`, prepared on first use.
    private var insertStatement: Statement?
    private var updateStatement: Statement?
    private let table: SQLiteTable<R>
    private let connection: Connection
    /// The parameter of the foreign key of a relation's child (its value is
    /// kept in ``capturedParent``), or 0.
    let parentParameter: Int32
    /// The primary key bound for the record last bound by ``bind(_:to:)``,
    /// when it was an integer or text (`.null` otherwise), so the relation
    /// writers need not read it through a key path.
    private(set) var capturedKey: StoredValue = .null
    /// The value bound to ``parentParameter`` for that record, likewise.
    private(set) var capturedParent: StoredValue = .null
    /// Binds a record that only conforms to `Codable`; `nil` for a
    /// ``FieldwiseRecord``.
    private let codable: CodableFields?
    let children: [any ChildWriter<R>]
    /// Whether ``children`` has a writer: testing the existential array itself
    /// looks up its metadata (an extended existential over `R`) on every row,
    /// about 460 instructions a message on the workload's `persist`.
    let hasChildren: Bool
    /// Writes a record's fields by position, when `R` is a ``FieldwiseRecord``.
    /// A value with a witness rather than a closure: the closure made inside
    /// a generic function was called through four reabstraction thunks per
    /// record (about 77 instructions a message on the workload's `persist`).
    let writeFields: (any FieldBinder<R>)?
    /// Binds records in the record type's own module, when `R` is a
    /// ``FieldwiseRecord`` (``FieldwiseRecord/writeRows(_:to:_:)``).
    let rowsWriter: (any RowsWriter<R>)?

    init(_ table: SQLiteTable<R>, _ connection: Connection) throws {
        upsert = try connection.statement(table.upsertSQL)
        self.table = table
        self.connection = connection
        writeFields = table.fieldBinder
        rowsWriter = table.rowsWriter
        codable = table.fieldBinder == nil ? CodableFields(table.entity) : nil
        if let foreignKey = table.foreignKey, let column = table.layout.indexByName[foreignKey.column] {
            parentParameter = Int32(column + 1)
        } else {
            parentParameter = 0
        }
        children = try table.links.map { try $0.makeWriter(connection) }
        hasChildren = !children.isEmpty
    }

    /// Upserts `record`'s row, then makes its children exactly the ones it holds.
    func write(_ record: R) throws {
        try bind(record)
        try finish(record)
    }

    /// Binds `record`'s fields to the upsert: by position for a
    /// ``FieldwiseRecord``, through ``CodableFields`` otherwise.
    @inline(__always)
    func bind(_ record: R) throws {
        try bind(record, to: upsert)
    }

    /// Binds `record`'s fields to `statement` (the upsert or the plain insert).
    @inline(__always)
    func bind(_ record: R, to statement: Statement) throws {
        var writer = columnWriter(for: statement)
        capturedKey = .null
        capturedParent = .null
        if let writeFields {
            try writeFields.write(record, to: &writer)
        } else if let codable {
            try codable.write(record, to: &writer)
        }
        try writer.finish()
        capturedKey = writer.capturedKey
        capturedParent = writer.capturedParent
    }

    /// A ``ColumnRowWriter`` that binds to `statement` (the upsert, the
    /// plain insert or the update) through its ``StatementAccess``, which
    /// the statement keeps (the writer holds it unretained).
    @inline(__always)
    private func columnWriter(for statement: Statement) -> ColumnRowWriter {
        ColumnRowWriter(
            functions: sqliteBindFunctions, handle: statement.handle, count: Int32(table.layout.names.count),
            parentParameter: parentParameter, access: access(for: statement))
    }

    /// The ``StatementAccess`` of `statement`, made on first use.
    @inline(__always)
    private func access(for statement: Statement) -> StatementAccess {
        if let access = statement.columnAccess { return access }
        let access = StatementAccess(statement: statement, layout: table.layout)
        statement.columnAccess = access
        return access
    }

    /// The `UPDATE` of a row stored under the parent it names
    /// (``SQLiteTable/updateUnderParentSQL``), prepared on first use; `nil` when the
    /// table has no column it would set.
    func updateUnderParent() throws -> Statement? {
        if let updateStatement { return updateStatement }
        guard let sql = table.updateUnderParentSQL else { return nil }
        let statement = try connection.statement(sql)
        updateStatement = statement
        return statement
    }

    /// The plain `INSERT` statement.
    func insert() throws -> Statement {
        if let insertStatement { return insertStatement }
        let statement = try connection.statement(table.insertSQL)
        insertStatement = statement
        return statement
    }

    /// Calls `body` with a ``ColumnRowWriter`` that binds to `statement` (the
    /// upsert, the plain insert or the update), for ``rowsWriter``.
    func withColumnWriter(for statement: Statement, _ body: (inout ColumnRowWriter) throws -> Void) throws {
        var writer = columnWriter(for: statement)
        try body(&writer)
    }

    /// Runs the upsert bound by ``bind(_:)``, then writes the record's children.
    func finish(_ record: R) throws {
        try upsert.run()
        try finishChildren(record)
    }

    @inline(__always)
    func finishChildren(_ record: R) throws {
        guard hasChildren else { return }
        for child in children {
            try child.write(childrenOf: record)
        }
    }
}
