import CSQLite
import DAOCore

/// The columns of an entity's table, in the order they are selected and bound
/// (the entity's fields: primary key first), and the errors of reading them.
final class RowLayout: Sendable {
    /// The entity's name, for error messages.
    let entityName: String
    /// Field names in column order.
    let names: [String]
    /// Column index by field name.
    let indexByName: [String: Int]
    /// Whether each column's field is optional (its column may hold NULL);
    /// consulted only to make an error.
    let optional: [Bool]

    init(entityName: String, names: [String], optional: [Bool] = []) {
        self.entityName = entityName
        self.names = names
        self.optional = optional
        var indexByName: [String: Int] = [:]
        for (index, name) in names.enumerated() { indexByName[name] = index }
        self.indexByName = indexByName
    }

    /// The error of reading `column`: `message` about it, or with `message`
    /// `nil`, a NULL read for a field that is not optional.
    func columnError(_ column: Int32, _ message: String?) -> StorageError {
        let index = Int(column)
        let name = index >= 0 && index < names.count ? names[index] : "#\(index)"
        guard let message else {
            return StorageError(
                .decoding, .read, entity: entityName,
                message: "column '\(name)' is NULL but the record's field is not optional")
        }
        return StorageError(.decoding, .read, entity: entityName, message: "column '\(name)': \(message)")
    }

    /// The error of reading `column`, whose SQLite storage class `found`
    /// (NULL among them) is not the one its non-optional field is stored as:
    /// the schema check keeps such a column `NOT NULL` and of the field's
    /// type, so only a change made outside the store (text written into an
    /// integer column, which column affinity allows; an edited schema)
    /// puts it there.
    ///
    /// NULL in the column of an optional field that the record reads as
    /// required is the record's mistake, not damage: a `decoding` error.
    func storageClassError(_ column: Int32, _ found: Int32) -> StorageError {
        let index = Int(column)
        if found == SQLITE_NULL, index >= 0, index < optional.count, optional[index] {
            return columnError(column, nil)
        }
        let name = index >= 0 && index < names.count ? names[index] : "#\(index)"
        let found =
            switch found {
            case SQLITE_NULL: "NULL"
            case SQLITE_INTEGER: "an integer"
            case SQLITE_FLOAT: "a real"
            case SQLITE_TEXT: "text"
            case SQLITE_BLOB: "bytes"
            default: "storage class \(found)"
            }
        return StorageError(
            .corrupt, .read, entity: entityName,
            message: "column '\(name)' holds \(found), which its field's type is never stored as: the row was changed outside the store")
    }
}
