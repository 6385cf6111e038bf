import DAOCore

/// The columns of an entity's table, in the order they are selected and bound
/// (the entity's fields: primary key first), and its relation keys.
final class RowLayout: Sendable {
    /// The entity's name, for error messages.
    let entityName: String
    /// Field names in column order.
    let names: [String]
    /// Column index by field name.
    let indexByName: [String: Int]
    /// An empty children array (`[Child]()`) by relation name: what a row's
    /// decoder gives for a relation key before the children are attached.
    let relationPlaceholders: [String: any Sendable]

    init(entityName: String, names: [String], relationPlaceholders: [String: any Sendable]) {
        self.entityName = entityName
        self.names = names
        var indexByName: [String: Int] = [:]
        for (index, name) in names.enumerated() { indexByName[name] = index }
        self.indexByName = indexByName
        self.relationPlaceholders = relationPlaceholders
    }

    /// The column of `name`, guessing `guess` first: synthesized `Codable` visits
    /// keys in declaration order, which is column order, so the guess is almost
    /// always right and the dictionary is rarely consulted.
    @inline(__always)
    func column(of name: String, guess: Int) -> Int? {
        if guess < names.count, names[guess] == name { return guess }
        return indexByName[name]
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

    func unknownKey(_ name: String, _ operation: StorageError.Operation) -> StorageError {
        StorageError(
            .schemaMismatch, operation, entity: entityName,
            message: "the record's Codable key '\(name)' is not a declared field or relation of '\(entityName)'")
    }
}
