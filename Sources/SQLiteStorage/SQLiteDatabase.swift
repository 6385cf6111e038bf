import CSQLite
import DAOCore
import Foundation
import Synchronization

/// An SQLite database file that holds the tables of several record types and
/// hands out a ``SQLiteRecordStorage`` for each.
///
/// ```swift
/// let db = try SQLiteDatabase(path: directory.appending(path: "store.sqlite"))
/// let dialogs = DAO(storage: try db.storage(for: DialogRecord.self),
///                   translator: DialogTranslator())
/// ```
///
/// The database runs in WAL mode with foreign keys on, `synchronous=FULL` for
/// ``Durability/full`` and `OFF` for ``Durability/none``, and a busy timeout;
/// ``settings`` reports what SQLite says is in force. Calls from many tasks are
/// safe: writes are serialized on one writer connection; reads run on a small
/// pool of reader connections beside it (WAL lets readers and a writer work at
/// once), each reading the last committed state. See <https://sqlite.org/wal.html> and
/// <https://sqlite.org/pragma.html#pragma_synchronous>.
public final class SQLiteDatabase: Store, Sendable {
    /// The settings read back from SQLite after opening.
    public struct Settings: Sendable, Hashable, CustomStringConvertible {
        /// `PRAGMA journal_mode`, e.g. `wal`.
        public let journalMode: String
        /// `PRAGMA synchronous`: `OFF`, `NORMAL`, `FULL` or `EXTRA`.
        public let synchronous: String
        /// `PRAGMA foreign_keys`.
        public let foreignKeys: Bool
        /// `PRAGMA busy_timeout`, in milliseconds.
        public let busyTimeoutMilliseconds: Int
        /// The SQLite library version.
        public let sqliteVersion: String

        /// The settings as one line, e.g. `journal_mode=wal synchronous=FULL …`.
        public var description: String {
            "journal_mode=\(journalMode) synchronous=\(synchronous) foreign_keys=\(foreignKeys ? "ON" : "OFF") busy_timeout=\(busyTimeoutMilliseconds)ms sqlite=\(sqliteVersion)"
        }
    }

    /// The database file.
    public let location: URL
    /// The durability asked for.
    public let durability: Durability
    /// The settings in force, read back from SQLite.
    public let settings: Settings

    /// ``settings`` as one line, with the number of reader connections.
    public var settingsDescription: String { "\(settings.description) readers=\(readerCount)" }
    /// How long a call waits for a lock held by another process, in milliseconds.
    public static let busyTimeoutMilliseconds: Int32 = 5000

    /// The device and inode of the file at `path`, `nil` when there is none.
    static func fileIdentity(_ path: String) -> [UInt64]? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return [UInt64(info.st_dev), UInt64(info.st_ino)]
    }

    /// Tells observers what each commit changed. Commits by other connections
    /// (other processes) are noticed by polling `PRAGMA data_version` on the
    /// writer connection, which changes only for them.
    public let commits = CommitBroadcaster()
    let path: String
    let writer: LockedConnection
    /// Set once a storage was handed out: a migration must come before.
    let handedOutStorage = Mutex(false)
    private let readers: [LockedConnection]
    /// How many reader connections the database keeps, and so how many reader
    /// threads its ``executor`` has: as many reads run side by side.
    public let readerCount: Int
    /// The reader count of a database opened without one: twice the number
    /// of active processor cores, at least 4 and at most 16.
    ///
    /// More than the cores: with more reading threads than cores, a thread
    /// is often descheduled while it holds a connection, and a read that
    /// finds every connection taken moves to a reader thread and waits. With
    /// as many connections as cores (2 here), the read-only mix at 8 clients
    /// had a p99 latency above 3 ms against 30 µs for a connection per
    /// client; with 4 it was within 1.5× of it (docs/CONCURRENCY.md). A
    /// connection is opened when a read first finds every open one busy
    /// (reads take the first free one), and then costs a file descriptor and
    /// up to its page cache (`cache_size`, 2 MiB by default): a store read by
    /// one thread at a time keeps one open.
    public static var defaultReaderCount: Int {
        min(16, max(4, 2 * ProcessInfo.processInfo.activeProcessorCount))
    }
    /// The threads the `async` calls of the database's storages run on: one
    /// writer thread, which uses the writer connection, and one reader thread
    /// per reader connection. An `async` read runs in place on the awaiting
    /// task's thread when a reader connection is free at once
    /// (``StoreExecutor/readsInPlace``; a WAL reader does not wait for the
    /// writer) and otherwise on a reader thread, which may wait for one: no
    /// thread of Swift's cooperative pool ever waits for a connection.
    public let executor: StoreExecutor

    /// Opens the database at `path`, creating the file (and its parent directory)
    /// when missing.
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/corrupt`` when the
    ///   file is not an SQLite database or is shorter than its header says
    ///   (truncated), ``StorageError/Kind/io`` when it cannot
    ///   be opened or created, a directory stands where its `-wal` or
    ///   `-shm` file goes, or a file SQLite did not write for this database
    ///   stands where its rollback journal (`-journal`) goes.
    ///
    /// - Parameters:
    ///   - path: the database file.
    ///   - durability: whether each commit is synced to disk before the call
    ///     returns (`.full`, the default) or never (`.none`).
    ///   - readers: how many reader connections to keep at most (at least
    ///     one; ``defaultReaderCount`` when `nil`), each opened when a read
    ///     first needs it: how many reads, synchronous or `async`, run side
    ///     by side beside the one writer.
    public init(path: URL, durability: Durability = .full, readers: Int? = nil) throws {
        let filePath = path.path(percentEncoded: false)
        self.location = path
        self.durability = durability
        self.path = filePath
        let readerCount = max(1, readers ?? Self.defaultReaderCount)
        self.readerCount = readerCount
        executor = StoreExecutor(readers: readerCount, name: "sqlite", readsInPlace: true)
        do {
            try FileManager.default.createDirectory(
                at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch {
            throw StorageError(
                .io, .open, path: filePath, message: "cannot create the database's directory", underlying: error)
        }
        // SQLite opens a truncated file without a word: check its header first.
        try FileCheck.check(path: filePath)
        try FileCheck.checkSideFiles(path: filePath)
        try FileCheck.checkJournal(path: filePath)
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let connection = try Connection(path: filePath, flags: flags)
        do {
            sqlite3_busy_timeout(connection.handle, Self.busyTimeoutMilliseconds)
            // SQLite reads the file header lazily; read the schema now so that a
            // file that is not a database fails here, not on first use.
            _ = try connection.scalarInt("SELECT count(*) FROM sqlite_master")
            _ = try connection.scalarText("PRAGMA journal_mode = WAL")
            try connection.execute("PRAGMA foreign_keys = ON")
            try connection.execute("PRAGMA synchronous = \(durability == .full ? "FULL" : "OFF")")
            let synchronousNames = ["OFF", "NORMAL", "FULL", "EXTRA"]
            let synchronous = Int(try connection.scalarInt("PRAGMA synchronous") ?? -1)
            settings = Settings(
                journalMode: try connection.scalarText("PRAGMA journal_mode") ?? "",
                synchronous: synchronousNames.indices.contains(synchronous)
                    ? synchronousNames[synchronous] : String(synchronous),
                foreignKeys: try connection.scalarInt("PRAGMA foreign_keys") == 1,
                busyTimeoutMilliseconds: Int(try connection.scalarInt("PRAGMA busy_timeout") ?? 0),
                sqliteVersion: String(cString: sqlite3_libversion()))
            // Opened on first use: a store read from one thread at a time
            // opens one, and a larger pool costs nothing until reads overlap.
            // A reader opens the file the writer has open, or none: it never
            // creates one, and one that finds another file at the path (the
            // database replaced or removed meanwhile) is closed and refused.
            let identity = Self.fileIdentity(filePath)
            let readerFlags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
            self.readers = (0..<readerCount).map { _ in
                LockedConnection {
                    let reader = try Connection(path: filePath, flags: readerFlags)
                    guard identity != nil, Self.fileIdentity(filePath) == identity else {
                        throw StorageError(
                            .io, .read, path: filePath,
                            message: "the database file was replaced or removed since the database was opened")
                    }
                    sqlite3_busy_timeout(reader.handle, Self.busyTimeoutMilliseconds)
                    try reader.execute("PRAGMA query_only = ON")
                    return reader
                }
            }
        } catch let error as StorageError {
            throw error.with(operation: .open, path: filePath)
        }
        writer = LockedConnection(connection)
        commits.setVersionSource { [writer, filePath] in
            try writer.withLock(.read) { connection in
                // https://sqlite.org/pragma.html#pragma_data_version
                let statement = try connection.statement("PRAGMA data_version")
                defer { statement.reset() }
                guard try statement.step() else {
                    throw StorageError(.engine, .read, path: filePath, message: "PRAGMA data_version returned no row")
                }
                return UInt64(bitPattern: statement.int64(0))
            }
        }
    }

    /// The storage for records of type `type`, creating its tables and indexes
    /// (and its relations' child tables) when missing.
    ///
    /// The stored schema is first read in a read transaction, which in WAL mode
    /// never waits for a writer: opening a store whose tables exist does not
    /// wait behind another connection's or process's write. Only when something
    /// is missing does it take the write lock (`BEGIN IMMEDIATE`) to create it.
    ///
    /// - Throws: ``StorageError/Kind/schemaMismatch`` when the record's
    ///   declaration is invalid or differs from the schema stored for it (the
    ///   error's ``StorageError/schemaChanges`` name every difference), before
    ///   any row is read or written; ``StorageError/Kind/closed`` after ``close()``.
    public func storage<R: Record>(for type: R.Type) throws -> SQLiteRecordStorage<R> {
        let table = SQLiteTable(R.entity)
        let isUpToDate = try withReader(.open, entity: R.entity.name) { connection in
            try connection.transaction(immediate: false) {
                let session = try SchemaSession(connection, mode: .check)
                // Every entity's recorded schema first, in the order every
                // backend checks them, so the first difference reported is the same.
                try EntitySchema.checkTree(for: R.self) { try session.storedSchema(of: $0) }
                // A child entity held by another entity's relation too, or
                // holding rows written on their own before its holder.
                let recorded = try session.storedSchemas()
                try ChildHolders.checkOpening(R.self, recorded: recorded)
                try ChildHolders.checkStoredOnTheirOwn(
                    R.self, recorded: recorded, holdsRecordsOnTheirOwn: session.holdsRowsOnTheirOwn)
                try setUpSchema(table, session)
                return !session.needsWrite
            }
        }
        if !isUpToDate {
            try withConnection(.open, entity: R.entity.name) { connection in
                // Also when the transaction fails: rolling back its DDL
                // changes the schema as well.
                defer { connection.dropCachedStatements() }
                func create() throws {
                    try connection.transaction(immediate: true) {
                        let session = try SchemaSession(connection, mode: .create)
                        // Again under the write lock: another process may have
                        // recorded a holder since the check above.
                        let recorded = try session.storedSchemas()
                        try ChildHolders.checkOpening(R.self, recorded: recorded)
                        try ChildHolders.checkStoredOnTheirOwn(
                            R.self, recorded: recorded, holdsRecordsOnTheirOwn: session.holdsRowsOnTheirOwn)
                        try setUpSchema(table, session)
                    }
                }
                do {
                    try create()
                } catch is ForeignKeysMustBeOff {
                    // A table other tables' foreign keys name is rebuilt
                    // (its reals declared `REAL`): with foreign keys off,
                    // so that dropping it cascades into nothing.
                    try connection.withForeignKeysOff { try create() }
                }
            }
        }
        handedOutStorage.withLock { $0 = true }
        return SQLiteRecordStorage(database: self, table: table)
    }

    /// Checks (and in `create` mode creates) the tables of `table`'s entity,
    /// its owners' first, so a child's table gets its foreign key to its owner.
    private func setUpSchema<R: Record>(_ table: SQLiteTable<R>, _ session: SchemaSession) throws {
        if let owner = R.entity.owner {
            try ensureSchema(of: owner, session, below: [R.entity.name])
        }
        try table.ensureSchema(session, foreignKey: nil)
    }

    /// Sets up `owner`'s tables, its own owners' first. `owned` are the entities
    /// already on the way up, to stop at an ownership loop.
    private func ensureSchema<O: Record>(of owner: O.Type, _ session: SchemaSession, below owned: [String]) throws {
        let name = O.entity.name
        guard !owned.contains(name) else {
            throw StorageError(
                .schemaMismatch, .open, entity: name,
                message: "the owners of '\(name)' lead back to it through \((owned.reversed() + [name]).joined(separator: " → "))")
        }
        if let grandOwner = O.entity.owner {
            try ensureSchema(of: grandOwner, session, below: owned + [name])
        }
        try SQLiteTable(O.entity).ensureSchema(session, foreignKey: nil)
    }

    /// Closes the database: ends its observations (``CommitBroadcaster/close()``),
    /// waits for the calls in progress, then closes the writer and every reader
    /// connection. Later calls through the database or its storages throw
    /// ``StorageError/Kind/closed``; closing again does nothing.
    ///
    /// - Throws: ``StorageError`` when SQLite reports a failure closing a
    ///   connection; every connection is closed all the same.
    public func close() throws {
        commits.close()
        var failure: StorageError?
        for connection in [writer] + readers {
            do {
                try connection.close()
            } catch let error as StorageError {
                failure = failure ?? error.with(operation: .close, path: path)
            }
        }
        if let failure { throw failure }
    }

    /// The same storage as ``storage(for:)``, type-erased.
    /// - Throws: what ``storage(for:)`` throws.
    public func anyStorage<R: Record>(for type: R.Type) throws -> AnyStorage<R> {
        AnyStorage(try storage(for: type))
    }

    /// Runs `body` with the writer connection, holding its lock, and completes
    /// any error with the operation, the entity and the path.
    func withConnection<T>(
        _ operation: StorageError.Operation, entity: String, _ body: (Connection) throws -> T
    ) throws -> T {
        try completingErrors(operation, entity: entity) { try writer.withLock(operation, body) }
    }

    /// How many reader connections are open (for tests: they open on first use).
    var openReaderCount: Int { readers.filter(\.isOpen).count }

    /// Runs the read-only `body` on a free reader connection (waiting for one
    /// when all are busy), and completes any error like ``withConnection(_:entity:_:)``.
    func withReader<T>(
        _ operation: StorageError.Operation, entity: String, _ body: (Connection) throws -> T
    ) throws -> T {
        try completingErrors(operation, entity: entity) {
            // First the connection this thread read with last, if it is
            // free: its page cache and statements are warm in this core's
            // caches, where a connection that passes between threads on
            // every read makes each thread fetch them from the other's.
            let thread = ReaderAffinity.currentThread
            for reader in readers where reader.lastThread.load(ordering: .relaxed) == thread && reader.tryLock() {
                defer { reader.unlock() }
                return try reader.use(operation, body)
            }
            var unopened: (any Error)?
            for reader in readers where reader.tryLock() {
                defer { reader.unlock() }
                do {
                    try reader.openIfNeeded()
                } catch {
                    unopened = error
                    break
                }
                reader.lastThread.store(thread, ordering: .relaxed)
                return try reader.use(operation, body)
            }
            if let unopened {
                // A connection that cannot be opened now (no file descriptor
                // left, say) fails no read while an open one will do: the
                // read waits for it (or, in place, moves to a reader thread).
                guard let open = readers.first(where: \.isOpen) else { throw unopened }
                return try open.withLock(operation, body)
            }
            return try readers[Int.random(in: 0..<readers.count)].withLock(operation, body)
        }
    }

    private func completingErrors<T>(
        _ operation: StorageError.Operation, entity: String, _ body: () throws -> T
    ) throws -> T {
        do {
            return try body()
        } catch let error as StorageError {
            throw error.with(operation: operation, entity: entity, path: path)
        } catch {
            let kind: StorageError.Kind =
                switch operation {
                case .persist: .encoding
                case .open, .close: .engine
                case .translate: .translation
                case .read, .count, .erase: .decoding
                }
            throw StorageError(kind, operation, entity: entity, path: path, message: "\(error)", underlying: error)
        }
    }
}

/// A connection behind a lock, opened when first used (or given open), until
/// it is closed.
///
/// `@unchecked Sendable` is safe because the connection (not `Sendable` itself)
/// is reached only through ``withLock(_:_:)``, which holds the lock for the
/// whole use, or through ``use(_:_:)`` between a successful ``tryLock()`` and
/// its ``unlock()``, so one thread at a time works with it and its statements;
/// ``close()`` takes the same lock, so it waits for the use in progress and
/// every later use finds no connection.
final class LockedConnection: @unchecked Sendable {
    // @unchecked: `connection` and `opener` are read and written only with
    // `lock` held; `opened` is atomic.
    private let lock = NSLock()
    private var connection: Connection?
    /// Opens the connection on first use; `nil` once it is open or closed.
    private var opener: (() throws -> Connection)?

    init(_ connection: Connection) {
        self.connection = connection
        opened.store(true, ordering: .releasing)
    }

    /// A connection `open` opens when it is first used.
    init(opening open: @escaping () throws -> Connection) {
        opener = open
    }

    /// Runs `body` with the connection, holding the lock.
    /// - Throws: ``StorageError/Kind/closed`` after ``close()``, or what `body` throws.
    func withLock<T>(_ operation: StorageError.Operation, _ body: (Connection) throws -> T) throws -> T {
        if StoreExecutor.readsMustNotWait {
            // A read in place for an `async` call: it moves to a reader
            // thread rather than wait for the connection.
            guard lock.try() else { throw StoreExecutor.wouldWait() }
        } else {
            lock.lock()
        }
        defer { lock.unlock() }
        return try use(operation, body)
    }

    /// The thread that last took the connection by ``tryLock()`` in
    /// ``SQLiteDatabase/withReader(_:entity:_:)`` (``ReaderAffinity``),
    /// 0 for none: a hint, read and written without the lock.
    let lastThread = Atomic<UInt>(0)

    /// Whether the connection is open (it opens on first use), read without
    /// the lock: a thread holding it may ask.
    var isOpen: Bool { opened.load(ordering: .acquiring) }
    private let opened = Atomic<Bool>(false)

    /// Takes the lock if it is free; a `true` answer must be followed by
    /// ``use(_:_:)`` calls and one ``unlock()``.
    func tryLock() -> Bool { lock.try() }

    /// Opens the connection if it was not yet, the caller holding the lock
    /// (``tryLock()``); does nothing when it is open or closed.
    /// - Throws: the error of opening it; it is tried again on the next use.
    func openIfNeeded() throws {
        guard connection == nil, let opener else { return }
        connection = try opener()
        self.opener = nil
        opened.store(true, ordering: .releasing)
    }

    /// Runs `body` with the connection, opening it first if it was not yet;
    /// the caller holds the lock (``tryLock()``).
    /// - Throws: ``StorageError/Kind/closed`` after ``close()``, the error of
    ///   opening the connection, or what `body` throws.
    func use<T>(_ operation: StorageError.Operation, _ body: (Connection) throws -> T) throws -> T {
        try openIfNeeded()
        guard let connection else { throw StorageError.closed(operation, path: nil) }
        return try body(connection)
    }

    /// Releases the lock taken by ``tryLock()``.
    func unlock() { lock.unlock() }

    /// Waits for the use in progress, then closes the connection. Does nothing
    /// when it is closed already.
    func close() throws {
        lock.lock()
        defer { lock.unlock() }
        opener = nil
        guard let connection else { return }
        self.connection = nil
        opened.store(false, ordering: .releasing)
        try connection.close()
    }
}

/// A number for each thread that reads, so that a reader connection can
/// remember which thread used it last (``LockedConnection/lastThread``).
enum ReaderAffinity {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
    private static let next = Atomic<UInt>(1)

    /// This thread's number, given on its first read (never 0).
    static var currentThread: UInt {
        let stored = UInt(bitPattern: pthread_getspecific(key))
        if stored != 0 { return stored }
        let number = next.wrappingAdd(1, ordering: .relaxed).oldValue
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: number))
        return number
    }
}
