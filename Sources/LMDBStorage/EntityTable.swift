import CLMDB
import DAOCore
import Foundation
import Synchronization

/// One declared index: its own `MDB_DUPSORT` database whose keys are the
/// encoded index field values and whose duplicate values are the storage keys
/// of the records that hold them, unless the parent's range serves it.
struct IndexTable: Sendable {
    var index: Index
    /// The positions of the indexed fields among the entity's fields.
    var fields: [Int]
    /// The index's database; `nil` when the index leads with the foreign key
    /// to the parent, so the parent's range of children serves it
    /// (``EntityTable/isServedByParent(_:link:)``).
    var dbi: MDB_dbi?
}

/// The encoders and decoders of one storage call: one pair per entity of the
/// call's record tree, reused for every record of the call, with the parent
/// link and the index databases in force for the call.
final class Codecs {
    let encoder: ValueEncoder
    let decoder: ValueDecoder
    /// Reads and writes the entity's records through `Codable` when they
    /// are not ``FieldwiseRecord``s; `nil` for those.
    let codable: CodableFields?
    let children: [Codecs]
    /// The link to the parent, resolved once for the call.
    let link: ParentLink?
    /// The link's foreign key position, or -1 without a link; the database
    /// that holds the parent's keys (its `#id` when the parent is a child
    /// too); whether any index has a database of its own. Read per record
    /// written, where reading `link` or `storedIndexes` retained them.
    let foreignKeyIndex: Int
    let parentDatabase: MDB_dbi
    let hasStoredIndexes: Bool
    /// The indexes kept in a database of their own (not served by the
    /// parent's range), each with its database.
    let storedIndexes: [(fields: [Int], dbi: MDB_dbi)]
    /// Reused by each record of the call for its primary key's bytes and
    /// its storage key (``EntityTable/persist(_:in:codecs:parent:)``).
    var primaryKeyBuffer: [UInt8] = []
    var storageKeyBuffer: [UInt8] = []
    /// The call's writes to the entity's database and to its `#id`
    /// database, each through a cursor kept for the call (closed by
    /// ``closeCursors()`` before the transaction ends).
    let mainWriter: WriteCursor
    let idRuns: RunWriter
    /// Deletes the `#id` runs of the parents whose children the call erases
    /// (``EntityTable/eraseRange(parentKey:in:codecs:)``), through a cursor
    /// kept for the call (closed by ``closeCursors()``); made on first use,
    /// so codecs that never erase children (every read call's) do not make
    /// it.
    var runEraser: RunEraser {
        if let keptRunEraser { return keptRunEraser }
        let eraser = RunEraser(idRuns.dbi)
        keptRunEraser = eraser
        return eraser
    }
    private var keptRunEraser: RunEraser?

    /// ``codable``, for a record type that is not a ``FieldwiseRecord``.
    @inline(__always)
    func codableFields() throws -> CodableFields {
        guard let codable else {
            throw StorageError(.engine, .read, message: "the codecs of a FieldwiseRecord have no Codable bridge")
        }
        return codable
    }
    /// Lists the keys stored under each parent whose children are being
    /// replaced, through one cursor kept for the call (closed by
    /// ``closeCursors()``); erasing a parent's children walks and deletes
    /// through the same cursor.
    let storedKeys: RangeKeyReader
    /// The keys stored under the parent whose children are being replaced
    /// (``RelationChildren/replaceChildren(ofParentAt:primaryKey:parentKey:in:codecs:)``),
    /// reset for each parent.
    private(set) lazy var storedChildren = StoredChildren()

    /// What a read call bound from a template kept for the next one
    /// (``ReadCallKeeps``): made by the first such call, so that codecs
    /// that only write make none.
    private(set) lazy var readCall = ReadCallKeeps()

    init(
        schema: ValueSchema, children: [Codecs], link: ParentLink?, storedIndexes: [(fields: [Int], dbi: MDB_dbi)],
        main: MDB_dbi, byId: MDB_dbi, codable: CodableFields?
    ) {
        encoder = ValueEncoder(schema: schema)
        decoder = ValueDecoder(schema: schema)
        self.codable = codable
        self.children = children
        self.link = link
        self.storedIndexes = storedIndexes
        foreignKeyIndex = link?.foreignKeyIndex ?? -1
        parentDatabase = link.map { $0.parentById ?? $0.parentMain } ?? 0
        hasStoredIndexes = !storedIndexes.isEmpty
        mainWriter = WriteCursor(main)
        idRuns = RunWriter(byId, main: main)
        storedKeys = RangeKeyReader(main)
    }

    /// Closes the write cursors of these codecs and of their children's;
    /// every write transaction that used them calls it before it ends.
    func closeCursors() {
        mainWriter.close()
        idRuns.close()
        keptRunEraser?.close()
        storedKeys.close()
        for child in children { child.closeCursors() }
    }

    /// Writes what the `#id` writers of these codecs and of their
    /// children's kept for the end of the call; every write transaction
    /// that used them calls it before it commits.
    func flushRuns(in txn: borrowing Transaction) throws {
        try idRuns.flush(in: txn)
        for child in children { try child.flushRuns(in: txn) }
    }

    /// Turns off the `#id` writers' tail (``RunWriter/keepsTail``) for every
    /// database two writers of this tree share.
    func disableSharedTails() {
        var seen: [MDB_dbi: Int] = [:]
        func count(_ codecs: Codecs) {
            seen[codecs.idRuns.dbi, default: 0] += 1
            for child in codecs.children { count(child) }
        }
        func disable(_ codecs: Codecs) {
            if seen[codecs.idRuns.dbi, default: 0] > 1 { codecs.idRuns.keepsTail = false }
            for child in codecs.children { disable(child) }
        }
        count(self)
        disable(self)
    }
}

/// The databases of one entity, and how its records are written, read and
/// erased inside a transaction:
///
/// - `<entity>`: storage key → value. A top-level record's storage key is its
///   primary key; a child's is its parent's primary key followed by its own, so
///   a parent's children are one contiguous cursor range, in child-key order.
/// - `<entity>#id`: for a child entity, one entry per run of a parent's
///   consecutive child keys (``IdRun``), so a child can be found (and
///   moved) by its own key.
/// - `<entity>#<index>`: one `MDB_DUPSORT` database per declared index,
///   except an index that leads with the child's foreign key: a parent's
///   children are one range already, so that range, filtered on the index's
///   other fields, serves it (docs/LMDB.md).
final class EntityTable<R: Record>: Sendable {
    let environment: LMDBEnvironment
    let entity: Entity<R>
    let schema: ValueSchema
    let main: MDB_dbi
    let byId: MDB_dbi
    let indexes: [IndexTable]
    let relations: [any ChildSet<R>]
    /// `relations` as what writes and erases their children, in the same order: an
    /// array whose metadata is known when the module is compiled, where
    /// reading `relations` in code generic over `R` looked up the metadata
    /// of `[any ChildSet<R>]`, of its element and of its indices' `Range`
    /// (about 1,600 instructions per erased parent).
    let childWriters: [any ChildWriter]
    /// `!relations.isEmpty`, kept apart: reading `relations` at all looks up
    /// the metadata of `[any ChildSet<R>]` (an existential over the generic
    /// `R`, 450 instructions), which was paid per decoded record.
    let hasRelations: Bool
    /// `R` as a ``FieldwiseRecord``, when it reads its fields by position.
    let fieldwiseType: (any FieldwiseRecord.Type)? = R.self as? any FieldwiseRecord.Type
    /// Whether `R` is a ``FieldwiseRecord``, whose fields ``fieldsWriter``
    /// writes by position.
    let writesFieldwise: Bool
    /// Writes the fields of the record a pointer points to by position when
    /// ``writesFieldwise``; for a record that encodes through `Codable`, a
    /// writer that is never called, so that writes take a closure that is
    /// not optional (binding an optional one retained its context per
    /// record). Made once: an optional unwrapped with `?? { ... }` on each
    /// read made a reabstraction thunk, an allocation, every time.
    let fieldsWriter: FieldsWriter<R>
    /// The link to the parent when a parent's table built this one.
    private let declaredLink: ParentLink?
    /// Each field's distance from a value's end when it and every field
    /// after it have a fixed width, else 0 (``RangeFilter/fromEnd(types:optional:)``).
    let fieldsFromEnd: [Int]
    /// What the views of this table's values know of its fields; `nil`
    /// when the stored values' fields are not the entity's, in its order
    /// (views are then lent from records read whole).
    let viewLayout: ViewLayout?
    /// What this table derived from the plan templates of prepared calls
    /// (``preparedRead(for:)``), at most ``maxPreparedReads``.
    private let preparedReads = BargingMutex<[PreparedRead]>([])
    private static var maxPreparedReads: Int { 32 }

    /// The name of the database that records which entities are children of which.
    static var linksDatabase: String { "__links" }

    /// Opens the entity's databases, and its children's.
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` for a declaration that
    ///   cannot be stored, such as relations that loop back to an entity.
    init(environment: LMDBEnvironment, link: ParentLink?) throws {
        let entity = R.entity
        // Checked before `validate()`, which recurses into the children's
        // declarations and would not come back from a loop.
        if link == nil, let loop = relationLoop(R.self, path: []) {
            throw StorageError(
                .schemaMismatch, .open, entity: entity.name, path: environment.path,
                message: "the relations form a loop: \(loop.joined(separator: " → "))")
        }
        try entity.validate()
        self.environment = environment
        self.entity = entity
        schema = ValueSchema(entity)
        fieldsFromEnd = RangeFilter.fromEnd(types: schema.types, optional: schema.optional)
        viewLayout =
            schema.names == entity.fields.map(\.name) && schema.types == entity.fields.map(\.type)
                && schema.optional == entity.fields.map(\.isOptional) ? ViewLayout(entity) : nil
        main = try environment.requireDatabase(entity.name)
        byId = try environment.requireDatabase(entity.name + "#id")
        var resolvedLink = link
        if resolvedLink == nil, environment.parentLink(of: entity.name) == nil, let owner = entity.owner {
            // A child asked for before its owner: set the owner up first, which
            // links this entity to it.
            try openOwner(owner, environment: environment)
        }
        if resolvedLink == nil, environment.parentLink(of: entity.name) == nil {
            resolvedLink = try Self.storedLink(of: entity, environment: environment)
            if let resolvedLink { environment.register(child: entity.name, link: resolvedLink) }
        }
        declaredLink = resolvedLink
        let linkNow = resolvedLink ?? environment.parentLink(of: entity.name)
        let isChild = linkNow != nil
        indexes = try entity.indexes.map { index in
            let fields = index.fields.compactMap { name in entity.fields.firstIndex { $0.name == name } }
            if let linkNow, fields.first == linkNow.foreignKeyIndex {
                try environment.dropStaleIndexDatabase(entity.name + "#" + index.name)
                return IndexTable(index: index, fields: fields, dbi: nil)
            }
            return IndexTable(
                index: index, fields: fields,
                dbi: try environment.requireDatabase(entity.name + "#" + index.name, duplicateSort: true))
        }
        let parentById: MDB_dbi? = isChild ? byId : nil
        let main = self.main
        relations = try entity.relations.map { relation in
            try relation.makeChildSet(environment: environment, parentMain: main, parentById: parentById)
        }
        childWriters = relations.map { $0 as any ChildWriter }
        hasRelations = !entity.relations.isEmpty
        // Assigned directly, not through `Optional.map` and `??`: a closure
        // passed through those generic functions is re-abstracted at each,
        // and every call then went through four thunks, each an indirect
        // branch that mispredicted about once a record.
        if let fieldwise = R.self as? any FieldwiseRecord.Type {
            fieldsWriter = fieldWriter(for: R.self, fieldwise)
            writesFieldwise = true
        } else {
            fieldsWriter = { _, _ in }
            writesFieldwise = false
        }
    }

    /// The parent link recorded in the environment by an earlier parent storage.
    private static func storedLink(of entity: Entity<R>, environment: LMDBEnvironment) throws -> ParentLink? {
        guard let links = try environment.database(linksDatabase) else { return nil }
        let stored: String? = try environment.read(.open) { txn in
            try txn.withValue(links, Array(entity.name.utf8)) { String(decoding: $0, as: UTF8.self) }
        }
        guard let stored else { return nil }
        let parts = stored.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, let foreignKey = entity.fields.firstIndex(where: { $0.name == parts[1] }) else {
            throw StorageError(
                .schemaMismatch, .open, entity: entity.name, path: environment.path,
                message: "the environment records '\(entity.name)' as a child through '\(stored)', which this entity does not declare")
        }
        let parentMain = try environment.requireDatabase(parts[0])
        let grandparent: String? = try environment.read(.open) { txn in
            try txn.withValue(links, Array(parts[0].utf8)) { String(decoding: $0, as: UTF8.self) }
        }
        let parentById = grandparent == nil ? nil : try environment.requireDatabase(parts[0] + "#id")
        return ParentLink(parent: parts[0], foreignKeyIndex: foreignKey, parentMain: parentMain, parentById: parentById)
    }

    /// What this table derives from `bound`'s template, made the first time
    /// and kept for the template's later calls: made from the table's
    /// schema, indexes and parent link, so kept per table (a template is
    /// shared by every store of the record type) and made again when a
    /// parent storage has linked an entity since.
    func preparedRead(for bound: BoundPlan<R>, codecs: Codecs) -> PreparedRead {
        let linkChanges = environment.linkChanges.load(ordering: .relaxed)
        if let kept = codecs.readCall.keptPreparedRead, kept.template === bound.template, kept.linkChanges == linkChanges {
            return kept
        }
        let read = preparedRead(for: bound)
        codecs.readCall.keptPreparedRead = read
        return read
    }

    /// What this table derived from `template` for a read call
    /// (``preparedRead(for:codecs:)``), when it has derived it already: the
    /// codecs' kept one, else the table's, kept by the codecs from now on;
    /// `nil` when none was made yet (for the parent link in force). `keeps`
    /// are the codecs' (``Codecs/readCall``).
    func keptPreparedRead(for template: AnyObject, keeps: ReadCallKeeps) -> PreparedRead? {
        let linkChanges = environment.linkChanges.load(ordering: .relaxed)
        if let kept = keeps.keptPreparedRead, kept.template === template, kept.linkChanges == linkChanges {
            return kept
        }
        let found: PreparedRead? = preparedReads.withLock { reads in
            for read in reads where read.template === template && read.linkChanges == linkChanges { return read }
            return nil
        }
        if let found { keeps.keptPreparedRead = found }
        return found
    }

    /// ``preparedRead(for:codecs:)`` found or made under the table's lock.
    func preparedRead(for bound: BoundPlan<R>) -> PreparedRead {
        let template = bound.template
        let linkChanges = environment.linkChanges.load(ordering: .relaxed)
        let kept: PreparedRead? = preparedReads.withLock { reads in
            for read in reads where read.template === template && read.linkChanges == linkChanges { return read }
            return nil
        }
        if let kept { return kept }
        var servedIndex: PreparedRead.ServedIndex?
        if case .index(let declared, let values) = bound.access,
            let index = indexes.first(where: { $0.index.name == declared.name }), isServedByParent(index, link: link)
        {
            let rest = Array(index.fields.dropFirst())
            servedIndex = PreparedRead.ServedIndex(
                rest: rest,
                otherFields: otherFieldPositions(
                    bound.template.otherEqualityFields, besides: rest.prefix(max(values.count - 1, 0)),
                    link: link),
                boundRest: max(values.count - 1, 0))
        } else if case .parent = bound.access, let link {
            servedIndex = PreparedRead.ServedIndex(
                rest: [],
                otherFields: otherFieldPositions(bound.template.otherEqualityFields, besides: [], link: link),
                boundRest: 0)
        }
        let sortPositions = sortKeyPositions(bound.sort)
        let made = PreparedRead(
            template: template, linkChanges: linkChanges, sortPositions: sortPositions,
            sortColumns: sortPositions.flatMap {
                SortKeys.columns(positions: $0, types: schema.types, optional: schema.optional)
            },
            servedIndex: servedIndex)
        preparedReads.withLock { reads in
            if reads.count >= Self.maxPreparedReads { reads.removeAll(keepingCapacity: true) }
            reads.append(made)
        }
        return made
    }

    /// The positions of a template's other equalities' fields
    /// (``PlanTemplate/otherEqualityFields``, or a plan's), checked on a
    /// parent's range besides the foreign key and the index fields `bound`;
    /// `nil` when there are none, or one is not a stored field, is bound
    /// already or comes twice (the range is then not filtered, and the
    /// predicate is evaluated on each child). ``filtered(_:others:)`` and
    /// ``preparedRead(for:)`` both follow it.
    func otherFieldPositions(_ names: [String]?, besides bound: ArraySlice<Int>, link: ParentLink?) -> [Int]? {
        guard let names, !names.isEmpty, let link else { return nil }
        var positions: [Int] = []
        positions.reserveCapacity(names.count)
        for name in names {
            guard let position = schema.names.firstIndex(of: name), position != link.foreignKeyIndex,
                !bound.contains(position), !positions.contains(position)
            else { return nil }
            positions.append(position)
        }
        return positions
    }

    /// The parent link in force: declared by the parent's table, or registered
    /// since by a parent storage of the same environment.
    var link: ParentLink? {
        if let declaredLink { return declaredLink }
        // The environment's links looked up again only when one changed:
        // every read by key asks (`storageKey(of:in:)`), and the look-up
        // takes the environment's lock and hashes the entity's name.
        let changes = environment.linkChanges.load(ordering: .relaxed)
        return registeredLink.withLock { kept in
            if let kept = kept, kept.changes == changes { return kept.link }
            let link = environment.parentLink(of: entity.name)
            kept = (changes, link)
            return link
        }
    }

    /// The link the environment held for this entity, and its
    /// ``LMDBEnvironment/linkChanges`` when it was looked up. A link
    /// registered between the count's load and the look-up is kept under
    /// the older count, and looked up again at the next call.
    private let registeredLink = BargingMutex<(changes: Int, link: ParentLink?)?>(nil)

    /// Codecs kept between read calls (at most ``maxKeptCodecs``): making
    /// them (an encoder, a decoder and two write cursors per entity of the
    /// record tree, with their tables) and freeing them cost about 16k
    /// instructions per call, a twentieth of a read of one dialog.
    private let keptCodecs = BargingMutex<[KeptCodecs]>([])
    /// One set of kept read codecs ahead of the pool (their retained
    /// reference's address; 0: none): the call that finds it takes it with
    /// one atomic exchange, and the call that ends puts its codecs back the
    /// same way when it is empty, where taking them out of the pool and
    /// putting them back under its lock cost a read call about 700
    /// instructions.
    private let fastCodecs = Atomic<UInt>(0)

    deinit {
        if let kept = UnsafeRawPointer(bitPattern: fastCodecs.exchange(0, ordering: .acquiring)) {
            Unmanaged<Codecs>.fromOpaque(kept).release()
        }
    }
    private static var maxKeptCodecs: Int { LMDBEnvironment.maxKeptReaders }

    /// Calls `body` with codecs for a read call: kept ones when there are,
    /// new ones otherwise, kept afterwards. A read uses only their decoders
    /// (each value it decodes is loaded anew) and the children's codecs, not
    /// the parent link, the index databases or the write cursors fixed when
    /// they were made, so codecs made before a parent storage linked this
    /// entity read as new ones do. Codecs are used by one call at a time:
    /// taken out of the pool for the call, put back after it.
    func withReadCodecs<T>(_ body: (Codecs) throws -> T) rethrows -> T {
        let codecs = takeReadCodecs()
        defer { keepReadCodecs(codecs) }
        return try body(codecs)
    }

    /// Kept codecs, or new ones: those in ``fastCodecs`` first, taken with
    /// one atomic exchange, then the pool's, under its lock.
    private func takeReadCodecs() -> Codecs {
        if let kept = UnsafeRawPointer(bitPattern: fastCodecs.exchange(0, ordering: .acquiring)) {
            return Unmanaged<Codecs>.fromOpaque(kept).takeRetainedValue()
        }
        return keptCodecs.withLock { $0.popLast() }?.codecs ?? makeCodecs()
    }

    /// Keeps `codecs` for a later read call: in ``fastCodecs`` when it is
    /// empty, else in the pool while it is not full.
    private func keepReadCodecs(_ codecs: Codecs) {
        let kept = Unmanaged.passRetained(codecs).toOpaque()
        if fastCodecs.compareExchange(expected: 0, desired: UInt(bitPattern: kept), ordering: .releasing).exchanged {
            return
        }
        Unmanaged<Codecs>.fromOpaque(kept).release()
        let pooled = KeptCodecs(codecs: codecs)
        keptCodecs.withLock { pool in
            if pool.count < Self.maxKeptCodecs - 1 { pool.append(pooled) }
        }
    }

    /// Codecs kept between write calls: making them and freeing them cost
    /// about 17k instructions per call, a twentieth of persisting one dialog of 100 messages.
    private let keptWriteCodecs = Mutex<KeptCodecs?>(nil)

    /// Calls `body` with codecs for a write call, which must close their
    /// cursors (``Codecs/closeCursors()``) before its transaction ends: the
    /// kept ones when they were made for the parent link in force now (the
    /// link and the index databases they write are fixed when they are made,
    /// and a parent storage opened since may have linked this entity), new
    /// ones otherwise. They are kept afterwards when `body` returns, not
    /// when it throws. A call takes them out for itself, so no two calls
    /// share them.
    func withWriteCodecs<T>(_ body: (Codecs) throws -> T) rethrows -> T {
        let link = self.link
        let kept = keptWriteCodecs.withLock { kept in
            let taken = kept
            kept = nil
            return taken
        }
        let current: Codecs
        if let kept, kept.codecs.link == link {
            current = kept.codecs
        } else {
            current = makeCodecs()
        }
        let result = try body(current)
        let keeping = KeptCodecs(codecs: current)
        keptWriteCodecs.withLock { $0 = keeping }
        return result
    }

    func makeCodecs() -> Codecs {
        let link = self.link
        var stored: [(fields: [Int], dbi: MDB_dbi)] = []
        for index in indexes where !isServedByParent(index, link: link) {
            if let dbi = index.dbi { stored.append((index.fields, dbi)) }
        }
        let codecs = Codecs(
            schema: schema, children: relations.map { $0.makeCodecs() }, link: link, storedIndexes: stored,
            main: main, byId: byId, codable: writesFieldwise ? nil : CodableFields(entity))
        if !codecs.children.isEmpty { codecs.disableSharedTails() }
        return codecs
    }

    /// Whether `index` leads with the foreign key to the parent, so that the
    /// parent's range of children, filtered on the index's other fields,
    /// answers it and it has no database of its own. A table opened before
    /// its entity was linked to a parent opened the index's database; once
    /// linked, it leaves it alone like every other table of the entity.
    @inline(__always)
    func isServedByParent(_ index: IndexTable, link: ParentLink?) -> Bool {
        guard let link else { return false }
        return index.fields.first == link.foreignKeyIndex
    }

    // MARK: - Keys

    @inline(__always)
    func indexKey(_ fields: [Int], _ value: (Int) throws -> StoredValue) rethrows -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(fields.count * 10)
        for field in fields {
            KeyCodec.append(indexed: try value(field), to: &key)
        }
        return key
    }

    /// The storage key of the record with primary key bytes `pk`, if it is stored.
    func storageKey(of pk: [UInt8], in txn: borrowing Transaction) throws -> [UInt8]? {
        if link != nil {
            return try IdRuns.storageKey(of: pk, ids: byId, main: main, in: txn)
        }
        return try txn.contains(main, pk) ? pk : nil
    }
}

/// The entity names along a chain of relations from `type` that comes back to
/// an entity already on `path`, if there is one.
private func relationLoop<E: Record>(_ type: E.Type, path: [String]) -> [String]? {
    let name = E.entity.name
    if path.contains(name) { return path + [name] }
    for relation in E.entity.relations {
        if let loop = relation.loop(path: path + [name]) { return loop }
    }
    return nil
}

extension ToManyRelation {
    /// ``relationLoop(_:path:)`` from this relation's child.
    fileprivate func loop(path: [String]) -> [String]? {
        relationLoop(Child.self, path: path)
    }
}

/// Builds the table of `owner`, which registers the links to its children.
private func openOwner<Owner: Record>(_ owner: Owner.Type, environment: LMDBEnvironment) throws {
    _ = try EntityTable<Owner>(environment: environment, link: nil)
}

/// `writePacked(at:to:)` of `F` (its `write(fields:)` specialized in the
/// record's module), which is `R` (found by casting `R.self`), so a record
/// converts to it without a cast per record. The record is read where it
/// is: `unsafeBitCast` of the record, like any use of a record's value in
/// this code generic over its type, copied it (a value-witness copy and
/// destroy per record, about 150 instructions for a message).
/// Writes the fields of the record a pointer points to by position.
typealias FieldsWriter<R> = @Sendable (UnsafePointer<R>, inout PackedFieldWriter) throws -> Void

private func fieldWriter<R: Record, F: FieldwiseRecord>(for record: R.Type, _ type: F.Type) -> FieldsWriter<R> {
    { record, writer in
        try F.writePacked(at: UnsafeRawPointer(record).assumingMemoryBound(to: F.self), to: &writer)
    }
}

/// Codecs waiting in an ``EntityTable``'s pool for the next read call.
/// `@unchecked Sendable`: the pool hands each out to one call at a time,
/// which alone uses it until it puts it back (``EntityTable/withReadCodecs(_:)``).
struct KeptCodecs: @unchecked Sendable {
    let codecs: Codecs
}

/// What one table derives from the plan template of a prepared query's calls
/// (``EntityTable/preparedRead(for:)``): the positions of the sort keys, and
/// whether the access path is an index the parent's range serves. Immutable.
final class PreparedRead: Sendable {
    /// A parent's range: an index that leads with the foreign key, served
    /// by the parent's range (the positions of its fields after the foreign
    /// key, `boundRest` of them bound by the template's access path), or the
    /// parent's key itself (no fields); and the positions of the template's
    /// other equalities' fields, checked on the range's stored bytes when
    /// the access path is not exact by itself.
    struct ServedIndex: Sendable {
        let rest: [Int]
        let boundRest: Int
        /// The fields an inexact path's filter checks: the index's bound
        /// fields after the foreign key, then the other equalities' fields;
        /// `nil` when the template has no other equalities this range can check.
        let filterFields: [Int]?

        init(rest: [Int], otherFields: [Int]?, boundRest: Int) {
            self.rest = rest
            self.boundRest = boundRest
            filterFields = otherFields.map { Array(rest.prefix(boundRest)) + $0 }
        }
    }

    /// The template it was made for, held so that its identity is not
    /// taken by another.
    let template: AnyObject & Sendable
    /// The environment's ``LMDBEnvironment/linkChanges`` it was made at.
    let linkChanges: Int
    /// ``EntityTable/sortKeyPositions(_:)`` of the template's sort, and
    /// their ordered form (``SortKeys/columns(positions:types:optional:)``).
    let sortPositions: [Int]?
    let sortColumns: [SortKeys.Column]?
    let servedIndex: ServedIndex?

    init(
        template: AnyObject & Sendable, linkChanges: Int, sortPositions: [Int]?, sortColumns: [SortKeys.Column]?,
        servedIndex: ServedIndex?
    ) {
        self.template = template
        self.linkChanges = linkChanges
        self.sortPositions = sortPositions
        self.sortColumns = sortColumns
        self.servedIndex = servedIndex
    }
}
