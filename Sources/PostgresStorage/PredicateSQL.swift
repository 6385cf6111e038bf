import DAOCore
import Foundation
import PostgresNIO

/// A `WHERE` condition and the values bound to its `$n` parameters, in order.
struct SQLCondition {
    var sql: String
    var binds: [PostgresData]
}

/// Compiles ``QueryExpression``s into PostgreSQL conditions with the
/// library's meaning, and sorts into `ORDER BY`; what has no faithful form
/// is left to the core (`nil`).
///
/// Where PostgreSQL differs from the library, and how the compiled SQL
/// keeps the library's meaning:
/// - a NaN is equal to a NaN and greater than every number in PostgreSQL,
///   and unordered in Swift: `>`, `>=` and `==` on a real column exclude NaN
///   (`<> 'NaN'`), and a comparison with a NaN constant is left to the core;
/// - `NULL` compares as unknown: `==` and `!=` are `IS NOT DISTINCT FROM`
///   and `IS DISTINCT FROM`, and every condition is two-valued;
/// - text is compared under `COLLATE "C"` (UTF-8 bytes), with the stored
///   escape of U+0000 and U+0001 (``TextEscape``), which keeps that order.
enum PredicateSQL {
    /// The most parameters one statement binds (PostgreSQL's limit is 65535).
    static let maximumParameters = 30_000

    static func compile(_ expression: QueryExpression, _ table: TableSQL, firstParameter: Int = 1) -> SQLCondition? {
        var binds: [PostgresData] = []
        guard let sql = compile(expression, table, &binds, base: firstParameter), binds.count <= maximumParameters else {
            return nil
        }
        return SQLCondition(sql: sql, binds: binds)
    }

    private static func compile(
        _ expression: QueryExpression, _ table: TableSQL, _ binds: inout [PostgresData], base: Int
    ) -> String? {
        func field(_ name: String) -> (column: String, field: EntitySchema.FieldSchema)? {
            guard let position = table.schema.fields.firstIndex(where: { $0.name == name }) else { return nil }
            return (table.columns[position], table.schema.fields[position])
        }
        func parameter(_ data: PostgresData) -> String {
            binds.append(data)
            return "$\(base + binds.count - 1)"
        }
        switch expression {
        case .constant(let value):
            return value ? "TRUE" : "FALSE"

        case .isTrue(let name):
            guard let (column, field) = field(name), !field.optional, field.type == .bool else { return nil }
            return column

        case .not(.isTrue(let name)):
            guard let (column, field) = field(name), !field.optional, field.type == .bool else { return nil }
            return "NOT \(column)"

        case .compare(let name, let comparison, let value):
            guard let (column, field) = field(name) else { return nil }
            let isReal = field.type == .real || field.type == .date
            if case .real(let real) = value, real.isNaN { return nil }
            if value == .null {
                switch comparison {
                case .equal: return "\(column) IS NULL"
                case .notEqual: return "\(column) IS NOT NULL"
                default: return nil
                }
            }
            guard let data = PostgresValue.bind(value, as: field.type) else { return nil }
            switch comparison {
            case .equal:
                let p = parameter(data)
                return field.optional ? "\(column) IS NOT DISTINCT FROM \(p)" : "\(column) = \(p)"
            case .notEqual:
                let p = parameter(data)
                return field.optional ? "\(column) IS DISTINCT FROM \(p)" : "\(column) <> \(p)"
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                // Swift cannot order an optional against nil: the core evaluates it.
                if field.optional { return nil }
                let p = parameter(data)
                if isReal, comparison == .greater || comparison == .greaterOrEqual {
                    return "(\(column) \(comparison.rawValue) \(p) AND \(column) <> 'NaN'::float8)"
                }
                return "\(column) \(comparison.rawValue) \(p)"
            }

        case .contains(let name, let substring):
            guard let (column, field) = field(name), !field.optional, field.type == .text else { return nil }
            if substring.isEmpty { return "TRUE" }
            // A substring with a byte of the escape could match across an escaped character.
            if substring.utf8.contains(where: { $0 <= 2 }) { return nil }
            return "strpos(\(column), \(parameter(PostgresValue.text(substring)))) > 0"

        case .hasPrefix(let name, let prefix):
            guard let (column, field) = field(name), !field.optional, field.type == .text else { return nil }
            if prefix.isEmpty { return "TRUE" }
            return "starts_with(\(column), \(parameter(PostgresValue.text(prefix))))"

        case .isIn(let name, let values):
            guard let (column, field) = field(name) else { return nil }
            let present = values.filter { $0 != .null }
            let includesNull = present.count != values.count
            var parts: [String] = []
            if !present.isEmpty {
                var elements: [PostgresData?] = []
                for value in present {
                    if case .real(let real) = value, real.isNaN { continue }  // equal to nothing
                    guard let data = PostgresValue.bind(value, as: field.type) else { return nil }
                    elements.append(data)
                }
                if !elements.isEmpty {
                    let array = PostgresData(array: elements, elementType: PostgresValue.dataType(field.type))
                    let list = "\(column) = ANY(\(parameter(array)))"
                    parts.append(field.optional ? "(\(column) IS NOT NULL AND \(list))" : list)
                }
            }
            if includesNull { parts.append("\(column) IS NULL") }
            if parts.isEmpty { return "FALSE" }
            return parts.count == 1 ? parts[0] : "(\(parts.joined(separator: " OR ")))"

        case .and(let lhs, let rhs):
            guard let left = compile(lhs, table, &binds, base: base), let right = compile(rhs, table, &binds, base: base)
            else { return nil }
            return "(\(left) AND \(right))"

        case .or(let lhs, let rhs):
            guard let left = compile(lhs, table, &binds, base: base), let right = compile(rhs, table, &binds, base: base)
            else { return nil }
            return "(\(left) OR \(right))"

        case .not(let wrapped):
            guard let inner = compile(wrapped, table, &binds, base: base) else { return nil }
            return "NOT \(inner)"
        }
    }

    /// `ORDER BY` terms for a sort by declared fields (without the key's
    /// tie-break), or `nil` when the core sorts (Foundation's comparators).
    /// PostgreSQL orders `NULL` last by default; the library first. Its real
    /// order is the library's total order: `-0.0 = 0.0`, NaN after
    /// `+infinity`, NaNs tied.
    static func orderBy<R: Record>(_ sort: SortPlan<R>, _ table: TableSQL) -> [String]? {
        guard let fields = sort.fields else { return nil }
        var terms: [String] = []
        for (field, ascending) in fields {
            guard let position = table.schema.fields.firstIndex(where: { $0.name == field.name }) else { return nil }
            terms.append("\(table.columns[position]) \(ascending ? "ASC NULLS FIRST" : "DESC NULLS LAST")")
        }
        return terms
    }
}
