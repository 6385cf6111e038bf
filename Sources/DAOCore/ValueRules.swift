import Foundation

// The rules of values and relations, decided once here and checked by the
// adapters before they write (see docs/SEMANTICS.md).

extension Entity {
    /// Checks that no real of `record` (a `Double`, `Float` or `Date` field),
    /// nor of the children it holds, is `-0.0`: Foundation's binary
    /// property-list writer stores equal numbers once per document, so a
    /// `-0.0` and a `0.0` in one document would come back as one of them.
    /// Only the property-list store calls it; every other backend stores
    /// `-0.0` as given (docs/SEMANTICS.md, "Limits of one backend").
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``
    ///   naming the field and the record; the adapter then writes nothing.
    public func checkNoNegativeZero(_ record: Root) throws {
        if let checkReals = realChecker {
            // A record that writes its fields by position: one pass, without key paths.
            if let position = try checkReals(record) { throw unstorable(record, fields[position]) }
        } else {
            for field in realFields {
                guard case .real(let value) = field.value(in: record) else { continue }
                if !Self.isStorable(value) { throw unstorable(record, field) }
            }
        }
        guard hasRelations else { return }
        for relation in relations {
            try relation.checkNoNegativeZeroInChildren(of: record)
        }
    }

    static func isStorable(_ value: Double) -> Bool {
        !(value == 0 && value.sign == .minus)
    }

    func unstorable(_ record: Root, _ field: Field<Root>) -> StorageError {
        let value = field.value(in: record)
        return StorageError(
            .invalidArgument, .persist, entity: name,
            message: "field '\(field.name)' of record \(record.primaryKey) is \(value), which a property-list store cannot keep apart from 0.0 (its format stores equal numbers once); use the JSON format or another backend to store -0.0")
    }

    /// ``checkNoNegativeZero(_:)-(Root)`` for each of `records`.
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``.
    public func checkNoNegativeZero(_ records: [Root]) throws {
        guard hasRealFieldsOrRelations else { return }
        for record in records { try checkNoNegativeZero(record) }
    }
}

extension ToManyRelation {
    func checkNoNegativeZeroInChildren(of parent: Parent) throws {
        let entity = Child.entity
        if let checkReals = entity.realsChecker {
            // Children without relations of their own, written by position:
            // one specialized pass over all of them, and the error of the
            // first, as one by one.
            // A record whose `write(fields:)` throws is checked one by one
            // below, so that the error is the one the order gives.
            let children = parent[keyPath: children]
            var found: (record: Int, field: Int)?
            var scanned = true
            do {
                found = try checkReals(children)
            } catch {
                scanned = false  // thrown again by the check one by one
            }
            if scanned {
                guard let (index, position) = found else { return }
                throw entity.unstorable(children[index], entity.fields[position])
            }
        }
        for child in parent[keyPath: children] {
            try entity.checkNoNegativeZero(child)
        }
    }

    /// Checks the rule every parent obeys: each child it holds names it, by the
    /// same stored key (text keys compare by Unicode scalars), in its foreign key.
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/constraint``.
    public func checkChild(_ child: Child, isHeldBy parentKey: StoredValue) throws {
        let named = child[keyPath: self.parentKey].storedValue
        guard named == parentKey else {
            throw StorageError(
                .constraint, .persist, entity: Child.entity.name,
                message: "a child in relation '\(name)' names parent \(named) in '\(foreignKeyField)' but is held by parent \(parentKey)")
        }
    }
}

/// Scans the fields of a ``FieldwiseRecord`` in one pass: finds, by
/// position, the first real that is `-0.0` (which the property-list store
/// refuses, ``Entity/checkNoNegativeZero(_:)-(Root)``), and keeps the stored values
/// (as ``StoredValueWriter`` collects them) at two positions; ignores every
/// other field. See ``FieldwiseRecord/scanFields(_:)``.
public struct FieldScanWriter: FieldWriter {
    /// The position of the next field.
    public var position = 0
    /// The position of the first real that is `-0.0`, if any.
    public var unstorable: Int?
    /// The first position whose value is kept, or -1.
    public let firstKept: Int
    /// The second position whose value is kept, or -1.
    public let secondKept: Int
    /// The value at ``firstKept``.
    public var first: StoredValue = .null
    /// The value at ``secondKept``.
    public var second: StoredValue = .null

    /// A scanner that keeps the values at `firstKept` and `secondKept`
    /// (-1 for none).
    @inlinable
    public init(keeping firstKept: Int = -1, and secondKept: Int = -1) {
        self.firstKept = firstKept
        self.secondKept = secondKept
    }

    @inlinable @inline(__always)
    mutating func take(_ value: @autoclosure () -> StoredValue) {
        if position == firstKept {
            first = value()
        } else if position == secondKept {
            second = value()
        }
        position += 1
    }

    /// Notes an integer.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Int64) throws { take(.integer(value)) }
    /// Notes a real, and whether it is the first `-0.0`.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Double) throws {
        if unstorable == nil && value == 0 && value.sign == .minus { unstorable = position }
        take(.real(value))
    }
    /// Notes a text.
    @inlinable @inline(__always)
    public mutating func encode(_ value: String) throws { take(.text(value)) }
    /// Notes a boolean.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Bool) throws { take(.integer(value ? 1 : 0)) }
    /// Notes a date, stored as a real.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Date) throws { try encode(value.timeIntervalSinceReferenceDate) }
    /// Notes bytes.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Data) throws { take(.blob([UInt8](value))) }
    /// Notes a null.
    @inlinable @inline(__always)
    public mutating func encodeNil() throws { take(.null) }
}

extension FieldwiseRecord {
    /// Writes the record's fields to `scanner` (see ``FieldwiseRecord/scanFields(_:)``).
    ///
    /// Inlinable, so that the conformance of each record type uses a copy
    /// specialized for it.
    @inlinable
    public func scanFields(_ scanner: inout FieldScanWriter) throws {
        try write(fields: &scanner)
    }

    /// Scans each of `records` (see ``FieldwiseRecord/scanFields(of:keeping:and:into:_:)``).
    ///
    /// Inlinable, so that the conformance of each record type uses a copy
    /// specialized for it.
    @inlinable
    public static func scanFields(
        of records: [Self], keeping first: Int, and second: Int, into firsts: inout [StoredValue],
        _ seconds: inout [StoredValue], stoppingAtNegativeZero: Bool
    ) throws -> (record: Int, field: Int)? {
        if first >= 0 { firsts.reserveCapacity(firsts.count + records.count) }
        if second >= 0 { seconds.reserveCapacity(seconds.count + records.count) }
        for index in records.indices {
            var scanner = FieldScanWriter(keeping: first, and: second)
            try records[index].write(fields: &scanner)
            if stoppingAtNegativeZero, let position = scanner.unstorable { return (index, position) }
            if first >= 0 { firsts.append(scanner.first) }
            if second >= 0 { seconds.append(scanner.second) }
        }
        return nil
    }
}

/// The `-0.0` check of many records of `F`, which is `Root`: the index of the
/// first record holding a `-0.0`, and the field's position.
func makeRealsChecker<Root, F: FieldwiseRecord>(
    _ type: F.Type, for root: Root.Type
) -> @Sendable ([Root]) throws -> (record: Int, field: Int)? {
    { records in
        var firsts: [StoredValue] = []
        var seconds: [StoredValue] = []
        return try F.scanFields(
            of: unsafeBitCast(records, to: [F].self), keeping: -1, and: -1, into: &firsts, &seconds,
            stoppingAtNegativeZero: true)
    }
}

/// The `-0.0` check of `F`, which is `Root` (found by casting `Root.self`), so a
/// record converts to it without a cast per record.
func makeRealChecker<Root, F: FieldwiseRecord>(_ type: F.Type, for root: Root.Type) -> @Sendable (Root) throws -> Int? {
    { record in
        var scanner = FieldScanWriter()
        try unsafeBitCast(record, to: F.self).scanFields(&scanner)
        return scanner.unstorable
    }
}
