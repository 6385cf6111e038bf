import DAOCore
import Foundation

/// A `WHERE` clause and the values bound to its `?` parameters, in order.
struct SQLCondition: Sendable {
    var sql: String
    var parameters: [SQLParameter]
}

/// A value bound to a parameter: a stored value, or raw text bytes (the exclusive
/// upper bound of a prefix range, which need not be valid UTF-8).
enum SQLParameter: Sendable, Hashable {
    case value(StoredValue)
    case textBytes([UInt8])
}

extension Statement {
    /// Binds `parameters` to `?1`, `?2`, … in order.
    func bind(_ parameters: [SQLParameter]) throws {
        var index: Int32 = 1
        for parameter in parameters {
            switch parameter {
            case .value(let value): try bind(value, at: index)
            case .textBytes(let bytes): try bindTextBytes(bytes, at: index)
            }
            index += 1
        }
    }
}

/// Compiles ``QueryExpression``s (translated from Foundation predicates) into SQL
/// with bound parameters, and sort descriptors into `ORDER BY`.
///
/// Every compiled condition is two-valued (never SQL NULL), so `NOT`, `AND` and
/// `OR` keep Swift's meaning: equality on an optional column is null-safe
/// (`IS` / `IS NOT`), as the predicate's `==` and `!=` are.
enum PredicateSQL {
    /// The most parameters a compiled condition may bind (SQLite's limit is
    /// 32766; one is kept for `LIMIT`).
    static let maximumParameters = 32_000

    /// The condition for `expression` over `entity`'s table, or `nil` when some
    /// part has no faithful SQL form (the caller then filters in memory).
    static func compile<R: Record>(_ expression: QueryExpression, entity: Entity<R>) -> SQLCondition? {
        var parameters: [SQLParameter] = []
        guard let sql = compile(expression, entity: entity, into: &parameters, text: true),
            // SQLite allows 32766 parameters; a larger IN list is filtered in memory.
            parameters.count <= maximumParameters
        else { return nil }
        return SQLCondition(sql: sql, parameters: parameters)
    }

    /// The parameters ``compile(_:entity:)`` binds for `expression`, in
    /// order, when a condition of the same shape (the same tree, fields and
    /// comparisons, each constant of the same kind: `nil`, NaN, empty text
    /// or not) compiled, without building the text and without
    /// looking a field up in the entity (about 1k instructions a prepared
    /// call). Every check `compile` makes of a field gives the same answer
    /// for the whole shape.
    static func shapeParameters(_ expression: QueryExpression) -> [SQLParameter]? {
        var parameters: [SQLParameter] = []
        appendShapeParameters(expression, to: &parameters)
        guard parameters.count <= maximumParameters else { return nil }
        return parameters
    }

    /// Appends the parameters `compile` appends for `expression`, in its order.
    private static func appendShapeParameters(_ expression: QueryExpression, to parameters: inout [SQLParameter]) {
        switch expression {
        case .constant, .isTrue:
            return
        case .compare(_, let comparison, let value):
            switch comparison {
            case .equal, .notEqual:
                if value != .null { parameters.append(.value(value)) }
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                parameters.append(.value(value))
            }
        case .contains(_, let substring):
            if !substring.isEmpty { parameters.append(.value(.text(substring))) }
        case .hasPrefix(_, let prefix):
            guard !prefix.isEmpty else { return }
            var upper = Array(prefix.utf8)
            upper[upper.count - 1] += 1
            parameters.append(.value(.text(prefix)))
            parameters.append(.textBytes(upper))
        case .isIn(_, let values):
            for value in values where value != .null { parameters.append(.value(value)) }
        case .and(let lhs, let rhs), .or(let lhs, let rhs):
            appendShapeParameters(lhs, to: &parameters)
            appendShapeParameters(rhs, to: &parameters)
        case .not(let wrapped):
            appendShapeParameters(wrapped, to: &parameters)
        }
    }

    /// The SQL of `expression` (the empty string when `text` is false: the
    /// parameters only) and its parameters appended to `parameters`.
    private static func compile<R: Record>(
        _ expression: QueryExpression, entity: Entity<R>, into parameters: inout [SQLParameter], text: Bool
    ) -> String? {
        // The text of a part, built only when asked for.
        func sql(_ build: @autoclosure () -> String) -> String { text ? build() : "" }
        switch expression {
        case .constant(let value):
            return value ? "1" : "0"

        case .isTrue(let name):
            guard let field = entity.fieldKind(named: name), !field.isOptional else { return nil }
            return sql("\(quoted(name)) = 1")

        case .not(.isTrue(let name)):
            guard let field = entity.fieldKind(named: name), !field.isOptional else { return nil }
            return sql("\(quoted(name)) = 0")

        case .compare(let name, let comparison, let value):
            guard let field = entity.fieldKind(named: name) else { return nil }
            var column: String { quoted(name) }
            let nullable = field.isOptional || value == .null
            switch comparison {
            case .equal:
                if value == .null { return sql("\(column) IS NULL") }
                parameters.append(.value(value))
                return sql(nullable ? "\(column) IS ?" : "\(column) = ?")
            case .notEqual:
                if value == .null { return sql("\(column) IS NOT NULL") }
                parameters.append(.value(value))
                return sql(nullable ? "\(column) IS NOT ?" : "\(column) <> ?")
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                // Swift cannot order an optional against nil; leave such a
                // comparison to the in-memory evaluation.
                if nullable { return nil }
                parameters.append(.value(value))
                // A real field's NaN is stored as a blob (``bindReal(_:_:_:)``),
                // which SQLite orders after every number; NaN is greater than
                // nothing, so `> x` stops before the blobs (`X''` is the least
                // blob), which keeps the range an index can serve.
                if comparison == .greater || comparison == .greaterOrEqual, field.type == .real || field.type == .date {
                    return sql("(\(column) \(comparison.rawValue) ? AND \(column) < X'')")
                }
                return sql("\(column) \(comparison.rawValue) ?")
            }

        case .contains(let name, let substring):
            guard let field = entity.fieldKind(named: name), !field.isOptional, field.type == .text else { return nil }
            if substring.isEmpty { return "1" }
            parameters.append(.value(.text(substring)))
            return sql("instr(\(quoted(name)), ?) > 0")

        case .hasPrefix(let name, let prefix):
            guard let field = entity.fieldKind(named: name), !field.isOptional, field.type == .text else { return nil }
            if prefix.isEmpty { return "1" }
            // [prefix, prefix with its last byte + 1): a byte-exact range that an
            // index on the column can serve. UTF-8 never contains 0xFF, so the
            // last byte can always be incremented.
            var upper = Array(prefix.utf8)
            upper[upper.count - 1] += 1
            parameters.append(.value(.text(prefix)))
            parameters.append(.textBytes(upper))
            var column: String { quoted(name) }
            return sql("(\(column) >= ? AND \(column) < ?)")

        case .isIn(let name, let values):
            guard let field = entity.fieldKind(named: name) else { return nil }
            var column: String { quoted(name) }
            let present = values.filter { $0 != .null }
            let includesNull = present.count != values.count
            var parts: [String] = []
            if !present.isEmpty {
                parameters.append(contentsOf: present.map { .value($0) })
                let list = sql("\(column) IN (\(Array(repeating: "?", count: present.count).joined(separator: ", ")))")
                // IN over a NULL column is NULL; keep it two-valued.
                parts.append(sql(field.isOptional ? "(\(column) IS NOT NULL AND \(list))" : list))
            }
            if includesNull { parts.append(sql("\(column) IS NULL")) }
            if parts.isEmpty { return "0" }
            return parts.count == 1 ? parts[0] : sql("(\(parts.joined(separator: " OR ")))")

        case .and(let lhs, let rhs):
            guard let left = compile(lhs, entity: entity, into: &parameters, text: text),
                let right = compile(rhs, entity: entity, into: &parameters, text: text)
            else { return nil }
            return sql("(\(left) AND \(right))")

        case .or(let lhs, let rhs):
            guard let left = compile(lhs, entity: entity, into: &parameters, text: text),
                let right = compile(rhs, entity: entity, into: &parameters, text: text)
            else { return nil }
            return sql("(\(left) OR \(right))")

        case .not(let wrapped):
            guard let inner = compile(wrapped, entity: entity, into: &parameters, text: text) else { return nil }
            return sql("NOT (\(inner))")
        }
    }

    /// `ORDER BY` terms for a sort (without the primary-key tie-break), or `nil`
    /// when the core's sort is Foundation's (a `String` comparator, or a key
    /// path that is not a declared field), which SQLite cannot run. A sort by
    /// stored values is SQLite's order: NULL first, numbers by value (`-0.0`
    /// tied with `0.0`), then a real field's NaNs, all one blob, then text and
    /// blobs by bytes (the BINARY collation): the core's order.
    static func orderBy<R: Record>(_ sort: SortPlan<R>) -> [String]? {
        guard let fields = sort.fields else { return nil }
        return fields.map { "\(quoted($0.field.name)) \($0.ascending ? "ASC" : "DESC")" }
    }
}

/// `name` as an SQL identifier.
func quoted(_ name: String) -> String {
    // Most names hold no quote: no Foundation search and replace for them.
    guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
    return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
