import DAOCore
import Synchronization

/// A relation seen from its parent's table: how to create, write and read the
/// child rows.
protocol ChildLink<Parent>: Sendable {
    associatedtype Parent: Record
    /// The relation's name (the parent's `Codable` key).
    var name: String { get }
    /// An empty children array, what the parent's row decodes to before the
    /// children are attached.
    var placeholder: any Sendable { get }
    /// Why the child's table cannot be set up (a relation loop), if it cannot.
    var cycle: String? { get }
    /// ``SQLiteTable/treeNames`` of the child's table.
    var tableNames: [String] { get }
    func ensureSchema(_ session: SchemaSession) throws
    /// Deletes every row of the child table and of its own children, deepest
    /// first: what erasing every parent cascades to, without the cascade
    /// looking up each parent's children. Erase-all runs it with foreign keys
    /// off (``SQLiteRecordStorage/erase(where:)``), so that SQLite frees each
    /// table's pages whole; with them enforced it deletes row by row.
    func eraseAllChildren(_ connection: Connection) throws
    /// The `DELETE`s of the children of the parents whose keys `parentKeys`
    /// gives (SQL: a parameter or a `SELECT` of keys) and of their own
    /// children, deepest first: what deleting those parents cascades to,
    /// without the cascade (SQLite runs a parent's `ON DELETE CASCADE` as
    /// a trigger program, about 14% slower per child on the workload's
    /// erase-by-id than a plain `DELETE` of the same rows).
    func deletes(ofChildrenOf parentKeys: String) -> [String]
    func makeWriter(_ connection: Connection) throws -> any ChildWriter<Parent>
    /// Reads the children of `parents` and sets them in place.
    func attach(to parents: UnsafeMutableBufferPointer<Parent>, all: Bool, _ connection: Connection) throws
}

/// The link of one ``ToManyRelation``: the child table with its foreign key.
final class RelationLink<Rel: ToManyRelation>: ChildLink {
    typealias Parent = Rel.Parent
    typealias Child = Rel.Child

    let relation: Rel
    let child: SQLiteTable<Child>
    let foreignKey: ForeignKey
    let childKeysSQL: SQLText
    let childrenOfParentSQL: SQLText
    /// The child table's column holding the parent key.
    let foreignKeyColumn: Int32
    /// How many children the last read of one parent's children found: room
    /// for as many is made for the next.
    private let lastChildCount = Atomic<Int>(0)
    /// ``childrenOfParentsSQL(selectList:table:foreignKey:count:)`` for each of
    /// ``batchSizes``, in that order.
    let childrenOfParentsSQL: [SQLText]

    init(_ relation: Rel, foreignKey: ForeignKey, owners: [String]) {
        self.relation = relation
        self.foreignKey = foreignKey
        self.child = SQLiteTable(Child.entity, foreignKey: foreignKey, owners: owners)
        // Entity.validate (run before any statement) guarantees the field exists.
        self.foreignKeyColumn = Int32(child.layout.indexByName[foreignKey.column] ?? 0)
        let table = quoted(child.name)
        let key = quoted(Child.entity.primaryKeyField.name)
        let fk = quoted(foreignKey.column)
        childKeysSQL = SQLText(sql: "SELECT \(key) FROM \(table) WHERE \(fk) = ?1")
        // No `ORDER BY`: ``TableReader/rows(_:keyColumn:keys:inKeyOrder:)`` puts
        // the rows in key order (see there why).
        childrenOfParentSQL = SQLText(sql: "SELECT \(child.selectList) FROM \(table) WHERE \(fk) = ?1")
        let (selectList, childName) = (child.selectList, child.name)
        childrenOfParentsSQL = Self.batchSizes.map {
            SQLText(
                sql: Self.childrenOfParentsSQL(
                    selectList: selectList, table: childName, foreignKey: foreignKey.column, count: $0))
        }
    }

    var name: String { relation.name }
    var placeholder: any Sendable { [Child]() }
    var cycle: String? { child.cycle }
    var tableNames: [String] { child.treeNames }

    func ensureSchema(_ session: SchemaSession) throws {
        try child.ensureSchema(session, foreignKey: foreignKey)
    }

    func deletes(ofChildrenOf parentKeys: String) -> [String] {
        let table = quoted(child.name)
        let condition = "\(quoted(foreignKey.column)) IN (\(parentKeys))"
        let childKeys = "SELECT \(quoted(Child.entity.primaryKeyField.name)) FROM \(table) WHERE \(condition)"
        return child.links.flatMap { $0.deletes(ofChildrenOf: childKeys) } + ["DELETE FROM \(table) WHERE \(condition)"]
    }

    func eraseAllChildren(_ connection: Connection) throws {
        for link in child.links {
            try link.eraseAllChildren(connection)
        }
        try connection.statement(child.deleteAllSQL).run()
    }

    func makeWriter(_ connection: Connection) throws -> any ChildWriter<Parent> {
        try RelationWriter(link: self, connection)
    }

    /// `SELECT … WHERE fk IN (?1, …, ?n)`, for n from a few fixed sizes so the
    /// statements are reused; the rows are put in key order as they are read.
    static func childrenOfParentsSQL(selectList: String, table: String, foreignKey: String, count: Int) -> String {
        let list = (1...count).map { "?\($0)" }.joined(separator: ", ")
        return "SELECT \(selectList) FROM \(quoted(table)) WHERE \(quoted(foreignKey)) IN (\(list))"
    }

    static var batchSizes: [Int] { [8, 64, 512] }

    func attach(to parents: UnsafeMutableBufferPointer<Parent>, all: Bool, _ connection: Connection) throws {
        let reader = TableReader(table: child, connection: connection)
        if !all && parents.count == 1 {
            // Every row is the parent's: no parent keys to collect and group by.
            let statement = try connection.statement(childrenOfParentSQL)
            try statement.bind(parents[0].primaryKey.storedValue, at: 1)
            if let rowsReader = child.rowsReader, child.entity.primaryKeyField.type == .integer {
                // An integer key is the rowid, read from column 0 as an integer.
                // Room is made for as many children as the last parent read
                // had, up to 1,024 (growing the arrays one doubling at a time
                // cost about 9k instructions a read of 100 children; the
                // array handed out may then have room for more children than
                // it holds, as a doubled one may).
                let expected = min(lastChildCount.load(ordering: .relaxed), 1024)
                var rows = reader.columnRows(statement, inKeyOrder: true, expected: expected)
                var children: [Child] = []
                if expected > 0 { children.reserveCapacity(expected) }
                do {
                    defer { statement.reset() }
                    try rowsReader.read(&rows, into: &children)
                    try statement.checkStep(rows.status)
                }
                lastChildCount.store(children.count, ordering: .relaxed)
                if child.hasLinks { try reader.attachChildren(to: &children, all: false) }
                parents[0][keyPath: relation.children] = children
                return
            }
            var none: [StoredValue] = []
            var children = try reader.rows(statement, keyColumn: nil, keys: &none, inKeyOrder: true)
            if child.hasLinks {
                try children.withElements { try reader.attachChildren(to: $0, all: false) }
            }
            parents[0][keyPath: relation.children] = children.takeAll()
            return
        }
        // Several parents: their children are grouped by parent key (made
        // only here: the dictionary cost one parent's read about 1,100
        // instructions and an allocation).
        var groups: [StoredValue: [Child]] = [:]
        groups.reserveCapacity(parents.count)
        func read(_ statement: Statement, all: Bool) throws {
            var keys: [StoredValue] = []
            var children = try reader.rows(statement, keyColumn: foreignKeyColumn, keys: &keys, inKeyOrder: !all)
            if child.hasLinks {
                try children.withElements { try reader.attachChildren(to: $0, all: all) }
            }
            group(&children, by: keys, into: &groups)
        }
        if all && !child.hasLinks {
            // Every row of the child table, in key order, grouped by parent as
            // it is read.
            let integerKeys = Parent.entity.primaryKeyField.type == .integer
            try reader.runs(connection.statement(child.selectAllSQL), keyColumn: foreignKeyColumn, integerKeys: integerKeys) { key, run in
                if groups[key] == nil {
                    groups[key] = run
                } else {
                    groups[key, default: []].append(contentsOf: run)
                }
            }
        } else if all {
            try read(connection.statement(child.selectAllSQL), all: true)
        } else {
            var keys: [StoredValue] = []
            var seen = Set<StoredValue>()
            for parent in parents {
                let key = parent.primaryKey.storedValue
                if seen.insert(key).inserted { keys.append(key) }
            }
            var start = 0
            while start < keys.count {
                let remaining = keys.count - start
                let sizes = Self.batchSizes
                let batch = sizes.firstIndex { $0 >= remaining } ?? sizes.count - 1
                let size = sizes[batch]
                let end = min(start + size, keys.count)
                let statement = try connection.statement(childrenOfParentsSQL[batch])
                for slot in 0..<size {
                    // Pad a short batch by repeating its last key.
                    try statement.bind(keys[min(start + slot, end - 1)], at: Int32(slot + 1))
                }
                try read(statement, all: false)
                start = end
            }
        }
        let path = relation.children
        for index in parents.indices {
            parents[index][keyPath: path] = groups[parents[index].primaryKey.storedValue] ?? []
        }
    }

    /// Groups children by their parent keys (`keys[i]` is the parent of
    /// `children[i]`), keeping their order, by moving them out of the buffer;
    /// children of one parent usually come together, so the dictionary is
    /// touched once per run.
    private func group(
        _ children: inout RecordBuffer<Child>, by keys: [StoredValue], into groups: inout [StoredValue: [Child]]
    ) {
        var start = 0
        let count = children.count
        while start < count {
            let key = keys[start]
            var end = start + 1
            while end < count, keys[end] == key { end += 1 }
            let run = children.take(upTo: end)
            if groups[key] == nil {
                groups[key] = run
            } else {
                groups[key, default: []].append(contentsOf: run)
            }
            start = end
        }
    }
}

/// Writes the children of one relation.
protocol ChildWriter<Parent> {
    associatedtype Parent: Record
    func write(childrenOf parent: Parent) throws
}

/// The part of writing one parent's children that does not depend on their
/// type: checking the parent key each child named, collecting the keys held,
/// running the statement bound. Not generic, so that the work per child
/// looks up no metadata of types over the child type, which the relation
/// writer's generic code did on every row.
final class ChildRows {
    /// What is left to do for a row, by code that knows the child's type.
    enum Rest {
        /// Nothing.
        case done
        /// Everything: the binding did not capture the parent key or the key
        /// (they are read from the record, then ``run(childKey:)`` goes on).
        case all
        /// The plain `INSERT` failed on the primary key: upsert the child,
        /// then write its children.
        case conflict
        /// The child is not stored under this parent: upsert it and write its
        /// children.
        case notStored
        /// Write the child's children.
        case children
    }

    let parentKey: StoredValue
    /// The statement the children are bound to: the plain `INSERT` when the
    /// parent has no child stored, else the update of a stored child, or the
    /// upsert when the table has nothing but keys to update.
    let target: Statement
    let update: Statement?
    let inserting: Bool
    let hasChildren: Bool
    /// The keys of the children stored under the parent.
    let stored: Set<StoredValue>
    /// The keys of the children written, when some were stored (to delete the
    /// others).
    private(set) var held: [StoredValue] = []

    init(parentKey: StoredValue, existing: [StoredValue], target: Statement, update: Statement?, hasChildren: Bool, count: Int) {
        self.parentKey = parentKey
        self.target = target
        self.update = update
        self.hasChildren = hasChildren
        inserting = existing.isEmpty
        stored = inserting ? [] : Set(existing)
        if !inserting { held.reserveCapacity(count) }
    }

    /// Goes on with the row just bound to ``target``, whose binding captured
    /// `capturedKey` and `capturedParent` (`.null`: not captured).
    @inline(__always)
    func row(_ capturedKey: StoredValue, _ capturedParent: StoredValue) throws -> Rest {
        // Matched by case: `== .null` called the stored value's equality.
        if case .null = capturedParent { return .all }
        if !inserting, case .null = capturedKey { return .all }
        // A child naming another parent: the generic code reports it.
        guard capturedParent == parentKey else { return .all }
        return try run(childKey: capturedKey)
    }

    /// Goes on with a row whose parent key was checked, with its key.
    ///
    /// A child of a parent with none stored is inserted with the plain
    /// `INSERT`: a single-row `INSERT` needs no statement journal, where the
    /// upsert (`ON CONFLICT … DO UPDATE` may write twice) opens one per row.
    /// A row that is stored after all (under another parent: only this
    /// parent's children were looked up) fails on its primary key before
    /// SQLite writes anything, and is then upserted (``Rest/conflict``).
    ///
    /// A child stored under this parent is updated in place with the update
    /// (``TableWriter/updateUnderParent()``), whose `SET` leaves out the
    /// foreign key (it is in `WHERE`): SQLite then has no foreign-key check to
    /// make and opens no statement journal, which the upsert does on every
    /// row. `update` is `nil` when there is nothing but the keys to set.
    func run(childKey: StoredValue) throws -> Rest {
        if inserting {
            do {
                try target.run()
            } catch let error as StorageError where error.engineCode == sqliteConstraintPrimaryKey {
                return .conflict
            }
            return hasChildren ? .children : .done
        }
        held.append(childKey)
        guard stored.contains(childKey) else { return .notStored }
        try update?.run()
        return hasChildren ? .children : .done
    }
}

/// Makes a parent's children in the child table exactly the ones it holds:
/// upserts the children it holds, then deletes the rows of those it no longer
/// holds (their keys come from the foreign-key index, a covering read).
///
/// Measured on the workload's `update` (every dialog persisted again with the
/// same message ids, 1,000 × 100 messages, plain C loops): upserting took 370 ms
/// against 390 ms for deleting a parent's children and inserting them again, and
/// upserting leaves the rows of unchanged children in place.
final class RelationWriter<Rel: ToManyRelation>: ChildWriter {
    typealias Parent = Rel.Parent
    typealias Child = Rel.Child

    let link: RelationLink<Rel>
    let writer: TableWriter<Child>
    let existingKeys: Statement
    let deleteByKey: Statement

    init(link: RelationLink<Rel>, _ connection: Connection) throws {
        self.link = link
        writer = try TableWriter(link.child, connection)
        existingKeys = try connection.statement(link.childKeysSQL)
        deleteByKey = try connection.statement(link.child.deleteByKeySQL)
    }

    func write(childrenOf parent: Parent) throws {
        let key = parent.primaryKey.storedValue
        let children = parent[keyPath: link.relation.children]
        // The keys stored for this parent now (read from the foreign-key index),
        // to delete afterwards those the parent no longer holds.
        try existingKeys.bind(key, at: 1)
        var existing: [StoredValue] = []
        do {
            defer { existingKeys.reset() }
            while try existingKeys.step() {
                existing.append(existingKeys.storedValue(0))
            }
        }
        // No child is stored under this parent: insert them; children stored
        // under this parent already are updated in place; others are
        // upserted (see ``ChildRows/run(childKey:)``).
        let inserting = existing.isEmpty
        let update = inserting ? nil : try writer.updateUnderParent()
        let rows = ChildRows(
            parentKey: key, existing: existing, target: inserting ? try writer.insert() : update ?? writer.upsert,
            update: update, hasChildren: writer.hasChildren, count: children.count)
        let target = rows.target
        // What ``ChildRows/row(_:_:)`` leaves to code that knows the child's
        // type, for the child at `index`. The child is read from the array
        // only here (a copy of it in this generic code retains its strings).
        func finishRow(_ left: ChildRows.Rest, _ index: Int) throws {
            switch left {
            case .done:
                return
            case .all:
                // The binding did not capture the parent key or the key.
                let parentOfChild = children[index][keyPath: link.relation.parentKey].storedValue
                guard parentOfChild == key else {
                    throw StorageError(
                        .constraint, .persist, entity: Child.entity.name,
                        message: "a child in relation '\(link.relation.name)' names parent \(children[index][keyPath: link.relation.parentKey]) in '\(link.relation.foreignKeyField)' but is held by parent \(parent.primaryKey)"
                    )
                }
                try finishRow(rows.run(childKey: children[index].primaryKey.storedValue), index)
            case .conflict:
                try writer.bind(children[index], to: writer.upsert)
                try writer.upsert.run()
                if writer.hasChildren { try writer.finishChildren(children[index]) }
            case .notStored:
                if target !== writer.upsert { try writer.bind(children[index], to: writer.upsert) }
                try writer.finish(children[index])
            case .children:
                try writer.finishChildren(children[index])
            }
        }
        if let rowsWriter = writer.rowsWriter {
            // Bound in the child type's own module (``FieldwiseRecord/writeRows(_:to:_:)``).
            try writer.withColumnWriter(for: target) { columns in
                try rowsWriter.write(children, to: &columns) { columns, index in
                    let left = try rows.row(columns.capturedKey, columns.capturedParent)
                    if left != .done { try finishRow(left, index) }
                }
            }
        } else {
            for index in children.indices {
                try writer.bind(children[index], to: target)
                try finishRow(rows.row(writer.capturedKey, writer.capturedParent), index)
            }
        }
        if !existing.isEmpty {
            let kept = Set(rows.held)
            for childKey in existing where !kept.contains(childKey) {
                try deleteByKey.bind(childKey, at: 1)
                try deleteByKey.run()
            }
        }
    }
}
