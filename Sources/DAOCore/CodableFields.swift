import Foundation

/// The one bridge between `Codable` and an adapter's ``FieldReader`` and
/// ``FieldWriter``: it writes a record that only conforms to `Codable` as the
/// fields of its entity, in declaration order, and reads it back from them,
/// so that an adapter reads and writes every record through its own reader
/// and writer (a ``FieldwiseRecord`` calls them itself).
///
/// Writing, the record's `encode(to:)` fills one slot per declared field by
/// its `Codable` key; the slots are then written in field order, each as its
/// field's declared ``FieldType``. Reading, every field is read in order as
/// its declared type, and the record's `init(from:)` takes them by key. A
/// relation's key is skipped when writing (its children are stored apart)
/// and reads as the children the adapter hands over.
///
/// The rules, the same on every adapter:
/// - a key the entity does not declare, and a declared field the record does
///   not encode (an optional one left out is nil), is
///   ``StorageError/Kind/schemaMismatch``;
/// - a value of another storage class than its field's, nil for a field that
///   is not optional, an integer beyond `Int64`, and a nested container
///   (fields hold single values) is ``StorageError/Kind/encoding``;
/// - a stored value that does not fit the type the record asks for (an
///   integer out of its range) is ``StorageError/Kind/decoding``; errors of
///   the adapter's reader and writer, and the record's own, pass through.
///
/// An adapter that encodes whole records through Foundation's encoders (the
/// file stores) checks each record's keys with it first
/// (``checkDeclaredKeys(_:)``), so that no undeclared key is stored or
/// dropped without a word.
///
/// One bridge serves one call's records, one after another; it is not safe to
/// share between threads.
public final class CodableFields {
    /// What the containers handed to a record work on. They hold it, not the
    /// bridge: the bridge keeps its containers for the next record, and a
    /// container holding the bridge back would have to do so `unowned`, an
    /// atomic retain and release at every key.
    let state: CodableFieldState
    /// The keyed containers last handed out, reused for the next record of
    /// the same key type: building one asks the runtime for the metadata of
    /// the container and of the box around it, and allocates the box.
    @exclusivity(unchecked) private var encodingContainer: CachedContainer?
    @exclusivity(unchecked) private var decodingContainer: CachedContainer?

    /// A bridge for the records of `entity`.
    public init<R: Record>(_ entity: Entity<R>) {
        state = CodableFieldState(entity.codableShape)
    }

    /// The entity's name, for errors.
    public var entity: String { state.entity }

    /// The number of declared fields.
    public var fieldCount: Int { state.names.count }

    /// Writes `record`'s declared fields to `writer`, in field order, through
    /// its `Encodable` conformance.
    /// - Throws: ``StorageError`` (see the type's rules), the writer's error,
    ///   or the record's own.
    public func write<R: Encodable>(_ record: R, to writer: inout some FieldWriter) throws {
        state.begin(checkingKeys: false)
        try record.encode(to: FieldsEncoder(bridge: self))
        try state.writeSlots(to: &writer)
    }

    /// Checks that `record` encodes only keys its entity declares (its
    /// fields and relations), writing nothing. Values are not looked at, nor
    /// what is nested under a key; a record that encodes an unkeyed
    /// container or a single value instead of a keyed one encodes the key
    /// `(an unkeyed container)` or `(a single value)`.
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/schemaMismatch``
    ///   naming the first undeclared key, or the record's own error.
    public func checkDeclaredKeys<R: Encodable>(_ record: R) throws {
        state.begin(checkingKeys: true)
        defer { state.checkingKeys = false }
        try record.encode(to: FieldsEncoder(bridge: self))
        if let failure = state.failure { throw failure }
    }

    /// Reads a record of type `R` from `reader` (every declared field, in
    /// order, as its declared type) through its `Decodable` conformance;
    /// `relations` are the children of each of the entity's relations, in
    /// declaration order (an empty array of the child type when the adapter
    /// attaches them later).
    /// - Throws: ``StorageError`` (see the type's rules), the reader's error,
    ///   or the record's own.
    public func read<R: Decodable>(_ type: R.Type, from reader: inout some FieldReader, relations: [Any]) throws -> R {
        try state.readSlots(from: &reader, relations: relations)
        // Let go of the children when done: the bridge outlives the record.
        defer { state.relationValues = [] }
        return try R(from: FieldsDecoder(bridge: self))
    }

    func keyedEncodingContainer<Key: CodingKey>(_ type: Key.Type) -> KeyedEncodingContainer<Key> {
        if let cached = encodingContainer, cached.keyType == ObjectIdentifier(Key.self) {
            // The identifier of `Key` says the cached container's type.
            return unsafeDowncast(cached, to: Cached<KeyedEncodingContainer<Key>>.self).container
        }
        let container = KeyedEncodingContainer(FieldsEncodingContainer<Key>(fields: state))
        encodingContainer = Cached(container, keyType: Key.self)
        return container
    }

    func keyedDecodingContainer<Key: CodingKey>(_ type: Key.Type) -> KeyedDecodingContainer<Key> {
        if let cached = decodingContainer, cached.keyType == ObjectIdentifier(Key.self) {
            return unsafeDowncast(cached, to: Cached<KeyedDecodingContainer<Key>>.self).container
        }
        let container = KeyedDecodingContainer(FieldsDecodingContainer<Key>(fields: state))
        decodingContainer = Cached(container, keyType: Key.self)
        return container
    }
}

/// The state of a ``CodableFields`` bridge for the record at hand, and the
/// rules it applies: what its containers note and read.
final class CodableFieldState {
    /// The value of one field, as it is written and read.
    enum Slot {
        case null
        case integer(Int64)
        case real(Double)
        case text(String)
        case bytes(Data)

        var described: String {
            switch self {
            case .null: "nil"
            case .integer(let value): "the integer \(value)"
            case .real(let value): "the real \(value)"
            case .text: "text"
            case .bytes: "bytes"
            }
        }
    }

    let shape: CodableShape
    /// The entity's name, for errors.
    var entity: String { shape.entity }
    /// The fields' names, in order.
    let names: [String]
    /// The fields' names then the relations', in order: the keys a record
    /// encodes, which synthesized `Codable` visits in this order.
    let order: [String]
    var types: [FieldType] { shape.types }
    var optional: [Bool] { shape.optional }
    var relations: [String] { shape.relations }
    /// Per field, the value encoded or read for the record at hand.
    @exclusivity(unchecked) var slots: [Slot?]
    /// The children handed over for each relation, for a record being read.
    @exclusivity(unchecked) var relationValues: [Any] = []
    /// The first error noted where the `Encoder` API cannot throw.
    @exclusivity(unchecked) var failure: StorageError?
    /// Where the next key is looked for first: synthesized `Codable` visits
    /// the keys in declaration order.
    @exclusivity(unchecked) var guess = 0
    /// Whether the record at hand is only checked for undeclared keys
    /// (``checkDeclaredKeys(_:)``): no value is kept, and what is nested
    /// under a key is accepted unseen.
    @exclusivity(unchecked) var checkingKeys = false

    init(_ shape: CodableShape) {
        self.shape = shape
        names = shape.names
        order = shape.order
        slots = Array(repeating: nil, count: shape.names.count)
    }

    /// The position of `key`: a field's index, or the field count plus a
    /// relation's index; `nil` for a key the entity does not declare.
    @inline(__always)
    func position(of key: String) -> Int? {
        if guess < order.count, order[guess] == key {
            guess += 1
            return guess - 1
        }
        guard let position = shape.positionByName[key] else { return nil }
        guess = position + 1
        return position
    }

    func undeclared(_ key: String, _ operation: StorageError.Operation) -> StorageError {
        StorageError(
            .schemaMismatch, operation, entity: entity,
            message: "the record \(operation == .read ? "reads" : "encodes") the key '\(key)', which the entity does not declare")
    }

    func encodingError(_ message: String) -> StorageError {
        StorageError(.encoding, .persist, entity: entity, message: message)
    }

    func decodingError(_ message: String) -> StorageError {
        StorageError(.decoding, .read, entity: entity, message: message)
    }

    // MARK: Writing

    /// Makes ready for the next record: with `checkingKeys`, one whose keys
    /// are only checked.
    func begin(checkingKeys: Bool) {
        if !checkingKeys {
            for index in slots.indices { slots[index] = nil }
        }
        failure = nil
        guess = 0
        self.checkingKeys = checkingKeys
    }

    /// Writes the slots the record encoded to `writer`, in field order, each
    /// as its field's declared type.
    func writeSlots(to writer: inout some FieldWriter) throws {
        if let failure { throw failure }
        for index in names.indices {
            try write(slots[index], field: index, to: &writer)
        }
    }

    private func write(_ slot: Slot?, field index: Int, to writer: inout some FieldWriter) throws {
        guard let slot else {
            guard optional[index] else {
                throw StorageError(
                    .schemaMismatch, .persist, entity: entity,
                    message: "the record did not encode its field '\(names[index])', which '\(entity)' declares")
            }
            return try writer.encodeNil()
        }
        switch (types[index], slot) {
        case (_, .null):
            guard optional[index] else {
                throw encodingError("the field '\(names[index])' is not optional but was encoded as nil")
            }
            try writer.encodeNil()
        case (.integer, .integer(let value)): try writer.encode(value)
        case (.bool, .integer(let value)) where value == 0 || value == 1: try writer.encode(value == 1)
        case (.real, .real(let value)): try writer.encode(value)
        case (.real, .integer(let value)): try writer.encode(Double(value))
        case (.date, .real(let value)): try writer.encode(Date(storedSeconds: value))
        case (.text, .text(let value)): try writer.encode(value)
        case (.blob, .bytes(let value)): try writer.encode(value)
        default:
            throw encodingError(
                "the field '\(names[index])' is declared \(types[index].rawValue) but was encoded as \(slot.described)")
        }
    }

    /// The position of the key `key` a record encodes, or `nil` for a key
    /// that has no slot (a relation's, or an undeclared key while checking
    /// keys, which is noted).
    @inline(__always)
    private func slotPosition(forKey key: String) throws -> Int? {
        guard let position = position(of: key) else {
            guard checkingKeys else { throw undeclared(key, .persist) }
            if failure == nil { failure = undeclared(key, .persist) }
            return nil
        }
        return checkingKeys || position >= slots.count ? nil : position
    }

    /// Notes `value` for `key`; a relation's key is skipped.
    @inline(__always)
    func set(_ value: @autoclosure () -> Slot, forKey key: String) throws {
        if let position = try slotPosition(forKey: key) { slots[position] = value() }
    }

    /// Notes `value`, of a type the keyed container has no overload for.
    func set<T: Encodable>(_ value: T, forKey key: String) throws {
        if let position = try slotPosition(forKey: key) { slots[position] = try slot(of: value, key: key) }
    }

    /// Notes `value` for `key`, an integer that must fit `Int64`.
    func setInteger(_ value: some BinaryInteger, forKey key: String) throws {
        if let position = try slotPosition(forKey: key) { slots[position] = try integer(value, key: key) }
    }

    /// The slot of `value`: a `Date` as its seconds since 2001-01-01, `Data`
    /// as bytes, any other type (a raw-value enum, a `UUID`) as the single
    /// value its `encode(to:)` encodes.
    func slot<T: Encodable>(of value: T, key: String) throws -> Slot {
        if T.self == Date.self { return .real(unsafeBitCast(value, to: Date.self).storedSeconds) }
        if T.self == Data.self { return .bytes(unsafeBitCast(value, to: Data.self)) }
        let single = SingleValueEncoder(fields: self, key: key)
        try value.encode(to: single)
        guard let slot = single.value else {
            throw encodingError("the value of '\(key)' (\(T.self)) is not a single value; a field holds one")
        }
        return slot
    }

    func integer(_ value: some BinaryInteger, key: String) throws -> Slot {
        guard let integer = Int64(exactly: value) else {
            throw encodingError("the value \(value) of '\(key)' does not fit a 64-bit signed integer")
        }
        return .integer(integer)
    }

    /// Notes the first failure where the `Encoder` API cannot throw: a
    /// shape a field cannot hold. While checking keys, what is nested under
    /// a key is accepted, and only a record that is no keyed container
    /// (`topLevel`, a shape named as its key) fails.
    func fail(_ message: String, topLevel shape: String? = nil) {
        guard failure == nil else { return }
        if checkingKeys {
            if let shape { failure = undeclared(shape, .persist) }
        } else {
            failure = encodingError(message)
        }
    }

    /// Notes the key `key`, under which the record nests a container: a
    /// failure, except while checking keys.
    func noteNested(_ key: String) {
        if checkingKeys {
            if position(of: key) == nil, failure == nil { failure = undeclared(key, .persist) }
        } else {
            fail("'\(key)' encodes a nested container; a field holds a single value")
        }
    }

    // MARK: Reading

    /// Reads every declared field from `reader`, in order, as its declared
    /// type, and keeps `relations` for the record's relation keys.
    func readSlots(from reader: inout some FieldReader, relations: [Any]) throws {
        for index in names.indices {
            slots[index] = try readSlot(index, from: &reader)
        }
        relationValues = relations
        guess = 0
    }

    private func readSlot(_ index: Int, from reader: inout some FieldReader) throws -> Slot {
        if optional[index], try reader.decodeNil() { return .null }
        switch types[index] {
        case .integer: return .integer(try reader.decode(Int64.self))
        case .bool: return .integer(try reader.decode(Bool.self) ? 1 : 0)
        case .real: return .real(try reader.decode(Double.self))
        case .date: return .real(try reader.decode(Date.self).storedSeconds)
        case .text: return .text(try reader.decode(String.self))
        case .blob: return .bytes(try reader.decode(Data.self))
        }
    }

    /// The slot read for field `key`.
    @inline(__always)
    func readSlot(forKey key: String) throws -> Slot {
        guard let position = position(of: key) else { throw undeclared(key, .read) }
        guard position < slots.count, let slot = slots[position] else {
            throw decodingError("'\(key)' is a relation, not a field")
        }
        return slot
    }

    /// The value of `key` as a `T`: a field's through its slot, a relation's
    /// the children handed over.
    func value<T: Decodable>(_ type: T.Type, forKey key: String) throws -> T {
        guard let position = position(of: key) else { throw undeclared(key, .read) }
        guard position < slots.count, let slot = slots[position] else {
            let relation = position - slots.count
            guard relation < relationValues.count, let children = relationValues[relation] as? T else {
                throw decodingError("relation '\(key)' does not decode as \(T.self)")
            }
            return children
        }
        return try value(type, from: slot, key: key)
    }

    func value<T: Decodable>(_ type: T.Type, from slot: Slot, key: String) throws -> T {
        if T.self == Date.self {
            guard case .real(let seconds) = slot else { throw mismatch(type, slot, key) }
            return unsafeBitCast(Date(storedSeconds: seconds), to: T.self)
        }
        if T.self == Data.self {
            guard case .bytes(let bytes) = slot else { throw mismatch(type, slot, key) }
            return unsafeBitCast(bytes, to: T.self)
        }
        return try T(from: SingleValueDecoder(fields: self, slot: slot, key: key))
    }

    func mismatch(_ type: Any.Type, _ slot: Slot, _ key: String) -> StorageError {
        decodingError("'\(key)' holds \(slot.described), which does not read as \(type)")
    }

    func bool(_ slot: Slot, key: String) throws -> Bool {
        guard case .integer(let value) = slot else { throw mismatch(Bool.self, slot, key) }
        return value != 0
    }

    func text(_ slot: Slot, key: String) throws -> String {
        guard case .text(let value) = slot else { throw mismatch(String.self, slot, key) }
        return value
    }

    func real(_ slot: Slot, key: String) throws -> Double {
        switch slot {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: throw mismatch(Double.self, slot, key)
        }
    }

    func integer<I: FixedWidthInteger>(_ type: I.Type, _ slot: Slot, key: String) throws -> I {
        guard case .integer(let value) = slot else { throw mismatch(type, slot, key) }
        guard let integer = I(exactly: value) else {
            throw decodingError("the value \(value) of '\(key)' does not fit \(type)")
        }
        return integer
    }

    func nestedShape() -> StorageError {
        decodingError("a record decodes from one keyed container, each field a single value")
    }
}

/// An entity's stored shape as ``CodableFields`` reads and writes it: its
/// fields' names, types and optionality in order, its relations' names, and
/// the position of each name (a relation's after the fields).
final class CodableShape: Sendable {
    let entity: String
    let names: [String]
    let types: [FieldType]
    let optional: [Bool]
    let relations: [String]
    /// The fields' names then the relations'.
    let order: [String]
    let positionByName: [String: Int]

    init(entity: String, names: [String], types: [FieldType], optional: [Bool], relations: [String]) {
        self.entity = entity
        self.names = names
        self.types = types
        self.optional = optional
        self.relations = relations
        order = names + relations
        var positionByName: [String: Int] = [:]
        for (index, name) in order.enumerated() where positionByName[name] == nil {
            positionByName[name] = index
        }
        self.positionByName = positionByName
    }
}

/// A container kept for the next record, with the type of its keys.
private class CachedContainer {
    let keyType: ObjectIdentifier
    init(keyType: ObjectIdentifier) { self.keyType = keyType }
}

private final class Cached<Container>: CachedContainer {
    let container: Container
    init<Key: CodingKey>(_ container: Container, keyType: Key.Type) {
        self.container = container
        super.init(keyType: ObjectIdentifier(Key.self))
    }
}
