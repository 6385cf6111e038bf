import DAOCore
import Foundation

/// Reads a record's primary key and foreign key in one pass over
/// `write(fields:)` (``FieldwiseRecord/scanFields(_:)``, the same stored values
/// as ``Field/value(in:)`` reads), without key paths.
///
/// The table code runs unspecialized, where reading a field through its key
/// path costs 500–600 instructions; a child's upsert read two (its primary key,
/// and its foreign key to check the relation's rule): about 1,170 for a
/// message. The scan, specialized in the record's conformance, costs a few
/// dozen.
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
        var scanner = FieldScanWriter(keeping: 0, and: foreignKeyPosition)
        try unsafeBitCast(record, to: F.self).scanFields(&scanner)
        return (scanner.first, scanner.second)
    }
}
