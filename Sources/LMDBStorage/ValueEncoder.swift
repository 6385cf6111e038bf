import DAOCore
import Foundation

/// Encodes records into the compact binary value format, driven by each
/// record's `Codable` conformance: the format version byte, then every field
/// in declaration order (no key names):
///
/// - optional fields: a presence byte (0 = nil, 1 = a value follows);
/// - integers: zigzag LEB128 varint; booleans: one byte;
/// - reals and dates: 8 bytes, the `Double` bit pattern little-endian (dates as
///   seconds since 2001-01-01, bit for bit);
/// - text and blobs: varint length, then the bytes (text as UTF-8).
///
/// Relation keys are skipped: children are stored in their own database. One
/// encoder serves one storage call and is reused for each of its records.
///
/// The stored properties are `@exclusivity(unchecked)`: an encoder is used by
/// one call at a time and never lends a property while another access to it
/// runs, and the runtime's dynamic check cost about 9% of LMDB's `persist`.
// @unchecked Sendable, restated from `PackedValueAccess`: an encoder is
// used by one call at a time (see above).
final class ValueEncoder: PackedValueAccess, @unchecked Sendable {
    let schema: ValueSchema
    /// The encoded value of the last ``encode(_:)`` or ``encodeFields(_:)``:
    /// `count` bytes at `storage`, memory of the encoder's own (`capacity`
    /// bytes), written without an array's uniqueness and capacity checks.
    @exclusivity(unchecked) fileprivate var storage: UnsafeMutableRawPointer
    @exclusivity(unchecked) fileprivate var capacity: Int
    @exclusivity(unchecked) fileprivate var count = 0
    /// The bytes of a record encoded through `Encodable`, kept for the next one.
    private var scratch: [UInt8] = []
    @exclusivity(unchecked) fileprivate var slots: [StoredValue?]
    @exclusivity(unchecked) fileprivate var failure: StorageError?
    @exclusivity(unchecked) fileprivate var nextGuess = 0
    /// Whether the last value was written field by field straight into
    /// ``bytes`` (``encodeFields(_:)``), so ``value(at:)`` reads it there.
    @exclusivity(unchecked) private var isDirect = false
    /// For a value written straight into ``bytes``: where each field starts,
    /// or -1 for nil. With the schema's types and optionality, memory of the
    /// encoder's own, so the per-field writes touch no reference count.
    fileprivate let offsets: UnsafeMutablePointer<Int>
    fileprivate let types: UnsafeMutablePointer<FieldType>
    fileprivate let optional: UnsafeMutablePointer<Bool>

    init(schema: ValueSchema) {
        self.schema = schema
        slots = Array(repeating: nil, count: schema.fieldCount)
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

    /// Encodes `record`; the result is in ``bytes`` until the next call.
    ///
    /// - Throws: ``StorageError``: ``StorageError/Kind/schemaMismatch`` for a key
    ///   the entity does not declare, ``StorageError/Kind/encoding`` for a value
    ///   that is not of its field's storage class or a missing field.
    func encode<R: Record>(_ record: R) throws {
        isDirect = false
        for index in slots.indices { slots[index] = nil }
        failure = nil
        nextGuess = 0
        do {
            try record.encode(to: RecordEncoder(state: self))
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(
                .encoding, .persist, entity: schema.entity, message: "the record could not be encoded",
                underlying: error)
        }
        if let failure { throw failure }
        try serialize()
    }

    /// Encodes a ``FieldwiseRecord`` whose `writePacked(to:)` `body` runs:
    /// its fields are written one after another straight into the value's
    /// bytes (``PackedFieldWriter``, specialized in the record's own
    /// module), each checked against its declared storage class as
    /// `encode(_:)` checks it, without a `StoredValue` per field.
    func encodeFields(_ body: (inout PackedFieldWriter) throws -> Void) throws {
        isDirect = true
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

    /// The errors of ``encodeFields(_:)``, as ``encode(_:)`` words them.
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

    /// Writes the filled slots as the value's bytes.
    private func serialize() throws {
        count = 0
        // One buffer for every record this encoder writes, lent out while
        // this record is serialized.
        var out: [UInt8] = []
        swap(&out, &scratch)
        defer { swap(&out, &scratch) }
        out.removeAll(keepingCapacity: true)
        out.reserveCapacity(256)
        out.append(ValueSchema.formatVersion)
        let slots = self.slots
        for index in slots.indices {
            try write(slots[index], field: index, to: &out)
        }
        let checksum = out.withUnsafeBytes { CRC32C.checksum($0) }
        withUnsafeBytes(of: checksum.littleEndian) { out.append(contentsOf: $0) }
        if out.count > capacity { enlarge(toHold: out.count, keeping: 0) }
        out.withUnsafeBytes { raw in
            if let base = raw.baseAddress { storage.copyMemory(from: base, byteCount: raw.count) }
        }
        count = out.count
    }

    private func write(_ value: StoredValue?, field index: Int, to bytes: inout [UInt8]) throws {
        let isOptional = schema.optional[index]
        guard let value else {
            guard isOptional else {
                throw StorageError(
                    .encoding, .persist, entity: schema.entity,
                    message: "the record did not encode its field '\(schema.names[index])'")
            }
            bytes.append(0)
            return
        }
        if case .null = value {
            guard isOptional else {
                throw StorageError(
                    .encoding, .persist, entity: schema.entity,
                    message: "the field '\(schema.names[index])' is not optional but was encoded as nil")
            }
            bytes.append(0)
            return
        }
        if isOptional { bytes.append(1) }
        switch (schema.types[index], value) {
        case (.integer, .integer(let integer)):
            Varint.append(zigzag: integer, to: &bytes)
        case (.bool, .integer(let integer)) where integer == 0 || integer == 1:
            bytes.append(UInt8(integer))
        case (.real, .real(let real)), (.date, .real(let real)):
            withUnsafeBytes(of: real.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        case (.real, .integer(let integer)):
            withUnsafeBytes(of: Double(integer).bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        case (.text, .text(var text)):
            text.withUTF8 { utf8 in
                Varint.append(UInt64(utf8.count), to: &bytes)
                bytes.append(contentsOf: utf8)
            }
        case (.blob, .blob(let blob)):
            Varint.append(UInt64(blob.count), to: &bytes)
            bytes.append(contentsOf: blob)
        default:
            throw StorageError(
                .encoding, .persist, entity: schema.entity,
                message: "the field '\(schema.names[index])' is declared \(schema.types[index].rawValue) but was encoded as \(value)")
        }
    }

    /// The value encoded for field `index` by the last ``encode(_:)`` or
    /// ``encodeFields(_:)``.
    @inline(__always)
    func value(at index: Int) -> StoredValue {
        guard isDirect else { return slots[index] ?? .null }
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
        guard isDirect else { return KeyCodec.append(untagged: value(at: index), to: &key) }
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

    /// The integer of field `index` of the last value written by position,
    /// when the field is declared an integer and is not nil; `nil` otherwise.
    @inline(__always)
    func integer(at index: Int) -> Int64? {
        guard isDirect, types[index] == .integer else { return nil }
        var position = offsets[index]
        guard position >= 0 else { return nil }
        let raw = Varint.read(encoded, &position)
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    fileprivate func fail(_ message: String, kind: StorageError.Kind = .encoding) {
        if failure == nil {
            failure = StorageError(kind, .persist, entity: schema.entity, message: message)
        }
    }

    /// Stores `value` for `key`; ignores relation keys.
    @inline(__always)
    fileprivate func set(_ value: StoredValue, forKey key: String) throws {
        guard let slot = schema.slot(of: key, guess: nextGuess) else {
            throw StorageError(
                .schemaMismatch, .persist, entity: schema.entity,
                message: "the record encodes the key '\(key)', which the entity does not declare")
        }
        nextGuess = slot + 1
        if slot < slots.count { slots[slot] = value }
    }

    fileprivate func isRelation(_ key: String) -> Bool {
        guard let slot = schema.slot(of: key, guess: nextGuess) else { return false }
        return slot >= schema.fieldCount
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

/// A field's value as a `StoredValue`, for the types a generic `encode` may see.
private func storedValue<T: Encodable>(of value: T) throws -> StoredValue? {
    if let date = value as? Date { return .real(date.timeIntervalSinceReferenceDate) }
    if let data = value as? Data { return .blob([UInt8](data)) }
    if let field = value as? any FieldValue { return field.storedValue }
    let capture = StoredValueEncoder()
    try value.encode(to: capture)
    return capture.value
}

private struct RecordEncoder: Encoder {
    let state: ValueEncoder
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RecordEncodingContainer<Key>(state: state))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        state.fail("a record must encode a keyed container, not an unkeyed one")
        return DiscardingUnkeyedContainer()
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        state.fail("a record must encode a keyed container, not a single value")
        return StoredValueEncoder()
    }
}

private struct RecordEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let state: ValueEncoder
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws { try state.set(.null, forKey: key.stringValue) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try state.set(.integer(value ? 1 : 0), forKey: key.stringValue) }
    mutating func encode(_ value: String, forKey key: Key) throws { try state.set(.text(value), forKey: key.stringValue) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try state.set(.real(value), forKey: key.stringValue) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try state.set(.real(Double(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try state.set(.integer(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try state.set(.integer(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try state.set(.integer(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try state.set(.integer(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try state.set(.integer(value), forKey: key.stringValue) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try state.set(.integer(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try state.set(.integer(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try state.set(.integer(Int64(value)), forKey: key.stringValue) }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        guard let integer = Int64(exactly: value) else {
            throw StorageError(.encoding, .persist, entity: state.schema.entity, message: "'\(key.stringValue)' is \(value), beyond Int64")
        }
        try state.set(.integer(integer), forKey: key.stringValue)
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        guard let integer = Int64(exactly: value) else {
            throw StorageError(.encoding, .persist, entity: state.schema.entity, message: "'\(key.stringValue)' is \(value), beyond Int64")
        }
        try state.set(.integer(integer), forKey: key.stringValue)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let name = key.stringValue
        if state.isRelation(name) { return }
        guard let stored = try storedValue(of: value) else {
            throw StorageError(
                .encoding, .persist, entity: state.schema.entity,
                message: "the value of '\(name)' (\(T.self)) is not a single field value")
        }
        try state.set(stored, forKey: name)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        state.fail("'\(key.stringValue)' encodes a nested container; fields hold single values")
        return KeyedEncodingContainer(DiscardingKeyedContainer<NestedKey>())
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        state.fail("'\(key.stringValue)' encodes a nested container; fields hold single values")
        return DiscardingUnkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        state.fail("records with a superclass encoder are not supported")
        return StoredValueEncoder()
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        state.fail("'\(key.stringValue)' uses a super encoder; fields hold single values")
        return StoredValueEncoder()
    }
}

/// Captures a single value encoded by a field type's own `encode(to:)` (a
/// `RawRepresentable` enum, say).
private final class StoredValueEncoder: Encoder, SingleValueEncodingContainer {
    var value: StoredValue?
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        value = nil
        return KeyedEncodingContainer(DiscardingKeyedContainer<Key>())
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { DiscardingUnkeyedContainer() }
    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    func encodeNil() throws { value = .null }
    func encode(_ value: Bool) throws { self.value = .integer(value ? 1 : 0) }
    func encode(_ value: String) throws { self.value = .text(value) }
    func encode(_ value: Double) throws { self.value = .real(value) }
    func encode(_ value: Float) throws { self.value = .real(Double(value)) }
    func encode(_ value: Int) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: Int8) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: Int16) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: Int32) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: Int64) throws { self.value = .integer(value) }
    func encode(_ value: UInt8) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: UInt16) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: UInt32) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: UInt) throws { self.value = Int64(exactly: value).map(StoredValue.integer) }
    func encode(_ value: UInt64) throws { self.value = Int64(exactly: value).map(StoredValue.integer) }
    func encode<T: Encodable>(_ value: T) throws { self.value = try storedValue(of: value) }
}

/// A container that drops what it is given, returned where the `Encoder` API
/// cannot throw; the encoder has recorded the failure and throws it afterwards.
private struct DiscardingKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    var codingPath: [any CodingKey] { [] }
    mutating func encodeNil(forKey key: Key) throws {}
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {}
    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(DiscardingKeyedContainer<NestedKey>())
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { DiscardingUnkeyedContainer() }
    mutating func superEncoder() -> any Encoder { StoredValueEncoder() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { StoredValueEncoder() }
}

private struct DiscardingUnkeyedContainer: UnkeyedEncodingContainer {
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }
    mutating func encodeNil() throws {}
    mutating func encode<T: Encodable>(_ value: T) throws {}
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(DiscardingKeyedContainer<NestedKey>())
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { DiscardingUnkeyedContainer() }
    mutating func superEncoder() -> any Encoder { StoredValueEncoder() }
}
