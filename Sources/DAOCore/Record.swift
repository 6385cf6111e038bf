/// The stored shape of a plain object: a `Codable` struct that declares its
/// ``Entity`` (name, primary key, fields, indexes and to-many relations), so that
/// every adapter can store it the way its engine does best.
///
/// ```swift
/// struct NoteRecord: Record {
///     typealias PrimaryKey = Int64
///     var id: Int64
///     var text: String
///
///     static let entity = Entity<NoteRecord>(
///         "notes",
///         primaryKey: "id", \.id,
///         fields: [Field("text", \.text)]
///     )
/// }
/// ```
///
/// The `Codable` keys of a record are exactly its declared fields plus its
/// relations; adapters reject a record whose keys differ with a
/// ``StorageError/Kind/schemaMismatch`` error rather than drop data. Every
/// store also records the entity's ``EntitySchema`` when it is first opened
/// and refuses, with the same error naming every difference, a record type
/// whose declaration no longer matches what is stored (docs/SCHEMA.md).
public protocol Record: Codable, Sendable {
    /// The type of the primary key.
    associatedtype PrimaryKey: PrimaryKeyValue
    /// The declaration of how this record is stored.
    static var entity: Entity<Self> { get }
}

extension Record {
    /// The record's primary key, read through ``Entity/primaryKeyPath``.
    @inlinable
    public var primaryKey: PrimaryKey { self[keyPath: Self.entity.primaryKeyPath] }
}
