import DAOCore
import Foundation

/// The encoding of a ``FileStore``'s documents.
public enum FileFormat: String, Sendable, Hashable, CaseIterable, Codable {
    /// UTF-8 JSON, written by `JSONEncoder`. Dates are stored as seconds since
    /// 2001-01-01 UTC, so they round-trip bit for bit; `-0.0` as `-0`;
    /// infinities and NaN as the strings `"+Infinity"`, `"-Infinity"` and
    /// `"NaN"` (a NaN comes back as the canonical NaN, `Double.nan`: its
    /// sign and payload are not kept).
    case json
    /// Binary property lists, written by `PropertyListEncoder`. `-0.0` is
    /// written as a 4-byte real and `0.0` as an 8-byte one in a document
    /// that holds a `-0.0` (the writer stores equal numbers once per
    /// document, and keeps numbers of different sizes apart), so both come
    /// back as given; a NaN comes back as the canonical NaN. A `Date` of
    /// `-0.0` seconds is refused (a date has one spelling).
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
    /// Whether property-list documents are written with their zeros spelled
    /// by their sign and their NaNs canonical (see `RealsRespelled`): set
    /// once the store has met a `-0.0` or a NaN.
    var respellsReals = false
    private let jsonEncoder: JSONEncoder
    private let jsonDecoder: JSONDecoder
    private let plistEncoder: PropertyListEncoder
    private let plistDecoder: PropertyListDecoder

    init(format: FileFormat) {
        self.format = format
        jsonEncoder = JSONEncoder()
        jsonEncoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // JSON has no infinities; every other backend stores them, so JSON
        // writes them as these strings (only a real field reads them back).
        jsonEncoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: Self.positiveInfinity, negativeInfinity: Self.negativeInfinity, nan: Self.notANumber)
        jsonDecoder = JSONDecoder()
        jsonDecoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: Self.positiveInfinity, negativeInfinity: Self.negativeInfinity, nan: Self.notANumber)
        plistEncoder = PropertyListEncoder()
        plistEncoder.outputFormat = .binary
        plistDecoder = PropertyListDecoder()
    }

    static let positiveInfinity = "+Infinity"
    static let negativeInfinity = "-Infinity"
    /// A NaN, whatever its sign and payload; read back as `Double.nan`.
    static let notANumber = "NaN"

    func encode<T: Encodable>(_ value: T) throws -> Data {
        switch format {
        case .json: try jsonEncoder.encode(value)
        case .propertyList:
            respellsReals ? try plistEncoder.encode(RealsRespelled(value: value)) : try plistEncoder.encode(value)
        }
    }

    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        switch format {
        case .json: try jsonDecoder.decode(type, from: data)
        case .propertyList: try plistDecoder.decode(type, from: data)
        }
    }
}

/// A file the store writes for one entity (a document or a delta), which
/// names its layout version and its entity, both checked when it is read.
protocol StoredDocument: Codable {
    /// The layout version this library writes and reads.
    static var currentVersion: Int { get }
    /// What the file is called in error messages.
    static var kind: String { get }
    /// The layout version the file was written with.
    var version: Int { get }
    /// The entity the file holds.
    var entity: String { get }
}

/// The stored form of one entity: its name, the layout version, and every
/// record (parents with their relations emptied; children live in their own
/// document).
struct Document<R: Record>: StoredDocument {
    static var currentVersion: Int { 1 }
    static var kind: String { "document" }

    var version: Int
    var entity: String
    var records: [R]

    enum CodingKeys: String, CodingKey { case version, entity, records }

    init(version: Int, entity: String, records: [R]) {
        self.version = version
        self.entity = entity
        self.records = records
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        entity = try container.decode(String.self, forKey: .entity)
        records = try RefusedRecord.decodeRecords(R.self, from: container, forKey: .records)
    }
}

/// What one commit (or a merge of several) changed in an entity since its
/// base document: the records written, whole, and the primary keys erased.
/// The manifest lists an entity's deltas in order after its base document;
/// reading applies them in that order (see ``Manifest/deltas``).
struct Delta<R: Record>: StoredDocument {
    static var currentVersion: Int { 1 }
    static var kind: String { "delta document" }

    var version: Int
    var entity: String
    /// The records written or replaced, in primary-key order.
    var records: [R]
    /// The primary keys of the records erased (none of them is in `records`).
    var erased: [R.PrimaryKey]

    enum CodingKeys: String, CodingKey { case version, entity, records, erased }

    init(version: Int, entity: String, records: [R], erased: [R.PrimaryKey]) {
        self.version = version
        self.entity = entity
        self.records = records
        self.erased = erased
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        entity = try container.decode(String.self, forKey: .entity)
        records = try RefusedRecord.decodeRecords(R.self, from: container, forKey: .records)
        erased = try container.decode([R.PrimaryKey].self, forKey: .erased)
    }
}

/// An error a record type's own `init(from:)` threw while a document was
/// decoded, told apart from the decoder's errors about the document itself.
///
/// A `DecodingError` from the decoder (the bytes do not parse, the document
/// has no list of records) means the file is damaged: ``StorageError/Kind/corrupt``.
/// An error from inside a record's decoding, a `DecodingError` included,
/// means the record type refused a value the store holds:
/// ``StorageError/Kind/decoding``, as on the other backends.
struct RefusedRecord: Error {
    /// What the record type threw.
    var underlying: any Error

    /// The records of the list under `key`, each decoded by its type; an
    /// error thrown while decoding one is wrapped in a ``RefusedRecord``.
    static func decodeRecords<R: Record, Key: CodingKey>(
        _ type: R.Type, from container: KeyedDecodingContainer<Key>, forKey key: Key
    ) throws -> [R] {
        var list = try container.nestedUnkeyedContainer(forKey: key)
        var records: [R] = []
        if let count = list.count { records.reserveCapacity(count) }
        while !list.isAtEnd {
            records.append(try list.decode(Wrapped<R>.self).record)
        }
        return records
    }

    /// One element of the list: the record, or a ``RefusedRecord``.
    private struct Wrapped<R: Record>: Decodable {
        var record: R

        init(from decoder: any Decoder) throws {
            do {
                record = try R(from: decoder)
            } catch {
                throw RefusedRecord(underlying: error)
            }
        }
    }
}

/// The store's table of contents: which document holds each entity now, and
/// the checksum of each. It is replaced atomically on every commit, which makes
/// a commit that rewrites several documents (a dialog and its messages) atomic
/// as a whole.
///
/// Layout version 2 (this one) adds the store's identity: `storeId`, a random
/// 128-bit hex string chosen when the store is created and written to the
/// manifest before any document carries it. Documents are named
/// `dao-<storeId>-<generation>-<entity>.<ext>`, so the store can prove a file is
/// its own before it removes it. Version 1 manifests (no identity, documents
/// named `<entity>-<generation>.<ext>`) are upgraded in place at open.
///
/// Layout version 3 adds ``deltas``: small commits write what they changed as
/// a delta document instead of rewriting the entity's whole document. A
/// version 2 manifest is read as it is (it has no deltas) and written as
/// version 3 by the next commit; a library that reads only version 2 refuses
/// a version 3 manifest rather than miss its deltas.
struct Manifest: Codable, Equatable {
    static var fileName: String { "manifest.json" }
    static var currentVersion: Int { 3 }

    var version: Int
    var format: FileFormat
    /// The store's identity (version 2; `nil` in a version 1 manifest).
    var storeId: String?
    var generation: UInt64
    /// Entity name → document file name.
    var documents: [String: String]
    /// The schema of each entity the store holds, by entity name, in the form
    /// of ``EntitySchema``; absent in stores written before schemas were
    /// recorded. The place for a schema version and applied migrations too.
    var schemas: [String: EntitySchema]?
    /// The store's schema version and the migrations applied (absent until a
    /// ``Migrator`` first runs).
    var migrations: MigrationState?
    /// Document file name → its CRC-32C and size (version 2; documents carried
    /// over from a version 1 store have none).
    var checksums: [String: DocumentChecksum]?
    /// Entity name → its delta documents (``Delta``), oldest first, applied in
    /// that order over the entity's document (version 3; absent or empty when
    /// the document is complete). Every delta has a checksum in ``checksums``.
    var deltas: [String: [String]]?
    /// The CRC-32C of ``canonicalText``, so a damaged manifest that still
    /// parses is refused rather than believed (version 2).
    var checksum: UInt32?

    /// Every field but ``checksum``, in a fixed order and notation of its own
    /// (not JSONEncoder's, which may change between toolchains). A field added
    /// to the manifest must be added here too, or the checksum does not cover it.
    var canonicalText: String {
        var text = "v\(version) \(format.rawValue) \(storeId ?? "-") g\(generation)"
        for (entity, name) in documents.sorted(by: { $0.key < $1.key }) {
            text += " \(entity.utf8.count):\(entity)=\(name.utf8.count):\(name)"
        }
        for (name, sum) in (checksums ?? [:]).sorted(by: { $0.key < $1.key }) {
            text += " \(name.utf8.count):\(name)#\(sum.crc32c)/\(sum.size)"
        }
        for (entity, schema) in (schemas ?? [:]).sorted(by: { $0.key < $1.key }) {
            text += " schema \(Self.field(entity)) \(Self.canonicalText(of: schema))"
        }
        for (entity, names) in (deltas ?? [:]).sorted(by: { $0.key < $1.key }) where !names.isEmpty {
            text += " deltas \(Self.field(entity)) \(names.count) " + names.map(Self.field).joined(separator: " ")
        }
        if let migrations {
            text += " migrations f\(migrations.format) v\(migrations.version) \(migrations.applied.count)"
            for name in migrations.applied { text += " \(Self.field(name))" }
        }
        return text
    }

    /// A string as its UTF-8 length, a colon and itself, so no two lists of
    /// strings read the same.
    private static func field(_ text: String) -> String { "\(text.utf8.count):\(text)" }

    private static func canonicalText(of schema: EntitySchema) -> String {
        var text = "f\(schema.format) \(field(schema.entity)) owner \(schema.owner.map(field) ?? "-")"
        text += " fields \(schema.fields.count)"
        for item in schema.fields {
            text += " \(field(item.name)) \(field(item.type.rawValue)) \(item.optional ? 1 : 0)"
        }
        text += " indexes \(schema.indexes.count)"
        for index in schema.indexes {
            text += " \(field(index.name)) \(index.fields.count) " + index.fields.map(field).joined(separator: " ")
        }
        text += " relations \(schema.relations.count)"
        for relation in schema.relations {
            text += " \(field(relation.name)) \(field(relation.child)) \(field(relation.foreignKey))"
        }
        return text
    }

    /// Every file the manifest names: documents and deltas.
    var referencedFiles: Set<String> {
        var names = Set(documents.values)
        for list in (deltas ?? [:]).values { names.formUnion(list) }
        return names
    }

    /// The manifest with ``checksum`` set from the other fields.
    func sealed() -> Manifest {
        var copy = self
        copy.checksum = CRC32C.checksum(Array(canonicalText.utf8))
        return copy
    }

    /// Whether ``checksum`` matches the other fields.
    var isIntact: Bool {
        checksum == CRC32C.checksum(Array(canonicalText.utf8))
    }
}

/// What a document's bytes must be: their CRC-32C and count.
struct DocumentChecksum: Codable, Equatable {
    var crc32c: UInt32
    var size: Int
}

/// The first fields of a document, to recognize one without decoding its records.
struct DocumentHeader: Decodable {
    var version: Int
    var entity: String
}
