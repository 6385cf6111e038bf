import Foundation

/// A record that reads and writes its stored fields one after another, in the
/// order of its entity's ``Entity/fields``, without `Codable`.
///
/// Adapters read and write a record this way when its type adopts the
/// protocol, and through `Codable` otherwise. Going by position costs a few
/// dozen instructions a field, where `Codable`'s keyed containers cost hundreds,
/// so a record stored in bulk (a dialog's messages) is worth the two
/// hand-written members:
///
/// ```swift
/// extension NoteRecord: FieldwiseRecord {
///     init(fields: inout some FieldReader) throws {
///         self.init(id: try fields.decode(), text: try fields.decode(), pinned: try fields.decode())
///     }
///     func write(fields: inout some FieldWriter) throws {
///         try fields.encode(id)
///         try fields.encode(text)
///         try fields.encode(pinned)
///     }
/// }
/// ```
///
/// For such a record the declared fields are its whole stored shape.
/// Relations are not fields: the initializer leaves them empty and the adapter
/// fills them; `write(fields:)` skips them. A test in the project checks that
/// each adopting record writes and reads its fields in declaration order.
public protocol FieldwiseRecord: Record {
    /// Creates the record from its fields, read in the order of `entity.fields`.
    /// - Throws: the reader's ``StorageError`` when a field is missing, null
    ///   where it may not be, or of another type.
    init(fields: inout some FieldReader) throws

    /// Writes the record's fields in the order of `entity.fields`.
    /// - Throws: the writer's ``StorageError``.
    func write(fields: inout some FieldWriter) throws

    /// Reads a record from each row of `rows` (a statement's rows, one
    /// column per field) and appends it to `records`: every row, or with
    /// `ColumnRows/groupColumn` the rows of one run (the rows with the same
    /// integer in that column; a row with no integer there is read and
    /// dropped). With `ColumnRows/inKeyOrder` the records come in the order
    /// of the integers in column 0. Stops at the end of the rows or at a step
    /// that fails (`ColumnRows/status` says which).
    ///
    /// Provided by the protocol (records do not implement it): the default
    /// implementation is inlinable, so each record type's conformance holds a
    /// copy specialized for the record, which reads each field with one call
    /// into the engine and builds the array without generic dispatch.
    /// - Throws: the reader's ``StorageError`` for a row that does not read
    ///   as a record.
    static func readRows(_ rows: inout ColumnRows, into records: inout [Self]) throws

    /// Binds the fields of each of `records` in turn to `writer`'s
    /// parameters (`ColumnRowWriter/rewind()`, `write(fields:)`,
    /// `ColumnRowWriter/finish()`), and after each calls `row` with the
    /// writer and the record's index, to run the statement.
    ///
    /// Provided by the protocol (records do not implement it), for the same
    /// reason as ``readRows(_:into:)``: each record type's conformance holds a
    /// copy specialized for it, which binds each field with one call into the
    /// engine and does not copy the records.
    /// - Throws: the writer's error or `row`'s, stopping there.
    static func writeRows(
        _ records: [Self], to writer: inout ColumnRowWriter, _ row: (inout ColumnRowWriter, Int) throws -> Void
    ) throws

    /// Writes the record's fields to `writer`, in the packed value format
    /// (the LMDB adapter's values).
    ///
    /// Provided by the protocol (records do not implement it): the default
    /// implementation is inlinable, so each record type's conformance holds a
    /// copy of `write(fields:)` specialized for ``PackedFieldWriter``, which
    /// writes each field without a call through a witness table.
    /// - Throws: the writer's ``StorageError``.
    func writePacked(to writer: inout PackedFieldWriter) throws

    /// ``writePacked(to:)`` of the record `record` points to, read where it
    /// is: code generic over the record type (an adapter's) calling the
    /// instance method copied the record first (a value-witness copy and
    /// destroy per record).
    ///
    /// Provided by the protocol (records do not implement it), for the same
    /// reason as ``writePacked(to:)``.
    /// - Throws: the writer's ``StorageError``.
    static func writePacked(at record: UnsafePointer<Self>, to writer: inout PackedFieldWriter) throws

    /// Reads a record from `reader`, a value in the packed format.
    ///
    /// Provided by the protocol (records do not implement it), for the same
    /// reason as ``writePacked(to:)``.
    /// - Throws: the reader's ``StorageError``.
    static func readPacked(from reader: inout PackedFieldReader) throws -> Self

    /// Reads a record from each value `rows` hands over
    /// (``PackedRows/next()``), in order, calling ``PackedRows/finish(_:)``
    /// after each, and returns them.
    ///
    /// Provided by the protocol (records do not implement it): the default
    /// implementation is inlinable, so each record type's conformance holds a
    /// copy specialized for it, which builds each record in the array it
    /// returns. Read one at a time from an adapter's code, which is not
    /// specialized for the record type, a record cost a call through the
    /// conformance, a copy into the adapter's buffer and that buffer's
    /// moves, and generic metadata look-ups for the array.
    /// - Throws: the reader's ``StorageError``, or what `rows` throws.
    static func readPacked(rows: PackedRows) throws -> [Self]

    /// Writes the record's fields to `scanner` (see ``FieldScanWriter``):
    /// the first `Date` of `-0.0` seconds, whether a real is `-0.0` or a
    /// NaN, and the stored values at the positions it keeps.
    ///
    /// Provided by the protocol (records do not implement it), for the same
    /// reason as ``writePacked(to:)``: the check of every record written
    /// runs in the adapters' unspecialized code, where a pass through a
    /// generic writer costs a witness call per field.
    /// - Throws: what `write(fields:)` throws.
    func scanFields(_ scanner: inout FieldScanWriter) throws

    /// Scans each of `records` in turn (``scanFields(_:)``): appends the
    /// stored value at position `first` of each to `firsts` and at `second`
    /// to `seconds` (-1 for none); notes whether a real is `-0.0` or a NaN;
    /// with `stoppingAtNegativeZeroDate`, stops at the first record that
    /// holds a `Date` of `-0.0` seconds
    /// (``Entity/checkRealsForPropertyList(_:)-(Root)``), noting its index
    /// and the field's position.
    ///
    /// Provided by the protocol (records do not implement it), for the same
    /// reason as ``scanFields(_:)``; for many records (a parent's children)
    /// the loop itself is specialized too, where a call per record through a
    /// closure copied the record and the scanner.
    /// - Throws: what `write(fields:)` throws, stopping there.
    static func scanFields(
        of records: [Self], keeping first: Int, and second: Int, into firsts: inout [StoredValue],
        _ seconds: inout [StoredValue], stoppingAtNegativeZeroDate: Bool
    ) throws -> RealsScan
}

extension FieldwiseRecord {
    /// The values `write(fields:)` writes, in order.
    public func writtenFields() throws -> [StoredValue] {
        var writer = StoredValueWriter()
        try write(fields: &writer)
        return writer.values
    }

    /// The record rebuilt from its own field values: equal to it, relations
    /// emptied, when `init(fields:)` reads the fields in declaration order.
    public func rebuiltFromFields() throws -> Self {
        var reader = StoredValueReader(Self.entity.fields.map { $0.value(in: self) }, entity: Self.entity.name)
        return try Self(fields: &reader)
    }
}
