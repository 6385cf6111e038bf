/// One stored field of a record: its name (equal to its `Codable` key), its
/// storage class and a key path that reads it.
public struct Field<Root>: Sendable {
    /// The field's name: its `Codable` key, its SQL column, its place in an index.
    public let name: String
    /// The storage class of the value.
    public let type: FieldType
    /// Whether the field may hold `nil`.
    public let isOptional: Bool
    /// The key path that reads the field, used to map predicates and sort
    /// descriptors onto fields.
    public let keyPath: PartialKeyPath<Root> & Sendable
    private let read: @Sendable (Root) -> StoredValue

    /// Declares a field.
    ///
    /// - Parameters:
    ///   - name: the field's `Codable` key.
    ///   - keyPath: the stored property it reads.
    public init<Value: FieldValue>(_ name: String, _ keyPath: KeyPath<Root, Value> & Sendable) {
        self.name = name
        self.type = Value.fieldType
        self.isOptional = Value.isOptional
        self.keyPath = keyPath
        self.read = { $0[keyPath: keyPath].storedValue }
    }

    /// The field's value in `record`, in engine-neutral form.
    @inlinable
    public func value(in record: Root) -> StoredValue { readValue(record) }

    @usableFromInline
    func readValue(_ record: Root) -> StoredValue { read(record) }
}

/// A declared index over one or more fields of an entity.
public struct Index: Sendable, Hashable {
    /// The index name, unique within its store (adapters may prefix it).
    public let name: String
    /// The indexed fields, most significant first.
    public let fields: [String]

    /// Declares an index named `name` over `fields`.
    public init(_ name: String, on fields: [String]) {
        self.name = name
        self.fields = fields
    }
}

/// A to-many relation from a parent record to the child records it owns, like a
/// dialog's messages.
///
/// Each child carries its parent's key in a field of its own (the foreign key).
/// Persisting a parent stores exactly the children it holds (children it no
/// longer holds are removed); erasing a parent erases its children.
public protocol ToManyRelation<Parent>: Sendable {
    /// The owning record type.
    associatedtype Parent: Record
    /// The owned record type.
    associatedtype Child: Record
    /// The relation's name: the parent's `Codable` key for the children.
    var name: String { get }
    /// Reads and replaces the children of a parent.
    var children: WritableKeyPath<Parent, [Child]> & Sendable { get }
    /// Reads the parent key held by a child.
    var parentKey: KeyPath<Child, Parent.PrimaryKey> & Sendable { get }
    /// The child's field that holds the parent key.
    var foreignKeyField: String { get }
}

/// The concrete to-many relation; declare one with `Relation(_:_:foreignKey:_:)`.
public struct Relation<Parent: Record, Child: Record>: ToManyRelation {
    public let name: String
    public let children: WritableKeyPath<Parent, [Child]> & Sendable
    public let parentKey: KeyPath<Child, Parent.PrimaryKey> & Sendable
    public let foreignKeyField: String

    /// Declares that `Parent` owns the `Child` records at `children`, each of
    /// which names its parent in the field `foreignKey` (a declared field of the
    /// child entity).
    public init(
        _ name: String,
        _ children: WritableKeyPath<Parent, [Child]> & Sendable,
        foreignKey: String,
        _ parentKey: KeyPath<Child, Parent.PrimaryKey> & Sendable
    ) {
        self.name = name
        self.children = children
        self.parentKey = parentKey
        self.foreignKeyField = foreignKey
    }
}

/// How a record type is stored: its name, primary key, fields, indexes and
/// to-many relations. Every adapter reads the same declaration.
///
/// A class, so that reading `Record.entity` on a hot path hands out one
/// reference instead of copying the declaration.
public final class Entity<Root: Record>: Sendable {
    /// The entity's name: a table, a named database, a document.
    public let name: String
    /// All stored fields, primary key first, then in declaration order.
    public let fields: [Field<Root>]
    /// The key path of the primary key.
    public let primaryKeyPath: KeyPath<Root, Root.PrimaryKey> & Sendable
    /// The declared indexes.
    public let indexes: [Index]
    /// The to-many relations this entity owns.
    public let relations: [any ToManyRelation<Root>]
    /// The record type that owns records of this entity through one of its
    /// relations (`DialogRecord` for `MessageRecord`), or `nil` for a top-level
    /// entity. Adapters use it to set up the owner (and the foreign key) first
    /// when a storage for the child is asked for before one for its owner.
    public let owner: (any Record.Type)?
    /// Field positions by key path and by name, for lookups on hot paths.
    private let positionByKeyPath: [KeyPathKey: Int]
    /// The fields stored as reals (`Double`, `Float`, `Date`), checked by
    /// `checkRealsForPropertyList(_:)`.
    let realFields: [Field<Root>]
    /// Whether the entity owns relations: tested before walking ``relations``,
    /// whose iteration asks the runtime for the metadata of a constrained
    /// existential (about 400 instructions) even when it is empty.
    @usableFromInline let hasRelations: Bool
    /// Whether `checkRealsForPropertyList(_:)` has anything to check.
    let hasRealFieldsOrRelations: Bool
    /// For a ``FieldwiseRecord`` with reals: the position of the first `Date`
    /// of `-0.0` seconds it writes, and whether a real is `-0.0` or a NaN,
    /// found without key paths.
    let realChecker: (@Sendable (Root) throws -> (negativeZeroDate: Int?, special: Bool))?
    /// For a ``FieldwiseRecord`` with reals and without relations: the first
    /// of many records (its index) holding a `Date` of `-0.0` seconds, and the
    /// field's position, and whether a real is `-0.0` or a NaN, in one
    /// specialized pass.
    let realsChecker: (@Sendable ([Root]) throws -> RealsScan)?
    private let positionByName: [String: Int]
    /// The stored shape ``CodableFields`` reads and writes a `Codable`
    /// record by, built once.
    let codableShape: CodableShape
    /// Each field's type and whether it is optional, by position.
    private let fieldKinds: [(type: FieldType, isOptional: Bool)]
    /// The plans of this entity's queries, by shape (see ``QueryPlan/init(_:parts:)``).
    let queryPlans = QueryPlanCache<Root>()

    /// Declares an entity.
    ///
    /// - Parameters:
    ///   - name: the entity's name.
    ///   - primaryKeyName: the primary key's field name.
    ///   - primaryKeyPath: the stored property that holds the primary key.
    ///   - fields: the other stored fields, in `Codable` order.
    ///   - indexes: the indexes to maintain.
    ///   - relations: the to-many relations the entity owns.
    ///   - owner: the record type whose relation owns this entity, if any.
    public init(
        _ name: String,
        primaryKey primaryKeyName: String,
        _ primaryKeyPath: KeyPath<Root, Root.PrimaryKey> & Sendable,
        fields: [Field<Root>],
        indexes: [Index] = [],
        relations: [any ToManyRelation<Root>] = [],
        ownedBy owner: (any Record.Type)? = nil
    ) {
        self.name = name
        self.primaryKeyPath = primaryKeyPath
        self.fields = [Field(primaryKeyName, primaryKeyPath)] + fields
        self.indexes = indexes
        self.relations = relations
        self.owner = owner
        var byKeyPath: [KeyPathKey: Int] = [:]
        var byName: [String: Int] = [:]
        for (position, field) in self.fields.enumerated() {
            byKeyPath[KeyPathKey(field.keyPath)] = byKeyPath[KeyPathKey(field.keyPath)] ?? position
            byName[field.name] = byName[field.name] ?? position
        }
        positionByKeyPath = byKeyPath
        positionByName = byName
        fieldKinds = self.fields.map { ($0.type, $0.isOptional) }
        realFields = self.fields.filter { $0.type == .real || $0.type == .date }
        codableShape = CodableShape(
            entity: name, names: self.fields.map(\.name), types: self.fields.map(\.type),
            optional: self.fields.map(\.isOptional), relations: relations.map(\.name))
        hasRelations = !relations.isEmpty
        hasRealFieldsOrRelations = !realFields.isEmpty || !relations.isEmpty
        if !realFields.isEmpty, let fieldwise = Root.self as? any FieldwiseRecord.Type {
            realChecker = makeRealChecker(fieldwise, for: Root.self)
            realsChecker = relations.isEmpty ? makeRealsChecker(fieldwise, for: Root.self) : nil
        } else {
            realChecker = nil
            realsChecker = nil
        }
    }

    /// The primary key field.
    public var primaryKeyField: Field<Root> { fields[0] }

    /// The field called `name`, if there is one.
    public func field(named name: String) -> Field<Root>? {
        positionByName[name].map { fields[$0] }
    }

    /// The type of the field called `name` and whether it is optional, if
    /// there is one: what ``field(named:)`` tells of it, without a `Field`
    /// made (in code not specialized for the record type, each `Field` or
    /// optional `Field` handed out looks up its generic metadata, about 300
    /// instructions).
    public func fieldKind(named name: String) -> (type: FieldType, isOptional: Bool)? {
        guard let position = positionByName[name] else { return nil }
        return fieldKinds[position]
    }

    /// The position of the field called `name` in ``fields``, if there is one.
    public func position(ofField name: String) -> Int? {
        positionByName[name]
    }

    /// The field read by `keyPath`, if it is a declared field.
    public func field(for keyPath: AnyKeyPath) -> Field<Root>? {
        positionByKeyPath[KeyPathKey(keyPath)].map { fields[$0] }
    }

    /// The position in ``fields`` of the field `keyPath` reads (the primary
    /// key is 0): how a ``RecordView`` names it.
    /// - Throws: ``StorageError/Kind/invalidArgument`` when `keyPath` reads
    ///   no declared field.
    public func position(of keyPath: PartialKeyPath<Root>) throws -> Int {
        guard let position = positionByKeyPath[KeyPathKey(keyPath)] else {
            throw StorageError(
                .invalidArgument, .read, entity: name, message: "the key path \(keyPath) reads no declared field")
        }
        return position
    }

    /// The names of every `Codable` key a record of this entity has: its fields,
    /// then its relations.
    public var codingKeys: [String] { fields.map(\.name) + relations.map(\.name) }

    /// Checks the declaration for mistakes an adapter cannot store: an entity
    /// name that ``EntityName`` refuses (this entity's, its owners' or its
    /// children's), duplicate names, indexes over unknown fields, relations
    /// whose foreign key is not a field of the child.
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/schemaMismatch``.
    public func validate() throws {
        for schema in EntitySchema.tree(for: Root.self) { try EntityName.check(schema.entity) }
        var visited: Set<String> = []
        var path: [String] = []
        try validate(visited: &visited, path: &path)
    }

    /// Validates this entity and, once each, the entities its relations own;
    /// `path` is the chain of owners that led here, to refuse a relation that
    /// loops back (no backend can store a record that owns its own kind).
    func validate(visited: inout Set<String>, path: inout [String]) throws {
        if path.contains(name) {
            throw StorageError(
                .schemaMismatch, .open, entity: name,
                message: "its relations lead back to it through \((path + [name]).joined(separator: " → ")); an entity cannot own itself")
        }
        guard visited.insert(name).inserted else { return }
        path.append(name)
        defer { path.removeLast() }
        var seen = Set<String>()
        for key in codingKeys where !seen.insert(key).inserted {
            throw StorageError(.schemaMismatch, .open, entity: name, message: "the name '\(key)' is declared twice")
        }
        for index in indexes {
            if index.fields.isEmpty {
                throw StorageError(.schemaMismatch, .open, entity: name, message: "index '\(index.name)' has no fields")
            }
            for field in index.fields where self.field(named: field) == nil {
                throw StorageError(
                    .schemaMismatch, .open, entity: name,
                    message: "index '\(index.name)' names '\(field)', which is not a declared field")
            }
        }
        // A child names its parent through one foreign key and is stored under
        // it once, so it cannot tell two relations of one parent apart, nor
        // belong to a parent other than the owner it names: each child entity
        // belongs to one relation, of the entity it names as owner (a child
        // that names none is owned by the one relation that holds it).
        var relationByChild: [String: String] = [:]
        for relation in relations {
            let child = relation.childEntityName
            if let other = relationByChild.updateValue(relation.name, forKey: child) {
                throw StorageError(
                    .schemaMismatch, .open, entity: name,
                    message: "relations '\(other)' and '\(relation.name)' both hold '\(child)'; a child entity belongs to one relation of its owner")
            }
            if let owner = relation.childOwnerName, owner != name {
                throw StorageError(
                    .schemaMismatch, .open, entity: name,
                    message: "relation '\(name).\(relation.name)' holds '\(child)', which names '\(owner)' as its owner; a child entity belongs to one relation of one owner")
            }
            try relation.validateForeignKey(parent: name, visited: &visited, path: &path)
        }
        if let owner, owner.ownedRelation(for: Root.self) == nil {
            // The owner may hold this entity as another record type: say so,
            // rather than that it holds nothing.
            throw StorageError(
                .schemaMismatch, .open, entity: name,
                message: owner.relation(holding: name).map {
                    "the entity names '\(owner.entityName)' as its owner, whose relation '\($0.name)' holds '\(name)' as \($0.childType), not as \(Root.self); a child's record type must be the one its owner's relation holds"
                } ?? "the entity names '\(owner.entityName)' as its owner, which has no relation to it")
        }
    }
}

extension Record {
    /// The name of this record type's entity.
    public static var entityName: String { entity.name }

    /// The relation of this record type whose children are of type `child`, if any.
    public static func ownedRelation<C: Record>(for child: C.Type) -> (any ToManyRelation<Self>)? {
        entity.relations.first { $0.childType == child }
    }

    /// The name and child type of this record type's relation that holds the
    /// entity `childEntity`, if any (for error messages).
    static func relation(holding childEntity: String) -> (name: String, childType: any Record.Type)? {
        entity.relations.first { $0.childEntityName == childEntity }.map { ($0.name, $0.childType) }
    }
}

extension ToManyRelation {
    /// The child record type.
    public var childType: any Record.Type { Child.self }

    /// The child's entity declaration.
    public var childEntity: Entity<Child> { Child.entity }

    /// The entity name the child declares as its owner, if any.
    var childOwnerName: String? { Child.entity.owner?.entityName }

    func validateForeignKey(parent: String, visited: inout Set<String>, path: inout [String]) throws {
        guard let field = Child.entity.field(named: foreignKeyField) else {
            throw StorageError(
                .schemaMismatch, .open, entity: parent,
                message: "relation '\(name)' names foreign key '\(foreignKeyField)', which is not a field of '\(Child.entity.name)'")
        }
        guard field.keyPath == parentKey else {
            throw StorageError(
                .schemaMismatch, .open, entity: parent,
                message: "relation '\(name)': field '\(foreignKeyField)' of '\(Child.entity.name)' is not the key path given as the parent key")
        }
        try Child.entity.validate(visited: &visited, path: &path)
    }
}

/// A key path as a dictionary key.
///
/// `@unchecked Sendable`: key paths are immutable objects; `AnyKeyPath` is not
/// marked `Sendable` only because its subclasses may capture non-Sendable
/// subscript arguments, and a declared field's key path has none.
struct KeyPathKey: Hashable, @unchecked Sendable {
    let keyPath: AnyKeyPath

    init(_ keyPath: AnyKeyPath) {
        self.keyPath = keyPath
    }
}
