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
/// Layout (version 3; see the README's "File store layout"): `manifest.json`
/// holds the store's identity (a random `storeId`), a generation, the current
/// document of each entity, the delta documents that follow it, and each
/// file's CRC-32C and size. Documents and deltas are named
/// `dao-<storeId>-<generation>-<entity>.json` (or `.plist`). A commit writes,
/// for each entity it changed, either a delta (the records it wrote and the
/// keys it erased, when the changes since the entity's document cover at most
/// half its records) or a new whole document, then replaces the manifest
/// atomically (temporary file, sync, rename, directory sync), so a commit that
/// touches a parent and its children is atomic as a whole: after a crash the
/// store holds either the old or the new state. Superseded files are removed
/// after the commit, or at the next open if the process died first.
///
/// The store removes only files it can prove it wrote: documents carrying its
/// own identity that the manifest no longer names, and the manifest's own
/// temporary files. Other files in the directory are left alone. A missing
/// manifest beside store documents, a document that is missing, or one whose
/// checksum does not match is ``StorageError/Kind/corrupt``, never an empty
/// store. A version 1 store (no identity) is upgraded at open: its manifest is
/// rewritten with an identity and its documents are kept as they are; a
/// version 2 manifest is read as it is and written as version 3 by the next
/// commit.
///
/// A small commit costs what it changed (plus the manifest); eight deltas
/// of an entity are merged into one by the next commit, and once the
/// changes since the document reach half its records the next commit writes
/// the whole document again. The whole store is held in memory. The directory belongs to the store; one `FileStore` at a time may
/// have it open (another gets a ``StorageError/Kind/busy`` error).
public final class FileStore: Store {
    /// The store's directory.
    public let location: URL
    /// The document format.
    public let format: FileFormat
    /// When commits reach the disk.
    public let durability: Durability
    /// Tells observers what each commit changed. Only this instance writes the
    /// directory (it holds it exclusively), so observation is in-process only.
    public let commits = CommitBroadcaster()
    /// The threads the `async` calls of the store's storages run on: one
    /// writer thread and ``StoreExecutor/defaultReaderCount`` reader threads.
    /// An `async` read runs in place on the awaiting task's thread when the
    /// store's state is free at once (``StoreExecutor/readsInPlace``), and on
    /// a reader thread while a write holds it.
    public let executor = StoreExecutor(
        readers: StoreExecutor.defaultReaderCount, name: "filestore", readsInPlace: true)
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
        let manifest = try Self.loadManifest(in: location, format: format, durability: durability)
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

    /// Closes the store: ends its observations (``CommitBroadcaster/close()``),
    /// waits for the call in progress, forgets the loaded documents and
    /// releases the directory's lock, so the directory can be opened again.
    /// Every commit is on disk already. Later calls through the store or its
    /// storages throw ``StorageError/Kind/closed``; closing again does nothing.
    public func close() {
        commits.close()
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
        if StoreExecutor.readsMustNotWait { return try readInPlace(operation, entity, body) }
        return try state.withLock { state in
            guard !state.isClosed else { throw StorageError.closed(operation, entity: entity, path: location.path) }
            do {
                return try body(state)
            } catch {
                throw StoreState.wrap(error, operation, entity, path: location.path)
            }
        }
    }

    /// ``read(_:_:_:)`` in place for an `async` call: while a write holds the
    /// state, the read moves to a reader thread rather than wait.
    ///
    /// A function of its own, never inlined: its `T?` needs `Optional<T>`'s
    /// metadata, which an unspecialized caller looked up at run time on
    /// every read, in place or not (about 900 instructions a call).
    @inline(never)
    private func readInPlace<T>(
        _ operation: StorageError.Operation, _ entity: String, _ body: (StoreState) throws -> T
    ) throws -> T {
        let answer: T? = try state.withLockIfAvailable { state in
            guard !state.isClosed else { throw StorageError.closed(operation, entity: entity, path: location.path) }
            do {
                return try body(state)
            } catch {
                throw StoreState.wrap(error, operation, entity, path: location.path)
            }
        }
        guard let answer else { throw StoreExecutor.wouldWait() }
        return answer
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

    /// Reads the manifest, or creates one for a new store; upgrades a version 1
    /// manifest to version 2. A manifest with a new identity is written (and
    /// synced) before any document that carries the identity.
    private static func loadManifest(in directory: URL, format: FileFormat, durability: Durability) throws -> Manifest {
        let url = directory.appendingPathComponent(Manifest.fileName)
        guard FileManager.default.fileExists(atPath: url.path) else {
            try refuseOrphanedDocuments(in: directory)
            let manifest = Manifest(
                version: Manifest.currentVersion, format: format, storeId: StoreFiles.newStoreId(), generation: 0,
                documents: [:], checksums: [:])
            return try write(manifest, in: directory, durability: durability, operation: .open)
        }
        let data = try FileIO.read(url, operation: .open)
        var manifest: Manifest
        do {
            manifest = try JSONDecoder().decode(Manifest.self, from: data)
        } catch {
            throw StorageError(
                .corrupt, .open, path: url.path, message: "the store's manifest is not a valid manifest",
                underlying: error)
        }
        switch manifest.version {
        case 1:
            // Version 1 wrote none of these; a manifest that has them is a
            // version 2 manifest whose version number was damaged.
            guard manifest.storeId == nil, manifest.checksum == nil, manifest.checksums == nil else {
                throw StorageError(
                    .corrupt, .open, path: url.path,
                    message: "the store's manifest is damaged: it says layout version 1 but has version 2 fields")
            }
        case 2, Manifest.currentVersion:
            guard manifest.isIntact, let storeId = manifest.storeId, StoreFiles.isStoreId(storeId) else {
                throw StorageError(
                    .corrupt, .open, path: url.path,
                    message: "the store's manifest is damaged: its checksum does not match its contents")
            }
            // Version 2 has no deltas: one that lists them was damaged or
            // written by something else.
            guard manifest.version == Manifest.currentVersion || (manifest.deltas ?? [:]).isEmpty else {
                throw StorageError(
                    .corrupt, .open, path: url.path,
                    message: "the store's manifest is damaged: it says layout version 2 but lists delta documents")
            }
        default:
            throw StorageError(
                .schemaMismatch, .open, path: url.path,
                message: "the manifest has layout version \(manifest.version); this library reads versions 1 to \(Manifest.currentVersion)")
        }
        guard manifest.format == format else {
            throw StorageError(
                .schemaMismatch, .open, path: directory.path,
                message: "the store was written as \(manifest.format.rawValue), not \(format.rawValue)")
        }
        for name in manifest.referencedFiles where !StoreFiles.isPlainFileName(name) {
            throw StorageError(
                .corrupt, .open, path: url.path, message: "the manifest names '\(name)', which is not a file in the store's directory")
        }
        if manifest.version == 1 {
            // Give the store an identity before it writes anything that carries it.
            manifest.version = Manifest.currentVersion
            manifest.storeId = StoreFiles.newStoreId()
            manifest.checksums = [:]
            manifest = try write(manifest, in: directory, durability: durability, operation: .open)
        }
        // A version 2 manifest is written as version 3 by the next commit.
        manifest.version = Manifest.currentVersion
        return manifest
    }

    /// Replaces the manifest atomically with `manifest`, its checksum set
    /// (``Manifest/sealed()``), and returns what was written. Every write of
    /// the manifest goes through here, so none can leave a stale checksum.
    ///
    /// With full durability, the new files `written` beside it (not synced
    /// yet) are synced together with the manifest, before it replaces the old one.
    @discardableResult
    static func write(
        _ manifest: Manifest, in directory: URL, durability: Durability, syncingAlso written: [URL] = [],
        operation: StorageError.Operation
    ) throws -> Manifest {
        let manifest = manifest.sealed()
        let data: Data
        do {
            data = try JSONEncoder.manifest.encode(manifest)
        } catch {
            throw StorageError(.encoding, operation, path: directory.path, message: "the manifest could not be encoded", underlying: error)
        }
        try FileIO.replace(
            directory.appendingPathComponent(Manifest.fileName), data: data, sync: durability == .full,
            syncingAlso: written, operation: operation)
        return manifest
    }

    /// Throws ``StorageError/Kind/corrupt`` when there is no manifest but the
    /// directory holds documents of a store: the manifest was lost, and opening
    /// an empty store there would hide (and later lose) the documents.
    private static func refuseOrphanedDocuments(in directory: URL) throws {
        for name in try contents(of: directory) {
            let isDocument: Bool
            if StoreFiles.isDocumentOfAnyStore(name) {
                isDocument = true
            } else if StoreFiles.isVersion1DocumentName(name) {
                // A user's `backup-2024.json` has that shape too: only a file that
                // reads as a store document counts.
                isDocument = StoreFiles.readsAsDocument(directory.appendingPathComponent(name))
            } else {
                isDocument = false
            }
            if isDocument {
                throw StorageError(
                    .corrupt, .open, path: directory.appendingPathComponent(name).path,
                    message: "the store's manifest (\(Manifest.fileName)) is missing but the directory holds its document '\(name)'; restore the manifest, or move the documents away to start a new store")
            }
        }
    }

    private static func contents(of directory: URL) throws -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw StorageError(
                .io, .open, path: directory.path, message: "the store's directory could not be listed",
                underlying: error)
        }
    }

    /// Removes what a process that died mid-commit, or after a commit but
    /// before its clean-up, left: documents carrying this store's identity that
    /// the manifest does not name, and the manifest's temporary files. Nothing
    /// else in the directory is touched.
    private static func removeUnreferencedFiles(in directory: URL, manifest: Manifest) throws {
        guard let storeId = manifest.storeId else { return }
        let referenced = manifest.referencedFiles
        for name in try contents(of: directory) where !referenced.contains(name) {
            if StoreFiles.isOwnedDocument(name, storeId: storeId) || StoreFiles.isManifestTemporary(name) {
                try FileIO.removeIfPresent(directory.appendingPathComponent(name), operation: .open)
            }
        }
    }
}

/// The names of the files a ``FileStore`` writes, and the tests that tell them
/// from anyone else's.
enum StoreFiles {
    /// A new random store identity: 32 lowercase hex digits.
    static func newStoreId() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let word = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - word.count) + word
        }.joined()
    }

    static func isStoreId(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { isHexDigit($0) }
    }

    /// `dao-<storeId>-<generation>-<entity>.<ext>`, the entity's name with
    /// everything but ASCII letters, digits and `_` percent-encoded.
    static func documentName(storeId: String, generation: UInt64, entity: String, format: FileFormat) -> String {
        var escaped = ""
        for byte in entity.utf8 {
            if (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x5F
            {
                escaped.append(Character(Unicode.Scalar(byte)))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                escaped += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return "dao-\(storeId)-\(generation)-\(escaped).\(format.fileExtension)"
    }

    /// Whether `name` is a document of the store with identity `storeId`.
    static func isOwnedDocument(_ name: String, storeId: String) -> Bool {
        isDocumentOfAnyStore(name) && name.hasPrefix("dao-\(storeId)-")
    }

    /// Whether `name` has the shape of a version 2 document of any store.
    static func isDocumentOfAnyStore(_ name: String) -> Bool {
        guard let stem = stripExtension(name) else { return false }
        let bytes = Array(stem.utf8)
        // "dao-" + 32 hex + "-" + digits + "-" + at least one byte
        guard bytes.count >= 4 + 32 + 1 + 1 + 1 + 1, bytes.starts(with: Array("dao-".utf8)) else { return false }
        guard bytes[4..<36].allSatisfy(isHexDigit), bytes[36] == UInt8(ascii: "-") else { return false }
        var position = 37
        while position < bytes.count && bytes[position] >= 0x30 && bytes[position] <= 0x39 { position += 1 }
        return position > 37 && position + 1 < bytes.count && bytes[position] == UInt8(ascii: "-")
    }

    /// Whether `name` has the shape of a version 1 document: `<word>-<digits>.<ext>`.
    static func isVersion1DocumentName(_ name: String) -> Bool {
        guard let stem = stripExtension(name), let dash = stem.lastIndex(of: "-") else { return false }
        let generation = stem[stem.index(after: dash)...]
        return dash != stem.startIndex && !generation.isEmpty && generation.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// Whether `name` may be removed when a commit supersedes it: a document of
    /// this store, or a version 1 document of `entity` named by the manifest.
    static func mayRemoveSuperseded(_ name: String, entity: String, storeId: String?) -> Bool {
        if let storeId, isOwnedDocument(name, storeId: storeId) { return true }
        return isVersion1DocumentName(name) && name.hasPrefix("\(entity)-") && isPlainFileName(name)
    }

    /// The temporary file `FileIO.replace` writes the manifest to.
    static func isManifestTemporary(_ name: String) -> Bool {
        let prefix = ".\(Manifest.fileName)."
        guard name.hasPrefix(prefix), name.hasSuffix(".tmp") else { return false }
        let pid = name.dropFirst(prefix.count).dropLast(4)
        return !pid.isEmpty && pid.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// A name that stays inside the directory: no separator, not `.` or `..`.
    static func isPlainFileName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.utf8.contains(0)
    }

    /// Whether the file decodes as a store document (as JSON or as a property list).
    static func readsAsDocument(_ url: URL) -> Bool {
        guard let data = FileManager.default.contents(atPath: url.path) else { return false }
        // Failing to decode is the answer here ("not a store document"), not an
        // error to report: the file is then left alone as the user's.
        do {
            _ = try JSONDecoder().decode(DocumentHeader.self, from: data)
            return true
        } catch {}
        do {
            _ = try PropertyListDecoder().decode(DocumentHeader.self, from: data)
            return true
        } catch {
            return false
        }
    }

    private static func stripExtension(_ name: String) -> Substring? {
        for format in FileFormat.allCases where name.hasSuffix(".\(format.fileExtension)") {
            return name.dropLast(format.fileExtension.count + 1)
        }
        return nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)
    }
}

/// The loaded tables and the manifest.
///
/// `@unchecked Sendable`: the only reference lives inside `FileStore`'s `Mutex`,
/// and every use is inside `withLock`, so no two threads touch it at once.
final class StoreState: @unchecked Sendable {
    let directory: URL
    private(set) var coder: DocumentCoder
    let durability: Durability
    private(set) var manifest: Manifest
    private var tables: [String: any AnyDocumentTable] = [:]
    private var inTransaction = false
    /// Set by ``close()``.
    private(set) var isClosed = false
    /// The keys ``storedKeys(of:)`` decoded, by entity.
    private var keptKeys: [String: KeptKeys] = [:]
    /// How many documents and deltas ``storedKeys(of:)`` has decoded (for tests).
    private(set) var keyDecodes = 0

    /// The primary keys of an entity decoded from `files`, its document and
    /// deltas, with the field they were read from.
    private struct KeptKeys {
        var files: [String]
        var keyField: String
        var keys: Set<StoredValue>
    }

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
        keptKeys.removeAll()
    }

    /// From now on, property-list documents keep `-0.0` apart from `0.0`
    /// and write NaNs canonical (``DocumentCoder/respellsReals``).
    func respellReals() {
        coder.respellsReals = true
    }

    /// Forgets the loaded tables; the store is closed.
    func close() {
        isClosed = true
        tables.removeAll()
        keptKeys.removeAll()
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
        // A child entity held by another entity's relation too. The manifest
        // in memory records the storages opened in this process as well.
        let recorded = (manifest.schemas ?? [:]).values
        try ChildHolders.checkOpening(type, recorded: recorded)
        // A child entity holding records written on their own before its holder.
        try ChildHolders.checkStoredOnTheirOwn(
            type, recorded: recorded, holdsRecordsOnTheirOwn: self.holdsRecordsOnTheirOwn)
        let missing = EntitySchema.tree(for: type).filter { manifest.schemas?[$0.entity] == nil }
        guard !missing.isEmpty else { return }
        for schema in missing {
            try checkUnrecordedDocument(of: schema)
        }
        var next = manifest
        var schemas = next.schemas ?? [:]
        for schema in missing { schemas[schema.entity] = schema }
        next.schemas = schemas
        manifest = try FileStore.write(next, in: directory, durability: durability, operation: .open)
    }

    /// Whether the entity `child` holds records while `holder` holds none:
    /// records written through the child's own storage, not as children of
    /// `holder`
    /// (``ChildHolders/checkStoredOnTheirOwn(_:recorded:holdsRecordsOnTheirOwn:)``).
    /// A holder with a document or deltas of its own was written before
    /// schemas were recorded (its schema is not, or the child would have a
    /// recorded holder): its children are its own.
    private func holdsRecordsOnTheirOwn(_ child: String, holder: String) throws -> Bool {
        guard manifest.documents[holder] == nil, manifest.deltas?[holder] == nil else { return false }
        if let table = tables[child] { return table.recordCount > 0 }
        return try !storedKeys(of: child).isEmpty
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
        let data = try documentData(named: name, entity: schema.entity)
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
    func table<R: Record>(_ type: R.Type) throws -> DocumentTable<R> {
        let name = R.entity.name
        if let table = tables[name] {
            guard let typed = table as? DocumentTable<R> else {
                throw StorageError(
                    .schemaMismatch, .open, entity: name,
                    message: "two record types declare the entity name '\(name)'; one store can hold only one")
            }
            return typed
        }
        if let owner = R.entity.owner, tables[owner.entityName] == nil {
            try loadOwner(owner)
            if let table = tables[name] as? DocumentTable<R> { return table }
        }
        let foreignKey = R.entity.owner.flatMap { $0.ownedRelation(for: R.self)?.foreignKeyField }
        let documentName = manifest.documents[name]
        let records = try documentName.map { try loadDocument(R.self, named: $0) } ?? []
        let table = DocumentTable<R>(records: records, documentName: documentName, foreignKey: foreignKey, format: coder.format)
        for deltaName in manifest.deltas?[name] ?? [] {
            table.apply(try loadDelta(R.self, named: deltaName))
        }
        tables[name] = table
        if inTransaction { table.begin() }
        for relation in R.entity.relations {
            try loadChildTable(relation)
        }
        return table
    }

    /// Whether a record of the entity `name` is stored under a primary key:
    /// its loaded table's answer, or, for an entity whose record type this
    /// store has not loaded (the holder of a child type that names no owner,
    /// whose storage was not opened since the store was), its stored keys
    /// (``storedKeys(of:)``).
    func keyTest(of name: String) throws -> (StoredValue) -> Bool {
        if let table = tables[name] { return table.holdsKey }
        let keys = try storedKeys(of: name)
        return { keys.contains($0) }
    }

    /// The primary keys of the entity `name` in its document and deltas,
    /// decoded alone, for an entity whose record type this store has not
    /// loaded. Kept with the names of the files they were decoded from and
    /// decoded again only when the manifest names other files for the entity:
    /// every commit that writes the entity names new ones (their names carry
    /// the commit's generation), and so does a migration. So a child type
    /// that names no owner, persisted through its own storage, decodes its
    /// holder's files once, not at each call.
    func storedKeys(of name: String) throws -> Set<StoredValue> {
        guard let keyField = manifest.schemas?[name]?.fields.first?.name else { return [] }
        let documentName = manifest.documents[name]
        let files = (documentName.map { [$0] } ?? []) + (manifest.deltas?[name] ?? [])
        if let kept = keptKeys[name], kept.files == files, kept.keyField == keyField { return kept.keys }
        var keys = Set<StoredValue>()
        if let documentName {
            let document = try decodeKeys(named: documentName, entity: name)
            keys.formUnion(document.records.compactMap { $0[keyField]?.storedValue })
        }
        for deltaName in manifest.deltas?[name] ?? [] {
            let delta = try decodeKeys(named: deltaName, entity: name)
            keys.subtract((delta.erased ?? []).compactMap(\.storedValue))
            keys.formUnion(delta.records.compactMap { $0[keyField]?.storedValue })
        }
        keptKeys[name] = KeptKeys(files: files, keyField: keyField, keys: keys)
        return keys
    }

    private func decodeKeys(named file: String, entity: String) throws -> StoredKeys {
        keyDecodes += 1
        let data = try documentData(named: file, entity: entity)
        do {
            return try coder.decode(StoredKeys.self, from: data)
        } catch {
            throw StorageError(
                .corrupt, .persist, entity: entity, path: directory.appendingPathComponent(file).path,
                message: "the primary keys of '\(entity)' do not decode: \(Self.describe(error))", underlying: error)
        }
    }

    private func loadOwner<O: Record>(_ owner: O.Type) throws {
        _ = try table(owner)
    }

    private func loadChildTable<Relation: ToManyRelation>(_ relation: Relation) throws {
        // A child entity that does not name its owner was loaded without an
        // index on the foreign key, which reading a parent's children needs.
        try table(Relation.Child.self).ensureIndex(on: relation.foreignKeyField)
    }

    /// The bytes of the document `name` of `entity`, checked against the size
    /// and CRC-32C the manifest recorded for it.
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` when it is missing or its bytes
    ///   differ; ``StorageError/Kind/io`` when it cannot be read.
    func documentData(named name: String, entity: String) throws -> Data {
        let url = directory.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw StorageError(
                .corrupt, .open, entity: entity, path: url.path,
                message: "the manifest names the document '\(name)', which is missing")
        }
        let data = try FileIO.read(url, operation: .open)
        if let expected = manifest.checksums?[name] {
            let actual = CRC32C.checksum(data)
            guard data.count == expected.size, actual == expected.crc32c else {
                throw StorageError(
                    .corrupt, .open, entity: entity, path: url.path,
                    message: "the document is damaged: \(data.count) bytes with CRC-32C \(actual), the manifest recorded \(expected.size) bytes with CRC-32C \(expected.crc32c)")
            }
        }
        return data
    }

    private func loadDocument<R: Record>(_ type: R.Type, named name: String) throws -> [R] {
        try load(Document<R>.self, named: name, entity: R.entity.name).records
    }

    private func loadDelta<R: Record>(_ type: R.Type, named name: String) throws -> Delta<R> {
        try load(Delta<R>.self, named: name, entity: R.entity.name)
    }

    /// Reads, checks (checksum, layout version, entity) and decodes the file
    /// `name` of `entity`.
    private func load<D: StoredDocument>(_ type: D.Type, named name: String, entity: String) throws -> D {
        let url = directory.appendingPathComponent(name)
        let data = try documentData(named: name, entity: entity)
        if coder.format == .propertyList && !coder.respellsReals && mayHoldRespelledZero(data) {
            // The document may hold a -0.0: the next ones keep it apart from 0.0.
            coder.respellsReals = true
        }
        let document: D
        do {
            document = try coder.decode(D.self, from: data)
        } catch let refused as RefusedRecord {
            // The record type's own `init(from:)` refused a value it was
            // given, whatever it threw (a `DecodingError` too): not damage of
            // the file, and `.decoding` as on the other backends.
            throw StorageError(
                .decoding, .open, entity: entity, path: url.path,
                message: "a record of the \(D.kind) does not decode as '\(entity)': \(Self.describe(refused.underlying))",
                underlying: refused.underlying)
        } catch {
            // The decoder's own error about the document (its syntax, its
            // layout): the file is not what the store wrote.
            throw StorageError(
                .corrupt, .open, entity: entity, path: url.path,
                message: "the \(D.kind) does not decode as '\(entity)' records: \(Self.describe(error))",
                underlying: error)
        }
        guard document.version == D.currentVersion else {
            throw StorageError(
                .schemaMismatch, .open, entity: entity, path: url.path,
                message: "the \(D.kind) has layout version \(document.version); this library reads version \(D.currentVersion)")
        }
        guard document.entity == entity else {
            throw StorageError(
                .corrupt, .open, entity: entity, path: url.path,
                message: "the \(D.kind) holds entity '\(document.entity)', not '\(entity)'")
        }
        return document
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

    /// The most delta documents an entity has before the next commit merges
    /// them into one.
    static let maximumDeltas = 8

    /// Writes a new document or delta for every changed table, then the
    /// manifest that names them, then removes the files they replace.
    ///
    /// A table whose changes since its document (this commit's and its
    /// deltas') cover at most half of its records gets a delta: the records it
    /// wrote and the keys it erased, appended to the entity's deltas, or, when
    /// there are ``maximumDeltas`` already, merged with them into one. Otherwise
    /// (and for a table written from empty, cleared, or kept in a version 1
    /// document) the whole document is written and its deltas dropped.
    func commit() throws {
        defer { inTransaction = false }
        let dirty = tables.values.filter(\.isDirty)
        guard !dirty.isEmpty else {
            for table in tables.values { table.commit() }
            return
        }
        guard let storeId = manifest.storeId else {
            throw StorageError(.corrupt, .persist, path: directory.path, message: "the store's manifest has no identity")
        }
        var next = manifest
        next.version = Manifest.currentVersion
        next.generation += 1
        next.checksums = next.checksums ?? [:]
        var written: [URL] = []
        var superseded: [(name: String, entity: String)] = []
        var modes: [(table: any AnyDocumentTable, full: Bool)] = []
        do {
            for table in dirty {
                let entity = table.entityName
                let name = StoreFiles.documentName(
                    storeId: storeId, generation: next.generation, entity: entity, format: coder.format)
                let url = directory.appendingPathComponent(name)
                let base = next.documents[entity]
                let deltas = next.deltas?[entity] ?? []
                let merging = deltas.count >= Self.maximumDeltas
                var keys: Set<StoredValue>?
                if let base, StoreFiles.isOwnedDocument(base, storeId: storeId),
                    let changed = table.keysSinceBase(merging: merging)
                {
                    // Every change since the base counts: compact once they reach half the records.
                    let sinceBase = merging ? changed.count : changed.count + table.changedSinceBaseCount
                    if sinceBase * 2 <= table.recordCount { keys = changed }
                }
                let data: Data
                do {
                    if let keys {
                        data = try table.encodeDelta(keys, with: coder)
                    } else {
                        data = try table.encodeDocument(with: coder)
                    }
                } catch {
                    throw StorageError(
                        .encoding, .persist, entity: entity, path: url.path,
                        message: "the records could not be encoded: \(Self.describe(error))", underlying: error)
                }
                // Synced below, all at once with the manifest.
                try FileIO.create(url, data: data, sync: false, operation: .persist)
                written.append(url)
                next.checksums?[name] = DocumentChecksum(crc32c: CRC32C.checksum(data), size: data.count)
                var replaced: [String] = []
                if keys != nil {
                    replaced = merging ? deltas : []
                    var deltasNow = next.deltas ?? [:]
                    deltasNow[entity] = (merging ? [] : deltas) + [name]
                    next.deltas = deltasNow
                } else {
                    replaced = (base.map { [$0] } ?? []) + deltas
                    next.documents[entity] = name
                    next.deltas?[entity] = nil
                }
                for old in replaced {
                    next.checksums?[old] = nil
                    superseded.append((old, entity))
                }
                modes.append((table, keys == nil))
            }
            if next.deltas?.isEmpty == true { next.deltas = nil }
            next = try FileStore.write(
                next, in: directory, durability: durability, syncingAlso: written, operation: .persist)
        } catch {
            // The manifest still names the old documents; the new ones are unreferenced.
            for url in written { unlink(url.path) }
            throw error
        }
        manifest = next
        for mode in modes {
            mode.table.didWrite(full: mode.full)
            mode.table.documentName = next.documents[mode.table.entityName]
        }
        for table in tables.values { table.commit() }
        for old in superseded where StoreFiles.mayRemoveSuperseded(old.name, entity: old.entity, storeId: storeId) {
            // A file the manifest no longer names; if it cannot be removed now,
            // the next open removes it. Nothing refers to it either way.
            unlink(directory.appendingPathComponent(old.name).path)
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
}

/// The records of a document or delta with only their integer and text
/// values decoded (a primary key is one or the other): what a store reads
/// of an entity whose record type it has not loaded.
struct StoredKeys: Decodable {
    var records: [[String: KeyValue]]
    var erased: [KeyValue]?

    /// An integer or text value; anything else is not a key.
    struct KeyValue: Decodable {
        var storedValue: StoredValue?

        init(from decoder: any Decoder) throws {
            // A value of another type is told by the decoder's refusal.
            let container = try decoder.singleValueContainer()
            do {
                storedValue = .integer(try container.decode(Int64.self))
                return
            } catch is DecodingError {}
            do {
                storedValue = .text(try container.decode(String.self))
            } catch is DecodingError {
                storedValue = nil
            }
        }
    }
}

extension JSONEncoder {
    fileprivate static var manifest: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return encoder
    }
}
