import CSQLite
import DAOCore

/// One column of a row copied out of a statement (``ViewRun``), read by
/// ``copiedRowFunctions`` as SQLite's `sqlite3_value_…` functions read the
/// column's value: the same storage class, number, text or bytes.
struct CopiedValue {
    var type: Int32
    /// The number of bytes of a text or blob.
    var count: Int32
    /// An integer's bits, or a real's.
    var word: UInt64
    /// A text's or blob's bytes in the run's memory (kept up to date when
    /// they move); `nil` for none.
    var bytes: UnsafeRawPointer?

    /// The value as an integer (`sqlite3_value_int64`).
    var integer: Int64 {
        type == SQLITE_FLOAT ? Int64(exactly: Double(bitPattern: word).rounded(.towardZero)) ?? 0 : Int64(bitPattern: word)
    }

    /// The value as a double (`sqlite3_value_double`).
    var real: Double {
        type == SQLITE_INTEGER ? Double(Int64(bitPattern: word)) : Double(bitPattern: word)
    }
}

/// The copied value of `column` in the copied row `handle`.
private func copiedValue(_ handle: OpaquePointer?, _ column: Int32) -> UnsafeMutablePointer<CopiedValue>? {
    handle.map { UnsafeMutablePointer<CopiedValue>($0) + Int(column) }
}

private func copiedValue(_ value: OpaquePointer?) -> UnsafeMutablePointer<CopiedValue>? {
    value.map { UnsafeMutablePointer<CopiedValue>($0) }
}

/// `ColumnFunctions` over a copied row: the handle is the row's first
/// ``CopiedValue`` and a value is one of them. No statement steps here.
let copiedRowFunctions = ColumnFunctions(
    step: { _ in SQLITE_DONE },
    int64: { handle, column in copiedValue(handle, column)?.pointee.integer ?? 0 },
    double: { handle, column in copiedValue(handle, column)?.pointee.real ?? 0 },
    type: { handle, column in copiedValue(handle, column)?.pointee.type ?? SQLITE_NULL },
    text: { handle, column in
        copiedValue(handle, column)?.pointee.bytes?.assumingMemoryBound(to: UInt8.self)
    },
    blob: { handle, column in copiedValue(handle, column)?.pointee.bytes },
    bytes: { handle, column in copiedValue(handle, column)?.pointee.count ?? 0 },
    value: { handle, column in copiedValue(handle, column).map { OpaquePointer($0) } },
    valueType: { value in copiedValue(value)?.pointee.type ?? SQLITE_NULL },
    valueInt64: { value in copiedValue(value)?.pointee.integer ?? 0 },
    valueDouble: { value in copiedValue(value)?.pointee.real ?? 0 },
    valueText: { value in copiedValue(value)?.pointee.bytes?.assumingMemoryBound(to: UInt8.self) },
    valueBlob: { value in copiedValue(value)?.pointee.bytes },
    valueBytes: { value in copiedValue(value)?.pointee.count ?? 0 },
    rowCode: SQLITE_ROW, nullType: SQLITE_NULL, integerType: SQLITE_INTEGER, realType: SQLITE_FLOAT,
    textType: SQLITE_TEXT, blobType: SQLITE_BLOB)

/// A run of rows with equal values in a view read's sort columns, copied
/// out of the statement as it steps (an integer primary key in column 0),
/// then lent in key order: the order ``SQLiteRecordStorage/read(_:)-(Query<Record>)``
/// gives rows of equal sort values, which a lent view cannot be moved to
/// afterwards. Copying the rows costs less than the temporary B-tree
/// SQLite builds to order them by key when the index it walks gives the
/// order of the sort values only.
///
/// Every row is copied, as whether the next row ties with it is known only
/// once the statement has stepped past it. Only one run is held at a time.
struct ViewRun: ~Copyable {
    private let columns: Int
    private var values: UnsafeMutablePointer<CopiedValue>
    private var rowCapacity: Int
    /// The number of rows held.
    private(set) var rows = 0
    private var bytes: UnsafeMutableRawPointer
    private var byteCapacity: Int
    private var byteCount = 0
    /// The number of values copied (the rows', and the row being copied's).
    private var filled = 0
    /// Whether ``values`` and ``bytes`` were allocated here (on growth)
    /// rather than handed to ``init(columns:values:bytes:)``.
    private var ownsValues = false
    private var ownsBytes = false

    /// A run of rows of `columns` columns (at least one), held in `values`
    /// (room for `rowCapacity` rows, at least one) and `bytes` (room for
    /// `byteCapacity` bytes, at least one) until they need more room; freed
    /// here when `owned`.
    private init(
        columns: Int, values: UnsafeMutablePointer<CopiedValue>, rowCapacity: Int, bytes: UnsafeMutableRawPointer,
        byteCapacity: Int, owned: Bool
    ) {
        self.columns = columns
        self.values = values
        self.rowCapacity = rowCapacity
        self.bytes = bytes
        self.byteCapacity = byteCapacity
        ownsValues = owned
        ownsBytes = owned
    }

    /// Runs `body` with a run of rows of `columns` columns, held on the
    /// stack while they fit (16 rows, 4 KiB of text and bytes).
    static func withRun<T>(columns: Int, _ body: (inout ViewRun) throws -> T) rethrows -> T {
        let columns = max(columns, 1)
        let rows = 16
        let byteCount = 4096
        return try withUnsafeTemporaryAllocation(of: CopiedValue.self, capacity: rows * columns) { values in
            try withUnsafeTemporaryAllocation(byteCount: byteCount, alignment: 8) { bytes in
                guard let valueStart = values.baseAddress, let byteStart = bytes.baseAddress else {
                    // Not expected (both have room): memory of the same sizes of the run's own.
                    var run = ViewRun(
                        columns: columns, values: .allocate(capacity: rows * columns), rowCapacity: rows,
                        bytes: .allocate(byteCount: byteCount, alignment: 8), byteCapacity: byteCount, owned: true)
                    return try body(&run)
                }
                var run = ViewRun(
                    columns: columns, values: valueStart, rowCapacity: rows, bytes: byteStart, byteCapacity: byteCount,
                    owned: false)
                return try body(&run)
            }
        }
    }

    deinit {
        if ownsValues { values.deallocate() }
        if ownsBytes { bytes.deallocate() }
    }

    /// Copies the statement's current row (`handle`) into the run.
    mutating func append(_ handle: OpaquePointer) {
        if rows == rowCapacity {
            let grown = UnsafeMutablePointer<CopiedValue>.allocate(capacity: rowCapacity * 2 * columns)
            grown.moveInitialize(from: values, count: rows * columns)
            if ownsValues { values.deallocate() }
            values = grown
            ownsValues = true
            rowCapacity *= 2
        }
        let row = values + rows * columns
        for column in 0..<columns {
            // One call into the engine per column (`sqlite3_column_value`),
            // the value then read without finding the column again.
            let cell = sqlite3_column_value(handle, Int32(column))
            let type = sqlite3_value_type(cell)
            var value = CopiedValue(type: type, count: 0, word: 0, bytes: nil)
            if type == SQLITE_INTEGER {
                value.word = UInt64(bitPattern: sqlite3_value_int64(cell))
            } else if type == SQLITE_FLOAT {
                value.word = sqlite3_value_double(cell).bitPattern
            } else if type == SQLITE_TEXT {
                // No text (SQLite out of memory) reads as a text without
                // bytes, which a view reports as a damaged column.
                if let text = sqlite3_value_text(cell) {
                    value.count = sqlite3_value_bytes(cell)
                    value.bytes = copy(UnsafeRawPointer(text), count: Int(value.count))
                }
            } else if type == SQLITE_BLOB {
                let blob = sqlite3_value_blob(cell)
                let count = sqlite3_value_bytes(cell)
                if let blob, count > 0 {
                    value.count = count
                    value.bytes = copy(blob, count: Int(count))
                }
            }
            (row + column).initialize(to: value)
            filled += 1
        }
        rows += 1
    }

    /// Copies `count` bytes into the run's memory; returns where they are.
    private mutating func copy(_ source: UnsafeRawPointer, count: Int) -> UnsafeRawPointer {
        if byteCount + count > byteCapacity {
            var capacity = byteCapacity * 2
            while byteCount + count > capacity { capacity *= 2 }
            let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
            grown.copyMemory(from: bytes, byteCount: byteCount)
            // The bytes of the values copied so far moved with them.
            let old = UnsafeRawPointer(bytes)
            for index in 0..<filled {
                if let held = values[index].bytes {
                    values[index].bytes = UnsafeRawPointer(grown + old.distance(to: held))
                }
            }
            if ownsBytes { bytes.deallocate() }
            bytes = grown
            ownsBytes = true
            byteCapacity = capacity
        }
        let start = bytes + byteCount
        start.copyMemory(from: source, byteCount: count)
        byteCount += count
        return UnsafeRawPointer(start)
    }

    /// Whether the statement's current row (`handle`) has the values of the
    /// run's rows in `sortColumns` (numeric fields), as a sort compares
    /// them: NULL equals NULL, numbers by value (an integer and a real too,
    /// `-0.0` and `0.0`), a blob (a NaN) equals a blob. With no sort columns
    /// every row ties.
    func ties(_ handle: OpaquePointer, in sortColumns: [Int32]) -> Bool {
        for column in sortColumns {
            let held = values[Int(column)]
            let cell = sqlite3_column_value(handle, column)
            let type = sqlite3_value_type(cell)
            switch (type, held.type) {
            case (SQLITE_NULL, SQLITE_NULL):
                continue
            case (SQLITE_INTEGER, SQLITE_INTEGER):
                guard sqlite3_value_int64(cell) == Int64(bitPattern: held.word) else { return false }
            case (SQLITE_FLOAT, SQLITE_FLOAT):
                guard sqlite3_value_double(cell) == Double(bitPattern: held.word) else { return false }
            case (SQLITE_INTEGER, SQLITE_FLOAT):
                guard Int64(exactly: Double(bitPattern: held.word)) == sqlite3_value_int64(cell) else { return false }
            case (SQLITE_FLOAT, SQLITE_INTEGER):
                guard Int64(exactly: sqlite3_value_double(cell)) == Int64(bitPattern: held.word) else { return false }
            case (SQLITE_BLOB, SQLITE_BLOB), (SQLITE_TEXT, SQLITE_TEXT):
                // A NaN, stored as a blob of its bytes: every NaN ties with
                // every NaN (docs/SEMANTICS.md), whatever its bytes.
                continue
            default:
                return false
            }
        }
        return true
    }

    /// Lends a view of each row of the run to `body`, in primary-key order
    /// (column 0, an integer; rows of equal keys in the order copied), and
    /// empties the run. A row's views read it through `context`, made with
    /// ``copiedRowFunctions``.
    /// - Throws: what `body` throws; no view is lent after it.
    mutating func lend<Record: DAOCore.Record>(
        _ context: ViewContext, to body: (borrowing RecordView<Record>) throws -> Void
    ) throws {
        let count = rows
        let columns = columns
        let values = values
        defer {
            rows = 0
            byteCount = 0
            filled = 0
        }
        func lendRow(_ row: Int) throws {
            context.nextRecord()
            try body(RecordView<Record>(context, handle: OpaquePointer(values + row * columns), base: nil, count: 0))
        }
        // An index walked forwards gives equal values in key order, one
        // walked backwards in reverse key order: neither is sorted here.
        var ascending = true
        var descending = true
        for row in 1..<max(count, 1) {
            let (previous, key) = (Int64(bitPattern: values[(row - 1) * columns].word), Int64(bitPattern: values[row * columns].word))
            if key < previous { ascending = false }
            if key >= previous { descending = false }
        }
        if ascending {
            for row in 0..<count { try lendRow(row) }
        } else if descending {
            for row in (0..<count).reversed() { try lendRow(row) }
        } else {
            var keys: [Int64] = []
            keys.reserveCapacity(count)
            for row in 0..<count { keys.append(Int64(bitPattern: values[row * columns].word)) }
            for row in ascendingOrder(keys) ?? Array(0..<count) { try lendRow(row) }
        }
    }
}
