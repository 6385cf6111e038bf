/// An immutable value an app holds: what goes into a ``DAO`` and comes out of it.
///
/// ```swift
/// struct Note: Plain {
///     let uniqueId: Int64
///     let text: String
/// }
/// ```
public protocol Plain: Sendable, Equatable {
    /// The type of the identity; the record's primary key has the same type.
    associatedtype ID: PrimaryKeyValue
    /// The identity of the object, unique among objects of its type.
    var uniqueId: ID { get }
}
