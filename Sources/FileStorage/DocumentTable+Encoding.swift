import DAOCore
import Foundation

// The document or delta a commit writes, its records in primary-key order.
// What to encode is taken holding the store's state lock exclusively; the
// encoding runs after it is let go (``StoreState/prepareCommit()``).
extension DocumentTable {
    func documentEncoding(with coder: DocumentCoder) -> DocumentEncoding {
        compact()
        // The records as they are now: the array shares its storage with the
        // table's until the table changes it (a commit that sets its
        // changes aside record by record then copies it once).
        let document = Document<R>(version: Document<R>.currentVersion, entity: entityName, records: state.records)
        // One `encode` call for the whole document: Foundation's encoders cost
        // far more per call than per record.
        return DocumentEncoding { try coder.encode(document) }
    }

    /// Puts the records in primary-key order, the order of a document, and
    /// closes the holes, if there is anything to do (see
    /// ``DocumentTableState/inKeyOrder`` and ``DocumentTableState/live``): the next documents
    /// are then written without sorting, as long as records are replaced in
    /// place, removed or added after the last key. The map and the indexes
    /// (which hold keys, not positions) see the same records; only
    /// ``DocumentTableState/positions`` is rewritten.
    func compact() {
        guard !state.inKeyOrder || state.holes > 0 else { return }
        var order: [Int]
        if state.inKeyOrder {
            order = []
            order.reserveCapacity(state.count)
            for position in 0..<state.live.count where state.live[position] { order.append(position) }
        } else {
            order = positionsInKeyOrder()
        }
        var records: [R] = []
        var keys: [StoredValue] = []
        records.reserveCapacity(order.count)
        keys.reserveCapacity(order.count)
        for index in 0..<order.count {
            records.append(state.records[order[index]])
            keys.append(state.keys[order[index]])
        }
        state.records = records
        state.keys = keys
        state.live = Array(repeating: true, count: keys.count)
        state.holes = 0
        for position in 0..<keys.count { state.positions[keys[position]] = position }
        state.inKeyOrder = true
    }

    /// The positions of the records in primary-key order. Integer keys (the
    /// common case) are sorted as `Int64` pairs with their positions: the
    /// standard library's sort of `StoredValue`s by `<` switches on both
    /// cases at every comparison.
    private func positionsInKeyOrder() -> [Int] {
        let count = state.keys.count
        var pairs: [(key: Int64, position: Int)] = []
        pairs.reserveCapacity(state.count)
        for position in 0..<count where state.live[position] {
            guard case .integer(let value) = state.keys[position] else {
                // Keys of one entity are of one type; ties (a real's +0 and
                // -0, which `<` does not order) keep their positions' order.
                let keys = state.keys
                return (0..<count).filter { state.live[$0] }.sorted {
                    keys[$0] < keys[$1] || (!(keys[$1] < keys[$0]) && $0 < $1)
                }
            }
            pairs.append((value, position))
        }
        // The keys are distinct: no ties to break.
        pairs.sort { $0.key < $1.key }
        return pairs.map(\.position)
    }

    func deltaEncoding(_ keys: Set<StoredValue>, with coder: DocumentCoder) throws -> DocumentEncoding {
        var records: [R] = []
        var erased: [R.PrimaryKey] = []
        for key in keys.sorted() {
            if let record = self.record(key) {
                records.append(record)
            } else if let primaryKey = R.PrimaryKey(storedValue: key) {
                erased.append(primaryKey)
            } else {
                throw StorageError(
                    .encoding, .persist, entity: entityName,
                    message: "the erased key \(key) is not a primary key of '\(entityName)'")
            }
        }
        let delta = Delta<R>(version: Delta<R>.currentVersion, entity: entityName, records: records, erased: erased)
        return DocumentEncoding { try coder.encode(delta) }
    }
}

/// The encoding of a document or delta, its records taken from a table
/// (``DocumentTable/documentEncoding(with:)``,
/// ``DocumentTable/deltaEncoding(_:with:)``), run by the commit without the
/// store's state lock. Run once, on the thread that holds the store's
/// writer lock, which every use of the store's coder holds.
struct DocumentEncoding {
    let encode: () throws -> Data
}
