import DAOCore
import Foundation

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
