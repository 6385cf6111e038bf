import DAOCore

// Finding records: by key, by keys in key order, and the readers by position
// that a query uses.
extension DocumentTable {
    func holdsKey(_ key: StoredValue) -> Bool { state.positions[key] != nil }

    func record(_ key: StoredValue) -> R? {
        guard let position = state.positions[key] else { return nil }
        return state.records[position]
    }

    /// The records stored under `keys`, in primary-key order (a key not
    /// stored is skipped). Integer keys (the common case) are sorted as
    /// `Int64` pairs with their positions: sorting the `StoredValue`s, which
    /// switches on both cases and copies them at every comparison, was half
    /// of a `readAll`.
    func records(withKeys keys: Set<StoredValue>) -> [R] {
        var records: [R] = []
        records.reserveCapacity(keys.count)
        var pairs: [(key: Int64, position: Int)] = []
        pairs.reserveCapacity(keys.count)
        for key in keys {
            guard case .integer(let value) = key else {
                for key in keys.sorted() {
                    if let position = state.positions[key] { records.append(state.records[position]) }
                }
                return records
            }
            if let position = state.positions[key] { pairs.append((value, position)) }
        }
        // The keys are distinct: no ties to break.
        pairs.sort { $0.key < $1.key }
        for index in 0..<pairs.count { records.append(state.records[pairs[index].position]) }
        return records
    }

    /// ``records(withKeys:)`` in descending key order when `descending`, and
    /// with a test only those that pass it, tested in place (a record that
    /// fails is not copied).
    /// - Throws: what ``QueryPlan/matches(_:)`` throws.
    func records(withKeys keys: Set<StoredValue>, descending: Bool, matching test: CandidateTest<R>?) throws -> [R] {
        var records: [R] = []
        records.reserveCapacity(keys.count)
        var pairs: [(key: Int64, position: Int)] = []
        pairs.reserveCapacity(keys.count)
        for key in keys {
            guard case .integer(let value) = key else {
                let sorted = keys.sorted()
                for key in descending ? sorted.reversed() : sorted {
                    guard let position = state.positions[key] else { continue }
                    if let test, try !test.passes(state.records[position]) { continue }
                    records.append(state.records[position])
                }
                return records
            }
            if let position = state.positions[key] { pairs.append((value, position)) }
        }
        // The keys are distinct: no ties to break.
        if descending { pairs.sort { $0.key > $1.key } } else { pairs.sort { $0.key < $1.key } }
        for index in 0..<pairs.count {
            let position = pairs[index].position
            if let test, try !test.passes(state.records[position]) { continue }
            records.append(state.records[position])
        }
        return records
    }

    /// ``records(withKeys:descending:matching:)`` with the test a
    /// ``FieldsMatcher`` and its values (`nil`: every record passes), for a
    /// prepared call (``answer(_:into:)``): no optional enum copied per
    /// record.
    /// - Throws: what the record's `write(fields:)` throws.
    func records(
        withKeys keys: Set<StoredValue>, descending: Bool, matcher: FieldsMatcher<R>?, values: [StoredValue]
    ) throws -> [R] {
        // The walk is written out here and in the function above, not shared
        // through a closure: shared, it cost a prepared query on the file
        // stores 4.4% more instructions (callgrind, make bench-smoke).
        var records: [R] = []
        records.reserveCapacity(keys.count)
        var pairs: [(key: Int64, position: Int)] = []
        pairs.reserveCapacity(keys.count)
        for key in keys {
            guard case .integer(let value) = key else {
                let sorted = keys.sorted()
                for key in descending ? sorted.reversed() : sorted {
                    guard let position = state.positions[key] else { continue }
                    if let matcher, try !matcher(state.records[position], values) { continue }
                    records.append(state.records[position])
                }
                return records
            }
            if let position = state.positions[key] { pairs.append((value, position)) }
        }
        // The keys are distinct: no ties to break.
        if descending { pairs.sort { $0.key > $1.key } } else { pairs.sort { $0.key < $1.key } }
        if let matcher {
            for index in 0..<pairs.count {
                let position = pairs[index].position
                if try matcher(state.records[position], values) { records.append(state.records[position]) }
            }
        } else {
            for index in 0..<pairs.count { records.append(state.records[pairs[index].position]) }
        }
        return records
    }

    /// The reader of the field named `name` by its position, when the record
    /// is a ``FieldwiseRecord`` (``valueReaders``).
    func valueReader(of name: String) -> FieldValueReader<R>? {
        guard !valueReaders.isEmpty, let position = R.entity.position(ofField: name) else { return nil }
        return valueReaders[position]
    }

    /// The sort keys of `records` for `sort` (``SortPlan/sorted(_:keys:)``:
    /// each record's value of the sort's field, then its primary key's),
    /// read by position in one pass over the records specialized for the
    /// record type (``FieldPairReader``), without key paths; `nil` unless
    /// the sort compares the stored values of one field and the record is a
    /// ``FieldwiseRecord``.
    /// - Throws: what the record's `write(fields:)` throws.
    func sortKeys(of records: [R], for sort: SortPlan<R>) throws -> [StoredValue]? {
        guard !sortKeyReaders.isEmpty, let fields = sort.fields, fields.count == 1,
            let position = R.entity.position(ofField: fields[0].field.name), position > 0,
            let read = sortKeyReaders[position]
        else { return nil }
        let (values, keys) = try read(records)
        var sortKeys: [StoredValue] = []
        sortKeys.reserveCapacity(values.count * 2)
        for index in 0..<values.count {
            sortKeys.append(values[index])
            sortKeys.append(keys[index])
        }
        return sortKeys
    }
}
