import DAOCore

/// The foreign key a child table holds to its parent: `column` references
/// `parentTable(parentColumn)` with `ON DELETE CASCADE`.
struct ForeignKey: Sendable, Hashable {
    let column: String
    let parentTable: String
    let parentColumn: String
}

/// The SQL column type of a field type.
func sqlType(_ type: FieldType) -> String {
    switch type {
    case .integer, .bool: "INTEGER"
    case .real, .date: "REAL"
    case .text: "TEXT"
    case .blob: "BLOB"
    }
}

extension Table {
    /// `CREATE TABLE` for the entity under `tableName`: one typed column per
    /// field, `NOT NULL` for non-optionals, the primary key (an integer key is
    /// `INTEGER PRIMARY KEY`, SQLite's rowid), and the foreign key if any.
    func createTableSQL(named tableName: String, foreignKey: ForeignKey?) -> String {
        var definitions: [String] = []
        for (index, field) in entity.fields.enumerated() {
            var column = "\(quoted(field.name)) \(sqlType(field.type))"
            if index == 0 {
                column += " NOT NULL PRIMARY KEY"
            } else if !field.isOptional {
                column += " NOT NULL"
            }
            definitions.append(column)
        }
        if let foreignKey {
            definitions.append(
                "FOREIGN KEY (\(quoted(foreignKey.column))) REFERENCES \(quoted(foreignKey.parentTable))"
                    + " (\(quoted(foreignKey.parentColumn))) ON DELETE CASCADE")
        }
        return "CREATE TABLE \(quoted(tableName)) (\(definitions.joined(separator: ", ")))"
    }

    /// Creates the table, its indexes and its relations' child tables when they
    /// are missing, and checks existing ones against the declaration. Runs inside
    /// the caller's transaction.
    ///
    /// A child table first created through its own storage has no foreign key
    /// yet; when its parent's storage is opened, the table is rebuilt with it
    /// (SQLite cannot add a foreign key in place), which fails with
    /// ``StorageError/Kind/constraint`` if a stored child has no parent.
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` when an existing table's
    ///   columns differ from the entity's fields, or when the entity's relations
    ///   loop back to it.
    func ensureSchema(_ connection: Connection, foreignKey: ForeignKey?) throws {
        // Checked before `validate()`, which itself recurses into the children's
        // declarations and would not come back from a loop.
        if let cycle {
            throw StorageError(
                .schemaMismatch, .open, entity: entity.name,
                message: "'\(entity.name)' cannot be stored in SQLite: \(cycle)")
        }
        try entity.validate()
        let existing = try columns(of: name, connection)
        if existing.isEmpty {
            try connection.execute(createTableSQL(named: name, foreignKey: foreignKey))
        } else {
            try check(existing)
            if let foreignKey, try !hasForeignKey(foreignKey, connection) {
                try rebuild(with: foreignKey, connection)
            }
        }
        for index in entity.indexes {
            let columns = index.fields.map(quoted).joined(separator: ", ")
            try connection.execute("CREATE INDEX IF NOT EXISTS \(quoted(index.name)) ON \(quoted(name)) (\(columns))")
        }
        // SQLite looks children up by their foreign key on every parent delete
        // (ON DELETE CASCADE) and this adapter reads them by it: make sure an
        // index leads with it.
        if let foreignKey, !entity.indexes.contains(where: { $0.fields.first == foreignKey.column }) {
            try connection.execute(
                "CREATE INDEX IF NOT EXISTS \(quoted("\(name)_by_\(foreignKey.column)")) ON \(quoted(name)) (\(quoted(foreignKey.column)))"
            )
        }
        for link in links {
            try link.ensureSchema(connection)
        }
    }

    private struct Column: Equatable {
        var name: String
        var type: String
        var notNull: Bool
        var primaryKey: Bool
    }

    private func columns(of table: String, _ connection: Connection) throws -> [Column] {
        let statement = try Statement(db: connection.handle, sql: "PRAGMA table_info(\(quoted(table)))", persistent: false)
        var columns: [Column] = []
        while try statement.step() {
            columns.append(
                Column(
                    name: statement.text(1) ?? "", type: (statement.text(2) ?? "").uppercased(),
                    notNull: statement.int64(3) != 0, primaryKey: statement.int64(5) != 0))
        }
        return columns
    }

    private func check(_ existing: [Column]) throws {
        let expected = entity.fields.enumerated().map { index, field in
            Column(name: field.name, type: sqlType(field.type), notNull: index == 0 || !field.isOptional, primaryKey: index == 0)
        }
        guard existing != expected else { return }
        func describe(_ columns: [Column]) -> String {
            columns.map { "\($0.name) \($0.type)\($0.notNull ? " NOT NULL" : "")\($0.primaryKey ? " PRIMARY KEY" : "")" }
                .joined(separator: ", ")
        }
        throw StorageError(
            .schemaMismatch, .open, entity: entity.name,
            message: "table '\(name)' has columns (\(describe(existing))) but the record declares (\(describe(expected)))")
    }

    private func hasForeignKey(_ foreignKey: ForeignKey, _ connection: Connection) throws -> Bool {
        let statement = try Statement(
            db: connection.handle, sql: "PRAGMA foreign_key_list(\(quoted(name)))", persistent: false)
        while try statement.step() {
            // id, seq, table, from, to, on_update, on_delete, match
            if statement.text(2) == foreignKey.parentTable, statement.text(3) == foreignKey.column,
                statement.text(4) == foreignKey.parentColumn,
                statement.text(6)?.uppercased() == "CASCADE"
            {
                return true
            }
        }
        return false
    }

    private func rebuild(with foreignKey: ForeignKey, _ connection: Connection) throws {
        let temporary = "\(name)__rebuild"
        try connection.execute(createTableSQL(named: temporary, foreignKey: foreignKey))
        try connection.execute("INSERT INTO \(quoted(temporary)) (\(selectList)) SELECT \(selectList) FROM \(quoted(name))")
        try connection.execute("DROP TABLE \(quoted(name))")
        try connection.execute("ALTER TABLE \(quoted(temporary)) RENAME TO \(quoted(name))")
    }
}
