import Foundation

/// The stored shape of one entity, as a value: what a store records next to
/// an entity's data when it first stores it, and compares with the record
/// type's ``Entity`` declaration every time a storage for it is asked for.
///
/// Every adapter records the same value in its own way (an SQLite table, an
/// LMDB database, a file store's manifest) in the same form, ``encoded()``: a
/// UTF-8 JSON object with sorted keys, for example
///
/// ```json
/// {"entity":"books","fields":[{"name":"id","optional":false,"type":"text"},
///  {"name":"authorId","optional":false,"type":"text"},
///  {"name":"subtitle","optional":true,"type":"text"}],
///  "format":1,"indexes":[{"fields":["authorId","title"],"name":"books_by_author"}],
///  "owner":"authors","relations":[{"child":"chapters","foreignKey":"bookId","name":"chapters"}]}
/// ```
///
/// `fields` lists the primary key first, then the other fields in declaration
/// order; `type` is a ``FieldType`` raw value. `format` is the version of this
/// description itself (``currentFormat``), so that a later library can still
/// read what this one wrote. docs/SCHEMA.md describes the form and where each
/// engine keeps it.
///
/// ```swift
/// let stored = try EntitySchema.decode(bytes)
/// try EntitySchema(BookRecord.entity).check(against: stored)   // throws .schemaMismatch
/// ```
public struct EntitySchema: Codable, Sendable, Hashable {
    /// One stored field: its name, storage class and whether it may be `nil`.
    public struct FieldSchema: Codable, Sendable, Hashable, CustomStringConvertible {
        /// The field's name (its `Codable` key).
        public var name: String
        /// Its storage class.
        public var type: FieldType
        /// Whether it may hold `nil`.
        public var optional: Bool

        /// Describes a field.
        public init(name: String, type: FieldType, optional: Bool) {
            self.name = name
            self.type = type
            self.optional = optional
        }

        /// The type as the error messages write it: `text`, or `text?` when optional.
        public var typeDescription: String { type.rawValue + (optional ? "?" : "") }

        /// `'name' (type)`, e.g. `'subtitle' (text?)`.
        public var description: String { "'\(name)' (\(typeDescription))" }
    }

    /// One declared index: its name and its fields, most significant first.
    public struct IndexSchema: Codable, Sendable, Hashable {
        /// The index's name.
        public var name: String
        /// The indexed fields.
        public var fields: [String]

        /// Describes an index.
        public init(name: String, fields: [String]) {
            self.name = name
            self.fields = fields
        }
    }

    /// One to-many relation: its name, the child entity and the child's field
    /// that holds the parent key.
    public struct RelationSchema: Codable, Sendable, Hashable {
        /// The relation's name (the parent's `Codable` key for its children).
        public var name: String
        /// The child entity's name.
        public var child: String
        /// The child's foreign-key field.
        public var foreignKey: String

        /// Describes a relation.
        public init(name: String, child: String, foreignKey: String) {
            self.name = name
            self.child = child
            self.foreignKey = foreignKey
        }
    }

    /// The version of this description's stored form that this library writes.
    public static let currentFormat = 1

    /// The version of the stored form this value was read from (or ``currentFormat``).
    public var format: Int
    /// The entity's name.
    public var entity: String
    /// The fields, primary key first.
    public var fields: [FieldSchema]
    /// The declared indexes, in declaration order.
    public var indexes: [IndexSchema]
    /// The to-many relations, in declaration order.
    public var relations: [RelationSchema]
    /// The entity that owns this one through a relation, if any.
    public var owner: String?

    /// Describes an entity from its parts.
    public init(
        entity: String, fields: [FieldSchema], indexes: [IndexSchema] = [], relations: [RelationSchema] = [],
        owner: String? = nil
    ) {
        self.format = Self.currentFormat
        self.entity = entity
        self.fields = fields
        self.indexes = indexes
        self.relations = relations
        self.owner = owner
    }

    /// The schema an entity declaration describes.
    public init<R: Record>(_ entity: Entity<R>) {
        self.init(
            entity: entity.name,
            fields: entity.fields.map { FieldSchema(name: $0.name, type: $0.type, optional: $0.isOptional) },
            indexes: entity.indexes.map { IndexSchema(name: $0.name, fields: $0.fields) },
            relations: entity.relations.map {
                RelationSchema(name: $0.name, child: $0.childEntityName, foreignKey: $0.foreignKeyField)
            },
            owner: entity.owner?.entityName)
    }

    /// The primary key's field name.
    public var primaryKey: String? { fields.first?.name }

    // MARK: - Stored form

    /// The stored form: UTF-8 JSON with sorted keys and no whitespace, the
    /// same bytes for the same schema on every engine.
    ///
    /// - Throws: ``StorageError/Kind/encoding`` if JSONEncoder refuses it.
    public func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(self))
        } catch {
            throw StorageError(
                .encoding, .open, entity: entity, message: "the schema of '\(entity)' could not be encoded",
                underlying: error)
        }
    }

    /// Reads a stored form written by ``encoded()``.
    ///
    /// - Parameter bytes: the stored form.
    /// - Parameter entity: the entity the bytes were stored for, for errors.
    /// - Throws: ``StorageError/Kind/corrupt`` when the bytes are not a schema;
    ///   ``StorageError/Kind/schemaMismatch`` when they were written in a later
    ///   format than this library reads.
    public static func decode(_ bytes: some Collection<UInt8>, entity: String) throws -> EntitySchema {
        let schema: EntitySchema
        do {
            schema = try JSONDecoder().decode(EntitySchema.self, from: Data(bytes))
        } catch {
            throw StorageError(
                .corrupt, .open, entity: entity, message: "the stored schema of '\(entity)' does not decode",
                underlying: error)
        }
        guard schema.format <= currentFormat else {
            throw StorageError(
                .schemaMismatch, .open, entity: entity,
                message: "the stored schema of '\(entity)' has format \(schema.format); this library reads format \(currentFormat) and older")
        }
        return schema
    }

    // MARK: - Comparing

    /// What differs between `stored` (what the store holds) and this schema
    /// (what the record type declares), in a fixed order: primary key, removed
    /// fields, added fields, changed fields, field order, indexes, relations,
    /// owner. Empty when they match.
    public func changes(from stored: EntitySchema) -> [SchemaChange] {
        var changes: [SchemaChange] = []
        if let old = stored.primaryKey, let new = primaryKey, old != new {
            changes.append(.primaryKeyChanged(from: old, to: new))
        }
        let declared = Dictionary(fields.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let kept = Dictionary(stored.fields.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for field in stored.fields where declared[field.name] == nil {
            changes.append(.fieldRemoved(field))
        }
        for field in fields where kept[field.name] == nil {
            changes.append(.fieldAdded(field))
        }
        for field in fields {
            if let old = kept[field.name], old != field {
                changes.append(.fieldChanged(from: old, to: field))
            }
        }
        let commonOld = stored.fields.map(\.name).filter { declared[$0] != nil }
        let commonNew = fields.map(\.name).filter { kept[$0] != nil }
        if commonOld != commonNew {
            changes.append(.fieldsReordered(from: commonOld, to: commonNew))
        }
        let newIndexes = Dictionary(indexes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let oldIndexes = Dictionary(stored.indexes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for index in stored.indexes where newIndexes[index.name] == nil {
            changes.append(.indexRemoved(index))
        }
        for index in indexes {
            if let old = oldIndexes[index.name] {
                if old != index { changes.append(.indexChanged(from: old, to: index)) }
            } else {
                changes.append(.indexAdded(index))
            }
        }
        let newRelations = Dictionary(relations.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let oldRelations = Dictionary(stored.relations.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for relation in stored.relations where newRelations[relation.name] == nil {
            changes.append(.relationRemoved(relation))
        }
        for relation in relations {
            if let old = oldRelations[relation.name] {
                if old != relation { changes.append(.relationChanged(from: old, to: relation)) }
            } else {
                changes.append(.relationAdded(relation))
            }
        }
        if stored.owner != owner {
            changes.append(.ownerChanged(from: stored.owner, to: owner))
        }
        return changes
    }

    /// Throws when `stored` differs from this schema, naming every difference.
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` with the differences in
    ///   ``StorageError/schemaChanges`` and in its message, e.g.
    ///   `the stored schema of 'books' differs from the record type: field 'summary' (text?) was removed; field 'pages' (integer) was added; …`.
    public func check(against stored: EntitySchema) throws {
        let changes = changes(from: stored)
        guard !changes.isEmpty else { return }
        throw Self.mismatch(entity: entity, changes)
    }

    /// The error for `changes`, as ``check(against:)`` throws it.
    public static func mismatch(entity: String, _ changes: [SchemaChange]) -> StorageError {
        var error = StorageError(
            .schemaMismatch, .open, entity: entity,
            message: "the stored schema of '\(entity)' differs from the record type: "
                + changes.map(\.description).joined(separator: "; ")
                + " (a store is never changed to fit a record type; see docs/SCHEMA.md)")
        error.schemaChanges = changes
        return error
    }
}

/// One difference between a stored schema and a record type's declaration.
public enum SchemaChange: Sendable, Hashable, CustomStringConvertible {
    /// The primary key is another field.
    case primaryKeyChanged(from: String, to: String)
    /// A stored field the record type no longer declares.
    case fieldRemoved(EntitySchema.FieldSchema)
    /// A declared field the store does not hold.
    case fieldAdded(EntitySchema.FieldSchema)
    /// A field whose type or optionality changed.
    case fieldChanged(from: EntitySchema.FieldSchema, to: EntitySchema.FieldSchema)
    /// The fields both hold are declared in another order.
    case fieldsReordered(from: [String], to: [String])
    /// A stored index the record type no longer declares.
    case indexRemoved(EntitySchema.IndexSchema)
    /// A declared index the store does not hold.
    case indexAdded(EntitySchema.IndexSchema)
    /// An index over other fields.
    case indexChanged(from: EntitySchema.IndexSchema, to: EntitySchema.IndexSchema)
    /// A stored relation the record type no longer declares.
    case relationRemoved(EntitySchema.RelationSchema)
    /// A declared relation the store does not hold.
    case relationAdded(EntitySchema.RelationSchema)
    /// A relation to another child entity or through another foreign key.
    case relationChanged(from: EntitySchema.RelationSchema, to: EntitySchema.RelationSchema)
    /// The entity is owned by another entity, or its ownership was added or dropped.
    case ownerChanged(from: String?, to: String?)

    /// The difference in words, the same on every backend.
    public var description: String {
        func fields(_ names: [String]) -> String { "(" + names.joined(separator: ", ") + ")" }
        func relation(_ r: EntitySchema.RelationSchema) -> String { "'\(r.name)' (\(r.child) by \(r.foreignKey))" }
        switch self {
        case .primaryKeyChanged(let old, let new):
            return "the primary key changed from '\(old)' to '\(new)'"
        case .fieldRemoved(let field):
            return "field \(field) was removed"
        case .fieldAdded(let field):
            return "field \(field) was added"
        case .fieldChanged(let old, let new):
            return "field '\(new.name)' changed from \(old.typeDescription) to \(new.typeDescription)"
        case .fieldsReordered(let old, let new):
            return "the fields were reordered from \(fields(old)) to \(fields(new))"
        case .indexRemoved(let index):
            return "index '\(index.name)' on \(fields(index.fields)) was removed"
        case .indexAdded(let index):
            return "index '\(index.name)' on \(fields(index.fields)) was added"
        case .indexChanged(let old, let new):
            return "index '\(new.name)' changed from \(fields(old.fields)) to \(fields(new.fields))"
        case .relationRemoved(let r):
            return "relation \(relation(r)) was removed"
        case .relationAdded(let r):
            return "relation \(relation(r)) was added"
        case .relationChanged(let old, let new):
            return "relation '\(new.name)' changed from \(relation(old)) to \(relation(new))"
        case .ownerChanged(let old, let new):
            return "the owner changed from \(old.map { "'\($0)'" } ?? "none") to \(new.map { "'\($0)'" } ?? "none")"
        }
    }
}

extension FieldType: Codable {}

extension ToManyRelation {
    /// The child entity's name.
    public var childEntityName: String { Child.entity.name }
}

/// The names under which a store records facts about itself beside its data,
/// the same in every engine's metadata (an SQLite table, an LMDB database, a
/// file store's manifest): today each entity's schema; later a schema version
/// and the migrations applied (see docs/SCHEMA.md).
public enum StoreMetadataKey {
    /// The key of the schema recorded for `entity`: `schema/<entity>`.
    public static func schema(_ entity: String) -> String { "schema/" + entity }
}

extension EntitySchema {
    /// The schemas of every entity a storage for `type` sets up, in a fixed
    /// order: from the top-most owner of `type` down through the relations,
    /// depth first, each entity once (then `type` itself, should no relation
    /// reach it). Every adapter checks them in this order, so a store that
    /// differs in several entities reports the same one first on every backend.
    public static func tree<R: Record>(for type: R.Type) -> [EntitySchema] {
        var top: any Record.Type = type
        var seen: Set<String> = [R.entity.name]
        while let owner = ownerType(of: top), seen.insert(owner.entityName).inserted {
            top = owner
        }
        var schemas: [EntitySchema] = []
        var visited: Set<String> = []
        collect(top, into: &schemas, visited: &visited)
        if !visited.contains(R.entity.name) { schemas.append(EntitySchema(R.entity)) }
        return schemas
    }

    /// Checks every schema of ``tree(for:)`` against what `stored` returns for
    /// its entity (`nil`: nothing recorded yet, nothing to compare).
    ///
    /// - Throws: the first mismatch, as ``check(against:)`` throws it, or what
    ///   `stored` throws.
    public static func checkTree<R: Record>(
        for type: R.Type, stored: (_ entity: String) throws -> EntitySchema?
    ) throws {
        for declared in tree(for: type) {
            if let recorded = try stored(declared.entity) {
                try declared.check(against: recorded)
            }
        }
    }

    private static func ownerType(of type: any Record.Type) -> (any Record.Type)? {
        entityOwner(type)
    }

    private static func collect(_ type: any Record.Type, into schemas: inout [EntitySchema], visited: inout Set<String>) {
        guard visited.insert(type.entityName).inserted else { return }
        schemas.append(schema(of: type))
        for child in childTypes(of: type) {
            collect(child, into: &schemas, visited: &visited)
        }
    }
}

private func entityOwner<T: Record>(_ type: T.Type) -> (any Record.Type)? { T.entity.owner }
private func schema<T: Record>(of type: T.Type) -> EntitySchema { EntitySchema(T.entity) }
private func childTypes<T: Record>(of type: T.Type) -> [any Record.Type] { T.entity.relations.map(\.childType) }
