import CLMDB
import DAOCore
import Foundation

// Reading records, planning queries over keys and indexes, sorting.
extension EntityTable {
    /// Decodes the value in `buffer` with its children.
    @inline(__always)
    func decode(_ buffer: UnsafeRawBufferPointer, in txn: borrowing Transaction, codecs: Codecs) throws -> R {
        try load(buffer, codecs.decoder)
        return try decodeLoaded(in: txn, codecs: codecs)
    }

    /// Makes `buffer` the decoder's value: laid out now for a record read
    /// through `Decodable` (its primary key is read before the record, to
    /// find its children), as it is read for a ``FieldwiseRecord``
    /// (``ValueDecoder/begin(_:checkingSum:)``).
    @inline(__always)
    func load(_ buffer: UnsafeRawBufferPointer, _ decoder: ValueDecoder) throws {
        if fieldwiseType != nil {
            try decoder.begin(buffer)
        } else {
            try decoder.load(buffer)
        }
    }

    /// Decodes the value the decoder has loaded (or begun, for a
    /// ``FieldwiseRecord``), with its children.
    func decodeLoaded(in txn: borrowing Transaction, codecs: Codecs) throws -> R {
        let decoder = codecs.decoder
        if let fieldwiseType {
            var record = try decoder.decodeFieldwise(fieldwiseType, as: R.self)
            guard hasRelations else { return record }
            var pk: [UInt8] = []
            KeyCodec.append(untagged: try decoder.value(at: 0), to: &pk)
            // A range of integers, not `relations.indices`: the collection's
            // `indices` looked up `Range`'s metadata at each record.
            for position in 0..<relations.count {
                try relations[position].readChildren(
                    parentKey: pk, into: &record, in: txn, codecs: codecs.children[position])
            }
            return record
        }
        let codable = try codecs.codableFields()
        guard hasRelations else { return try decoder.decode(R.self, with: codable, children: []) }
        var pk: [UInt8] = []
        KeyCodec.append(untagged: try decoder.value(at: 0), to: &pk)
        var children: [Any] = []
        children.reserveCapacity(relations.count)
        for position in relations.indices {
            children.append(try relations[position].loadChildren(parentKey: pk, in: txn, codecs: codecs.children[position]))
        }
        return try decoder.decode(R.self, with: codable, children: children)
    }

    /// Decodes the value in `buffer`, with its children, into the next slot
    /// of `records`.
    @inline(__always)
    func decode(_ buffer: UnsafeRawBufferPointer, into records: RecordBuffer<R>, in txn: borrowing Transaction, codecs: Codecs) throws {
        try load(buffer, codecs.decoder)
        try decodeLoaded(into: records, in: txn, codecs: codecs)
    }

    /// Decodes the value the decoder has loaded, with its children, into the
    /// next slot of `records`. A ``FieldwiseRecord`` without relations is
    /// built in that slot: returning it and appending it copied the record
    /// and destroyed the original (a retain and a release per reference it
    /// holds, and two value-witness calls).
    @inline(__always)
    func decodeLoaded(into records: RecordBuffer<R>, in txn: borrowing Transaction, codecs: Codecs) throws {
        if !hasRelations, let fieldwiseType {
            let decoder = codecs.decoder
            try records.appendInPlace { slot in try decoder.decodeFieldwise(fieldwiseType, into: slot) }
            return
        }
        records.append(try decodeLoaded(in: txn, codecs: codecs))
    }

    /// The record with primary key bytes `pk`, with its children.
    func read(pk: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws -> R? {
        guard let key = try storageKey(of: pk, in: txn) else { return nil }
        return try txn.withValue(main, key) { try decode($0, in: txn, codecs: codecs) }
    }

    /// The records stored under keys starting with `prefix`, in key order.
    func readRange(prefix: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws -> [R] {
        let records = RecordBuffer<R>()
        try txn.scan(main, prefix: prefix) { _, value in
            try decode(value, into: records, in: txn, codecs: codecs)
            return true
        }
        return records.take()
    }

    /// How a predicate's candidates are found.
    enum Plan: Equatable {
        /// Every record of the entity.
        case everything
        /// One lookup by primary key (its key bytes).
        case primaryKey([UInt8])
        /// The children of one parent: one cursor range of the entity's database.
        case parentRange([UInt8])
        /// One range of a declared index (its name and the key prefix).
        case indexRange(String, [UInt8])
        /// An index that leads with the foreign key, served by the parent's
        /// range (the parent's key) filtered on the index's next fields:
        /// those whose values have the same index key as `rest`, the values
        /// the predicate binds after the foreign key. Its name, the parent's
        /// key and `rest`.
        case parentIndexRange(String, parent: [UInt8], rest: [StoredValue])
        /// The children of one parent (its key) whose fields at these
        /// positions hold these values: the predicate's other equalities,
        /// checked on the stored bytes (``QueryPlan/equalities(besides:)``).
        case parentFilteredRange(parent: [UInt8], fields: [Int], values: [StoredValue])
    }

    /// The records read from `rows` by `type`'s ``FieldwiseRecord/readPacked(rows:)``;
    /// `type` is `R` (found by casting `R.self`).
    func read<F: FieldwiseRecord>(_ rows: RangeRows, as type: F.Type) throws -> [R] {
        // Compared as metatypes and reinterpreted, as `ValueDecoder.decodeFieldwise`
        // does: `as? [R]` ran a dynamic cast of the array.
        guard F.self == R.self else {
            throw StorageError(.decoding, .read, entity: entity.name, message: "\(F.self) is not \(R.self)")
        }
        return unsafeBitCast(try F.readPacked(rows: rows), to: [R].self)
    }

    /// The narrowest way to find the records that can meet `predicate`: the
    /// core's access path (``QueryPlan/access``) in this adapter's keys.
    func plan(for predicate: Predicate<R>?) -> Plan {
        plan(for: QueryPlan(Query(where: predicate))).plan
    }

    /// ``plan(for:)``, and whether the plan's records are exactly those that
    /// meet the predicate, so it need not be evaluated on each record.
    func planWithExactness(for predicate: Predicate<R>?) -> (plan: Plan, isExact: Bool) {
        plan(for: QueryPlan(Query(where: predicate)))
    }

    /// The key range of the core's access path, and whether its records are
    /// exactly the answer (before sort and limit). A parent's range that
    /// does not answer the predicate by itself is filtered on the
    /// predicate's other equalities, when the predicate is nothing but
    /// equalities (``QueryPlan/equalities(besides:)``): then it does, and no
    /// child is decoded for the predicate to be evaluated on it.
    func plan(for query: QueryPlan<R>) -> (plan: Plan, isExact: Bool) {
        filtered(plan(for: query.access, isExact: query.accessIsExact)) { bound in
            query.equalities(besides: bound)?.map { (field: $0.field.name, value: $0.value) }
        }
    }

    /// `planned`, a parent's range that does not answer the predicate by
    /// itself, filtered on the equalities `others` gives for the names of
    /// the fields the range binds (the foreign key, and an index's next
    /// fields), when it gives any: then exact. Any other plan as it is.
    func filtered(
        _ planned: (plan: Plan, isExact: Bool), others: (Set<String>) -> [(field: String, value: StoredValue)]?
    ) -> (plan: Plan, isExact: Bool) {
        let (path, isExact) = planned
        guard !isExact, let link else { return (path, isExact) }
        let foreignKey = entity.fields[link.foreignKeyIndex].name
        let parent: [UInt8]
        var fields: [Int] = []
        var values: [StoredValue] = []
        var bound: Set<String> = [foreignKey]
        switch path {
        case .parentRange(let key):
            parent = key
        case .parentIndexRange(let name, let key, let rest):
            guard let index = indexes.first(where: { $0.index.name == name }) else { return (path, isExact) }
            parent = key
            for (field, value) in zip(index.fields.dropFirst(), rest) {
                fields.append(field)
                values.append(value)
                bound.insert(entity.fields[field].name)
            }
        default:
            return (path, isExact)
        }
        // The same rule as a prepared query's template (``preparedRead(for:)``).
        guard let others = others(bound),
            let positions = otherFieldPositions(others.map(\.field), besides: fields[...], link: link)
        else { return (path, isExact) }
        fields.append(contentsOf: positions)
        for other in others { values.append(other.value) }
        return (.parentFilteredRange(parent: parent, fields: fields, values: values), true)
    }

    /// The key range of the access path `access`, and whether its records
    /// are exactly the answer (`accessIsExact`, the plan's, unless this
    /// store cannot walk the path and reads everything).
    func plan(for access: QueryPlan<R>.Access, isExact accessIsExact: Bool) -> (plan: Plan, isExact: Bool) {
        switch access {
        case .all:
            return (.everything, accessIsExact)
        case .primaryKey(let value):
            var pk: [UInt8] = []
            KeyCodec.append(untagged: value, to: &pk)
            return (.primaryKey(pk), accessIsExact)
        case .index(let declared, let values):
            guard let index = indexes.first(where: { $0.index.name == declared.name }) else {
                return (.everything, false)
            }
            if isServedByParent(index, link: link), let first = values.first {
                // No child is stored under a null parent key.
                if case .null = first { return (.everything, false) }
                // The index key's first field is the foreign key: the
                // parent's range, each child's index key checked against the
                // rest, finds exactly the records the index range would.
                var parent: [UInt8] = []
                KeyCodec.append(untagged: first, to: &parent)
                return (
                    .parentIndexRange(index.index.name, parent: parent, rest: Array(values.dropFirst())),
                    accessIsExact
                )
            }
            guard index.dbi != nil else { return (.everything, false) }
            var prefix: [UInt8] = []
            for value in values { KeyCodec.append(indexed: value, to: &prefix) }
            return (.indexRange(index.index.name, prefix), accessIsExact)
        case .parent(let value):
            guard link != nil else { return (.everything, false) }
            var prefix: [UInt8] = []
            KeyCodec.append(untagged: value, to: &prefix)
            return (.parentRange(prefix), accessIsExact)
        }
    }

    /// `records` in the order of `descriptors`, ties broken by primary key: the
    /// core's ``SortPlan``.
    func sorted(_ records: [R], by descriptors: [SortDescriptor<R>]) -> [R] {
        SortPlan(descriptors).sorted(records)
    }

    /// A superset of the records that meet `predicate`, found by ``plan(for:)``.
    func candidates(for predicate: Predicate<R>?, in txn: borrowing Transaction, codecs: Codecs) throws -> [R] {
        try candidates(for: plan(for: predicate), in: txn, codecs: codecs)
    }

    /// The positions among the entity's fields of the fields `sort` compares
    /// by stored value, then the primary key's; `nil` when Foundation compares.
    func sortKeyPositions(_ sort: SortPlan<R>) -> [Int]? {
        guard let fields = sort.fields else { return nil }
        var positions: [Int] = []
        positions.reserveCapacity(fields.count + 1)
        for entry in fields {
            guard let position = schema.names.firstIndex(of: entry.field.name) else { return nil }
            positions.append(position)
        }
        positions.append(0)
        return positions
    }

    /// The sort keys to read for `sort` (``sortKeyPositions(_:)``), in
    /// ordered form when the fields allow; `nil` when Foundation compares.
    func sortKeys(_ sort: SortPlan<R>) -> SortKeys? {
        guard let positions = sortKeyPositions(sort) else { return nil }
        return SortKeys(
            positions: positions,
            columns: SortKeys.columns(positions: positions, types: schema.types, optional: schema.optional))
    }

    /// The records `plan` finds.
    func candidates(for plan: Plan, in txn: borrowing Transaction, codecs: Codecs) throws -> [R] {
        try candidates(for: plan, in: txn, codecs: codecs, sortKeys: nil)
    }

    /// The records `plan` finds, in key order (descending when `backwards`);
    /// when `sortKeys` is given, the stored values of its fields are
    /// appended to it for each record, read from the bytes the record was
    /// decoded from (``SortPlan/sorted(_:keys:)``).
    func candidates(
        for plan: Plan, in txn: borrowing Transaction, codecs: Codecs, sortKeys: SortKeys?, backwards: Bool = false
    ) throws -> [R] {
        let decoder = codecs.decoder
        switch plan {
        case .everything, .parentRange:
            var prefix: [UInt8] = []
            if case .parentRange(let parent) = plan { prefix = parent }
            if !hasRelations, let fieldwiseType {
                // The record type's specialized code reads the range.
                let rows = try RangeRows(
                    txn, main, prefix: prefix, backwards: backwards, filter: nil, decoder: decoder,
                    sortKeys: sortKeys)
                defer { rows.close() }
                return try read(rows, as: fieldwiseType)
            }
            let records = RecordBuffer<R>()
            try txn.scan(main, prefix: prefix, backwards: backwards) { _, value in
                try decode(value, into: records, in: txn, codecs: codecs)
                try sortKeys?.read(decoder)
                return true
            }
            return records.take()
        case .primaryKey(let pk):
            guard let key = try storageKey(of: pk, in: txn) else { return [] }
            let record = try txn.withValue(main, key) { value in
                let record = try decode(value, in: txn, codecs: codecs)
                try sortKeys?.read(decoder)
                return record
            }
            return record.map { [$0] } ?? []
        case .parentIndexRange(let name, let parent, let rest):
            guard let index = indexes.first(where: { $0.index.name == name }) else { return [] }
            let filter =
                rest.isEmpty
                ? nil
                : RangeFilter(
                    fields: Array(index.fields.dropFirst().prefix(rest.count)), values: rest, types: schema.types,
                    fromEnd: fieldsFromEnd)
            return try candidates(
                parent: parent, filter: filter, in: txn, codecs: codecs, sortKeys: sortKeys, backwards: backwards)
        case .parentFilteredRange(let parent, let fields, let values):
            let filter = RangeFilter(fields: fields, values: values, types: schema.types, fromEnd: fieldsFromEnd)
            return try candidates(
                parent: parent, filter: filter, in: txn, codecs: codecs, sortKeys: sortKeys, backwards: backwards)
        case .indexRange(let name, let prefix):
            guard let index = indexes.first(where: { $0.index.name == name }), let dbi = index.dbi else { return [] }
            var keys: [[UInt8]] = []
            try txn.scan(dbi, prefix: prefix, backwards: backwards) { _, key in
                keys.append([UInt8](key))
                return true
            }
            var records: [R] = []
            records.reserveCapacity(keys.count)
            for key in keys {
                let found = try txn.withValue(main, key) { value in
                    let record = try decode(value, in: txn, codecs: codecs)
                    try sortKeys?.read(decoder)
                    return record
                }
                guard let record = found else {
                    throw StorageError(
                        .corrupt, .read, entity: entity.name, path: environment.path,
                        message: "index '\(name)' names a record that is not stored")
                }
                records.append(record)
            }
            return records
        }
    }
}

extension EntityTable {
    /// The children of the parent whose key bytes are `parent`, in key order
    /// (descending when `backwards`), those `filter` keeps when there is one;
    /// with their sort keys appended to `sortKeys`, as
    /// ``candidates(for:in:codecs:sortKeys:backwards:)`` reads a
    /// ``Plan/parentIndexRange(_:parent:rest:)``. A ``FieldwiseRecord``
    /// without relations is read through `cursor`'s cursor when it is
    /// given (the read codecs', ``ReadCallKeeps/cursor(_:)``).
    func candidates(
        parent: [UInt8], filter: RangeFilter?, in txn: borrowing Transaction, codecs: Codecs, sortKeys: SortKeys?,
        backwards: Bool, cursor: KeptReadCursor? = nil
    ) throws -> [R] {
        let decoder = codecs.decoder
        if !hasRelations, let fieldwiseType {
            // The record type's specialized code reads the range.
            let rows = try RangeRows(
                txn, main, prefix: parent, backwards: backwards, filter: filter, decoder: decoder, sortKeys: sortKeys,
                cursor: cursor)
            defer { rows.close() }
            return try read(rows, as: fieldwiseType)
        }
        let records = RecordBuffer<R>()
        guard let filter else {
            try txn.scan(main, prefix: parent, backwards: backwards) { _, value in
                try decode(value, into: records, in: txn, codecs: codecs)
                try sortKeys?.read(decoder)
                return true
            }
            return records.take()
        }
        let isFieldwise = fieldwiseType != nil
        // A child whose fixed-width fields at the value's end already
        // fail is skipped by the scan itself, before the decoder sees
        // it; one they show passing (`passed`) is not compared again.
        try txn.scan(main, prefix: parent, backwards: backwards, skipping: filter) { _, value, passed in
            // The fields the filter reads and only those, before the
            // checksum: a child the filter skips is not returned, as a
            // child outside an index range was not read; one it keeps
            // is checked whole.
            try decoder.begin(value, checkingSum: false)
            if !passed {
                try filter.locate(in: decoder)
                guard try filter.matches(decoder) else { return true }
            }
            try decoder.checkSum(value)
            // A `FieldwiseRecord` is laid out as it is read; a record
            // read through `Decodable` is laid out first.
            if !isFieldwise { try decoder.layOut(from: 0, at: 1) }
            try decodeLoaded(into: records, in: txn, codecs: codecs)
            try sortKeys?.read(decoder)
            return true
        }
        return records.take()
    }
}

/// The sort keys of a query's candidates, read from each candidate's stored
/// bytes while the decoder holds them: the values of the sort's fields, then
/// the primary key's (positions among the entity's fields). When every one of
/// those fields is a non-optional integer, boolean, real or date, the keys
/// are kept in their ordered form (``SortKey``, ``ordered``): read without a
/// ``StoredValue`` made for each, compared as integers, released as one
/// buffer (the ``StoredValue`` keys cost about 190 instructions a key over
/// their life). Used by
/// one call on one thread: its keys are not checked for exclusive access at
/// run time (about 90 instructions per key appended).
final class SortKeys {
    /// How a column is kept in ordered form.
    enum Column: UInt8 {
        case integer
        case bool
        case real
    }

    let positions: [Int]
    /// Each column's ordered form; `nil`: the keys are ``StoredValue``s.
    let columns: [Column]?
    @exclusivity(unchecked) private(set) var keys: [StoredValue] = []
    /// The ordered keys, in memory of their own (grown by doubling) and
    /// the columns' positions and forms beside them: appending to arrays
    /// held by the class checked their uniqueness and capacity per key.
    @exclusivity(unchecked) private var start: UnsafeMutablePointer<UInt64>
    @exclusivity(unchecked) private var capacity: Int
    @exclusivity(unchecked) private var count = 0
    private let width: Int
    private let fieldPositions: UnsafeMutablePointer<Int>
    private let forms: UnsafeMutablePointer<Column>

    /// Sort keys of the fields at `positions`, in ordered form when
    /// `columns` (``columns(positions:types:optional:)``) gives one for each.
    init(positions: [Int], columns: [Column]?) {
        self.positions = positions
        self.columns = columns
        width = columns == nil ? 0 : positions.count
        fieldPositions = .allocate(capacity: max(width, 1))
        forms = .allocate(capacity: max(width, 1))
        if let columns {
            for index in 0..<width {
                fieldPositions[index] = positions[index]
                forms[index] = columns[index]
            }
        }
        // Room for the keys of 64 candidates: grown from empty, the array
        // was copied about seven times per query of a hundred candidates.
        capacity = columns == nil ? 0 : width * 64
        start = .allocate(capacity: max(capacity, 1))
        if columns == nil { keys.reserveCapacity(positions.count * 64) }
    }

    deinit {
        start.deallocate()
        fieldPositions.deallocate()
        forms.deallocate()
    }

    /// The ordered form of each of the fields at `positions` of an entity
    /// whose fields have `types` and optionality `optional`; `nil` when one
    /// has none.
    static func columns(positions: [Int], types: [FieldType], optional: [Bool]) -> [Column]? {
        var columns: [Column] = []
        columns.reserveCapacity(positions.count)
        for position in positions {
            guard position < types.count, position < optional.count, !optional[position] else { return nil }
            switch types[position] {
            case .integer: columns.append(.integer)
            case .bool: columns.append(.bool)
            case .real, .date: columns.append(.real)
            case .text, .blob: return nil
            }
        }
        return columns
    }

    /// Whether the keys read are in ordered form.
    var isOrdered: Bool { columns != nil }

    /// Whether the memory of the keys is no larger than a read of a few
    /// thousand candidates needs: kept for later calls only then.
    var isSmall: Bool { capacity <= width * 4096 && keys.capacity <= positions.count * 4096 }

    /// Forgets the keys read, keeping their memory, for another call.
    func removeAll() {
        count = 0
        keys.removeAll(keepingCapacity: true)
    }

    /// The keys in ordered form (``SortKey``), a row per candidate.
    var ordered: [UInt64] { Array(UnsafeBufferPointer(start: start, count: count)) }

    /// Calls `body` with ``ordered`` where the keys lie, without the copy
    /// (an allocation a call): valid only during the call. `body` returns
    /// nothing: a generic result of a type generic over the record type
    /// (an array of records) had its metadata looked up at each call.
    func withOrdered(_ body: (UnsafeBufferPointer<UInt64>) throws -> Void) rethrows {
        try body(UnsafeBufferPointer(start: start, count: count))
    }

    /// Appends the sort keys of the value `decoder` has loaded.
    @inline(__always)
    func read(_ decoder: ValueDecoder) throws {
        guard width > 0 else {
            for position in positions { keys.append(try decoder.value(at: position)) }
            return
        }
        if count + width > capacity { grow() }
        for index in 0..<width {
            let position = fieldPositions[index]
            let key: UInt64
            switch forms[index] {
            case .integer:
                key = SortKey.ordered(try decoder.integer(at: position))
            case .bool:
                key = SortKey.ordered(Int64(decoder.bool(at: position) ? 1 : 0))
            case .real:
                key = SortKey.ordered(decoder.real(at: position))
            }
            (start + count).initialize(to: key)
            count += 1
        }
    }

    private func grow() {
        let larger = UnsafeMutablePointer<UInt64>.allocate(capacity: max(capacity * 2, width))
        larger.moveInitialize(from: start, count: count)
        start.deallocate()
        start = larger
        capacity = max(capacity * 2, width)
    }

    /// The keys as ``StoredValue``s, as ``ValueDecoder/value(at:)`` reads
    /// them: those read so, or made back from their ordered form.
    var storedKeys: [StoredValue] {
        guard width > 0 else { return keys }
        var stored: [StoredValue] = []
        stored.reserveCapacity(count)
        for index in 0..<count {
            let key = start[index]
            switch forms[index % width] {
            case .integer, .bool:
                stored.append(.integer(Int64(bitPattern: key ^ (1 << 63))))
            case .real:
                stored.append(.real(SortKey.real(ordered: key)))
            }
        }
        return stored
    }
}

/// Records collected one by one in memory of their own, then moved into an
/// array at once: appending to an `Array` in code generic over the record
/// type looked up the array's metadata on every append (about 330
/// instructions per record).
final class RecordBuffer<R> {
    private var start: UnsafeMutablePointer<R>
    private var capacity: Int
    private var count = 0

    /// Room for `capacity` records before the first growth. 64 by default:
    /// from 16, a parent's range of a hundred children grew the buffer three
    /// times (each growth an allocation and a move of every record so far),
    /// about 2.6k instructions per range; the memory is the buffer's only
    /// until ``take()``.
    init(capacity: Int = 64) {
        start = .allocate(capacity: capacity)
        self.capacity = capacity
    }

    deinit {
        start.deinitialize(count: count)
        start.deallocate()
    }

    @inline(__always)
    func append(_ record: consuming R) {
        if count == capacity { grow() }
        (start + count).initialize(to: record)
        count += 1
    }

    /// Appends the record `initialize` builds in the next slot; a slot it
    /// throws for is left uninitialized (and not counted).
    @inline(__always)
    func appendInPlace(_ initialize: (UnsafeMutablePointer<R>) throws -> Void) rethrows {
        if count == capacity { grow() }
        try initialize(start + count)
        count += 1
    }

    private func grow() {
        let larger = UnsafeMutablePointer<R>.allocate(capacity: capacity * 2)
        larger.moveInitialize(from: start, count: count)
        start.deallocate()
        start = larger
        capacity *= 2
    }

    /// The records, moved out into an array; the buffer is empty afterwards.
    func take() -> [R] {
        let moved = count
        let start = self.start
        let records = [R](unsafeUninitializedCapacity: moved) { buffer, initialized in
            guard let base = buffer.baseAddress else {
                initialized = 0
                return
            }
            base.moveInitialize(from: start, count: moved)
            initialized = moved
        }
        count = moved - records.count
        return records
    }
}
