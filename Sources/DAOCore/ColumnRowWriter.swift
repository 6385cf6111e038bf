import Foundation

/// The C functions that bind a prepared statement's parameters by index:
/// SQLite's `sqlite3_bind_int64`, `sqlite3_bind_double` and
/// `sqlite3_bind_null`, or another engine's functions of the same shapes.
/// See ``FieldwiseRecord/writeRows(_:to:_:)``.
@usableFromInline package struct ColumnBindFunctions: @unchecked Sendable {
    // @unchecked: C function pointers, which hold no state.

    /// Binds an integer.
    @usableFromInline package let int64: @convention(c) (OpaquePointer?, Int32, Int64) -> Int32
    /// Binds a double.
    @usableFromInline package let double: @convention(c) (OpaquePointer?, Int32, Double) -> Int32
    /// Binds NULL.
    @usableFromInline package let null: @convention(c) (OpaquePointer?, Int32) -> Int32
    /// What the functions return when they bound the value.
    @usableFromInline package let okCode: Int32

    /// Collects the functions and the success code of an engine.
    package init(
        int64: @escaping @convention(c) (OpaquePointer?, Int32, Int64) -> Int32,
        double: @escaping @convention(c) (OpaquePointer?, Int32, Double) -> Int32,
        null: @escaping @convention(c) (OpaquePointer?, Int32) -> Int32,
        okCode: Int32
    ) {
        self.int64 = int64
        self.double = double
        self.null = null
        self.okCode = okCode
    }
}

/// Why ``ColumnRowWriter`` could not bind a record; the adapter makes the error.
public enum ColumnWriteFailure: Sendable {
    /// A bind function returned this code.
    case code(Int32)
    /// The record wrote more fields than the statement has columns.
    case tooManyFields
    /// The record wrote this many fields, fewer than the statement's columns.
    case tooFewFields(Int)
}

/// A ``FieldWriter`` that binds a record's fields to a statement's parameters
/// 1…n in order, through `ColumnBindFunctions` (text and bytes through the
/// adapter's closures, which may keep the bytes). It keeps the primary key
/// (parameter 1) and the value of `parentParameter` of the record last
/// written, for the adapter's relation writers.
///
/// A concrete type with inlinable members, so that a record's
/// `write(fields:)` specialized for it binds each field with one call into
/// the engine. A real is handed to the engine's `double` function as it is
/// (`-0.0` and NaN too): the engine's function stores it so it comes back
/// bit for bit.
public struct ColumnRowWriter: FieldWriter {
    @usableFromInline let functions: ColumnBindFunctions
    @usableFromInline let handle: OpaquePointer
    @usableFromInline let count: Int32
    /// The parameter whose value is kept in ``capturedParent``, or 0.
    @usableFromInline let parentParameter: Int32
    /// Binds text and bytes and makes the errors; not retained, as
    /// `ColumnRowReader`'s.
    @usableFromInline unowned(unsafe) let access: ColumnAccess
    /// The next parameter to bind.
    @usableFromInline var index: Int32 = 1
    /// The primary key of the record last written, when it was an integer or
    /// text (`.null` otherwise).
    @usableFromInline package var capturedKey: StoredValue = .null
    /// The value written to `parentParameter` for the record last written,
    /// likewise.
    @usableFromInline package var capturedParent: StoredValue = .null

    /// A writer of records to the `count` parameters of `handle`, binding
    /// text and bytes with `access`, which the caller keeps alive for as long
    /// as it uses the writer.
    @inlinable
    package init(
        functions: ColumnBindFunctions, handle: OpaquePointer, count: Int32, parentParameter: Int32,
        access: ColumnAccess
    ) {
        self.functions = functions
        self.handle = handle
        self.count = count
        self.parentParameter = parentParameter
        self.access = access
    }

    /// Starts writing a record from the first parameter.
    @inlinable @inline(__always)
    package mutating func rewind() {
        index = 1
        capturedKey = .null
        capturedParent = .null
    }

    @inlinable @inline(__always)
    mutating func next() throws -> Int32 {
        guard index <= count else { throw access.writeError(.tooManyFields) }
        defer { index += 1 }
        return index
    }

    @inlinable @inline(__always)
    mutating func check(_ code: Int32) throws {
        if code != functions.okCode { throw access.writeError(.code(code)) }
    }

    /// Binds an integer.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Int64) throws {
        let index = try next()
        if index == 1 {
            capturedKey = .integer(value)
        } else if index == parentParameter {
            capturedParent = .integer(value)
        }
        try check(functions.int64(handle, index, value))
    }

    /// Binds a real.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Double) throws {
        let index = try next()
        try check(functions.double(handle, index, value))
    }

    /// Binds text.
    @inlinable @inline(__always)
    public mutating func encode(_ value: String) throws {
        let index = try next()
        if index == 1 {
            capturedKey = .text(value)
        } else if index == parentParameter {
            capturedParent = .text(value)
        }
        try access.bindText(value, at: index)
    }

    /// Binds a boolean as 0 or 1.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Bool) throws { try encode(Int64(value ? 1 : 0)) }

    /// Binds a date as seconds since 2001-01-01.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Date) throws { try encode(value.storedSeconds) }

    /// Binds bytes.
    @inlinable
    public mutating func encode(_ value: Data) throws {
        let index = try next()
        try access.bindBytes(value, at: index)
    }

    /// Binds NULL.
    @inlinable @inline(__always)
    public mutating func encodeNil() throws {
        let index = try next()
        try check(functions.null(handle, index))
    }

    /// Checks that the record wrote every parameter.
    @inlinable @inline(__always)
    package mutating func finish() throws {
        if index != count + 1 { throw access.writeError(.tooFewFields(Int(index) - 1)) }
    }
}

extension FieldwiseRecord {
    /// Binds each of `records` in turn (see ``FieldwiseRecord/writeRows(_:to:_:)``).
    ///
    /// Inlinable, so that the conformance of each record type uses a copy
    /// specialized for it.
    @inlinable
    public static func writeRows(
        _ records: [Self], to writer: inout ColumnRowWriter, _ row: (inout ColumnRowWriter, Int) throws -> Void
    ) throws {
        try records.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            // Lent as `inout` (never written: `write(fields:)` does not
            // mutate), so each record is read where it is; read from the
            // array as a value, it was copied whole before `write(fields:)`,
            // which is not inlined here (an outlined copy and destroy and a
            // retain and release of its text, about 80 instructions for a message).
            let records = UnsafeMutablePointer(mutating: base)
            for index in 0..<buffer.count {
                writer.rewind()
                try writeRow(inPlace: &records[index], to: &writer)
                try writer.finish()
                try row(&writer, index)
            }
        }
    }

    /// Binds `record`, read in place.
    @inlinable
    static func writeRow(inPlace record: inout Self, to writer: inout ColumnRowWriter) throws {
        try record.write(fields: &writer)
    }
}
