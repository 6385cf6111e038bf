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

/// Reads the primary keys and foreign keys of many records in one
/// specialized pass (``FieldwiseRecord/scanFields(of:keeping:and:into:_:)``),
/// in order, past any real (a -0.0 does not stop it).
typealias KeyPairsReader<Root> = @Sendable ([Root]) throws -> (keys: [StoredValue], foreignKeys: [StoredValue])

/// The ``KeyPairsReader`` of `Root`, under the conditions of ``makeKeyPairReader(for:foreignKey:)``.
func makeKeyPairsReader<Root: Record>(for root: Root.Type, foreignKey: String) -> KeyPairsReader<Root>? {
    guard let position = Root.entity.position(ofField: foreignKey), position > 0,
        let fieldwise = Root.self as? any FieldwiseRecord.Type
    else { return nil }
    return makeKeyPairsReader(fieldwise, for: root, foreignKeyPosition: position)
}

private func makeKeyPairsReader<Root, F: FieldwiseRecord>(
    _ type: F.Type, for root: Root.Type, foreignKeyPosition: Int
) -> KeyPairsReader<Root> {
    { records in
        var keys: [StoredValue] = []
        var foreignKeys: [StoredValue] = []
        _ = try F.scanFields(of: unsafeBitCast(records, to: [F].self), keeping: 0, and: foreignKeyPosition, into: &keys, &foreignKeys, stoppingAtNegativeZeroDate: false)
        return (keys, foreignKeys)
    }
}

/// Reads the values of one or two fields (by position) of many records in one
/// specialized pass: the first field's values, then the second's (empty when
/// there is none), in the order of the records.
typealias FieldPairReader<Root> = @Sendable ([Root]) throws -> (firsts: [StoredValue], seconds: [StoredValue])

/// The ``FieldPairReader`` of the fields at `positions` (one or two) of
/// `Root`, when it is a ``FieldwiseRecord``; `nil` otherwise.
func makeFieldPairReader<Root: Record>(for root: Root.Type, positions: [Int]) -> FieldPairReader<Root>? {
    guard positions.count == 1 || positions.count == 2,
        let fieldwise = Root.self as? any FieldwiseRecord.Type
    else { return nil }
    return makeFieldPairReader(fieldwise, for: root, first: positions[0], second: positions.count == 2 ? positions[1] : -1)
}

private func makeFieldPairReader<Root, F: FieldwiseRecord>(
    _ type: F.Type, for root: Root.Type, first: Int, second: Int
) -> FieldPairReader<Root> {
    { records in
        var firsts: [StoredValue] = []
        var seconds: [StoredValue] = []
        _ = try F.scanFields(of: unsafeBitCast(records, to: [F].self), keeping: first, and: second, into: &firsts, &seconds, stoppingAtNegativeZeroDate: false)
        return (firsts, seconds)
    }
}

/// Reads the stored value of one field (by position) of a record in one
/// specialized pass over `write(fields:)`, as ``Field/value(in:)`` reads it
/// through the field's key path (500–1,400 instructions in the table's
/// unspecialized code, most of it the runtime's metadata look-ups; the scan
/// costs a few dozen).
final class FieldValueReader<Root>: Sendable {
    // A class holding the closure: kept in arrays, tuples and enum payloads
    // of the generic code, a bare closure was re-abstracted at each, and
    // each call went through as many thunks.
    private let read: @Sendable (Root) throws -> StoredValue

    init(_ read: @escaping @Sendable (Root) throws -> StoredValue) {
        self.read = read
    }

    func callAsFunction(_ root: Root) throws -> StoredValue {
        try read(root)
    }
}

/// The ``FieldValueReader`` of the field at `position` of `Root`, when it is
/// a ``FieldwiseRecord``; `nil` otherwise.
func makeFieldValueReader<Root: Record>(for root: Root.Type, position: Int) -> FieldValueReader<Root>? {
    guard let fieldwise = Root.self as? any FieldwiseRecord.Type else { return nil }
    return makeFieldValueReader(fieldwise, for: root, position: position)
}

private func makeFieldValueReader<Root, F: FieldwiseRecord>(
    _ type: F.Type, for root: Root.Type, position: Int
) -> FieldValueReader<Root> {
    FieldValueReader { record in
        var scanner = FieldScanWriter(keeping: position)
        try unsafeBitCast(record, to: F.self).scanFields(&scanner)
        return scanner.first
    }
}

/// Tests whether the fields at some positions of a record hold given stored
/// values (each compared as `Semantics.compare(_:.equal:_)` compares them),
/// reading one or two fields in one specialized pass over `write(fields:)`
/// (``FieldwiseRecord/scanFields(_:)``), one pass per field beyond. A
/// prepared call's candidates are tested with it where they are stored, with
/// no per-record look-up of the reader or copy of a test.
final class FieldsMatcher<Root>: Sendable {
    /// How many values a test compares.
    let count: Int
    private let test: @Sendable (Root, [StoredValue]) throws -> Bool

    init(count: Int, _ test: @escaping @Sendable (Root, [StoredValue]) throws -> Bool) {
        self.count = count
        self.test = test
    }

    /// Whether `root`'s fields hold `values`, in the order of the positions
    /// the matcher was made for (`values.count` is ``count``).
    func callAsFunction(_ root: Root, _ values: [StoredValue]) throws -> Bool {
        try test(root, values)
    }
}

/// The ``FieldsMatcher`` of the fields at `positions` (at least one) of
/// `Root`, when it is a ``FieldwiseRecord``; `nil` otherwise.
func makeFieldsMatcher<Root: Record>(for root: Root.Type, positions: [Int]) -> FieldsMatcher<Root>? {
    guard !positions.isEmpty, let fieldwise = Root.self as? any FieldwiseRecord.Type else { return nil }
    return makeFieldsMatcher(fieldwise, for: root, positions: positions)
}

private func makeFieldsMatcher<Root, F: FieldwiseRecord>(
    _ type: F.Type, for root: Root.Type, positions: [Int]
) -> FieldsMatcher<Root> {
    if positions.count == 1 || (positions.count == 2 && positions[0] != positions[1]) {
        let first = positions[0]
        let second = positions.count == 2 ? positions[1] : -1
        return FieldsMatcher(count: positions.count) { record, values in
            var scanner = FieldScanWriter(keeping: first, and: second)
            try unsafeBitCast(record, to: F.self).scanFields(&scanner)
            guard Semantics.compare(scanner.first, .equal, values[0]) else { return false }
            return second < 0 || Semantics.compare(scanner.second, .equal, values[1])
        }
    }
    return FieldsMatcher(count: positions.count) { record, values in
        let fields = unsafeBitCast(record, to: F.self)
        for index in positions.indices {
            var scanner = FieldScanWriter(keeping: positions[index])
            try fields.scanFields(&scanner)
            guard Semantics.compare(scanner.first, .equal, values[index]) else { return false }
        }
        return true
    }
}
