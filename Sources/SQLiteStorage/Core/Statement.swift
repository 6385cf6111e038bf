import CSQLite
import DAOCore

/// A prepared SQLite statement, the single owner of its `sqlite3_stmt`: prepared
/// in the throwing initializer, finalized in `deinit`.
///
/// Not `Sendable`: a statement belongs to its ``Connection`` and is used only
/// while the connection's lock is held.
final class Statement {
    /// The statement handle.
    let handle: OpaquePointer
    /// The SQL text, for error messages.
    let sql: String
    /// One buffer per parameter (index 0 unused) that holds the bytes of the
    /// text last bound there (see the `String` version of `bind(_:at:)`), and
    /// its capacity.
    private let textBuffers: UnsafeMutablePointer<(bytes: UnsafeMutableRawPointer?, capacity: Int)>
    private let parameterCount: Int32
    /// What the core's ``ColumnRowWriter`` binds text and bytes to this
    /// statement through and makes its errors with: made on first use and
    /// kept as long as the statement, which its table's writers bind to call
    /// after call (made per call, it was an allocation per call).
    var columnAccess: StatementAccess?
    /// Texts longer than this are copied by SQLite rather than kept in a
    /// buffer of the statement, which would hold their size for as long as
    /// the statement is cached.
    static let largestBufferedText = 64 * 1024

    /// Prepares `sql` on `db`.
    /// - Throws: ``StorageError`` with SQLite's code and message.
    init(db: OpaquePointer, sql: String, persistent: Bool) throws {
        var statement: OpaquePointer?
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let code = sqlite3_prepare_v3(db, sql, -1, flags, &statement, nil)
        guard code == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw sqliteError(code == SQLITE_OK ? SQLITE_MISUSE : code, db: db, sql: sql)
        }
        self.handle = statement
        self.sql = sql
        parameterCount = sqlite3_bind_parameter_count(statement)
        textBuffers = .allocate(capacity: Int(parameterCount) + 1)
        textBuffers.initialize(repeating: (nil, 0), count: Int(parameterCount) + 1)
    }

    deinit {
        // Finalized first: SQLite may hold pointers into the text buffers until then.
        sqlite3_finalize(handle)
        for index in 0...Int(parameterCount) {
            textBuffers[index].bytes?.deallocate()
        }
        textBuffers.deallocate()
    }

    // MARK: Binding (1-based parameter indexes)

    @inline(__always)
    func check(_ code: Int32) throws {
        if code != SQLITE_OK {
            throw sqliteError(code, db: sqlite3_db_handle(handle), sql: sql)
        }
    }

    @inline(__always)
    func bind(_ value: Int64, at index: Int32) throws {
        try check(sqlite3_bind_int64(handle, index, value))
    }

    /// Binds a real so that it comes back bit for bit (``bindReal(_:_:_:)``).
    @inline(__always)
    func bind(_ value: Double, at index: Int32) throws {
        try check(bindReal(handle, index, value))
    }

    @inline(__always)
    func bindNull(at index: Int32) throws {
        try check(sqlite3_bind_null(handle, index))
    }

    /// Binds the string's UTF-8 bytes (NUL characters included).
    ///
    /// The bytes are copied into a buffer the statement keeps for parameter
    /// `index` and bound in place (`SQLITE_STATIC`): the buffer lives as long as
    /// the statement, and is overwritten or replaced only by the next text
    /// bound to the same parameter, which rebinds it. `SQLITE_TRANSIENT` made
    /// SQLite allocate, copy and later free the bytes on every bind, about 4
    /// times the cost of this copy (measured on the workload's `persist`).
    /// Texts over ``largestBufferedText`` bytes are bound `SQLITE_TRANSIENT`.
    @inline(__always)
    func bind(_ value: String, at index: Int32) throws {
        try check(bindBuffered(value, index))
    }

    private func bindBuffered(_ value: String, _ index: Int32) -> Int32 {
        guard index >= 1, index <= parameterCount else {
            // Out of range: SQLite answers SQLITE_RANGE without reading the bytes.
            return sqlite3_bind_text64(handle, index, "", 0, sqliteTransient, UInt8(SQLITE_UTF8))
        }
        // A native string's bytes are read in place; `withUTF8`, which may
        // make the string native first, is for the others (it takes the string
        // `inout`: a retain and a release per text bound).
        if let code = value.utf8.withContiguousStorageIfAvailable({ bindBuffered($0, index) }) {
            return code
        }
        var value = value
        return value.withUTF8 { bindBuffered($0, index) }
    }

    private func bindBuffered(_ buffer: UnsafeBufferPointer<UInt8>, _ index: Int32) -> Int32 {
        let count = buffer.count
        guard let source = buffer.baseAddress, count > 0 else {
            return sqlite3_bind_text64(handle, index, "", 0, sqliteTransient, UInt8(SQLITE_UTF8))
        }
        if count > Self.largestBufferedText {
            return source.withMemoryRebound(to: CChar.self, capacity: count) {
                sqlite3_bind_text64(handle, index, $0, UInt64(count), sqliteTransient, UInt8(SQLITE_UTF8))
            }
        }
        let slot = textBuffers + Int(index)
        var target = slot.pointee.bytes
        if target == nil || slot.pointee.capacity < count {
            // Rebinding below replaces SQLite's pointer into the old buffer
            // before anything can read it.
            let capacity = max(count, 2 * slot.pointee.capacity, 64)
            let bytes = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 1)
            if let old = slot.pointee.bytes {
                // SQLite may still point at the old buffer: unbind it first.
                sqlite3_bind_null(handle, index)
                old.deallocate()
            }
            slot.pointee = (bytes, capacity)
            target = bytes
        }
        guard let target else { return SQLITE_NOMEM }
        target.copyMemory(from: source, byteCount: count)
        return sqlite3_bind_text64(
            handle, index, target.assumingMemoryBound(to: CChar.self), UInt64(count), sqliteStatic,
            UInt8(SQLITE_UTF8))
    }

    /// Binds raw bytes as text without checking that they are UTF-8 (used for
    /// the exclusive upper bound of a prefix range).
    func bindTextBytes(_ bytes: [UInt8], at index: Int32) throws {
        let code = bytes.withUnsafeBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else {
                return sqlite3_bind_text64(handle, index, "", 0, sqliteTransient, UInt8(SQLITE_UTF8))
            }
            return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                sqlite3_bind_text64(handle, index, $0, UInt64(buffer.count), sqliteTransient, UInt8(SQLITE_UTF8))
            }
        }
        try check(code)
    }

    func bind(blob bytes: UnsafeRawBufferPointer, at index: Int32) throws {
        let code: Int32
        if let base = bytes.baseAddress {
            code = sqlite3_bind_blob64(handle, index, base, UInt64(bytes.count), sqliteTransient)
        } else {
            code = sqlite3_bind_zeroblob(handle, index, 0)
        }
        try check(code)
    }

    /// Binds an engine-neutral value.
    func bind(_ value: StoredValue, at index: Int32) throws {
        switch value {
        case .null: try bindNull(at: index)
        case .integer(let value): try bind(value, at: index)
        case .real(let value): try bind(value, at: index)
        case .text(let value): try bind(value, at: index)
        case .blob(let bytes): try bytes.withUnsafeBytes { try bind(blob: $0, at: index) }
        }
    }

    /// Binds `values` to parameters 1, 2, … in order.
    func bind(_ values: [StoredValue], from first: Int32 = 1) throws {
        var index = first
        for value in values {
            try bind(value, at: index)
            index += 1
        }
    }

    // MARK: Stepping

    /// Advances to the next row: `true` when there is a row, `false` when done.
    /// - Throws: ``StorageError`` for any other result.
    @inline(__always)
    func step() throws -> Bool {
        let code = sqlite3_step(handle)
        if code == SQLITE_ROW { return true }
        if code == SQLITE_DONE { return false }
        throw sqliteError(code, db: sqlite3_db_handle(handle), sql: sql)
    }

    /// Throws the error of a step that returned `code`, unless it returned a
    /// row or the end (for steps made outside ``step()``).
    @inline(__always)
    func checkStep(_ code: Int32) throws {
        if code != SQLITE_DONE && code != SQLITE_ROW {
            throw sqliteError(code, db: sqlite3_db_handle(handle), sql: sql)
        }
    }

    /// Runs a statement that returns no rows (or ignores them).
    func run() throws {
        defer { reset() }
        while try step() {}
    }

    /// Resets the statement for its next use, keeping its bindings. SQLite's
    /// return value here repeats the error of the last `step`, which `step`
    /// already threw, so it is not checked again.
    @inline(__always)
    func reset() {
        sqlite3_reset(handle)
    }

    // MARK: Columns (0-based)

    @inline(__always)
    func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    @inline(__always)
    func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    @inline(__always)
    func double(_ column: Int32) -> Double {
        sqlite3_column_double(handle, column)
    }

    /// The column as a string (one copy of SQLite's UTF-8 bytes), `nil` for NULL.
    @inline(__always)
    func text(_ column: Int32) -> String? {
        guard let bytes = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return UTF8Text.string(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// The column as an engine-neutral value, by its stored type.
    func storedValue(_ column: Int32) -> StoredValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER: .integer(int64(column))
        case SQLITE_FLOAT: .real(double(column))
        // A real field's NaN (``sqliteBindReal``).
        case SQLITE_BLOB where nan(column) != nil: .real(nan(column) ?? .nan)
        case SQLITE_TEXT: text(column).map { .text($0) } ?? .null
        case SQLITE_BLOB: blob(column).map { .blob($0) } ?? .null
        default: .null
        }
    }

    /// The NaN the column holds (``sqliteNaN(_:)``), if it holds one.
    func nan(_ column: Int32) -> Double? {
        sqliteNaN(sqlite3_column_value(handle, column))
    }

    /// The column's bytes, `nil` for NULL.
    func blob(_ column: Int32) -> [UInt8]? {
        if isNull(column) { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: bytes, count: count))
    }
}

// MARK: - Reals

/// How a real is stored so that it comes back bit for bit. A column of a
/// real field is declared without a type (``sqlType(_:)``), so it has no
/// affinity and keeps a `-0.0` as SQLite's REAL (a column of REAL affinity
/// stores an integral real as an integer, and `-0.0` comes back `0.0`).
/// SQLite binds a NaN as NULL; a NaN is stored as this 8-byte blob instead,
/// the canonical NaN's bits big-endian. SQLite orders every blob after every
/// number, so a NaN sorts after `+infinity` and all NaNs tie, as the core's
/// order has it (docs/SEMANTICS.md); the payload of a NaN is not kept.
let sqliteNaNBlob: [UInt8] = [0x7F, 0xF8, 0, 0, 0, 0, 0, 0]

/// Binds `value` as a REAL, or a NaN as ``sqliteNaNBlob``: the adapter's
/// `sqlite3_bind_double` for every real it binds.
@inline(__always)
func bindReal(_ handle: OpaquePointer?, _ index: Int32, _ value: Double) -> Int32 {
    guard value.isNaN else { return sqlite3_bind_double(handle, index, value) }
    return bindNaN(handle, index)
}

@inline(never)
private func bindNaN(_ handle: OpaquePointer?, _ index: Int32) -> Int32 {
    sqliteNaNBlob.withUnsafeBytes { sqlite3_bind_blob64(handle, index, $0.baseAddress, 8, sqliteTransient) }
}

/// ``bindReal(_:_:_:)`` as a C function, for the core's ``ColumnRowWriter``.
let sqliteBindReal: @convention(c) (OpaquePointer?, Int32, Double) -> Int32 = { bindReal($0, $1, $2) }

/// The NaN `value` holds: a blob of 8 bytes that read, big-endian, as a
/// NaN's bits (``sqliteNaNBlob``, the one the adapter writes); `nil` for any
/// other value. The core's `ColumnRowReader` reads a real field the same way.
func sqliteNaN(_ value: OpaquePointer?) -> Double? {
    guard sqlite3_value_type(value) == SQLITE_BLOB, sqlite3_value_bytes(value) == 8,
        let bytes = sqlite3_value_blob(value)
    else { return nil }
    let real = Double(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)))
    return real.isNaN ? real : nil
}
