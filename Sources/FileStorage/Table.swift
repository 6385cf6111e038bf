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
    /// The encoded form of records that have not changed since they were last
    /// written (JSON only), so a commit re-encodes only what changed.
    var encoded: [StoredValue: Data] = [:]
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
    private(set) var indexedFields: [Field<R>]
    private var saved: TableState<R>?
    private(set) var isDirty = false

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
    }

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
        if let old = state.records.updateValue(record, forKey: key) {
            unindex(old, key)
            state.encoded[key] = nil
        }
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
        guard let old = state.records.removeValue(forKey: key) else { return nil }
        unindex(old, key)
        state.encoded[key] = nil
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
        let keys = state.records.keys.sorted()  // a concrete sort, see TableState
        guard coder.format == .json else {
            let records = keys.compactMap { state.records[$0] }
            return try coder.encode(Document<R>(version: Document<R>.currentVersion, entity: entityName, records: records))
        }
        // A JSON array is its elements joined by commas: splice the cached
        // encoding of unchanged records with fresh encodings of the rest. The
        // result decodes as a `Document<R>` like any other.
        var fragments: [Data] = []
        fragments.reserveCapacity(keys.count)
        var size = 0
        for key in keys {
            guard let record = state.records[key] else { continue }
            let fragment: Data
            if let cached = state.encoded[key] {
                fragment = cached
            } else {
                fragment = try coder.encode(record)
                state.encoded[key] = fragment
            }
            fragments.append(fragment)
            size += fragment.count + 1
        }
        var document = Data()
        document.reserveCapacity(size + 128)
        document.append(contentsOf: #"{"entity":"#.utf8)
        document.append(try coder.encode(entityName))
        document.append(contentsOf: #","records":["#.utf8)
        for (index, fragment) in fragments.enumerated() {
            if index > 0 { document.append(UInt8(ascii: ",")) }
            document.append(fragment)
        }
        document.append(contentsOf: #"],"version":\#(Document<R>.currentVersion)}"#.utf8)
        return document
    }
}
