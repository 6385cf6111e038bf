import DAOCore
import Foundation

/// Reads the primary key and the foreign key of a ``FieldwiseRecord`` in one
/// pass over `write(fields:)`, as ``Field/value(in:)`` reads them (the same
/// stored values as ``StoredValueWriter`` collects), without key paths.
///
/// The table code runs unspecialized, where reading a field through its key
/// path costs 500–600 instructions; a child's upsert read two (its primary key,
/// and its foreign key to check the relation's rule): about 1,170 for a
/// message, against 480 for one pass over its nine fields.
struct KeyPairWriter: FieldWriter {
    /// The position of the foreign key in the entity's fields (the primary
    /// key is at 0).
    let foreignKeyPosition: Int
    var position = 0
    var key: StoredValue = .null
    var foreignKey: StoredValue = .null

    init(foreignKeyPosition: Int) {
        self.foreignKeyPosition = foreignKeyPosition
    }

    private mutating func take(_ value: @autoclosure () -> StoredValue) {
        if position == 0 {
            key = value()
        } else if position == foreignKeyPosition {
            foreignKey = value()
        }
        position += 1
    }

    mutating func encode(_ value: Int64) throws { take(.integer(value)) }
    mutating func encode(_ value: Double) throws { take(.real(value)) }
    mutating func encode(_ value: String) throws { take(.text(value)) }
    mutating func encode(_ value: Bool) throws { take(.integer(value ? 1 : 0)) }
    mutating func encode(_ value: Date) throws { take(.real(value.timeIntervalSinceReferenceDate)) }
    mutating func encode(_ value: Data) throws { take(.blob([UInt8](value))) }
    mutating func encodeNil() throws { take(.null) }
}

/// Reads a record's primary key and foreign key (see ``KeyPairWriter``).
typealias KeyPairReader<Root> = @Sendable (Root) throws -> (key: StoredValue, foreignKey: StoredValue)

/// The ``KeyPairReader`` of `Root`, when it is a ``FieldwiseRecord`` whose
/// field `foreignKey` is not its primary key; `nil` otherwise.
func makeKeyPairReader<Root: Record>(for root: Root.Type, foreignKey: String) -> KeyPairReader<Root>? {
    guard let position = Root.entity.position(ofField: foreignKey), position > 0,
        let fieldwise = Root.self as? any FieldwiseRecord.Type
    else { return nil }
    return makeKeyPairReader(fieldwise, for: root, foreignKeyPosition: position)
}

/// The reader of `F`, which is `Root` (found by casting `Root.self`), so a
/// record converts to it without a cast per record.
private func makeKeyPairReader<Root, F: FieldwiseRecord>(
    _ type: F.Type, for root: Root.Type, foreignKeyPosition: Int
) -> KeyPairReader<Root> {
    { record in
        var writer = KeyPairWriter(foreignKeyPosition: foreignKeyPosition)
        try unsafeBitCast(record, to: F.self).write(fields: &writer)
        return (writer.key, writer.foreignKey)
    }
}
