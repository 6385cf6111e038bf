import Foundation

/// The C functions that step a prepared statement of a row-oriented engine
/// and read the current row's columns by index: SQLite's `sqlite3_step`,
/// `sqlite3_column_int64`, `sqlite3_column_double`, `sqlite3_column_type`,
/// `sqlite3_column_text`, `sqlite3_column_blob` and `sqlite3_column_bytes`, or
/// another engine's functions of the same shapes.
///
/// An adapter hands them to ``FieldwiseRecord/readRows(_:into:)``, which reads
/// rows in the record's own module: there the record's `init(fields:)` and the
/// array it fills are specialized for the record type, and each field is one
/// call into the engine, where an adapter's generic code, unspecialized for
/// the caller's record types, reaches each field through witness calls and
/// looks up the metadata of generic types over the record type on every row.
@usableFromInline package struct ColumnFunctions: @unchecked Sendable {
    // @unchecked: C function pointers, which hold no state.

    /// Steps the statement; returns ``rowCode`` when a row is ready.
    @usableFromInline package let step: @convention(c) (OpaquePointer?) -> Int32
    /// The column as an integer (NULL reads as 0).
    @usableFromInline package let int64: @convention(c) (OpaquePointer?, Int32) -> Int64
    /// The column as a double (NULL reads as 0).
    @usableFromInline package let double: @convention(c) (OpaquePointer?, Int32) -> Double
    /// The column's storage class.
    @usableFromInline package let type: @convention(c) (OpaquePointer?, Int32) -> Int32
    /// The column's text as UTF-8, `nil` for NULL.
    @usableFromInline package let text: @convention(c) (OpaquePointer?, Int32) -> UnsafePointer<UInt8>?
    /// The column's bytes, `nil` for NULL or no bytes.
    @usableFromInline package let blob: @convention(c) (OpaquePointer?, Int32) -> UnsafeRawPointer?
    /// The number of bytes of the column's text or blob last read.
    @usableFromInline package let bytes: @convention(c) (OpaquePointer?, Int32) -> Int32
    /// The column as the engine's value object, which the `value…` functions
    /// read (SQLite's `sqlite3_column_value`): one call into the engine per
    /// column, whose storage class and content are then read without the
    /// per-call checks of the `column…` functions.
    @usableFromInline package let value: @convention(c) (OpaquePointer?, Int32) -> OpaquePointer?
    /// A value's storage class (`sqlite3_value_type`).
    @usableFromInline package let valueType: @convention(c) (OpaquePointer?) -> Int32
    /// A value as an integer (`sqlite3_value_int64`).
    @usableFromInline package let valueInt64: @convention(c) (OpaquePointer?) -> Int64
    /// A value as a double (`sqlite3_value_double`).
    @usableFromInline package let valueDouble: @convention(c) (OpaquePointer?) -> Double
    /// A value's text as UTF-8 (`sqlite3_value_text`).
    @usableFromInline package let valueText: @convention(c) (OpaquePointer?) -> UnsafePointer<UInt8>?
    /// A value's bytes (`sqlite3_value_blob`).
    @usableFromInline package let valueBlob: @convention(c) (OpaquePointer?) -> UnsafeRawPointer?
    /// The number of bytes of a value's text or blob last read (`sqlite3_value_bytes`).
    @usableFromInline package let valueBytes: @convention(c) (OpaquePointer?) -> Int32
    /// What ``step`` returns when a row is ready.
    @usableFromInline package let rowCode: Int32
    /// The storage class ``type`` gives for NULL.
    @usableFromInline package let nullType: Int32
    /// The storage class ``type`` gives for an integer.
    @usableFromInline package let integerType: Int32
    /// The storage class ``type`` gives for a real.
    @usableFromInline package let realType: Int32
    /// The storage class ``type`` gives for text.
    @usableFromInline package let textType: Int32
    /// The storage class ``type`` gives for bytes.
    @usableFromInline package let blobType: Int32

    /// Collects the functions and the constants of an engine.
    package init(
        step: @escaping @convention(c) (OpaquePointer?) -> Int32,
        int64: @escaping @convention(c) (OpaquePointer?, Int32) -> Int64,
        double: @escaping @convention(c) (OpaquePointer?, Int32) -> Double,
        type: @escaping @convention(c) (OpaquePointer?, Int32) -> Int32,
        text: @escaping @convention(c) (OpaquePointer?, Int32) -> UnsafePointer<UInt8>?,
        blob: @escaping @convention(c) (OpaquePointer?, Int32) -> UnsafeRawPointer?,
        bytes: @escaping @convention(c) (OpaquePointer?, Int32) -> Int32,
        value: @escaping @convention(c) (OpaquePointer?, Int32) -> OpaquePointer?,
        valueType: @escaping @convention(c) (OpaquePointer?) -> Int32,
        valueInt64: @escaping @convention(c) (OpaquePointer?) -> Int64,
        valueDouble: @escaping @convention(c) (OpaquePointer?) -> Double,
        valueText: @escaping @convention(c) (OpaquePointer?) -> UnsafePointer<UInt8>?,
        valueBlob: @escaping @convention(c) (OpaquePointer?) -> UnsafeRawPointer?,
        valueBytes: @escaping @convention(c) (OpaquePointer?) -> Int32,
        rowCode: Int32, nullType: Int32, integerType: Int32, realType: Int32, textType: Int32, blobType: Int32
    ) {
        self.step = step
        self.int64 = int64
        self.double = double
        self.type = type
        self.text = text
        self.blob = blob
        self.bytes = bytes
        self.value = value
        self.valueType = valueType
        self.valueInt64 = valueInt64
        self.valueDouble = valueDouble
        self.valueText = valueText
        self.valueBlob = valueBlob
        self.valueBytes = valueBytes
        self.rowCode = rowCode
        self.nullType = nullType
        self.integerType = integerType
        self.realType = realType
        self.textType = textType
        self.blobType = blobType
    }
}

/// What an adapter does for `ColumnRowReader` and ``ColumnRowWriter``
/// besides calling `ColumnFunctions` and `ColumnBindFunctions`: it makes
/// their errors and binds text and bytes (which an adapter may copy into
/// buffers of its own). Each adapter subclasses it.
///
/// Readers and writers hold it `unowned(unsafe)`: they are copied as plain
/// bits, with no reference counting per field; whoever makes one keeps the
/// access alive while it is used.
open class ColumnAccess: @unchecked Sendable {
    // @unchecked: no state here; subclasses say why they are safe to share.

    /// An access that makes generic errors and binds nothing.
    public init() {}

    /// The error of reading `column`: `message` about it, or with `message`
    /// `nil`, a NULL read for a field that is not optional.
    open func readError(column: Int32, message: String?) -> StorageError {
        StorageError(.decoding, .read, message: "column \(column): \(message ?? "NULL for a field that is not optional")")
    }

    /// The error of reading `column`, whose storage class `found` (NULL
    /// among them) is not one a field of its type is stored as: the row was
    /// changed outside the store.
    open func storageClassError(column: Int32, found: Int32) -> StorageError {
        StorageError(.corrupt, .read, message: "column \(column): storage class \(found) is not the field's")
    }

    /// Binds `value` to `parameter`.
    /// - Throws: the adapter's error when it cannot.
    open func bindText(_ value: String, at parameter: Int32) throws {
        throw StorageError(.encoding, .persist, message: "parameter \(parameter): this access binds no text")
    }

    /// Binds `value` to `parameter`.
    /// - Throws: the adapter's error when it cannot.
    open func bindBytes(_ value: Data, at parameter: Int32) throws {
        throw StorageError(.encoding, .persist, message: "parameter \(parameter): this access binds no bytes")
    }

    /// The error for a record that could not be bound.
    open func writeError(_ failure: ColumnWriteFailure) -> any Error {
        StorageError(.encoding, .persist, message: "a record could not be bound: \(failure)")
    }
}

/// A ``FieldReader`` over the current row of a statement, read through
/// `ColumnFunctions`: the record's fields are the row's columns, in order.
///
/// A concrete type with inlinable members, so that a record's `init(fields:)`
/// specialized for it calls the engine directly for each field.
@usableFromInline package struct ColumnRowReader: FieldReader {
    @usableFromInline let functions: ColumnFunctions
    @usableFromInline let handle: OpaquePointer
    @usableFromInline let count: Int32
    /// The next column to read.
    @usableFromInline var column: Int32 = 0
    /// Makes the errors; not retained (see ``init(functions:handle:count:access:)``),
    /// so that the reader is copied and dropped without reference counting.
    @usableFromInline unowned(unsafe) let access: ColumnAccess
    /// A reader of the rows of `handle`, which have `count` columns, making
    /// its errors with `access`, which the caller keeps alive for as long as
    /// it uses the reader.
    @inlinable
    package init(functions: ColumnFunctions, handle: OpaquePointer, count: Int32, access: ColumnAccess) {
        self.functions = functions
        self.handle = handle
        self.count = count
        self.access = access
    }

    /// The integer read from column 0 (the primary key) of the current row,
    /// when ``readsKey``.
    @usableFromInline var key: Int64 = 0
    /// Whether the record read column 0 as an integer.
    @usableFromInline var readsKey = false

    /// Starts reading the current row from its first column.
    @inlinable @inline(__always)
    package mutating func rewind() {
        column = 0
        readsKey = false
    }

    /// The integer the record read from column 0 (its primary key) of the
    /// current row, if it read that column as an integer.
    @inlinable @inline(__always)
    package var keyRead: Int64? { readsKey ? key : nil }

    /// The next column; reading past the last one is an error, never a call
    /// into the engine with an index out of range.
    @inlinable @inline(__always)
    mutating func advance() throws -> Int32 {
        guard column < count else { throw error("the row has only \(count) columns") }
        defer { column += 1 }
        return column
    }

    // `mutating`, as every member the record calls: a non-mutating call on
    // the reader the record holds `inout` copied the reader first.
    //
    // Each read takes the column's value object once and checks its storage
    // class before reading it: a column of a non-optional field that holds
    // NULL, or another class (text in an integer column, which SQLite's
    // column affinity lets an outside `UPDATE` write), read as 0 through
    // `sqlite3_column_int64` and is `corrupt` here. SQLite calls its value
    // object "unprotected" because its functions then skip the connection's
    // mutex: the adapter opens its connections without one
    // (`SQLITE_OPEN_NOMUTEX`) and uses each from one thread at a time.
    // One `value` call and two cheap reads cost about what one
    // `sqlite3_column_int64` did.
    @inlinable @inline(__always)
    mutating func integer() throws -> Int64 {
        let column = try advance()
        let value = functions.value(handle, column)
        let type = functions.valueType(value)
        guard type == functions.integerType else { throw access.storageClassError(column: column, found: type) }
        let integer = functions.valueInt64(value)
        if column == 0 {
            // Kept for `ColumnRows/inKeyOrder`: asking the engine again
            // costs more than this test on every integer.
            key = integer
            readsKey = true
        }
        return integer
    }

    @inlinable @inline(__always)
    mutating func real() throws -> Double {
        let column = try advance()
        let value = functions.value(handle, column)
        let type = functions.valueType(value)
        // A real column reads back as a real; an integer is taken as its
        // value (exact up to 2^53); a NaN is stored as a blob of its 8 bytes,
        // big-endian (SQLite binds a NaN as NULL).
        guard type == functions.realType || type == functions.integerType else {
            if type == functions.blobType, functions.valueBytes(value) == 8, let bytes = functions.valueBlob(value) {
                let real = Double(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)))
                if real.isNaN { return real }
            }
            throw access.storageClassError(column: column, found: type)
        }
        return functions.valueDouble(value)
    }

    /// Reads the next field as an integer; NULL is an error.
    @inlinable @inline(__always)
    package mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }

    /// Reads the next field as a double; NULL is an error.
    @inlinable @inline(__always)
    package mutating func decode(_ type: Double.Type) throws -> Double { try real() }

    /// Reads the next field as a boolean (an integer other than 0); NULL is an error.
    @inlinable @inline(__always)
    package mutating func decode(_ type: Bool.Type) throws -> Bool { try integer() != 0 }

    /// Reads the next field as a date (seconds since 2001-01-01); NULL is an error.
    @inlinable @inline(__always)
    package mutating func decode(_ type: Date.Type) throws -> Date {
        Date(storedSeconds: try real())
    }

    /// Reads the next field as text (invalid UTF-8 repaired); NULL is an error.
    @inlinable @inline(__always)
    package mutating func decode(_ type: String.Type) throws -> String {
        let column = try advance()
        let value = functions.value(handle, column)
        let type = functions.valueType(value)
        guard type == functions.textType, let bytes = functions.valueText(value) else {
            throw access.storageClassError(column: column, found: type)
        }
        let count = Int(functions.valueBytes(value))
        return UTF8Text.string(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// Reads the next field as bytes; NULL is an error.
    @inlinable
    package mutating func decode(_ type: Data.Type) throws -> Data {
        let column = try advance()
        let value = functions.value(handle, column)
        let type = functions.valueType(value)
        guard type == functions.blobType else { throw access.storageClassError(column: column, found: type) }
        // No pointer: a blob of no bytes.
        guard let bytes = functions.valueBlob(value) else { return Data() }
        return Data(bytes: bytes, count: Int(functions.valueBytes(value)))
    }

    /// Whether the next field is NULL; a NULL field is consumed.
    @inlinable @inline(__always)
    package mutating func decodeNil() throws -> Bool {
        guard column < count, functions.type(handle, column) == functions.nullType else { return false }
        column += 1
        return true
    }

    /// An error about the column last read.
    @inlinable
    package func error(_ message: String) -> StorageError {
        access.readError(column: max(column - 1, 0), message: message)
    }
}

/// The rows of a statement, read by ``FieldwiseRecord/readRows(_:into:)``,
/// with what the adapter asked for besides the records.
public struct ColumnRows {
    /// The reader of the current row.
    @usableFromInline package var reader: ColumnRowReader
    /// What the last step returned: the row code while rows come; anything
    /// else ended the reading (the adapter checks it).
    @usableFromInline package var status: Int32 = 0
    /// Whether a row was stepped to but not read yet (it starts the next run).
    @usableFromInline package var pending = false
    /// The column whose integer groups rows into runs (a parent's key), or -1:
    /// then every row is read in one call.
    @usableFromInline package let groupColumn: Int32
    /// The integer in ``groupColumn`` of the run read last.
    @usableFromInline package var group: Int64 = 0
    /// Whether to collect the integer of column 0 (the primary key) of each
    /// row into ``keys`` and return the rows in the order of those keys.
    @usableFromInline package let inKeyOrder: Bool
    /// Column 0 of each row read, with ``inKeyOrder``.
    @usableFromInline package var keys: [Int64] = []
    /// The columns (numeric or NULL) the statement orders its rows by, when
    /// the adapter left the primary key out of its `ORDER BY`: each row's
    /// values in them are compared with the previous row's as it is read
    /// (`watchTies()`), and ``tied`` tells the adapter whether it must sort.
    @usableFromInline package var sortColumns: [Int32] = []
    /// Whether two neighbouring rows had equal values in every one of
    /// ``sortColumns``, or a value in one was neither a number nor NULL
    /// (equality then not decided here): the rows' order among themselves
    /// is then the engine's, and the adapter sorts them.
    @usableFromInline package var tied = false
    /// The previous row's values in ``sortColumns``.
    @usableFromInline var previousSortValues: [ColumnSortValue] = []

    /// Rows to read with `reader`, in runs by `groupColumn` (or -1), in key
    /// order or not; `expected` rows are made room for in ``keys``.
    @inlinable
    package init(reader: ColumnRowReader, groupColumn: Int32 = -1, inKeyOrder: Bool = false, expected: Int = 0) {
        self.reader = reader
        self.groupColumn = groupColumn
        self.inKeyOrder = inKeyOrder
        if inKeyOrder && expected > 0 { keys.reserveCapacity(expected) }
    }

    /// Steps to the next row unless one is pending; `false` at the end (or
    /// an error, in ``status``).
    @inlinable @inline(__always)
    mutating func next() -> Bool {
        if pending {
            pending = false
            return true
        }
        status = reader.functions.step(reader.handle)
        return status == reader.functions.rowCode
    }

    /// Compares the current row's values in ``sortColumns`` with the
    /// previous row's, and sets ``tied`` when they are all equal or one is
    /// neither a number nor NULL, as SQLite's `ORDER BY` compares them.
    /// Called once per row read while ``tied`` is not set and there are
    /// ``sortColumns`` (by a record type's loop, or by an adapter decoding
    /// rows another way); not inlined, so that each record type's reading
    /// loop stays small.
    @usableFromInline
    package mutating func watchTies() {
        // The three functions and constants, not the whole table of them.
        let (typeOf, int64, double) = (reader.functions.type, reader.functions.int64, reader.functions.double)
        let (integerType, realType, nullType) =
            (reader.functions.integerType, reader.functions.realType, reader.functions.nullType)
        let handle = reader.handle
        let first = previousSortValues.isEmpty
        if first { previousSortValues = Array(repeating: .null, count: sortColumns.count) }
        var equal = !first
        var other = false
        sortColumns.withUnsafeBufferPointer { columns in
            previousSortValues.withUnsafeMutableBufferPointer { previous in
                for index in columns.indices {
                    let column = columns[index]
                    let type = typeOf(handle, column)
                    let value: ColumnSortValue
                    if type == integerType {
                        value = .integer(int64(handle, column))
                    } else if type == realType {
                        value = .real(double(handle, column))
                    } else if type == nullType {
                        value = .null
                    } else {
                        other = true
                        return
                    }
                    if equal, value != previous[index] { equal = false }
                    previous[index] = value
                }
            }
        }
        if equal || other { tied = true }
    }

    /// Puts `records` in the order of ``keys`` (ascending, equal keys in the
    /// order read), moving them.
    @inlinable
    mutating func sortByKeys<T>(_ records: inout [T]) {
        guard var order = ascendingOrder(keys) else { return }
        // `order[i]` is where the record that goes to `i` is: follow each
        // cycle of the permutation, swapping.
        records.withUnsafeMutableBufferPointer { records in
            for start in order.indices where order[start] != start {
                var target = start
                while order[target] != start {
                    let source = order[target]
                    records.swapAt(target, source)
                    order[target] = target
                    target = source
                }
                order[target] = target
            }
        }
    }
}

/// A value of a column rows are sorted by, compared with the same column's
/// value in the next row: integers and reals by value, exactly, one against
/// the other; NULLs equal.
@usableFromInline
enum ColumnSortValue: Equatable {
    case null
    case integer(Int64)
    case real(Double)

    @usableFromInline
    static func == (lhs: ColumnSortValue, rhs: ColumnSortValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.integer(a), .integer(b)): a == b
        case let (.real(a), .real(b)): a == b
        case let (.integer(a), .real(b)), let (.real(b), .integer(a)): Int64(exactly: b) == a
        default: false
        }
    }
}

/// The positions of `keys` in ascending order (equal keys in their order), or
/// `nil` when they are in order already. The rows a statement yields by an
/// index on other columns usually come as two ascending runs of keys, merged
/// here in one pass. Equal keys keep their first order, as a stable sort
/// does. The SQLite adapter's reads put their rows in key order with it too.
@usableFromInline
package func ascendingOrder(_ keys: [Int64]) -> [Int]? {
    var index = 1
    while index < keys.count, keys[index] >= keys[index - 1] { index += 1 }
    guard index < keys.count else { return nil }
    var end = index + 1
    while end < keys.count, keys[end] >= keys[end - 1] { end += 1 }
    guard end == keys.count else {
        return keys.indices.sorted { keys[$0] < keys[$1] || (keys[$0] == keys[$1] && $0 < $1) }
    }
    var order: [Int] = []
    order.reserveCapacity(keys.count)
    var left = 0
    var right = index
    while left < index, right < keys.count {
        if keys[left] <= keys[right] {
            order.append(left)
            left += 1
        } else {
            order.append(right)
            right += 1
        }
    }
    order.append(contentsOf: left..<index)
    order.append(contentsOf: right..<keys.count)
    return order
}

extension FieldwiseRecord {
    /// Reads records from `rows` into `records` (see ``FieldwiseRecord/readRows(_:into:)``).
    ///
    /// Inlinable, so that the conformance of each record type uses a copy
    /// specialized for it.
    @inlinable
    public static func readRows(_ rows: inout ColumnRows, into records: inout [Self]) throws {
        let functions = rows.reader.functions
        let handle = rows.reader.handle
        let groupColumn = rows.groupColumn
        while rows.next() {
            if groupColumn >= 0 {
                if functions.type(handle, groupColumn) != functions.integerType {
                    // A row that names no integer parent belongs to no run;
                    // it is decoded all the same (an error in it is reported).
                    rows.reader.rewind()
                    _ = try Self(fields: &rows.reader)
                    continue
                }
                let group = functions.int64(handle, groupColumn)
                if !records.isEmpty, group != rows.group {
                    rows.pending = true
                    return
                }
                rows.group = group
            }
            rows.reader.rewind()
            records.append(try Self(fields: &rows.reader))
            if !rows.tied, !rows.sortColumns.isEmpty { rows.watchTies() }
            if rows.inKeyOrder {
                rows.keys.append(rows.reader.readsKey ? rows.reader.key : functions.int64(handle, 0))
            }
        }
        if rows.inKeyOrder { rows.sortByKeys(&records) }
    }
}

// MARK: - Writing
