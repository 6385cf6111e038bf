import DAOCore
import Foundation

/// The in-memory copy of one entity's document: records by primary key (parents
/// with their relations emptied) and equality indexes on the fields that
/// queries and relations look up by.
///
/// Keys are held as ``StoredValue``s, a concrete type, rather than as the
/// record's generic primary key: the adapter's code runs unspecialized for the
/// caller's record types (and inside opened relation existentials), where every
/// dictionary, set and sort over a generic key costs far more than over a
/// concrete one.
struct TableState<R: Record> {
    /// The records by primary key, relations emptied.
    var records: [StoredValue: R] = [:]
    /// For each indexed field: value → primary keys of the records holding it.
    var indexes: [String: [StoredValue: Set<StoredValue>]] = [:]
    /// Property lists only: how many text fields hold each text, by its exact
    /// scalars. Foundation's binary property-list writer stores canonically
    /// equivalent strings once, so two different spellings in one document
    /// would come back as one; ``Table/insert(_:)`` refuses the second instead.
    /// Built when the first text that may not be in NFC arrives (`nil` until
    /// then): a table that never holds one does not pay for it.
    var texts: [StoredValue: Int]?
    /// Property lists only: the texts that may not be in NFC (see
    /// ``CanonicalText``), keyed by Swift's canonical equivalence, with their
    /// exact scalars and how many fields hold them.
    var suspects: [String: (scalars: [UInt8], count: Int)] = [:]
}

/// A table as the store holds it, behind the store's lock.
protocol AnyTable: AnyObject {
    var entityName: String { get }
    /// The document the table was loaded from or last written to.
    var documentName: String? { get set }
    /// Whether the table changed in the transaction under way.
    var isDirty: Bool { get }
    /// The number of records.
    var recordCount: Int { get }
    /// The primary keys of the records written or erased since the base
    /// document (in the deltas the manifest lists), or `nil` when the
    /// transaction under way changed too much to write a delta: the next
    /// commit writes the whole document. Includes the transaction's changes.
    func keysSinceBase(merging: Bool) -> Set<StoredValue>?
    /// Encodes the table as a document.
    func encodeDocument(with coder: DocumentCoder) throws -> Data
    /// Encodes the current state of the records with `keys` as a delta: those
    /// present as records, the others as erased keys.
    func encodeDelta(_ keys: Set<StoredValue>, with coder: DocumentCoder) throws -> Data
    /// The number of primary keys the committed deltas wrote or erased.
    var changedSinceBaseCount: Int { get }
    /// The commit under way wrote the whole document (`full`) or a delta.
    func didWrite(full: Bool)
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
    private(set) var indexedFields: [Field<R>]
    /// The state a rollback restores whole: taken at `begin` when the table
    /// is empty, or by ``removeAll()``.
    private var saved: TableState<R>?
    /// For each record the transaction under way changed while ``saved`` was
    /// `nil`: its value before (`nil` when it was absent). A rollback puts
    /// these back, so a small transaction on a large table copies nothing
    /// (a snapshot of the state would copy every record and index on the
    /// first change).
    private var undo: [StoredValue: R?] = [:]
    private var inTransaction = false
    private(set) var isDirty = false
    /// The primary keys written or erased in the transaction under way, or
    /// `nil` when they are not tracked because the commit will write the whole
    /// document anyway (the table was empty or cleared, or too much changed).
    private var changed: Set<StoredValue>? = []
    /// The primary keys written or erased by the deltas the manifest lists
    /// for this entity, all committed.
    private var sinceBase: Set<StoredValue> = []

    /// The text fields whose spellings are tracked (property lists only).
    private let trackedTextFields: [Field<R>]

    init(records: [R], documentName: String?, foreignKey: String?, format: FileFormat = .json) {
        trackedTextFields = format == .propertyList ? R.entity.fields.filter { $0.type == .text } : []
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
        for record in records {
            insertUnchecked(record)
        }
        isDirty = false
        changed = []
    }

    /// Applies a delta read from the store (at load, before any transaction):
    /// removes the erased keys, inserts the records.
    func apply(_ delta: Delta<R>) {
        for key in delta.erased { remove(key.storedValue) }
        for record in delta.records { insertUnchecked(record) }
        for key in delta.erased { sinceBase.insert(key.storedValue) }
        for record in delta.records { sinceBase.insert(record.primaryKey.storedValue) }
        isDirty = false
        changed = []
    }

    /// Erases every record at once (and what a rollback needs stays in the
    /// saved state): the commit writes an empty document.
    func removeAll() {
        guard !state.records.isEmpty || !sinceBase.isEmpty else { return }
        if inTransaction && saved == nil { saved = state }
        state = TableState()
        for field in indexedFields { state.indexes[field.name] = [:] }
        changed = nil
        isDirty = true
    }

    var recordCount: Int { state.records.count }

    /// Adds an equality index on the field `name` (in the current state and in
    /// the one a rollback would restore), if there is none.
    func ensureIndex(on name: String) {
        guard !indexedFields.contains(where: { $0.name == name }), let field = R.entity.field(named: name) else { return }
        indexedFields.append(field)
        state.indexes[name] = Self.index(state.records, on: field)
        if var restored = saved {
            restored.indexes[name] = Self.index(restored.records, on: field)
            saved = restored
        }
    }

    private static func index(_ records: [StoredValue: R], on field: Field<R>) -> [StoredValue: Set<StoredValue>] {
        var index: [StoredValue: Set<StoredValue>] = [:]
        for (key, record) in records { index[field.value(in: record), default: []].insert(key) }
        return index
    }

    // MARK: Transactions

    func begin() {
        inTransaction = true
        undo = [:]
        saved = state.records.isEmpty ? state : nil
        isDirty = false
        // An empty table's next document is written whole: nothing to track.
        changed = state.records.isEmpty && sinceBase.isEmpty ? nil : []
    }

    func commit() {
        inTransaction = false
        saved = nil
        undo = [:]
        isDirty = false
        changed = []
    }

    func rollback() {
        inTransaction = false
        if let saved { state = saved }
        for (key, old) in undo {
            remove(key)
            if let old { insertUnchecked(old) }
        }
        saved = nil
        undo = [:]
        isDirty = false
        changed = []
    }

    /// Notes the value of the record with `key` before the transaction under
    /// way first changes it, for ``rollback()``.
    private func remember(_ key: StoredValue) {
        guard inTransaction, saved == nil, undo.index(forKey: key) == nil else { return }
        undo.updateValue(state.records[key], forKey: key)
    }

    func keysSinceBase(merging: Bool) -> Set<StoredValue>? {
        guard let changed else { return nil }
        return merging ? sinceBase.union(changed) : changed
    }

    var changedSinceBaseCount: Int { sinceBase.count }

    func didWrite(full: Bool) {
        if full {
            sinceBase = []
        } else if let changed {
            sinceBase.formUnion(changed)
        }
    }

    /// Notes that the record with `key` changed in the transaction under way;
    /// stops tracking once the changes reach half the table, where a delta
    /// would save little over the whole document.
    private func track(_ key: StoredValue) {
        guard changed != nil else { return }
        changed?.insert(key)
        if let count = changed?.count, count > 64, count * 2 > state.records.count {
            changed = nil
        }
    }

    // MARK: Reads

    func record(_ key: StoredValue) -> R? { state.records[key] }

    /// The primary keys of the records whose `field` holds `value`, if `field` is indexed.
    func keys(where field: String, equals value: StoredValue) -> Set<StoredValue>? {
        guard let index = state.indexes[field] else { return nil }
        return index[value] ?? []
    }

    // MARK: Writes

    /// Inserts or replaces `record` (relations already emptied).
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``
    ///   when the document is a property list and already holds a text that
    ///   is canonically equivalent to one of the record's but spelled with other
    ///   Unicode scalars; nothing changes then.
    func insert(_ record: R) throws {
        if !trackedTextFields.isEmpty { try checkSpellings(of: record) }
        insertUnchecked(record)
    }

    private func insertUnchecked(_ record: R) {
        let key = record.primaryKey.storedValue
        remember(key)
        if let old = state.records.updateValue(record, forKey: key) {
            unindex(old, key)
        }
        track(key)
        for field in indexedFields {
            state.indexes[field.name, default: [:]][field.value(in: record), default: []].insert(key)
        }
        for field in trackedTextFields {
            guard case .text(let text) = field.value(in: record) else { continue }
            if state.texts != nil { state.texts?[.text(text), default: 0] += 1 }
            if CanonicalText.isSuspect(text) { state.suspects[text, default: (Array(text.utf8), 0)].count += 1 }
        }
        isDirty = true
    }

    private func checkSpellings(of record: R) throws {
        let old = state.records[record.primaryKey.storedValue]
        var values: [(field: Field<R>, text: String)] = []
        for field in trackedTextFields {
            if case .text(let text) = field.value(in: record) { values.append((field, text)) }
        }
        let suspects = values.map { CanonicalText.isSuspect($0.text) }
        let recordHasSuspects = suspects.contains(true)
        for (position, value) in values.enumerated() {
            let suspect = suspects[position]
            // Two NFC texts are equivalent only when they are the same text.
            guard suspect || recordHasSuspects || !state.suspects.isEmpty else { continue }
            let scalars = Array(value.text.utf8)
            var conflict: [UInt8]?
            // Another field of this record.
            for other in values.indices where other < position && (suspect || suspects[other]) {
                let text = values[other].text
                if text == value.text && !text.utf8.elementsEqual(scalars) { conflict = Array(text.utf8) }
            }
            // A stored text that may not be in NFC, equivalent to this one.
            if conflict == nil, let stored = state.suspects[value.text],
                stored.scalars != scalars, !heldOnly(by: old, stored.scalars, count: stored.count)
            {
                conflict = stored.scalars
            }
            // The NFC spelling of this text, stored.
            if conflict == nil, suspect {
                let composed = value.text.precomposedStringWithCanonicalMapping
                if !composed.utf8.elementsEqual(scalars), let count = textCounts()[.text(composed)],
                    !heldOnly(by: old, Array(composed.utf8), count: count)
                {
                    conflict = Array(composed.utf8)
                }
            }
            guard let conflict else { continue }
            throw StorageError(
                .invalidArgument, .persist, entity: entityName,
                message: "field '\(value.field.name)' of record \(record.primaryKey) holds \(Self.scalars(value.text)), canonically equivalent to the stored \(Self.scalars(String(decoding: conflict, as: UTF8.self))) but spelled differently; a binary property list stores the two as one, so this store refuses it (use the JSON format, or normalize text)")
        }
    }

    /// How many fields hold each text, built on first use.
    private func textCounts() -> [StoredValue: Int] {
        if let texts = state.texts { return texts }
        var texts: [StoredValue: Int] = [:]
        for record in state.records.values {
            for field in trackedTextFields {
                if case .text(let text) = field.value(in: record) { texts[.text(text), default: 0] += 1 }
            }
        }
        state.texts = texts
        return texts
    }

    /// Whether the `count` fields that hold the text `scalars` are all fields of
    /// `old`, the version of the record being replaced.
    private func heldOnly(by old: R?, _ scalars: [UInt8], count: Int) -> Bool {
        guard let old else { return false }
        var held = 0
        for field in trackedTextFields {
            if case .text(let text) = field.value(in: old), text.utf8.elementsEqual(scalars) { held += 1 }
        }
        return held >= count
    }

    /// `text` as its Unicode scalars, `U+0065 U+0308`.
    private static func scalars(_ text: String) -> String {
        text.unicodeScalars.map { "U+" + String($0.value, radix: 16, uppercase: true) }.joined(separator: " ")
    }


    /// Removes the record with `key`; returns it if there was one.
    @discardableResult
    func remove(_ key: StoredValue) -> R? {
        remember(key)
        guard let old = state.records.removeValue(forKey: key) else { return nil }
        unindex(old, key)
        track(key)
        isDirty = true
        return old
    }

    private func unindex(_ record: R, _ key: StoredValue) {
        for field in trackedTextFields {
            guard case .text(let text) = field.value(in: record) else { continue }
            if let count = state.texts?[.text(text)] { state.texts?[.text(text)] = count > 1 ? count - 1 : nil }
            guard !state.suspects.isEmpty, CanonicalText.isSuspect(text), let stored = state.suspects[text],
                stored.scalars.elementsEqual(text.utf8)
            else { continue }
            if stored.count <= 1 { state.suspects[text] = nil } else { state.suspects[text]?.count -= 1 }
        }
        for field in indexedFields {
            let value = field.value(in: record)
            state.indexes[field.name]?[value]?.remove(key)
            if state.indexes[field.name]?[value]?.isEmpty == true {
                state.indexes[field.name]?[value] = nil
            }
        }
    }

    func encodeDocument(with coder: DocumentCoder) throws -> Data {
        // One `encode` call for the whole document: Foundation's encoders cost
        // far more per call than per record.
        let keys = sortedKeys()
        var records: [R] = []
        records.reserveCapacity(keys.count)
        for key in keys {
            if let record = state.records[key] { records.append(record) }
        }
        return try coder.encode(Document<R>(version: Document<R>.currentVersion, entity: entityName, records: records))
    }

    /// The primary keys in order. `state.records.keys.sorted()` would run
    /// the standard library's unspecialized sort (the dictionary's type
    /// depends on `R`), a quarter of a commit's instructions: integer keys,
    /// the common case, are sorted as `[Int64]` instead.
    private func sortedKeys() -> [StoredValue] {
        var integers: [Int64] = []
        integers.reserveCapacity(state.records.count)
        var others: [StoredValue] = []
        for key in state.records.keys {
            if case .integer(let value) = key { integers.append(value) } else { others.append(key) }
        }
        integers.sort()
        var keys: [StoredValue] = []
        keys.reserveCapacity(state.records.count)
        for value in integers { keys.append(.integer(value)) }
        guard others.isEmpty else { return (keys + others).sorted() }
        return keys
    }

    func encodeDelta(_ keys: Set<StoredValue>, with coder: DocumentCoder) throws -> Data {
        var records: [R] = []
        var erased: [R.PrimaryKey] = []
        for key in keys.sorted() {
            if let record = state.records[key] {
                records.append(record)
            } else if let primaryKey = R.PrimaryKey(storedValue: key) {
                erased.append(primaryKey)
            } else {
                throw StorageError(
                    .encoding, .persist, entity: entityName,
                    message: "the erased key \(key) is not a primary key of '\(entityName)'")
            }
        }
        return try coder.encode(
            Delta<R>(version: Delta<R>.currentVersion, entity: entityName, records: records, erased: erased))
    }
}
