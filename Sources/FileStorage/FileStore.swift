import DAOCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A store that keeps each entity in one document file (JSON or binary property
/// list) in a directory, read whole into memory once and indexed there.
///
/// ```swift
/// let store = try FileStore(directory: url, format: .json)
/// let dialogs = DAO(storage: try store.storage(for: DialogRecord.self),
///                   translator: DialogTranslator())
/// try dialogs.persist(dialog)
/// ```
///
/// Layout: `manifest.json` names the current document of each entity
/// (`dialogs-7.json`, `messages-7.json`). A commit writes new documents for the
/// entities it changed, then replaces the manifest atomically (temporary file,
/// sync, rename, directory sync), so a commit that touches a parent and its
/// children is atomic as a whole: after a crash the store holds either the old
/// or the new documents. Superseded documents are removed after the commit, or
/// at the next open if the process died first.
///
/// Every call rewrites the documents of the entities it changes: whole-file
/// stores are made for small data sets and for reading, not for many small
/// writes. The directory belongs to the store; one `FileStore` at a time may
/// have it open (another gets a ``StorageError/Kind/busy`` error).
public final class FileStore: Store {
    /// The store's directory.
    public let location: URL
    /// The document format.
    public let format: FileFormat
    /// When commits reach the disk.
    public let durability: Durability
    private let lock: DirectoryLock
    let state: Mutex<StoreState>

    /// Opens the store in `directory`, creating the directory if it is missing.
    ///
    /// - Throws: ``StorageError``: ``StorageError/Kind/io`` when the directory
    ///   cannot be created or read, ``StorageError/Kind/busy`` when another store
    ///   has it open, ``StorageError/Kind/corrupt`` when its manifest is damaged,
    ///   ``StorageError/Kind/schemaMismatch`` when it was written in the other format.
    public init(directory: URL, format: FileFormat = .json, durability: Durability = .full) throws {
        location = directory.standardizedFileURL
        self.format = format
        self.durability = durability
        do {
            try FileManager.default.createDirectory(at: location, withIntermediateDirectories: true)
        } catch {
            throw StorageError(
                .io, .open, path: location.path, message: "the store's directory could not be created",
                underlying: error)
        }
        lock = try DirectoryLock(directory: location)
        let manifest = try Self.loadManifest(in: location, format: format)
        try Self.removeUnreferencedFiles(in: location, manifest: manifest)
        state = Mutex(StoreState(directory: location, format: format, durability: durability, manifest: manifest))
    }

    /// A storage for records of type `type`, loading its entity's document (and
    /// those of its owner and children) on first use.
    ///
    /// The manifest records each entity's schema (``EntitySchema``), written
    /// when the entity is first opened; a record type that differs from it is
    /// refused before any document is read.
    ///
    /// - Throws: ``StorageError`` when a document cannot be read or decoded, or
    ///   the entity's declaration is invalid; ``StorageError/Kind/schemaMismatch``
    ///   naming every difference when the schema recorded for the entity (or
    ///   for its owners or children) differs from the declaration;
    ///   ``StorageError/Kind/closed`` after ``close()``.
    public func storage<R: Record>(for type: R.Type) throws -> FileStorage<R> {
        try R.entity.validate()
        try state.withLock { state in
            guard !state.isClosed else { throw StorageError.closed(.open, entity: R.entity.name, path: location.path) }
            do {
                try state.checkSchemas(of: R.self)
            } catch let error as StorageError {
                throw error.with(entity: R.entity.name, path: location.appendingPathComponent(Manifest.fileName).path)
            }
            _ = try state.table(R.self)
        }
        return FileStorage(store: self)
    }

    /// Closes the store: waits for the call in progress, forgets the loaded
    /// documents and releases the directory's lock, so the directory can be
    /// opened again. Every commit is on disk already. Later calls through the
    /// store or its storages throw ``StorageError/Kind/closed``; closing again
    /// does nothing.
    public func close() {
        state.withLock { state in
            guard !state.isClosed else { return }
            state.close()
            lock.release()
        }
    }

    public func anyStorage<R: Record>(for type: R.Type) throws -> AnyStorage<R> {
        AnyStorage(try storage(for: type))
    }

    /// The format and how commits reach the disk, e.g. `format=json sync=fsync+rename+dirsync`.
    public var settingsDescription: String {
        let sync = durability == .full ? "fsync+rename+dirsync" : "none (rename only)"
        return "format=\(format.rawValue) sync=\(sync)"
    }

    // MARK: Access for storages

    /// Runs `body` on the loaded state, under the store's lock.
    func read<T>(
        _ operation: StorageError.Operation, _ entity: String, _ body: (StoreState) throws -> T
    ) throws -> T {
        try state.withLock { state in
            guard !state.isClosed else { throw StorageError.closed(operation, entity: entity, path: location.path) }
            do {
                return try body(state)
            } catch {
                throw StoreState.wrap(error, operation, entity, path: location.path)
            }
        }
    }

    /// Runs `body` as one transaction: on success the changed documents are
    /// written and the manifest replaced; on any error the in-memory state is
    /// restored and nothing on disk changes.
    func write<T>(
        _ operation: StorageError.Operation, _ entity: String, _ body: (StoreState) throws -> T
    ) throws -> T {
        try state.withLock { state in
            guard !state.isClosed else { throw StorageError.closed(operation, entity: entity, path: location.path) }
            state.begin()
            do {
                let result = try body(state)
                try state.commit()
                return result
            } catch {
                state.rollback()
                throw StoreState.wrap(error, operation, entity, path: location.path)
            }
        }
    }

    // MARK: Opening

    private static func loadManifest(in directory: URL, format: FileFormat) throws -> Manifest {
        let url = directory.appendingPathComponent(Manifest.fileName)
        guard FileManager.default.fileExists(atPath: url.path) else {
            return Manifest(version: Manifest.currentVersion, format: format, generation: 0, documents: [:])
        }
        let data = try FileIO.read(url, operation: .open)
        let manifest: Manifest
        do {
            manifest = try JSONDecoder().decode(Manifest.self, from: data)
        } catch {
            throw StorageError(
                .corrupt, .open, path: url.path, message: "the store's manifest is not a valid manifest",
                underlying: error)
        }
        guard manifest.version == Manifest.currentVersion else {
            throw StorageError(
                .schemaMismatch, .open, path: url.path,
                message: "the manifest has layout version \(manifest.version); this library reads version \(Manifest.currentVersion)")
        }
        guard manifest.format == format else {
            throw StorageError(
                .schemaMismatch, .open, path: directory.path,
                message: "the store was written as \(manifest.format.rawValue), not \(format.rawValue)")
        }
        return manifest
    }

    /// Removes documents no manifest names and temporary files: what a process
    /// that died mid-commit, or after a commit but before its clean-up, left.
    private static func removeUnreferencedFiles(in directory: URL, manifest: Manifest) throws {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw StorageError(
                .io, .open, path: directory.path, message: "the store's directory could not be listed",
                underlying: error)
        }
        let referenced = Set(manifest.documents.values)
        for name in names where !referenced.contains(name) && StoreState.isStoreFile(name) {
            try FileIO.removeIfPresent(directory.appendingPathComponent(name))
        }
    }
}

/// The loaded tables and the manifest.
///
/// `@unchecked Sendable`: the only reference lives inside `FileStore`'s `Mutex`,
/// and every use is inside `withLock`, so no two threads touch it at once.
final class StoreState: @unchecked Sendable {
    let directory: URL
    let coder: DocumentCoder
    let durability: Durability
    private(set) var manifest: Manifest
    private var tables: [String: any AnyTable] = [:]
    private var inTransaction = false
    /// Set by ``close()``.
    private(set) var isClosed = false

    init(directory: URL, format: FileFormat, durability: Durability, manifest: Manifest) {
        self.directory = directory
        self.coder = DocumentCoder(format: format)
        self.durability = durability
        self.manifest = manifest
    }

    /// Whether a storage has loaded an entity's table (a migration must come first).
    var hasLoadedTables: Bool { !tables.isEmpty }

    /// Takes `next` as the manifest a migration committed.
    func adopt(migrated next: Manifest) {
        manifest = next
    }

    /// Forgets the loaded tables; the store is closed.
    func close() {
        isClosed = true
        tables.removeAll()
    }

    // MARK: Schemas

    /// Checks the schemas the manifest records for the entities a storage for
    /// `type` sets up against their declarations, then records those it does
    /// not hold yet by replacing the manifest (atomically, as a commit does).
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` naming every difference;
    ///   what writing the manifest throws.
    func checkSchemas<R: Record>(of type: R.Type) throws {
        try EntitySchema.checkTree(for: type) { manifest.schemas?[$0] }
        let missing = EntitySchema.tree(for: type).filter { manifest.schemas?[$0.entity] == nil }
        guard !missing.isEmpty else { return }
        for schema in missing {
            try checkUnrecordedDocument(of: schema)
        }
        var next = manifest
        var schemas = next.schemas ?? [:]
        for schema in missing { schemas[schema.entity] = schema }
        next.schemas = schemas
        try FileIO.replace(
            directory.appendingPathComponent(Manifest.fileName), data: try JSONEncoder.manifest.encode(next),
            sync: durability == .full, operation: .open)
        manifest = next
    }

    /// For a store written before schemas were recorded: refuses a document
    /// whose records hold keys that `schema` does not declare (a field the
    /// record type dropped), which decoding would silently skip and the next
    /// write would erase. Types cannot be told from a document, so only the
    /// names are compared.
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` naming the keys;
    ///   ``StorageError/Kind/corrupt`` when the document is not one.
    private func checkUnrecordedDocument(of schema: EntitySchema) throws {
        guard let name = manifest.documents[schema.entity] else { return }
        let url = directory.appendingPathComponent(name)
        let data = try FileIO.read(url, operation: .open)
        let tree: Any
        do {
            switch coder.format {
            case .json: tree = try JSONSerialization.jsonObject(with: data)
            case .propertyList: tree = try PropertyListSerialization.propertyList(from: data, format: nil)
            }
        } catch {
            throw StorageError(
                .corrupt, .open, entity: schema.entity, path: url.path, message: "the document does not parse",
                underlying: error)
        }
        guard let records = (tree as? [String: Any])?["records"] as? [[String: Any]] else {
            throw StorageError(
                .corrupt, .open, entity: schema.entity, path: url.path, message: "the document holds no list of records")
        }
        let declared = Set(schema.fields.map(\.name) + schema.relations.map(\.name))
        var undeclared = Set<String>()
        for record in records {
            for key in record.keys where !declared.contains(key) { undeclared.insert(key) }
        }
        guard !undeclared.isEmpty else { return }
        throw StorageError(
            .schemaMismatch, .open, entity: schema.entity, path: url.path,
            message: "the document, written before schemas were recorded, holds the field(s) "
                + undeclared.sorted().map { "'\($0)'" }.joined(separator: ", ")
                + " that the record type does not declare (a store is never changed to fit a record type; see docs/SCHEMA.md)")
    }

    // MARK: Tables

    /// The table of `R`, loaded from its document on first use together with
    /// its owner's and its children's tables.
    func table<R: Record>(_ type: R.Type) throws -> Table<R> {
        let name = R.entity.name
        if let table = tables[name] {
            guard let typed = table as? Table<R> else {
                throw StorageError(
                    .schemaMismatch, .open, entity: name,
                    message: "two record types declare the entity name '\(name)'; one store can hold only one")
            }
            return typed
        }
        if let owner = R.entity.owner, tables[owner.entityName] == nil {
            try loadOwner(owner)
            if let table = tables[name] as? Table<R> { return table }
        }
        let foreignKey = R.entity.owner.flatMap { $0.ownedRelation(for: R.self)?.foreignKeyField }
        let documentName = manifest.documents[name]
        let records = try documentName.map { try loadDocument(R.self, named: $0) } ?? []
        let table = Table<R>(records: records, documentName: documentName, foreignKey: foreignKey)
        tables[name] = table
        if inTransaction { table.begin() }
        for relation in R.entity.relations {
            try loadChildTable(relation)
        }
        return table
    }

    private func loadOwner<O: Record>(_ owner: O.Type) throws {
        _ = try table(owner)
    }

    private func loadChildTable<Relation: ToManyRelation>(_ relation: Relation) throws {
        _ = try table(Relation.Child.self)
    }

    private func loadDocument<R: Record>(_ type: R.Type, named name: String) throws -> [R] {
        let url = directory.appendingPathComponent(name)
        let data = try FileIO.read(url, operation: .open)
        let document: Document<R>
        do {
            document = try coder.decode(Document<R>.self, from: data)
        } catch {
            throw StorageError(
                .corrupt, .open, entity: R.entity.name, path: url.path,
                message: "the document does not decode as '\(R.entity.name)' records: \(Self.describe(error))",
                underlying: error)
        }
        guard document.version == Document<R>.currentVersion else {
            throw StorageError(
                .schemaMismatch, .open, entity: R.entity.name, path: url.path,
                message: "the document has layout version \(document.version); this library reads version \(Document<R>.currentVersion)")
        }
        guard document.entity == R.entity.name else {
            throw StorageError(
                .corrupt, .open, entity: R.entity.name, path: url.path,
                message: "the document holds entity '\(document.entity)', not '\(R.entity.name)'")
        }
        return document.records
    }

    // MARK: Transactions

    func begin() {
        inTransaction = true
        for table in tables.values { table.begin() }
    }

    func rollback() {
        for table in tables.values { table.rollback() }
        inTransaction = false
    }

    /// Writes a new document for every changed table, then the manifest that
    /// names them, then removes the documents they replace.
    func commit() throws {
        defer { inTransaction = false }
        let dirty = tables.values.filter(\.isDirty)
        guard !dirty.isEmpty else {
            for table in tables.values { table.commit() }
            return
        }
        let sync = durability == .full
        var next = manifest
        next.generation += 1
        var written: [URL] = []
        do {
            for table in dirty {
                let name = "\(table.entityName)-\(next.generation).\(coder.format.fileExtension)"
                let url = directory.appendingPathComponent(name)
                let data: Data
                do {
                    data = try table.encodeDocument(with: coder)
                } catch {
                    throw StorageError(
                        .encoding, .persist, entity: table.entityName, path: url.path,
                        message: "the records could not be encoded: \(Self.describe(error))", underlying: error)
                }
                try FileIO.create(url, data: data, sync: sync, operation: .persist)
                written.append(url)
                next.documents[table.entityName] = name
            }
            let manifestData = try JSONEncoder.manifest.encode(next)
            try FileIO.replace(
                directory.appendingPathComponent(Manifest.fileName), data: manifestData, sync: sync,
                operation: .persist)
        } catch {
            // The manifest still names the old documents; the new ones are unreferenced.
            for url in written { unlink(url.path) }
            throw error
        }
        let superseded = dirty.compactMap(\.documentName)
        manifest = next
        for table in dirty { table.documentName = next.documents[table.entityName] }
        for table in tables.values { table.commit() }
        for name in superseded {
            // A document the manifest no longer names; if it cannot be removed now,
            // the next open removes it. Nothing refers to it either way.
            unlink(directory.appendingPathComponent(name).path)
        }
    }

    // MARK: Errors

    static func wrap(_ error: any Error, _ operation: StorageError.Operation, _ entity: String, path: String)
        -> StorageError
    {
        if let error = error as? StorageError {
            return error.with(operation: error.operation == .open ? nil : operation, entity: entity, path: path)
        }
        return StorageError(.engine, operation, entity: entity, path: path, message: describe(error), underlying: error)
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context):
            return "data corrupted at \(codingPath(context.codingPath)): \(context.debugDescription)"
        case DecodingError.keyNotFound(let key, let context):
            return "missing key '\(key.stringValue)' at \(codingPath(context.codingPath))"
        case DecodingError.typeMismatch(let type, let context):
            return "expected \(type) at \(codingPath(context.codingPath)): \(context.debugDescription)"
        case DecodingError.valueNotFound(let type, let context):
            return "missing \(type) value at \(codingPath(context.codingPath))"
        case EncodingError.invalidValue(let value, let context):
            return "invalid value \(value) at \(codingPath(context.codingPath)): \(context.debugDescription)"
        default:
            return String(describing: error)
        }
    }

    private static func codingPath(_ path: [any CodingKey]) -> String {
        path.isEmpty ? "the top level" : path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    /// Whether `name` is a file this store writes (a document or a temporary
    /// file), as opposed to a file someone else put in the directory.
    static func isStoreFile(_ name: String) -> Bool {
        if name.hasPrefix(".") && name.hasSuffix(".tmp") { return true }
        for format in FileFormat.allCases where name.hasSuffix(".\(format.fileExtension)") {
            let stem = name.dropLast(format.fileExtension.count + 1)
            guard let dash = stem.lastIndex(of: "-") else { return false }
            let generation = stem[stem.index(after: dash)...]
            return !generation.isEmpty && generation.allSatisfy(\.isASCII) && generation.allSatisfy(\.isNumber)
        }
        return false
    }
}

extension JSONEncoder {
    static var manifest: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return encoder
    }
}
