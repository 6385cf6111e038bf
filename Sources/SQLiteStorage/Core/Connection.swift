import CSQLite
import DAOCore
import Foundation

/// One SQLite connection, the single owner of its `sqlite3*`: opened in the
/// throwing initializer (and closed again if the rest of opening fails), closed in
/// `deinit` after its cached statements are finalized.
///
/// Not `Sendable`: ``SQLiteDatabase`` hands it to one thread at a time under a lock.
final class Connection {
    /// The connection handle.
    let handle: OpaquePointer
    /// The database file.
    let path: String
    /// Made with room for a store's statements when the connection opens: the
    /// first growth of a dictionary of this type instantiates its storage's
    /// metadata, a one-time lookup of about 0.3M instructions that would
    /// otherwise fall in the first write.
    private var cache = [SQLText: Statement](minimumCapacity: 32)
    /// The statement ``statement(_:)-(SQLText)`` found or prepared last,
    /// with its key: a prepared query's calls, run one after another, find
    /// theirs with one comparison of the text (its hash, then its bytes)
    /// instead of a look-up in ``cache`` (about 450 instructions a call).
    /// Always one of ``cache``'s statements. The key's hash is compared
    /// first, apart, so that a miss (reads that alternate two statements)
    /// costs an integer comparison and no copy of the key.
    private var lastHash = 0
    private var lastKey: SQLText?
    private var lastStatement: Statement?
    private static let cacheLimit = 256
    /// `BEGIN`, `BEGIN IMMEDIATE` and `COMMIT`, prepared on first use and held
    /// here rather than in ``cache``: finding them there hashed the SQL text
    /// twice per call.
    private var begin: Statement?
    private var beginImmediate: Statement?
    private var commit: Statement?
    private var isClosed = false
    /// Set when foreign keys could not be turned on again
    /// (``withForeignKeysOff(_:)``): the connection then runs no transaction.
    private var foreignKeysLeftOff = false

    /// Opens the database at `path` with `flags` (`SQLITE_OPEN_*`).
    /// - Throws: ``StorageError`` (kind ``StorageError/Kind/io`` when the file cannot be opened).
    init(path: String, flags: Int32) throws {
        var db: OpaquePointer?
        let code = sqlite3_open_v2(path, &db, flags, nil)
        guard code == SQLITE_OK, let db else {
            let error = sqliteError(code, db: db, sql: nil, operation: .open)
            sqlite3_close_v2(db)
            throw error.with(path: path)
        }
        self.handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
    }

    deinit {
        if !isClosed {
            forgetLastStatement()
            cache.removeAll()
            (begin, beginImmediate, commit) = (nil, nil, nil)
            sqlite3_close_v2(handle)
        }
    }

    /// Finalizes the cached statements and closes the connection; the
    /// connection must not be used afterwards.
    /// - Throws: ``StorageError`` when SQLite refuses to close it (the handle
    ///   is released all the same: `sqlite3_close_v2` defers what it cannot do now).
    func close() throws {
        guard !isClosed else { return }
        isClosed = true
        forgetLastStatement()
        cache.removeAll()
        (begin, beginImmediate, commit) = (nil, nil, nil)
        let code = sqlite3_close_v2(handle)
        if code != SQLITE_OK {
            throw sqliteError(code, db: nil, sql: nil, operation: .close).with(path: path)
        }
    }

    /// A prepared statement for `sql`, prepared once and reused afterwards.
    /// The caller resets it after use (``Statement/run()`` does).
    func statement(_ sql: String) throws -> Statement {
        try statement(SQLText(sql: sql))
    }

    /// The cached prepared statement for `key`, prepared on first use: the
    /// same as ``statement(_:)-(String)``, without hashing the text again (a
    /// table keeps the texts of its own statements as keys).
    func statement(_ key: SQLText) throws -> Statement {
        if lastHash == key.textHash, lastKey == key, let lastStatement { return lastStatement }
        if let cached = cache[key] {
            keepLast(key, cached)
            return cached
        }
        let statement = try Statement(db: handle, sql: key.sql, persistent: true)
        if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
        cache[key] = statement
        keepLast(key, statement)
        return statement
    }

    private func keepLast(_ key: SQLText, _ statement: Statement) {
        lastHash = key.textHash
        lastKey = key
        lastStatement = statement
    }

    private func forgetLastStatement() {
        lastKey = nil
        lastStatement = nil
    }

    /// A statement for `sql` prepared for one use and not cached: for reading
    /// the schema while opening a storage. A cached statement that reads the
    /// schema and is run again after this connection's (or another's) `CREATE`
    /// is prepared again by SQLite, which then keeps the "schema has changed"
    /// message in the connection until it closes, and every later statement
    /// reset on it copies that error state (about 22 instructions a step).
    func oneOffStatement(_ sql: String) throws -> Statement {
        try Statement(db: handle, sql: sql, persistent: false)
    }

    /// Drops the cached statements (each is finalized once no caller holds
    /// it), after this connection changed the schema: one prepared before the
    /// change would be prepared again on its next step, leaving SQLite's
    /// error state set (``oneOffStatement(_:)``).
    func dropCachedStatements() {
        forgetLastStatement()
        cache.removeAll(keepingCapacity: true)
    }

    /// Runs one or more SQL statements that take no parameters.
    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        if code != SQLITE_OK {
            var error = sqliteError(code, db: handle, sql: sql)
            if let message { error.message = "SQLite: " + String(cString: message) }
            throw error
        }
    }

    /// The first column of the first row of `sql` as text (`nil` when there is none).
    func scalarText(_ sql: String) throws -> String? {
        let statement = try Statement(db: handle, sql: sql, persistent: false)
        guard try statement.step() else { return nil }
        return statement.text(0)
    }

    /// The first column of the first row of `sql` as an integer (`nil` when there is none).
    func scalarInt(_ sql: String) throws -> Int64? {
        let statement = try Statement(db: handle, sql: sql, persistent: false)
        guard try statement.step() else { return nil }
        return statement.int64(0)
    }

    /// The number of rows the last INSERT, UPDATE or DELETE changed directly
    /// (not counting foreign-key cascades).
    var changes: Int { Int(sqlite3_changes64(handle)) }

    private func beginStatement() throws -> Statement {
        if let begin { return begin }
        let statement = try Statement(db: handle, sql: "BEGIN", persistent: true)
        begin = statement
        return statement
    }

    private func beginImmediateStatement() throws -> Statement {
        if let beginImmediate { return beginImmediate }
        let statement = try Statement(db: handle, sql: "BEGIN IMMEDIATE", persistent: true)
        beginImmediate = statement
        return statement
    }

    private func commitStatement() throws -> Statement {
        if let commit { return commit }
        let statement = try Statement(db: handle, sql: "COMMIT", persistent: true)
        commit = statement
        return statement
    }

    /// Runs `body` with SQLite's enforcement of foreign keys off, and turns it
    /// on again afterwards, whether `body` returns or throws. No transaction
    /// may be open: SQLite keeps count of a transaction's unresolved foreign
    /// keys only while they are enforced.
    ///
    /// Changing the setting expires the connection's prepared statements:
    /// SQLite prepares each again on its next use.
    /// - Throws: ``StorageError/Kind/engine`` when a transaction is open or
    ///   SQLite refuses the change, or what `body` throws.
    func withForeignKeysOff<T>(_ body: () throws -> T) throws -> T {
        guard sqlite3_get_autocommit(handle) != 0 else {
            throw StorageError(
                .engine, .erase, path: path, message: "foreign keys cannot be turned off inside a transaction")
        }
        guard csqlite_set_foreign_keys(handle, 0) == 0 else {
            throw StorageError(.engine, .erase, path: path, message: "SQLite refused to turn foreign keys off")
        }
        let result = Result { try body() }
        // Setting a flag of the connection: SQLite has no way to fail here
        // but a bad argument, and then says so. Should it, no transaction
        // runs on this connection again (``transaction(immediate:_:)``).
        guard csqlite_set_foreign_keys(handle, 1) == 1 else {
            foreignKeysLeftOff = true
            let outcome = if case .success = result { "committed" } else { "failed" }
            throw StorageError(
                .engine, .erase, path: path,
                message: "SQLite refused to turn foreign keys on again after a \(outcome) erase; the store must be opened again")
        }
        return try result.get()
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when
    /// it (or the commit) throws.
    ///
    /// `immediate` takes the write lock at once (`BEGIN IMMEDIATE`), so a write
    /// never fails half-way for want of it.
    func transaction<T>(immediate: Bool, _ body: () throws -> T) throws -> T {
        if foreignKeysLeftOff {
            throw StorageError(
                .engine, .persist, path: path,
                message: "foreign keys could not be turned on again on this connection; the store must be opened again")
        }
        try (immediate ? beginImmediateStatement() : beginStatement()).run()
        do {
            let result = try body()
            try commitStatement().run()
            return result
        } catch {
            if sqlite3_get_autocommit(handle) == 0 {
                // The caller needs the original error, so that is what is thrown.
                // Should the rollback itself fail, SQLite has already rolled the
                // transaction back (that is when ROLLBACK fails), or it is rolled
                // back when the connection closes.
                sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            }
            throw error
        }
    }
}

/// SQL text as the key of the statement cache: equal when its UTF-8 bytes are.
/// `String`'s `==` and hash take canonically equivalent text for one value, so
/// statements naming two entities spelled in NFC and in NFD (two tables to
/// SQLite) would share one prepared statement, and the second entity would
/// read and write the first one's table.
///
/// Its bytes are hashed once, when it is made: a table keeps the keys of its
/// statements, so that finding one in the cache per call hashes an integer,
/// not the text (a statement's text runs to hundreds of bytes; hashing it
/// cost 1–4k instructions per lookup, 1% of a read by key).
struct SQLText: Hashable, Sendable {
    /// The statement's text.
    let sql: String
    /// The hash of the text's UTF-8 bytes.
    let textHash: Int

    init(sql: String) {
        self.sql = sql
        var hasher = Hasher()
        let hashed: Void? = sql.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil {
            for byte in sql.utf8 { hasher.combine(byte) }
        }
        textHash = hasher.finalize()
    }

    static func == (lhs: SQLText, rhs: SQLText) -> Bool {
        guard lhs.textHash == rhs.textHash else { return false }
        let contiguous = lhs.sql.utf8.withContiguousStorageIfAvailable { left in
            rhs.sql.utf8.withContiguousStorageIfAvailable { right in
                guard left.count == right.count else { return false }
                guard let leftBytes = left.baseAddress, let rightBytes = right.baseAddress else { return true }
                return memcmp(leftBytes, rightBytes, left.count) == 0
            }
        }
        return (contiguous ?? nil) ?? lhs.sql.utf8.elementsEqual(rhs.sql.utf8)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(textHash)
    }
}
