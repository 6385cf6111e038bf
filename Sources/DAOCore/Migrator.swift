import Foundation

/// Named migrations registered in order and applied once each, like GRDB's
/// `DatabaseMigrator`.
///
/// ```swift
/// var migrator = Migrator()
/// migrator.register("v2: messages have a word count", [
///     .addField("wordCount", to: "messages", type: .integer, optional: false, default: .integer(0)),
/// ])
/// let store = try SQLiteDatabase(path: url)
/// try migrator.migrate(store)          // before the first storage(for:)
/// let messages = try store.storage(for: MessageRecordV2.self)
/// ```
///
/// ``migrate(_:)`` applies every migration the store has not applied yet, in
/// one transaction of the store's engine, and records them with the store's
/// schema version; if any step fails, nothing is applied. A store that
/// records a migration this migrator does not know (written by a newer
/// build) is refused.
public struct Migrator: Sendable {
    /// The registered migrations, in order.
    public private(set) var migrations: [Migration] = []

    /// An empty migrator.
    public init() {}

    /// Registers migration `name`, after those registered before.
    /// - Precondition: the name is not registered yet (a programming error).
    public mutating func register(_ name: String, _ steps: [MigrationStep]) {
        precondition(!migrations.contains { $0.name == name }, "migration '\(name)' is registered twice")
        migrations.append(Migration(name, steps))
    }

    /// Applies the migrations `store` has not applied yet, in one transaction,
    /// and returns their names. Call it before the store's first `storage(for:)`.
    ///
    /// - Throws: ``StorageError``: ``StorageError/Kind/schemaMismatch`` when the
    ///   store records migrations this migrator does not know or in another
    ///   order (a newer build wrote it), or a step does not fit the stored
    ///   schema; what a step's closure throws; the engine's errors. Nothing
    ///   is applied when it throws.
    @discardableResult
    public func migrate(_ store: some MigratableStore) throws -> [String] {
        try store.withMigrationTransaction { txn in
            let state = try txn.metadata(StoreMetadataKey.migrations).map { try MigrationState.decode($0) }
            let applied = state?.applied ?? []
            let known = migrations.map(\.name)
            if let unknown = applied.first(where: { !known.contains($0) }) {
                throw StorageError(
                    .schemaMismatch, .open,
                    message: "the store records migration '\(unknown)', which this build does not know: it was written by a newer version of the app")
            }
            guard Array(known.prefix(applied.count)) == applied else {
                throw StorageError(
                    .schemaMismatch, .open,
                    message: "the store applied the migrations (\(applied.joined(separator: ", "))) in another order than they are registered (\(known.joined(separator: ", ")))")
            }
            let pending = migrations.dropFirst(applied.count)
            guard !pending.isEmpty else { return [] }
            var runner = MigrationRunner(txn: txn, schemas: try txn.recordedSchemas())
            for migration in pending {
                for step in migration.steps {
                    do {
                        try runner.apply(step)
                    } catch let error as StorageError {
                        var error = error
                        error.message = "migration '\(migration.name)': " + error.message
                        throw error
                    } catch {
                        throw StorageError(
                            .engine, .open, message: "migration '\(migration.name)' failed: \(error)", underlying: error)
                    }
                }
            }
            try txn.setMetadata(StoreMetadataKey.migrations, MigrationState(applied: known).encoded())
            return pending.map(\.name)
        }
    }

    /// The migration state `store` records (no migration applied: version 0).
    /// It is read in a migration transaction, so, like ``migrate(_:)``, only
    /// before the store's first `storage(for:)`.
    /// - Throws: ``StorageError``: ``StorageError/Kind/invalidArgument`` once
    ///   the store handed out a storage.
    public static func state(of store: some MigratableStore) throws -> MigrationState {
        try store.withMigrationTransaction { txn in
            try txn.metadata(StoreMetadataKey.migrations).map { try MigrationState.decode($0) }
                ?? MigrationState(applied: [])
        }
    }
}

/// Applies steps inside one migration transaction, keeping the schemas as
/// they stand after each step.
struct MigrationRunner {
    let txn: any MigrationTransaction
    var schemas: [String: EntitySchema]

    private func schema(_ entity: String) throws -> EntitySchema {
        guard let schema = schemas[entity] else {
            throw StorageError(
                .schemaMismatch, .open, entity: entity, message: "the store records no entity '\(entity)'")
        }
        return schema
    }

    private func position(of field: String, in schema: EntitySchema) throws -> Int {
        guard let position = schema.fields.firstIndex(where: { $0.name == field }) else {
            throw StorageError(
                .schemaMismatch, .open, entity: schema.entity,
                message: "'\(schema.entity)' has no field '\(field)'")
        }
        return position
    }

    private static func refuse(_ entity: String, _ message: String) -> StorageError {
        StorageError(.schemaMismatch, .open, entity: entity, message: message)
    }

    /// The relation of another entity that owns `entity`, with its owner's name.
    private func owningRelation(of entity: String) -> (owner: String, relation: EntitySchema.RelationSchema)? {
        for schema in schemas.values {
            if let relation = schema.relations.first(where: { $0.child == entity }) {
                return (schema.entity, relation)
            }
        }
        return nil
    }

    mutating func apply(_ step: MigrationStep) throws {
        switch step.kind {
        case .addField(let entity, let field, let value):
            let old = try schema(entity)
            guard !old.fields.contains(where: { $0.name == field.name }),
                !old.relations.contains(where: { $0.name == field.name })
            else { throw Self.refuse(entity, "'\(entity)' has a field or relation '\(field.name)' already") }
            try Self.check(value, fits: field, entity: entity)
            var new = old
            new.fields.append(field)
            try change(.addField(field, value: value), from: old, to: new) { $0 + [value] }

        case .dropField(let entity, let name):
            let old = try schema(entity)
            let position = try position(of: name, in: old)
            if position == 0 { throw Self.refuse(entity, "the primary key '\(name)' cannot be dropped") }
            if let index = old.indexes.first(where: { $0.fields.contains(name) }) {
                throw Self.refuse(entity, "field '\(name)' is in index '\(index.name)'; drop the index first")
            }
            if let (owner, relation) = owningRelation(of: entity), relation.foreignKey == name {
                throw Self.refuse(entity, "field '\(name)' is the foreign key of relation '\(relation.name)' of '\(owner)'")
            }
            var new = old
            new.fields.remove(at: position)
            try change(.dropField(name), from: old, to: new) { row in
                var row = row
                row.remove(at: position)
                return row
            }

        case .renameField(let entity, let from, let to):
            let old = try schema(entity)
            let position = try position(of: from, in: old)
            guard !old.fields.contains(where: { $0.name == to }), !old.relations.contains(where: { $0.name == to })
            else { throw Self.refuse(entity, "'\(entity)' has a field or relation '\(to)' already") }
            var new = old
            new.fields[position].name = to
            for index in new.indexes.indices {
                new.indexes[index].fields = new.indexes[index].fields.map { $0 == from ? to : $0 }
            }
            var related: EntitySchema?
            if let (owner, relation) = owningRelation(of: entity), relation.foreignKey == from,
                var ownerSchema = schemas[owner]
            {
                for index in ownerSchema.relations.indices where ownerSchema.relations[index].child == entity {
                    ownerSchema.relations[index].foreignKey = to
                }
                related = ownerSchema
            }
            if let related { schemas[related.entity] = related }
            try change(.renameField(from: from, to: to), from: old, to: new) { $0 }
            if let related { try txn.record(related) }

        case .changeField(let entity, let field, let convert):
            let old = try schema(entity)
            let position = try position(of: field.name, in: old)
            if position == 0 { throw Self.refuse(entity, "the type of the primary key '\(field.name)' cannot change") }
            var new = old
            new.fields[position] = field
            let rows = try txn.rows(of: old, in: schemas).map { row in
                var row = row
                row[position] = try convert(row[position])
                try Self.check(row[position], fits: field, entity: entity)
                return row
            }
            schemas[entity] = new
            try txn.rewrite(from: old, to: new, rows: rows, in: schemas)

        case .renameEntity(let from, let to):
            let old = try schema(from)
            try EntityName.check(to)
            guard schemas[to] == nil else { throw Self.refuse(from, "the store holds an entity '\(to)' already") }
            var new = old
            new.entity = to
            var related: [EntitySchema] = []
            for var other in schemas.values where other.entity != from {
                var changed = false
                for index in other.relations.indices where other.relations[index].child == from {
                    other.relations[index].child = to
                    changed = true
                }
                if other.owner == from {
                    other.owner = to
                    changed = true
                }
                if changed { related.append(other) }
            }
            schemas[from] = nil
            for other in related { schemas[other.entity] = other }
            try change(.renameEntity(from: from, to: to), from: old, to: new) { $0 }
            for other in related.sorted(by: { $0.entity < $1.entity }) { try txn.record(other) }

        case .addIndex(let entity, let index):
            let old = try schema(entity)
            guard !old.indexes.contains(where: { $0.name == index.name }) else {
                throw Self.refuse(entity, "'\(entity)' has an index '\(index.name)' already")
            }
            guard !index.fields.isEmpty else { throw Self.refuse(entity, "index '\(index.name)' has no fields") }
            for field in index.fields { _ = try position(of: field, in: old) }
            var new = old
            new.indexes.append(index)
            try change(.addIndex(index), from: old, to: new) { $0 }

        case .dropIndex(let entity, let name):
            let old = try schema(entity)
            guard let position = old.indexes.firstIndex(where: { $0.name == name }) else {
                throw Self.refuse(entity, "'\(entity)' has no index '\(name)'")
            }
            var new = old
            let index = new.indexes.remove(at: position)
            try change(.dropIndex(index), from: old, to: new) { $0 }

        case .rewrite(let entity, let declared, let body):
            for schema in declared { try EntityName.check(schema.entity) }
            try rewrite(entity, to: declared, body)

        case .lightweight(let declared):
            for schema in declared { try EntityName.check(schema.entity) }
            try lightweight(to: declared)

        case .dropRelation(let entity, let name):
            try dropRelation(name, from: entity)
        }
    }

    // MARK: Dropping a relation

    private mutating func dropRelation(_ name: String, from entity: String) throws {
        let old = try schema(entity)
        guard let relation = old.relations.first(where: { $0.name == name }) else {
            throw Self.refuse(entity, "'\(entity)' has no relation '\(name)'")
        }
        var new = old
        new.relations.removeAll { $0.name == name }
        // The other relations of the store that hold `entity`'s child, as
        // `entity.relation` (a store written before the one-holder rule).
        func otherHolders(of child: String, except held: Set<String>) -> [String] {
            schemas.values.sorted { $0.entity < $1.entity }.flatMap { schema in
                schema.relations.filter { $0.child == child }.map { "\(schema.entity).\($0.name)" }
            }.filter { !held.contains($0) }
        }
        if let other = otherHolders(of: relation.child, except: ["\(entity).\(name)"]).first {
            // The child's records stay with the other holder.
            if let child = schemas[relation.child], child.owner == entity {
                throw Self.refuse(
                    entity,
                    "'\(relation.child)' names '\(entity)' as its owner and relation '\(other)' holds it too: drop that relation instead")
            }
            schemas[entity] = new
            try txn.record(new)
            // Stored again, linked to the holder that remains.
            if let child = schemas[relation.child] {
                let rows = try txn.rows(of: child, in: schemas)
                try txn.rewrite(from: child, to: child, rows: rows, in: schemas)
            }
            return
        }
        // The child and what its relations reach, as the store records them.
        var subtree: [EntitySchema] = []
        var holds: Set<String> = ["\(entity).\(name)"]
        func collect(_ name: String) {
            guard let schema = schemas[name], !subtree.contains(where: { $0.entity == name }), name != entity else { return }
            subtree.append(schema)
            for relation in schema.relations {
                holds.insert("\(schema.entity).\(relation.name)")
                collect(relation.child)
            }
        }
        collect(relation.child)
        // Nothing another entity holds is erased.
        for schema in subtree {
            if let other = otherHolders(of: schema.entity, except: holds).first {
                throw Self.refuse(
                    entity,
                    "dropping relation '\(name)' of '\(entity)' would erase '\(schema.entity)', which relation '\(other)' holds too")
            }
        }
        schemas[entity] = new
        for schema in subtree { schemas[schema.entity] = nil }
        try txn.record(new)
        for schema in subtree.reversed() { try txn.drop(schema, in: schemas) }
    }

    /// Records `new` in place of `old`: in place when the engine can, else by
    /// rewriting every row through `transform`.
    private mutating func change(
        _ alteration: NativeAlteration, from old: EntitySchema, to new: EntitySchema,
        transform: ([StoredValue]) throws -> [StoredValue]
    ) throws {
        schemas[new.entity] = new
        if try txn.alter(alteration, from: old, to: new, in: schemas) { return }
        let rows = try txn.rows(of: old, in: schemas).map(transform)
        try txn.rewrite(from: old, to: new, rows: rows, in: schemas)
    }

    // MARK: The general step

    private mutating func rewrite(
        _ entity: String, to declared: [EntitySchema], _ body: (inout MigrationRow) throws -> Void
    ) throws {
        // The rewritten type comes first (its owners are not in `declared`).
        guard let top = declared.first else { return }
        let oldTop = try schema(entity)
        // The old tree: `entity` and the entities its relations reach.
        var oldTree: [String: EntitySchema] = [:]
        func collect(_ schema: EntitySchema) {
            guard oldTree[schema.entity] == nil else { return }
            oldTree[schema.entity] = schema
            for relation in schema.relations { if let child = schemas[relation.child] { collect(child) } }
        }
        collect(oldTop)
        func rows(of schema: EntitySchema) throws -> [MigrationRow] {
            let stored = try txn.rows(of: schema, in: schemas)
            var result = stored.map { values in
                MigrationRow(values: Dictionary(uniqueKeysWithValues: zip(schema.fields.map(\.name), values)))
            }
            for relation in schema.relations {
                guard let child = oldTree[relation.child] else { continue }
                var byParent: [StoredValue: [MigrationRow]] = [:]
                for row in try rows(of: child) { byParent[row[relation.foreignKey], default: []].append(row) }
                for index in result.indices {
                    let key = result[index][schema.primaryKey ?? ""]
                    result[index].children[relation.name] = byParent[key] ?? []
                }
            }
            return result
        }
        // Flatten into the new tree, each child's foreign key set to its parent's key.
        let newByName = Dictionary(declared.map { ($0.entity, $0) }, uniquingKeysWith: { first, _ in first })
        // An entity of the old tree the new types no longer reach would stay
        // stored, owned by a parent that no longer declares it: refused.
        if let left = oldTree.keys.sorted().first(where: { $0 != entity && newByName[$0] == nil }) {
            throw Self.refuse(
                entity,
                "the general step to '\(top.entity)' does not store '\(left)', which the stored tree of '\(entity)' holds")
        }
        var migrated = try rows(of: oldTop)
        for index in migrated.indices { try body(&migrated[index]) }

        var flat: [String: [[StoredValue]]] = [:]
        func flatten(_ rows: [MigrationRow], as schema: EntitySchema) throws {
            for row in rows {
                var values: [StoredValue] = []
                for field in schema.fields {
                    let value = row[field.name]
                    try Self.check(value, fits: field, entity: schema.entity)
                    values.append(value)
                }
                flat[schema.entity, default: []].append(values)
                for relation in schema.relations {
                    guard let child = newByName[relation.child] else { continue }
                    let key = values[0]
                    let children = (row.children[relation.name] ?? []).map { child -> MigrationRow in
                        var child = child
                        child[relation.foreignKey] = key
                        return child
                    }
                    try flatten(children, as: child)
                }
            }
        }
        try flatten(migrated, as: top)
        let old = oldTree
        for schema in declared { schemas[schema.entity] = schema }
        var holders: [EntitySchema] = []
        if top.entity != entity {
            schemas[entity] = nil
            // A child entity renamed: the relation that holds it names it
            // anew, whether the child names its owner or not.
            for var other in schemas.values where !declared.contains(where: { $0.entity == other.entity }) {
                var changed = false
                for index in other.relations.indices where other.relations[index].child == entity {
                    other.relations[index].child = top.entity
                    changed = true
                }
                if changed { holders.append(other) }
            }
            for holder in holders { schemas[holder.entity] = holder }
        }
        // A child the new types hold that another entity's relation holds
        // too: refused before anything is written (the rule of opening).
        try ChildHolders.check(declared: declared + holders, recorded: schemas.values)
        for schema in declared {
            let previous = schema.entity == top.entity ? oldTop : old[schema.entity]
            try txn.rewrite(from: previous, to: schema, rows: flat[schema.entity] ?? [], in: schemas)
        }
        for holder in holders.sorted(by: { $0.entity < $1.entity }) { try txn.record(holder) }
    }

    // MARK: Lightweight

    private mutating func lightweight(to declared: [EntitySchema]) throws {
        // A relation added to a stored entity is inferred when its child
        // entity is new to the store: created empty below, after its holder.
        let stored = Set(schemas.keys)
        for new in declared {
            guard let old = schemas[new.entity] else {
                schemas[new.entity] = new
                // An added entity may not hold a child another entity holds.
                try ChildHolders.check(declared: [new], recorded: schemas.values)
                try txn.rewrite(from: nil, to: new, rows: [], in: schemas)
                continue
            }
            let changes = new.changes(from: old)
            let inferred = changes.filter {
                switch $0 {
                case .fieldAdded(let field): field.optional
                case .fieldRemoved, .indexAdded, .indexRemoved: true
                case .relationAdded(let relation): !stored.contains(relation.child)
                default: false
                }
            }
            guard inferred.count == changes.count else {
                let refused = changes.filter { !inferred.contains($0) }
                // A relation to a child another entity holds: the rule of
                // opening names both holders.
                try ChildHolders.check(declared: declared, recorded: schemas.values)
                var error = EntitySchema.mismatch(entity: new.entity, refused)
                // One sentence: each change, with the step to write when
                // one is known, then the step the others need.
                var steps = 0
                let described = refused.map { change in
                    switch change {
                    case .relationRemoved(let relation):
                        steps += 1
                        return "\(change), which would erase its children: write "
                            + ".dropRelation(\"\(relation.name)\", from: \"\(new.entity)\") for it"
                    case .relationAdded(let relation):
                        steps += 1
                        return "\(change), but the store holds '\(relation.child)' already: write the general step "
                            + ".rewrite for it"
                    default:
                        return change.description
                    }
                }
                let others = refused.count - steps
                error.message =
                    "lightweight migration cannot infer "
                    + (refused.count == 1 ? "this change: " : "these changes: ") + described.joined(separator: "; ")
                    + (others == 0
                        ? ""
                        : "; write a migration step for " + (steps > 0 ? "the others" : others == 1 ? "it" : "them"))
                throw error
            }
            for change in changes {
                switch change {
                case .indexRemoved(let index): try apply(.dropIndex(index.name, from: new.entity))
                default: break
                }
            }
            for change in changes {
                if case .fieldRemoved(let field) = change { try apply(.dropField(field.name, from: new.entity)) }
            }
            for change in changes {
                if case .fieldAdded(let field) = change {
                    try apply(.addField(field.name, to: new.entity, type: field.type, optional: true))
                }
            }
            for change in changes {
                if case .indexAdded(let index) = change {
                    try apply(.addIndex(index.name, on: index.fields, to: new.entity))
                }
            }
            // Added relations: recorded before their children are created
            // (which the holder's relation links to their owner).
            if changes.contains(where: { if case .relationAdded = $0 { true } else { false } }),
                var current = schemas[new.entity]
            {
                current.relations = new.relations
                schemas[new.entity] = current
                try txn.record(current)
            }
            // Added fields go last; the declaration must agree on the order.
            if let current = schemas[new.entity] {
                let rest = new.changes(from: current)
                if !rest.isEmpty {
                    var error = EntitySchema.mismatch(entity: new.entity, rest)
                    error.message =
                        "lightweight migration cannot infer: " + rest.map(\.description).joined(separator: "; ")
                        + " (added fields go after the stored ones)"
                    throw error
                }
            }
        }
    }

    // MARK: Values

    /// Throws unless `value` is of `field`'s storage class (or `null` for an optional field).
    static func check(_ value: StoredValue, fits field: EntitySchema.FieldSchema, entity: String) throws {
        let fits: Bool
        switch (value, field.type) {
        case (.null, _): fits = field.optional
        case (.integer, .integer), (.integer, .bool): fits = true
        case (.real, .real), (.real, .date): fits = true
        case (.text, .text), (.blob, .blob): fits = true
        default: fits = false
        }
        guard fits else {
            throw StorageError(
                .schemaMismatch, .open, entity: entity,
                message: "the value \(value) does not fit field \(field) of '\(entity)'")
        }
    }
}
