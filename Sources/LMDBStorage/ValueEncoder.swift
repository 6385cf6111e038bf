import DAOCore
import Foundation

/// Encodes records into the compact binary value format, through a
/// ``PackedFieldWriter`` (``FieldwiseRecord/writePacked(to:)`` for a
/// ``FieldwiseRecord``, DAOCore's ``CodableFields`` for a record that only
/// conforms to `Codable`): the format version byte, then every field in
/// declaration order (no key names):
///
/// - optional fields: a presence byte (0 = nil, 1 = a value follows);
/// - integers: zigzag LEB128 varint; booleans: one byte;
/// - reals and dates: 8 bytes, the `Double` bit pattern little-endian (dates as
///   seconds since 2001-01-01, bit for bit);
/// - text and blobs: varint length, then the bytes (text as UTF-8).
///
/// Relations are not in the value: children are stored in their own database. One
/// encoder serves one storage call and is reused for each of its records.
///
/// The stored properties are `@exclusivity(unchecked)`: an encoder is used by
/// one call at a time and never lends a property while another access to it
/// runs, and the runtime's dynamic check cost about 9% of LMDB's `persist`.
// @unchecked Sendable, restated from `PackedValueAccess`: an encoder is
// used by one call at a time (see above).
final class ValueEncoder: PackedValueAccess, @unchecked Sendable {
    let schema: ValueSchema
    /// The encoded value of the last ``encodeFields(_:)``:
    /// `count` bytes at `storage`, memory of the encoder's own (`capacity`
    /// bytes), written without an array's uniqueness and capacity checks.
    @exclusivity(unchecked) fileprivate var storage: UnsafeMutableRawPointer
    @exclusivity(unchecked) fileprivate var capacity: Int
    @exclusivity(unchecked) fileprivate var count = 0
    /// Where each field of the last value starts in ``bytes``,
    /// or -1 for nil. With the schema's types and optionality, memory of the
    /// encoder's own, so the per-field writes touch no reference count.
    fileprivate let offsets: UnsafeMutablePointer<Int>
    fileprivate let types: UnsafeMutablePointer<FieldType>
    fileprivate let optional: UnsafeMutablePointer<Bool>

    init(schema: ValueSchema) {
        self.schema = schema
        capacity = 256
        storage = .allocate(byteCount: capacity, alignment: 8)
        let capacity = max(schema.fieldCount, 1)
        offsets = .allocate(capacity: capacity)
        offsets.initialize(repeating: -1, count: capacity)
        types = .allocate(capacity: capacity)
        optional = .allocate(capacity: capacity)
        for index in 0..<schema.fieldCount {
            (types + index).initialize(to: schema.types[index])
            (optional + index).initialize(to: schema.optional[index])
        }
        super.init()
    }

    deinit {
        storage.deallocate()
        offsets.deallocate()
        types.deallocate()
        optional.deallocate()
    }

    /// Encodes the record whose fields `body` writes: one after another
    /// straight into the value's bytes (``PackedFieldWriter``: for a
    /// ``FieldwiseRecord`` its `writePacked(to:)`, specialized in the record's
    /// own module; for a record that only conforms to `Codable`,
    /// ``CodableFields``), each checked against its declared storage class,
    /// without a `StoredValue` per field. The result is in ``encoded`` until
    /// the next call.
    func encodeFields(_ body: (inout PackedFieldWriter) throws -> Void) throws {
        storage.storeBytes(of: ValueSchema.formatVersion, as: UInt8.self)
        count = 0
        var writer = PackedFieldWriter(
            access: self, base: storage, capacity: capacity, start: 1, types: types, optional: optional,
            offsets: offsets, fieldCount: schema.fieldCount)
        try body(&writer)
        guard writer.fieldIndex == schema.fieldCount else {
            throw StorageError(
                .schemaMismatch, .persist, entity: schema.entity,
                message: "the record wrote \(writer.fieldIndex) fields; '\(schema.entity)' declares \(schema.fieldCount)")
        }
        let written = writer.byteCount
        let checksum = CRC32C.checksum(UnsafeRawBufferPointer(start: storage, count: written))
        if written + ValueSchema.checksumSize > capacity {
            enlarge(toHold: written + ValueSchema.checksumSize, keeping: written)
        }
        (storage + written).storeBytes(of: checksum.littleEndian, as: UInt32.self)
        count = written + ValueSchema.checksumSize
    }

    /// Grows the memory for a ``PackedFieldWriter``.
    override func grow(toHold needed: Int, keeping kept: Int) -> (UnsafeMutableRawPointer, Int)? {
        enlarge(toHold: needed, keeping: kept)
        return (storage, capacity)
    }

    /// The errors of ``encodeFields(_:)``.
    override func writeError(_ failure: PackedWriteFailure) -> StorageError {
        let entity = schema.entity
        switch failure {
        case .tooManyFields:
            return StorageError(
                .schemaMismatch, .persist, entity: entity,
                message: "the record writes more fields than the \(schema.fieldCount) '\(entity)' declares")
        case .mismatch(let field, let value):
            return StorageError(
                .encoding, .persist, entity: entity,
                message: "the field '\(schema.names[field])' is declared \(schema.types[field].rawValue) but was encoded as \(value)")
        case .notOptional(let field):
            return StorageError(
                .encoding, .persist, entity: entity,
                message: "the field '\(schema.names[field])' is not optional but was encoded as nil")
        case .noRoom:
            return StorageError(.encoding, .persist, entity: entity, message: "no room for the value")
        }
    }

    /// The bytes of the last encoded value, valid until the next encoding.
    @inline(__always)
    var encoded: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: storage, count: count) }

    /// Makes room for at least `needed` bytes, keeping the first `kept`.
    @inline(never)
    fileprivate func enlarge(toHold needed: Int, keeping kept: Int) {
        var larger = capacity * 2
        while larger < needed { larger *= 2 }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: larger, alignment: 8)
        grown.copyMemory(from: storage, byteCount: kept)
        storage.deallocate()
        storage = grown
        capacity = larger
    }

    /// The value encoded for field `index` by the last ``encodeFields(_:)``.
    @inline(__always)
    func value(at index: Int) -> StoredValue {
        var position = offsets[index]
        guard position >= 0 else { return .null }
        do {
            let bytes = encoded
            switch types[index] {
            case .integer:
                let raw = Varint.read(bytes, &position)
                return .integer(Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1))
            case .bool:
                return .integer(bytes[position] == 0 ? 0 : 1)
            case .real, .date:
                return .real(Double(bitPattern: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt64.self))))
            case .text:
                let length = Int(Varint.read(bytes, &position))
                return .text(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[position..<position + length]), as: UTF8.self))
            case .blob:
                let length = Int(Varint.read(bytes, &position))
                return .blob([UInt8](bytes[position..<position + length]))
            }
        }
    }

    /// Appends the key bytes of field `index` of the last encoded value:
    /// the bytes `KeyCodec.append(untagged: value(at: index), to:)` appends,
    /// read for an integer, a text or a blob straight from the encoded
    /// bytes, without a ``StoredValue`` (nor a `String`) in between.
    @inline(__always)
    func appendKey(ofField index: Int, to key: inout [UInt8]) {
        var position = offsets[index]
        guard position >= 0 else { return }
        let bytes = encoded
        switch types[index] {
        case .integer:
            let raw = Varint.read(bytes, &position)
            KeyCodec.append(integer: Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1), to: &key)
        case .text, .blob:
            let length = Int(Varint.read(bytes, &position))
            KeyCodec.append(escaped: UnsafeRawBufferPointer(rebasing: bytes[position..<position + length]), to: &key)
        case .bool, .real, .date:
            KeyCodec.append(untagged: value(at: index), to: &key)
        }
    }

    /// The integer of field `index` of the last value, when the field is
    /// declared an integer and is not nil; `nil` otherwise.
    @inline(__always)
    func integer(at index: Int) -> Int64? {
        guard types[index] == .integer else { return nil }
        var position = offsets[index]
        guard position >= 0 else { return nil }
        let raw = Varint.read(encoded, &position)
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }
}

/// Integer varints.
enum Varint {
    /// Reads a varint written by ``append(_:to:)`` at `position` of bytes the
    /// caller wrote itself (so well formed), and moves past it.
    @inline(__always)
    static func read(_ bytes: UnsafeRawBufferPointer, _ position: inout Int) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while position < bytes.count && shift < 64 {
            let byte = bytes[position]
            position += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { break }
            shift += 7
        }
        return result
    }

    @inline(__always)
    static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    @inline(__always)
    static func append(zigzag value: Int64, to bytes: inout [UInt8]) {
        append(UInt64(bitPattern: (value << 1) ^ (value >> 63)), to: &bytes)
    }
}
