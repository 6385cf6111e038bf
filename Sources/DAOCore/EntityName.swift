/// The one rule for entity names, applied alike by every backend when a
/// record type is declared to a store (``Entity/validate()``, which every
/// backend runs when it opens a storage) and when a migration names an entity
/// (``Migrator``: ``MigrationStep/renameEntity(_:to:)`` and the entities of
/// the general and lightweight steps).
///
/// A name is refused when it
/// - is empty;
/// - holds U+0000 (SQLite and LMDB take names as C strings, which end there);
/// - holds `#` (an LMDB entity's own databases are `<entity>#id` and
///   `<entity>#<index>`);
/// - starts with `__` (LMDB's own databases, `__metadata` and `__links`);
/// - starts with `sqlite_` in any ASCII letter case (SQLite reserves those
///   table names);
/// - starts with `_dao_` in any ASCII letter case (the SQLite adapter's
///   metadata table, `_dao_metadata`, and the names of its indexes).
///
/// Every backend refuses the same names, so that a store's record types can
/// move from one backend to another (docs/SCHEMA.md).
public enum EntityName {
    /// The prefixes an entity name cannot start with; the last two in any ASCII letter case.
    static let reservedPrefixes = ["__", "sqlite_", "_dao_"]

    /// Why `name` cannot name an entity, or `nil` when it can.
    public static func problem(with name: String) -> String? {
        let bytes = Array(name.utf8)
        if bytes.isEmpty { return "an entity name cannot be empty" }
        if bytes.contains(0) { return "an entity name cannot hold U+0000" }
        if bytes.contains(UInt8(ascii: "#")) {
            return "entity names cannot hold '#': an LMDB store names an entity's own databases '<entity>#id' and '<entity>#<index>'"
        }
        for prefix in reservedPrefixes {
            let reserved = Array(prefix.utf8)
            guard bytes.count >= reserved.count else { continue }
            // ASCII letters compared without case, as SQLite compares names.
            if zip(bytes, reserved).allSatisfy({ asciiLowercased($0) == $1 }) {
                return "entity names starting with '\(prefix)' (in any letter case) are reserved for the stores' own tables, databases and indexes"
            }
        }
        return nil
    }

    /// Checks `name` against the rule.
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` naming the entity and
    ///   what the rule refuses, in operation ``StorageError/Operation/open``.
    public static func check(_ name: String) throws {
        if let problem = problem(with: name) {
            throw StorageError(.schemaMismatch, .open, entity: name, message: "'\(name)' cannot name an entity: \(problem)")
        }
    }

    /// Whether `a` and `b` name the same table as SQLite compares names:
    /// ASCII letters in either case, every other byte as it is (so the NFC
    /// and NFD spellings of a name are two names).
    public static func sameTable(_ a: String, _ b: String) -> Bool {
        a.utf8.elementsEqual(b.utf8) { asciiLowercased($0) == asciiLowercased($1) }
    }

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }
}
