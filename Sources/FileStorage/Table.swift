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
    /// For each indexed field, in the order of ``Table/indexedFields``:
    /// value → primary keys of the records holding it. An array rather than
    /// a dictionary by field name: every insert updates every index, and
    /// hashing the names cost a tenth of a `persist`.
    var indexes: [[StoredValue: Set<StoredValue>]] = []
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
    // The hot properties below are read and written for every record a
    // commit stores; the store's lock serializes every access to a table, so
    // they go without run-time exclusivity checks.
    let entityName: String
    var documentName: String?
    @exclusivity(unchecked) var state: TableState<R>
    /// The fields with an equality index: the foreign key (when the entity is
    /// owned) and the leading field of each declared index.
    private(set) var indexedFields: [Field<R>]
    /// How many fields are indexed: `indexedFields.count`, read for every
    /// record written without touching the generic array.
    private var indexCount = 0
    /// The names of ``indexedFields``, in the same order.
    private var indexedNames: [String]
    /// Whether the entity owns relations (a parent's upsert replaces its
    /// children; a record without relations is stored as it is).
    let hasRelations: Bool
    /// The state a rollback restores whole: taken at `begin` when the table
    /// is empty, or by ``removeAll()``.
    private var saved: TableState<R>?
    /// For each record the transaction under way changed while ``saved`` was
    /// `nil`: its value before (`nil` when it was absent). A rollback puts
    /// these back, so a small transaction on a large table copies nothing
    /// (a snapshot of the state would copy every record and index on the
    /// first change).
    @exclusivity(unchecked) private var undo: [(key: StoredValue, old: R?)] = []
    /// The keys in ``undo``: only the first change of a record in a
    /// transaction is remembered.
    @exclusivity(unchecked) private var remembered: Set<StoredValue> = []
    /// Whether ``saved`` holds a state (tested on every change; comparing the
    /// generic optional with `nil` copied the whole state's references).
    @exclusivity(unchecked) private var hasSaved = false
    @exclusivity(unchecked) private var inTransaction = false
    @exclusivity(unchecked) private(set) var isDirty = false
    /// The primary keys written or erased in the transaction under way, or
    /// `nil` when they are not tracked because the commit will write the whole
    /// document anyway (the table was empty or cleared, or too much changed).
    @exclusivity(unchecked) private var changed: Set<StoredValue>? = []
    /// The primary keys written or erased by the deltas the manifest lists
    /// for this entity, all committed.
    private var sinceBase: Set<StoredValue> = []

    /// The text fields whose spellings are tracked (property lists only).
    private let trackedTextFields: [Field<R>]
    /// Whether ``trackedTextFields`` is not empty, tested for every record
    /// written (`isEmpty` on the generic array is a witness call).
    private let tracksTexts: Bool
    /// Reads the tracked texts of many records by position, when the record
    /// is a ``FieldwiseRecord`` with one or two text fields.
    private let trackedTextsReader: FieldPairReader<R>?
    /// The field that holds the owner's key, when the entity names its owner.
    let foreignKeyName: String?
    /// Reads a child's primary key and foreign key in one pass, when the
    /// record is a ``FieldwiseRecord`` (see ``KeyPairReader``).
    let keyPairReader: KeyPairReader<R>?
    /// The same for many records at once (see ``KeyPairsReader``).
    let keyPairsReader: KeyPairsReader<R>?

    init(records: [R], documentName: String?, foreignKey: String?, format: FileFormat = .json) {
        trackedTextFields = format == .propertyList ? R.entity.fields.filter { $0.type == .text } : []
        tracksTexts = !trackedTextFields.isEmpty
        trackedTextsReader = tracksTexts
            ? makeFieldPairReader(for: R.self, positions: trackedTextFields.compactMap { R.entity.position(ofField: $0.name) })
            : nil
        foreignKeyName = foreignKey
        keyPairReader = foreignKey.flatMap { makeKeyPairReader(for: R.self, foreignKey: $0) }
        keyPairsReader = foreignKey.flatMap { makeKeyPairsReader(for: R.self, foreignKey: $0) }
        entityName = R.entity.name
        self.documentName = documentName
        var names: [String] = []
        if let foreignKey { names.append(foreignKey) }
        for index in R.entity.indexes where !names.contains(index.fields[0]) {
            names.append(index.fields[0])
        }
        indexedFields = names.compactMap { R.entity.field(named: $0) }
        indexedNames = indexedFields.map(\.name)
        indexCount = indexedNames.count
        hasRelations = !R.entity.relations.isEmpty
        state = TableState()
        state.indexes = Array(repeating: [:], count: indexedFields.count)
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
        if inTransaction && !hasSaved {
            saved = state
            hasSaved = true
        }
        state = TableState()
        state.indexes = Array(repeating: [:], count: indexedFields.count)
        changed = nil
        isDirty = true
    }

    var recordCount: Int { state.records.count }

    /// Adds an equality index on the field `name` (in the current state and in
    /// the one a rollback would restore), if there is none.
    func ensureIndex(on name: String) {
        guard !indexedNames.contains(name), let field = R.entity.field(named: name) else { return }
        indexedFields.append(field)
        indexCount += 1
        indexedNames.append(name)
        state.indexes.append(Self.index(state.records, on: field))
        if var restored = saved {
            restored.indexes.append(Self.index(restored.records, on: field))
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
        undo = []
        remembered = []
        hasSaved = state.records.isEmpty
        saved = hasSaved ? state : nil
        isDirty = false
        // An empty table's next document is written whole: nothing to track.
        changed = state.records.isEmpty && sinceBase.isEmpty ? nil : []
    }

    /// Says that the transaction under way is about to write `count` records:
    /// when that is at least half the table and nothing has changed yet, the
    /// whole state is saved for a rollback instead of each record's value
    /// before. The saved state shares its storage with the table's until the
    /// first change, which then copies the records and indexes once: far
    /// less than a set insert and an array append per record for a
    /// transaction that rewrites most of the table (an update of everything),
    /// and never paid by a small one.
    func expectWrites(_ count: Int) {
        // Into an empty table: the dictionary is allocated once, not
        // rehashed at every doubling.
        if state.records.isEmpty && count > 0 { state.records.reserveCapacity(count) }
        guard inTransaction, !hasSaved, undo.isEmpty, count * 2 >= state.records.count else { return }
        saved = state
        hasSaved = true
    }

    func commit() {
        inTransaction = false
        saved = nil
        hasSaved = false
        undo = []
        remembered = []
        isDirty = false
        changed = []
    }

    func rollback() {
        inTransaction = false
        if let saved { state = saved }
        // Each key once, with its value before the transaction: any order will do.
        for (key, old) in undo {
            remove(key)
            if let old { insertUnchecked(old, key: key) }
        }
        saved = nil
        hasSaved = false
        undo = []
        remembered = []
        isDirty = false
        changed = []
    }

    /// Notes `old`, the value of the record with `key` before the transaction
    /// under way first changes it, for ``rollback()``.
    private func remember(_ key: StoredValue, _ old: R?) {
        guard inTransaction, !hasSaved, remembered.insert(key).inserted else { return }
        undo.append((key, old))
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
        guard let position = indexedNames.firstIndex(of: field) else { return nil }
        return state.indexes[position][value] ?? []
    }

    // MARK: Writes

    /// Inserts or replaces `record` (relations already emptied).
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument``
    ///   when the document is a property list and already holds a text that
    ///   is canonically equivalent to one of the record's but spelled with other
    ///   Unicode scalars; nothing changes then.
    func insert(_ record: R, key: StoredValue) throws {
        var mayHoldSuspects = true
        if tracksTexts { mayHoldSuspects = try checkSpellings(of: record, key: key) }
        insertUnchecked(record, key: key, mayHoldSuspects: mayHoldSuspects)
    }

    /// Inserts or replaces the children `records` of one parent, stored
    /// under `keys`, each holding `parentKey` in the field `foreignKey`
    /// (checked by the caller), as ``insert(_:key:)`` would one by one.
    ///
    /// One call for all the children of a parent: this code runs
    /// unspecialized, and each call of a generic method asks the runtime for
    /// the metadata of the types it uses (the records' dictionary, an
    /// optional record, a field); in one loop they are looked up once.
    ///
    /// `heldByParent` says that every key of `keys` is already stored, held
    /// by the same parent: the foreign key of the record each replaces is
    /// `parentKey` too, and is not read again.
    ///
    /// - Throws: what ``insert(_:key:)`` throws; the records before the one
    ///   refused stay inserted (the transaction rolls back).
    func insert(
        children records: [R], keys: [StoredValue], foreignKey: String, parentKey: StoredValue, heldByParent: Bool
    ) throws {
        let foreignKeyPosition = indexedNames.firstIndex(of: foreignKey) ?? -1
        let checksSpellings = tracksTexts
        // The keys to add under `parentKey` in the foreign key's index, added
        // in one access at the end (also when a record is refused: the
        // records before it are inserted, and a rollback removes them through
        // the index): one dictionary lookup and no rehashing as the set grows,
        // instead of a lookup and a set insert per child.
        var pending: [StoredValue] = []
        defer {
            if !pending.isEmpty { addToIndex(foreignKeyPosition, parentKey, pending) }
        }
        // While the table holds no text that may not be in NFC, whether each
        // record holds one, tested in one loop: ``checkSpellings(of:key:)``
        // tests the same first, and a record that holds none is accepted
        // then. Per call, the runtime was asked for the metadata of a field
        // and an optional (650 instructions a record).
        let holdsSuspects = checksSpellings && state.suspects.isEmpty ? holdSuspects(records) : []
        for position in 0..<records.count {
            let record = records[position]
            var mayHoldSuspects = true
            if checksSpellings {
                if position < holdsSuspects.count && !holdsSuspects[position] && state.suspects.isEmpty {
                    mayHoldSuspects = false
                } else {
                    mayHoldSuspects = try checkSpellings(of: record, key: keys[position])
                }
            }
            let addsKey = insertUnchecked(
                record, key: keys[position], mayHoldSuspects: mayHoldSuspects, knownValue: parentKey,
                at: foreignKeyPosition, knownBefore: heldByParent, defersKnown: foreignKeyPosition >= 0)
            if addsKey { pending.append(keys[position]) }
        }
    }

    /// Adds `keys` to the entry of `value` in the index at `position`.
    private func addToIndex(_ position: Int, _ value: StoredValue, _ keys: [StoredValue]) {
        Self.insert(keys, into: &state.indexes[position][value, default: []])
    }

    private static func insert(_ keys: [StoredValue], into set: inout Set<StoredValue>) {
        set.reserveCapacity(set.count + keys.count)
        for key in keys { set.insert(key) }
    }

    /// Inserts or replaces `record`, stored under `key` (its primary key's
    /// stored value, computed when `nil`). `mayHoldSuspects: false` says that
    /// none of its texts may change under NFC (``CanonicalText/isSuspect(_:)``),
    /// known already from ``checkSpellings(of:key:)``.
    ///
    /// `knownValue` is the value of the indexed field at `knownPosition` (in
    /// ``indexedFields``) in `record`, known already (a child's foreign key);
    /// -1 when none is. `knownBefore` says that the record replaced, if any,
    /// holds `knownValue` there too. With `defersKnown`, the key is not
    /// added to the entry of `knownValue` in the index at `knownPosition`;
    /// the result says whether the caller must add it.
    @inline(__always)
    @discardableResult
    private func insertUnchecked(
        _ record: R, key: StoredValue? = nil, mayHoldSuspects: Bool = true, knownValue: StoredValue = .null,
        at knownPosition: Int = -1, knownBefore: Bool = false, defersKnown: Bool = false
    ) -> Bool {
        let key = key ?? record.primaryKey.storedValue
        let old = state.records.updateValue(record, forKey: key)
        if inTransaction && !hasSaved { remember(key, old) }
        track(key)
        var addsKnown = false
        // Whether the record replaced is needed: for an index other than
        // the one whose value before is known, or for its texts. (Binding
        // it copies the record, through the runtime's value witnesses.)
        let readsOld = indexCount > (knownBefore && knownPosition >= 0 ? 1 : 0)
            || (tracksTexts && (state.texts != nil || !state.suspects.isEmpty))
        if old != nil && !readsOld {
            // Replaced, and nothing to update for the record it replaces.
        } else if let old {
            // Only the indexes whose value changed are touched. (Loops over
            // `0..<count` here: this code runs unspecialized, where iterating
            // a generic array asks the runtime for its iterator's metadata.)
            for position in 0..<indexCount where !(knownBefore && position == knownPosition) {
                let field = indexedFields[position]
                let value = position == knownPosition ? knownValue : field.value(in: record)
                let before = field.value(in: old)
                guard value != before else { continue }
                removeFromIndex(position, before, key)
                if defersKnown && position == knownPosition {
                    addsKnown = true
                } else {
                    state.indexes[position][value, default: []].insert(key)
                }
            }
            if tracksTexts { forgetTexts(of: old) }
        } else {
            for position in 0..<indexCount {
                if position == knownPosition {
                    if defersKnown {
                        addsKnown = true
                    } else {
                        state.indexes[position][knownValue, default: []].insert(key)
                    }
                } else {
                    state.indexes[position][indexedFields[position].value(in: record), default: []].insert(key)
                }
            }
        }
        if tracksTexts { noteTexts(of: record, mayHoldSuspects: mayHoldSuspects) }
        isDirty = true
        return addsKnown
    }

    /// Counts the texts of `record` in ``TableState/texts`` and ``TableState/suspects``.
    private func noteTexts(of record: R, mayHoldSuspects: Bool) {
        guard state.texts != nil || mayHoldSuspects else { return }
        for position in 0..<trackedTextFields.count {
            guard case .text(let text) = trackedTextFields[position].value(in: record) else { continue }
            if state.texts != nil { state.texts?[.text(text), default: 0] += 1 }
            if mayHoldSuspects && CanonicalText.isSuspect(text) {
                state.suspects[text, default: (Array(text.utf8), 0)].count += 1
            }
        }
    }

    /// Whether each of `records` holds a text that may change under NFC
    /// (``CanonicalText/isSuspect(_:)``).
    private func holdSuspects(_ records: [R]) -> [Bool] {
        var holds: [Bool] = []
        holds.reserveCapacity(records.count)
        if let read = trackedTextsReader {
            // By position, without key paths. (A record whose
            // `write(fields:)` throws is read through the key paths below.)
            var texts: (firsts: [StoredValue], seconds: [StoredValue])?
            do {
                texts = try read(records)
            } catch {
                texts = nil
            }
            if let texts, texts.firsts.count == records.count {
                for index in 0..<records.count {
                    holds.append(
                        Self.isSuspect(texts.firsts[index])
                            || (index < texts.seconds.count && Self.isSuspect(texts.seconds[index])))
                }
                return holds
            }
        }
        let fieldCount = trackedTextFields.count
        for index in 0..<records.count {
            var any = false
            for position in 0..<fieldCount {
                if case .text(let text) = trackedTextFields[position].value(in: records[index]),
                    CanonicalText.isSuspect(text)
                {
                    any = true
                    break
                }
            }
            holds.append(any)
        }
        return holds
    }

    private static func isSuspect(_ value: StoredValue) -> Bool {
        if case .text(let text) = value { return CanonicalText.isSuspect(text) }
        return false
    }

    /// Checks that no text of `record` is canonically equivalent to a stored
    /// text (or another of its own) spelled otherwise; returns whether
    /// `record` may hold a text that is not in NFC.
    private func checkSpellings(of record: R, key: StoredValue) throws -> Bool {
        if state.suspects.isEmpty {
            // Nothing stored may be spelled otherwise than in NFC: only a
            // record with a suspect text of its own can conflict (this is the
            // test below, done once per text instead of twice).
            var any = false
            for position in 0..<trackedTextFields.count {
                if case .text(let text) = trackedTextFields[position].value(in: record), CanonicalText.isSuspect(text) {
                    any = true
                    break
                }
            }
            guard any else { return false }
        }
        let old = state.records[key]
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
        return recordHasSuspects
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
        remember(key, old)
        for position in 0..<indexedFields.count {
            removeFromIndex(position, indexedFields[position].value(in: old), key)
        }
        if tracksTexts { forgetTexts(of: old) }
        track(key)
        isDirty = true
        return old
    }

    /// Removes `key` from the entry of `value` in the index at `position`.
    private func removeFromIndex(_ position: Int, _ value: StoredValue, _ key: StoredValue) {
        guard let index = state.indexes[position].index(forKey: value) else { return }
        state.indexes[position].values[index].remove(key)
        if state.indexes[position].values[index].isEmpty { state.indexes[position].remove(at: index) }
    }

    /// Uncounts the texts of `record` (being replaced or removed).
    private func forgetTexts(of record: R) {
        guard state.texts != nil || !state.suspects.isEmpty else { return }
        for position in 0..<trackedTextFields.count {
            guard case .text(let text) = trackedTextFields[position].value(in: record) else { continue }
            if let count = state.texts?[.text(text)] { state.texts?[.text(text)] = count > 1 ? count - 1 : nil }
            guard !state.suspects.isEmpty, CanonicalText.isSuspect(text), let stored = state.suspects[text],
                stored.scalars.elementsEqual(text.utf8)
            else { continue }
            if stored.count <= 1 { state.suspects[text] = nil } else { state.suspects[text]?.count -= 1 }
        }
    }

    func encodeDocument(with coder: DocumentCoder) throws -> Data {
        // One `encode` call for the whole document: Foundation's encoders cost
        // far more per call than per record.
        try coder.encode(Document<R>(version: Document<R>.currentVersion, entity: entityName, records: recordsInKeyOrder()))
    }

    /// The records in primary-key order. With integer keys (the common
    /// case) the values are taken in the dictionary's order and put in the
    /// order of their keys by position: looking each key up again in the
    /// generic dictionary cost 640 instructions per record.
    private func recordsInKeyOrder() -> [R] {
        let count = state.records.count
        var order: [(key: Int64, position: Int)] = []
        order.reserveCapacity(count)
        for key in state.records.keys {
            guard case .integer(let value) = key else { return recordsBySortedKeys() }
            order.append((value, order.count))
        }
        // The keys are distinct: no ties to break.
        order.sort { $0.key < $1.key }
        // `keys` and `values` of one dictionary come in the same order.
        let values = Array(state.records.values)
        var records: [R] = []
        records.reserveCapacity(count)
        for index in 0..<order.count {
            records.append(values[order[index].position])
        }
        return records
    }

    /// The records in primary-key order, looked up key by key.
    private func recordsBySortedKeys() -> [R] {
        let keys = sortedKeys()
        var records: [R] = []
        records.reserveCapacity(keys.count)
        for key in keys {
            if let record = state.records[key] { records.append(record) }
        }
        return records
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
