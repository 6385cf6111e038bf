import DAOCore

/// Makes a struct a ``Record`` stored field by field: its ``Entity`` is derived
/// from its stored properties, and it adopts ``FieldwiseRecord`` with
/// `init(fields:)` and `write(fields:)` generated in the entity's field order,
/// so adapters read and write it by position instead of through `Codable`.
///
/// ```swift
/// @StoredRecord("notes", indexes: [Index("notes_by_pinned", on: ["pinned"])])
/// struct NoteRecord {
///     var id: Int64
///     var text: String
///     var pinned: Bool
/// }
/// ```
///
/// expands to the declaration a hand-written record spells out:
///
/// ```swift
/// extension NoteRecord: Record, FieldwiseRecord {
///     typealias PrimaryKey = Int64
///     static let entity = Entity<NoteRecord>(
///         "notes", primaryKey: "id", \.id,
///         fields: [Field("text", \.text), Field("pinned", \.pinned)],
///         indexes: [Index("notes_by_pinned", on: ["pinned"])])
///     init(fields: inout some FieldReader) throws { … }   // id, text, pinned
///     func write(fields: inout some FieldWriter) throws { … }
/// }
/// ```
///
/// - The primary key is the stored property named `primaryKey` (`"id"` unless
///   given); the other stored properties are the fields, in declaration order,
///   each named after its property (its `Codable` key).
/// - An array of child records marked ``Children(foreignKey:)`` is a to-many
///   relation; the child declares `ownedBy:` its parent type.
/// - Computed and `static` properties are not stored. Every stored property
///   needs a type annotation; a lazy property, a `let` with an initial value, a
///   custom `CodingKeys`, and a type that cannot be one field (an array that is
///   not `@Children`, a dictionary, a tuple, a function, `Any`, an existential)
///   are compile-time errors. Any other type must conform to ``FieldValue``
///   (the compiler says so at the attribute otherwise).
///
/// - Parameters:
///   - name: the entity's name: a table, a named database, a document.
///   - primaryKey: the name of the stored property that is the primary key.
///   - indexes: the indexes to maintain, over field (property) names.
///   - ownedBy: the record type that owns records of this entity through its
///     `@Children` relation, if any.
@attached(
    extension,
    conformances: Record, FieldwiseRecord,
    names: named(PrimaryKey), named(entity), named(init(fields:)), named(write(fields:)))
public macro StoredRecord(
    _ name: String,
    primaryKey: String = "id",
    indexes: [Index] = [],
    ownedBy: (any Record.Type)? = nil
) = #externalMacro(module: "DAOMacrosPlugin", type: "StoredRecordMacro")

/// Marks an array of child records as a to-many relation of a
/// ``StoredRecord(_:primaryKey:indexes:ownedBy:)`` record: each child names
/// its parent's primary key in its field `foreignKey`.
///
/// ```swift
/// @Children(foreignKey: "authorId") var books: [BookRecord]
/// ```
@attached(peer)
public macro Children(foreignKey: String) = #externalMacro(module: "DAOMacrosPlugin", type: "ChildrenMacro")
