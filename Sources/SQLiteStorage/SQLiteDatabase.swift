import CSQLite
import DAOCore
import Foundation

/// An SQLite database file that holds the tables of several record types and
/// hands out a ``SQLiteStorage`` for each.
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

    /// ``settings`` as one line.
    public var settingsDescription: String { settings.description }
    /// How long a call waits for a lock held by another process, in milliseconds.
    public static let busyTimeoutMilliseconds: Int32 = 5000

    /// Tells observers what each commit changed. Commits by other connections
    /// (other processes) are noticed by polling `PRAGMA data_version` on the
    /// writer connection, which changes only for them.
    public let commits = CommitBroadcaster()
    let path: String
    private let writer: LockedConnection
    private let readers: [LockedConnection]
    /// How many reader connections the database keeps.
    public static let readerCount = 2

    /// Opens the database at `path`, creating the file (and its parent directory)
    /// when missing.
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/corrupt`` when the
    ///   file is not an SQLite database, ``StorageError/Kind/io`` when it cannot
    ///   be opened or created.
    public init(path: URL, durability: Durability = .full) throws {
        let filePath = path.path(percentEncoded: false)
        self.location = path
        self.durability = durability
        self.path = filePath
        do {
            try FileManager.default.createDirectory(
                at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch {
            throw StorageError(
                .io, .open, path: filePath, message: "cannot create the database's directory", underlying: error)
        }
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
            readers = try (0..<Self.readerCount).map { _ in
                let reader = try Connection(path: filePath, flags: flags)
                sqlite3_busy_timeout(reader.handle, Self.busyTimeoutMilliseconds)
                try reader.execute("PRAGMA query_only = ON")
                return LockedConnection(reader)
            }
        } catch let error as StorageError {
            throw error.with(operation: .open, path: filePath)
        }
        writer = LockedConnection(connection)
        commits.setVersionSource { [writer, filePath] in
            try writer.withLock { connection in
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
    /// - Throws: ``StorageError/Kind/schemaMismatch`` when the record's
    ///   declaration is invalid or the existing tables differ from it.
    public func storage<R: Record>(for type: R.Type) throws -> SQLiteStorage<R> {
        let table = Table(R.entity)
        try withConnection(.open, entity: R.entity.name) { connection in
            try connection.transaction(immediate: true) {
                // A child entity's owner is set up first, so the child's table
                // is created with its foreign key to the owner's table.
                if let owner = R.entity.owner {
                    try ensureSchema(of: owner, connection, below: [R.entity.name])
                }
                try table.ensureSchema(connection, foreignKey: nil)
            }
        }
        return SQLiteStorage(database: self, table: table)
    }

    /// Sets up `owner`'s tables, its own owners' first. `owned` are the entities
    /// already on the way up, to stop at an ownership loop.
    private func ensureSchema<O: Record>(of owner: O.Type, _ connection: Connection, below owned: [String]) throws {
        let name = O.entity.name
        guard !owned.contains(name) else {
            throw StorageError(
                .schemaMismatch, .open, entity: name,
                message: "the owners of '\(name)' lead back to it through \((owned.reversed() + [name]).joined(separator: " → "))")
        }
        if let grandOwner = O.entity.owner {
            try ensureSchema(of: grandOwner, connection, below: owned + [name])
        }
        try Table(O.entity).ensureSchema(connection, foreignKey: nil)
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
        try completingErrors(operation, entity: entity) { try writer.withLock(body) }
    }

    /// Runs the read-only `body` on a free reader connection (waiting for one
    /// when all are busy), and completes any error like ``withConnection(_:entity:_:)``.
    func withReader<T>(
        _ operation: StorageError.Operation, entity: String, _ body: (Connection) throws -> T
    ) throws -> T {
        try completingErrors(operation, entity: entity) {
            for reader in readers where reader.tryLock() {
                defer { reader.unlock() }
                return try reader.use(body)
            }
            return try readers[Int.random(in: 0..<readers.count)].withLock(body)
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

/// A connection behind a lock.
///
/// `@unchecked Sendable` is safe because the connection (not `Sendable` itself)
/// is reached only through ``withLock(_:)``, which holds the lock for the whole
/// use, or through ``use(_:)`` between a successful ``tryLock()`` and its
/// ``unlock()``, so one thread at a time works with it and its statements.
final class LockedConnection: @unchecked Sendable {
    private let lock = NSLock()
    private let connection: Connection

    init(_ connection: Connection) {
        self.connection = connection
    }

    func withLock<T>(_ body: (Connection) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(connection)
    }

    /// Takes the lock if it is free; a `true` answer must be followed by
    /// ``use(_:)`` calls and one ``unlock()``.
    func tryLock() -> Bool { lock.try() }

    /// Runs `body` with the connection; the caller holds the lock (``tryLock()``).
    func use<T>(_ body: (Connection) throws -> T) rethrows -> T { try body(connection) }

    /// Releases the lock taken by ``tryLock()``.
    func unlock() { lock.unlock() }
}
