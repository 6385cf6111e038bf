import CSQLite
import DAOCore

/// Reads records of one table within one storage call.
struct TableReader<R: Record> {
    let table: SQLiteTable<R>
    let connection: Connection

    /// The rows of `statement` for ``SQLiteTable/rowsReader``: in runs by the
    /// integer in `groupColumn` (or -1), in key order or not.
    /// The table's ``SQLiteTable/columnAccess``, which lives as long as the table,
    /// makes the reader's errors.
    func columnRows(_ statement: Statement, groupColumn: Int32 = -1, inKeyOrder: Bool = false, expected: Int = 0)
        -> ColumnRows
    {
        let reader = ColumnRowReader(
            functions: sqliteColumnFunctions, handle: statement.handle, count: Int32(table.layout.names.count),
            access: table.columnAccess)
        return ColumnRows(reader: reader, groupColumn: groupColumn, inKeyOrder: inKeyOrder, expected: expected)
    }

    /// Runs `statement` (already bound) and decodes every row.
    func rows(_ statement: Statement) throws -> [R] {
        defer { statement.reset() }
        if let rowsReader = table.rowsReader {
            var rows = columnRows(statement)
            var records: [R] = []
            try rowsReader.read(&rows, into: &records)
            try statement.checkStep(rows.status)
            return records
        }
        var reader = RowReader(table, statement)
        var records = RecordBuffer<R>()
        while try statement.step() {
            try records.append { try reader.read(into: $0) }
        }
        return records.takeAll()
    }

    /// Runs `statement` (already bound), whose rows come ordered by the
    /// columns `sortColumns` (numeric or NULL), and decodes every row. `tied`
    /// is set when two neighbouring rows have equal values in all of those
    /// columns, or a value is neither a number nor NULL (then equality is not
    /// decided here): the rows' order among themselves is then SQLite's, and
    /// the caller must sort.
    func rows(_ statement: Statement, orderedBy sortColumns: [Int32], tied: inout Bool) throws -> [R] {
        defer { statement.reset() }
        if let rowsReader = table.rowsReader {
            var rows = columnRows(statement)
            rows.sortColumns = sortColumns
            var records: [R] = []
            try rowsReader.read(&rows, into: &records)
            try statement.checkStep(rows.status)
            if rows.tied { tied = true }
            return records
        }
        // Another record type's rows, decoded field by field, watched for
        // ties as the record type's own loop watches them.
        var reader = RowReader(table, statement)
        var records = RecordBuffer<R>()
        var watched = columnRows(statement)
        watched.sortColumns = sortColumns
        while try statement.step() {
            try records.append { try reader.read(into: $0) }
            if !watched.tied { watched.watchTies() }
        }
        if watched.tied { tied = true }
        return records.takeAll()
    }

    /// Runs `statement` (already bound), decodes every row, and hands each run
    /// of neighbouring rows with the same value in column `keyColumn` (a
    /// parent's key) to `body`, in the statement's order, as an array.
    ///
    /// Only a run's rows are held in the buffer at a time, and the buffer is
    /// reused for the next run: reading every row of a large table into one
    /// buffer first held it (its capacity up to twice the rows) next to the
    /// arrays handed out, moved it at each doubling, and held a key per row.
    ///
    /// `integerKeys` says that the parents' keys are integers: a row whose
    /// `keyColumn` holds anything else then belongs to no parent, and a
    /// ``SQLiteTable/rowsReader`` reads the runs.
    func runs(_ statement: Statement, keyColumn: Int32, integerKeys: Bool, _ body: (StoredValue, [R]) -> Void) throws {
        defer { statement.reset() }
        if let rowsReader = table.rowsReader, integerKeys {
            var rows = columnRows(statement, groupColumn: keyColumn)
            var capacity = 0
            while true {
                var run: [R] = []
                // A parent's run is usually as long as the one before.
                if capacity > 0 { run.reserveCapacity(capacity) }
                try rowsReader.read(&rows, into: &run)
                capacity = run.count
                if !run.isEmpty { body(.integer(rows.group), run) }
                guard rows.pending else { break }
            }
            try statement.checkStep(rows.status)
            return
        }
        var reader = RowReader(table, statement)
        var records = RecordBuffer<R>()
        let handle = statement.handle
        // The run's key: an integer while the keys are integers (the usual
        // case, compared without building a stored value per row).
        var integerKey: Int64 = 0
        var key: StoredValue? = nil
        var started = false
        func flush() {
            guard records.count > 0 else { return }
            body(key ?? .integer(integerKey), records.takeAllAndReuse())
        }
        while try statement.step() {
            if sqlite3_column_type(handle, keyColumn) == SQLITE_INTEGER {
                let value = sqlite3_column_int64(handle, keyColumn)
                if !started || key != nil || value != integerKey {
                    flush()
                    integerKey = value
                    key = nil
                }
            } else {
                let value = statement.storedValue(keyColumn)
                if !started || key != value {
                    flush()
                    key = value
                }
            }
            started = true
            try records.append { try reader.read(into: $0) }
        }
        flush()
    }

    /// Runs `statement` (already bound), decodes every row, and collects the
    /// value of column `keyColumn` of each row into `keys`. With `inKeyOrder`
    /// the rows (and `keys` with them) come back in primary-key order
    /// (``StoredValue``'s order, the engine's `BINARY` order for keys of one
    /// storage class) whatever order the statement yielded them in: sorting a
    /// parent's few children here is far cheaper than the temporary B-tree
    /// SQLite builds for `ORDER BY key` when the index it searches by the
    /// foreign key does not yield the key's order.
    ///
    /// With `keyColumn` `nil` no keys are collected (the rows of one parent).
    func rows(
        _ statement: Statement, keyColumn: Int32?, keys: inout [StoredValue], inKeyOrder: Bool = false
    ) throws -> RecordBuffer<R> {
        defer { statement.reset() }
        var reader = RowReader(table, statement)
        var records = RecordBuffer<R>()
        // The primary keys, as integers while every one is (the usual case:
        // no enum payload to build, compare and destroy per row), then as
        // stored values.
        var integerKeys: [Int64] = []
        var primaryKeys: [StoredValue] = []
        var allIntegers = true
        let first = keys.count
        let handle = statement.handle
        // An integer key is the table's rowid (`INTEGER PRIMARY KEY`), always
        // an integer: the value the record read from it is the row's key.
        let keyIsRowid = table.entity.primaryKeyField.type == .integer
        while try statement.step() {
            var rowKey: Int64?
            try records.append { rowKey = try reader.read(into: $0) }
            if let keyColumn { keys.append(statement.storedValue(keyColumn)) }
            guard inKeyOrder else { continue }
            // Column 0 is the primary key (``SQLiteTable/selectList`` is in field order).
            if allIntegers {
                if keyIsRowid, let rowKey {
                    integerKeys.append(rowKey)
                    continue
                }
                if sqlite3_column_type(handle, 0) == SQLITE_INTEGER {
                    integerKeys.append(sqlite3_column_int64(handle, 0))
                    continue
                }
                allIntegers = false
                primaryKeys = integerKeys.map { .integer($0) }
            }
            primaryKeys.append(statement.storedValue(0))
        }
        guard inKeyOrder, let order = allIntegers ? ascendingOrder(integerKeys) : keyOrder(primaryKeys) else { return records }
        records.reorder(order)
        if keyColumn != nil {
            let sortedKeys = order.map { keys[first + $0] }
            keys.replaceSubrange(first..., with: sortedKeys)
        }
        return records
    }
}

/// The positions of `values` in ascending order, or `nil` when they are in
/// order already (``StoredValue``'s order).
private func keyOrder(_ values: [StoredValue]) -> [Int]? {
    var index = 1
    while index < values.count, !(values[index] < values[index - 1]) { index += 1 }
    guard index < values.count else { return nil }
    // Integer keys (the usual case) sort as plain pairs, several times faster
    // than through StoredValue's comparison.
    var integers: [(key: Int64, position: Int)] = []
    integers.reserveCapacity(values.count)
    for position in values.indices {
        guard case .integer(let key) = values[position] else {
            return values.indices.sorted { values[$0] < values[$1] }
        }
        integers.append((key, position))
    }
    // The index SQLite searched by the foreign key orders a parent's rows by
    // its other columns, so the keys usually come as two ascending runs
    // (`index` is where the second starts): merging them is a single pass.
    var end = index + 1
    while end < integers.count, integers[end].key >= integers[end - 1].key { end += 1 }
    guard end == integers.count else {
        integers.sort { $0.key < $1.key }
        return integers.map(\.position)
    }
    var order: [Int] = []
    order.reserveCapacity(integers.count)
    var left = 0
    var right = index
    while left < index, right < integers.count {
        // `<=` keeps equal keys in their first order, as the stable sort does.
        if integers[left].key <= integers[right].key {
            order.append(integers[left].position)
            left += 1
        } else {
            order.append(integers[right].position)
            right += 1
        }
    }
    while left < index {
        order.append(integers[left].position)
        left += 1
    }
    while right < integers.count {
        order.append(integers[right].position)
        right += 1
    }
    return order
}

extension TableReader {
    /// Fills in every relation of `records` from the child tables. `all` says
    /// that `records` are all the rows of the table, so the children can be read
    /// in one scan without naming parents.
    func attachChildren(to records: inout [R], all: Bool) throws {
        guard table.hasLinks, !records.isEmpty else { return }
        try records.withUnsafeMutableBufferPointer { try attachChildren(to: $0, all: all) }
    }

    /// Fills in every relation of `records` in place (see the array version).
    func attachChildren(to records: UnsafeMutableBufferPointer<R>, all: Bool) throws {
        guard table.hasLinks, !records.isEmpty else { return }
        for link in table.links {
            try link.attach(to: records, all: all, connection)
        }
    }

    /// The record with this key (none or one), with its children.
    func read(key: R.PrimaryKey) throws -> [R] {
        let statement = try connection.statement(table.selectByKeySQL)
        try statement.bind(key.storedValue, at: 1)
        var records = try rows(statement)
        try attachChildren(to: &records, all: false)
        return records
    }

    /// The records with these keys (in key order, missing keys skipped), with
    /// their children.
    func read(keys: [R.PrimaryKey]) throws -> [R] {
        let statement = try connection.statement(table.selectByKeySQL)
        var records: [R] = []
        records.reserveCapacity(keys.count)
        for key in keys {
            try statement.bind(key.storedValue, at: 1)
            records.append(contentsOf: try rows(statement))
        }
        try attachChildren(to: &records, all: false)
        return records
    }
}

/// Reads the rows of one statement into records one at a time: by position
/// for a ``FieldwiseRecord``, through DAOCore's ``CodableFields`` for a record
/// that only conforms to `Codable`, both with a `ColumnRowReader`. For
/// many rows of a ``FieldwiseRecord`` at once, ``SQLiteTable/rowsReader`` reads
/// them in the record type's own module.
struct RowReader<R: Record> {
    private var reader: ColumnRowReader
    private let fieldReader: (any FieldSlotReader<R>)?
    private let codable: CodableFields?
    private let placeholders: [Any]
    /// Keeps the reader's error maker alive (the reader holds it unretained).
    private let table: SQLiteTable<R>

    init(_ table: SQLiteTable<R>, _ statement: Statement) {
        self.table = table
        reader = ColumnRowReader(
            functions: sqliteColumnFunctions, handle: statement.handle, count: Int32(table.layout.names.count),
            access: table.columnAccess)
        fieldReader = table.fieldReader
        codable = table.fieldReader == nil ? CodableFields(table.entity) : nil
        placeholders = table.relationPlaceholders
    }

    /// Reads the statement's current row into the uninitialized `slot`,
    /// which is left uninitialized when this throws. Returns the integer
    /// the record read from column 0 (its primary key) by position, if it
    /// read one, so a caller that needs the row's key need not ask SQLite
    /// for it again.
    @inline(__always) @discardableResult
    mutating func read(into slot: UnsafeMutablePointer<R>) throws -> Int64? {
        reader.rewind()
        if let fieldReader {
            try fieldReader.read(&reader, into: slot)
            return reader.keyRead
        }
        guard let codable else { return nil }
        slot.initialize(to: try codable.read(R.self, from: &reader, relations: placeholders))
        return nil
    }
}
