import DAOCore

/// The names under which this adapter keeps an entity's indexes in SQLite.
///
/// SQLite index names are global to the database (and share one namespace
/// with its tables), while an entity's index names are its own: two entities
/// may both declare an index `by_name`. So the SQLite name of an index is
/// derived from its table's name and its declared name:
/// `_dao_ix_<table>__<index>`, and the index SQLite needs on a child's foreign
/// key is `_dao_fk_<table>`, each name written in an escaped form that holds
/// only `a`–`z`, `0`–`9` and `_`: a lowercase ASCII letter or a digit stands for
/// itself, every other UTF-8 byte (an uppercase letter, `_`, a byte of a
/// non-ASCII character) is `_` and its two lowercase hex digits. The form has
/// no uppercase letter, so SQLite's case-insensitive comparison of
/// identifiers cannot take two of them for one; it never holds `__`, and
/// never ends with `_`, so the first `__` after the prefix parts table from
/// index, and two (table, index) pairs never get one name, whether they
/// differ in case only or are one text in NFC and NFD (distinct bytes,
/// distinct tables to SQLite). Entity names starting with `_dao_` are
/// refused on every backend (``EntityName``), so no table takes one of these
/// names either.
///
/// Stores written before these names kept each index under its declared name
/// and the foreign-key index under `<table>_by_<column>`; opening such a
/// store (or migrating it) replaces those indexes of the tables it sets up by
/// the derived names, in the transaction that sets them up (see
/// ``IndexSet/reconcile(legacy:connection:apply:)``, which tells them from
/// an index of the same name the client made).
enum IndexNames {
    /// The prefix of every index name this adapter derives.
    static let prefix = "_dao_"
    /// The prefix of a declared index's SQLite name.
    static let declaredPrefix = "_dao_ix_"
    /// The prefix of a foreign-key index's SQLite name.
    static let foreignKeyPrefix = "_dao_fk_"

    /// The SQLite name of the index `index` declared for `table`.
    static func declared(table: String, index: String) -> String {
        var name = declaredPrefix
        escape(table, into: &name)
        name += "__"
        escape(index, into: &name)
        return name
    }

    /// The SQLite name of the index on `table`'s foreign key to its owner.
    static func foreignKey(table: String) -> String {
        var name = foreignKeyPrefix
        escape(table, into: &name)
        return name
    }

    /// Whether `name` has the form of a name this adapter derives (either
    /// prefix): an index under another name, `_dao_` prefixed or not, was
    /// not made by this adapter.
    static func isDerived(_ name: String) -> Bool {
        name.utf8.starts(with: declaredPrefix.utf8) || name.utf8.starts(with: foreignKeyPrefix.utf8)
    }

    /// The name the index had before names were derived per table.
    static func legacyForeignKey(table: String, column: String) -> String {
        "\(table)_by_\(column)"
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends `text` to `name` in the escaped form described above.
    static func escape(_ text: String, into name: inout String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                bytes.append(byte)
            default:
                bytes.append(UInt8(ascii: "_"))
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        name += String(decoding: bytes, as: UTF8.self)
    }
}

/// An index as this adapter made it before index names were derived per
/// table: its name (a declared index's name, or `<table>_by_<column>` for the
/// foreign key) and its columns.
struct LegacyIndex {
    let name: String
    let columns: [String]
}

/// The indexes a table should have: its declared ones and, for a child whose
/// declared indexes do not lead with its foreign key, one on the foreign key
/// (SQLite looks children up by it on every parent delete, `ON DELETE
/// CASCADE`, and this adapter reads them by it).
struct IndexSet {
    /// One index: its SQLite name and its columns.
    struct Definition {
        let name: String
        let columns: [String]
    }

    let table: String
    let definitions: [Definition]

    init(table: String, declared: [(name: String, fields: [String])], foreignKeyColumn: String?) {
        self.table = table
        var definitions = declared.map {
            Definition(name: IndexNames.declared(table: table, index: $0.name), columns: $0.fields)
        }
        if let column = foreignKeyColumn, !declared.contains(where: { $0.fields.first == column }) {
            definitions.append(Definition(name: IndexNames.foreignKey(table: table), columns: [column]))
        }
        self.definitions = definitions
    }

    /// Brings the table's indexes to ``definitions``: drops the indexes of the
    /// table under this adapter's prefixes (`_dao_ix_`, `_dao_fk_`) that are not among them (an index
    /// dropped by a migration, or one that kept the name of the table's
    /// former name), drops the indexes this adapter made before names were
    /// derived per table (`legacy`), and creates what is missing. An index of
    /// the table under any other name was not made by this adapter and stays.
    /// With `apply` false, nothing is changed.
    ///
    /// An index under a name of `legacy` counts as the former adapter's only
    /// while the table has no index under a derived name yet (once a table's
    /// indexes were given the derived names, a declared name or
    /// `<table>_by_<column>` is free for the client's own index), and only
    /// when it is exactly what the former adapter wrote under that name: a
    /// plain `CREATE INDEX` (not unique, not partial) over the expected
    /// columns in order, ascending, in the default collation. Any other index
    /// of that name was made by someone else, and stays.
    ///
    /// - Returns: whether something was (or, with `apply` false, would be)
    ///   dropped or created.
    func reconcile(legacy: [LegacyIndex], connection: Connection, apply: Bool) throws -> Bool {
        let existing = try Self.indexes(of: table, connection)
        let isConverted = existing.contains { IndexNames.isDerived($0) }
        var drops: [String] = []
        var present: Set<[UInt8]> = []
        for name in existing {
            let bytes = Array(name.utf8)
            if definitions.contains(where: { Array($0.name.utf8) == bytes }) {
                present.insert(bytes)
            } else if IndexNames.isDerived(name) {
                drops.append(name)
            } else if !isConverted,
                let former = legacy.first(where: { Array($0.name.utf8) == bytes }),
                try Self.isPlainIndex(name, of: table, over: former.columns, connection)
            {
                drops.append(name)
            }
        }
        let creates = definitions.filter { !present.contains(Array($0.name.utf8)) }
        guard !drops.isEmpty || !creates.isEmpty else { return false }
        guard apply else { return true }
        for name in drops {
            try connection.execute("DROP INDEX \(quoted(name))")
        }
        for definition in creates {
            // A name derived from this table's name, held by another table's
            // index: that table was renamed from this one and kept it.
            if try Self.indexExists(definition.name, connection) {
                try connection.execute("DROP INDEX \(quoted(definition.name))")
            }
            let columns = definition.columns.map(quoted).joined(separator: ", ")
            try connection.execute("CREATE INDEX \(quoted(definition.name)) ON \(quoted(table)) (\(columns))")
        }
        return true
    }

    /// Whether index `name` of `table` is a plain `CREATE INDEX name ON
    /// table (columns)`: not unique, not partial, over exactly `columns` in
    /// order, each ascending in the default (`BINARY`) collation.
    static func isPlainIndex(_ name: String, of table: String, over columns: [String], _ connection: Connection) throws
        -> Bool
    {
        // https://sqlite.org/pragma.html#pragma_index_list: seq, name, unique, origin, partial
        let list = try connection.oneOffStatement("PRAGMA index_list(\(quoted(table)))")
        var isListed = false
        while try list.step() {
            guard list.text(1).map({ Array($0.utf8) }) == Array(name.utf8) else { continue }
            guard list.int64(2) == 0, list.int64(4) == 0 else { return false }
            isListed = true
        }
        guard isListed else { return false }
        // https://sqlite.org/pragma.html#pragma_index_xinfo: seqno, cid, name, desc, coll, key
        let info = try connection.oneOffStatement("PRAGMA index_xinfo(\(quoted(name)))")
        var keys: [String] = []
        while try info.step() {
            guard info.int64(5) != 0 else { continue }
            guard info.int64(1) >= 0, info.int64(3) == 0, info.text(4) == "BINARY", let column = info.text(2) else {
                return false
            }
            keys.append(column)
        }
        return keys.map { Array($0.utf8) } == columns.map { Array($0.utf8) }
    }

    /// The names of the indexes made by `CREATE INDEX` on `table`.
    static func indexes(of table: String, _ connection: Connection) throws -> [String] {
        let statement = try connection.oneOffStatement(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?1 AND sql IS NOT NULL")
        try statement.bind(table, at: 1)
        var names: [String] = []
        while try statement.step() {
            if let name = statement.text(0) { names.append(name) }
        }
        return names
    }

    private static func indexExists(_ name: String, _ connection: Connection) throws -> Bool {
        let statement = try connection.oneOffStatement("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?1")
        try statement.bind(name, at: 1)
        return try statement.step()
    }
}
