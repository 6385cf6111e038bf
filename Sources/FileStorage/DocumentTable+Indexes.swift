import DAOCore

// The equality indexes: for each indexed field, value → primary keys.
extension DocumentTable {
    /// Adds an equality index on the field `name` (in the current state, in
    /// the one a rollback would restore and in the one a commit writing its
    /// files set aside), if there is none.
    func ensureIndex(on name: String) {
        guard !indexedNames.contains(name), let field = R.entity.field(named: name) else { return }
        indexedFields.append(field)
        indexCount += 1
        indexedNames.append(name)
        state.indexes.append(Self.index(state, on: field))
        if var restored = saved {
            restored.indexes.append(Self.index(restored, on: field))
            saved = restored
        }
        if var changes = setAsideChanges, case .state(var after) = changes.redo {
            after.indexes.append(Self.index(after, on: field))
            changes.redo = .state(after)
            setAsideChanges = changes
        }
    }

    private static func index(_ state: DocumentTableState<R>, on field: Field<R>) -> [StoredValue: Set<StoredValue>] {
        var index: [StoredValue: Set<StoredValue>] = [:]
        for position in 0..<state.records.count where state.live[position] {
            index[indexKey(field.value(in: state.records[position])), default: []].insert(state.keys[position])
        }
        return index
    }

    /// The key of `value` in an equality index: the value, but `0.0` for
    /// `-0.0`, which it equals, and one NaN for every NaN (which no lookup
    /// asks for: NaN equals nothing).
    @inline(__always)
    static func indexKey(_ value: StoredValue) -> StoredValue {
        guard case .real(let real) = value, real == 0 || real.isNaN else { return value }
        return .real(real.isNaN ? .nan : 0)
    }

    /// The primary keys of the records whose `field` holds `value`, if `field` is indexed.
    func keys(where field: String, equals value: StoredValue) -> Set<StoredValue>? {
        guard let position = indexedNames.firstIndex(of: field) else { return nil }
        return state.indexes[position][Self.indexKey(value)] ?? []
    }

    /// Adds `keys` to the entry of `value` in the index at `position`.
    func addToIndex(_ position: Int, _ value: StoredValue, _ keys: [StoredValue]) {
        Self.insert(keys, into: &state.indexes[position][Self.indexKey(value), default: []])
    }

    private static func insert(_ keys: [StoredValue], into set: inout Set<StoredValue>) {
        set.reserveCapacity(set.count + keys.count)
        for key in keys { set.insert(key) }
    }

    /// Removes `key` from the entry of `value` in the index at `position`.
    func removeFromIndex(_ position: Int, _ value: StoredValue, _ key: StoredValue) {
        guard let index = state.indexes[position].index(forKey: Self.indexKey(value)) else { return }
        state.indexes[position].values[index].remove(key)
        if state.indexes[position].values[index].isEmpty { state.indexes[position].remove(at: index) }
    }
}
