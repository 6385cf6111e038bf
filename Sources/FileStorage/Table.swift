import DAOCore
import Foundation

/// The in-memory copy of one entity's document: records by primary key (parents
/// with their relations emptied) and equality indexes on the fields that
/// queries and relations look up by.
struct TableState<R: Record> {
    /// The records, relations emptied.
    var records: [R.PrimaryKey: R] = [:]
    /// For each indexed field: value → keys of the records holding it.
    var indexes: [String: [StoredValue: Set<R.PrimaryKey>]] = [:]
}

/// A table as the store holds it, behind the store's lock.
protocol AnyTable: AnyObject {
    var entityName: String { get }
    /// The document the table was loaded from or last written to.
    var documentName: String? { get set }
    /// Whether the table changed in the transaction under way.
    var isDirty: Bool { get }
    /// Encodes the table as a document.
    func encodeDocument(with coder: DocumentCoder) throws -> Data
    /// Remembers the state at the start of a transaction.
    func begin()
    /// Forgets the remembered state: the transaction committed.
    func commit()
    /// Restores the remembered state: the transaction failed.
    func rollback()
}

final class Table<R: Record>: AnyTable {
    let entityName: String
    var documentName: String?
    var state: TableState<R>
    /// The fields with an equality index: the foreign key (when the entity is
    /// owned) and the leading field of each declared index.
    let indexedFields: [Field<R>]
    private var saved: TableState<R>?
    private(set) var isDirty = false

    init(records: [R], documentName: String?, foreignKey: String?) {
        entityName = R.entity.name
        self.documentName = documentName
        var names: [String] = []
        if let foreignKey { names.append(foreignKey) }
        for index in R.entity.indexes where !names.contains(index.fields[0]) {
            names.append(index.fields[0])
        }
        indexedFields = names.compactMap { R.entity.field(named: $0) }
        state = TableState()
        for field in indexedFields { state.indexes[field.name] = [:] }
        for record in records { insert(record) }
        isDirty = false
    }

    // MARK: Transactions

    func begin() {
        saved = state
        isDirty = false
    }

    func commit() {
        saved = nil
        isDirty = false
    }

    func rollback() {
        if let saved { state = saved }
        saved = nil
        isDirty = false
    }

    // MARK: Reads

    func record(_ key: R.PrimaryKey) -> R? { state.records[key] }

    /// The keys of the records whose `field` holds `value`, if `field` is indexed.
    func keys(where field: String, equals value: StoredValue) -> Set<R.PrimaryKey>? {
        guard let index = state.indexes[field] else { return nil }
        return index[value] ?? []
    }

    // MARK: Writes

    /// Inserts or replaces `record` (relations already emptied).
    func insert(_ record: R) {
        let key = record.primaryKey
        if let old = state.records.updateValue(record, forKey: key) {
            unindex(old, key)
        }
        for field in indexedFields {
            state.indexes[field.name, default: [:]][field.value(in: record), default: []].insert(key)
        }
        isDirty = true
    }

    /// Removes the record with `key`; returns it if there was one.
    @discardableResult
    func remove(_ key: R.PrimaryKey) -> R? {
        guard let old = state.records.removeValue(forKey: key) else { return nil }
        unindex(old, key)
        isDirty = true
        return old
    }

    private func unindex(_ record: R, _ key: R.PrimaryKey) {
        for field in indexedFields {
            let value = field.value(in: record)
            state.indexes[field.name]?[value]?.remove(key)
            if state.indexes[field.name]?[value]?.isEmpty == true {
                state.indexes[field.name]?[value] = nil
            }
        }
    }

    func encodeDocument(with coder: DocumentCoder) throws -> Data {
        let records = state.records.values.sorted { $0.primaryKey < $1.primaryKey }
        let document = Document<R>(version: Document<R>.currentVersion, entity: entityName, records: records)
        return try coder.encode(document)
    }
}
