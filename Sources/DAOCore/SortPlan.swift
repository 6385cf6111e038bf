import Foundation

/// How query results are sorted, the same on every backend: by the sort
/// descriptors, then by primary key (ascending, in stored-value order).
///
/// A descriptor over a declared field without a `String` comparator compares
/// the fields' stored values (numbers by value, dates by time, text by Unicode
/// scalars, `nil` first), which is also SQLite's `ORDER BY`. A descriptor with
/// a `String` comparator (`comparator: .lexical`) or over anything but a
/// declared field (`\.chapters.count`) is evaluated by Foundation, as it
/// defines it, in memory.
public struct SortPlan<R: Record>: Sendable {
    /// The descriptors.
    public let descriptors: [SortDescriptor<R>]
    /// The declared fields and directions, when every descriptor compares stored
    /// values; `nil` when Foundation must compare.
    public let fields: [(field: Field<R>, ascending: Bool)]?
    /// Whether a descriptor reads something other than a declared field (a
    /// relation's count, a computed property), so records must be complete.
    public let readsOpaqueValues: Bool
    /// Whether each column of the sort keys is ascending (``fields``'
    /// directions, then `true` for the primary key); `nil` with ``fields``.
    /// Kept apart from ``fields``: reading those tuples in code that is not
    /// specialized for the record type looked up the metadata of `Field<R>`
    /// and of the tuple (about 500 instructions a sort).
    let ascendingKeys: [Bool]?

    /// Plans sorting by `descriptors`.
    public init(_ descriptors: [SortDescriptor<R>]) {
        self.descriptors = descriptors
        var fields: [(field: Field<R>, ascending: Bool)] = []
        var byValue = true
        var opaque = false
        for descriptor in descriptors {
            guard let keyPath = descriptor.keyPath, let field = R.entity.field(for: keyPath) else {
                opaque = true
                byValue = false
                continue
            }
            if descriptor.stringComparator != nil { byValue = false }
            fields.append((field, descriptor.order == .forward))
        }
        self.fields = byValue ? fields : nil
        readsOpaqueValues = opaque
        if byValue {
            var ascending: [Bool] = []
            ascending.reserveCapacity(fields.count + 1)
            for entry in fields { ascending.append(entry.ascending) }
            ascending.append(true)
            ascendingKeys = ascending
        } else {
            ascendingKeys = nil
        }
    }

    /// `records` sorted.
    public func sorted(_ records: [R]) -> [R] {
        guard records.count > 1 else { return records }
        let primaryKey = R.entity.primaryKeyField
        guard let fields else {
            // Foundation's comparisons first, the key last. The records are put in
            // key order first, so that the result does not depend on the order an
            // engine returned them in even for a comparator that is not a strict
            // weak order.
            let keyed = records.map { (key: primaryKey.value(in: $0), record: $0) }.sorted { $0.key < $1.key }
            return keyed.sorted { lhs, rhs in
                for descriptor in descriptors {
                    switch descriptor.compare(lhs.record, rhs.record) {
                    case .orderedAscending: return true
                    case .orderedDescending: return false
                    case .orderedSame: continue
                    }
                }
                return lhs.key < rhs.key
            }.map(\.record)
        }
        return sorted(records, keys: keys(of: records, fields: fields), fields: fields).records
    }

    /// The sort keys of `records` (``sorted(_:keys:)``), read through the
    /// fields' key paths.
    func keys(of records: [R], fields: [(field: Field<R>, ascending: Bool)]) -> [StoredValue] {
        let primaryKey = R.entity.primaryKeyField
        var keys: [StoredValue] = []
        keys.reserveCapacity(records.count * (fields.count + 1))
        for record in records {
            for entry in fields { keys.append(entry.field.value(in: record)) }
            keys.append(primaryKey.value(in: record))
        }
        return keys
    }

    /// `records` sorted by `keys`, the stored values an adapter read for them
    /// (from the stored bytes, say, without reading the records' properties):
    /// for each record in turn, the value of each field of ``fields`` then its
    /// primary key's, `(fields.count + 1) × records.count` values. `nil` when
    /// the sort does not compare stored values (``fields`` is `nil`) or the
    /// keys do not have that count.
    public func sorted(_ records: [R], keys: [StoredValue]) -> [R]? {
        sortedReportingOrder(records, keys: keys)?.records
    }

    /// ``sorted(_:keys:)``, and the order `records` were in: already the
    /// order asked for (`.ascending`; also for fewer than two records), its
    /// exact reverse (`.descending`), or neither.
    func sortedReportingOrder(_ records: [R], keys: [StoredValue]) -> (records: [R], order: SortKeyRows.Order)? {
        guard let fields, keys.count == (fields.count + 1) * records.count else { return nil }
        guard records.count > 1 else { return (records, .ascending) }
        return sorted(records, keys: keys, fields: fields)
    }

    private func sorted(
        _ records: [R], keys: [StoredValue], fields: [(field: Field<R>, ascending: Bool)]
    ) -> (records: [R], order: SortKeyRows.Order) {
        let width = fields.count + 1
        let ascending = ascendingKeys ?? []
        // An access path often yields its records in the order asked for (an
        // index range sorted by its next field), or in the reverse of it: one
        // pass over the keys finds out, and the sort is skipped. The keys end
        // with the primary key, so no two rows tie and the reverse of a
        // strictly descending run is the one ascending order.
        let order = SortKeyRows.order(of: keys, width: width, ascending: ascending)
        switch order {
        case .ascending: return (records, order)
        case .descending: return (SortPlan<R>.reversed(records), order)
        case .neither: return (SortKeyRows.sortedPositions(keys, width: width, ascending: ascending).map { records[$0] }, order)
        }
    }

    /// ``sortedReportingOrder(_:keys:)`` for keys in their ordered form
    /// (``SortKey``): `(fields.count + 1) × records.count` of them, each
    /// column encoded as ``SortKey`` encodes its field's values. `nil` when
    /// the sort does not compare stored values or the keys do not have that
    /// count.
    func sortedReportingOrder(_ records: [R], orderedKeys keys: [UInt64]) -> (records: [R], order: SortKeyRows.Order)? {
        keys.withUnsafeBufferPointer { sortedReportingOrder(records, orderedKeys: $0) }
    }

    /// The same for keys in memory the caller holds.
    func sortedReportingOrder(
        _ records: [R], orderedKeys keys: UnsafeBufferPointer<UInt64>
    ) -> (records: [R], order: SortKeyRows.Order)? {
        guard let ascending = ascendingKeys, keys.count == ascending.count * records.count else { return nil }
        guard records.count > 1 else { return (records, .ascending) }
        let width = ascending.count
        let order = SortKeyRows.order(of: keys, width: width, ascending: ascending)
        switch order {
        case .ascending: return (records, order)
        case .descending: return (SortPlan<R>.reversed(records), order)
        case .neither: return (SortKeyRows.sortedPositions(keys, width: width, ascending: ascending).map { records[$0] }, order)
        }
    }

    /// `records` in the reverse order, copied through raw memory: the
    /// generic `Sequence.reversed()` cost about 240 instructions per record.
    static func reversed(_ records: [R]) -> [R] {
        let count = records.count
        return records.withUnsafeBufferPointer { source in
            [R](unsafeUninitializedCapacity: count) { target, initialized in
                guard let from = source.baseAddress, let to = target.baseAddress else {
                    initialized = 0
                    return
                }
                for position in 0..<count {
                    (to + position).initialize(to: from[count - 1 - position])
                }
                initialized = count
            }
        }
    }
}

/// Rows of sort keys (``SortPlan/sorted(_:keys:)``): whether they are in
/// order and the order that sorts them. Not generic over the record type,
/// so that a call looks up no type metadata (a nested type of the generic
/// ``SortPlan`` cost about 330 instructions a look-up, twice a query).
enum SortKeyRows {
    /// The order rows are in: already the order asked for, its exact
    /// reverse, or neither.
    enum Order { case ascending, descending, neither }

    /// Whether the rows of `keys` are already in order (each row before the
    /// next), in exactly the reverse order, or neither.
    static func order<Key: Comparable>(of keys: [Key], width: Int, ascending: [Bool]) -> Order {
        keys.withUnsafeBufferPointer { order(of: $0, width: width, ascending: ascending) }
    }

    /// ``order(of:width:ascending:)`` of keys in memory the caller holds.
    static func order<Key: Comparable>(of keys: UnsafeBufferPointer<Key>, width: Int, ascending: [Bool]) -> Order {
        let count = width == 0 ? 0 : keys.count / width
        guard count > 1 else { return .ascending }
        return ascending.withUnsafeBufferPointer { ascending in
            // -1: row `lhs` comes first; 1: row `rhs` comes first; 0: equal.
            func compare(_ lhs: Int, _ rhs: Int) -> Int {
                var position = 0
                while position < width {
                    let a = keys[lhs * width + position]
                    let b = keys[rhs * width + position]
                    if a < b { return ascending[position] ? -1 : 1 }
                    if b < a { return ascending[position] ? 1 : -1 }
                    position += 1
                }
                return 0
            }
            let first = compare(0, 1)
            guard first != 0 else { return .neither }
            for row in 1..<(count - 1) where compare(row, row + 1) != first { return .neither }
            return first < 0 ? .ascending : .descending
        }
    }

    /// The positions of the rows of `keys` (`width` values each) in ascending
    /// order of their values, column by column, each column ascending or not.
    static func sortedPositions<Key: Comparable>(_ keys: [Key], width: Int, ascending: [Bool]) -> [Int] {
        keys.withUnsafeBufferPointer { sortedPositions($0, width: width, ascending: ascending) }
    }

    /// ``sortedPositions(_:width:ascending:)`` of keys in memory the caller holds.
    static func sortedPositions<Key: Comparable>(
        _ keys: UnsafeBufferPointer<Key>, width: Int, ascending: [Bool]
    ) -> [Int] {
        let count = width == 0 ? 0 : keys.count / width
        return ascending.withUnsafeBufferPointer { ascending in
            (0..<count).sorted { lhs, rhs in
                var position = 0
                while position < width {
                    let a = keys[lhs * width + position]
                    let b = keys[rhs * width + position]
                    if a < b { return ascending[position] }
                    if b < a { return !ascending[position] }
                    position += 1
                }
                return false
            }
        }
    }
}

/// Sort keys in an ordered form: a field's stored value as a `UInt64` whose
/// unsigned order is the order ``StoredValue`` compares such values in, and
/// which are equal exactly when the values tie in that order. Integers (and
/// booleans, 0 or 1) and reals (and dates) have one; text, blobs and `nil`
/// have none. An adapter that reads a query's sort keys from stored bytes
/// encodes them so when every column has one
/// (``QueryPlan/finish(_:orderedKeys:descending:)``).
public enum SortKey {
    /// The ordered form of an integer.
    @inlinable
    public static func ordered(_ integer: Int64) -> UInt64 {
        UInt64(bitPattern: integer) ^ (1 << 63)
    }

    /// The ordered form of a real: `-0.0` has the form of `0.0`, which it
    /// ties with, and every NaN the greatest form, after `+infinity`
    /// (``nanForm``).
    @inlinable
    public static func ordered(_ real: Double) -> UInt64 {
        guard !real.isNaN else { return nanForm }
        let bits = (real == 0 ? 0.0 : real).bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    /// The ordered form of every NaN: above `+infinity`'s
    /// (`0xFFF0_0000_0000_0000`), and the form of no other real.
    public static let nanForm: UInt64 = .max

    /// The real of an ordered form (``ordered(_:)-(Double)``): the canonical NaN
    /// for ``nanForm``, `0.0` for the form of `±0.0`.
    @inlinable
    public static func real(ordered key: UInt64) -> Double {
        if key == nanForm { return .nan }
        return Double(bitPattern: key & (1 << 63) != 0 ? key ^ (1 << 63) : ~key)
    }
}
