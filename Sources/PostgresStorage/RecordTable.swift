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
    /// ``FieldwiseRecord``, else through DAOCore's ``CodableFields``.
    private let codec: RecordCodec<R>
    /// The one statement that reads records by key with their children, or
    /// writes a batch of them, when the table has relations whose children
    /// hold none, each child's foreign key of the key's type; `nil` otherwise.
    let tree: TreeSQL?
    /// Whether a call of one statement tries a plain `INSERT` before the
    /// upsert, from what the table's recent calls found.
    let insertFirst = InsertFirst()

    init(_ entity: Entity<R>, database: PostgresStore, schemas: [String: EntitySchema]) {
        self.entity = entity
        let sql = TableSQL(
            EntitySchema(entity), namespace: database.configuration.schema,
            foreignKeyField: ChildHolders.holder(of: entity.name, recorded: schemas.values)?.foreignKey)
        self.sql = sql
        let links = entity.relations.map { $0.link(database: database, schemas: schemas) }
        self.links = links
        codec = RecordCodec(entity, placeholders: links.map(\.placeholder))
        let leaves = links.allSatisfy { link in
            !link.holdsChildren && link.childSQL.foreignKey.map { link.childSQL.types[$0] == sql.types[0] } == true
        }
        tree = !links.isEmpty && leaves ? TreeSQL(sql, children: links.map(\.childSQL)) : nil
    }

    var hasLinks: Bool { !links.isEmpty }
    var name: String { entity.name }

    // MARK: Writing

    /// Adds the keys of `record` and of the children it holds, at every
    /// level, to `keys` (by table); returns how many rows they are.
    func collectKeys(_ record: R, into keys: inout [ObjectIdentifier: Set<StoredValue>]) -> Int {
        keys[ObjectIdentifier(self), default: []].insert(keyIdentity(record))
        var rows = 1
        for link in links { rows += link.collectKeys(of: record, into: &keys) }
        return rows
    }

    /// Adds the keys of `records` (their own rows only) to `set`.
    func insertKeys(of records: [R], into set: inout Set<StoredValue>) {
        set.reserveCapacity(set.count + records.count)
        for record in records { set.insert(keyIdentity(record)) }
    }

    /// The identity of the record's key, as the table's primary key index sees it.
    func keyIdentity(_ record: R) -> StoredValue {
        PostgresValue.keyIdentity(record.primaryKey.storedValue, sql.types[0])
    }

    /// Sends the upsert of `records` (their keys distinct from one another,
    /// at every level) and of the children they hold, one statement a
    /// table: for a child table, the children of `parents` (their keys, as
    /// an array) that `records` no longer hold are deleted in the same
    /// statement. `alone`: the statement is the call's only one (the table
    /// has no relations), tried as a plain `INSERT` first (``InsertFirst``).
    func send(_ records: [R], parents: PostgresData?, alone: Bool = false, _ connection: ServerConnection) throws {
        var binds = try arrays(records)
        let keys = binds[0]
        if let parents, let replace = sql.replaceChildren {
            binds.append(parents)
            try connection.send(replace, binds)
        } else if alone {
            if let notice = connection.takeNotice() {
                try insertFirst.sendAlone(
                    insert: sql.insertRowsNotifying, upsert: sql.upsertRowsNotifying, binds + notice, connection)
            } else {
                try insertFirst.sendAlone(insert: sql.insertRows, upsert: sql.upsertRows, binds, connection)
            }
        } else {
            try connection.send(sql.upsertRows, binds)
        }
        guard !records.isEmpty else { return }
        for link in links { try link.send(childrenOf: records, keys: keys, connection) }
    }

    /// The column arrays of `records` (one array a column, in field order).
    /// - Throws: what encoding throws.
    func arrays(_ records: [R]) throws -> [PostgresData] {
        var arrays = ColumnArrays(types: sql.types, entity: name, rows: records.count)
        let bridge = codec.bridge()
        for record in records { try codec.append(record, to: &arrays, bridge) }
        return arrays.arrays()
    }

    /// Sends the write of `records` (their keys distinct from one another,
    /// at every level) with the children they hold as ``tree``'s one
    /// statement, the call's only one, which also carries the call's
    /// notice when it has one (``ServerConnection/takeNotice()``); tried as
    /// ``TreeSQL/insert`` first (``InsertFirst``).
    func sendTree(_ records: [R], _ tree: TreeSQL, _ connection: ServerConnection) throws {
        var binds = try arrays(records)
        for link in links { binds += try link.childArrays(of: records) }
        if let notice = connection.takeNotice() {
            try insertFirst.sendAlone(insert: tree.insertNotifying, upsert: tree.writeNotifying, binds + notice, connection)
        } else {
            try insertFirst.sendAlone(insert: tree.insert, upsert: tree.write, binds, connection)
        }
    }

    /// Sends the writes of `record` and of the children it holds one row at
    /// a time, in the order they are held, each row's children deleted
    /// before the ones it holds are written: for a record holding one key
    /// twice somewhere below it, which then stores what writing its rows
    /// one after another stores (a row written and then replaced by a later
    /// one with its key loses the children it took along).
    func sendRowByRow(_ record: R, _ connection: ServerConnection) throws {
        var arrays = ColumnArrays(types: sql.types, entity: name, rows: 1)
        try codec.append(record, to: &arrays, codec.bridge())
        let binds = arrays.arrays()
        try connection.send(sql.upsertRows, binds)
        for link in links { try link.sendRowByRow(childrenOf: record, key: binds[0], connection) }
    }

    // MARK: Reading

    /// The records of `rows` (their columns after the first `skipping`),
    /// without their children.
    func records(_ rows: [PostgresRow], skipping: Int = 0) throws -> [R] {
        var records: [R] = []
        records.reserveCapacity(rows.count)
        let bridge = codec.bridge()
        for row in rows { records.append(try codec.record(row, bridge, skipping: skipping)) }
        return records
    }

    /// The records `sql` (``TreeSQL/selectByKey`` or
    /// ``TreeSQL/selectByKeys`` of ``tree``) selects with `binds`, with
    /// their children: one statement, so one snapshot, and one wait.
    /// - Throws: what the server and decoding throw.
    func readTree(_ sql: String, _ binds: [PostgresData], _ tree: TreeSQL, _ connection: ServerConnection) throws -> [R] {
        var parents: [PostgresRow] = []
        var children = [[PostgresRow]](repeating: [], count: links.count)
        for row in try connection.rows(sql, binds) {
            var reader = CellReader(row, entity: name)
            let arm = try reader.decode(Int64.self)
            if arm == 0 {
                parents.append(row)
            } else if arm > 0, arm <= Int64(links.count) {
                children[Int(arm) - 1].append(row)
            } else {
                throw StorageError(.decoding, .read, entity: name, message: "a row of relation \(arm), which the entity does not have")
            }
        }
        var records = try self.records(parents, skipping: 1)
        guard !records.isEmpty else { return [] }
        for (index, link) in links.enumerated() {
            try link.attach(leafRows: children[index], skipping: tree.childColumns[index], to: &records)
        }
        return records
    }

    /// The records `sql` selects with `binds`, with their children: the
    /// children of the parents keyed `keys` (the keys `sql` asks for) are
    /// asked for with the records, so that both levels take one wait, which
    /// ends the transaction too when no level below needs another; deeper
    /// levels are read as ``attachChildren(_:_:)`` reads them.
    func read(_ sql: String, _ binds: [PostgresData], keys: [StoredValue], _ connection: ServerConnection) throws -> [R] {
        try connection.send(sql, binds)
        var asked: [Bool] = []
        for link in links { asked.append(try link.sendSelect(childrenOfKeys: keys, connection)) }
        let answers = try connection.collect(ending: asked.allSatisfy { $0 } && links.allSatisfy { !$0.holdsChildren })
        guard let rows = answers.first else { return [] }
        var records = try self.records(rows)
        var answer = 1
        for (link, sent) in zip(links, asked) {
            if sent {
                try link.attach(answers[answer], to: &records, connection)
                answer += 1
            } else {
                try link.attach(to: &records, connection)
            }
        }
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
    /// Adds the keys of the children `parent` holds, at every level, to
    /// `keys`; returns how many rows they are.
    func collectKeys(of parent: Parent, into keys: inout [ObjectIdentifier: Set<StoredValue>]) -> Int
    /// Sends the statement that makes the children stored under `parents`
    /// (whose keys are the array `keys`) those they hold, and those of the
    /// levels below.
    /// - Throws: ``StorageError/Kind/constraint`` for a child that names
    ///   another parent; what encoding and sending throw.
    func send(childrenOf parents: [Parent], keys: PostgresData, _ connection: ServerConnection) throws
    /// Sends the deletion of the children stored under `parent` (its key
    /// `key`, as an array of one), then the writes of those it holds, one
    /// row at a time (``RecordTable/sendRowByRow(_:_:)``).
    func sendRowByRow(childrenOf parent: Parent, key: PostgresData, _ connection: ServerConnection) throws
    /// Reads the children of `parents` and sets them, in key order.
    func attach(to parents: inout [Parent], _ connection: ServerConnection) throws
    /// Whether the children hold children of their own.
    var holdsChildren: Bool { get }
    /// The SQL of the children's table.
    var childSQL: TableSQL { get }
    /// The column arrays of the children `parents` hold (for a ``TreeSQL``
    /// write; the children hold none).
    /// - Throws: ``StorageError/Kind/constraint`` for a child that names
    ///   another parent; what encoding throws.
    func childArrays(of parents: [Parent]) throws -> [PostgresData]
    /// Sets the children of `parents` from `rows` of a ``TreeSQL`` read
    /// (their columns after the first `skipping`), in the order of `rows`;
    /// the children hold none.
    func attach(leafRows rows: [PostgresRow], skipping: Int, to parents: inout [Parent]) throws
    /// An empty array of the children, which a `Codable` parent decodes
    /// for them before they are attached.
    var placeholder: any Sendable { get }
    /// Sends the select of the children of the parents keyed `keys`;
    /// `false` (nothing sent) when a key is not of the foreign key's type.
    func sendSelect(childrenOfKeys keys: [StoredValue], _ connection: ServerConnection) throws -> Bool
    /// Sets the children of `parents` from `rows` (the answer to
    /// ``sendSelect(childrenOfKeys:_:)``), with theirs.
    func attach(_ rows: [PostgresRow], to parents: inout [Parent], _ connection: ServerConnection) throws
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

    func collectKeys(of parent: Parent, into keys: inout [ObjectIdentifier: Set<StoredValue>]) -> Int {
        let children = parent[keyPath: relation.children]
        guard !children.isEmpty else { return 0 }
        guard !table.hasLinks else {
            var rows = 0
            for child in children { rows += table.collectKeys(child, into: &keys) }
            return rows
        }
        // Children that hold none: their keys go into their table's set, found once.
        table.insertKeys(of: children, into: &keys[ObjectIdentifier(table), default: []])
        return children.count
    }

    func send(childrenOf parents: [Parent], keys: PostgresData, _ connection: ServerConnection) throws {
        var children: [Relation.Child] = []
        for parent in parents { try gather(childrenOf: parent, into: &children) }
        try table.send(children, parents: try parentKeys(keys, of: parents), connection)
    }

    func sendRowByRow(childrenOf parent: Parent, key: PostgresData, _ connection: ServerConnection) throws {
        var children: [Relation.Child] = []
        try gather(childrenOf: parent, into: &children)
        try table.send([], parents: try parentKeys(key, of: [parent]), connection)
        for child in children { try table.sendRowByRow(child, connection) }
    }

    /// Appends the children `parent` holds to `children`.
    /// - Throws: ``StorageError/Kind/constraint`` for a child that names another parent.
    private func gather(childrenOf parent: Parent, into children: inout [Relation.Child]) throws {
        let held = parent[keyPath: relation.children]
        guard !held.isEmpty else { return }
        let parentKey = parent.primaryKey.storedValue
        for child in held {
            guard child[keyPath: relation.parentKey].storedValue == parentKey else {
                throw StorageError(
                    .constraint, .persist, entity: table.name,
                    message: "child \(child.primaryKey) names parent \(child[keyPath: relation.parentKey]) in '\(relation.foreignKeyField)' but is held by parent \(parent.primaryKey)")
            }
            children.append(child)
        }
    }

    /// The parents' keys as an array of the foreign key's type: `keys` (the
    /// parents' key column) when they are one type.
    private func parentKeys(_ keys: PostgresData, of parents: [Parent]) throws -> PostgresData {
        guard let foreignKey = table.sql.foreignKey, keys.type != PostgresValue.arrayType(table.sql.types[foreignKey]) else {
            return keys
        }
        guard let converted = table.keyArrayOfParent(parents.map(\.primaryKey.storedValue), foreignKey: foreignKey) else {
            throw StorageError(
                .encoding, .persist, entity: table.name,
                message: "a parent's key is not a \(table.sql.types[foreignKey].rawValue), the type of '\(relation.foreignKeyField)'")
        }
        return converted
    }

    var holdsChildren: Bool { table.hasLinks }

    var childSQL: TableSQL { table.sql }

    func childArrays(of parents: [Parent]) throws -> [PostgresData] {
        var children: [Relation.Child] = []
        for parent in parents { try gather(childrenOf: parent, into: &children) }
        return try table.arrays(children)
    }

    func attach(leafRows rows: [PostgresRow], skipping: Int, to parents: inout [Parent]) throws {
        set(try table.records(rows, skipping: skipping), on: &parents)
    }

    var placeholder: any Sendable { [Relation.Child]() }

    func attach(to parents: inout [Parent], _ connection: ServerConnection) throws {
        var keys: [StoredValue] = []
        keys.reserveCapacity(parents.count)
        for parent in parents { keys.append(parent.primaryKey.storedValue) }
        guard try sendSelect(childrenOfKeys: keys, connection) else { return }
        try attach(try connection.collect().last ?? [], to: &parents, connection)
    }

    func sendSelect(childrenOfKeys keys: [StoredValue], _ connection: ServerConnection) throws -> Bool {
        guard let select = table.sql.selectByParents, let foreignKey = table.sql.foreignKey,
            let array = table.keyArrayOfParent(keys, foreignKey: foreignKey)
        else { return false }
        try connection.send(select, [array])
        return true
    }

    func attach(_ rows: [PostgresRow], to parents: inout [Parent], _ connection: ServerConnection) throws {
        var children = try table.records(rows)
        try table.attachChildren(&children, connection)
        set(children, on: &parents)
    }

    /// Gives each of `parents` its children among `children`, in their order.
    private func set(_ children: [Relation.Child], on parents: inout [Parent]) {
        var byParent: [StoredValue: [Relation.Child]] = [:]
        for child in children {
            byParent[child[keyPath: relation.parentKey].storedValue, default: []].append(child)
        }
        for index in parents.indices {
            parents[index][keyPath: relation.children] = byParent[parents[index].primaryKey.storedValue] ?? []
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

/// Writes a record as bound parameters and reads it from a row: by
/// position for a ``FieldwiseRecord`` (its `write(fields:)` and
/// `init(fields:)`), through DAOCore's ``CodableFields`` for a record that
/// only conforms to `Codable`, with one bridge per statement (``bridge()``).
struct RecordCodec<R: Record>: Sendable {
    let entity: Entity<R>
    let fieldwise: (any FieldwiseRecord.Type)?
    /// Per relation, in declaration order, an empty array of its children:
    /// what a `Codable` record decodes for them before they are attached.
    let placeholders: [any Sendable]

    init(_ entity: Entity<R>, placeholders: [any Sendable]) {
        self.entity = entity
        fieldwise = R.self as? any FieldwiseRecord.Type
        self.placeholders = placeholders
    }

    /// The bridge for one statement's records (it serves one call on one
    /// thread); `nil` for a ``FieldwiseRecord``, which needs none.
    func bridge() -> CodableFields? {
        fieldwise == nil ? CodableFields(entity) : nil
    }

    /// Writes `record` as the next row of `arrays`, through `bridge` (from
    /// ``bridge()``) when it is not a ``FieldwiseRecord``.
    /// - Throws: ``StorageError``: ``StorageError/Kind/schemaMismatch`` for a
    ///   key the entity does not declare, ``StorageError/Kind/encoding`` for
    ///   a value its column cannot hold or the record's own encoding error.
    func append(_ record: R, to arrays: inout ColumnArrays, _ bridge: CodableFields?) throws {
        if let fieldwise {
            try Self.fieldwiseAppend(fieldwise, record, to: &arrays)
        } else if let bridge {
            do {
                try bridge.write(record, to: &arrays)
            } catch let error as StorageError {
                throw error
            } catch {
                throw StorageError(
                    .encoding, .persist, entity: entity.name, message: "record \(record.primaryKey) could not be encoded",
                    underlying: error)
            }
        }
        try arrays.endRow()
    }

    private static func fieldwiseAppend<F: FieldwiseRecord>(_ type: F.Type, _ record: R, to arrays: inout ColumnArrays) throws {
        // `F` is `R` (found by casting `R.self`): the record is read where it is, as an `F`.
        try withUnsafePointer(to: record) { pointer in
            try UnsafeRawPointer(pointer).assumingMemoryBound(to: F.self).pointee.write(fields: &arrays)
        }
    }

    /// The record of `row` (its columns after the first `skipping`; its
    /// relations empty), read through `bridge`
    /// (from ``bridge()``) when it is not a ``FieldwiseRecord``.
    /// - Throws: ``StorageError/Kind/decoding`` when a value does not fit the
    ///   record or the record's own decoding refuses it.
    func record(_ row: PostgresRow, _ bridge: CodableFields?, skipping: Int = 0) throws -> R {
        var reader = CellReader(row, entity: entity.name, skipping: skipping)
        do {
            if let fieldwise {
                return try Self.fieldwiseRecord(fieldwise, &reader)
            }
            guard let bridge else {
                throw StorageError(.decoding, .read, entity: entity.name, message: "no bridge to read a Codable record with")
            }
            return try bridge.read(R.self, from: &reader, relations: placeholders)
        } catch let error as StorageError {
            throw error
        } catch {
            // The record's own init(fields:) or init(from:) refused the values.
            throw StorageError(.decoding, .read, entity: entity.name, message: "a row does not decode", underlying: error)
        }
    }

    private static func fieldwiseRecord<F: FieldwiseRecord>(_ type: F.Type, _ reader: inout CellReader) throws -> R {
        let record = try F(fields: &reader)
        return withUnsafePointer(to: record) { UnsafeRawPointer($0).assumingMemoryBound(to: R.self).pointee }
    }
}
