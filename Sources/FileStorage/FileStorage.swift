import DAOCore
import Foundation

/// The ``Storage`` of one record type in a ``FileStore``.
///
/// Reads are answered from memory: a primary-key lookup is a dictionary lookup,
/// a query narrows its candidates by the primary key or an indexed field its
/// predicate fixes (a foreign key, the leading field of a declared index), then
/// evaluates the predicate in memory. Writes change the in-memory tables and
/// rewrite the documents of the entities they touched, in one atomic commit.
public struct FileStorage<R: Record>: Storage {
    public typealias Record = R

    let store: FileStore

    /// The store's broadcaster.
    public var commits: CommitBroadcaster? { store.commits }
    /// The store's threads for `async` calls (``FileStore/executor``).
    public var executor: StoreExecutor { store.executor }

    public func persist(_ records: [R]) throws {
        try store.write(.persist, R.entity.name) { state in
            try state.persist(records, checkOwner: true)
        }
        store.commits.didCommit(.persisted(records))
    }

    public func read(primaryKey key: R.PrimaryKey) throws -> R? {
        // The record comes out through a variable and the closure returns
        // nothing: `Optional.map` with `attachChildren` went through three
        // reabstraction thunks, and a closure returning `R?` looked up the
        // optional's metadata.
        var found: R?
        try store.read(.read, R.entity.name) { state in
            let table = try state.table(R.self)
            guard let record = table.record(key.storedValue) else { return }
            found = try state.attachChildren(record)
        }
        return found
    }

    public func read(primaryKeys keys: [R.PrimaryKey]) throws -> [R] {
        try store.read(.read, R.entity.name) { state in
            let table = try state.table(R.self)
            var records: [R] = []
            records.reserveCapacity(keys.count)
            for key in keys {
                if let record = table.record(key.storedValue) { records.append(try state.attachChildren(record)) }
            }
            return records
        }
    }

    public func read(_ query: Query<R>) throws -> [R] {
        try store.read(.read, R.entity.name) { state in
            try query.validate()
            let table = try state.table(R.self)
            let plan = QueryPlan(query)
            // The candidates are filtered as they are collected, and found in
            // the key order (ascending or descending) that gave the asked
            // order at the last call of this shape: a dialog's messages by
            // date, newest first, come from their keys in descending order,
            // and need no reversing then.
            let descending = plan.prefersDescendingCandidates
            let candidates = try state.candidates(
                in: table, for: plan, filtering: !(plan.accessIsExact && table.walksExactly(plan)), descending: descending)
            // The sort keys read by position where the record allows it,
            // else through the fields' key paths.
            let matches =
                if let keys = try table.sortKeys(of: candidates, for: plan.sort) {
                    try plan.finish(candidates, sortKeys: keys, filtered: true, descending: descending)
                } else {
                    try plan.finish(candidates, filtered: true, descending: descending)
                }
            // Records without relations are complete as stored.
            return plan.needsCompleteRecords || !table.hasRelations ? matches : try matches.map(state.attachChildren)
        }
    }

    /// The records that answer one call of a prepared query, as
    /// ``read(_:)-(Query<R>)`` answers its query. When the prepared query
    /// keeps a template for the call's values whose access path, with the
    /// equalities the path does not bind, is the whole predicate (the
    /// workload's query: a dialog's messages, unread), the call is answered
    /// from the bound plan (``PreparedQueryCall/boundPlan()``): no predicate,
    /// query or `QueryPlan` is made for it, and the candidates are tested
    /// where they are stored by one matcher kept with the template
    /// (`BoundReads`). Any other call reads its query.
    ///
    /// - Throws: ``StorageError``.
    public func read(_ call: PreparedQueryCall<R>) throws -> [R] {
        guard let bound = call.boundPlan(), !bound.sort.readsOpaqueValues else { return try read(call.query) }
        // The records come out through variables and the closure returns
        // nothing: a closure returning `[R]?` looked up the metadata of the
        // array and of its optional on every call.
        var records: [R] = []
        var answered = false
        try store.read(.read, R.entity.name) { state in
            let table = try state.table(R.self)
            answered = try table.answer(bound, into: &records)
            // Records without relations are complete as stored.
            if answered && table.hasRelations {
                for index in records.indices { records[index] = try state.attachChildren(records[index]) }
            }
        }
        return answered ? records : try read(call.query)
    }

    public func count(where predicate: Predicate<R>?) throws -> Int {
        try store.read(.count, R.entity.name) { state in
            let table = try state.table(R.self)
            guard predicate != nil else { return table.recordCount }
            let plan = QueryPlan(Query(where: predicate))
            return try plan.count(state.candidates(in: table, for: plan), filtered: plan.accessIsExact && table.walksExactly(plan))
        }
    }

    @discardableResult
    public func erase(primaryKeys keys: [R.PrimaryKey]) throws -> Int {
        let erased = try store.write(.erase, R.entity.name) { state in
            let table = try state.table(R.self)
            var erased = 0
            for key in keys where try state.erase(key.storedValue, from: table) {
                erased += 1
            }
            return erased
        }
        if erased > 0 { store.commits.didCommit(.erased(R.self, primaryKeys: keys)) }
        return erased
    }

    @discardableResult
    public func erase(where predicate: Predicate<R>?) throws -> Int {
        let erased = try store.write(.erase, R.entity.name) { state in
            let table = try state.table(R.self)
            guard predicate != nil else { return try state.eraseAll(from: table) }
            let plan = QueryPlan(Query(where: predicate))
            var erased = 0
            for record in try state.candidates(in: table, for: plan) where try plan.matches(record) {
                if try state.erase(record.primaryKey.storedValue, from: table) { erased += 1 }
            }
            return erased
        }
        if erased > 0 { store.commits.didCommit(.erased(R.self)) }
        return erased
    }
}

// MARK: - The operations, on the state under the store's lock

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
        let childTable = try table(Relation.Child.self)
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

extension DocumentTable {
    /// Whether ``StoreState/candidates(in:for:)`` finds exactly the records of
    /// the plan's access path: the in-memory indexes hold an index's leading
    /// field only.
    func walksExactly(_ plan: QueryPlan<R>) -> Bool {
        if case .index(_, let values) = plan.access { return values.count == 1 }
        return true
    }
}

extension DocumentTable {
    /// The answer of a prepared call bound from its template (its records
    /// sorted and limited, without their children) put into `records`, when
    /// this table finds the candidates of the call's access path and can
    /// test them against the rest of the predicate by position: the index's
    /// bound fields after the first (the in-memory indexes hold the leading
    /// field only) and, when the path is not exact, the call's other
    /// equalities (``BoundPlan/otherEqualities``). `false` otherwise
    /// (`records` untouched): an inexact path without such equalities, a
    /// field this table does not index, a record type that is not a
    /// ``FieldwiseRecord``.
    /// - Throws: what the record's `write(fields:)` throws.
    func answer(_ bound: BoundPlan<R>, into records: inout [R]) throws -> Bool {
        let access = bound.access
        var index: Index?
        var values: [StoredValue] = []
        if case .index(let used, let indexValues) = access, indexValues.count > 1 {
            index = used
            values.append(contentsOf: indexValues.dropFirst())
        }
        let indexChecks = values.count
        if !bound.accessIsExact {
            guard let others = bound.otherEqualities else { return false }
            for other in others { values.append(other.value) }
        }
        // Everything this store derives from the template, found with one
        // look-up per call (each look-up of generic metadata in this
        // unspecialized code costs about 300 instructions).
        let template = bound.template
        let reads = template.memo(BoundReads<R>.self) {
            BoundReads(template, sort: bound.sort, index: index, indexChecks: indexChecks)
        }
        var matcher: FieldsMatcher<R>?
        if !values.isEmpty {
            guard let made = reads.matcher, made.count == values.count, reads.indexChecks == indexChecks else {
                return false
            }
            matcher = made
        }
        let descending = bound.prefersDescendingCandidates
        var candidates: [R] = []
        switch access {
        case .all:
            let all = allRecords
            guard let matcher else {
                candidates = all
                break
            }
            candidates.reserveCapacity(all.count)
            for position in 0..<all.count {
                if try matcher(all[position], values) { candidates.append(all[position]) }
            }
        case .primaryKey(let key):
            guard let found = record(key) else { break }
            if let matcher, try !matcher(found, values) { break }
            candidates.append(found)
        case .index(let used, let indexValues):
            guard let keys = keys(where: used.fields[0], equals: indexValues[0]) else { return false }
            candidates = try self.records(withKeys: keys, descending: descending, matcher: matcher, values: values)
        case .parent(let value):
            guard let foreignKeyName, let keys = keys(where: foreignKeyName, equals: value) else { return false }
            candidates = try self.records(withKeys: keys, descending: descending, matcher: matcher, values: values)
        }
        // The sort keys read by position in one pass where the record
        // allows it, else through the fields' key paths.
        if let sortReader = reads.sortReader {
            let (sortValues, primaryKeys) = try sortReader(candidates)
            var sortKeys: [StoredValue] = []
            sortKeys.reserveCapacity(sortValues.count * 2)
            for index in 0..<sortValues.count {
                sortKeys.append(sortValues[index])
                sortKeys.append(primaryKeys[index])
            }
            records = bound.finish(candidates, sortKeys: sortKeys, descending: descending)
        } else {
            records = bound.finish(candidates, descending: descending)
        }
        return true
    }
}

/// What a file store derives from a plan template to answer the prepared
/// calls bound from it (``DocumentTable/answer(_:into:)``), made from the record
/// type alone, once per template (which every store of the record type
/// shares):
///
/// - one ``FieldsMatcher`` of the fields after the first of the index the
///   template's access path uses, as many as the path binds, then of its
///   other equalities' fields (``PlanTemplate/otherEqualityFields``), in
///   their order; `nil` when there are none, the record type is not a
///   ``FieldwiseRecord`` or a field is not declared;
/// - the reader of the sort's field and the primary key by position
///   (``FieldPairReader``), when the sort compares the stored values of one
///   declared field other than the primary key; `nil` otherwise (the sort
///   keys are read through the fields then).
final class BoundReads<R: Record>: Sendable {
    let matcher: FieldsMatcher<R>?
    /// How many of the matcher's fields are the index's.
    let indexChecks: Int
    let sortReader: FieldPairReader<R>?

    init(_ template: PlanTemplate<R>, sort: SortPlan<R>, index: Index?, indexChecks: Int) {
        self.indexChecks = indexChecks
        if let fields = sort.fields, fields.count == 1,
            let position = R.entity.position(ofField: fields[0].field.name), position > 0
        {
            sortReader = makeFieldPairReader(for: R.self, positions: [position, 0])
        } else {
            sortReader = nil
        }
        matcher = Self.matcher(template, index: index, indexChecks: indexChecks)
    }

    private static func matcher(_ template: PlanTemplate<R>, index: Index?, indexChecks: Int) -> FieldsMatcher<R>? {
        var names: [String] = []
        if let index, indexChecks > 0 {
            guard indexChecks < index.fields.count else { return nil }
            names.append(contentsOf: index.fields[1...indexChecks])
        }
        names.append(contentsOf: template.otherEqualityFields ?? [])
        var positions: [Int] = []
        for name in names {
            guard let position = R.entity.position(ofField: name) else { return nil }
            positions.append(position)
        }
        return positions.isEmpty ? nil : makeFieldsMatcher(for: R.self, positions: positions)
    }
}

/// What a file store derives from a plan template for testing candidates
/// where they are stored (``CandidateTest/others(besides:index:values:plan:in:)``):
/// readers by position of the fields after the first of the index the
/// template's access path uses, and of its other equalities' fields
/// (``PlanTemplate/otherEqualityFields``), in their order. `nil` when the
/// record type is not a ``FieldwiseRecord`` or a field is not declared.
/// Made from the record type alone, so kept with the template, which every
/// store of the record type shares.
final class TemplateReaders<R: Record>: Sendable {
    let readers: (index: [FieldValueReader<R>], others: [FieldValueReader<R>])?

    init(_ template: PlanTemplate<R>, index: Index?) {
        func reader(_ name: String) -> FieldValueReader<R>? {
            R.entity.position(ofField: name).flatMap { makeFieldValueReader(for: R.self, position: $0) }
        }
        var indexReaders: [FieldValueReader<R>] = []
        var otherReaders: [FieldValueReader<R>] = []
        for name in index?.fields.dropFirst() ?? [] {
            guard let made = reader(name) else {
                readers = nil
                return
            }
            indexReaders.append(made)
        }
        for name in template.otherEqualityFields ?? [] {
            guard let made = reader(name) else {
                readers = nil
                return
            }
            otherReaders.append(made)
        }
        readers = (indexReaders, otherReaders)
    }
}

/// How ``StoreState/candidates(in:for:filtering:descending:)`` tests a
/// candidate where it is stored.
enum CandidateTest<R: Record> {
    /// The plan's whole predicate (``QueryPlan/matches(_:)``).
    case plan(QueryPlan<R>)
    /// Equalities of declared fields with stored values (coerced to the
    /// fields' types by the access path), all of which must hold.
    case equalities([(field: Field<R>, value: StoredValue)])
    /// One such equality, the field read by position (``FieldValueReader``).
    case equality(FieldValueReader<R>, StoredValue)
    /// Several such equalities.
    case readers([(FieldValueReader<R>, StoredValue)])

    /// The test of candidates found by the first field of `index`: the
    /// equalities of its other fields with `values` when the access path is
    /// exactly the predicate (``QueryPlan/accessIsExact``), else `test`.
    static func remaining(_ index: Index, _ values: [StoredValue], plan test: CandidateTest, in table: DocumentTable<R>)
        -> CandidateTest
    {
        guard case .plan(let plan) = test else { return test }
        guard plan.accessIsExact, values.count <= index.fields.count else {
            return others(besides: index.fields[0], index: index, values: values, plan: test, in: table)
        }
        if values.count == 2, let reader = table.valueReader(of: index.fields[1]) { return .equality(reader, values[1]) }
        var equalities: [(field: Field<R>, value: StoredValue)] = []
        equalities.reserveCapacity(values.count - 1)
        for position in 1..<values.count {
            guard let field = R.entity.field(named: index.fields[position]) else { return test }
            equalities.append((field, values[position]))
        }
        return .equalities(equalities)
    }

    /// The test of candidates found by looking up the field `bound` (an
    /// index's first field, the foreign key), when the predicate is nothing
    /// but equalities on distinct fields (``QueryPlan/equalities(besides:)``):
    /// its other equalities, compared as ``remaining(_:_:plan:in:)`` compares
    /// an index's fields, so the predicate is not evaluated on each
    /// candidate; else `test`. A plan bound from a template whose other
    /// equalities are known (``QueryPlan/otherEqualityValues``) compares them
    /// by position, with readers kept for the template
    /// (``TemplateReaders``), and the index's other bound values too (a
    /// record type that is not a ``FieldwiseRecord`` keeps `test`); a plan
    /// made afresh finds them in its condition.
    static func others(
        besides bound: String, index: Index? = nil, values: [StoredValue] = [], plan test: CandidateTest,
        in table: DocumentTable<R>
    ) -> CandidateTest {
        guard case .plan(let plan) = test else { return test }
        if let template = plan.template {
            // The template has the other equalities when there are any (a
            // plan's condition is not walked for them on each call).
            guard let otherValues = plan.otherEqualityValues,
                let readers = template.memo(TemplateReaders<R>.self, { TemplateReaders(template, index: index) })
                    .readers,
                readers.index.count >= values.count - 1, readers.others.count == otherValues.count
            else { return test }
            let indexChecks = max(values.count - 1, 0)
            // One field to compare (the workload's `isRead`): no array.
            if indexChecks + otherValues.count == 1 {
                return indexChecks == 1
                    ? .equality(readers.index[0], values[1]) : .equality(readers.others[0], otherValues[0])
            }
            var checks: [(FieldValueReader<R>, StoredValue)] = []
            checks.reserveCapacity(indexChecks + otherValues.count)
            for position in values.indices.dropFirst() { checks.append((readers.index[position - 1], values[position])) }
            for position in otherValues.indices { checks.append((readers.others[position], otherValues[position])) }
            return .readers(checks)
        }
        guard let others = plan.equalities(besides: [bound]) else { return test }
        if others.count == 1, let reader = table.valueReader(of: others[0].field.name) {
            return .equality(reader, others[0].value)
        }
        return .equalities(others)
    }

    /// Whether `record` passes.
    /// - Throws: what ``QueryPlan/matches(_:)`` throws.
    func passes(_ record: R) throws -> Bool {
        switch self {
        case .plan(let plan):
            return try plan.matches(record)
        case .equalities(let equalities):
            for equality in equalities where !Semantics.compare(equality.field.value(in: record), .equal, equality.value) {
                return false
            }
            return true
        case .equality(let read, let value):
            return Semantics.compare(try read(record), .equal, value)
        case .readers(let checks):
            for (read, value) in checks where !Semantics.compare(try read(record), .equal, value) { return false }
            return true
        }
    }
}
