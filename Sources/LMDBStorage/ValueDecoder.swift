import DAOCore
import Foundation

/// Decodes values written by ``ValueEncoder`` into records, through a
/// ``PackedFieldReader`` (``FieldwiseRecord/readPacked(from:)`` for a
/// ``FieldwiseRecord``, DAOCore's ``CodableFields`` for a record that only
/// conforms to `Codable`, to which the children of its relations are handed
/// in: they come from their own database). One decoder serves one storage
/// call and is reused for each of its values; it reads straight from the
/// memory map, so the only copy made is into the record's own properties.
// @unchecked Sendable, restated from `PackedValueAccess`: a decoder is used
// by one call at a time (a table's pool hands each out to one read call).
final class ValueDecoder: PackedValueAccess, @unchecked Sendable {
    let schema: ValueSchema
    private var base = UnsafeRawBufferPointer(start: nil, count: 0)
    /// The value being decoded, without its checksum.
    var loaded: UnsafeRawBufferPointer { base }
    /// Per field: where its value starts in `base`, or -1 for nil. Memory of
    /// the decoder's own (not an array), so the per-field loops touch no
    /// reference count and no copy-on-write check.
    let offsets: UnsafeMutablePointer<Int>
    /// The schema's field types and optionality, the same way.
    let types: UnsafeMutablePointer<FieldType>
    let optional: UnsafeMutablePointer<Bool>
    /// The number of fields.
    let fieldCount: Int
    /// Whether the value's checksum was compared and matched: its text is
    /// then what this store wrote from Swift strings, well-formed UTF-8, and
    /// is made into strings without being validated again
    /// (``UTF8Text/string(validated:)``). A value of format 1 (no checksum),
    /// or one whose checksum is not compared yet (a range filter reads some
    /// fields first), has its text validated.
    private(set) var textIsValidated = false

    init(schema: ValueSchema) {
        self.schema = schema
        fieldCount = schema.fieldCount
        offsets = .allocate(capacity: max(fieldCount, 1))
        offsets.initialize(repeating: -1, count: max(fieldCount, 1))
        types = .allocate(capacity: max(fieldCount, 1))
        optional = .allocate(capacity: max(fieldCount, 1))
        for index in 0..<fieldCount {
            (types + index).initialize(to: schema.types[index])
            (optional + index).initialize(to: schema.optional[index])
        }
        super.init()
    }

    deinit {
        offsets.deallocate()
        types.deallocate()
        optional.deallocate()
    }

    /// The errors of ``packedReader()`` (``packedReadError(_:)``).
    override func readError(_ failure: PackedReadFailure) -> StorageError { packedReadError(failure) }

    func corrupt(_ message: String) -> StorageError {
        StorageError(.corrupt, .read, entity: schema.entity, message: "a stored value is damaged: \(message)")
    }

    /// Reads the layout of `value` (which must stay valid until the decoding
    /// that follows is done).
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` for an unknown format version, a
    ///   checksum that does not match, a truncated value or trailing bytes.
    func load(_ value: UnsafeRawBufferPointer, checkingSum: Bool = true) throws {
        try begin(value, checkingSum: checkingSum)
        try layOut(from: 0, at: 1)
    }

    /// Checks the format version and the checksum of `value` and makes it
    /// the decoder's value, without laying its fields out: a
    /// ``FieldwiseRecord`` read next (``decodeFieldwise(_:into:)``) lays them
    /// out as it reads them, in one pass over the bytes.
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` for an unknown format version
    ///   or a checksum that does not match.
    @inline(__always)
    func begin(_ value: UnsafeRawBufferPointer, checkingSum: Bool = true) throws {
        textIsValidated = false
        guard let version = value.first else { throw corrupt("it is empty") }
        let count: Int
        if version == ValueSchema.formatVersion {
            count = value.count - ValueSchema.checksumSize
            guard count > 0 else { throw corrupt("it is shorter than its checksum") }
            if checkingSum { try checkSum(value) }
        } else if version == ValueSchema.uncheckedFormatVersion {
            count = value.count
        } else {
            throw corrupt("its format version is \(version); this build reads versions \(ValueSchema.uncheckedFormatVersion) and \(ValueSchema.formatVersion)")
        }
        base = UnsafeRawBufferPointer(rebasing: value[..<count])
    }

    /// Lays out the fields from `first` on, the first of them starting at
    /// byte `start`, and checks that the last one ends the value.
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` for a truncated value or
    ///   trailing bytes.
    @inline(__always)
    func layOut(from first: Int, at start: Int) throws {
        let position = try walk(from: first, at: start, upTo: fieldCount)
        let count = base.count
        guard position == count else { throw corrupt("\(count - position) bytes follow the last field") }
    }

    /// Lays out the first `end` fields of the value ``begin(_:checkingSum:)``
    /// made the decoder's, and not the fields after them: a range filter
    /// reads those fields only (``RangeFilter``), and a child it skips is
    /// read no further, as a child outside an index range is not read.
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` for a value that ends before
    ///   or inside one of those fields.
    @inline(__always)
    func layOutPrefix(fields end: Int) throws {
        _ = try walk(from: 0, at: 1, upTo: end)
    }

    /// Records where each field from `first` up to (not including) `end`
    /// starts, the first of them at byte `start`; returns where the last
    /// one ends.
    @inline(__always)
    private func walk(from first: Int, at start: Int, upTo end: Int) throws -> Int {
        var position = start
        let value = base
        let count = value.count
        let offsets = self.offsets
        let types = self.types
        let optional = self.optional
        for index in first..<end {
            if optional[index] {
                guard position < count else { throw corrupt("it ends before field '\(schema.names[index])'") }
                let present = value[position]
                position += 1
                if present == 0 {
                    offsets[index] = -1
                    continue
                }
                guard present == 1 else { throw corrupt("field '\(schema.names[index])' has presence byte \(present)") }
            }
            offsets[index] = position
            switch types[index] {
            case .integer:
                // A varint: up to the first byte below 0x80.
                while position < count && value[position] >= 0x80 { position += 1 }
                position += 1
            case .bool:
                position += 1
            case .real, .date:
                position += 8
            case .text, .blob:
                let length = try readVarint(value, &position)
                guard length <= UInt64(count) else { throw corrupt("field '\(schema.names[index])' overruns the value") }
                position += Int(length)
            }
            guard position <= count else { throw corrupt("it ends inside field '\(schema.names[index])'") }
        }
        return position
    }

    /// Checks the CRC-32C of `value`, which ``load(_:checkingSum:)`` loaded
    /// without checking it (a value of format 1 has none).
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` when it does not match.
    func checkSum(_ value: UnsafeRawBufferPointer) throws {
        guard value.first == ValueSchema.formatVersion else { return }
        let count = value.count - ValueSchema.checksumSize
        guard count > 0, let start = value.baseAddress else { throw corrupt("it is shorter than its checksum") }
        let stored = UInt32(littleEndian: value.loadUnaligned(fromByteOffset: count, as: UInt32.self))
        let actual = CRC32C.checksum(UnsafeRawBufferPointer(start: start, count: count))
        guard stored == actual else {
            throw corrupt("its CRC-32C is \(actual), the value records \(stored)")
        }
        textIsValidated = true
    }

    /// The text whose UTF-8 bytes are `bytes`, which lie inside the loaded
    /// value: not validated again when the value's checksum matched.
    @inline(__always)
    func string(_ bytes: UnsafeRawBufferPointer) -> String {
        textIsValidated ? UTF8Text.string(validated: bytes) : UTF8Text.string(bytes)
    }

    @inline(__always)
    private func readVarint(_ position: inout Int) throws -> UInt64 {
        try readVarint(base, &position)
    }

    @inline(__always)
    private func readVarint(_ base: UnsafeRawBufferPointer, _ position: inout Int) throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < base.count, shift < 64 else { throw corrupt("an integer is cut off") }
            let byte = base[position]
            position += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// The value of field `index` of the loaded value.
    func value(at index: Int) throws -> StoredValue {
        var position = offsets[index]
        if position < 0 { return .null }
        switch types[index] {
        case .integer:
            let raw = try readVarint(&position)
            return .integer(Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1))
        case .bool:
            return .integer(base[position] == 0 ? 0 : 1)
        case .real, .date:
            return .real(Double(bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))))
        case .text:
            let length = Int(try readVarint(&position))
            return .text(string(UnsafeRawBufferPointer(rebasing: base[position..<position + length])))
        case .blob:
            let length = Int(try readVarint(&position))
            return .blob([UInt8](base[position..<position + length]))
        }
    }

    /// Decodes the loaded value as a ``FieldwiseRecord``, reading its fields by
    /// position; its relations are left empty for the caller to attach.
    func decodeFieldwise<F: FieldwiseRecord, R>(_ type: F.Type, as: R.Type) throws -> R {
        var reader = try packedReader()
        // `F` is `R` (the caller found `F` by casting `R.self`): compare the
        // metatypes and reinterpret, where `as? R` ran a dynamic cast through
        // `Optional<R>`'s metadata on every record.
        guard F.self == R.self else {
            throw StorageError(.decoding, .read, entity: schema.entity, message: "\(F.self) is not \(R.self)")
        }
        let record = try F.readPacked(from: &reader)
        try layOut(from: reader.fieldIndex, at: reader.byteOffset)
        return unsafeBitCast(record, to: R.self)
    }

    /// ``decodeFieldwise(_:as:)`` built in `slot`, which must be
    /// uninitialized; it is left so when this throws.
    @inline(__always)
    func decodeFieldwise<F: FieldwiseRecord, R>(_ type: F.Type, into slot: UnsafeMutablePointer<R>) throws {
        guard F.self == R.self else {
            throw StorageError(.decoding, .read, entity: schema.entity, message: "\(F.self) is not \(R.self)")
        }
        var reader = try packedReader()
        // Read straight into the slot: a record read into a local and then
        // put in the slot was copied there (a retain per reference it holds)
        // and the local destroyed (a release each), through the record
        // type's value witnesses, about 150 instructions a record.
        let typed = UnsafeMutableRawPointer(slot).assumingMemoryBound(to: F.self)
        typed.initialize(to: try F.readPacked(from: &reader))
        // The fields the record did not read (none, for a record that reads
        // every field), and the check that nothing follows them.
        do {
            try layOut(from: reader.fieldIndex, at: reader.byteOffset)
        } catch {
            typed.deinitialize(count: 1)
            throw error
        }
    }

    /// The integer, double or text of field `index` of the loaded value, which
    /// `load(_:)` checked to be present and of that type's shape.
    @inline(__always)
    func integer(at index: Int) throws -> Int64 {
        var position = offsets[index]
        let raw = try readVarint(&position)
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    @inline(__always)
    func real(at index: Int) -> Double {
        Double(bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offsets[index], as: UInt64.self)))
    }

    @inline(__always)
    func bool(at index: Int) -> Bool {
        base[offsets[index]] != 0
    }

    @inline(__always)
    func text(at index: Int) throws -> String {
        var position = offsets[index]
        let length = Int(try readVarint(&position))
        return string(UnsafeRawBufferPointer(rebasing: base[position..<position + length]))
    }

    @inline(__always)
    func bytes(at index: Int) throws -> Data {
        var position = offsets[index]
        let length = Int(try readVarint(&position))
        return Data(base[position..<position + length])
    }

    /// The bytes of the text or blob field `index` of the loaded value,
    /// which was laid out through it (they lie inside the value).
    @inline(__always)
    func rawBytes(at index: Int) throws -> UnsafeRawBufferPointer {
        var position = offsets[index]
        let length = Int(try readVarint(&position))
        return UnsafeRawBufferPointer(rebasing: base[position..<position + length])
    }

    @inline(__always)
    func isNull(at index: Int) -> Bool {
        offsets[index] < 0
    }

    /// Decodes the value ``begin(_:checkingSum:)`` made the decoder's into a
    /// record that only conforms to `Codable`, through `codable`;
    /// `children` are the values of its relations, in declaration order
    /// (`[Child]` each).
    ///
    /// - Throws: ``StorageError`` (``CodableFields``'s, the packed reader's),
    ///   or the record's own error.
    func decode<R: Record>(_ type: R.Type, with codable: CodableFields, children: [Any]) throws -> R {
        var reader = try packedReader()
        let record = try codable.read(R.self, from: &reader, relations: children)
        try layOut(from: reader.fieldIndex, at: reader.byteOffset)
        return record
    }
}

extension ValueDecoder {
    /// A reader of the fields of the value ``begin(_:checkingSum:)`` made the
    /// decoder's, for a ``FieldwiseRecord`` (``FieldwiseRecord/readPacked(from:)``,
    /// its `init(fields:)` specialized in the record's own module): the
    /// stored fields are in declaration order already. It lays the value out
    /// as it reads it (each field's offset recorded in ``offsets``, as
    /// ``layOut(from:at:)`` records it), so a value is walked once
    /// (docs/ARCHITECTURE.md, "The LMDB adapter"). It holds the decoder
    /// `unowned(unsafe)`: it lives only inside the decoder's own
    /// ``decodeFieldwise(_:into:)`` (or `(_:as:)`).
    @inline(__always)
    func packedReader() throws -> PackedFieldReader {
        guard let start = loaded.baseAddress else { throw corrupt("it is empty") }
        return PackedFieldReader(
            access: self, start: start, count: loaded.count, first: 1, types: types, optional: optional,
            offsets: offsets, fieldCount: fieldCount, textIsValidated: textIsValidated)
    }

    /// The errors of ``packedReader()``: damage is `corrupt`, a field read as
    /// what it is not is `decoding`.
    func packedReadError(_ failure: PackedReadFailure) -> StorageError {
        switch failure {
        case .tooFewFields:
            return decoding("the value has only \(fieldCount) fields")
        case .storedAs(let field, let stored, let read):
            return decoding("field '\(schema.names[field])' is stored as \(stored), not read as \(read)")
        case .null(let field):
            return decoding("field '\(schema.names[field])' is null")
        case .presenceByte(let field, let present):
            return corrupt("field '\(schema.names[field])' has presence byte \(present)")
        case .endsBefore(let field):
            return corrupt("it ends before field '\(schema.names[field])'")
        case .endsInside(let field):
            return corrupt("it ends inside field '\(schema.names[max(field, 0)])'")
        case .integerCutOff:
            return corrupt("an integer is cut off")
        case .refused(let message):
            return decoding(message)
        }
    }

    private func decoding(_ message: String) -> StorageError {
        StorageError(.decoding, .read, entity: schema.entity, message: message)
    }
}
