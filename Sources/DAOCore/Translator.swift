/// Turns plain objects into records and back. One translator per plain type
/// serves every adapter; a parent's translator uses its children's translator.
///
/// Both directions are total over valid input and throw on invalid input (an
/// out-of-range value, an unknown enum case) rather than invent a value.
///
/// A translator is a pure mapping: the DAO may call it inside the storage's
/// transactions (each record written as it is translated, each record read
/// translated as it comes), so it must not read or write the store.
public protocol Translator<PlainObject, Record>: Sendable {
    /// The app's type.
    associatedtype PlainObject: Plain
    /// The stored type.
    associatedtype Record: DAOCore.Record

    /// The record that stores `plain`.
    /// - Throws: any error; the ``DAO`` wraps it in a ``StorageError`` of kind
    ///   ``StorageError/Kind/translation``.
    func record(from plain: PlainObject) throws -> Record

    /// The plain object a stored `record` stands for.
    /// - Throws: any error; the ``DAO`` wraps it in a ``StorageError`` of kind
    ///   ``StorageError/Kind/translation``.
    func plain(from record: Record) throws -> PlainObject
}
