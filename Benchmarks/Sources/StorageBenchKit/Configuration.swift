import DAOCore
import Foundation

/// An invalid command-line value, explained in one sentence.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong and what would be right.
    public let message: String

    /// Creates an error with `message`.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// The size of a workload: `D` dialogs of `M` messages each.
public struct BenchSize: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The number of dialogs (`D`).
    public let dialogs: Int
    /// The number of messages per dialog (`M`).
    public let messagesPerDialog: Int

    /// The largest `D` or `M` the harness accepts (ids must fit comfortably).
    public static let limit = 10_000_000

    /// A size of `dialogs` × `messagesPerDialog`.
    /// - Throws: ``ConfigurationError`` when either is below 1 or above ``limit``.
    public init(dialogs: Int, messagesPerDialog: Int) throws {
        guard (1...Self.limit).contains(dialogs) else {
            throw ConfigurationError("the number of dialogs must be between 1 and \(Self.limit), not \(dialogs)")
        }
        guard (1...Self.limit).contains(messagesPerDialog) else {
            throw ConfigurationError(
                "the number of messages per dialog must be between 1 and \(Self.limit), not \(messagesPerDialog)")
        }
        self.dialogs = dialogs
        self.messagesPerDialog = messagesPerDialog
    }

    /// Parses `DxM`, e.g. `1000x100`.
    /// - Throws: ``ConfigurationError`` for anything else.
    public init(parsing text: String) throws {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        // A whole number too long for an Int is out of range, not malformed.
        func isWhole(_ part: Substring) -> Bool {
            let digits = part.first == "-" || part.first == "+" ? part.dropFirst() : part
            return !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber }
        }
        guard parts.count == 2, isWhole(parts[0]), isWhole(parts[1]) else {
            throw ConfigurationError("'\(text)' is not a size; write DIALOGSxMESSAGES, e.g. 1000x100")
        }
        let limit = 1...Self.limit
        guard let dialogs = Int(parts[0]), limit.contains(dialogs) else {
            throw ConfigurationError("the number of dialogs must be between 1 and \(Self.limit), not \(parts[0])")
        }
        guard let messages = Int(parts[1]), limit.contains(messages) else {
            throw ConfigurationError(
                "the number of messages per dialog must be between 1 and \(Self.limit), not \(parts[1])")
        }
        try self.init(dialogs: dialogs, messagesPerDialog: messages)
    }

    /// `DxM`.
    public var description: String { "\(dialogs)x\(messagesPerDialog)" }

    /// Parses a comma-separated sweep such as `100x10,1000x100`, dropping repeats.
    /// - Throws: ``ConfigurationError`` for an empty list or a bad size.
    public static func parseSweep(_ text: String) throws -> [BenchSize] {
        var sizes: [BenchSize] = []
        for item in try parseList(text, option: "--sizes") {
            let size = try BenchSize(parsing: item)
            if !sizes.contains(size) { sizes.append(size) }
        }
        return sizes
    }
}

/// The report formats `storage-bench run` can write.
public enum ReportFormat: String, Sendable, CaseIterable, Codable {
    /// Comma-separated values with the header of the issue (RFC 4180 quoting).
    case csv
    /// A JSON array of row objects, keyed by the CSV column names.
    case json
    /// A Markdown table of the same rows.
    case markdown

    /// The file extension of the format.
    public var fileExtension: String {
        switch self {
        case .csv: "csv"
        case .json: "json"
        case .markdown: "md"
        }
    }

    /// Parses a comma-separated list of formats, e.g. `csv,markdown`.
    /// - Throws: ``ConfigurationError`` naming an unknown format.
    public static func parseList(_ text: String) throws -> [ReportFormat] {
        var formats: [ReportFormat] = []
        for item in try StorageBenchKit.parseList(text, option: "--format") {
            guard let format = ReportFormat(rawValue: item) else {
                throw ConfigurationError("unknown format '\(item)' in --format; use csv, json or markdown")
            }
            if !formats.contains(format) { formats.append(format) }
        }
        return formats
    }
}

/// Parses a comma-separated list of durabilities (`full`, `none`).
/// - Throws: ``ConfigurationError`` naming an unknown value.
public func parseDurabilities(_ text: String) throws -> [Durability] {
    var durabilities: [Durability] = []
    for item in try parseList(text, option: "--durability") {
        guard let durability = Durability(rawValue: item) else {
            throw ConfigurationError("unknown durability '\(item)' in --durability; use full or none")
        }
        if !durabilities.contains(durability) { durabilities.append(durability) }
    }
    return durabilities
}

/// Parses the `--durability` of a command that runs one: `full` or `none`.
/// - Throws: ``ConfigurationError`` naming an unknown value, or for several.
public func parseDurability(_ text: String) throws -> Durability {
    let durabilities = try parseDurabilities(text)
    guard durabilities.count == 1, let durability = durabilities.first else {
        throw ConfigurationError("--durability takes one value here")
    }
    return durability
}

/// Checks a command-line value against the range it may take.
/// - Throws: ``ConfigurationError`` naming `option`, the range and `value`
///   when `value` lies outside `range`.
public func checkOption<Value: Comparable>(_ option: String, _ value: Value, in range: ClosedRange<Value>) throws {
    guard range.contains(value) else {
        throw ConfigurationError("\(option) must be between \(range.lowerBound) and \(range.upperBound), not \(value)")
    }
}

/// Parses a regression threshold: `10%`, `10` (percent) or `0.1` (a fraction below 1).
/// - Returns: the threshold as a fraction (0.1 for 10%).
/// - Throws: ``ConfigurationError`` for a value that is not a number between 0 and 1000%.
public func parseThreshold(_ text: String, option: String = "a threshold") throws -> Double {
    let trimmed = text.trimmingCharacters(in: .whitespaces)
    let isPercent = trimmed.hasSuffix("%")
    let number = isPercent ? String(trimmed.dropLast()) : trimmed
    guard let value = Double(number), value.isFinite else {
        throw ConfigurationError("'\(text)' is not a valid \(option); write a percentage such as 10%")
    }
    let fraction = isPercent || abs(value) >= 1 ? value / 100 : value
    guard (0...10).contains(fraction) else {
        throw ConfigurationError("\(option) must be between 0% and 1000%, not \(text)")
    }
    return fraction
}

/// Parses `--precision`: a percentage as ``parseThreshold(_:option:)`` reads
/// it, more than 0% and less than 100%.
/// - Returns: the precision as a fraction (0.03 for 3%).
/// - Throws: ``ConfigurationError`` with the range for anything else.
public func parsePrecision(_ text: String) throws -> Double {
    let fraction: Double
    do {
        fraction = try parseThreshold(text, option: "--precision")
    } catch {
        throw ConfigurationError("--precision must be more than 0% and less than 100%, e.g. 3%, not \(text)")
    }
    guard fraction > 0, fraction < 1 else {
        throw ConfigurationError("--precision must be more than 0% and less than 100%, e.g. 3%, not \(text)")
    }
    return fraction
}

/// Parses a whole-number option such as `--dialogs`, giving its range for
/// anything outside it, however it is spelled: `-5`, `--dialogs=-5`, more
/// digits than the type holds, or not a whole number at all (`1e3`).
/// - Returns: the value, within `range`.
/// - Throws: ``ConfigurationError`` "OPTION must be a whole number between LOW and HIGH, not TEXT".
public func parseCount<T: FixedWidthInteger>(_ text: String, option: String, in range: ClosedRange<T>) throws -> T {
    guard let value = T(text.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
        throw ConfigurationError(
            "\(option) must be a whole number between \(range.lowerBound) and \(range.upperBound), not \(text)")
    }
    return value
}

/// The graph of `--dialogs` × `--messages-per-dialog`, given as the options'
/// text: each a whole number from 1 to ``BenchSize/limit``.
/// - Throws: ``ConfigurationError`` naming the option and its range.
public func parseSize(_ dialogs: String, _ messagesPerDialog: String) throws -> BenchSize {
    let range = 1...BenchSize.limit
    return try BenchSize(
        dialogs: try parseCount(dialogs, option: "--dialogs", in: range),
        messagesPerDialog: try parseCount(messagesPerDialog, option: "--messages-per-dialog", in: range))
}

/// Splits a comma-separated option value into trimmed, non-empty, lowercased items.
/// - Throws: ``ConfigurationError`` when nothing is left.
func parseList(_ text: String, option: String) throws -> [String] {
    let items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        .filter { !$0.isEmpty }
    guard !items.isEmpty else {
        throw ConfigurationError("\(option) needs at least one value")
    }
    return items
}
