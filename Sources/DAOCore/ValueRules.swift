import Foundation

// The rules of values and relations, decided once here and checked by the
// adapters before they write (see docs/SEMANTICS.md).

extension Date {
    /// The real a `Date` is stored as, on every backend: its seconds since
    /// 2001-01-01 00:00:00 UTC, the date's own representation, so that every
    /// date comes back bit for bit (`-0.0` and NaN seconds included, where
    /// the backend keeps such reals: docs/SEMANTICS.md). Every reader and
    /// writer of stored values goes through it and `init(storedSeconds:)`.
    @inlinable
    public var storedSeconds: Double { timeIntervalSinceReferenceDate }

    /// The date stored as `seconds` (`storedSeconds`).
    @inlinable
    public init(storedSeconds seconds: Double) { self.init(timeIntervalSinceReferenceDate: seconds) }
}

extension Entity {
    /// What the property-list store must know of the reals of `record` (its
    /// `Double`, `Float` and `Date` fields, and its children's) before it
    /// writes it. Foundation's binary property-list writer stores equal
    /// numbers once per document, so the store spells a `-0.0` and a NaN
    /// apart from the other reals (a `-0.0` as a 4-byte real) in a document
    /// that holds one; a `Date` has one spelling, so a `Date` of `-0.0`
    /// seconds, which would come back as `0.0`, is refused. Only the
    /// property-list store calls it; every other backend stores every real as
    /// given (docs/SEMANTICS.md, "Limits of one backend").
    ///
    /// - Returns: whether a real holds `-0.0` or a NaN (a `Date` a NaN).
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``
    ///   naming the `Date` field of `-0.0` seconds and the record; the
    ///   adapter then writes nothing.
    public func checkRealsForPropertyList(_ record: Root) throws -> Bool {
        var special = false
        if let checkReals = realChecker {
            // A record that writes its fields by position: one pass, without key paths.
            let scan = try checkReals(record)
            if let position = scan.negativeZeroDate { throw unstorable(record, fields[position]) }
            special = scan.special
        } else {
            for field in realFields {
                guard case .real(let value) = field.value(in: record) else { continue }
                guard Self.isSpecial(value) else { continue }
                if field.type == .date && value == 0 { throw unstorable(record, field) }
                special = true
            }
        }
        guard hasRelations else { return special }
        for relation in relations {
            if try relation.checkRealsForPropertyListInChildren(of: record) { special = true }
        }
        return special
    }

    /// Whether `value` is `-0.0` or a NaN.
    @inline(__always)
    static func isSpecial(_ value: Double) -> Bool {
        (value == 0 && value.sign == .minus) || value.isNaN
    }

    func unstorable(_ record: Root, _ field: Field<Root>) -> StorageError {
        StorageError(
            .invalidArgument, .persist, entity: name,
            message: "field '\(field.name)' of record \(record.primaryKey) is a date of -0.0 seconds, which a property-list store cannot keep apart from 0.0 (its format stores equal dates once and has one spelling of a date); store the date of 0.0 seconds, the same instant, or use the JSON format or another backend")
    }

    /// ``checkRealsForPropertyList(_:)-(Root)`` for each of `records`: whether
    /// a real of any of them is `-0.0` or a NaN.
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``.
    public func checkRealsForPropertyList(_ records: [Root]) throws -> Bool {
        guard hasRealFieldsOrRelations else { return false }
        var special = false
        for record in records where try checkRealsForPropertyList(record) { special = true }
        return special
    }
}

extension ToManyRelation {
    func checkRealsForPropertyListInChildren(of parent: Parent) throws -> Bool {
        let entity = Child.entity
        if let checkReals = entity.realsChecker {
            // Children without relations of their own, written by position:
            // one specialized pass over all of them, and the error of the
            // first, as one by one.
            // A record whose `write(fields:)` throws is checked one by one
            // below, so that the error is the one the order gives.
            let children = parent[keyPath: children]
            var scan: RealsScan?
            do {
                scan = try checkReals(children)
            } catch {
                scan = nil  // thrown again by the check one by one
            }
            if let scan {
                guard let (index, position) = scan.negativeZeroDate else { return scan.special }
                throw entity.unstorable(children[index], entity.fields[position])
            }
        }
        var special = false
        for child in parent[keyPath: children] where try entity.checkRealsForPropertyList(child) {
            special = true
        }
        return special
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
/// position, the first `Date` of `-0.0` seconds (which the property-list
/// store refuses, ``Entity/checkRealsForPropertyList(_:)-(Root)``), notes
/// whether a real is `-0.0` or a NaN, and keeps the stored values (as
/// ``StoredValueWriter`` collects them) at two positions; ignores every
/// other field. See ``FieldwiseRecord/scanFields(_:)``.
public struct FieldScanWriter: FieldWriter {
    /// The position of the next field.
    public var position = 0
    /// The position of the first `Date` of `-0.0` seconds, if any.
    public var unstorable: Int?
    /// Whether a real (a `Double`, `Float` or `Date`) is `-0.0` or a NaN.
    public var holdsSpecialReal = false
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
    package init(keeping firstKept: Int = -1, and secondKept: Int = -1) {
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
    /// Notes a real, and whether it is `-0.0` or a NaN.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Double) throws {
        if (value == 0 && value.sign == .minus) || value.isNaN { holdsSpecialReal = true }
        take(.real(value))
    }
    /// Notes a text.
    @inlinable @inline(__always)
    public mutating func encode(_ value: String) throws { take(.text(value)) }
    /// Notes a boolean.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Bool) throws { take(.integer(value ? 1 : 0)) }
    /// Notes a date, stored as a real, and whether it is the first of
    /// `-0.0` seconds.
    @inlinable @inline(__always)
    public mutating func encode(_ value: Date) throws {
        let seconds = value.storedSeconds
        if unstorable == nil && seconds == 0 && seconds.sign == .minus { unstorable = position }
        try encode(seconds)
    }
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
        _ seconds: inout [StoredValue], stoppingAtNegativeZeroDate: Bool
    ) throws -> RealsScan {
        if first >= 0 { firsts.reserveCapacity(firsts.count + records.count) }
        if second >= 0 { seconds.reserveCapacity(seconds.count + records.count) }
        var scan = RealsScan()
        for index in records.indices {
            var scanner = FieldScanWriter(keeping: first, and: second)
            try records[index].write(fields: &scanner)
            if scanner.holdsSpecialReal { scan.special = true }
            if stoppingAtNegativeZeroDate, let position = scanner.unstorable {
                scan.negativeZeroDate = (index, position)
                return scan
            }
            if first >= 0 { firsts.append(scanner.first) }
            if second >= 0 { seconds.append(scanner.second) }
        }
        return scan
    }
}

/// What a scan of many records found (``FieldwiseRecord/scanFields(of:keeping:and:into:_:stoppingAtNegativeZeroDate:)``).
public struct RealsScan: Sendable {
    /// The index of the first record holding a `Date` of `-0.0` seconds, and
    /// the field's position (the scan stops there when asked to).
    public var negativeZeroDate: (record: Int, field: Int)?
    /// Whether a real of the records scanned is `-0.0` or a NaN.
    public var special = false

    /// Nothing found yet.
    @inlinable
    public init() {}
}

/// The real check of many records of `F`, which is `Root`
/// (``Entity/checkRealsForPropertyList(_:)-(Root)``).
func makeRealsChecker<Root, F: FieldwiseRecord>(
    _ type: F.Type, for root: Root.Type
) -> @Sendable ([Root]) throws -> RealsScan {
    { records in
        var firsts: [StoredValue] = []
        var seconds: [StoredValue] = []
        return try F.scanFields(
            of: unsafeBitCast(records, to: [F].self), keeping: -1, and: -1, into: &firsts, &seconds,
            stoppingAtNegativeZeroDate: true)
    }
}

/// The real check of `F`, which is `Root` (found by casting `Root.self`), so a
/// record converts to it without a cast per record: the position of its first
/// `Date` of `-0.0` seconds, and whether a real is `-0.0` or a NaN.
func makeRealChecker<Root, F: FieldwiseRecord>(
    _ type: F.Type, for root: Root.Type
) -> @Sendable (Root) throws -> (negativeZeroDate: Int?, special: Bool) {
    { record in
        var scanner = FieldScanWriter()
        try unsafeBitCast(record, to: F.self).scanFields(&scanner)
        return (scanner.unstorable, scanner.holdsSpecialReal)
    }
}
