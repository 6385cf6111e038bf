import CLMDB
import DAOCore
import Foundation
import Synchronization

/// An LMDB environment: one memory-mapped file in a directory, holding a named
/// database per entity, per index and per child lookup. It hands out a
/// ``LMDBRecordStorage`` for each record type, and every storage of one environment
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
    let writeLock = NSLock()
    let handleLock = NSLock()
    let resizeLock: UnsafeMutablePointer<pthread_rwlock_t>
    var handles: [DatabaseName: MDB_dbi] = [:]
    var parentLinks: [DatabaseName: ParentLink] = [:]
    /// How many times a link was registered anew or changed
    /// (``register(child:link:)``): what a table derived from the links in
    /// force is made again when it moved.
    let linkChanges = Atomic<Int>(0)
    /// The schemas of the entities of the storages handed out, by entity: what
    /// a read-only environment, which records none, holds in this process.
    var openedSchemas: [String: EntitySchema] = [:]
    var isClosed = false
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
    let keptReaders = BargingMutex(KeptReaders())
    /// One kept read transaction ahead of ``keptReaders`` (its handle's
    /// address; 0: none), taken and put back with one atomic exchange each,
    /// where the pool's lock cost a read about 650 instructions.
    let fastReader = Atomic<UInt>(0)
    /// The most reset read transactions kept, and the most codecs a table
    /// keeps for reads: enough for as many threads reading at once as a
    /// process usually runs (each holds a reader slot of the 1,024 the
    /// environment opens with). A read that finds none kept begins a new
    /// transaction, and one that ends with the pool full aborts its own.
    static let maxKeptReaders = 32

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
    public func storage<R: Record>(for type: R.Type) throws -> LMDBRecordStorage<R> {
        do {
            try checkSchemas(of: R.self)
        } catch let error as StorageError {
            throw error.with(operation: .open, entity: R.entity.name, path: path)
        }
        let storage = try LMDBRecordStorage<R>(environment: self)
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

    /// The environment's flags as LMDB reports them, the map size, the reader
    /// threads of the ``executor`` and the most read transactions kept for
    /// reuse, e.g. `flags=NOTLS,NOSYNC mapsize=1073741824 lmdb=0.9.24
    /// reader_threads=2 kept_readers=32`; `closed` after ``close()``.
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
            + " reader_threads=\(executor.readerCount) kept_readers=\(Self.maxKeptReaders)"
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
    func currentMapSize(_ operation: StorageError.Operation) throws -> Int {
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
}
