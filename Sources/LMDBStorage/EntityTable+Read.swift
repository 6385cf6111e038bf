import CLMDB
import DAOCore
import Foundation

// Reading records, planning queries over keys and indexes, sorting.
extension EntityTable {
    /// Decodes the value in `buffer` with its children.
    func decode(_ buffer: UnsafeRawBufferPointer, in txn: borrowing Transaction, codecs: Codecs) throws -> R {
        let decoder = codecs.decoder
        try decoder.load(buffer)
        if let fieldwiseType {
            var record = try decoder.decodeFieldwise(fieldwiseType, as: R.self)
            guard !relations.isEmpty else { return record }
            var pk: [UInt8] = []
            KeyCodec.append(untagged: try decoder.value(at: 0), to: &pk)
            for position in relations.indices {
                let relation = relations[position]
                let children = try relation.loadChildren(parentKey: pk, in: txn, codecs: codecs.children[position])
                try relation.attach(children, to: &record)
            }
            return record
        }
        guard !relations.isEmpty else { return try decoder.decode(R.self, children: []) }
        var pk: [UInt8] = []
        KeyCodec.append(untagged: try decoder.value(at: 0), to: &pk)
        var children: [Any] = []
        children.reserveCapacity(relations.count)
        for position in relations.indices {
            children.append(try relations[position].loadChildren(parentKey: pk, in: txn, codecs: codecs.children[position]))
        }
        return try decoder.decode(R.self, children: children)
    }

    /// The record with primary key bytes `pk`, with its children.
    func read(pk: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws -> R? {
        guard let key = try storageKey(of: pk, in: txn) else { return nil }
        return try txn.withValue(main, key) { try decode($0, in: txn, codecs: codecs) }
    }

    /// The records stored under keys starting with `prefix`, in key order.
    func readRange(prefix: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws -> [R] {
        var records: [R] = []
        try txn.scan(main, prefix: prefix) { _, value in
            records.append(try decode(value, in: txn, codecs: codecs))
            return true
        }
        return records
    }

    /// The storage keys and primary-key bytes of the records under `prefix`
    /// whose primary-key bytes pass `include`.
    func keys(
        prefix: [UInt8], in txn: borrowing Transaction, where include: (UnsafeRawBufferPointer) -> Bool = { _ in true }
    ) throws -> [(key: [UInt8], pk: [UInt8])] {
        var keys: [(key: [UInt8], pk: [UInt8])] = []
        let prefixCount = prefix.count
        try txn.scan(main, prefix: prefix) { key, _ in
            let pk = UnsafeRawBufferPointer(rebasing: key[prefixCount...])
            if include(pk) { keys.append((key: [UInt8](key), pk: [UInt8](pk))) }
            return true
        }
        return keys
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
    }

    /// The narrowest way to find the records that can meet `predicate`, from
    /// its required equalities: on the primary key one lookup; on the leading
    /// fields of an index that index's range (preferred over the parent key
    /// when it binds more than one field); on the parent key one cursor range;
    /// otherwise every record.
    func plan(for predicate: Predicate<R>?) -> Plan {
        planWithExactness(for: predicate).plan
    }

    /// ``plan(for:)``, and whether the plan's records are exactly those that
    /// meet the predicate: it translates exactly into equalities on distinct
    /// fields, and the plan's key range binds every one of them. Then the
    /// predicate need not be evaluated on each record.
    func planWithExactness(for predicate: Predicate<R>?) -> (plan: Plan, isExact: Bool) {
        guard let predicate else { return (.everything, true) }
        let translation = QueryExpression.translate(predicate)
        let equalities = translation.expression.requiredEqualities
        guard !equalities.isEmpty else { return (.everything, false) }
        func bound(_ field: Int) -> StoredValue? {
            let declared = entity.fields[field]
            for equality in equalities where equality.field == declared.name {
                if let value = KeyCodec.coerce(equality.value, to: declared.type, optional: declared.isOptional) {
                    return value
                }
            }
            return nil
        }
        var fieldNames = Set<String>()
        let onlyEqualities =
            translation.isExact && Self.isConjunctionOfEqualities(translation.expression)
            && equalities.allSatisfy { equality in
                if case .real(let real) = equality.value, real.isNaN { return false }
                return fieldNames.insert(equality.field).inserted
            }
        func exact(_ boundFields: Int) -> Bool { onlyEqualities && boundFields == equalities.count }

        if let value = bound(0) {
            var pk: [UInt8] = []
            KeyCodec.append(untagged: value, to: &pk)
            return (.primaryKey(pk), exact(1))
        }
        var bestIndex: (name: String, prefix: [UInt8], bound: Int)?
        for index in indexes {
            var prefix: [UInt8] = []
            var count = 0
            for field in index.fields {
                guard let value = bound(field) else { break }
                KeyCodec.append(indexed: value, to: &prefix)
                count += 1
            }
            if count > 0 && count > (bestIndex?.bound ?? 0) { bestIndex = (index.index.name, prefix, count) }
        }
        let parentValue = link.flatMap { bound($0.foreignKeyIndex) }
        if let bestIndex, bestIndex.bound > 1 || parentValue == nil {
            return (.indexRange(bestIndex.name, bestIndex.prefix), exact(bestIndex.bound))
        }
        if let parentValue {
            var prefix: [UInt8] = []
            KeyCodec.append(untagged: parentValue, to: &prefix)
            return (.parentRange(prefix), exact(1))
        }
        return (.everything, false)
    }

    /// Whether `expression` is a conjunction of field equalities only.
    private static func isConjunctionOfEqualities(_ expression: QueryExpression) -> Bool {
        switch expression {
        case .compare(_, .equal, _), .isTrue, .not(.isTrue): true
        case .and(let lhs, let rhs): isConjunctionOfEqualities(lhs) && isConjunctionOfEqualities(rhs)
        default: false
        }
    }

    /// `records` in the order of `descriptors`, ties broken by primary key: the
    /// order of ``Query/sorted(_:by:)``. When every descriptor names a
    /// non-optional integer or date field, the sort keys are read once per
    /// record and compared as stored values (the same order those types have);
    /// otherwise the descriptors compare.
    func sorted(_ records: [R], by descriptors: [SortDescriptor<R>]) -> [R] {
        guard R.PrimaryKey.fieldType == .integer else { return Query<R>.sorted(records, by: descriptors) }
        var fields: [Field<R>] = []
        var ascending: [Bool] = []
        for descriptor in descriptors {
            guard let keyPath = descriptor.keyPath, let field = entity.field(for: keyPath), !field.isOptional,
                field.type == .integer || field.type == .date
            else {
                return Query<R>.sorted(records, by: descriptors)
            }
            fields.append(field)
            ascending.append(descriptor.order == .forward)
        }
        // The primary key (an integer) breaks ties, ascending.
        fields.append(entity.primaryKeyField)
        ascending.append(true)
        var keys: [StoredValue] = []
        keys.reserveCapacity(records.count * fields.count)
        for record in records {
            for field in fields { keys.append(field.value(in: record)) }
        }
        return SortKeys.order(keys, width: fields.count, ascending: ascending).map { records[$0] }
    }

    /// A superset of the records that meet `predicate`, found by ``plan(for:)``.
    func candidates(for predicate: Predicate<R>?, in txn: borrowing Transaction, codecs: Codecs) throws -> [R] {
        try candidates(for: plan(for: predicate), in: txn, codecs: codecs)
    }

    /// The records `plan` finds.
    func candidates(for plan: Plan, in txn: borrowing Transaction, codecs: Codecs) throws -> [R] {
        switch plan {
        case .everything:
            return try readRange(prefix: [], in: txn, codecs: codecs)
        case .primaryKey(let pk):
            return try read(pk: pk, in: txn, codecs: codecs).map { [$0] } ?? []
        case .parentRange(let prefix):
            return try readRange(prefix: prefix, in: txn, codecs: codecs)
        case .indexRange(let name, let prefix):
            guard let index = indexes.first(where: { $0.index.name == name }) else { return [] }
            var keys: [[UInt8]] = []
            try txn.scan(index.dbi, prefix: prefix) { _, key in
                keys.append([UInt8](key))
                return true
            }
            var records: [R] = []
            records.reserveCapacity(keys.count)
            for key in keys {
                guard let record = try txn.withValue(main, key, { try decode($0, in: txn, codecs: codecs) }) else {
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

/// Sorting by precomputed keys, in code that is not generic over the record.
enum SortKeys {
    /// The positions of the rows of `keys` (`width` values each) in ascending
    /// order of their values, column by column, each column ascending or not.
    static func order(_ keys: [StoredValue], width: Int, ascending: [Bool]) -> [Int] {
        let count = width == 0 ? 0 : keys.count / width
        return keys.withUnsafeBufferPointer { keys in
            ascending.withUnsafeBufferPointer { ascending in
                (0..<count).sorted { lhs, rhs in
                    var position = 0
                    while position < width {
                        let a = keys[lhs * width + position]
                        let b = keys[rhs * width + position]
                        if a != b { return ascending[position] ? a < b : b < a }
                        position += 1
                    }
                    return false
                }
            }
        }
    }
}
