import CLMDB
import DAOCore
import Foundation

/// One declared index: its own `MDB_DUPSORT` database whose keys are the
/// encoded index field values and whose duplicate values are the storage keys
/// of the records that hold them.
struct IndexTable: Sendable {
    var index: Index
    /// The positions of the indexed fields among the entity's fields.
    var fields: [Int]
    var dbi: MDB_dbi
}

/// The encoders and decoders of one storage call: one pair per entity of the
/// call's record tree, reused for every record of the call.
final class Codecs {
    let encoder: ValueEncoder
    let decoder: ValueDecoder
    let children: [Codecs]

    init(schema: ValueSchema, children: [Codecs]) {
        encoder = ValueEncoder(schema: schema)
        decoder = ValueDecoder(schema: schema)
        self.children = children
    }
}

/// The databases of one entity, and how its records are written, read and
/// erased inside a transaction:
///
/// - `<entity>`: storage key → value. A top-level record's storage key is its
///   primary key; a child's is its parent's primary key followed by its own, so
///   a parent's children are one contiguous cursor range, in child-key order.
/// - `<entity>#id`: for a child entity, child primary key → storage key, so a
///   child can be found (and moved) by its own key.
/// - `<entity>#<index>`: one `MDB_DUPSORT` database per declared index.
final class EntityTable<R: Record>: Sendable {
    let environment: LMDBEnvironment
    let entity: Entity<R>
    let schema: ValueSchema
    let main: MDB_dbi
    let byId: MDB_dbi
    let indexes: [IndexTable]
    let relations: [any ChildSet<R>]
    /// The link to the parent when a parent's table built this one.
    private let declaredLink: ParentLink?

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
        main = try environment.requireDatabase(entity.name)
        byId = try environment.requireDatabase(entity.name + "#id")
        indexes = try entity.indexes.map { index in
            let fields = index.fields.compactMap { name in entity.fields.firstIndex { $0.name == name } }
            return IndexTable(index: index, fields: fields, dbi: try environment.requireDatabase(entity.name + "#" + index.name, duplicateSort: true))
        }
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
        let isChild = resolvedLink != nil || environment.parentLink(of: entity.name) != nil
        let parentById: MDB_dbi? = isChild ? byId : nil
        let main = self.main
        relations = try entity.relations.map { relation in
            try relation.makeChildSet(environment: environment, parentMain: main, parentById: parentById)
        }
    }

    /// The parent link recorded in the environment by an earlier parent storage.
    private static func storedLink(of entity: Entity<R>, environment: LMDBEnvironment) throws -> ParentLink? {
        guard let links = try environment.database(linksDatabase) else { return nil }
        let stored: String? = try environment.read(.open) { txn in
            try txn.get(links, Array(entity.name.utf8)).map { String(decoding: $0, as: UTF8.self) }
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
            try txn.get(links, Array(parts[0].utf8)).map { String(decoding: $0, as: UTF8.self) }
        }
        let parentById = grandparent == nil ? nil : try environment.requireDatabase(parts[0] + "#id")
        return ParentLink(parent: parts[0], foreignKeyIndex: foreignKey, parentMain: parentMain, parentById: parentById)
    }

    /// The parent link in force: declared by the parent's table, or registered
    /// since by a parent storage of the same environment.
    @inline(__always)
    var link: ParentLink? { declaredLink ?? environment.parentLink(of: entity.name) }

    func makeCodecs() -> Codecs {
        Codecs(schema: schema, children: relations.map { $0.makeCodecs() })
    }

    // MARK: - Keys

    @inline(__always)
    func indexKey(_ index: IndexTable, _ value: (Int) throws -> StoredValue) rethrows -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(index.fields.count * 10)
        for field in index.fields {
            KeyCodec.append(indexed: try value(field), to: &key)
        }
        return key
    }

    /// The storage key of the record with primary key bytes `pk`, if it is stored.
    func storageKey(of pk: [UInt8], in txn: borrowing Transaction) throws -> [UInt8]? {
        if link != nil {
            return try txn.get(byId, pk).map { [UInt8]($0) }
        }
        return try txn.get(main, pk) == nil ? nil : pk
    }

    // MARK: - Writing

    /// What the caller knows about the parent of a child being persisted.
    enum ParentContext {
        /// Nothing: the child is persisted through its own storage, so its
        /// parent must be looked up.
        case unknown
        /// The parent with this primary key is being persisted; `hadChildren`
        /// says whether any child was stored under it before.
        case persisting(primaryKey: StoredValue, hadChildren: Bool)
    }

    /// Inserts or replaces `record` with its children.
    func persist(_ record: R, in txn: borrowing Transaction, codecs: Codecs, parent: ParentContext = .unknown) throws {
        let encoder = codecs.encoder
        try encoder.encode(record)
        var pk: [UInt8] = []
        KeyCodec.append(untagged: encoder.value(at: 0), to: &pk)
        let key: [UInt8]
        var oldKey: [UInt8]?
        var oldValue: UnsafeRawBufferPointer?
        let link = self.link
        if let link {
            let parentValue = encoder.value(at: link.foreignKeyIndex)
            var parentKey: [UInt8] = []
            KeyCodec.append(untagged: parentValue, to: &parentKey)
            var lookUnderParent = true
            switch parent {
            case .unknown:
                guard try txn.get(link.parentById ?? link.parentMain, parentKey) != nil else {
                    throw StorageError(
                        .constraint, .persist, entity: entity.name, path: environment.path,
                        message: "its parent '\(link.parent)' with key \(parentValue) does not exist",
                        context: "record \(encoder.value(at: 0))")
                }
            case .persisting(let expected, let hadChildren):
                guard parentValue == expected else {
                    throw StorageError(
                        .constraint, .persist, entity: entity.name, path: environment.path,
                        message: "a child of '\(link.parent)' \(expected) names parent \(parentValue) in its foreign key",
                        context: "record \(encoder.value(at: 0))")
                }
                lookUnderParent = hadChildren
            }
            key = parentKey + pk
            // Usually an existing child is stored under this parent already: one
            // lookup. Otherwise the id lookup says whether it moves from another.
            if lookUnderParent, let value = try txn.get(main, key) {
                oldKey = key
                oldValue = value
            } else if let elsewhere = try txn.get(byId, pk) {
                let storedKey = [UInt8](elsewhere)
                oldKey = storedKey
                oldValue = try txn.get(main, storedKey)
            }
        } else {
            key = pk
            // The old value matters only for its index entries.
            if !indexes.isEmpty, let value = try txn.get(main, key) {
                oldKey = key
                oldValue = value
            }
        }

        var oldIndexKeys: [[UInt8]] = []
        if let oldValue, !indexes.isEmpty {
            // Read the old index keys before any write moves the page.
            let decoder = codecs.decoder
            try decoder.load(oldValue)
            oldIndexKeys = try indexes.map { try indexKey($0, decoder.value(at:)) }
        }
        let existed = oldValue != nil
        let moved = existed && oldKey != key
        if moved, let oldKey { try txn.delete(main, oldKey) }
        try txn.put(main, key, encoder.bytes)
        for position in indexes.indices {
            let index = indexes[position]
            let newIndexKey = indexKey(index, encoder.value(at:))
            if existed, let oldKey {
                if !moved && oldIndexKeys[position] == newIndexKey { continue }
                try txn.delete(index.dbi, oldIndexKeys[position], value: oldKey)
            }
            try txn.put(index.dbi, newIndexKey, key)
        }
        if link != nil && (!existed || moved) {
            try txn.put(byId, pk, key)
        }
        if !relations.isEmpty {
            let primaryKey = encoder.value(at: 0)
            for position in relations.indices {
                try relations[position].replaceChildren(
                    of: record, primaryKey: primaryKey, parentKey: pk, in: txn, codecs: codecs.children[position])
            }
        }
    }

    /// Erases the record stored under `key` (whose primary key bytes are `pk`)
    /// with its index entries and children. Returns whether there was one.
    @discardableResult
    func erase(storageKey key: [UInt8], pk: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws -> Bool {
        guard let value = try txn.get(main, key) else { return false }
        var indexKeys: [[UInt8]] = []
        if !indexes.isEmpty {
            let decoder = codecs.decoder
            try decoder.load(value)
            indexKeys = try indexes.map { try indexKey($0, decoder.value(at:)) }
        }
        try txn.delete(main, key)
        for position in indexes.indices {
            try txn.delete(indexes[position].dbi, indexKeys[position], value: key)
        }
        if link != nil { try txn.delete(byId, pk) }
        for position in relations.indices {
            try relations[position].eraseChildren(parentKey: pk, in: txn, codecs: codecs.children[position])
        }
        return true
    }

    /// Erases every record of the entity and of its descendants.
    func eraseEverything(in txn: borrowing Transaction) throws {
        try txn.empty(main)
        try txn.empty(byId)
        for index in indexes { try txn.empty(index.dbi) }
        for relation in relations { try relation.eraseEverything(in: txn) }
    }

    // MARK: - Reading

    /// Decodes the value in `buffer` with its children.
    func decode(_ buffer: UnsafeRawBufferPointer, in txn: borrowing Transaction, codecs: Codecs) throws -> R {
        let decoder = codecs.decoder
        try decoder.load(buffer)
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
        guard let key = try storageKey(of: pk, in: txn), let value = try txn.get(main, key) else { return nil }
        return try decode(value, in: txn, codecs: codecs)
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
                guard let value = try txn.get(main, key) else {
                    throw StorageError(
                        .corrupt, .read, entity: entity.name, path: environment.path,
                        message: "index '\(name)' names a record that is not stored")
                }
                records.append(try decode(value, in: txn, codecs: codecs))
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

// MARK: - Relations

/// The children of one to-many relation, seen from the parent's table.
protocol ChildSet<Parent>: Sendable {
    associatedtype Parent: Record
    func makeCodecs() -> Codecs
    /// The children of the parent with primary key bytes `parentKey`, as `[Child]`.
    func loadChildren(parentKey: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws -> Any
    /// Stores exactly the children `parent` holds now; `primaryKey` is the
    /// parent's primary key and `parentKey` its bytes.
    func replaceChildren(
        of parent: Parent, primaryKey: StoredValue, parentKey: [UInt8], in txn: borrowing Transaction, codecs: Codecs
    ) throws
    /// Erases the children of a parent.
    func eraseChildren(parentKey: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws
    /// Erases every child (all parents are being erased).
    func eraseEverything(in txn: borrowing Transaction) throws
}

struct RelationChildren<Relation: ToManyRelation>: ChildSet {
    typealias Parent = Relation.Parent
    let relation: Relation
    let table: EntityTable<Relation.Child>

    func makeCodecs() -> Codecs { table.makeCodecs() }

    func loadChildren(parentKey: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws -> Any {
        try table.readRange(prefix: parentKey, in: txn, codecs: codecs)
    }

    func replaceChildren(
        of parent: Parent, primaryKey: StoredValue, parentKey: [UInt8], in txn: borrowing Transaction, codecs: Codecs
    ) throws {
        let children = parent[keyPath: relation.children]
        // The children stored now that the parent no longer holds.
        var wanted: Set<Relation.Child.PrimaryKey>?
        var hadChildren = false
        let unwanted = try table.keys(prefix: parentKey, in: txn) { pk in
            hadChildren = true
            if wanted == nil { wanted = Set(children.map(\.primaryKey)) }
            guard let wanted, let key = KeyCodec.decodePrimaryKey(Relation.Child.PrimaryKey.self, from: pk) else {
                return true
            }
            return !wanted.contains(key)
        }
        for existing in unwanted {
            try table.erase(storageKey: existing.key, pk: existing.pk, in: txn, codecs: codecs)
        }
        let context = EntityTable<Relation.Child>.ParentContext.persisting(primaryKey: primaryKey, hadChildren: hadChildren)
        for child in children {
            try table.persist(child, in: txn, codecs: codecs, parent: context)
        }
    }

    func eraseChildren(parentKey: [UInt8], in txn: borrowing Transaction, codecs: Codecs) throws {
        for existing in try table.keys(prefix: parentKey, in: txn) {
            try table.erase(storageKey: existing.key, pk: existing.pk, in: txn, codecs: codecs)
        }
    }

    func eraseEverything(in txn: borrowing Transaction) throws {
        try table.eraseEverything(in: txn)
    }
}

extension ToManyRelation {
    /// Builds the child table of this relation, links it to its parent's
    /// databases and records the link in the environment.
    func makeChildSet(
        environment: LMDBEnvironment, parentMain: MDB_dbi, parentById: MDB_dbi?
    ) throws -> any ChildSet<Parent> {
        let childEntity = Child.entity
        guard let foreignKey = childEntity.fields.firstIndex(where: { $0.name == foreignKeyField }) else {
            throw StorageError(
                .schemaMismatch, .open, entity: Parent.entity.name,
                message: "relation '\(name)' names foreign key '\(foreignKeyField)', which is not a field of '\(childEntity.name)'")
        }
        let link = ParentLink(
            parent: Parent.entity.name, foreignKeyIndex: foreignKey, parentMain: parentMain, parentById: parentById)
        let stored = "\(Parent.entity.name)\n\(foreignKeyField)"
        let links = try environment.database(EntityTable<Child>.linksDatabase)
        let childMain = try environment.requireDatabase(childEntity.name)
        let recorded: String? = try links.flatMap { links in
            try environment.read(.open) { txn in
                try txn.get(links, Array(childEntity.name.utf8)).map { String(decoding: $0, as: UTF8.self) }
            }
        }
        if let recorded, recorded != stored {
            throw StorageError(
                .schemaMismatch, .open, entity: Parent.entity.name, path: environment.path,
                message: "'\(childEntity.name)' is stored as a child through '\(recorded.replacingOccurrences(of: "\n", with: "."))', not '\(Parent.entity.name).\(foreignKeyField)'")
        }
        if recorded == nil, let links, !environment.isReadOnly {
            try environment.write(.open) { txn in
                guard try txn.entryCount(childMain) == 0 else {
                    throw StorageError(
                        .schemaMismatch, .open, entity: Parent.entity.name, path: environment.path,
                        message: "'\(childEntity.name)' already holds records stored on their own, not as children of '\(Parent.entity.name)'")
                }
                try txn.put(links, Array(childEntity.name.utf8), Array(stored.utf8))
            }
        }
        environment.register(child: childEntity.name, link: link)
        let table = try EntityTable<Child>(environment: environment, link: link)
        return RelationChildren(relation: self, table: table)
    }
}
