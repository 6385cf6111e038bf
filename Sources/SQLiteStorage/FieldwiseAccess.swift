import DAOCore

/// Writes a record's fields by position to a ``ColumnRowWriter``.
protocol FieldBinder<Record>: Sendable {
    associatedtype Record
    func write(_ record: Record, to writer: inout ColumnRowWriter) throws
}

/// `F`'s `write(fields:)`.
struct FieldwiseBinder<F: FieldwiseRecord>: FieldBinder {
    @inline(__always)
    func write(_ record: F, to writer: inout ColumnRowWriter) throws {
        try record.write(fields: &writer)
    }
}

/// `F`'s `write(fields:)` for records of type `Record`, which is `F`,
/// converted per record (a copy of it); for when the binder above cannot be
/// cast to `Record`'s, which does not happen when `F` is `Record`.
struct ConvertingBinder<Record, F: FieldwiseRecord>: FieldBinder {
    func write(_ record: Record, to writer: inout ColumnRowWriter) throws {
        try unsafeBitCast(record, to: F.self).write(fields: &writer)
    }
}

/// Reads the current row of a statement into a record built in place.
protocol FieldSlotReader<Record>: Sendable {
    associatedtype Record
    func read(_ reader: inout ColumnRowReader, into slot: UnsafeMutablePointer<Record>) throws
}

/// `F(fields:)`, built in the slot: a record returned from generic code and
/// stored again was copied (retaining its strings) and the original
/// destroyed, once per row.
struct FieldwiseSlotReader<F: FieldwiseRecord>: FieldSlotReader {
    @inline(__always)
    func read(_ reader: inout ColumnRowReader, into slot: UnsafeMutablePointer<F>) throws {
        slot.initialize(to: try F(fields: &reader))
    }
}

/// Reads a statement's rows into records (``FieldwiseRecord/readRows(_:into:)``).
protocol RowsReader<Record>: Sendable {
    associatedtype Record
    func read(_ rows: inout ColumnRows, into records: inout [Record]) throws
}

/// `F.readRows(_:into:)`: the copy specialized for `F` in its own module.
struct FieldwiseRowsReader<F: FieldwiseRecord>: RowsReader {
    func read(_ rows: inout ColumnRows, into records: inout [F]) throws {
        try F.readRows(&rows, into: &records)
    }
}

/// Binds records to a statement (``FieldwiseRecord/writeRows(_:to:_:)``).
protocol RowsWriter<Record>: Sendable {
    associatedtype Record
    func write(_ records: [Record], to writer: inout ColumnRowWriter, _ row: (inout ColumnRowWriter, Int) throws -> Void)
        throws
}

/// `F.writeRows(_:to:_:)`: the copy specialized for `F` in its own module.
struct FieldwiseRowsWriter<F: FieldwiseRecord>: RowsWriter {
    func write(_ records: [F], to writer: inout ColumnRowWriter, _ row: (inout ColumnRowWriter, Int) throws -> Void)
        throws
    {
        try F.writeRows(records, to: &writer, row)
    }
}
