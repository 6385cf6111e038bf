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
    /// (``DocumentTable/documentEncoding(with:)``), or at a commit or a rollback once
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

/// What a transaction changed in one table, kept while its commit writes
/// its files (``DocumentTable/setAside()``).
struct SetAsideChanges<R: Record> {
    enum Redo {
        /// The whole state after the transaction: the table kept its whole
        /// state before it (``DocumentTable/saved``, for a rollback), or the
        /// transaction changed as many records as the table keeps.
        case state(DocumentTableState<R>)
        /// Each record the transaction changed, by primary key: its value
        /// after (`nil`: erased).
        case records([(key: StoredValue, new: R?)])
    }
    var redo: Redo
    /// The keys the transaction wrote or erased, for the delta bookkeeping
    /// (``DocumentTable/changed``).
    var changed: Set<StoredValue>?
    /// Whether the state after the transaction listed its records in key
    /// order (a whole document put them so).
    var inKeyOrder: Bool
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
    /// The table's records as a document, to encode later.
    func documentEncoding(with coder: DocumentCoder) -> DocumentEncoding
    /// The current state of the records with `keys` as a delta, to encode
    /// later: those present as records, the others as erased keys.
    /// - Throws: ``StorageError/Kind/encoding`` for an erased key that is not
    ///   a primary key of the entity.
    func deltaEncoding(_ keys: Set<StoredValue>, with coder: DocumentCoder) throws -> DocumentEncoding
    /// The number of primary keys the committed deltas wrote or erased.
    var changedSinceBaseCount: Int { get }
    /// Remembers the state at the start of a transaction.
    func begin()
    /// Forgets the remembered state: the transaction committed.
    func commit()
    /// Restores the remembered state: the transaction failed.
    func rollback()
    /// Puts the state before the transaction back, keeping the transaction's
    /// changes aside: its commit writes its files while readers see the
    /// committed state.
    func setAside()
    /// Applies the changes ``setAside()`` kept, now committed: the commit
    /// wrote the whole document (`wroteWhole`) or a delta.
    func restoreSetAside(wroteWhole: Bool)
    /// Forgets the changes ``setAside()`` kept: the commit failed, and the
    /// table holds the committed state already.
    func dropSetAside()
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
    var indexedFields: [Field<R>]
    /// How many fields are indexed: `indexedFields.count`, read for every
    /// record written without touching the generic array.
    var indexCount = 0
    /// The names of ``indexedFields``, in the same order.
    var indexedNames: [String]
    /// Whether the entity owns relations (a parent's upsert replaces its
    /// children; a record without relations is stored as it is).
    let hasRelations: Bool
    /// The state a rollback restores whole: taken at `begin` when the table
    /// is empty, or by ``removeAll()``.
    var saved: DocumentTableState<R>?
    /// For each record the transaction under way changed while ``saved`` was
    /// `nil`: its value before (`nil` when it was absent). A rollback puts
    /// these back, so a small transaction on a large table copies nothing
    /// (a snapshot of the state would copy every record and index on the
    /// first change).
    @exclusivity(unchecked) var undo: [(key: StoredValue, old: R?)] = []
    /// The keys in ``undo``: only the first change of a record in a
    /// transaction is remembered.
    @exclusivity(unchecked) var remembered: Set<StoredValue> = []
    /// Whether ``saved`` holds a state (tested on every change; comparing the
    /// generic optional with `nil` copied the whole state's references).
    @exclusivity(unchecked) var hasSaved = false
    @exclusivity(unchecked) var inTransaction = false
    @exclusivity(unchecked) var isDirty = false
    /// The primary keys written or erased in the transaction under way, or
    /// `nil` when they are not tracked because the commit will write the whole
    /// document anyway (the table was empty or cleared, or too much changed).
    @exclusivity(unchecked) var changed: Set<StoredValue>? = []
    /// The primary keys written or erased by the deltas the manifest lists
    /// for this entity, all committed.
    var sinceBase: Set<StoredValue> = []
    /// The changes of a transaction whose commit is writing its files,
    /// set aside so that readers see the committed state meanwhile
    /// (``setAside()``, ``restoreSetAside(wroteWhole:)``).
    var setAsideChanges: SetAsideChanges<R>?

    /// The text fields whose spellings are tracked (property lists only).
    let trackedTextFields: [Field<R>]
    /// Whether ``trackedTextFields`` is not empty, tested for every record
    /// written (`isEmpty` on the generic array is a witness call).
    let tracksTexts: Bool
    /// Reads the tracked texts of many records by position, when the record
    /// is a ``FieldwiseRecord`` with one or two text fields.
    let trackedTextsReader: FieldPairReader<R>?
    /// The field that holds the owner's key, when the entity names its owner.
    let foreignKeyName: String?
    /// Reads a child's primary key and foreign key in one pass, when the
    /// record is a ``FieldwiseRecord`` (see ``KeyPairReader``).
    let keyPairReader: KeyPairReader<R>?
    /// The same for many records at once (see ``KeyPairsReader``).
    let keyPairsReader: KeyPairsReader<R>?
    /// The ``FieldValueReader`` of each field by its position (a query's
    /// candidates compared on a field), empty when the record is not a
    /// ``FieldwiseRecord``. Made with the table, not by the first query that
    /// needs one: reads share the table, holding the store's lock shared,
    /// and change nothing in it.
    let valueReaders: [Int: FieldValueReader<R>]
    /// The reader of each field after the primary key and of the primary
    /// key (``sortKeys(of:for:)``), by the field's position, empty when the
    /// record is not a ``FieldwiseRecord``; made with the table too.
    let sortKeyReaders: [Int: FieldPairReader<R>]

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
        var valueReaders: [Int: FieldValueReader<R>] = [:]
        var sortKeyReaders: [Int: FieldPairReader<R>] = [:]
        for position in R.entity.fields.indices {
            guard let reader = makeFieldValueReader(for: R.self, position: position) else { break }
            valueReaders[position] = reader
            if position > 0, let pair = makeFieldPairReader(for: R.self, positions: [position, 0]) {
                sortKeyReaders[position] = pair
            }
        }
        self.valueReaders = valueReaders
        self.sortKeyReaders = sortKeyReaders
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
}
