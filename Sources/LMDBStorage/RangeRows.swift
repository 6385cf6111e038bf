import CLMDB
import DAOCore
import Foundation

/// The values of one key range, handed to a ``FieldwiseRecord`` type's
/// ``FieldwiseRecord/readPacked(rows:)`` one at a time: the scan of
/// ``Transaction/scan(_:prefix:backwards:skipping:_:)`` turned inside out, so
/// that the record type's specialized code drives it and builds each record
/// in the array it returns. Each value is checked as the callback scan
/// checks it: a range filter's verdict on its bytes, then its fields
/// compared, its checksum; after the record is read, the fields it did not
/// read are laid out and the sort keys read. Used for one call, on one
/// thread; ``close()`` closes its cursor before the transaction ends.
final class RangeRows: PackedRows {
    private let cursor: OpaquePointer
    private let prefix: [UInt8]
    /// The prefix as one word when it is 8 bytes long (an integer parent
    /// key), compared so with each key; `nil` otherwise.
    private let prefixWord: UInt64?
    private let backwards: Bool
    private let step: MDB_cursor_op
    private let filter: RangeFilter?
    private let decoder: ValueDecoder
    private let sortKeys: SortKeys?
    private let operation: StorageError.Operation
    private let path: String
    /// What each value is checked against before it is read
    /// (``ValueBounds/lent(_:_:)``).
    private let bounds: ValueBounds
    @exclusivity(unchecked) private var started = false
    @exclusivity(unchecked) private var key = MDB_val()
    @exclusivity(unchecked) private var value = MDB_val()

    /// Whether ``close()`` closes the cursor: not one kept by the read
    /// codecs (``KeptReadCursor``).
    private let closesCursor: Bool

    /// The values of `dbi` under keys that start with `prefix`, in key order
    /// (descending when `backwards`), those `filter` keeps when there is one;
    /// read through `kept`'s cursor (on `dbi`) when it is given, else through
    /// one opened for them.
    init(
        _ txn: borrowing Transaction, _ dbi: MDB_dbi, prefix: [UInt8], backwards: Bool, filter: RangeFilter?,
        decoder: ValueDecoder, sortKeys: SortKeys?, cursor kept: KeptReadCursor? = nil
    ) throws {
        if let kept {
            cursor = try kept.renewed(in: txn)
            closesCursor = false
        } else {
            cursor = try txn.openCursor(dbi)
            closesCursor = true
        }
        self.prefix = prefix
        prefixWord = prefix.count == 8 ? prefix.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } : nil
        self.backwards = backwards
        step = backwards ? MDB_PREV : MDB_NEXT
        self.filter = filter
        self.decoder = decoder
        self.sortKeys = sortKeys
        operation = txn.operation
        path = txn.environment.path
        bounds = txn.bounds
    }

    /// Closes the cursor unless the codecs keep it; called once, before the
    /// transaction ends.
    func close() {
        if closesCursor { mdb_cursor_close(cursor) }
    }

    // Room for 16 records: a parent's range read by a query grew an array
    // from empty four or five times.
    override var expectedCount: Int { 16 }

    /// Whether the cursor's key starts with the prefix.
    @inline(__always)
    private func inRange() -> Bool {
        if let prefixWord {
            guard key.mv_size >= 8, let data = key.mv_data else { return false }
            return UnsafeRawPointer(data).loadUnaligned(as: UInt64.self) == prefixWord
        }
        return key.hasPrefix(prefix)
    }

    override func next() throws -> PackedFieldReader? {
        var code: Int32
        if started {
            code = mdb_cursor_get(cursor, &key, &value, step)
        } else {
            started = true
            code = backwards
                ? Cursor.moveToLast(cursor, withPrefix: prefix, &key, &value)
                : Cursor.moveToFirst(cursor, withPrefix: prefix, &key, &value)
        }
        guard let filter else {
            guard code == MDB_SUCCESS else { return try end(code) }
            guard inRange() else { return nil }
            try decoder.begin(bounds.lent(value, operation))
            return try decoder.packedReader()
        }
        while code == MDB_SUCCESS {
            guard inRange() else { return nil }
            let bytes = try bounds.lent(value, operation)
            // As the callback scan: the fixed-width fields at the value's
            // end first, then (undecided) the fields compared, before the
            // checksum; a value the filter skips is read no further, as one
            // outside an index range is not read.
            let verdict = filter.verdict(bytes)
            if verdict != .fails {
                try decoder.begin(bytes, checkingSum: false)
                if verdict == .passes {
                    try decoder.checkSum(bytes)
                    return try decoder.packedReader()
                }
                try filter.locate(in: decoder)
                if try filter.matches(decoder) {
                    try decoder.checkSum(bytes)
                    return try decoder.packedReader()
                }
            }
            code = mdb_cursor_get(cursor, &key, &value, step)
        }
        return try end(code)
    }

    /// The next value of the range that the filter keeps, for a view lent
    /// later (``LMDBRecordStorage``'s prepared views): checked as
    /// ``next()`` checks it (the range filter's verdict on its bytes, then
    /// its fields compared) but not read, its checksum not checked (a value
    /// lent is loaded whole, its checksum checked, when it is lent); begun
    /// in the decoder with its first `fields` fields laid out, for its sort
    /// keys to be read. `nil` at the range's end.
    func nextKept(layingOut fields: Int) throws -> UnsafeRawBufferPointer? {
        var code: Int32
        if started {
            code = mdb_cursor_get(cursor, &key, &value, step)
        } else {
            started = true
            code = backwards
                ? Cursor.moveToLast(cursor, withPrefix: prefix, &key, &value)
                : Cursor.moveToFirst(cursor, withPrefix: prefix, &key, &value)
        }
        let readsKeys = fields > 0 || sortKeys != nil
        while code == MDB_SUCCESS {
            guard inRange() else { return nil }
            let bytes = try bounds.lent(value, operation)
            switch filter?.verdict(bytes) ?? .passes {
            case .passes:
                // The decoder is not given a value no field of which is
                // read here.
                if readsKeys {
                    try decoder.begin(bytes, checkingSum: false)
                    try decoder.layOutPrefix(fields: fields)
                    try sortKeys?.read(decoder)
                }
                return bytes
            case .undecided:
                guard let filter else { break }
                try decoder.begin(bytes, checkingSum: false)
                try filter.locate(in: decoder)
                if try filter.matches(decoder) {
                    try decoder.layOutPrefix(fields: fields)
                    try sortKeys?.read(decoder)
                    return bytes
                }
            case .fails:
                break
            }
            code = mdb_cursor_get(cursor, &key, &value, step)
        }
        _ = try end(code)
        return nil
    }

    /// The end of the range at result code `code`: `nil`, or the error of a
    /// cursor that failed.
    private func end(_ code: Int32) throws -> PackedFieldReader? {
        if code != MDB_NOTFOUND { try LMDBError.check(code, operation, path: path, call: "mdb_cursor_get") }
        return nil
    }

    override func finish(_ reader: PackedFieldReader) throws {
        // The fields the record did not read (none, for a record that reads
        // every field), and the check that nothing follows them.
        try decoder.layOut(from: reader.fieldIndex, at: reader.byteOffset)
        try sortKeys?.read(decoder)
    }
}
