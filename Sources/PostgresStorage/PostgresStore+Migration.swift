import DAOCore
import Foundation
import PostgresNIO

extension PostgresStore: MigratableStore {
    /// Runs a migration's work in one transaction: PostgreSQL's DDL is
    /// transactional, so a failed migration leaves every table, row and
    /// recorded schema as it was. Afterwards every pooled connection is
    /// retired (their prepared statements name the tables as they were).
    ///
    /// - Throws: ``StorageError/Kind/invalidArgument`` when the store has
    ///   handed out a storage already (migrate first); what `body` or the
    ///   commit throws.
    public func withMigrationTransaction<T>(_ body: (any MigrationTransaction) throws -> T) throws -> T {
        guard !hasHandedOutStorage else {
            throw StorageError(
                .invalidArgument, .open, path: configuration.description,
                message: "migrate before asking the store for a storage")
        }
        defer { pool.retireConnections() }
        return try transaction(.open, entity: nil) { connection in
            _ = try connection.rows("SELECT pg_advisory_xact_lock(hashtext($1))", [PostgresValue.text(configuration.schema)])
            return try body(PostgresMigrationTransaction(database: self, connection: connection))
        }
    }
}

/// One migration's access to the tables, inside its transaction. Every
/// statement runs unprepared: the tables change under it.
final class PostgresMigrationTransaction: MigrationTransaction {
    let database: PostgresStore
    let connection: ServerConnection

    init(database: PostgresStore, connection: ServerConnection) {
        self.database = database
        self.connection = connection
    }

    private func table(_ schema: EntitySchema, in schemas: [String: EntitySchema]) -> TableSQL {
        TableSQL(
            schema, namespace: database.configuration.schema,
            foreignKeyField: ChildHolders.holder(of: schema.entity, recorded: schemas.values)?.foreignKey)
    }

    private func holderReference(of entity: String, in schemas: [String: EntitySchema]) -> (table: String, key: String)? {
        guard let holder = ChildHolders.holder(of: entity, recorded: schemas.values),
            let key = schemas[holder.entity]?.primaryKey
        else { return nil }
        return (database.namespace + "." + identifier(holder.entity), identifier(key))
    }

    func recordedSchemas() throws -> [String: EntitySchema] {
        try database.recordedSchemas(connection)
    }

    func metadata(_ key: String) throws -> [UInt8]? {
        try database.metadata(key, connection)
    }

    func setMetadata(_ key: String, _ value: [UInt8]) throws {
        try database.setMetadata(key, value, connection)
    }

    func rows(of schema: EntitySchema, in schemas: [String: EntitySchema]) throws -> [[StoredValue]] {
        let table = table(schema, in: schemas)
        let rows = try connection.once(table.select(where: nil, orderBy: [], limitParameter: nil))
        return try rows.map { row in
            try zip(row, table.types).map { cell, type in try PostgresValue.storedValue(cell, type, entity: schema.entity) }
        }
    }

    func rewrite(from old: EntitySchema?, to new: EntitySchema, rows: [[StoredValue]], in schemas: [String: EntitySchema])
        throws
    {
        if let old {
            _ = try connection.once("DROP TABLE IF EXISTS \(database.namespace).\(identifier(old.entity)) CASCADE")
            if old.entity != new.entity { try database.removeMetadata(StoreMetadataKey.schema(old.entity), connection) }
        }
        _ = try connection.once("DROP TABLE IF EXISTS \(database.namespace).\(identifier(new.entity)) CASCADE")
        let table = table(new, in: schemas)
        _ = try connection.once(table.createTable(holder: holderReference(of: new.entity, in: schemas)))
        for index in table.createIndexes() { _ = try connection.once(index) }
        // The rows go back a batch at a time, one statement each: a column's
        // values as one array, `unnest`ed (as a persist writes them).
        let arrays = table.types.enumerated().map { "$\($0 + 1)::\(PostgresValue.sqlArrayType($1))" }
        let insert = "INSERT INTO \(table.qualified) (\(table.selectList)) SELECT * FROM unnest(\(arrays.joined(separator: ", ")))"
        let bound = max(1, database.configuration.rowsPerStatement)
        var start = rows.startIndex
        while start < rows.endIndex {
            let end = min(start + bound, rows.endIndex)
            var columns = ColumnArrays(types: table.types, entity: new.entity, rows: end - start)
            for row in rows[start..<end] {
                for value in row { try columns.write(value) }
                do {
                    try columns.endRow()
                } catch let error as StorageError {
                    throw StorageError(
                        .invalidArgument, .open, entity: new.entity,
                        message: "a migrated row does not fit the new schema: \(error.message)")
                }
            }
            _ = try connection.once(insert, columns.arrays())
            start = end
        }
        try database.setMetadata(StoreMetadataKey.schema(new.entity), new.encoded(), connection)
        // The children's foreign keys to this table went with the old one.
        for child in new.relations.map(\.child) {
            guard let childSchema = schemas[child], try database.tableExists(child, connection) else { continue }
            let childTable = self.table(childSchema, in: schemas)
            _ = try connection.once(
                "ALTER TABLE \(childTable.qualified) DROP CONSTRAINT IF EXISTS \(childTable.constraintName)")
            if let holder = holderReference(of: child, in: schemas), let add = childTable.addForeignKey(holder: holder) {
                _ = try connection.once(add)
            }
        }
    }

    func record(_ schema: EntitySchema) throws {
        try database.setMetadata(StoreMetadataKey.schema(schema.entity), schema.encoded(), connection)
    }

    /// Carries out in place, with `ALTER TABLE`, what keeps the rows where
    /// they are: a field added last (its value set by one `UPDATE`, then
    /// `NOT NULL` when the field is not optional), dropped or renamed, an
    /// index added or dropped. A renamed entity is rewritten: the names of
    /// its indexes and its foreign key derive from the entity's.
    func alter(
        _ change: NativeAlteration, from old: EntitySchema, to new: EntitySchema, in schemas: [String: EntitySchema]
    ) throws -> Bool {
        let table = table(new, in: schemas)
        switch change {
        case .addField(let field, let value):
            let column = identifier(field.name)
            _ = try connection.once(
                "ALTER TABLE \(table.qualified) ADD COLUMN \(column) \(PostgresValue.columnType(field.type))")
            if value != .null {
                guard let data = PostgresValue.bind(value, as: field.type) else {
                    throw StorageError(
                        .invalidArgument, .open, entity: new.entity,
                        message: "field '\(field.name)' cannot hold \(value) as \(field.type.rawValue)")
                }
                _ = try connection.once("UPDATE \(table.qualified) SET \(column) = $1", [data])
            }
            if !field.optional {
                _ = try connection.once("ALTER TABLE \(table.qualified) ALTER COLUMN \(column) SET NOT NULL")
            }
        case .dropField(let name):
            // Indexes on the column go with it, as the new schema declares.
            _ = try connection.once("ALTER TABLE \(table.qualified) DROP COLUMN \(identifier(name))")
        case .renameField(let from, let to):
            _ = try connection.once(
                "ALTER TABLE \(table.qualified) RENAME COLUMN \(identifier(from)) TO \(identifier(to))")
            // The index on a foreign key is named after its column.
            if let foreignKey = table.foreignKey, new.fields[foreignKey].name == to {
                let oldName = TableSQL.foreignKeyIndexName(from, of: new.entity)
                let newName = TableSQL.foreignKeyIndexName(to, of: new.entity)
                _ = try connection.once("ALTER INDEX IF EXISTS \(database.namespace).\(oldName) RENAME TO \(newName)")
            }
        case .addIndex(let index):
            _ = try connection.once(table.createIndex(index))
        case .dropIndex(let index):
            _ = try connection.once(
                "DROP INDEX IF EXISTS \(database.namespace).\(TableSQL.indexName(index.name, of: old.entity))")
        case .renameEntity:
            return false
        }
        // A declared index that starts with the foreign key's column serves
        // it: the foreign key's own index follows the indexes now declared.
        if let statement = table.reconcileForeignKeyIndex { _ = try connection.once(statement) }
        try database.setMetadata(StoreMetadataKey.schema(new.entity), new.encoded(), connection)
        return true
    }

    func drop(_ schema: EntitySchema, in schemas: [String: EntitySchema]) throws {
        _ = try connection.once("DROP TABLE IF EXISTS \(database.namespace).\(identifier(schema.entity)) CASCADE")
        try database.removeMetadata(StoreMetadataKey.schema(schema.entity), connection)
    }
}
