import CSQLite
import DAOCore
import DialogGraph
import Foundation
import StorageBenchKit

/// `SQLITE_STATIC`: SQLite uses the bound bytes in place; they must stay valid
/// until the statement is reset or rebound.
private let sqliteStatic: sqlite3_destructor_type? = nil
/// `SQLITE_TRANSIENT`: SQLite copies the bound bytes before the bind returns.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// `sqlite-raw`: the workload on libsqlite3's C API, used the plainest fast way
/// and with no DAO: the limit a Swift program can reach on SQLite.
///
/// Two tables with typed columns (`dialogs`, and `messages` with a foreign key
/// to its dialog, `ON DELETE CASCADE`, and an index on `(dialog_id, date)`);
/// every statement prepared once (`SQLITE_PREPARE_PERSISTENT`) and reused;
/// one transaction per call; plain `INSERT` for `persist` and
/// `persist-single` (the store is known to be empty), `INSERT … ON CONFLICT DO
/// UPDATE` for `update`; a dialog's messages deleted before it on
/// `erase-by-id` (the cascade finds none); text bound in place (`SQLITE_STATIC`). The durability
/// is that of the DAO's SQLite store: WAL, `synchronous=FULL` (``Durability/full``)
/// or `OFF` (``Durability/none``), foreign keys on (off for `erase-all`).
public final class SQLiteRawSubject: WorkloadSubject {
    /// A prepared statement, finalized when released.
    private final class Statement {
        let handle: OpaquePointer
        init(_ handle: OpaquePointer) { self.handle = handle }
        deinit { sqlite3_finalize(handle) }
    }

    /// The connection, closed when released (after every statement, which
    /// each hold it).
    private final class Connection {
        let handle: OpaquePointer
        init(_ handle: OpaquePointer) { self.handle = handle }
        deinit { sqlite3_close_v2(handle) }
    }

    private static let messageColumns =
        "id, dialog_id, date, text, sender_id, receiver_id, type, is_incoming, is_read"

    private let connection: Connection
    private var db: OpaquePointer { connection.handle }
    private let beginRead: Statement
    private let beginWrite: Statement
    private let commit: Statement
    private let rollback: Statement
    private let insertDialog: Statement
    private let insertMessage: Statement
    private let upsertDialog: Statement
    private let upsertMessage: Statement
    private let selectDialog: Statement
    private let selectMessagesOfDialog: Statement
    private let selectUnread: Statement
    private let selectAllDialogs: Statement
    private let selectAllMessages: Statement
    private let deleteDialog: Statement
    private let deleteMessagesOfDialog: Statement
    private let deleteAllMessages: Statement
    private let deleteAllDialogs: Statement
    private let countDialogs: Statement
    private let countMessages: Statement
    private let countUnread: Statement
    private let selectOldest: Statement
    private let selectNewest: Statement

    /// The settings read back from SQLite: journal mode, synchronous, foreign keys, version.
    public let settingsDescription: String

    /// Creates `store.sqlite` in `directory` with the schema, and prepares every statement.
    ///
    /// With `createSchema: false`, opens another connection to a store that
    /// such a call created (the load command's read connection per client).
    /// - Throws: ``ReferenceError`` when SQLite fails.
    public init(directory: URL, durability: Durability, createSchema: Bool = true) throws {
        let path = directory.appendingPathComponent("store.sqlite").path
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard let handle else {
            throw ReferenceError(engine: "sqlite", operation: "open \(path)", code: code, message: "no connection")
        }
        connection = Connection(handle)
        guard code == SQLITE_OK else {
            throw ReferenceError(
                engine: "sqlite", operation: "open \(path)", code: code, message: String(cString: sqlite3_errmsg(handle)))
        }
        let db = handle
        func exec(_ sql: String) throws {
            var error: UnsafeMutablePointer<CChar>?
            let code = sqlite3_exec(db, sql, nil, nil, &error)
            if code != SQLITE_OK {
                let message = error.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(db))
                sqlite3_free(error)
                throw ReferenceError(engine: "sqlite", operation: "exec", code: code, message: message, sql: sql)
            }
        }
        func prepare(_ sql: String) throws -> Statement {
            var statement: OpaquePointer?
            let code = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
            guard code == SQLITE_OK, let statement else {
                throw ReferenceError(
                    engine: "sqlite", operation: "prepare", code: code, message: String(cString: sqlite3_errmsg(db)),
                    sql: sql)
            }
            return Statement(statement)
        }
        func pragma(_ name: String) throws -> String {
            let statement = try prepare("PRAGMA \(name)")
            guard sqlite3_step(statement.handle) == SQLITE_ROW, let text = sqlite3_column_text(statement.handle, 0)
            else { return "?" }
            return String(cString: text)
        }
        try exec("PRAGMA journal_mode = WAL")
        try exec(durability == .full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = OFF")
        try exec("PRAGMA foreign_keys = ON")
        sqlite3_busy_timeout(db, 5000)
        if createSchema {
            try exec(
            """
            BEGIN IMMEDIATE;
            CREATE TABLE dialogs(id INTEGER PRIMARY KEY, is_pinned INTEGER NOT NULL);
            CREATE TABLE messages(id INTEGER PRIMARY KEY,
              dialog_id INTEGER NOT NULL REFERENCES dialogs(id) ON DELETE CASCADE,
              date REAL NOT NULL, text TEXT NOT NULL, sender_id INTEGER NOT NULL,
              receiver_id INTEGER NOT NULL, type INTEGER NOT NULL,
              is_incoming INTEGER NOT NULL, is_read INTEGER NOT NULL);
            CREATE INDEX messages_dialog_id_date ON messages(dialog_id, date);
            COMMIT;
            """)
        }
        let columns = Self.messageColumns
        beginRead = try prepare("BEGIN")
        beginWrite = try prepare("BEGIN IMMEDIATE")
        commit = try prepare("COMMIT")
        rollback = try prepare("ROLLBACK")
        insertDialog = try prepare("INSERT INTO dialogs(id, is_pinned) VALUES (?, ?)")
        insertMessage = try prepare("INSERT INTO messages(\(columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
        upsertDialog = try prepare(
            "INSERT INTO dialogs(id, is_pinned) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET is_pinned = excluded.is_pinned")
        upsertMessage = try prepare(
            """
            INSERT INTO messages(\(columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET dialog_id = excluded.dialog_id, date = excluded.date,
              text = excluded.text, sender_id = excluded.sender_id, receiver_id = excluded.receiver_id,
              type = excluded.type, is_incoming = excluded.is_incoming, is_read = excluded.is_read
            """)
        selectDialog = try prepare("SELECT id, is_pinned FROM dialogs WHERE id = ?")
        selectMessagesOfDialog = try prepare("SELECT \(columns) FROM messages WHERE dialog_id = ? ORDER BY date")
        selectUnread = try prepare(
            "SELECT \(columns) FROM messages WHERE dialog_id = ? AND is_read = 0 ORDER BY date DESC")
        selectAllDialogs = try prepare("SELECT id, is_pinned FROM dialogs ORDER BY id")
        selectAllMessages = try prepare("SELECT \(columns) FROM messages ORDER BY id")
        deleteDialog = try prepare("DELETE FROM dialogs WHERE id = ?")
        // Before the dialog: SQLite runs ON DELETE CASCADE as a trigger
        // program, slower per row than a plain DELETE of the same rows.
        deleteMessagesOfDialog = try prepare("DELETE FROM messages WHERE dialog_id = ?")
        deleteAllMessages = try prepare("DELETE FROM messages")
        deleteAllDialogs = try prepare("DELETE FROM dialogs")
        countDialogs = try prepare("SELECT count(*) FROM dialogs")
        countMessages = try prepare("SELECT count(*) FROM messages")
        countUnread = try prepare("SELECT count(*) FROM messages WHERE is_read = 0")
        selectOldest = try prepare("SELECT \(columns) FROM messages WHERE dialog_id = ? ORDER BY date LIMIT ?")
        selectNewest = try prepare("SELECT \(columns) FROM messages WHERE dialog_id = ? ORDER BY date DESC LIMIT ?")
        let synchronous = ["0": "OFF", "1": "NORMAL", "2": "FULL", "3": "EXTRA"]
        let level = try pragma("synchronous")
        let journalMode = try pragma("journal_mode")
        let foreignKeys = try pragma("foreign_keys") == "1" ? "ON" : "OFF"
        settingsDescription =
            "journal_mode=\(journalMode) synchronous=\(synchronous[level] ?? level) foreign_keys=\(foreignKeys) "
            + "sqlite=\(String(cString: sqlite3_libversion()))"
    }

    // MARK: The workload

    public func persist(_ dialogs: [Dialog]) throws {
        try write { try write(dialogs, dialog: insertDialog, message: insertMessage) }
    }

    public func update(_ dialogs: [Dialog]) throws {
        try write { try write(dialogs, dialog: upsertDialog, message: upsertMessage) }
    }

    public func persistSingle(_ dialog: Dialog) throws {
        try write { try write([dialog], dialog: insertDialog, message: insertMessage) }
    }

    public func readAll() throws -> [Dialog] {
        try read {
            var ids: [Int64] = []
            var pinned: [Bool] = []
            let dialogs = selectAllDialogs.handle
            defer { sqlite3_reset(dialogs) }
            while try step(selectAllDialogs) {
                ids.append(sqlite3_column_int64(dialogs, 0))
                pinned.append(sqlite3_column_int(dialogs, 1) != 0)
            }
            // Messages in rowid order; each goes to its dialog, found by binary
            // search in the ordered ids, with a fast path for a run of one dialog.
            var messages = [[Message]](repeating: [], count: ids.count)
            let all = selectAllMessages.handle
            defer { sqlite3_reset(all) }
            var current = -1
            while try step(selectAllMessages) {
                let dialogId = sqlite3_column_int64(all, 1)
                if current < 0 || ids[current] != dialogId {
                    var low = 0
                    var high = ids.count
                    while low < high {
                        let middle = (low + high) / 2
                        if ids[middle] < dialogId { low = middle + 1 } else { high = middle }
                    }
                    guard low < ids.count, ids[low] == dialogId else {
                        throw ReferenceError(
                            engine: "sqlite", operation: "read-all", code: 0,
                            message: "a message of dialog \(dialogId), which does not exist")
                    }
                    current = low
                }
                messages[current].append(Self.message(all))
            }
            var result: [Dialog] = []
            result.reserveCapacity(ids.count)
            for index in ids.indices {
                result.append(Dialog(uniqueId: ids[index], isPinned: pinned[index], messages: messages[index]))
            }
            return result
        }
    }

    public func read(dialogId id: Int64) throws -> Dialog? {
        try read { try dialog(id) }
    }

    public func unreadMessages(dialogId id: Int64) throws -> [Message] {
        try read {
            let statement = selectUnread.handle
            defer { sqlite3_reset(statement) }
            sqlite3_bind_int64(statement, 1, id)
            var result: [Message] = []
            while try step(selectUnread) { result.append(Self.message(statement)) }
            return result
        }
    }

    public func erase(dialogIds ids: [Int64]) throws -> Int {
        try write {
            var erased = 0
            for id in ids {
                sqlite3_bind_int64(deleteMessagesOfDialog.handle, 1, id)
                try run(deleteMessagesOfDialog)
                sqlite3_bind_int64(deleteDialog.handle, 1, id)
                try run(deleteDialog)
                erased += Int(sqlite3_changes(db))
            }
            return erased
        }
    }

    /// Both tables emptied with foreign keys off (set outside the
    /// transaction, as SQLite requires), so that SQLite frees their pages
    /// whole (its truncate shortcut) rather than deleting row by row; nothing
    /// but these two tables refers to them.
    public func eraseAll() throws -> Int {
        guard csqlite_set_foreign_keys(db, 0) == 0 else { throw error(SQLITE_ERROR, "erase-all") }
        let result = Result {
            try write {
                try run(deleteAllMessages)
                try run(deleteAllDialogs)
                return Int(sqlite3_changes(db))
            }
        }
        guard csqlite_set_foreign_keys(db, 1) == 1 else { throw error(SQLITE_ERROR, "erase-all") }
        return try result.get()
    }

    // MARK: Under load (the load command)

    /// Up to `limit` messages of dialog `id` by date, oldest first or newest
    /// first, in one read transaction.
    /// - Throws: ``ReferenceError`` when SQLite fails.
    public func messages(dialogId id: Int64, limit: Int, newestFirst: Bool) throws -> [Message] {
        let query = newestFirst ? selectNewest : selectOldest
        return try read {
            let statement = query.handle
            defer { sqlite3_reset(statement) }
            sqlite3_bind_int64(statement, 1, id)
            sqlite3_bind_int64(statement, 2, Int64(limit))
            var result: [Message] = []
            result.reserveCapacity(limit)
            while try step(query) { result.append(Self.message(statement)) }
            return result
        }
    }

    /// Inserts one message into its (existing) dialog, in a transaction of its own.
    /// - Throws: ``ReferenceError`` when SQLite fails.
    public func append(_ message: Message) throws {
        try write {
            let m = insertMessage.handle
            defer { sqlite3_clear_bindings(m) }
            try bind(message, insertMessage)
        }
    }

    // MARK: The checks

    public func read(dialogIds ids: [Int64]) throws -> [Dialog] {
        try read { try ids.compactMap { try dialog($0) } }
    }

    public func dialogCount() throws -> Int { try count(countDialogs) }

    public func messageCount() throws -> Int { try count(countMessages) }

    public func unreadMessageCount() throws -> Int { try count(countUnread) }

    // MARK: Helpers

    private func error(_ code: Int32, _ operation: String, _ statement: Statement? = nil) -> ReferenceError {
        ReferenceError(
            engine: "sqlite", operation: operation, code: code, message: String(cString: sqlite3_errmsg(db)),
            sql: statement.flatMap { sqlite3_sql($0.handle) }.map { String(cString: $0) })
    }

    /// Runs a statement that returns no row, and resets it.
    @inline(__always)
    private func run(_ statement: Statement) throws {
        let code = sqlite3_step(statement.handle)
        sqlite3_reset(statement.handle)
        guard code == SQLITE_DONE else { throw error(code, "step", statement) }
    }

    /// Steps a query: `true` with a row, `false` when done.
    @inline(__always)
    private func step(_ statement: Statement) throws -> Bool {
        let code = sqlite3_step(statement.handle)
        if code == SQLITE_ROW { return true }
        guard code == SQLITE_DONE else { throw error(code, "step", statement) }
        return false
    }

    private func count(_ statement: Statement) throws -> Int {
        defer { sqlite3_reset(statement.handle) }
        guard try step(statement) else { throw error(SQLITE_DONE, "count", statement) }
        return Int(sqlite3_column_int64(statement.handle, 0))
    }

    /// `body` in one write transaction (`BEGIN IMMEDIATE` … `COMMIT`), rolled back when it throws.
    private func write<T>(_ body: () throws -> T) throws -> T {
        try run(beginWrite)
        do {
            let result = try body()
            try run(commit)
            return result
        } catch {
            // The error that stopped the work is the one to report; a failed
            // rollback leaves the transaction open, and the next BEGIN says so.
            sqlite3_step(rollback.handle)
            sqlite3_reset(rollback.handle)
            throw error
        }
    }

    /// `body` in one read transaction (`BEGIN` … `COMMIT`).
    private func read<T>(_ body: () throws -> T) throws -> T {
        try run(beginRead)
        do {
            let result = try body()
            try run(commit)
            return result
        } catch {
            sqlite3_step(rollback.handle)
            sqlite3_reset(rollback.handle)
            throw error
        }
    }

    /// Inserts (or upserts) `dialogs` and their messages with the two statements.
    private func write(_ dialogs: [Dialog], dialog: Statement, message: Statement) throws {
        let d = dialog.handle
        let m = message.handle
        // SQLITE_STATIC text must not stay bound past the caller's strings.
        defer { sqlite3_clear_bindings(m) }
        for item in dialogs {
            sqlite3_bind_int64(d, 1, item.uniqueId)
            sqlite3_bind_int(d, 2, item.isPinned ? 1 : 0)
            try run(dialog)
            for row in item.messages { try bind(row, message) }
        }
    }

    /// Binds `row` to the message statement `message` and runs it (the text
    /// stays bound: the caller clears the bindings).
    @inline(__always)
    private func bind(_ row: Message, _ message: Statement) throws {
        let m = message.handle
        sqlite3_bind_int64(m, 1, row.uniqueId)
        sqlite3_bind_int64(m, 2, row.dialogId)
        sqlite3_bind_double(m, 3, row.date.timeIntervalSince1970)
        sqlite3_bind_int64(m, 5, row.senderId)
        sqlite3_bind_int64(m, 6, row.receiverId)
        sqlite3_bind_int64(m, 7, Int64(row.type))
        sqlite3_bind_int(m, 8, row.isIncoming ? 1 : 0)
        sqlite3_bind_int(m, 9, row.isRead ? 1 : 0)
        var text = row.text
        try text.withUTF8 { bytes in
            if let base = bytes.baseAddress {
                let chars = UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self)
                sqlite3_bind_text(m, 4, chars, Int32(bytes.count), sqliteStatic)
            } else {
                sqlite3_bind_text(m, 4, "", 0, sqliteTransient)
            }
            try run(message)
        }
    }

    /// The dialog `id` with its messages (by date), inside a transaction, or `nil`.
    private func dialog(_ id: Int64) throws -> Dialog? {
        let d = selectDialog.handle
        sqlite3_bind_int64(d, 1, id)
        let found = try step(selectDialog)
        let isPinned = found && sqlite3_column_int(d, 1) != 0
        sqlite3_reset(d)
        guard found else { return nil }
        let m = selectMessagesOfDialog.handle
        defer { sqlite3_reset(m) }
        sqlite3_bind_int64(m, 1, id)
        var messages: [Message] = []
        while try step(selectMessagesOfDialog) { messages.append(Self.message(m)) }
        return Dialog(uniqueId: id, isPinned: isPinned, messages: messages)
    }

    /// The message in the current row of a statement that selects `messageColumns`.
    @inline(__always)
    private static func message(_ statement: OpaquePointer) -> Message {
        let text: String
        if let bytes = sqlite3_column_text(statement, 3) {
            let count = Int(sqlite3_column_bytes(statement, 3))
            text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
        } else {
            text = ""
        }
        return Message(
            uniqueId: sqlite3_column_int64(statement, 0), dialogId: sqlite3_column_int64(statement, 1),
            date: Date(timeIntervalSince1970: sqlite3_column_double(statement, 2)), text: text,
            senderId: sqlite3_column_int64(statement, 4), receiverId: sqlite3_column_int64(statement, 5),
            type: Int(sqlite3_column_int64(statement, 6)), isIncoming: sqlite3_column_int(statement, 7) != 0,
            isRead: sqlite3_column_int(statement, 8) != 0)
    }
}
