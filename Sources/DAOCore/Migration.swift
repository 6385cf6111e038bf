import Foundation

/// One stored record in an engine-neutral shape, as a migration step sees it:
/// its fields by name, as ``StoredValue``s, and its children by relation name.
///
/// A field the row does not hold reads as ``StoredValue/null``.
public struct MigrationRow: Sendable, Hashable {
    /// The fields, by name.
    public var values: [String: StoredValue]
    /// The children of each relation, by relation name (only in a
    /// ``MigrationStep/rewrite(_:to:_:)`` step).
    public var children: [String: [MigrationRow]]

    /// A row with these values and children.
    public init(values: [String: StoredValue] = [:], children: [String: [MigrationRow]] = [:]) {
        self.values = values
        self.children = children
    }

    /// The value of field `name` (``StoredValue/null`` when the row holds none);
    /// setting it adds or replaces the field.
    public subscript(name: String) -> StoredValue {
        get { values[name] ?? .null }
        set { values[name] = newValue }
    }
}

/// One thing a migration does to a store, the same on every backend.
///
/// Build steps with the static functions: ``addField(_:to:type:optional:default:)``,
/// ``dropField(_:from:)``, ``renameField(_:to:in:)``,
/// ``changeField(_:in:to:optional:_:)``, ``renameEntity(_:to:)``,
/// ``addIndex(_:on:to:)``, ``dropIndex(_:from:)``, ``dropRelation(_:from:)``,
/// ``rewrite(_:to:_:)`` and ``lightweight(to:)``. docs/SCHEMA.md describes what each does on each engine.
public struct MigrationStep: Sendable {
    enum Kind: Sendable {
        case addField(entity: String, field: EntitySchema.FieldSchema, value: StoredValue)
        case dropField(entity: String, field: String)
        case renameField(entity: String, from: String, to: String)
        case changeField(
            entity: String, field: EntitySchema.FieldSchema,
            convert: @Sendable (StoredValue) throws -> StoredValue)
        case renameEntity(from: String, to: String)
        case addIndex(entity: String, index: EntitySchema.IndexSchema)
        case dropIndex(entity: String, index: String)
        case rewrite(entity: String, schemas: [EntitySchema], body: @Sendable (inout MigrationRow) throws -> Void)
        case lightweight(schemas: [EntitySchema])
        case dropRelation(entity: String, relation: String)
    }

    let kind: Kind

    /// Adds field `name` to `entity`, after its other fields, holding `value`
    /// in every stored record (`nil`, the default, for an optional field).
    /// The new record type declares the field last.
    public static func addField(
        _ name: String, to entity: String, type: FieldType, optional: Bool, default value: StoredValue = .null
    ) -> MigrationStep {
        MigrationStep(
            kind: .addField(
                entity: entity, field: EntitySchema.FieldSchema(name: name, type: type, optional: optional),
                value: value))
    }

    /// Drops field `name` from `entity` and from every stored record. A field
    /// that is the primary key, a relation's foreign key, or part of an index
    /// (drop the index first) cannot be dropped.
    public static func dropField(_ name: String, from entity: String) -> MigrationStep {
        MigrationStep(kind: .dropField(entity: entity, field: name))
    }

    /// Renames field `name` of `entity` to `newName`, keeping its values, its
    /// place and the indexes and relations that name it.
    public static func renameField(_ name: String, to newName: String, in entity: String) -> MigrationStep {
        MigrationStep(kind: .renameField(entity: entity, from: name, to: newName))
    }

    /// Changes the type (and optionality) of field `name` of `entity`: `convert`
    /// turns each stored value (``StoredValue/null`` for `nil`) into one of the
    /// new type.
    public static func changeField(
        _ name: String, in entity: String, to type: FieldType, optional: Bool,
        _ convert: @escaping @Sendable (StoredValue) throws -> StoredValue
    ) -> MigrationStep {
        MigrationStep(
            kind: .changeField(
                entity: entity, field: EntitySchema.FieldSchema(name: name, type: type, optional: optional),
                convert: convert))
    }

    /// Renames entity `name` to `newName`, with its records, indexes and
    /// relations; its owner's relation and its children's owner follow.
    public static func renameEntity(_ name: String, to newName: String) -> MigrationStep {
        MigrationStep(kind: .renameEntity(from: name, to: newName))
    }

    /// Adds index `name` over `fields` to `entity`, filled from the stored records.
    public static func addIndex(_ name: String, on fields: [String], to entity: String) -> MigrationStep {
        MigrationStep(kind: .addIndex(entity: entity, index: EntitySchema.IndexSchema(name: name, fields: fields)))
    }

    /// Drops index `name` of `entity`.
    public static func dropIndex(_ name: String, from entity: String) -> MigrationStep {
        MigrationStep(kind: .dropIndex(entity: entity, index: name))
    }

    /// The general step: reads every stored record of `entity` in its old
    /// shape, with its children (and theirs) under ``MigrationRow/children``,
    /// lets `body` change it, and stores it in the shape of `type` and the
    /// entities its relations own. `entity` is the stored name (usually
    /// `type`'s own). A child row's foreign key is set to its parent's key.
    ///
    /// Every row must then hold a value of the declared type for every
    /// non-optional field, or the migration fails and nothing is applied.
    ///
    /// `type` may be owned (a child entity, whether or not it names its
    /// owner): its owner's records are left as they are, and the relation
    /// that holds it follows a new entity name.
    public static func rewrite<R: Record>(
        _ entity: String, to type: R.Type, _ body: @escaping @Sendable (inout MigrationRow) throws -> Void
    ) -> MigrationStep {
        // `type` and the entities it owns, `type` first: never its owners,
        // whose records the step does not read.
        let subtree = R.subtreeEntityNames()
        let schemas = EntitySchema.tree(for: type).filter { subtree.contains($0.entity) }
        return MigrationStep(kind: .rewrite(entity: entity, schemas: schemas, body: body))
    }

    /// Drops relation `name` of `entity` and erases what it holds: the child
    /// entity and the entities its relations reach, with their records,
    /// indexes and recorded schemas. Only entities the store records are
    /// erased; `entity`'s own records stay.
    ///
    /// A store written before a child entity belonged to one relation of one
    /// owner may record a second relation holding the same child: then only
    /// the relation is dropped, and the child's records stay with the other
    /// holder (refused when the child names `entity` as its owner: drop the
    /// other relation instead). This is the step that repairs such a store.
    public static func dropRelation(_ name: String, from entity: String) -> MigrationStep {
        MigrationStep(kind: .dropRelation(entity: entity, relation: name))
    }

    /// Lightweight migration to `type` and the entities stored with it, for
    /// the changes that need no code: an added optional field (stored as
    /// `nil`), a dropped field, an added or dropped index, an added entity,
    /// and a relation added to a stored entity whose child entity is new to
    /// the store (the child and the entities it holds are created empty:
    /// every stored parent reads back with no children in it). Any other
    /// difference from the stored schema is refused with
    /// ``StorageError/Kind/schemaMismatch`` naming it, and nothing is applied:
    /// a removed relation (its children would be erased; write
    /// ``dropRelation(_:from:)``), a relation to a child entity the store
    /// holds already (under another owner, or none).
    public static func lightweight<R: Record>(to type: R.Type) -> MigrationStep {
        MigrationStep(kind: .lightweight(schemas: EntitySchema.tree(for: type)))
    }
}

/// A named migration: steps applied once, in order, by a ``Migrator``.
public struct Migration: Sendable {
    /// The migration's name, recorded in the store once it is applied.
    public let name: String
    /// What it does.
    public let steps: [MigrationStep]

    /// A migration named `name` doing `steps`.
    public init(_ name: String, _ steps: [MigrationStep]) {
        self.name = name
        self.steps = steps
    }
}

/// What a store records about its migrations, under
/// ``StoreMetadataKey/migrations`` as UTF-8 JSON, e.g.
/// `{"applied":["v1","v2"],"format":1,"version":2}`.
public struct MigrationState: Codable, Sendable, Hashable {
    /// The version of this form.
    public var format: Int
    /// The store's schema version: how many migrations it has applied.
    public var version: Int
    /// The names of the applied migrations, in the order they were applied.
    public var applied: [String]

    /// The state of a store with `applied` migrations.
    public init(applied: [String]) {
        self.format = 1
        self.version = applied.count
        self.applied = applied
    }

    /// The stored form: sorted-key JSON.
    public func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            return Array(try encoder.encode(self))
        } catch {
            throw StorageError(.encoding, .open, message: "the migration state could not be encoded", underlying: error)
        }
    }

    /// Reads the stored form.
    /// - Throws: ``StorageError/Kind/corrupt`` when the bytes are not one.
    public static func decode(_ bytes: some Collection<UInt8>) throws -> MigrationState {
        do {
            return try JSONDecoder().decode(MigrationState.self, from: Data(bytes))
        } catch {
            throw StorageError(.corrupt, .open, message: "the store's migration record does not decode", underlying: error)
        }
    }
}

extension StoreMetadataKey {
    /// The key of the store's ``MigrationState``: `migrations`.
    public static var migrations: String { "migrations" }
}

/// A change an engine may carry out in place, rather than by rewriting every
/// record of the entity (``MigrationTransaction/alter(_:from:to:in:)``).
public enum NativeAlteration: Sendable {
    /// A field added last, holding `value` in every record.
    case addField(EntitySchema.FieldSchema, value: StoredValue)
    /// A field dropped.
    case dropField(String)
    /// A field renamed.
    case renameField(from: String, to: String)
    /// The entity renamed.
    case renameEntity(from: String, to: String)
    /// An index added.
    case addIndex(EntitySchema.IndexSchema)
    /// An index dropped.
    case dropIndex(EntitySchema.IndexSchema)
}

/// An engine's side of a migration: one write transaction in which the
/// ``Migrator`` reads and rewrites the stored records of whole entities and
/// the store's metadata. Everything it does is committed together, or not at all.
///
/// Rows are positional: one ``StoredValue`` per field of the schema they are
/// read or written with, in its order.
public protocol MigrationTransaction: AnyObject {
    /// Every schema the store records, by entity name.
    /// - Throws: ``StorageError``.
    func recordedSchemas() throws -> [String: EntitySchema]

    /// The metadata recorded under `key`, if any.
    /// - Throws: ``StorageError``.
    func metadata(_ key: String) throws -> [UInt8]?

    /// Records `value` under `key`.
    /// - Throws: ``StorageError``.
    func setMetadata(_ key: String, _ value: [UInt8]) throws

    /// Every stored record of `schema`'s entity, in `schema`'s field order.
    /// `schemas` are the recorded schemas at this point of the migration.
    /// - Throws: ``StorageError`` (``StorageError/Kind/corrupt`` for a value that does not decode).
    func rows(of schema: EntitySchema, in schemas: [String: EntitySchema]) throws -> [[StoredValue]]

    /// Replaces what is stored for `old` (nothing when `nil`) with `rows` in
    /// the shape of `new` (its layout, indexes and links to its owner), and
    /// records `new` as its schema (in place of `old`'s, also when the name
    /// changed). `schemas` are the schemas after the change.
    /// - Throws: ``StorageError``.
    func rewrite(from old: EntitySchema?, to new: EntitySchema, rows: [[StoredValue]], in schemas: [String: EntitySchema])
        throws

    /// Records `schema` as its entity's schema without touching its records
    /// (for a change in a related entity: a renamed owner, child or foreign key).
    /// - Throws: ``StorageError``.
    func record(_ schema: EntitySchema) throws

    /// Carries out `change` in place when the engine can, recording `new` as
    /// the schema, and returns `true`; returns `false` to have the migrator
    /// rewrite every record instead.
    /// - Throws: ``StorageError``.
    func alter(_ change: NativeAlteration, from old: EntitySchema, to new: EntitySchema, in schemas: [String: EntitySchema])
        throws -> Bool

    /// Erases what is stored for `schema`'s entity (its records, indexes and
    /// links to its owner) and its recorded schema. `schemas` are the schemas
    /// after the change (without `schema`'s entity). Called only for an
    /// entity the store records.
    /// - Throws: ``StorageError``.
    func drop(_ schema: EntitySchema, in schemas: [String: EntitySchema]) throws
}

extension MigrationTransaction {
    /// Carries out nothing in place.
    public func alter(
        _ change: NativeAlteration, from old: EntitySchema, to new: EntitySchema, in schemas: [String: EntitySchema]
    ) throws -> Bool { false }

    /// Erases nothing: a store whose transaction cannot drop an entity
    /// refuses ``MigrationStep/dropRelation(_:from:)``.
    public func drop(_ schema: EntitySchema, in schemas: [String: EntitySchema]) throws {
        throw StorageError(
            .invalidArgument, .open, entity: schema.entity,
            message: "this store's migrations cannot erase entity '\(schema.entity)'")
    }
}

/// A store that can be migrated: it runs a ``Migrator``'s work in one
/// transaction of its engine.
public protocol MigratableStore: Store {
    /// Runs `body` in one write transaction and commits it when `body`
    /// returns; when `body` throws, nothing it did is kept.
    ///
    /// - Throws: ``StorageError/Kind/invalidArgument`` when the store has
    ///   handed out a storage already (migrate first); what `body` or the
    ///   commit throws.
    func withMigrationTransaction<T>(_ body: (any MigrationTransaction) throws -> T) throws -> T
}
