import CLMDB
import DAOCore
import Foundation
import Synchronization

/// An LMDB environment: one memory-mapped file in a directory, holding a named
/// database per entity, per index and per child lookup. It hands out a
/// ``LMDBStorage`` for each record type, and every storage of one environment
/// commits into the same file, so a parent and its children commit together.
///
/// ```swift
/// let env = try LMDBEnvironment(directory: url)
/// let dialogs = try env.storage(for: DialogRecord.self)
/// ```
///
/// The environment is opened with `MDB_NOTLS`, so its transactions are not tied
/// to a thread (Swift tasks move between threads). Writers are serialized by a
/// lock; readers run concurrently and never wait for a writer, except while the
/// map grows. When a write fills the map, the map is doubled and the write is
/// retried, transparently.
///
/// LMDB forbids opening the same environment twice in one process at the same
/// time: a second ``init(directory:durability:mapSize:readOnly:fileCheck:)`` for an
/// environment that is still open in this process (by any path to it: the
/// directory or file is identified by device and inode, so a symbolic link or
/// a second hard link is the same environment) throws
/// ``StorageError/Kind/busy``. The environment closes at ``close()``, or when
/// the last reference to it (it and its storages) goes.
///
/// When another process grows the map, this one adopts the new size before
/// its next transaction (`MDB_MAP_RESIZED`), on the read, write and open paths.
/// See <http://www.lmdb.tech/doc/group__mdb.html>.
public final class LMDBEnvironment: Store, @unchecked Sendable {
    // Unchecked Sendable: the environment handle is used only as LMDB allows
    // across threads with MDB_NOTLS (any thread may run any transaction); write
    // transactions are serialized by `writeLock`; the map is resized only while
    // `resizeLock` is held exclusively together with `writeLock`, which no read
    // or write transaction overlaps; `isClosed` is set (and the handle closed)
    // only with both held, and read with either held; the database-handle
    // cache is guarded by `handleLock`. The remaining stored properties are
    // immutable.

    /// Where the environment lives: its directory (or its file, when a single
    /// file was given).
    public let location: URL
    /// Whether commits are synced (`full`) or not (`none`, `MDB_NOSYNC`).
    public let durability: Durability
    /// Whether the environment was opened read-only (`MDB_RDONLY`).
    public let isReadOnly: Bool

    /// Tells observers what each commit changed. Commits by other processes
    /// are noticed by polling the environment's last transaction id
    /// (`mdb_env_info`), which this process's own commits advance too.
    public let commits = CommitBroadcaster()
    /// The threads the `async` calls of the environment's storages run on:
    /// one writer thread and ``StoreExecutor/defaultReaderCount`` reader
    /// threads. A read-only transaction never waits for the writer, so an
    /// `async` read runs in place on the awaiting task's thread
    /// (``StoreExecutor/readsInPlace``) and moves to a reader thread only
    /// while the map is resized or the environment closes.
    public let executor = StoreExecutor(
        readers: StoreExecutor.defaultReaderCount, name: "lmdb", readsInPlace: true)
    let handle: OpaquePointer
    let path: String
    private let writeLock = NSLock()
    private let handleLock = NSLock()
    private let resizeLock: UnsafeMutablePointer<pthread_rwlock_t>
    private var handles: [DatabaseName: MDB_dbi] = [:]
    private var parentLinks: [DatabaseName: ParentLink] = [:]
    /// How many times a link was registered anew or changed
    /// (``register(child:link:)``): what a table derived from the links in
    /// force is made again when it moved.
    let linkChanges = Atomic<Int>(0)
    /// The schemas of the entities of the storages handed out, by entity: what
    /// a read-only environment, which records none, holds in this process.
    private var openedSchemas: [String: EntitySchema] = [:]
    private var isClosed = false
    /// Set once a storage was handed out: a migration must come before.
    let handedOutStorage = Mutex(false)
    /// The environment's identity in the registry of open environments.
    private let identity: FileIdentity
    /// What every value read is checked against (``ValueBounds``):
    /// set at open and after every change of the map size, with
    /// `resizeLock` held exclusively; read inside transactions, which hold it
    /// shared. Deallocated with the environment.
    let valueBounds = ValueBounds.allocate()

    /// Read-only transactions that ended, reset (`mdb_txn_reset`) for reuse
    /// by a later read (`mdb_txn_renew`): beginning one allocates and zeroes
    /// its slots for every database the environment may hold (about 14k
    /// instructions). At most ``maxKeptReaders``; a reset transaction keeps
    /// its reader slot but no snapshot, so it holds back no page reuse.
    private let keptReaders = Mutex(KeptReaders())
    /// The most reset read transactions kept: enough for every reader thread
    /// of the ``executor`` and a few synchronous callers.
    static let maxKeptReaders = StoreExecutor.defaultReaderCount + 2

    /// The most databases one environment holds (entities, indexes, lookups).
    static let maxDatabases: UInt32 = 256
    /// The default initial map size: 1 GiB; the map grows when it fills.
    ///
    /// The map is address space, not disk: without `MDB_WRITEMAP` the file
    /// grows only by the pages written. A write that fills the map is aborted
    /// and run again after the map doubles, so a small first map made a large
    /// first persist do its work about twice (64 MiB measured 0.51× the
    /// throughput per message at 1M messages as at 100k).
    public static let defaultMapSize = 1 << 30

    /// Opens (creating if missing) the environment in `directory`.
    ///
    /// - Parameters:
    ///   - directory: the environment's directory; created with its parents if
    ///     missing. If it names an existing regular file, that file is opened as
    ///     the environment (`MDB_NOSUBDIR`).
    ///   - durability: `full` syncs every commit (LMDB's default flags); `none`
    ///     opens with `MDB_NOSYNC`.
    ///   - mapSize: the initial size of the memory map in bytes; it doubles
    ///     whenever a write needs more.
    ///   - readOnly: opens with `MDB_RDONLY`; every write then throws
    ///     ``StorageError/Kind/readOnly``.
    ///   - fileCheck: how much of an existing data file is read before liblmdb
    ///     maps it: ``FileCheck/everyPage`` (the default) walks every page in
    ///     use, ``FileCheck/metaPages`` only the meta and root pages, for a
    ///     caller who trusts the disk and wants the open to cost nothing that
    ///     grows with the store (see docs/LMDB.md, "Damaged files").
    /// - Throws: ``StorageError``: ``StorageError/Kind/corrupt`` naming the
    ///   data file and the page when the file is not an LMDB environment
    ///   (`MDB_INVALID`, `MDB_VERSION_MISMATCH`), is shorter than its meta page
    ///   says, has a damaged meta page or (with ``FileCheck/everyPage``) any
    ///   damaged page in use, or is missing or empty beside an existing lock
    ///   file (see docs/LMDB.md),
    ///   ``StorageError/Kind/io`` when the directory cannot be created or opened,
    ///   ``StorageError/Kind/busy`` when this process has it open already
    ///   (through any path); ``StorageError/Kind/schemaMismatch`` when its
    ///   layout stamp names a newer layout than this build's, and
    ///   ``StorageError/Kind/corrupt`` when the stamp is damaged or the
    ///   environment holds data but was not written by this store (see
    ///   docs/LMDB.md, "Layout version").
    public init(
        directory: URL, durability: Durability = .full, mapSize: Int = LMDBEnvironment.defaultMapSize,
        readOnly: Bool = false, fileCheck: FileCheck = .everyPage
    ) throws {
        self.durability = durability
        self.isReadOnly = readOnly
        let fileManager = FileManager.default
        var isDirectory: ObjCBool = false
        let exists = fileManager.fileExists(atPath: directory.path, isDirectory: &isDirectory)
        var flags = UInt32(MDB_NOTLS)
        if durability == .none { flags |= UInt32(MDB_NOSYNC) }
        if readOnly { flags |= UInt32(MDB_RDONLY) }
        if exists && !isDirectory.boolValue {
            flags |= UInt32(MDB_NOSUBDIR)
        } else if !exists {
            if readOnly {
                throw StorageError(
                    .io, .open, path: directory.path, engineCode: ENOENT,
                    message: "there is no environment to open read-only")
            }
            do {
                try fileManager.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw StorageError(
                    .io, .open, path: directory.path, message: "the directory could not be created",
                    underlying: error)
            }
        }
        let canonical = directory.standardizedFileURL
        self.location = canonical
        self.path = canonical.path
        // liblmdb would map a truncated file and die of SIGBUS, or abort on a
        // damaged page: refuse those first.
        try DataFileCheck.check(
            path: path, isFile: exists && !isDirectory.boolValue, walkingPages: fileCheck == .everyPage)
        let identity = try FileIdentity(path: path)
        self.identity = identity
        guard openEnvironments.insert(identity) else {
            throw StorageError(
                .busy, .open, path: path,
                message: "this environment is already open in this process (through this or another path); LMDB allows one open environment per file and process, close the other one first")
        }

        var env: OpaquePointer?
        var code = mdb_env_create(&env)
        guard code == MDB_SUCCESS, let env else {
            openEnvironments.remove(identity)
            throw LMDBError.error(code, .open, path: path, call: "mdb_env_create")
        }
        do {
            try LMDBError.check(mdb_env_set_maxdbs(env, Self.maxDatabases), .open, path: path, call: "mdb_env_set_maxdbs")
            try LMDBError.check(mdb_env_set_maxreaders(env, 1024), .open, path: path, call: "mdb_env_set_maxreaders")
            if !readOnly || !exists {
                try LMDBError.check(
                    mdb_env_set_mapsize(env, max(mapSize, 1 << 16)), .open, path: path, call: "mdb_env_set_mapsize")
            }
            code = mdb_env_open(env, path, flags, 0o644)
            try LMDBError.check(code, .open, path: path, call: "mdb_env_open")
        } catch {
            mdb_env_close(env)
            openEnvironments.remove(identity)
            throw error
        }
        let resizeLock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        #if os(Linux)
            // Prefer the (rare) map resize over new readers, so a steady stream
            // of readers cannot starve a writer whose map is full.
            var attributes = pthread_rwlockattr_t()
            pthread_rwlockattr_init(&attributes)
            pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
            code = pthread_rwlock_init(resizeLock, &attributes)
            pthread_rwlockattr_destroy(&attributes)
        #else
            code = pthread_rwlock_init(resizeLock, nil)
        #endif
        guard code == 0 else {
            resizeLock.deallocate()
            mdb_env_close(env)
            openEnvironments.remove(identity)
            throw LMDBError.error(code, .open, path: path, call: "pthread_rwlock_init")
        }
        self.handle = env
        self.resizeLock = resizeLock
        try locateMap(.open)
        // Before any entity's database is opened or created: a layout this
        // build does not know, or an environment it did not write, is refused
        // (deinit closes the handle then).
        try checkLayout()
        commits.setVersionSource { [weak self] in
            // Observations hold their storage, and so the environment; with
            // none left, nothing polls.
            guard let self else { return 0 }
            return try self.lastTransactionId()
        }
    }

    /// How much of an existing data file ``init(directory:durability:mapSize:readOnly:fileCheck:)``
    /// reads before liblmdb maps it. liblmdb trusts its file: a damaged page
    /// can crash the process that reads it, so the adapter checks first.
    public enum FileCheck: Sendable, Equatable {
        /// The meta pages, then every page reachable from the meta page in use:
        /// every database's branch, leaf and overflow pages, sub-databases and
        /// sub-pages, and the free list (see docs/LMDB.md, "Damaged files").
        /// A damaged page is ``StorageError/Kind/corrupt`` naming it, before
        /// liblmdb reads the file. It reads every page in use once, so its
        /// cost grows with the store (docs/LMDB.md, "Damaged files").
        case everyPage
        /// The meta pages, the two root pages' headers, and the file's length
        /// against its meta page (a few `pread`s): for a caller who trusts the
        /// disk. Damage inside the trees is then found, if at all, by liblmdb
        /// as it reads, and can crash the reading process.
        case metaPages
    }

    deinit {
        if !isClosed {
            abortKeptReaders()
            mdb_env_close(handle)
            openEnvironments.remove(identity)
        }
        pthread_rwlock_destroy(resizeLock)
        resizeLock.deallocate()
        valueBounds.deallocate()
    }

    /// Closes the environment: ends its observations
    /// (``CommitBroadcaster/close()``), waits for the transactions in progress
    /// to end, then closes LMDB's handle (`mdb_env_close`), which unmaps the
    /// file and releases its locks, so the environment can be opened again.
    /// Later calls through the environment or its storages throw
    /// ``StorageError/Kind/closed``; closing again does nothing.
    public func close() {
        commits.close()
        writeLock.lock()
        defer { writeLock.unlock() }
        pthread_rwlock_wrlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        guard !isClosed else { return }
        isClosed = true
        abortKeptReaders()
        mdb_env_close(handle)
        openEnvironments.remove(identity)
    }

    /// A storage for records of type `type`, creating its databases on first use.
    ///
    /// - Throws: ``StorageError``: ``StorageError/Kind/schemaMismatch`` for an
    ///   entity declaration that cannot be stored, ``StorageError/Kind/readOnly``
    ///   when its databases do not exist yet in a read-only environment,
    ///   ``StorageError/Kind/schemaMismatch`` naming every difference when the
    ///   schema recorded for the entity (or an entity its storage sets up: its
    ///   owners and children) differs from the declaration, checked before any
    ///   record is read or written; ``StorageError/Kind/closed`` after ``close()``.
    public func storage<R: Record>(for type: R.Type) throws -> LMDBStorage<R> {
        do {
            try checkSchemas(of: R.self)
        } catch let error as StorageError {
            throw error.with(operation: .open, entity: R.entity.name, path: path)
        }
        let storage = try LMDBStorage<R>(environment: self)
        handleLock.lock()
        for schema in EntitySchema.tree(for: R.self) { openedSchemas[schema.entity] = schema }
        handleLock.unlock()
        handedOutStorage.withLock { $0 = true }
        return storage
    }

    /// The same as ``storage(for:)``, type-erased.
    public func anyStorage<R: Record>(for type: R.Type) throws -> AnyStorage<R> {
        AnyStorage(try storage(for: type))
    }

    /// The environment's flags as LMDB reports them, and the map size, e.g.
    /// `flags=NOTLS,NOSYNC mapsize=1073741824 lmdb=0.9.24`; `closed` after ``close()``.
    public var settingsDescription: String {
        pthread_rwlock_rdlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        if isClosed { return "closed" }
        var flags: UInt32 = 0
        let known: [(UInt32, String)] = [
            (UInt32(MDB_NOSUBDIR), "NOSUBDIR"), (UInt32(MDB_NOSYNC), "NOSYNC"), (UInt32(MDB_RDONLY), "RDONLY"),
            (UInt32(MDB_NOMETASYNC), "NOMETASYNC"), (UInt32(MDB_WRITEMAP), "WRITEMAP"),
            (UInt32(MDB_MAPASYNC), "MAPASYNC"), (UInt32(MDB_NOTLS), "NOTLS"), (UInt32(MDB_NOLOCK), "NOLOCK"),
            (UInt32(MDB_NORDAHEAD), "NORDAHEAD"), (UInt32(MDB_NOMEMINIT), "NOMEMINIT"),
        ]
        let names: String
        if mdb_env_get_flags(handle, &flags) == MDB_SUCCESS {
            let set = known.filter { flags & $0.0 != 0 }.map(\.1)
            names = set.isEmpty ? "none" : set.joined(separator: ",")
        } else {
            names = "unknown"
        }
        let size: String
        do {
            size = String(try currentMapSize(.open))
        } catch {
            size = "unknown (\(error))"
        }
        return "flags=\(names) mapsize=\(size) lmdb=\(String(cString: mdb_version(nil, nil, nil)))"
    }

    /// The current size of the memory map in bytes.
    ///
    /// - Throws: ``StorageError/Kind/closed`` after ``close()``, or what
    ///   `mdb_env_info` reports.
    public var mapSize: Int {
        get throws {
            pthread_rwlock_rdlock(resizeLock)
            defer { pthread_rwlock_unlock(resizeLock) }
            guard !isClosed else { throw StorageError.closed(.read, path: path) }
            return try currentMapSize(.read)
        }
    }

    /// The map size LMDB reports; the caller holds `resizeLock` and has
    /// checked that the environment is open.
    private func currentMapSize(_ operation: StorageError.Operation) throws -> Int {
        var info = MDB_envinfo()
        try LMDBError.check(mdb_env_info(handle, &info), operation, path: path, call: "mdb_env_info")
        guard info.me_mapsize > 0 else {
            throw StorageError(.engine, operation, path: path, message: "mdb_env_info reported a map size of 0")
        }
        return info.me_mapsize
    }

    /// Throws ``StorageError/Kind/closed`` after ``close()``: what a call that
    /// has nothing to do (an empty batch) still answers.
    func checkOpen(_ operation: StorageError.Operation) throws {
        pthread_rwlock_rdlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        guard !isClosed else { throw StorageError.closed(operation, path: path) }
    }

    /// The id of the last committed write transaction (`mdb_env_info`), which
    /// every process's commits advance: how observers notice other processes.
    func lastTransactionId() throws -> UInt64 {
        pthread_rwlock_rdlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        guard !isClosed else { throw StorageError.closed(.read, path: path) }
        var info = MDB_envinfo()
        try LMDBError.check(mdb_env_info(handle, &info), .read, path: path, call: "mdb_env_info")
        return UInt64(info.me_last_txnid)
    }

    // MARK: - Transactions

    /// Runs `body` in a read-only transaction, which ends (is aborted) when
    /// `body` returns or throws. Values read are valid only inside `body`.
    ///
    /// - Throws: ``StorageError/Kind/closed`` after ``close()``, or what
    ///   `body` throws.
    func read<T>(_ operation: StorageError.Operation, _ body: (borrowing Transaction) throws -> T) throws -> T {
        while true {
            if StoreExecutor.readsMustNotWait {
                // A read in place for an `async` call: the map is being resized
                // or the environment closed, so it moves to a reader thread.
                guard pthread_rwlock_tryrdlock(resizeLock) == 0 else { throw StoreExecutor.wouldWait() }
            } else {
                pthread_rwlock_rdlock(resizeLock)
            }
            if isClosed {
                pthread_rwlock_unlock(resizeLock)
                throw StorageError.closed(operation, path: path)
            }
            var txn: OpaquePointer?
            var code = Int32(MDB_NOTFOUND)
            if let kept = keptReaders.withLock({ $0.handles.popLast() }) {
                code = mdb_txn_renew(kept.pointer)
                if code == MDB_SUCCESS {
                    txn = kept.pointer
                } else {
                    mdb_txn_abort(kept.pointer)
                }
            }
            // None kept, or renewing failed: a new transaction, whose error
            // (a grown map included) is the one handled.
            if txn == nil { code = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn) }
            if code == MDB_MAP_RESIZED {
                // Another process grew the map: adopt its size, then retry.
                pthread_rwlock_unlock(resizeLock)
                if StoreExecutor.readsMustNotWait { throw StoreExecutor.wouldWait() }
                writeLock.lock()
                defer { writeLock.unlock() }
                try adoptGrownMap(operation)
                continue
            }
            defer { pthread_rwlock_unlock(resizeLock) }
            guard code == MDB_SUCCESS, let txn else {
                throw LMDBError.error(code, operation, path: path, call: "mdb_txn_begin")
            }
            // The transaction ends inside `run`, before the lock is released.
            return try Self.run(Transaction(txn, environment: self, operation: operation, isReusable: true), body)
        }
    }

    /// Ends the read-only transaction `txn`: resets it and keeps it for a
    /// later read, or aborts it when enough are kept. Called with
    /// `resizeLock` held for reading, so ``close()`` is not running.
    func keepReader(_ txn: OpaquePointer) {
        mdb_txn_reset(txn)
        let kept = keptReaders.withLock { kept in
            guard kept.handles.count < Self.maxKeptReaders else { return false }
            kept.handles.append(ReaderHandle(pointer: txn))
            return true
        }
        if !kept { mdb_txn_abort(txn) }
    }

    /// Aborts the kept read transactions, before the handle is closed.
    private func abortKeptReaders() {
        let handles = keptReaders.withLock { kept in
            defer { kept.handles.removeAll() }
            return kept.handles
        }
        for handle in handles { mdb_txn_abort(handle.pointer) }
    }

    /// Calls `body` with `transaction`, which ends (aborts unless committed)
    /// when this returns.
    private static func run<T>(
        _ transaction: consuming Transaction, _ body: (borrowing Transaction) throws -> T
    ) throws -> T {
        try body(transaction)
    }

    /// Runs `body` in a write transaction and commits it when `body` returns; a
    /// throw aborts it, so nothing of it is stored. Writers run one at a time.
    /// When the map is full the transaction is aborted, the map doubled and
    /// `body` run again, so `body` must do nothing but transaction work.
    ///
    /// - Throws: ``StorageError/Kind/readOnly`` in a read-only environment,
    ///   ``StorageError/Kind/closed`` after ``close()``, or what `body` and the
    ///   commit throw.
    func write<T>(_ operation: StorageError.Operation, _ body: (borrowing Transaction) throws -> T) throws -> T {
        if isReadOnly {
            throw StorageError(
                .readOnly, operation, path: path, engineCode: EACCES,
                message: "the environment was opened read-only")
        }
        writeLock.lock()
        defer { writeLock.unlock() }
        guard !isClosed else { throw StorageError.closed(operation, path: path) }
        while true {
            do {
                return try attemptWrite(operation, body)
            } catch let error as StorageError where error.engineCode == MDB_MAP_FULL {
                try grow(operation)
            } catch let error as StorageError where error.engineCode == MDB_MAP_RESIZED {
                try adoptGrownMap(operation)
            }
        }
    }

    /// Whether `error` is one after which ``write(_:_:)`` aborts the
    /// transaction, grows or adopts the map and runs its body again.
    static func startsWriteAgain(_ error: any Error) -> Bool {
        guard let error = error as? StorageError else { return false }
        return error.engineCode == MDB_MAP_FULL || error.engineCode == MDB_MAP_RESIZED
    }

    private func attemptWrite<T>(
        _ operation: StorageError.Operation, _ body: (borrowing Transaction) throws -> T
    ) throws -> T {
        var txn: OpaquePointer?
        try LMDBError.check(mdb_txn_begin(handle, nil, 0, &txn), operation, path: path, call: "mdb_txn_begin")
        guard let txn else {
            throw StorageError(.engine, operation, path: path, message: "mdb_txn_begin gave no transaction")
        }
        var transaction = Transaction(txn, environment: self, operation: operation)
        let result = try body(transaction)
        try transaction.commit()
        return result
    }

    /// Doubles the map. Called with the write lock held and no write
    /// transaction open; waits until no read transaction is open, so no
    /// transaction of this process is active while the size changes, as
    /// `mdb_env_set_mapsize` requires.
    ///
    /// - Throws: ``StorageError/Kind/full`` when the map cannot grow further,
    ///   or what LMDB reports; never returns without the map having grown.
    private func grow(_ operation: StorageError.Operation) throws {
        pthread_rwlock_wrlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        let current = try currentMapSize(operation)
        guard current < Int.max / 4 else {
            throw StorageError(.full, operation, path: path, engineCode: MDB_MAP_FULL, message: "the map cannot grow further")
        }
        try LMDBError.check(mdb_env_set_mapsize(handle, current * 2), operation, path: path, call: "mdb_env_set_mapsize")
        try locateMap(operation)
        let grown = try currentMapSize(operation)
        guard grown > current else {
            throw StorageError(
                .full, operation, path: path, engineCode: MDB_MAP_FULL,
                message: "the map did not grow beyond \(current) bytes")
        }
    }

    /// Adopts the map size another process set (after `MDB_MAP_RESIZED`).
    /// Called with the write lock held and no transaction of this process open
    /// (it waits for the read transactions to end), as `mdb_env_set_mapsize`
    /// requires.
    private func adoptGrownMap(_ operation: StorageError.Operation) throws {
        pthread_rwlock_wrlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        guard !isClosed else { throw StorageError.closed(operation, path: path) }
        try LMDBError.check(mdb_env_set_mapsize(handle, 0), operation, path: path, call: "mdb_env_set_mapsize")
        try locateMap(operation)
    }

    // MARK: - Named databases

    /// The handle of the named database `name`, opened (and created, unless
    /// read-only) once and cached. `nil` when it does not exist in a read-only
    /// environment.
    func database(_ name: String, duplicateSort: Bool = false) throws -> MDB_dbi? {
        handleLock.lock()
        if let dbi = handles[DatabaseName(name)] {
            handleLock.unlock()
            return dbi
        }
        handleLock.unlock()
        // mdb_dbi_open must not run in two transactions at once, so handles are
        // opened under the write lock, each in a transaction of its own.
        if StoreExecutor.readsMustNotWait {
            guard writeLock.try() else { throw StoreExecutor.wouldWait() }
        } else {
            writeLock.lock()
        }
        defer { writeLock.unlock() }
        guard !isClosed else { throw StorageError.closed(.open, path: path) }
        handleLock.lock()
        if let dbi = handles[DatabaseName(name)] {
            handleLock.unlock()
            return dbi
        }
        handleLock.unlock()
        var flags: UInt32 = duplicateSort ? UInt32(MDB_DUPSORT) : 0
        if !isReadOnly { flags |= UInt32(MDB_CREATE) }
        var dbi: MDB_dbi = 0
        while true {
            var txn: OpaquePointer?
            let begun = mdb_txn_begin(handle, nil, isReadOnly ? UInt32(MDB_RDONLY) : 0, &txn)
            if begun == MDB_MAP_RESIZED {
                // Another process grew the map since this one was opened.
                try adoptGrownMap(.open)
                continue
            }
            try LMDBError.check(begun, .open, path: path, call: "mdb_txn_begin")
            var code = mdb_dbi_open(txn, name, flags, &dbi)
            if code == MDB_NOTFOUND && isReadOnly {
                mdb_txn_abort(txn)
                return nil
            }
            if code == MDB_SUCCESS {
                code = mdb_txn_commit(txn)
            } else {
                mdb_txn_abort(txn)
            }
            if code == MDB_MAP_FULL {
                try grow(.open)
                continue
            }
            try LMDBError.check(code, .open, path: path, call: "mdb_dbi_open", context: "database '\(name)'")
            break
        }
        handleLock.lock()
        handles[DatabaseName(name)] = dbi
        handleLock.unlock()
        return dbi
    }

    /// Deletes the `MDB_DUPSORT` database `name` when it exists and this
    /// process holds no handle on it: the database of an index that leads
    /// with a child's foreign key, which earlier versions of the layout kept
    /// and which the parent's range now serves (docs/LMDB.md). Its entries
    /// would only go stale. Does nothing in a read-only environment.
    ///
    /// - Throws: ``StorageError`` when LMDB fails.
    func dropStaleIndexDatabase(_ name: String) throws {
        guard !isReadOnly else { return }
        handleLock.lock()
        let isOpen = handles[DatabaseName(name)] != nil
        handleLock.unlock()
        guard !isOpen else { return }
        try write(.open) { txn in
            var dbi = MDB_dbi()
            let code = mdb_dbi_open(txn.handle, name, UInt32(MDB_DUPSORT), &dbi)
            if code == MDB_NOTFOUND { return }
            try txn.check(code, "mdb_dbi_open")
            try txn.check(mdb_drop(txn.handle, dbi, 1), "mdb_drop")
        }
    }

    /// Caches the handles of databases a committed transaction opened itself
    /// (a migration's), so later users find them.
    func adopt(handles opened: [DatabaseName: MDB_dbi]) {
        handleLock.lock()
        for (name, dbi) in opened { handles[name] = dbi }
        handleLock.unlock()
    }

    /// The number of entries in every named database of the environment, by name
    /// (`mdb_stat`), for checks that nothing is left behind.
    public func entryCounts() throws -> [String: Int] {
        handleLock.lock()
        let known = handles
        handleLock.unlock()
        return try read(.count) { txn in
            var counts: [String: Int] = [:]
            for (name, dbi) in known {
                counts[name.text] = try txn.entryCount(dbi)
            }
            return counts
        }
    }

    /// The handle of the named database `name`, which must exist in a
    /// read-only environment.
    ///
    /// - Throws: ``StorageError/Kind/readOnly`` when it does not exist and the
    ///   environment is read-only.
    func requireDatabase(_ name: String, duplicateSort: Bool = false) throws -> MDB_dbi {
        guard let dbi = try database(name, duplicateSort: duplicateSort) else {
            throw StorageError(
                .readOnly, .open, path: path, engineCode: MDB_NOTFOUND,
                message: "the database '\(name)' does not exist and the environment is read-only")
        }
        return dbi
    }

    // MARK: - Schemas

    /// The name of the database that holds the environment's metadata: each
    /// entity's schema under ``StoreMetadataKey/schema(_:)``, in the form
    /// ``EntitySchema/encoded()`` writes (and, later, a schema version and the
    /// migrations applied).
    static var metadataDatabase: String { "__metadata" }

    /// Checks the schema recorded for every entity a storage for `type` sets
    /// up against its declaration, then records the schemas not recorded yet
    /// (in one write transaction, which checks again what another process may
    /// have recorded meanwhile). A read-only environment only checks.
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` naming every difference
    ///   of the first entity that differs, before any record is read or written.
    func checkSchemas<R: Record>(of type: R.Type) throws {
        let declared = EntitySchema.tree(for: type)
        // The names every backend refuses (among them the '__' of the
        // environment's own databases and the '#' of `E#id` and `E#<index>`).
        for schema in declared { try EntityName.check(schema.entity) }
        // An entity's own databases are named `E#id` and `E#<index>`: an
        // index named 'id' would share one.
        for schema in declared where schema.indexes.contains(where: { $0.name == "id" }) {
            throw StorageError(
                .schemaMismatch, .open, entity: schema.entity,
                message: "the index name 'id' is reserved: the entity's database of child keys is named '\(schema.entity)#id'")
        }
        handleLock.lock()
        let opened = Array(openedSchemas.values)
        handleLock.unlock()
        guard let metadata = try database(Self.metadataDatabase) else {
            try ChildHolders.checkOpening(type, recorded: opened)
            return
        }
        func stored(_ entity: String, _ txn: borrowing Transaction) throws -> EntitySchema? {
            try txn.withValue(metadata, Array(StoreMetadataKey.schema(entity).utf8)) {
                try EntitySchema.decode($0, entity: entity)
            }
        }
        let (missing, recorded): ([EntitySchema], [EntitySchema]) = try read(.open) { txn in
            var missing: [EntitySchema] = []
            for schema in declared {
                if let recorded = try stored(schema.entity, txn) {
                    try schema.check(against: recorded)
                } else {
                    missing.append(schema)
                }
            }
            // A child entity held by another entity's relation too.
            let schemas = try Self.recordedSchemas(metadata, txn) + opened
            try ChildHolders.checkOpening(type, recorded: schemas)
            return (missing, schemas)
        }
        // A child entity holding records written on their own before its
        // holder (the databases are looked up outside the read transaction:
        // a handle is opened in a transaction of its own).
        try ChildHolders.checkStoredOnTheirOwn(type, recorded: recorded) { child, _ in
            try holdsRecordsOnTheirOwn(child, links: EntityTable<R>.linksDatabase)
        }
        guard !missing.isEmpty, !isReadOnly else { return }
        try write(.open) { txn in
            // Again in the write transaction: another process may have
            // recorded a holder since.
            try ChildHolders.checkOpening(type, recorded: try Self.recordedSchemas(metadata, txn))
            for schema in missing {
                if let recorded = try stored(schema.entity, txn) {
                    try schema.check(against: recorded)
                } else {
                    try txn.put(metadata, Array(StoreMetadataKey.schema(schema.entity).utf8), schema.encoded())
                }
            }
        }
    }

    /// Whether the entity `child` holds records and the links database
    /// (`links`) records no parent for it: records written through the
    /// child's own storage, not as children
    /// (``ChildHolders/checkStoredOnTheirOwn(_:recorded:holdsRecordsOnTheirOwn:)``).
    private func holdsRecordsOnTheirOwn(_ child: String, links: String) throws -> Bool {
        guard let links = try database(links), let main = try database(child) else { return false }
        return try read(.open) { txn in
            let linked = try txn.withValue(links, Array(child.utf8)) { _ in true } ?? false
            return try !linked && txn.entryCount(main) > 0
        }
    }

    /// Every schema recorded in `metadata`, in key order.
    private static func recordedSchemas(_ metadata: MDB_dbi, _ txn: borrowing Transaction) throws -> [EntitySchema] {
        let prefix = Array(StoreMetadataKey.schema("").utf8)
        let cursor = try txn.openCursor(metadata)
        defer { mdb_cursor_close(cursor) }
        var schemas: [EntitySchema] = []
        var code = prefix.withUnsafeBytes { bytes in
            var k = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            var v = MDB_val()
            return mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
        }
        while code == MDB_SUCCESS {
            var k = MDB_val()
            var v = MDB_val()
            try txn.check(mdb_cursor_get(cursor, &k, &v, MDB_GET_CURRENT), "mdb_cursor_get")
            let key = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
            guard key.starts(with: prefix) else { break }
            let entity = String(decoding: key.dropFirst(prefix.count), as: UTF8.self)
            schemas.append(try EntitySchema.decode(txn.bounds.lent(v, txn.operation), entity: entity))
            code = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
        }
        if code != MDB_SUCCESS, code != MDB_NOTFOUND { try txn.check(code, "mdb_cursor_get") }
        return schemas
    }

    // MARK: - Parents and children

    /// Records that `child` entities are owned by `link.parent`, so a storage of
    /// the child used on its own keys, checks and moves children the same way.
    func register(child: String, link: ParentLink) {
        handleLock.lock()
        let name = DatabaseName(child)
        let changed = parentLinks[name] != link
        if changed { parentLinks[name] = link }
        handleLock.unlock()
        // Every storage of the parent registers its children's links when
        // it is opened: counted only when a link is new or another, so
        // that opening one again does not make every table derive its
        // prepared reads again.
        if changed { linkChanges.add(1, ordering: .relaxed) }
    }

    /// The parent of `entity`, if a parent storage declared it as a child.
    func parentLink(of entity: String) -> ParentLink? {
        handleLock.lock()
        defer { handleLock.unlock() }
        return parentLinks[DatabaseName(entity)]
    }
}

/// How a child entity finds its parent: the parent's databases and the child's
/// foreign-key field.
struct ParentLink: Sendable, Equatable {
    /// The parent entity's name.
    var parent: String
    /// The position of the foreign key among the child's fields.
    var foreignKeyIndex: Int
    /// The parent's main database.
    var parentMain: MDB_dbi
    /// The parent's own id → storage-key lookup, when the parent is a child too.
    var parentById: MDB_dbi?
}

/// The environments open in this process, by the identity of their file.
private let openEnvironments = OpenEnvironments()

/// A file or directory as the file system knows it: device and inode, the
/// same through every path (symbolic links, hard links, `..`) that reaches it.
struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64

    /// The identity of what `path` names (following symbolic links).
    /// - Throws: ``StorageError/Kind/io`` when it cannot be examined.
    init(path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            throw StorageError(
                LMDBError.kind(code), .open, path: path, engineCode: code,
                message: "the environment's path could not be examined: \(String(cString: strerror(code)))")
        }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

private final class OpenEnvironments: @unchecked Sendable {
    // Unchecked Sendable: `identities` is only touched with `lock` held.
    private let lock = NSLock()
    private var identities = Set<FileIdentity>()

    func insert(_ identity: FileIdentity) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return identities.insert(identity).inserted
    }

    func remove(_ identity: FileIdentity) {
        lock.lock()
        defer { lock.unlock() }
        identities.remove(identity)
    }
}

/// A reset read-only transaction kept for reuse (``LMDBEnvironment/keepReader(_:)``).
/// Used by one read at a time: it leaves the keeper's lock before use.
struct ReaderHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// The reset read-only transactions an environment keeps.
struct KeptReaders: Sendable {
    var handles: [ReaderHandle] = []
}
