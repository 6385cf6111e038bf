import DAOCore

/// What the value codec needs to know about an entity: its fields in order with
/// their storage classes (a relation's children are not stored in the
/// record's value: they live in their own database).
final class ValueSchema: Sendable {
    /// The entity's name, for errors.
    let entity: String
    /// Field names, primary key first, in declaration order.
    let names: [String]
    /// Field storage classes.
    let types: [FieldType]
    /// Whether each field may be nil.
    let optional: [Bool]

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
    }

    var fieldCount: Int { names.count }
}
