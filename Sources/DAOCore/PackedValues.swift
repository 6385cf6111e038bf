import Foundation

/// Why ``PackedFieldWriter`` could not write a record; the adapter makes the
/// error (``PackedValueAccess/writeError(_:)``).
public enum PackedWriteFailure: Sendable {
    /// The record wrote more fields than the entity declares.
    case tooManyFields
    /// The record wrote `value` for field `field`, which is declared of another type.
    case mismatch(field: Int, value: StoredValue)
    /// The record wrote nil for field `field`, which is not optional.
    case notOptional(field: Int)
    /// The adapter could not make room for the value.
    case noRoom
}

/// Why ``PackedFieldReader`` could not read a field; the adapter makes the
/// error (``PackedValueAccess/readError(_:)``).
public enum PackedReadFailure: Sendable {
    /// The record read more fields than the value holds.
    case tooFewFields
    /// Field `field` is stored as `stored`, but was read as `read`.
    case storedAs(field: Int, stored: FieldType, read: FieldType)
    /// Field `field` is null, read as a value.
    case null(field: Int)
    /// Field `field`'s presence byte is neither 0 nor 1 (damage).
    case presenceByte(field: Int, UInt8)
    /// The value ends before field `field` (damage).
    case endsBefore(field: Int)
    /// The value ends inside field `field` (damage).
    case endsInside(field: Int)
    /// An integer runs past the value's end or past 64 bits (damage).
    case integerCutOff
    /// The record refused a value it read (``FieldReader/error(_:)``).
    case refused(String)
}

/// What an adapter does for ``PackedFieldWriter`` and ``PackedFieldReader``
/// besides reading and writing bytes: it grows the memory a value is written
/// into and makes the errors. Each adapter that uses them subclasses it.
///
/// Writers and readers hold it `unowned(unsafe)`, so that they are copied as
/// plain bits; whoever makes one keeps the access alive while it is used.
open class PackedValueAccess: @unchecked Sendable {
    // @unchecked: no state here; subclasses say why they are safe to share.

    /// An access that cannot grow memory and makes generic errors.
    public init() {}

    /// Makes room for at least `needed` bytes, keeping the first `kept` of
    /// the memory last handed out; returns the memory and its size, or `nil`
    /// when it cannot.
    open func grow(toHold needed: Int, keeping kept: Int) -> (UnsafeMutableRawPointer, Int)? { nil }

    /// The error of a record that could not be written.
    open func writeError(_ failure: PackedWriteFailure) -> StorageError {
        StorageError(.encoding, .persist, message: "a record could not be written: \(failure)")
    }

    /// The error of a value that could not be read.
    open func readError(_ failure: PackedReadFailure) -> StorageError {
        StorageError(.decoding, .read, message: "a value could not be read: \(failure)")
    }
}

/// Field tags of the packed value format: what decides how a field is laid
/// out. Presence byte (0 or 1) before an optional field; integers as zigzag
/// LEB128 varints; booleans as one byte; reals and dates as the `Double`'s
/// bit pattern, 8 bytes little-endian; text (UTF-8) and bytes as a varint
/// length and the bytes. The LMDB adapter stores its values so.
///
/// A ``FieldWriter`` that writes a record's fields in this format straight
/// into memory the adapter owns, each checked against its declared type (and
/// optionality) as it is written; it records where each field starts, or -1
/// for nil.
///
/// A concrete type with inlinable members, so that a record's
/// `write(fields:)` specialized for it (``FieldwiseRecord/writePacked(to:)``)
/// writes each field without a call through a witness table.
public struct PackedFieldWriter: FieldWriter {
    @usableFromInline unowned(unsafe) let access: PackedValueAccess
    @usableFromInline let types: UnsafePointer<FieldType>
    @usableFromInline let optional: UnsafePointer<Bool>
    @usableFromInline let offsets: UnsafeMutablePointer<Int>
    @usableFromInline let fieldCount: Int
    @usableFromInline var base: UnsafeMutableRawPointer
    @usableFromInline var capacity: Int
    @usableFromInline var written: Int
    @usableFromInline var index = 0

    /// A writer into `capacity` bytes at `base`, from byte `start` on, of a
    /// record whose `fieldCount` fields have the given types and
    /// optionality; it records each field's start in `offsets`. `access`
    /// grows the memory and makes the errors; the caller keeps it and the
    /// tables alive for as long as it uses the writer.
    @inlinable
    package init(
        access: PackedValueAccess, base: UnsafeMutableRawPointer, capacity: Int, start: Int,
        types: UnsafePointer<FieldType>, optional: UnsafePointer<Bool>, offsets: UnsafeMutablePointer<Int>,
        fieldCount: Int
    ) {
        self.access = access
        self.base = base
        self.capacity = capacity
        self.written = start
        self.types = types
        self.optional = optional
        self.offsets = offsets
        self.fieldCount = fieldCount
    }

    /// The number of bytes written so far (with the `start` the writer was made with).
    @inlinable package var byteCount: Int { written }
    /// The number of fields written so far.
    @inlinable package var fieldIndex: Int { index }

    @inlinable @inline(__always)
    mutating func reserve(_ needed: Int) throws {
        if written + needed > capacity { try grow(needed) }
    }

    @inlinable @inline(never)
    mutating func grow(_ needed: Int) throws {
        guard let (grown, size) = access.grow(toHold: written + needed, keeping: written) else {
            throw access.writeError(.noRoom)
        }
        base = grown
        capacity = size
    }

    @inlinable @inline(__always)
    mutating func put(_ byte: UInt8) {
        base.storeBytes(of: byte, toByteOffset: written, as: UInt8.self)
        written += 1
    }

    @inlinable @inline(__always)
    mutating func putVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            put(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        put(UInt8(value))
    }

    @inlinable @inline(__always)
    mutating func putDouble(_ value: Double) {
        base.storeBytes(of: value.bitPattern.littleEndian, toByteOffset: written, as: UInt64.self)
        written += 8
    }

    @inlinable @inline(__always)
    mutating func putRun(_ bytes: UnsafeRawBufferPointer) throws {
        try reserve(10 + bytes.count)
        putVarint(UInt64(bytes.count))
        if let source = bytes.baseAddress, !bytes.isEmpty {
            (base + written).copyMemory(from: source, byteCount: bytes.count)
            written += bytes.count
        }
    }

    /// The declared type of the next field.
    @inlinable @inline(__always)
    mutating func nextType() throws -> FieldType {
        guard index < fieldCount else { throw access.writeError(.tooManyFields) }
        return types[index]
    }

    /// Starts the next field (a present value) with room for `size` bytes
    /// after its presence byte.
    @inlinable @inline(__always)
    mutating func begin(reserving size: Int) throws {
        try reserve(size + 1)
        if optional[index] { put(1) }
        offsets[index] = written
        index += 1
    }

    /// Writes an integer field (or a boolean 0 or 1, or a real).
    @inlinable @inline(__always)
    public mutating func encode(_ value: Int64) throws {
        switch try nextType() {
        case .integer:
            try begin(reserving: 10)
            putVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
        case .bool where value == 0 || value == 1:
            try begin(reserving: 1)
            put(UInt8(value))
        case .real:
            try begin(reserving: 8)
            putDouble(Double(value))
        default:
            throw access.writeError(.mismatch(field: index, value: .integer(value)))
        }
    }

    /// Writes a real or date field, its bits as given (`-0.0` and NaN too).
    @inlinable @inline(__always)
    public mutating func encode(_ value: Double) throws {
        switch try nextType() {
        case .real, .date:
            try begin(reserving: 8)
            putDouble(value)
        default:
            throw access.writeError(.mismatch(field: index, value: .real(value)))
        }
    }

    /// Writes a text field.
    @inlinable @inline(__always)
    public mutating func encode(_ value: String) throws {
        guard try nextType() == .text else { throw access.writeError(.mismatch(field: index, value: .text(value))) }
        try begin(reserving: 0)
        // A native string lends its UTF-8 in place; `withUTF8` needs a
        // mutable copy of the string (a retain and a release per text).
        let done: Void? = try value.utf8.withContiguousStorageIfAvailable { try putRun(UnsafeRawBufferPointer($0)) }
        if done == nil {
            var text = value
            try text.withUTF8 { try putRun(UnsafeRawBufferPointer($0)) }
        }
    }

    /// Writes a boolean field.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Bool) throws { try encode(Int64(value ? 1 : 0)) }

    /// Writes a date field (seconds since 2001-01-01).
    @inlinable @inline(__always)
    public mutating func encode(_ value: Date) throws { try encode(value.storedSeconds) }

    /// Writes a bytes field.
    @inlinable
    public mutating func encode(_ value: Data) throws {
        guard try nextType() == .blob else {
            throw access.writeError(.mismatch(field: index, value: .blob([UInt8](value))))
        }
        try begin(reserving: 0)
        try value.withUnsafeBytes { try putRun($0) }
    }

    /// Writes nil for an optional field.
    @inlinable @inline(__always)
    public mutating func encodeNil() throws {
        _ = try nextType()
        guard optional[index] else { throw access.writeError(.notOptional(field: index)) }
        try reserve(1)
        put(0)
        offsets[index] = -1
        index += 1
    }
}

/// The values an adapter hands to a record type's
/// ``FieldwiseRecord/readPacked(rows:)``, one at a time: each adapter that
/// reads many records at once subclasses it.
open class PackedRows {
    public init() {}

    /// How many records to make room for at first.
    open var expectedCount: Int { 0 }

    /// A reader of the next value to read a record from, or `nil` after the
    /// last one.
    /// - Throws: the adapter's ``StorageError`` for a value it cannot hand
    ///   over (damaged, or of an unknown format).
    open func next() throws -> PackedFieldReader? { nil }

    /// Called with the reader once a record was read from it: what the
    /// record did not read is checked, and what the adapter keeps of the
    /// value read.
    /// - Throws: the adapter's ``StorageError``.
    open func finish(_ reader: PackedFieldReader) throws {}
}

/// A ``FieldReader`` over a value in the format ``PackedFieldWriter`` writes,
/// reading the fields one after another and recording where each starts
/// (-1 for nil) as it reads it, so that a value is walked once. Every read
/// is bounded by the value's end: a field cut short, or a presence byte
/// other than 0 or 1, is the adapter's error for damage.
///
/// A concrete type with inlinable members, so that a record's
/// `init(fields:)` specialized for it (``FieldwiseRecord/readPacked(from:)``)
/// reads each field without a call through a witness table.
public struct PackedFieldReader: FieldReader {
    @usableFromInline unowned(unsafe) let access: PackedValueAccess
    @usableFromInline let start: UnsafeRawPointer
    @usableFromInline let count: Int
    @usableFromInline let offsets: UnsafeMutablePointer<Int>
    @usableFromInline let types: UnsafePointer<FieldType>
    @usableFromInline let optional: UnsafePointer<Bool>
    @usableFromInline let fieldCount: Int
    /// Whether the value's text is known to be well-formed UTF-8
    /// (``UTF8Text/string(validated:)``), so that it is not validated again.
    @usableFromInline let textIsValidated: Bool
    @usableFromInline var index = 0
    @usableFromInline var position: Int

    /// A reader of the `count` bytes at `start`, its first field at byte
    /// `first`, of a record whose `fieldCount` fields have the given types
    /// and optionality; it records each field's start in `offsets`.
    /// `access` makes the errors; the caller keeps it, the bytes and the
    /// tables alive for as long as it uses the reader.
    ///
    /// `textIsValidated` says that every text field of the value is known to
    /// be well-formed UTF-8 (an adapter that verified a checksum over bytes
    /// it wrote from Swift strings): text is then built without validating
    /// it again. Otherwise (the default) it is validated, and ill-formed
    /// sequences are repaired as `String(decoding:as:)` repairs them.
    @inlinable
    package init(
        access: PackedValueAccess, start: UnsafeRawPointer, count: Int, first: Int,
        types: UnsafePointer<FieldType>, optional: UnsafePointer<Bool>, offsets: UnsafeMutablePointer<Int>,
        fieldCount: Int, textIsValidated: Bool = false
    ) {
        self.access = access
        self.start = start
        self.count = count
        self.position = first
        self.types = types
        self.optional = optional
        self.offsets = offsets
        self.fieldCount = fieldCount
        self.textIsValidated = textIsValidated
    }

    /// The number of fields read so far.
    @inlinable package var fieldIndex: Int { index }
    /// Where the next field starts (its presence byte, for an optional field).
    @inlinable package var byteOffset: Int { position }

    /// The start of the next field's value, checked to exist, to be present
    /// and to be stored as `type` (or `other`); the field is recorded as read.
    @inlinable @inline(__always)
    mutating func next(_ type: FieldType, or other: FieldType) throws -> Int {
        guard index < fieldCount else { throw access.readError(.tooFewFields) }
        let stored = types[index]
        guard stored == type || stored == other else {
            throw access.readError(.storedAs(field: index, stored: stored, read: type))
        }
        var at = position
        if optional[index] {
            guard at < count else { throw access.readError(.endsBefore(field: index)) }
            let present = start.load(fromByteOffset: at, as: UInt8.self)
            guard present == 1 else {
                if present == 0 { throw access.readError(.null(field: index)) }
                throw access.readError(.presenceByte(field: index, present))
            }
            at += 1
        }
        offsets[index] = at
        index += 1
        return at
    }

    /// The varint at `at`, which is moved past it.
    @inlinable @inline(__always)
    mutating func varint(_ at: inout Int) throws -> UInt64 {
        guard at < count else { throw access.readError(.endsInside(field: index - 1)) }
        let first = start.load(fromByteOffset: at, as: UInt8.self)
        at += 1
        if first < 0x80 { return UInt64(first) }
        var result = UInt64(first & 0x7F)
        var shift: UInt64 = 7
        while true {
            guard at < count, shift < 64 else { throw access.readError(.integerCutOff) }
            let byte = start.load(fromByteOffset: at, as: UInt8.self)
            at += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// The bytes of the text or blob at `at` (its length first).
    @inlinable @inline(__always)
    mutating func lengthPrefixed(at: Int) throws -> UnsafeRawBufferPointer {
        var at = at
        let length = try varint(&at)
        guard length <= UInt64(count - at) else { throw access.readError(.endsInside(field: index - 1)) }
        position = at + Int(length)
        return UnsafeRawBufferPointer(start: start + at, count: Int(length))
    }

    @inlinable @inline(__always)
    mutating func eightBytes(at: Int) throws -> UInt64 {
        guard count - at >= 8 else { throw access.readError(.endsInside(field: index - 1)) }
        position = at + 8
        return UInt64(littleEndian: start.loadUnaligned(fromByteOffset: at, as: UInt64.self))
    }

    /// Reads an integer field.
    @inlinable @inline(__always)
    public mutating func decode(_ type: Int64.Type) throws -> Int64 {
        var at = try next(.integer, or: .integer)
        let raw = try varint(&at)
        position = at
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    /// Reads a real (or date) field.
    @inlinable @inline(__always)
    public mutating func decode(_ type: Double.Type) throws -> Double {
        Double(bitPattern: try eightBytes(at: next(.real, or: .date)))
    }

    /// Reads a text field: validated, ill-formed UTF-8 repaired as
    /// `String(decoding:as:)` does, unless the value's text is known to be
    /// well-formed (`textIsValidated`).
    @inlinable @inline(__always)
    public mutating func decode(_ type: String.Type) throws -> String {
        let bytes = try lengthPrefixed(at: next(.text, or: .text))
        return textIsValidated ? UTF8Text.string(validated: bytes) : UTF8Text.string(bytes)
    }

    /// Reads a boolean field.
    @inlinable @inline(__always)
    public mutating func decode(_ type: Bool.Type) throws -> Bool {
        let at = try next(.bool, or: .bool)
        guard at < count else { throw access.readError(.endsInside(field: index - 1)) }
        position = at + 1
        return start.load(fromByteOffset: at, as: UInt8.self) != 0
    }

    /// Reads a bytes field.
    @inlinable
    public mutating func decode(_ type: Data.Type) throws -> Data {
        Data(try lengthPrefixed(at: next(.blob, or: .blob)))
    }

    /// Reads a date (or real) field.
    @inlinable @inline(__always)
    public mutating func decode(_ type: Date.Type) throws -> Date {
        Date(storedSeconds: Double(bitPattern: try eightBytes(at: next(.date, or: .real))))
    }

    /// Whether the next field is nil; a nil field is consumed.
    @inlinable @inline(__always)
    public mutating func decodeNil() throws -> Bool {
        guard index < fieldCount, optional[index] else { return false }
        guard position < count else { throw access.readError(.endsBefore(field: index)) }
        let present = start.load(fromByteOffset: position, as: UInt8.self)
        if present == 0 {
            offsets[index] = -1
            index += 1
            position += 1
            return true
        }
        guard present == 1 else { throw access.readError(.presenceByte(field: index, present)) }
        return false
    }

    /// The adapter's error for a value the record refused.
    @inlinable
    public func error(_ message: String) -> StorageError {
        access.readError(.refused(message))
    }
}

extension FieldwiseRecord {
    /// Writes the record's fields to `writer` (see ``FieldwiseRecord/writePacked(to:)``).
    ///
    /// Inlinable, so that the conformance of each record type uses a copy
    /// specialized for it.
    @inlinable
    public func writePacked(to writer: inout PackedFieldWriter) throws {
        try write(fields: &writer)
    }

    /// Writes the fields of the record at `record` to `writer` (see
    /// ``FieldwiseRecord/writePacked(at:to:)``).
    ///
    /// Inlinable, so that the conformance of each record type uses a copy
    /// specialized for it.
    @inlinable
    public static func writePacked(at record: UnsafePointer<Self>, to writer: inout PackedFieldWriter) throws {
        // Lent as `inout` (never written: `write(fields:)` does not mutate),
        // so the record is read where it is. Read through the pointer as a
        // value, it was copied whole before `write(fields:)`, which is not
        // inlined here, was called (an outlined copy and destroy, about 100
        // instructions for a message).
        try writePacked(inPlace: &UnsafeMutablePointer(mutating: record).pointee, to: &writer)
    }

    /// `write(fields:)` of `record`, which is only read.
    @inlinable
    static func writePacked(inPlace record: inout Self, to writer: inout PackedFieldWriter) throws {
        try record.write(fields: &writer)
    }

    /// Reads a record from `reader` (see ``FieldwiseRecord/readPacked(from:)``).
    ///
    /// Inlinable, so that the conformance of each record type uses a copy
    /// specialized for it.
    @inlinable
    public static func readPacked(from reader: inout PackedFieldReader) throws -> Self {
        try Self(fields: &reader)
    }

    /// Reads a record from each value of `rows` (see ``FieldwiseRecord/readPacked(rows:)``).
    ///
    /// Inlinable, so that the conformance of each record type uses a copy
    /// specialized for it.
    @inlinable
    public static func readPacked(rows: PackedRows) throws -> [Self] {
        var records: [Self] = []
        records.reserveCapacity(rows.expectedCount)
        while var reader = try rows.next() {
            records.append(try Self(fields: &reader))
            try rows.finish(reader)
        }
        return records
    }
}
