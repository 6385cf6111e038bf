import Foundation

/// One kind of operation a load mix draws (docs/WORKLOAD.md, "Load mixes", says
/// what each reads and writes).
public enum LoadOperation: String, Sendable, Hashable, CaseIterable, Codable, Comparable {
    /// A dialog with its messages, by id.
    case read
    /// A dialog written again with its messages (an upsert), one field changed.
    case update
    /// A new dialog with its messages, under the next unused id.
    case insert
    /// Up to `scanLength` of a dialog's messages, oldest first (by date).
    case scan
    /// A dialog read by id, then written again with one field changed.
    case readModifyWrite = "read-modify-write"
    /// The newest `pageSize` messages of a dialog, newest first.
    case page
    /// One new message appended to a dialog.
    case append

    /// Whether the operation writes.
    public var writes: Bool {
        switch self {
        case .read, .scan, .page: false
        case .update, .insert, .readModifyWrite, .append: true
        }
    }

    /// The operation's place in reports.
    var rank: Int {
        switch self {
        case .read: 0
        case .update: 1
        case .insert: 2
        case .scan: 3
        case .readModifyWrite: 4
        case .page: 5
        case .append: 6
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }
}

/// How a mix chooses the dialog each operation touches.
public enum KeyDistribution: String, Sendable, Hashable, Codable, CaseIterable {
    /// Every dialog equally likely.
    case uniform
    /// YCSB's scrambled zipfian: a few dialogs are hot, spread over the key
    /// space by a hash (θ from the mix, 0.99 by default).
    case zipfian
    /// YCSB's skewed-latest: the most recently inserted dialogs are the hottest.
    case latest
}

/// A refused mix file: the file, the field and what is wrong.
public struct LoadMixError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file (or built-in mix name) refused.
    public let file: String
    /// The field at fault (a dotted path such as `operations.reed`), or empty
    /// when the whole file is at fault.
    public let field: String
    /// What is wrong.
    public let reason: String

    /// Creates an error.
    public init(file: String, field: String, reason: String) {
        self.file = file
        self.field = field
        self.reason = reason
    }

    public var description: String {
        field.isEmpty ? "\(file): \(reason)" : "\(file): field '\(field)': \(reason)"
    }
}

/// One dedicated client beside the mix's clients (the chat mix's writer): its
/// own operations, distribution and optional rate.
public struct LoadRole: Sendable, Hashable {
    /// The operations and their proportions (adding up to 1).
    public var operations: [LoadOperation: Double]
    /// How it chooses dialogs.
    public var distribution: KeyDistribution
    /// Operations per second it aims at, or `nil` for as fast as it can.
    public var targetRate: Double?
}

/// A load mix: what a workload file (JSON) says. The built-in mixes
/// (`ycsb-a` … `ycsb-f`, `chat`) are such files; ``LoadMix/load(_:)`` reads a
/// user's own.
///
/// ```json
/// {
///   "name": "ycsb-b",
///   "description": "YCSB B: read mostly",
///   "dialogs": 1000, "messagesPerDialog": 10,
///   "operations": { "read": 0.95, "update": 0.05 },
///   "distribution": "zipfian",
///   "clients": [1, 2, 4, 8],
///   "durationSeconds": 10
/// }
/// ```
///
/// Every field but `name`, `dialogs`, `messagesPerDialog`, `operations` and
/// `distribution` is optional; a field the format does not know is refused.
public struct LoadMix: Sendable, Hashable {
    /// The mix's name, in reports.
    public var name: String
    /// One line saying what it is.
    public var description: String
    /// Dialogs stored before the run (the key space of the reads and updates).
    public var dialogs: Int
    /// Messages in each dialog (the record size).
    public var messagesPerDialog: Int
    /// What each client does: operations and their proportions (adding up to 1).
    public var operations: [LoadOperation: Double]
    /// How clients choose dialogs.
    public var distribution: KeyDistribution
    /// The zipfian constant θ (for `zipfian` and `latest`).
    public var zipfianTheta: Double
    /// The most messages a `scan` reads.
    public var scanLength: Int
    /// The messages a `page` reads.
    public var pageSize: Int
    /// The client counts to run, in order.
    public var clients: [Int]
    /// How long each run lasts, in seconds (when `operationCount` is `nil`).
    public var durationSeconds: Double
    /// Operations per run over all clients, or `nil` to run for `durationSeconds`.
    public var operationCount: Int?
    /// Operations per second over all clients, or `nil` for as fast as they can
    /// (then no coordinated-omission-corrected latencies).
    public var targetRate: Double?
    /// A dedicated client beside the others (the chat mix's writer), or `nil`.
    public var writer: LoadRole?
    /// How many of the hottest dialogs are observed (their newest page), on a
    /// backend that can observe.
    public var observers: Int
    /// The generators' seed: the same seed gives every backend the same
    /// operations and keys.
    public var seed: UInt64
    /// The file the mix was read from (a built-in mix's resource too), or
    /// `nil` for a mix made in code: a load worker reads it again from there.
    public var file: String? = nil

    /// The proportions as `50% read, 50% update`.
    public var proportionsDescription: String {
        func describe(_ operations: [LoadOperation: Double]) -> String {
            operations.sorted { $0.key < $1.key }
                .map { "\(String(format: "%g", $0.value * 100))% \($0.key.rawValue)" }
                .joined(separator: ", ")
        }
        var text = describe(operations) + "; \(distribution.rawValue)"
        if distribution != .uniform { text += " \(String(format: "%g", zipfianTheta))" }
        if let writer {
            text += "; writer: \(describe(writer.operations)), \(writer.distribution.rawValue)"
            if let rate = writer.targetRate { text += " at \(String(format: "%g", rate))/s" }
        }
        if observers > 0 { text += "; \(observers) observers" }
        return text
    }
}

// MARK: - Reading a mix file

extension LoadMix {
    /// The fields a mix file may have.
    static let fields: Set<String> = [
        "name", "description", "dialogs", "messagesPerDialog", "operations", "distribution", "zipfianTheta",
        "scanLength", "pageSize", "clients", "durationSeconds", "operationCount", "targetRate", "writer",
        "observers", "seed",
    ]
    /// The fields of `writer`.
    static let writerFields: Set<String> = ["operations", "distribution", "targetRate"]

    /// Reads and checks the mix file at `url`.
    /// - Throws: ``LoadMixError`` naming the file and the field at fault.
    public static func load(_ url: URL) throws -> LoadMix {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw LoadMixError(file: url.path, field: "", reason: "cannot be read (\(error.localizedDescription))")
        }
        var mix = try parse(data, file: url.path)
        mix.file = url.path
        return mix
    }

    /// Parses and checks a mix from the JSON `data`; `file` names it in errors.
    /// - Throws: ``LoadMixError`` naming `file` and the field at fault.
    public static func parse(_ data: Data, file: String) throws -> LoadMix {
        let root: JSONValue
        do {
            root = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw LoadMixError(file: file, field: "", reason: "is not valid JSON (\(error))")
        }
        guard case .object(let object) = root else {
            throw LoadMixError(file: file, field: "", reason: "must be a JSON object")
        }
        let reader = FieldReader(file: file, object: object, prefix: "")
        try reader.refuseUnknown(fields)

        let name = try reader.string("name")
        let description = try reader.optionalString("description") ?? ""
        let dialogs = try reader.integer("dialogs", in: 1...BenchSize.limit)
        let messagesPerDialog = try reader.integer("messagesPerDialog", in: 1...100_000)
        let operations = try reader.proportions("operations")
        let distribution = try reader.distribution("distribution")
        let theta = try reader.optionalNumber("zipfianTheta") ?? 0.99
        guard theta > 0, theta < 1 else {
            throw LoadMixError(file: file, field: "zipfianTheta", reason: "must be above 0 and below 1, not \(theta)")
        }
        let scanLength = try reader.optionalInteger("scanLength", in: 1...100_000) ?? 100
        let pageSize = try reader.optionalInteger("pageSize", in: 1...100_000) ?? 50
        let clients = try reader.clients("clients") ?? [1]
        let duration = try reader.optionalNumber("durationSeconds") ?? 10
        guard duration > 0, duration <= 86_400 else {
            throw LoadMixError(
                file: file, field: "durationSeconds", reason: "must be above 0 and at most 86400, not \(duration)")
        }
        let operationCount = try reader.optionalInteger("operationCount", in: 1...Int(Int32.max))
        let targetRate = try reader.optionalNumber("targetRate")
        if let targetRate, !(targetRate > 0) {
            throw LoadMixError(file: file, field: "targetRate", reason: "must be above 0, not \(targetRate)")
        }
        var writer: LoadRole?
        if let value = object["writer"] {
            guard case .object(let writerObject) = value else {
                throw LoadMixError(file: file, field: "writer", reason: "must be an object")
            }
            let writerReader = FieldReader(file: file, object: writerObject, prefix: "writer.")
            try writerReader.refuseUnknown(writerFields)
            let writerRate = try writerReader.optionalNumber("targetRate")
            if let writerRate, !(writerRate > 0) {
                throw LoadMixError(file: file, field: "writer.targetRate", reason: "must be above 0, not \(writerRate)")
            }
            writer = LoadRole(
                operations: try writerReader.proportions("operations"),
                distribution: try writerReader.distribution("distribution"), targetRate: writerRate)
        }
        let observers = try reader.optionalInteger("observers", in: 0...dialogs) ?? 0
        let seed = try reader.optionalInteger("seed", in: 0...Int.max).map { UInt64($0) } ?? 42
        return LoadMix(
            name: name, description: description, dialogs: dialogs, messagesPerDialog: messagesPerDialog,
            operations: operations, distribution: distribution, zipfianTheta: theta, scanLength: scanLength,
            pageSize: pageSize, clients: clients, durationSeconds: duration, operationCount: operationCount,
            targetRate: targetRate, writer: writer, observers: observers, seed: seed)
    }
}

/// A JSON document's values, decoded strictly (a boolean is not a number).
enum JSONValue: Decodable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try Self.decode(Bool.self, container) {
            self = .bool(value)
        } else if let value = try Self.decode(Double.self, container) {
            self = .number(value)
        } else if let value = try Self.decode(String.self, container) {
            self = .string(value)
        } else if let value = try Self.decode([JSONValue].self, container) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// The value as a `T`, or `nil` when it is of another JSON type; any other
    /// decoding error (a damaged document) is thrown as it is.
    private static func decode<T: Decodable>(
        _ type: T.Type, _ container: any SingleValueDecodingContainer
    ) throws -> T? {
        do {
            return try container.decode(type)
        } catch DecodingError.typeMismatch {
            return nil
        }
    }
}

/// Reads typed fields out of a JSON object, refusing with the file and the
/// field's dotted path.
private struct FieldReader {
    let file: String
    let object: [String: JSONValue]
    let prefix: String

    func fail(_ field: String, _ reason: String) -> LoadMixError {
        LoadMixError(file: file, field: prefix + field, reason: reason)
    }

    func refuseUnknown(_ known: Set<String>) throws {
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw fail(unknown, "unknown field; known: \(known.sorted().joined(separator: ", "))")
        }
    }

    /// Whether `field` is present (and not null).
    func has(_ field: String) -> Bool {
        switch object[field] {
        case .none, .null?: false
        default: true
        }
    }

    func value(_ field: String) throws -> JSONValue {
        guard has(field), let value = object[field] else { throw fail(field, "missing") }
        return value
    }

    func string(_ field: String) throws -> String {
        guard case .string(let text) = try value(field), !text.isEmpty else {
            throw fail(field, "must be a non-empty string")
        }
        return text
    }

    func optionalString(_ field: String) throws -> String? {
        guard has(field) else { return nil }
        return try string(field)
    }

    func number(_ field: String) throws -> Double {
        guard case .number(let double) = try value(field), double.isFinite else {
            throw fail(field, "must be a number")
        }
        return double
    }

    func optionalNumber(_ field: String) throws -> Double? {
        guard has(field) else { return nil }
        return try number(field)
    }

    func integer(_ field: String, in range: ClosedRange<Int>) throws -> Int {
        let double = try number(field)
        guard double.rounded() == double, let integer = Int(exactly: double) else {
            throw fail(field, "must be a whole number, not \(double)")
        }
        guard range.contains(integer) else {
            throw fail(field, "must be between \(range.lowerBound) and \(range.upperBound), not \(integer)")
        }
        return integer
    }

    func optionalInteger(_ field: String, in range: ClosedRange<Int>) throws -> Int? {
        guard has(field) else { return nil }
        return try integer(field, in: range)
    }

    func distribution(_ field: String) throws -> KeyDistribution {
        guard case .string(let text) = try value(field) else { throw fail(field, "must be a string") }
        guard let distribution = KeyDistribution(rawValue: text) else {
            throw fail(
                field,
                "unknown distribution '\(text)'; known: \(KeyDistribution.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return distribution
    }

    func proportions(_ field: String) throws -> [LoadOperation: Double] {
        guard case .object(let entries) = try value(field), !entries.isEmpty else {
            throw fail(field, "must be a non-empty object of operation: proportion")
        }
        var result: [LoadOperation: Double] = [:]
        var total = 0.0
        let known = LoadOperation.allCases.map(\.rawValue).joined(separator: ", ")
        let nested = FieldReader(file: file, object: entries, prefix: prefix + field + ".")
        for name in entries.keys.sorted() {
            guard let operation = LoadOperation(rawValue: name) else {
                throw nested.fail(name, "unknown operation; known: \(known)")
            }
            let share = try nested.number(name)
            guard share >= 0, share <= 1 else {
                throw nested.fail(name, "a proportion must be between 0 and 1, not \(share)")
            }
            total += share
            if share > 0 { result[operation] = share }
        }
        guard abs(total - 1) <= 1e-9 else {
            throw fail(field, "the proportions add up to \(String(format: "%g", total)), not 1")
        }
        return result
    }

    func clients(_ field: String) throws -> [Int]? {
        guard has(field) else { return nil }
        guard case .array(let items) = try value(field), !items.isEmpty else {
            throw fail(field, "must be a non-empty list of client counts")
        }
        return try items.enumerated().map { index, item in
            guard case .number(let number) = item, let count = Int(exactly: number) else {
                throw fail("\(field)[\(index)]", "must be a whole number")
            }
            guard (1...1024).contains(count) else {
                throw fail("\(field)[\(index)]", "a client count must be between 1 and 1024, not \(count)")
            }
            return count
        }
    }
}

// MARK: - Built-in mixes

extension LoadMix {
    /// The names of the built-in mixes, in the order `all` runs them.
    public static let builtInNames = ["ycsb-a", "ycsb-b", "ycsb-c", "ycsb-d", "ycsb-e", "ycsb-f", "chat"]

    /// The file of the built-in mix `name`, shipped with the harness.
    public static func builtInURL(_ name: String) -> URL? {
        Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Mixes")
    }

    /// The mixes `list` names: built-in names, `all` (every built-in mix) or
    /// paths of mix files, comma-separated.
    /// - Throws: ``LoadMixError`` for a refused file or an unknown name.
    public static func select(_ list: String) throws -> [LoadMix] {
        var mixes: [LoadMix] = []
        for item in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            let names = item == "all" ? builtInNames : [item]
            for name in names {
                if builtInNames.contains(name) {
                    guard let url = builtInURL(name) else {
                        throw LoadMixError(file: name, field: "", reason: "the built-in mix file is missing from the harness's resources")
                    }
                    mixes.append(try load(url))
                } else if name.hasSuffix(".json") || name.contains("/") || FileManager.default.fileExists(atPath: name) {
                    mixes.append(try load(URL(fileURLWithPath: name)))
                } else {
                    throw LoadMixError(
                        file: name, field: "",
                        reason: "no such built-in mix (\(builtInNames.joined(separator: ", ")), all) or mix file")
                }
            }
        }
        guard !mixes.isEmpty else { throw LoadMixError(file: list, field: "", reason: "--mix names no mix") }
        return mixes
    }
}
