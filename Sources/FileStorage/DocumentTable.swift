import DAOCore
import Foundation

/// The in-memory copy of one entity's document: the records (parents with
/// their relations emptied) in an array, a map from primary key to position,
/// and equality indexes on the fields that queries and relations look up by.
///
/// Keys are held as ``StoredValue``s, a concrete type, rather than as the
/// record's generic primary key: the adapter's code runs unspecialized for the
/// caller's record types (and inside opened relation existentials), where every
/// dictionary, set and sort over a generic key costs far more than over a
/// concrete one. For the same reason the records are not the values of a
/// dictionary (generic over the record type, whose every insert asked the
/// runtime for its metadata): they sit in an array, found by position
/// through the concrete ``positions``.
struct DocumentTableState<R: Record> {
    /// The records, relations emptied, in the order they were inserted, and
    /// the holes of those removed since (see ``live``).
    var records: [R] = []
    /// The primary key of each record of ``records``, at the same position
    /// (a hole keeps the key it had).
    var keys: [StoredValue] = []
    /// Whether each position of ``records`` holds a record (`false`: a hole).
    /// A removal leaves a hole rather than moving records: moving them in
    /// the generic array, unspecialized, cost more than the whole removal
    /// did in a dictionary. The holes are closed by the next whole document
    /// (``DocumentTable/encodeDocument(with:)``), or at a commit or a rollback once
    /// they are as many as the records.
    var live: [Bool] = []
    /// How many positions of ``records`` are holes.
    var holes = 0
    /// The position in ``records`` of each primary key stored.
    var positions: [StoredValue: Int] = [:]
    /// Whether ``keys`` (holes included) is strictly increasing: the records
    /// are in primary-key order, as a document lists them, and a key greater
    /// than the last is known to be new without a look-up. Records inserted
    /// in key order (a document read, a `persist` of new records with
    /// increasing keys), replaced in place or removed keep it; a record
    /// inserted out of order clears it until the next whole document puts
    /// the records in order again.
    var inKeyOrder = true

    /// The number of records stored.
    var count: Int { positions.count }
    /// For each indexed field, in the order of ``DocumentTable/indexedFields``:
    /// value → primary keys of the records holding it. An array rather than
    /// a dictionary by field name: every insert updates every index, and
    /// hashing the names cost a tenth of a `persist`.
    var indexes: [[StoredValue: Set<StoredValue>]] = []
    /// Property lists only: how many text fields hold each text, by its exact
    /// scalars. Foundation's binary property-list writer stores canonically
    /// equivalent strings once, so two different spellings in one document
    /// would come back as one; ``DocumentTable/insert(_:)`` refuses the second instead.
    /// Built when the first text that may not be in NFC arrives (`nil` until
    /// then): a table that never holds one does not pay for it.
    var texts: [StoredValue: Int]?
    /// Property lists only: the texts that may not be in NFC (see
    /// ``CanonicalText``), keyed by Swift's canonical equivalence, with their
    /// exact scalars and how many fields hold them.
    var suspects: [String: (scalars: [UInt8], count: Int)] = [:]
}

/// A table as the store holds it, behind the store's lock.
protocol AnyDocumentTable: AnyObject {
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
    /// Whether a record is stored under the primary key `key`.
    func holdsKey(_ key: StoredValue) -> Bool
}

final class DocumentTable<R: Record>: AnyDocumentTable {
    // The hot properties below are read and written for every record a
    // commit stores; the store's lock serializes every access to a table, so
    // they go without run-time exclusivity checks.
    let entityName: String
    var documentName: String?
    @exclusivity(unchecked) var state: DocumentTableState<R>
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
    private var saved: DocumentTableState<R>?
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
    /// Whether the record is a ``FieldwiseRecord``; `nil` until a query asks
    /// for a ``FieldValueReader`` (the cast is a conformance look-up).
    private var isFieldwise: Bool?
    /// The ``FieldValueReader`` of each field position a query read, made
    /// the first time (a query's candidates compared on a field, its sort keys).
    private var valueReaders: [Int: FieldValueReader<R>] = [:]
    /// The reader of a sort's field and the primary key (``sortKeys(of:for:)``),
    /// by the sort field's position, made the first time a query sorts by it.
    private var sortKeyReaders: [Int: FieldPairReader<R>] = [:]

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
        state = DocumentTableState()
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
        guard state.count > 0 || !sinceBase.isEmpty else { return }
        if inTransaction && !hasSaved {
            saved = state
            hasSaved = true
        }
        state = DocumentTableState()
        state.indexes = Array(repeating: [:], count: indexedFields.count)
        changed = nil
        isDirty = true
    }

    var recordCount: Int { state.count }

    /// Every record stored, in the order of the array (primary-key order
    /// when ``DocumentTableState/inKeyOrder``).
    var allRecords: [R] {
        guard state.holes > 0 else { return state.records }
        var records: [R] = []
        records.reserveCapacity(state.count)
        for position in 0..<state.records.count where state.live[position] {
            records.append(state.records[position])
        }
        return records
    }

    /// Adds an equality index on the field `name` (in the current state and in
    /// the one a rollback would restore), if there is none.
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
    }

    private static func index(_ state: DocumentTableState<R>, on field: Field<R>) -> [StoredValue: Set<StoredValue>] {
        var index: [StoredValue: Set<StoredValue>] = [:]
        for position in 0..<state.records.count where state.live[position] {
            index[indexKey(field.value(in: state.records[position])), default: []].insert(state.keys[position])
        }
        return index
    }

    // MARK: Transactions

    func begin() {
        inTransaction = true
        undo = []
        remembered = []
        hasSaved = state.count == 0
        saved = hasSaved ? state : nil
        isDirty = false
        // An empty table's next document is written whole: nothing to track.
        changed = state.count == 0 && sinceBase.isEmpty ? nil : []
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
        // Into an empty table: the arrays and the map are allocated once,
        // not grown (and the map rehashed) at every doubling.
        if state.records.isEmpty && count > 0 {
            state.records.reserveCapacity(count)
            state.keys.reserveCapacity(count)
            state.live.reserveCapacity(count)
            state.positions.reserveCapacity(count)
        }
        guard inTransaction, !hasSaved, undo.isEmpty, count * 2 >= state.count else { return }
        saved = state
        hasSaved = true
        // Writes past half the table: the commit will write the whole
        // document (``track(_:)`` stops at the same bound), so the keys are
        // not collected on the way there (a set insert per record, 4.4M of
        // a json `update` of 10,000 messages). Only a call that writes the
        // same keys many times over gets a whole document where a delta
        // would have done: the same records either way.
        if inTransaction && count > 64 && count * 2 > state.count { changed = nil }
    }

    func commit() {
        inTransaction = false
        saved = nil
        hasSaved = false
        closeHolesIfAsManyAsRecords()
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
        // Each record put back leaves a hole where it stood: closed here
        // too, as at a commit, or calls that keep failing (with none
        // committed in between) would grow the array without bound.
        closeHolesIfAsManyAsRecords()
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
        if let count = changed?.count, count > 64, count * 2 > state.count {
            changed = nil
        }
    }

    // MARK: Reads

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
        try forEachPosition(of: keys, descending: descending) { position in
            if let test, try !test.passes(state.records[position]) { return }
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
        var records: [R] = []
        records.reserveCapacity(keys.count)
        if let matcher {
            try forEachPosition(of: keys, descending: descending) { position in
                if try matcher(state.records[position], values) { records.append(state.records[position]) }
            }
        } else {
            forEachPosition(of: keys, descending: descending) { records.append(state.records[$0]) }
        }
        return records
    }

    /// Calls `body` with the position of each record stored under `keys`,
    /// in key order (descending if asked), keys not stored skipped: integer
    /// keys sorted as integers, any other set of keys in ``StoredValue``'s
    /// order. No array of positions is made.
    @inline(__always)
    private func forEachPosition(
        of keys: Set<StoredValue>, descending: Bool, _ body: (Int) throws -> Void
    ) rethrows {
        var pairs: [(key: Int64, position: Int)] = []
        pairs.reserveCapacity(keys.count)
        for key in keys {
            guard case .integer(let value) = key else {
                let sorted = keys.sorted()
                for key in descending ? sorted.reversed() : sorted {
                    if let position = state.positions[key] { try body(position) }
                }
                return
            }
            if let position = state.positions[key] { pairs.append((value, position)) }
        }
        // The keys are distinct: no ties to break.
        if descending { pairs.sort { $0.key > $1.key } } else { pairs.sort { $0.key < $1.key } }
        for index in 0..<pairs.count { try body(pairs[index].position) }
    }

    /// The reader of the field named `name` by its position, when the record
    /// is a ``FieldwiseRecord``; made once per field.
    func valueReader(of name: String) -> FieldValueReader<R>? {
        guard isFieldwise != false, let position = R.entity.position(ofField: name) else { return nil }
        if let reader = valueReaders[position] { return reader }
        guard let reader = makeFieldValueReader(for: R.self, position: position) else {
            isFieldwise = false
            return nil
        }
        isFieldwise = true
        valueReaders[position] = reader
        return reader
    }

    /// The sort keys of `records` for `sort` (``SortPlan/sorted(_:keys:)``:
    /// each record's value of the sort's field, then its primary key's),
    /// read by position in one pass over the records specialized for the
    /// record type (``FieldPairReader``), without key paths; `nil` unless
    /// the sort compares the stored values of one field and the record is a
    /// ``FieldwiseRecord``.
    /// - Throws: what the record's `write(fields:)` throws.
    func sortKeys(of records: [R], for sort: SortPlan<R>) throws -> [StoredValue]? {
        guard isFieldwise != false, let fields = sort.fields, fields.count == 1,
            let position = R.entity.position(ofField: fields[0].field.name), position > 0
        else { return nil }
        let read: FieldPairReader<R>
        if let kept = sortKeyReaders[position] {
            read = kept
        } else {
            guard let made = makeFieldPairReader(for: R.self, positions: [position, 0]) else {
                isFieldwise = false
                return nil
            }
            sortKeyReaders[position] = made
            read = made
        }
        let (values, keys) = try read(records)
        var sortKeys: [StoredValue] = []
        sortKeys.reserveCapacity(values.count * 2)
        for index in 0..<values.count {
            sortKeys.append(values[index])
            sortKeys.append(keys[index])
        }
        return sortKeys
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
        if !checksSpellings && appendsInOrder(keys) {
            appendNew(records, keys: keys, knownValue: parentKey, at: foreignKeyPosition, pending: &pending)
            return
        }
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

    /// Whether `keys` are strictly increasing and all after the table's last
    /// key while its records are in key order: then none of them is stored.
    private func appendsInOrder(_ keys: [StoredValue]) -> Bool {
        guard !keys.isEmpty, state.inKeyOrder else { return false }
        if let last = state.keys.last, !(last < keys[0]) { return false }
        for position in 1..<keys.count where !(keys[position - 1] < keys[position]) {
            return false
        }
        return true
    }

    /// Inserts `records`, none of them stored (``appendsInOrder(_:)``), as
    /// ``insertUnchecked(_:key:mayHoldSuspects:knownValue:at:knownBefore:defersKnown:)``
    /// would one by one with `defersKnown` (their keys go to `pending` for
    /// the index at `knownPosition`), for a table that tracks no texts. The
    /// records are appended in one call: appending one at a time, in code
    /// unspecialized for the record type, asked the runtime for the array's
    /// metadata per record (3.3M of a json `persist` of 10,000 messages).
    private func appendNew(
        _ records: [R], keys: [StoredValue], knownValue: StoredValue, at knownPosition: Int, pending: inout [StoredValue]
    ) {
        let remembers = inTransaction && !hasSaved
        var position = state.keys.count
        for index in 0..<keys.count {
            let key = keys[index]
            state.positions[key] = position
            position += 1
            if remembers { remember(key, nil) }
            track(key)
            for indexPosition in 0..<indexCount {
                if indexPosition == knownPosition {
                    pending.append(key)
                } else {
                    state.indexes[indexPosition][Self.indexKey(indexedFields[indexPosition].value(in: records[index])), default: []]
                        .insert(key)
                }
            }
        }
        state.keys.append(contentsOf: keys)
        state.live.append(contentsOf: repeatElement(true, count: keys.count))
        state.records.append(contentsOf: records)
        isDirty = true
    }

    /// Adds `keys` to the entry of `value` in the index at `position`.
    private func addToIndex(_ position: Int, _ value: StoredValue, _ keys: [StoredValue]) {
        Self.insert(keys, into: &state.indexes[position][Self.indexKey(value), default: []])
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
        // Whether the record replaced is needed: for an index other than
        // the one whose value before is known, or for its texts, or for a
        // rollback. (Binding it copies the record, through the runtime's
        // value witnesses.)
        let readsOld = indexCount > (knownBefore && knownPosition >= 0 ? 1 : 0)
            || (tracksTexts && (state.texts != nil || !state.suspects.isEmpty))
        let remembers = inTransaction && !hasSaved
        var replaced = false
        let old = put(record, key: key, keepingOld: readsOld || remembers, replaced: &replaced)
        if remembers { remember(key, old) }
        track(key)
        var addsKnown = false
        if replaced && !readsOld {
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
                    state.indexes[position][Self.indexKey(value), default: []].insert(key)
                }
            }
            if tracksTexts { forgetTexts(of: old) }
        } else {
            for position in 0..<indexCount {
                if position == knownPosition {
                    if defersKnown {
                        addsKnown = true
                    } else {
                        state.indexes[position][Self.indexKey(knownValue), default: []].insert(key)
                    }
                } else {
                    state.indexes[position][Self.indexKey(indexedFields[position].value(in: record)), default: []].insert(key)
                }
            }
        }
        if tracksTexts { noteTexts(of: record, mayHoldSuspects: mayHoldSuspects) }
        isDirty = true
        return addsKnown
    }

    /// Stores `record` under `key`, in place of the record stored there or
    /// after the others; sets `replaced` and, with `keepingOld`, returns the
    /// record replaced.
    @inline(__always)
    private func put(_ record: R, key: StoredValue, keepingOld: Bool, replaced: inout Bool) -> R? {
        let count = state.keys.count
        // A key after the last of keys in order is new: no look-up.
        if count > 0 && !(state.inKeyOrder && state.keys[count - 1] < key) {
            if let position = state.positions[key] {
                replaced = true
                let old = keepingOld ? state.records[position] : nil
                state.records[position] = record
                return old
            }
            state.inKeyOrder = false
        }
        state.positions[key] = count
        state.keys.append(key)
        state.live.append(true)
        state.records.append(record)
        return nil
    }

    /// Counts the texts of `record` in ``DocumentTableState/texts`` and ``DocumentTableState/suspects``.
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
        let old = self.record(key)
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
        for record in allRecords {
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
        guard let position = state.positions.removeValue(forKey: key) else { return nil }
        let old = state.records[position]
        state.live[position] = false
        state.holes += 1
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
        guard let index = state.indexes[position].index(forKey: Self.indexKey(value)) else { return }
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

    /// Closes the holes once they are as many as the records (and more than
    /// 64), at the end of a commit or a rollback, so that they never take
    /// more than half the array: a table written by deltas only writes no
    /// whole document that would close them.
    private func closeHolesIfAsManyAsRecords() {
        if state.holes > 64 && state.holes >= state.count { compact() }
    }

    func encodeDocument(with coder: DocumentCoder) throws -> Data {
        // One `encode` call for the whole document: Foundation's encoders cost
        // far more per call than per record.
        compact()
        return try coder.encode(Document<R>(version: Document<R>.currentVersion, entity: entityName, records: state.records))
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

    func encodeDelta(_ keys: Set<StoredValue>, with coder: DocumentCoder) throws -> Data {
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
        return try coder.encode(
            Delta<R>(version: Delta<R>.currentVersion, entity: entityName, records: records, erased: erased))
    }
}
