import DAOCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension FileStore: MigratableStore {
    /// Runs a migration as one commit of the store: the documents it rewrites
    /// are written once each, under the next generation, then the manifest
    /// that names them (with the new schemas and the migration record) replaces
    /// the old one atomically. Until then the old documents and manifest stand,
    /// so a failure or a crash leaves the store as it was.
    ///
    /// - Throws: ``StorageError/Kind/invalidArgument`` once a storage was handed
    ///   out (migrate before `storage(for:)`); ``StorageError/Kind/closed``
    ///   after ``close()``; what `body` and writing throw.
    public func withMigrationTransaction<T>(_ body: (any MigrationTransaction) throws -> T) throws -> T {
        try writer.withLock {
            try state.withLock { state in
                guard !state.isClosed else { throw StorageError.closed(.open, path: location.path) }
                guard !state.hasLoadedTables else {
                    throw StorageError(
                        .invalidArgument, .open, path: location.path,
                        message: "a migration must run before the store hands out storages")
                }
                let txn = FileMigrationTransaction(state: state, format: format, durability: durability)
                do {
                    let result = try body(txn)
                    if let next = try txn.commit() { state.adopt(migrated: next) }
                    return result
                } catch {
                    throw StoreState.wrap(error, .open, "", path: location.path)
                }
            }
        }
    }
}

/// A migration's view of a file store: documents read through a
/// schema-driven row coder, rewritten documents held until the commit.
final class FileMigrationTransaction: MigrationTransaction {
    /// The store's state, for reading its documents (checked against their checksums).
    private let state: StoreState
    let directory: URL
    let format: FileFormat
    let durability: Durability
    private let original: Manifest
    private var manifest: Manifest
    /// Rewritten documents by entity, written at the commit.
    private var documents: [String: Data] = [:]
    private var changed = false

    init(state: StoreState, format: FileFormat, durability: Durability) {
        self.state = state
        self.directory = state.directory
        self.format = format
        self.durability = durability
        self.original = state.manifest
        self.manifest = state.manifest
    }

    func recordedSchemas() throws -> [String: EntitySchema] { manifest.schemas ?? [:] }

    func metadata(_ key: String) throws -> [UInt8]? {
        guard key == StoreMetadataKey.migrations else { return nil }
        return try manifest.migrations?.encoded()
    }

    func setMetadata(_ key: String, _ value: [UInt8]) throws {
        guard key == StoreMetadataKey.migrations else {
            throw StorageError(.invalidArgument, .open, message: "a file store records no metadata '\(key)'")
        }
        manifest.migrations = try MigrationState.decode(value)
        changed = true
    }

    func rows(of schema: EntitySchema, in schemas: [String: EntitySchema]) throws -> [[StoredValue]] {
        let data: Data
        if let pending = documents[schema.entity] {
            data = pending
        } else if let name = manifest.documents[schema.entity] {
            data = try state.documentData(named: name, entity: schema.entity)
        } else {
            return []
        }
        do {
            let decoder = RowCoder(format: format, schema: schema)
            let document = try decoder.decode(data)
            let deltas = documents[schema.entity] == nil ? manifest.deltas?[schema.entity] ?? [] : []
            guard !deltas.isEmpty else { return document.records.map(\.values) }
            // Apply the entity's deltas, as loading a table does, by primary key (the first field).
            var rows: [StoredValue: [StoredValue]] = [:]
            for row in document.records { rows[row.values[0]] = row.values }
            for name in deltas {
                let delta = try decoder.decodeDelta(try state.documentData(named: name, entity: schema.entity))
                for key in delta.erased { rows[key] = nil }
                for row in delta.records { rows[row.values[0]] = row.values }
            }
            return rows.keys.sorted().compactMap { rows[$0] }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(
                .corrupt, .open, entity: schema.entity,
                message: "the document does not decode with the stored schema: \(StoreState.describe(error))",
                underlying: error)
        }
    }

    func rewrite(
        from old: EntitySchema?, to new: EntitySchema, rows: [[StoredValue]], in schemas: [String: EntitySchema]
    ) throws {
        if let old, old.entity != new.entity {
            documents[old.entity] = nil
            manifest.documents[old.entity] = nil
            manifest.deltas?[old.entity] = nil
            manifest.schemas?[old.entity] = nil
        }
        do {
            documents[new.entity] = try RowCoder(format: format, schema: new).encode(rows)
        } catch {
            throw StorageError(
                .encoding, .open, entity: new.entity,
                message: "the migrated records could not be encoded: \(StoreState.describe(error))", underlying: error)
        }
        setSchema(new)
    }

    func drop(_ schema: EntitySchema, in schemas: [String: EntitySchema]) throws {
        // Its documents are no longer named; the commit removes them.
        documents[schema.entity] = nil
        manifest.documents[schema.entity] = nil
        manifest.deltas?[schema.entity] = nil
        manifest.schemas?[schema.entity] = nil
        changed = true
    }

    func record(_ schema: EntitySchema) throws {
        // Each record of a document lists its relations (as empty lists: the
        // children live in their own document), as the record type codes it:
        // a relation added or dropped re-encodes the entity's document.
        if let old = manifest.schemas?[schema.entity],
            Set(old.relations.map(\.name)) != Set(schema.relations.map(\.name)),
            documents[schema.entity] != nil || manifest.documents[schema.entity] != nil
        {
            let rows = try rows(of: old, in: [:])
            do {
                documents[schema.entity] = try RowCoder(format: format, schema: schema).encode(rows)
            } catch {
                throw StorageError(
                    .encoding, .open, entity: schema.entity,
                    message: "the migrated records could not be encoded: \(StoreState.describe(error))", underlying: error)
            }
        }
        setSchema(schema)
    }

    private func setSchema(_ schema: EntitySchema) {
        var schemas = manifest.schemas ?? [:]
        schemas[schema.entity] = schema
        manifest.schemas = schemas
        changed = true
    }

    /// Writes the rewritten documents, then the manifest (sealed with its
    /// checksum, as every commit writes it); returns it, or `nil` when nothing
    /// changed. On failure the new files are removed and the old manifest stands.
    func commit() throws -> Manifest? {
        guard changed || !documents.isEmpty else { return nil }
        guard let storeId = original.storeId else {
            throw StorageError(.corrupt, .open, path: directory.path, message: "the store's manifest has no identity")
        }
        var next = manifest
        next.version = Manifest.currentVersion
        next.generation = original.generation + 1
        var written: [URL] = []
        do {
            for (entity, data) in documents.sorted(by: { $0.key < $1.key }) {
                let name = StoreFiles.documentName(
                    storeId: storeId, generation: next.generation, entity: entity, format: format)
                let url = directory.appendingPathComponent(name)
                try FileIO.create(url, data: data, sync: durability == .full, operation: .open)
                written.append(url)
                next.documents[entity] = name
                // The rewritten document holds the deltas' changes.
                next.deltas?[entity] = nil
                next.checksums = next.checksums ?? [:]
                next.checksums?[name] = DocumentChecksum(crc32c: CRC32C.checksum(data), size: data.count)
            }
            if next.deltas?.isEmpty == true { next.deltas = nil }
            let kept = next.referencedFiles
            for name in original.referencedFiles where !kept.contains(name) { next.checksums?[name] = nil }
            next = try FileStore.write(next, in: directory, durability: durability, operation: .open)
        } catch {
            for url in written { unlink(url.path) }
            throw error
        }
        let kept = next.referencedFiles
        var named = original.documents.map { (entity: $0.key, name: $0.value) }
        for (entity, names) in original.deltas ?? [:] { named += names.map { (entity, $0) } }
        for (entity, name) in named where !kept.contains(name) {
            // No longer named by the manifest; the next open removes it if this fails.
            if StoreFiles.mayRemoveSuperseded(name, entity: entity, storeId: storeId) {
                unlink(directory.appendingPathComponent(name).path)
            }
        }
        return next
    }
}

// MARK: - Rows as documents

private let schemaKey = CodingUserInfoKey(rawValue: "dao.migration.schema")!

/// Reads and writes a document's records as rows of one schema, with the same
/// encoders (and so the same representation of every type) as the store's
/// records: JSON with sorted keys, dates as seconds since 2001, data as
/// base64; binary property lists with native dates and data.
struct RowCoder {
    let format: FileFormat
    let schema: EntitySchema

    func decode(_ data: Data) throws -> RowDocument {
        switch format {
        case .json:
            let decoder = Self.jsonDecoder()
            decoder.userInfo[schemaKey] = schema
            return try decoder.decode(RowDocument.self, from: data)
        case .propertyList:
            let decoder = PropertyListDecoder()
            decoder.userInfo[schemaKey] = schema
            return try decoder.decode(RowDocument.self, from: data)
        }
    }

    /// Decodes a delta document (``Delta``) as rows and erased keys.
    func decodeDelta(_ data: Data) throws -> RowDelta {
        switch format {
        case .json:
            let decoder = Self.jsonDecoder()
            decoder.userInfo[schemaKey] = schema
            return try decoder.decode(RowDelta.self, from: data)
        case .propertyList:
            let decoder = PropertyListDecoder()
            decoder.userInfo[schemaKey] = schema
            return try decoder.decode(RowDelta.self, from: data)
        }
    }

    /// A JSON decoder that reads infinities as the store writes them (``DocumentCoder``).
    private static func jsonDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: DocumentCoder.positiveInfinity, negativeInfinity: DocumentCoder.negativeInfinity,
            nan: DocumentCoder.notANumber)
        return decoder
    }

    func encode(_ rows: [[StoredValue]]) throws -> Data {
        let document = RowDocument(
            version: 1, entity: schema.entity, records: rows.map { DocumentRow(values: $0) })
        switch format {
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            encoder.nonConformingFloatEncodingStrategy = .convertToString(
                positiveInfinity: DocumentCoder.positiveInfinity, negativeInfinity: DocumentCoder.negativeInfinity,
                nan: DocumentCoder.notANumber)
            encoder.userInfo[schemaKey] = schema
            return try encoder.encode(document)
        case .propertyList:
            // As the store refuses a date of -0.0 seconds
            // (`Entity.checkRealsForPropertyList(_:)`): the writer would
            // merge it with a date of 0.0 in the same document.
            for row in rows {
                for (field, value) in zip(schema.fields, row) where field.type == .date {
                    guard case .real(let real) = value, real == 0, real.sign == .minus else { continue }
                    throw StorageError(
                        .invalidArgument, .open, entity: schema.entity,
                        message: "the date of -0.0 seconds in field '\(field.name)' of '\(schema.entity)' cannot be kept apart from a date of 0.0 in a property-list store (its format stores equal dates once); use nil or the date of 0.0 seconds, the same instant")
                }
            }
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .binary
            encoder.userInfo[schemaKey] = schema
            // Every real spelled apart (`RealsRespelled`): a migration is rare,
            // and its rows are not scanned for a -0.0 or a NaN first.
            return try encoder.encode(RealsRespelled(value: document))
        }
    }
}

/// A document in the shape of ``Document``, holding rows.
struct RowDocument: Codable {
    var version: Int
    var entity: String
    var records: [DocumentRow]
}

/// A delta document (``Delta``) holding rows, and its erased primary keys as
/// stored values of the schema's first field.
struct RowDelta: Decodable {
    var version: Int
    var entity: String
    var records: [DocumentRow]
    var erased: [StoredValue]

    private enum CodingKeys: String, CodingKey {
        case version, entity, records, erased
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        entity = try container.decode(String.self, forKey: .entity)
        records = try container.decode([DocumentRow].self, forKey: .records)
        guard let schema = decoder.userInfo[schemaKey] as? EntitySchema, let key = schema.fields.first else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "no schema given"))
        }
        var keys = try container.nestedUnkeyedContainer(forKey: .erased)
        var erased: [StoredValue] = []
        while !keys.isAtEnd {
            switch key.type {
            case .integer: erased.append(.integer(try keys.decode(Int64.self)))
            case .text: erased.append(.text(try keys.decode(String.self)))
            default:
                throw DecodingError.dataCorrupted(
                    .init(codingPath: keys.codingPath, debugDescription: "a primary key of type \(key.type.rawValue)"))
            }
        }
        self.erased = erased
    }
}

private struct NameKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// One record as a row: coded field by field, by the schema's types, as the
/// record type's synthesized `Codable` conformance codes it (`nil` as an
/// absent key, relations as empty lists: children live in their own document).
struct DocumentRow: Codable {
    var values: [StoredValue]

    init(values: [StoredValue]) {
        self.values = values
    }

    private static func schema(_ userInfo: [CodingUserInfoKey: Any], _ path: [any CodingKey]) throws -> EntitySchema {
        guard let schema = userInfo[schemaKey] as? EntitySchema else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "no schema given"))
        }
        return schema
    }

    init(from decoder: any Decoder) throws {
        let schema = try Self.schema(decoder.userInfo, decoder.codingPath)
        let container = try decoder.container(keyedBy: NameKey.self)
        values = try schema.fields.map { field in
            let key = NameKey(field.name)
            guard container.contains(key), try !container.decodeNil(forKey: key) else {
                if field.optional { return .null }
                throw DecodingError.keyNotFound(
                    key, .init(codingPath: container.codingPath, debugDescription: "no value for '\(field.name)'"))
            }
            switch field.type {
            case .integer: return .integer(try container.decode(Int64.self, forKey: key))
            case .bool: return .integer(try container.decode(Bool.self, forKey: key) ? 1 : 0)
            case .real: return .real(try container.decode(Double.self, forKey: key))
            case .date: return .real(try container.decode(Date.self, forKey: key).storedSeconds)
            case .text: return .text(try container.decode(String.self, forKey: key))
            case .blob: return .blob([UInt8](try container.decode(Data.self, forKey: key)))
            }
        }
    }

    func encode(to encoder: any Encoder) throws {
        let schema = try Self.schema(encoder.userInfo, encoder.codingPath)
        var container = encoder.container(keyedBy: NameKey.self)
        for (field, value) in zip(schema.fields, values) {
            let key = NameKey(field.name)
            switch (field.type, value) {
            case (_, .null): continue
            case (.bool, .integer(let number)): try container.encode(number != 0, forKey: key)
            case (.integer, .integer(let number)): try container.encode(number, forKey: key)
            case (.date, .real(let seconds)):
                try container.encode(Date(storedSeconds: seconds), forKey: key)
            case (.real, .real(let number)): try container.encode(number, forKey: key)
            case (.text, .text(let text)): try container.encode(text, forKey: key)
            case (.blob, .blob(let bytes)): try container.encode(Data(bytes), forKey: key)
            default:
                throw EncodingError.invalidValue(
                    value, .init(codingPath: encoder.codingPath, debugDescription: "not a value of field \(field)"))
            }
        }
        for relation in schema.relations {
            try container.encode([Int](), forKey: NameKey(relation.name))
        }
    }
}
