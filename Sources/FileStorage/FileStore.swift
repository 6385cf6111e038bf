import DAOCore
import Foundation
import Synchronization

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
    /// An `async` read runs in place on the awaiting task's thread when it
    /// can hold the store's state shared at once, beside other reads
    /// (``StoreExecutor/readsInPlace``), and on a reader thread while a
    /// write applies its changes to it or waits to.
    public let executor = StoreExecutor(
        readers: StoreExecutor.defaultReaderCount, name: "filestore", readsInPlace: true)
    private let lock: DirectoryLock
    /// The loaded tables and the manifest, behind a reader-writer lock.
    /// Readers hold it shared, side by side; a write holds it exclusively
    /// only while it applies its changes and sets them aside, and again
    /// while it puts them back after its files are written, never while it
    /// encodes its documents or writes them.
    let state: StateLock
    /// Held by a write from its start to the end of its commit, so writes
    /// (and the other changes of the manifest: a storage's first opening, a
    /// migration, ``close()``) run one at a time. Taken before ``state``.
    let writer = WriterLock()
    /// For tests: runs in each commit between writing its documents and
    /// replacing the manifest, without the store's state lock; an error it
    /// throws fails the commit.
    let beforeManifest = Mutex<(@Sendable () throws -> Void)?>(nil)
    /// For tests: runs in each read, holding the state lock shared.
    let insideRead = ReadHook()

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
        state = try StateLock(
            StoreState(directory: location, format: format, durability: durability, manifest: manifest),
            path: location.path)
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
    public func storage<R: Record>(for type: R.Type) throws -> FileRecordStorage<R> {
        try R.entity.validate()
        // The manifest may record the entity's schema: not beside a commit.
        try writer.withLock {
            try state.withLock { state in
                guard !state.isClosed else {
                    throw StorageError.closed(.open, entity: R.entity.name, path: location.path)
                }
                do {
                    try state.checkSchemas(of: R.self)
                } catch let error as StorageError {
                    throw error.with(entity: R.entity.name, path: location.appendingPathComponent(Manifest.fileName).path)
                }
                _ = try state.table(R.self)
            }
        }
        return FileRecordStorage(store: self)
    }

    /// Closes the store: ends its observations (``CommitBroadcaster/close()``),
    /// waits for the call in progress, forgets the loaded documents and
    /// releases the directory's lock, so the directory can be opened again.
    /// Every commit is on disk already. Later calls through the store or its
    /// storages throw ``StorageError/Kind/closed``; closing again does nothing.
    public func close() {
        commits.close()
        writer.withLock {
            state.withLock { state in
                guard !state.isClosed else { return }
                state.close()
                lock.release()
            }
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

    /// Runs `body` on the loaded state, holding the state lock shared:
    /// reads run side by side, and wait only for a write's in-memory steps.
    ///
    /// `body` must change nothing in the state (``StoreState``). A read
    /// that finds a table not loaded yet (never once its storage was
    /// opened) is run again holding both locks, loading it.
    func read<T>(
        _ operation: StorageError.Operation, _ entity: String, _ body: (StoreState) throws -> T
    ) throws -> T {
        if StoreExecutor.readsMustNotWait { return try readInPlace(operation, entity, body) }
        do {
            return try state.read { try readHeld($0, operation, entity, body) }
        } catch is StoreState.TableNotLoaded {
            return try readLoading(operation, entity, body)
        }
    }

    /// ``read(_:_:_:)`` in place for an `async` call: while a write holds the
    /// state (or waits for it), the read moves to a reader thread rather
    /// than wait.
    ///
    /// A function of its own, never inlined: its `T?` needs `Optional<T>`'s
    /// metadata, which an unspecialized caller looked up at run time on
    /// every read, in place or not (about 900 instructions a call).
    @inline(never)
    private func readInPlace<T>(
        _ operation: StorageError.Operation, _ entity: String, _ body: (StoreState) throws -> T
    ) throws -> T {
        let answer: T?
        do {
            answer = try state.tryRead { try readHeld($0, operation, entity, body) }
        } catch is StoreState.TableNotLoaded {
            // Loading waits for the writer lock.
            throw StoreExecutor.wouldWait()
        }
        guard let answer else { throw StoreExecutor.wouldWait() }
        return answer
    }

    /// A read's body with the state lock held shared: a closed store's
    /// error, the test hook, and errors completed with the operation, the
    /// entity and the path, except ``StoreState/TableNotLoaded``, which the
    /// caller answers.
    @inline(__always)
    private func readHeld<T>(
        _ state: StoreState, _ operation: StorageError.Operation, _ entity: String, _ body: (StoreState) throws -> T
    ) throws -> T {
        guard !state.isClosed else { throw StorageError.closed(operation, entity: entity, path: location.path) }
        insideRead.run()
        do {
            return try body(state)
        } catch let error as StoreState.TableNotLoaded {
            throw error
        } catch {
            throw StoreState.wrap(error, operation, entity, path: location.path)
        }
    }

    /// ``read(_:_:_:)`` holding both locks, the tables it reads loaded on
    /// the way (``StoreState/loadsOnRead``), as a storage's first opening
    /// loads them.
    private func readLoading<T>(
        _ operation: StorageError.Operation, _ entity: String, _ body: (StoreState) throws -> T
    ) throws -> T {
        try writer.withLock {
            try state.withLock { state in
                guard !state.isClosed else { throw StorageError.closed(operation, entity: entity, path: location.path) }
                state.loadsOnRead = true
                defer { state.loadsOnRead = false }
                do {
                    return try body(state)
                } catch {
                    throw StoreState.wrap(error, operation, entity, path: location.path)
                }
            }
        }
    }

    /// Runs `body` as one transaction: on success the changed documents are
    /// written and the manifest replaced; on any error the in-memory state is
    /// restored and nothing on disk changes.
    ///
    /// Holding the state lock exclusively, `body` applies its changes, and
    /// the commit takes what it will encode and sets the changes aside
    /// (``StoreState/prepareCommit()``): the tables answer the committed
    /// state again, and the lock is let go. The documents are encoded and
    /// the files written and synced holding ``writer`` alone, while readers
    /// read the committed state. The state lock is taken again to apply the
    /// changes and the new manifest at once (``StoreState/finishCommit(_:)``),
    /// or, when they could not be encoded or written, to drop them.
    /// ``writer`` keeps the next write out until then.
    func write<T>(
        _ operation: StorageError.Operation, _ entity: String, _ body: (StoreState) throws -> T
    ) throws -> T {
        try writer.withLock {
            let (result, prepared) = try state.withLock { state -> (T, PreparedCommit?) in
                guard !state.isClosed else { throw StorageError.closed(operation, entity: entity, path: location.path) }
                state.begin()
                do {
                    let result = try body(state)
                    return (result, try state.prepareCommit())
                } catch {
                    state.rollback()
                    throw StoreState.wrap(error, operation, entity, path: location.path)
                }
            }
            guard let prepared else { return result }
            let written: Manifest
            do {
                let encoded = try prepared.encode()
                written = try encoded.write(
                    in: location, durability: durability, beforeManifest: beforeManifest.withLock { $0 })
            } catch {
                state.withLock { $0.abandonCommit() }
                throw StoreState.wrap(error, operation, entity, path: location.path)
            }
            state.withLock { $0.finishCommit(written) }
            prepared.removeSuperseded(in: location)
            return result
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

extension JSONEncoder {
    fileprivate static var manifest: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return encoder
    }
}
