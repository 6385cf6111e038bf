import DAOCore
import Foundation

/// The encoding of a ``FileStore``'s documents.
public enum FileFormat: String, Sendable, Hashable, CaseIterable, Codable {
    /// UTF-8 JSON, written by `JSONEncoder`. Dates are stored as seconds since
    /// 2001-01-01 UTC, so they round-trip bit for bit.
    case json
    /// Binary property lists, written by `PropertyListEncoder`.
    case propertyList

    /// The file name extension of a document.
    public var fileExtension: String {
        switch self {
        case .json: "json"
        case .propertyList: "plist"
        }
    }
}

/// One encoder and one decoder per store, reused for every document.
struct DocumentCoder {
    let format: FileFormat
    private let jsonEncoder: JSONEncoder
    private let jsonDecoder: JSONDecoder
    private let plistEncoder: PropertyListEncoder
    private let plistDecoder: PropertyListDecoder

    init(format: FileFormat) {
        self.format = format
        jsonEncoder = JSONEncoder()
        jsonEncoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        jsonDecoder = JSONDecoder()
        plistEncoder = PropertyListEncoder()
        plistEncoder.outputFormat = .binary
        plistDecoder = PropertyListDecoder()
    }

    func encode<T: Encodable>(_ value: T) throws -> Data {
        switch format {
        case .json: try jsonEncoder.encode(value)
        case .propertyList: try plistEncoder.encode(value)
        }
    }

    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        switch format {
        case .json: try jsonDecoder.decode(type, from: data)
        case .propertyList: try plistDecoder.decode(type, from: data)
        }
    }
}

/// The stored form of one entity: its name, the layout version, and every
/// record (parents with their relations emptied; children live in their own
/// document).
struct Document<R: Record>: Codable {
    static var currentVersion: Int { 1 }

    var version: Int
    var entity: String
    var records: [R]
}

/// The store's table of contents: which document holds each entity now. It is
/// replaced atomically on every commit, which makes a commit that rewrites
/// several documents (a dialog and its messages) atomic as a whole.
struct Manifest: Codable, Equatable {
    static var fileName: String { "manifest.json" }
    static var currentVersion: Int { 1 }

    var version: Int
    var format: FileFormat
    var generation: UInt64
    var documents: [String: String]
    /// The schema of each entity the store holds, by entity name, in the form
    /// of ``EntitySchema``; absent in stores written before schemas were
    /// recorded. The place for a schema version and applied migrations too.
    var schemas: [String: EntitySchema]?
    /// The store's schema version and the migrations applied (absent until a
    /// ``Migrator`` first runs).
    var migrations: MigrationState?
}
