import DAOCore

/// What the value codec needs to know about an entity: its fields in order with
/// their storage classes, and its relation names (whose values are not stored
/// in the record's value: children live in their own database).
final class ValueSchema: Sendable {
    /// The entity's name, for errors.
    let entity: String
    /// Field names, primary key first, in declaration order.
    let names: [String]
    /// Field storage classes.
    let types: [FieldType]
    /// Whether each field may be nil.
    let optional: [Bool]
    /// Relation names.
    let relations: [String]
    private let slots: [String: Int]

    /// The current value format: a leading byte, so a later format can still
    /// read values written by this one. Version 2 ends every value with the
    /// CRC-32C of the bytes before it (4 bytes, little-endian); version 1
    /// values (no checksum) are still read.
    static let formatVersion: UInt8 = 2
    /// The format without a checksum, still read.
    static let uncheckedFormatVersion: UInt8 = 1
    /// The bytes of the trailing checksum.
    static let checksumSize = 4

    init<R: Record>(_ entity: Entity<R>) {
        self.entity = entity.name
        names = entity.fields.map(\.name)
        types = entity.fields.map(\.type)
        optional = entity.fields.map(\.isOptional)
        relations = entity.relations.map(\.name)
        var slots: [String: Int] = [:]
        for (index, name) in names.enumerated() { slots[name] = index }
        for (index, name) in relations.enumerated() { slots[name] = names.count + index }
        self.slots = slots
    }

    /// The slot of a `Codable` key: a field index, or `fieldCount + relation
    /// index`. `guess` is tried first, as records usually encode and decode their
    /// keys in declaration order.
    @inline(__always)
    func slot(of key: String, guess: Int) -> Int? {
        if guess < names.count, names[guess] == key { return guess }
        return slots[key]
    }

    var fieldCount: Int { names.count }
}
