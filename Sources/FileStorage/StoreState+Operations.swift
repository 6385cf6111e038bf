import DAOCore
import Foundation

// The operations, on the state under the store's lock: the writes hold it
// exclusively; the reads (``attachChildren(_:)``, ``candidates(in:for:filtering:descending:)``)
// hold it shared and change nothing.
extension StoreState {
    /// Upserts `records` with their children. With `checkOwner`, each record of
    /// an owned entity must name an owner that exists.
    func persist<T: Record>(_ records: [T], checkOwner: Bool) throws {
        let table = try table(T.self)
        // Foundation's binary property-list writer stores equal numbers once
        // per document: a -0.0 beside a 0.0 would come back as the other,
        // unless the documents spell them apart.
        if coder.format == .propertyList, try T.entity.checkRealsForPropertyList(records), !coder.respellsReals {
            respellReals()
        }
        try T.entity.checkDeclaredKeys(records)
        if checkOwner, let owner = T.entity.owner {
            try checkOwnersExist(records, owner: owner)
        } else if checkOwner, let holder = ChildHolders.holder(of: T.entity.name, recorded: (manifest.schemas ?? [:]).values) {
            // A child type that names no owner: the store's recorded holder,
            // whose storage may not have been opened since the store was.
            try checkHolderExists(records, holder: holder)
        }
        table.expectWrites(records.count)
        if table.hasRelations {
            for relation in T.entity.relations {
                try expectChildWrites(relation, of: records)
            }
        }
        for record in records {
            try upsert(record, key: record.primaryKey.storedValue, into: table)
        }
    }

    /// Tells the table of `relation`'s children how many children `parents`
    /// hold (see ``DocumentTable/expectWrites(_:)``).
    private func expectChildWrites<Relation: ToManyRelation>(_ relation: Relation, of parents: [Relation.Parent]) throws {
        var count = 0
        for position in 0..<parents.count {
            count += parents[position][keyPath: relation.children].count
        }
        try table(Relation.Child.self).expectWrites(count)
    }

    private func checkOwnersExist<T: Record, O: Record>(_ records: [T], owner: O.Type) throws {
        guard let relation = O.ownedRelation(for: T.self),
            let foreignKey = T.entity.field(named: relation.foreignKeyField)
        else { return }
        let owners = try table(O.self)
        for record in records {
            let value = foreignKey.value(in: record)
            guard owners.record(value) != nil else {
                throw StorageError(
                    .constraint, .persist, entity: T.entity.name,
                    message: "record \(record.primaryKey) names \(O.entity.name) \(value) in '\(foreignKey.name)', which does not exist")
            }
        }
    }

    private func checkHolderExists<T: Record>(_ records: [T], holder: (entity: String, foreignKey: String)) throws {
        guard let foreignKey = T.entity.field(named: holder.foreignKey) else { return }
        let holds = try keyTest(of: holder.entity)
        for record in records {
            let value = foreignKey.value(in: record)
            guard holds(value) else {
                throw StorageError(
                    .constraint, .persist, entity: T.entity.name,
                    message: "record \(record.primaryKey) names \(holder.entity) \(value) in '\(foreignKey.name)', which does not exist")
            }
        }
    }

    /// Upserts `record`, whose primary key's stored value is `key`, with its children.
    private func upsert<T: Record>(_ record: T, key: StoredValue, into table: DocumentTable<T>) throws {
        guard table.hasRelations else {
            try table.insert(record, key: key)
            return
        }
        var stripped = record
        for relation in T.entity.relations {
            try replaceChildren(relation, of: record, key: key, stripped: &stripped)
        }
        try table.insert(stripped, key: key)
    }

    /// Stores exactly the children `parent` holds: removes those it no longer
    /// holds, upserts the others; empties the relation in `stripped`.
    private func replaceChildren<Relation: ToManyRelation>(
        _ relation: Relation, of parent: Relation.Parent, key parentKey: StoredValue, stripped: inout Relation.Parent
    ) throws {
        let children = parent[keyPath: relation.children]
        stripped[keyPath: relation.children] = []
        let childTable = try table(Relation.Child.self)
        var keys: [StoredValue] = []
        keys.reserveCapacity(children.count)
        let sameForeignKey = childTable.foreignKeyName == relation.foreignKeyField
        var pairs: (keys: [StoredValue], foreignKeys: [StoredValue])?
        if sameForeignKey, let readAll = childTable.keyPairsReader {
            do {
                pairs = try readAll(children)
            } catch {
                pairs = nil  // thrown again by the reading one by one
            }
        }
        if let pairs, pairs.keys.count == children.count {
            // One specialized pass over every child's fields. (A child whose
            // `write(fields:)` throws is read one by one below, so that the
            // error is the one the order gives.)
            for position in 0..<children.count where pairs.foreignKeys[position] != parentKey {
                try relation.checkChild(children[position], isHeldBy: parentKey)
            }
            keys = pairs.keys
        } else if sameForeignKey, let read = childTable.keyPairReader {
            // One pass over each child's fields instead of two key paths.
            for position in 0..<children.count {
                let (key, named) = try read(children[position])
                if named != parentKey { try relation.checkChild(children[position], isHeldBy: parentKey) }
                keys.append(key)
            }
        } else {
            for position in 0..<children.count {
                let child = children[position]
                try relation.checkChild(child, isHeldBy: parentKey)
                keys.append(child.primaryKey.storedValue)
            }
        }
        // The children stored now that the parent no longer holds: none for
        // a new parent, so no set is built then; none either when the parent
        // holds exactly the children stored under it (an update), which is
        // found without copying the set.
        let held = childTable.keys(where: relation.foreignKeyField, equals: parentKey) ?? []
        var heldByParent = false
        if !held.isEmpty {
            if held.count == keys.count && Self.isStrictlyIncreasing(keys) && keys.allSatisfy(held.contains) {
                // `keys` are distinct (in increasing order, the common case
                // and a cheap test), lie in `held` and are as many: the same keys.
                heldByParent = true
            } else {
                var stale = held
                for key in keys { stale.remove(key) }
                for key in stale {
                    _ = try erase(key, from: childTable)
                }
            }
        }
        if childTable.hasRelations {
            // By position: `zip` would ask the runtime for a tuple's metadata per child.
            for position in 0..<keys.count {
                try upsert(children[position], key: keys[position], into: childTable)
            }
        } else {
            try childTable.insert(
                children: children, keys: keys, foreignKey: relation.foreignKeyField, parentKey: parentKey,
                heldByParent: heldByParent)
        }
    }

    /// Whether each of `keys` is less than the next: then no key is there twice.
    private static func isStrictlyIncreasing(_ keys: [StoredValue]) -> Bool {
        guard keys.count > 1 else { return true }
        for position in 1..<keys.count where !(keys[position - 1] < keys[position]) {
            return false
        }
        return true
    }

    /// Erases the record with `key` and, recursively, its children; returns
    /// whether there was one.
    func erase<T: Record>(_ key: StoredValue, from table: DocumentTable<T>) throws -> Bool {
        guard table.remove(key) != nil else { return false }
        for relation in T.entity.relations {
            try eraseChildren(relation, parentKey: key)
        }
        return true
    }

    /// Erases every record of `table` and of its children's tables at once
    /// (every child record has its owner in `table`); returns how many
    /// records `table` held.
    func eraseAll<T: Record>(from table: DocumentTable<T>) throws -> Int {
        let count = table.recordCount
        table.removeAll()
        for relation in T.entity.relations {
            try eraseAllChildren(relation)
        }
        return count
    }

    private func eraseAllChildren<Relation: ToManyRelation>(_ relation: Relation) throws {
        _ = try eraseAll(from: try table(Relation.Child.self))
    }

    private func eraseChildren<Relation: ToManyRelation>(_ relation: Relation, parentKey: StoredValue) throws {
        let childTable = try table(Relation.Child.self)
        for key in childTable.keys(where: relation.foreignKeyField, equals: parentKey) ?? [] {
            _ = try erase(key, from: childTable)
        }
    }

    /// `record` with its relations filled from the child tables, children in
    /// primary-key order.
    func attachChildren<T: Record>(_ record: T) throws -> T {
        var result = record
        for relation in T.entity.relations {
            try attach(relation, to: &result)
        }
        return result
    }

    private func attach<Relation: ToManyRelation>(_ relation: Relation, to parent: inout Relation.Parent) throws {
        let childTable = try readTable(Relation.Child.self)
        let keys = childTable.keys(where: relation.foreignKeyField, equals: parent.primaryKey.storedValue) ?? []
        var children = childTable.records(withKeys: keys)
        // A child that owns no relations is complete as stored: not handed
        // to `attachChildren`, whose loop over the entity's (empty) relations
        // asked the runtime for their existential's metadata per child.
        if childTable.hasRelations {
            for position in 0..<children.count { children[position] = try attachChildren(children[position]) }
        }
        parent[keyPath: relation.children] = children
    }

    /// The records the plan's access path finds (a superset of the answer
    /// unless the path is exact), complete with their children when the plan
    /// evaluates something that may read them. With `filtering`, only those
    /// that meet the plan's predicate (``QueryPlan/matches(_:)``): tested
    /// where they are stored, before they are copied out, unless the
    /// predicate needs their children. In primary-key order, descending with
    /// `descending`, where the path finds them by an index (in the table's
    /// order otherwise).
    func candidates<T: Record>(
        in table: DocumentTable<T>, for plan: QueryPlan<T>, filtering: Bool = false, descending: Bool = false
    ) throws -> [T] {
        let early: CandidateTest<T>? = filtering && !plan.needsCompleteRecords ? .plan(plan) : nil
        var records: [T]
        switch plan.access {
        case .all:
            records = table.allRecords
            if let early { records = try records.filter(early.passes) }
        case .primaryKey(let key):
            records = table.record(key).map { [$0] } ?? []
            if let early { records = try records.filter(early.passes) }
        case .index(let index, let values):
            guard let keys = table.keys(where: index.fields[0], equals: values[0]) else {
                records = table.allRecords
                if let early { records = try records.filter(early.passes) }
                break
            }
            // The index's first field is looked up; when the access path is
            // the whole predicate, the records with its other values are
            // exactly the answer: only those fields are compared, not the
            // whole predicate (whose evaluation through `matches` copied
            // the predicate and asked for its metadata per record).
            let test = early.map { CandidateTest.remaining(index, values, plan: $0, in: table) }
            records = try table.records(withKeys: keys, descending: descending, matching: test)
        case .parent(let value):
            guard let foreignKey = T.entity.foreignKeyField, let keys = table.keys(where: foreignKey, equals: value) else {
                records = table.allRecords
                if let early { records = try records.filter(early.passes) }
                break
            }
            let test = early.map { CandidateTest.others(besides: foreignKey, plan: $0, in: table) }
            records = try table.records(withKeys: keys, descending: descending, matching: test)
        }
        if plan.needsCompleteRecords {
            records = try records.map(attachChildren)
            if filtering { records = try records.filter(plan.matches) }
        }
        return records
    }
}
