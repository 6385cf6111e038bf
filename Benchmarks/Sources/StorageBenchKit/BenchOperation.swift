/// The timed operations of WORKLOAD.md, in the order they run: the eight of
/// workload v1 (``workload``, what a run reports unless asked for more), and
/// the extra reads through the borrowing API (``borrowingReads``), each the
/// same read as a v1 operation with every record lent to a closure that
/// folds it into a ``ReadDigest`` instead of returned in an array.
public enum BenchOperation: String, Sendable, CaseIterable, Codable, Comparable {
    /// Persist all `D` dialogs with their messages in one call.
    case persist
    /// Read every dialog with all its messages, ordered by id.
    case readAll = "read-all"
    /// `K` lookups of a random dialog by primary key.
    case readById = "read-by-id"
    /// `K` times the unread messages of a random dialog, newest first.
    case query
    /// `read-all` through the borrowing API: every dialog lent in turn.
    case readAllBorrowing = "read-all-borrowing"
    /// `read-by-id` through the borrowing API: each dialog lent, not returned.
    case readByIdBorrowing = "read-by-id-borrowing"
    /// `query` through the borrowing API: each unread message lent in turn.
    case queryBorrowing = "query-borrowing"
    /// `read-all` through views (`forEachView`): every dialog's fields and
    /// its messages' where the engine keeps them, no object made.
    case readAllView = "read-all-view"
    /// `read-by-id` through views: each dialog's fields and its messages'.
    case readByIdView = "read-by-id-view"
    /// `query` through views: each unread message's fields.
    case queryView = "query-view"
    /// Persist all dialogs again with every message read, in one call.
    case update
    /// `P` new dialogs, one call and one commit each.
    case persistSingle = "persist-single"
    /// Erase every dialog with an even id, with its messages, in one call.
    case eraseById = "erase-by-id"
    /// Erase everything that is left, in one call.
    case eraseAll = "erase-all"

    /// The eight operations of workload v1, in the order they run: what a
    /// run reports by default (`--operations all`).
    public static let workload: [BenchOperation] = allCases.filter { !$0.isBorrowing }

    /// The extra reads through the borrowing API, outside workload v1
    /// (`--operations borrowing`).
    public static let borrowingReads: [BenchOperation] = allCases.filter(\.isBorrowing)

    /// Whether the operation reads through the borrowing API (`forEach`).
    public var isBorrowing: Bool { plainRead != nil }

    /// The v1 read a borrowing read does again through the borrowing API,
    /// or `nil` for an operation of workload v1.
    public var plainRead: BenchOperation? {
        switch self {
        case .readAllBorrowing, .readAllView: .readAll
        case .readByIdBorrowing, .readByIdView: .readById
        case .queryBorrowing, .queryView: .query
        default: nil
        }
    }

    /// The counted unit of the operation, as reports name it.
    public var unit: String {
        switch self {
        case .persist, .readAll, .readAllBorrowing, .readAllView, .update: "messages"
        case .readById, .readByIdBorrowing, .readByIdView: "lookups"
        case .query, .queryBorrowing, .queryView: "queries"
        case .persistSingle: "dialogs"
        case .eraseById, .eraseAll: "messages erased"
        }
    }

    /// A short unit for a throughput on the terminal (`msg/s`).
    public var shortUnit: String {
        switch self {
        case .persist, .readAll, .readAllBorrowing, .readAllView, .update, .eraseById, .eraseAll: "msg/s"
        case .readById, .readByIdBorrowing, .readByIdView: "lookups/s"
        case .query, .queryBorrowing, .queryView: "queries/s"
        case .persistSingle: "dialogs/s"
        }
    }

    /// Whether the operation is a series of single calls, each timed, with
    /// p50 / p90 / p99 latencies reported.
    public var isPerCall: Bool {
        switch self {
        case .readById, .query, .readByIdBorrowing, .readByIdView, .queryBorrowing, .queryView, .persistSingle: true
        default: false
        }
    }

    /// Whether the operation leaves the store as it found it (it only reads),
    /// so that it can run again in place and do exactly the same work.
    public var isReadOnly: Bool {
        switch self {
        case .readAll, .readById, .query, .readAllBorrowing, .readAllView, .readByIdBorrowing, .readByIdView, .queryBorrowing, .queryView: true
        default: false
        }
    }

    /// Whether the operation can run again in place once the store is put
    /// back, untimed, through the subject's own API: `erase-all`, after
    /// which what it erased is persisted again in one call
    /// (``IterationJob/eraseRuns``), and `update`, after which the dialogs
    /// as `persist` wrote them (messages not yet read) are written again in
    /// one upsert (``IterationJob/updateRuns``), outside the timed region.
    public var restoresInPlace: Bool { self == .eraseAll || self == .update }

    /// Whether an iteration may run the operation more than once in place
    /// (``isReadOnly`` or ``restoresInPlace``), its time the median of its runs.
    public var runsInPlace: Bool { isReadOnly || restoresInPlace }

    /// What the operation does, as WORKLOAD.md says it.
    public var summary: String {
        switch self {
        case .persist: "persist all D dialogs with their messages in one call (one transaction)"
        case .readAll: "read every dialog with all its messages, ordered by dialog id"
        case .readById: "K = min(D, 1000) lookups of a random dialog (with its messages) by primary key"
        case .query: "K times: the unread messages of a random dialog, newest first"
        case .update: "persist all dialogs again with every message marked read (upsert, one transaction)"
        case .persistSingle: "P = min(D, 200) new dialogs (ids above D), one call and one commit each"
        case .eraseById: "erase every dialog with an even id, with its messages, in one call"
        case .eraseAll: "erase everything that is left, in one call"
        case .readAllBorrowing:
            "read-all through the borrowing API: every dialog lent in turn, each folded into a digest (outside v1)"
        case .readByIdBorrowing:
            "read-by-id through the borrowing API: each dialog lent, folded into a digest (outside v1)"
        case .queryBorrowing:
            "query through the borrowing API: each unread message lent, folded into a digest (outside v1)"
        case .readAllView:
            "read-all through views: every dialog's fields, then its messages', folded into a digest (outside v1)"
        case .readByIdView:
            "read-by-id through views: each dialog's fields and its messages', folded into a digest (outside v1)"
        case .queryView:
            "query through views: each unread message's fields, folded into a digest (outside v1)"
        }
    }

    /// How many units the operation must touch, as a formula of D, M,
    /// P = min(D, 200) and K = min(D, 1000).
    public var unitsFormula: String {
        switch self {
        case .persist, .readAll, .readAllBorrowing, .readAllView, .update: "D × M"
        case .readById, .query, .readByIdBorrowing, .readByIdView, .queryBorrowing, .queryView: "K"
        case .persistSingle: "P"
        case .eraseById: "⌊(D + P) / 2⌋ × M"
        case .eraseAll: "(D + P − ⌊(D + P) / 2⌋) × M"
        }
    }

    /// The operation as data, for reports, scripts and plots
    /// (`storage-bench operations --format json`), with the units it must touch
    /// at each of `sizes`.
    public func describe(sizes: [BenchSize] = []) -> OperationDescription {
        OperationDescription(
            name: rawValue, unit: unit, shortUnit: shortUnit, perCall: isPerCall, summary: summary,
            unitsFormula: unitsFormula,
            expectedUnits: Dictionary(uniqueKeysWithValues: sizes.map { ($0.description, expectedUnits(for: $0)) }))
    }

    /// The units the full operation counts at a size, as WORKLOAD.md defines them.
    public func expectedUnits(for size: BenchSize) -> Int {
        let d = size.dialogs
        let m = size.messagesPerDialog
        let p = min(d, 200)
        let k = min(d, 1000)
        switch self {
        case .persist, .readAll, .readAllBorrowing, .readAllView, .update: return d * m
        case .readById, .query, .readByIdBorrowing, .readByIdView, .queryBorrowing, .queryView: return k
        case .persistSingle: return p
        case .eraseById: return (d + p) / 2 * m
        case .eraseAll: return (d + p - (d + p) / 2) * m
        }
    }

    /// Parses a comma-separated list of operations and groups (`all`: the
    /// eight of workload v1; `borrowing`: the borrowing reads), returned in
    /// the order they run.
    /// - Throws: ``ConfigurationError`` naming an unknown operation.
    public static func parseList(_ text: String) throws -> [BenchOperation] {
        let names = try StorageBenchKit.parseList(text, option: "--operations")
        var chosen: Set<BenchOperation> = []
        for name in names {
            if name == "all" {
                chosen.formUnion(workload)
            } else if name == "borrowing" {
                chosen.formUnion(borrowingReads)
            } else if let operation = BenchOperation(rawValue: name) {
                chosen.insert(operation)
            } else {
                throw ConfigurationError(
                    "unknown operation '\(name)' in --operations; known: "
                        + allCases.map(\.rawValue).joined(separator: ", ") + ", all (workload v1) or borrowing")
            }
        }
        return allCases.filter(chosen.contains)
    }

    /// Workload order.
    public static func < (lhs: BenchOperation, rhs: BenchOperation) -> Bool {
        allCases.firstIndex(of: lhs) ?? 0 < allCases.firstIndex(of: rhs) ?? 0
    }
}

/// One operation of the workload as data: what the runner, the report, the
/// plots and the scripts know of it. `storage-bench operations --format json`
/// prints the list, in workload order.
public struct OperationDescription: Sendable, Hashable, Codable {
    /// The name in reports and on the command line (`read-by-id`).
    public var name: String
    /// The counted unit (`messages`, `lookups`, …), the report's `unit` column.
    public var unit: String
    /// The unit of a throughput on the terminal and in plots (`msg/s`).
    public var shortUnit: String
    /// Whether each call is timed, with p50 / p90 / p99 latencies.
    public var perCall: Bool
    /// What the operation does.
    public var summary: String
    /// The units it must touch, as a formula of D, M, P and K.
    public var unitsFormula: String
    /// The units it must touch at each size asked for, keyed `DxM`.
    public var expectedUnits: [String: Int]

    enum CodingKeys: String, CodingKey {
        case name, unit, summary
        case shortUnit = "short_unit"
        case perCall = "per_call"
        case unitsFormula = "units_formula"
        case expectedUnits = "expected_units"
    }
}
