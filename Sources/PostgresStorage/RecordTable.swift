import DAOCore
import Foundation
import PostgresNIO

/// The records of one entity in its table: how a record becomes the
/// parameters of the upsert and a row becomes a record, and the tables of
/// its relations' children, each a ``ChildLink``.
final class RecordTable<R: Record>: Sendable {
    let entity: Entity<R>
    let sql: TableSQL
    let links: [any ChildLink<R>]
    /// How a record is written and read: by position when it is a
    /// ``FieldwiseRecord``, else through key paths and its `Decodable`.
    private let codec: RecordCodec<R>

    init(_ entity: Entity<R>, database: PostgresStore, schemas: [String: EntitySchema]) {
        self.entity = entity
        let schema = EntitySchema(entity)
        sql = TableSQL(
            schema, namespace: database.configuration.schema,
            foreignKeyField: ChildHolders.holder(of: entity.name, recorded: schemas.values)?.foreignKey)
        links = entity.relations.map { $0.link(database: database, schemas: schemas) }
        codec = RecordCodec(entity)
    }

    var hasLinks: Bool { !links.isEmpty }
    var name: String { entity.name }

    // MARK: Writing

    /// Upserts `record` with its children, at every level: a parent that
    /// was there before loses the children it no longer holds.
    func write(_ record: R, _ connection: ServerConnection) throws {
        let binds = try codec.binds(record, sql.types)
        let rows = try connection.rows(sql.upsert, binds)
        guard hasLinks else { return }
        var inserted = false
        if let row = rows.first {
            var reader = CellReader(row, entity: name)
            inserted = try reader.decode(Bool.self)
        }
        let key = binds[0]
        for link in links {
            try link.write(childrenOf: record, parentKey: record.primaryKey.storedValue, key, replacing: !inserted, connection)
        }
    }

    // MARK: Reading

    /// The records of `rows`, without their children.
    func records(_ rows: [PostgresRow]) throws -> [R] {
        var records: [R] = []
        records.reserveCapacity(rows.count)
        for row in rows { records.append(try codec.record(row, sql.types)) }
        return records
    }

    /// Reads and attaches the children of `records`, at every level.
    func attachChildren(_ records: inout [R], _ connection: ServerConnection) throws {
        guard hasLinks, !records.isEmpty else { return }
        for link in links { try link.attach(to: &records, connection) }
    }

    /// The key of each record as a bound array.
    func keyArray(_ keys: [StoredValue]) -> PostgresData? {
        let type = sql.types[0]
        var elements: [PostgresData?] = []
        elements.reserveCapacity(keys.count)
        for key in keys {
            guard let data = PostgresValue.bind(key, as: type) else { return nil }
            elements.append(data)
        }
        return PostgresData(array: elements, elementType: PostgresValue.dataType(type))
    }
}

/// A relation's children, seen from the parent's table: written with the
/// parent, read and attached to it.
protocol ChildLink<Parent>: Sendable {
    associatedtype Parent: Record
    /// Replaces the children stored under `parent` with those it holds.
    func write(
        childrenOf parent: Parent, parentKey: StoredValue, _ keyData: PostgresData, replacing: Bool,
        _ connection: ServerConnection) throws
    /// Reads the children of `parents` and sets them, in key order.
    func attach(to parents: inout [Parent], _ connection: ServerConnection) throws
}

extension ToManyRelation {
    func link(database: PostgresStore, schemas: [String: EntitySchema]) -> any ChildLink<Parent> {
        RelationLink(relation: self, table: RecordTable<Child>(Child.entity, database: database, schemas: schemas))
    }
}

struct RelationLink<Relation: ToManyRelation>: ChildLink {
    typealias Parent = Relation.Parent
    let relation: Relation
    let table: RecordTable<Relation.Child>

    func write(
        childrenOf parent: Parent, parentKey: StoredValue, _ keyData: PostgresData, replacing: Bool,
        _ connection: ServerConnection
    ) throws {
        if replacing, let delete = table.sql.deleteByParent {
            _ = try connection.rows(delete, [keyData])
        }
        let children = parent[keyPath: relation.children]
        for child in children {
            guard child[keyPath: relation.parentKey].storedValue == parentKey else {
                throw StorageError(
                    .constraint, .persist, entity: table.name,
                    message: "child \(child.primaryKey) names parent \(child[keyPath: relation.parentKey]) in '\(relation.foreignKeyField)' but is held by parent \(parent.primaryKey)")
            }
            try table.write(child, connection)
        }
    }

    func attach(to parents: inout [Parent], _ connection: ServerConnection) throws {
        guard let select = table.sql.selectByParents, let foreignKey = table.sql.foreignKey else { return }
        var keys: [StoredValue] = []
        keys.reserveCapacity(parents.count)
        for parent in parents { keys.append(parent.primaryKey.storedValue) }
        guard let array = table.keyArrayOfParent(keys, foreignKey: foreignKey) else { return }
        var children = try table.records(try connection.rows(select, [array]))
        try table.attachChildren(&children, connection)
        var byParent: [StoredValue: [Relation.Child]] = [:]
        for child in children {
            byParent[child[keyPath: relation.parentKey].storedValue, default: []].append(child)
        }
        for index in parents.indices {
            parents[index][keyPath: relation.children] = byParent[keys[index]] ?? []
        }
    }
}

extension RecordTable {
    /// Parent keys bound as an array of the foreign key's type.
    func keyArrayOfParent(_ keys: [StoredValue], foreignKey: Int) -> PostgresData? {
        let type = sql.types[foreignKey]
        var elements: [PostgresData?] = []
        elements.reserveCapacity(keys.count)
        for key in keys {
            guard let data = PostgresValue.bind(key, as: type) else { return nil }
            elements.append(data)
        }
        return PostgresData(array: elements, elementType: PostgresValue.dataType(type))
    }
}

/// Writes a record as bound parameters and reads it from a row.
struct RecordCodec<R: Record>: Sendable {
    let entity: Entity<R>
    let fieldwise: (any FieldwiseRecord.Type)?
    let positions: [String: Int]
    let relationNames: Set<String>

    init(_ entity: Entity<R>) {
        self.entity = entity
        fieldwise = R.self as? any FieldwiseRecord.Type
        positions = Dictionary(entity.fields.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        relationNames = Set(entity.relations.map(\.name))
    }

    func binds(_ record: R, _ types: [FieldType]) throws -> [PostgresData] {
        if let fieldwise { return try Self.fieldwiseBinds(fieldwise, record, types) }
        var binds: [PostgresData] = []
        binds.reserveCapacity(types.count)
        for (field, type) in zip(entity.fields, types) {
            let value = field.value(in: record)
            guard let data = PostgresValue.bind(value, as: type) else {
                throw StorageError(
                    .encoding, .persist, entity: entity.name,
                    message: "field '\(field.name)' holds \(value), which is not a \(type.rawValue)")
            }
            binds.append(data)
        }
        return binds
    }

    private static func fieldwiseBinds<F: FieldwiseRecord>(_ type: F.Type, _ record: R, _ types: [FieldType]) throws
        -> [PostgresData]
    {
        var writer = BindingWriter(types: types, capacity: types.count)
        // `F` is `R` (found by casting `R.self`): the record is read where it is, as an `F`.
        try withUnsafePointer(to: record) { pointer in
            try UnsafeRawPointer(pointer).assumingMemoryBound(to: F.self).pointee.write(fields: &writer)
        }
        guard writer.binds.count == types.count else {
            throw StorageError(
                .encoding, .persist, entity: F.entity.name,
                message: "the record wrote \(writer.binds.count) fields where its entity declares \(types.count)")
        }
        return writer.binds
    }

    func record(_ row: PostgresRow, _ types: [FieldType]) throws -> R {
        if let fieldwise {
            do {
                return try Self.fieldwiseRecord(fieldwise, row, entity.name)
            } catch let error as StorageError {
                throw error
            } catch {
                // The record's own init(fields:) refused the values.
                throw StorageError(.decoding, .read, entity: entity.name, message: "a row does not decode", underlying: error)
            }
        }
        var values: [StoredValue] = []
        values.reserveCapacity(types.count)
        for (cell, type) in zip(row, types) {
            values.append(try PostgresValue.storedValue(cell, type, entity: entity.name))
        }
        do {
            return try R(
                from: StoredValuesDecoder(values: values, positions: positions, relations: relationNames, entity: entity.name))
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.decoding, .read, entity: entity.name, message: "a row does not decode", underlying: error)
        }
    }

    private static func fieldwiseRecord<F: FieldwiseRecord>(_ type: F.Type, _ row: PostgresRow, _ entity: String) throws -> R {
        var reader = CellReader(row, entity: entity)
        let record = try F(fields: &reader)
        return withUnsafePointer(to: record) { UnsafeRawPointer($0).assumingMemoryBound(to: R.self).pointee }
    }
}
