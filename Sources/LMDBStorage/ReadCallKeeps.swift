import CLMDB
import DAOCore

/// What a read call bound from a prepared query's template derives for its
/// walk and keeps, with the read codecs it holds, for the next call:
/// taken with the codecs (``EntityTable/withReadCodecs(_:)``), so used by
/// one call at a time; its state is not checked for exclusive access at
/// run time.
final class ReadCallKeeps {
    /// The prepared read of the last read call bound from a template
    /// (``EntityTable/preparedRead(for:codecs:)``): found here without the
    /// table's lock while the next call is of the same template.
    @exclusivity(unchecked) var keptPreparedRead: PreparedRead?

    /// The parent's key bytes of a read call's range, reused from call to
    /// call (``LMDBRecordStorage/parentRange(_:_:codecs:)``).
    @exclusivity(unchecked) var parentKeyBuffer: [UInt8] = []

    /// Where the values a view call keeps lie in the map, in the order
    /// its range was read (``LMDBRecordStorage/forEachView(_:_:)-(PreparedQueryCall<Record>)``):
    /// emptied before and after each call, its memory kept for the next.
    @exclusivity(unchecked) var viewValues: [UnsafeRawBufferPointer] = []

    /// The cursor a read call walks its range with (``cursor(_:)``).
    @exclusivity(unchecked) private var keptCursor: KeptReadCursor?

    /// The cursor on `dbi` (the table's main database) the codecs keep for
    /// their read calls: renewed in each call's transaction rather than
    /// opened and closed (about 700 instructions a call).
    func cursor(_ dbi: MDB_dbi) -> KeptReadCursor {
        if let keptCursor, keptCursor.dbi == dbi { return keptCursor }
        let made = KeptReadCursor(dbi)
        keptCursor = made
        return made
    }

    /// The context of the views a view call lends (``viewContext(_:_:)``).
    @exclusivity(unchecked) private var keptViewContext: ViewContext?

    /// The context of the views of the values the codecs' `decoder` lays
    /// out, for entity layout `layout`: made by the first view call, then
    /// kept with the codecs (whose table has one layout) for the next.
    func viewContext(_ layout: ViewLayout, _ decoder: ValueDecoder) -> ViewContext {
        if let keptViewContext { return keptViewContext }
        let made = ViewContext(packedOf: layout, offsets: decoder.offsets, access: decoder, textIsValidated: false)
        keptViewContext = made
        return made
    }

    /// The range filter of the last read call that asked for one, with the
    /// fields and values it was made for: the next call that filters the
    /// same fields on the same values uses it again (``rangeFilter(fields:values:from:others:types:fromEnd:)``).
    /// A filter is not changed once made.
    @exclusivity(unchecked) private var keptFilter: KeptFilter?

    /// A range filter and what it was made from.
    private final class KeptFilter {
        let fields: [Int]
        let values: [StoredValue]
        let filter: RangeFilter

        init(fields: [Int], values: [StoredValue], filter: RangeFilter) {
            self.fields = fields
            self.values = values
            self.filter = filter
        }
    }

    /// The filter comparing field `fields[i]` with the `i`th of
    /// `values[first...]` followed by the values of `others`, as
    /// `RangeFilter(fields:values:types:fromEnd:)` makes it: the kept one
    /// when it was made for the same fields and values (made for each
    /// call, a prepared query's filter cost about 1k instructions).
    func rangeFilter(
        fields: [Int], values: [StoredValue], from first: Int, others: [(field: String, value: StoredValue)],
        types: [FieldType], fromEnd: [Int]
    ) -> RangeFilter {
        let count = max(values.count - first, 0) + others.count
        if let kept = keptFilter, kept.fields == fields, kept.values.count == count {
            var same = true
            var index = 0
            for position in first..<max(values.count, first) where same {
                same = kept.values[index] == values[position]
                index += 1
            }
            for other in others where same {
                same = kept.values[index] == other.value
                index += 1
            }
            if same { return kept.filter }
        }
        var filterValues: [StoredValue] = []
        filterValues.reserveCapacity(count)
        for position in first..<max(values.count, first) { filterValues.append(values[position]) }
        for other in others { filterValues.append(other.value) }
        let made = RangeFilter(fields: fields, values: filterValues, types: types, fromEnd: fromEnd)
        keptFilter = KeptFilter(fields: fields, values: filterValues, filter: made)
        return made
    }

    /// The filter comparing field `fields[i]` with `value(i)` for `i` in
    /// `0..<count`, as ``rangeFilter(fields:values:from:others:types:fromEnd:)``
    /// makes it, for a call that reads its values one by one
    /// (``LMDBRecordStorage/read(_:)-(PreparedQueryCall<Record>)``): the kept
    /// one when it was made for the same fields and values, compared
    /// without an array made for them. `nil` when a value is `nil`.
    func rangeFilter(
        fields: [Int], count: Int, value: (Int) -> StoredValue?, types: [FieldType], fromEnd: [Int]
    ) -> RangeFilter? {
        if let kept = keptFilter, kept.fields == fields, kept.values.count == count {
            var same = true
            for index in 0..<count where same {
                guard let one = value(index) else { return nil }
                same = kept.values[index] == one
            }
            if same { return kept.filter }
        }
        var filterValues: [StoredValue] = []
        filterValues.reserveCapacity(count)
        for index in 0..<count {
            guard let one = value(index) else { return nil }
            filterValues.append(one)
        }
        let made = RangeFilter(fields: fields, values: filterValues, types: types, fromEnd: fromEnd)
        keptFilter = KeptFilter(fields: fields, values: filterValues, filter: made)
        return made
    }

    /// The sort keys of the last read call that asked for them, emptied and
    /// lent to the next that asks for keys of the same fields
    /// (``sortKeys(positions:columns:)``) unless they grew large: made for
    /// each call, with their memory, they cost a prepared query about 1.3k
    /// instructions.
    @exclusivity(unchecked) private var keptSortKeys: SortKeys?

    /// Empty sort keys of the fields at `positions` (as
    /// `SortKeys(positions:columns:)` makes them), for this call: the
    /// kept ones when they are of those fields. Valid while the call holds
    /// the codecs.
    func sortKeys(positions: [Int], columns: [SortKeys.Column]?) -> SortKeys {
        if let kept = keptSortKeys, kept.positions == positions, kept.columns == columns, kept.isSmall {
            kept.removeAll()
            return kept
        }
        let made = SortKeys(positions: positions, columns: columns)
        keptSortKeys = made
        keptSortKeysRead = nil
        return made
    }

    /// The prepared read the kept sort keys were last lent for
    /// (``sortKeys(for:)``).
    @exclusivity(unchecked) private var keptSortKeysRead: PreparedRead?

    /// ``sortKeys(positions:columns:)`` of `prepared`'s sort positions and
    /// columns, `nil` when it has none: the kept keys found by the prepared
    /// read's identity when they were last lent for it, without their
    /// positions and columns compared.
    func sortKeys(for prepared: PreparedRead) -> SortKeys? {
        guard let positions = prepared.sortPositions else { return nil }
        if let kept = keptSortKeys, keptSortKeysRead === prepared, kept.isSmall {
            kept.removeAll()
            return kept
        }
        let keys = sortKeys(positions: positions, columns: prepared.sortColumns)
        keptSortKeysRead = prepared
        return keys
    }
}
