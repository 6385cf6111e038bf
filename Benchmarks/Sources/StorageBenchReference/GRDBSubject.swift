import DAOCore
import DialogGraph
import Foundation
import GRDB
import StorageBenchKit

/// `grdb`: the workload on GRDB.swift, used the way its documentation shows:
/// what a Swift developer would pick instead of this library's DAO.
///
/// Codable records that adopt `FetchableRecord` and `PersistableRecord`, a
/// `DatabaseQueue`, a `DatabaseMigrator` that creates the schema, the query
/// interface (`filter`, `order`, `including(all:)`), and one `read` or `write`
/// per call of the workload. The schema matches the DAO's SQLite store:
/// `dialog`, and `message` with a foreign key to its dialog (`ON DELETE CASCADE`)
/// and an index on `(dialogId, date)`. Dates are stored the way GRDB
/// stores a `Date` by default (`YYYY-MM-DD HH:MM:SS.SSS` text, UTC).
///
/// The durability is that of the DAO's SQLite store: WAL, `synchronous=FULL`
/// (``Durability/full``) or `OFF` (``Durability/none``), foreign keys on. GRDB
/// sets `synchronous=NORMAL` when it turns WAL on, so the pragma is set after
/// the queue has opened, and read back for the report.
/// See <https://github.com/groue/GRDB.swift/blob/master/README.md>.
public final class GRDBSubject: WorkloadSubject {
    /// A dialog row.
    struct DialogRow: Codable, FetchableRecord, PersistableRecord {
        static let databaseTableName = "dialog"
        static let messages = hasMany(MessageRow.self)

        var id: Int64
        var isPinned: Bool

        enum Columns {
            static let id = Column(CodingKeys.id)
        }
    }

    /// A message row.
    struct MessageRow: Codable, FetchableRecord, PersistableRecord {
        static let databaseTableName = "message"

        var id: Int64
        var dialogId: Int64
        var date: Date
        var text: String
        var senderId: Int64
        var receiverId: Int64
        var type: Int
        var isIncoming: Bool
        var isRead: Bool

        enum Columns {
            static let id = Column(CodingKeys.id)
            static let dialogId = Column(CodingKeys.dialogId)
            static let date = Column(CodingKeys.date)
            static let isRead = Column(CodingKeys.isRead)
        }
    }

    /// A dialog with its messages, as fetched through the association.
    struct DialogInfo: Decodable, FetchableRecord {
        var dialog: DialogRow
        var messages: [MessageRow]
    }

    private let queue: DatabaseQueue

    /// The settings read back from SQLite through GRDB.
    public let settingsDescription: String

    /// Opens `store.sqlite` in `directory` and migrates it to the schema.
    /// - Throws: GRDB's `DatabaseError` when SQLite fails.
    public init(directory: URL, durability: Durability) throws {
        var configuration = Configuration()
        configuration.journalMode = .wal
        let queue = try DatabaseQueue(
            path: directory.appendingPathComponent("store.sqlite").path, configuration: configuration)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: durability == .full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = OFF")
        }
        var migrator = DatabaseMigrator()
        migrator.registerMigration("dialogs and messages") { db in
            try db.create(table: "dialog") { t in
                t.primaryKey("id", .integer)
                t.column("isPinned", .boolean).notNull()
            }
            try db.create(table: "message") { t in
                t.primaryKey("id", .integer)
                // The index below starts with dialogId: it serves the foreign key too.
                t.belongsTo("dialog", onDelete: .cascade, indexed: false).notNull()
                t.column("date", .datetime).notNull()
                t.column("text", .text).notNull()
                t.column("senderId", .integer).notNull()
                t.column("receiverId", .integer).notNull()
                t.column("type", .integer).notNull()
                t.column("isIncoming", .boolean).notNull()
                t.column("isRead", .boolean).notNull()
            }
            try db.create(index: "message_on_dialogId_date", on: "message", columns: ["dialogId", "date"])
        }
        try migrator.migrate(queue)
        self.queue = queue
        settingsDescription = try queue.read { db in
            let synchronous = ["0": "OFF", "1": "NORMAL", "2": "FULL", "3": "EXTRA"]
            let level = try String.fetchOne(db, sql: "PRAGMA synchronous") ?? "?"
            let journalMode = try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "?"
            let foreignKeys = try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") == true ? "ON" : "OFF"
            let version = try String.fetchOne(db, sql: "SELECT sqlite_version()") ?? "?"
            return "journal_mode=\(journalMode) synchronous=\(synchronous[level] ?? level) foreign_keys=\(foreignKeys) "
                + "sqlite=\(version) grdb=7.10.0"
        }
    }

    // MARK: The workload

    public func persist(_ dialogs: [Dialog]) throws {
        try queue.write { db in
            for dialog in dialogs {
                try DialogRow(dialog).insert(db)
                for message in dialog.messages { try MessageRow(message).insert(db) }
            }
        }
    }

    public func update(_ dialogs: [Dialog]) throws {
        try queue.write { db in
            for dialog in dialogs {
                try DialogRow(dialog).upsert(db)
                for message in dialog.messages { try MessageRow(message).upsert(db) }
            }
        }
    }

    public func persistSingle(_ dialog: Dialog) throws {
        try persist([dialog])
    }

    public func readAll() throws -> [Dialog] {
        try queue.read { db in
            try DialogRow
                .including(all: DialogRow.messages.order(MessageRow.Columns.id))
                .order(DialogRow.Columns.id)
                .asRequest(of: DialogInfo.self)
                .fetchAll(db)
                .map(Dialog.init)
        }
    }

    public func read(dialogId id: Int64) throws -> Dialog? {
        try queue.read { db in try Self.dialog(id, db) }
    }

    public func unreadMessages(dialogId id: Int64) throws -> [Message] {
        try queue.read { db in
            try MessageRow
                .filter(MessageRow.Columns.dialogId == id && MessageRow.Columns.isRead == false)
                .order(MessageRow.Columns.date.desc)
                .fetchAll(db)
                .map(Message.init)
        }
    }

    public func erase(dialogIds ids: [Int64]) throws -> Int {
        try queue.write { db in try DialogRow.deleteAll(db, keys: ids) }
    }

    public func eraseAll() throws -> Int {
        try queue.write { db in try DialogRow.deleteAll(db) }
    }

    // MARK: The checks

    public func read(dialogIds ids: [Int64]) throws -> [Dialog] {
        try queue.read { db in try ids.compactMap { try Self.dialog($0, db) } }
    }

    public func dialogCount() throws -> Int { try queue.read { db in try DialogRow.fetchCount(db) } }

    public func messageCount() throws -> Int { try queue.read { db in try MessageRow.fetchCount(db) } }

    public func unreadMessageCount() throws -> Int {
        try queue.read { db in try MessageRow.filter(MessageRow.Columns.isRead == false).fetchCount(db) }
    }

    private static func dialog(_ id: Int64, _ db: Database) throws -> Dialog? {
        try DialogRow
            .filter(key: id)
            .including(all: DialogRow.messages.order(MessageRow.Columns.id))
            .asRequest(of: DialogInfo.self)
            .fetchOne(db)
            .map(Dialog.init)
    }
}

extension GRDBSubject.DialogRow {
    init(_ dialog: Dialog) {
        self.init(id: dialog.uniqueId, isPinned: dialog.isPinned)
    }
}

extension GRDBSubject.MessageRow {
    init(_ message: Message) {
        self.init(
            id: message.uniqueId, dialogId: message.dialogId, date: message.date, text: message.text,
            senderId: message.senderId, receiverId: message.receiverId, type: message.type,
            isIncoming: message.isIncoming, isRead: message.isRead)
    }
}

extension Message {
    init(_ row: GRDBSubject.MessageRow) {
        self.init(
            uniqueId: row.id, dialogId: row.dialogId, date: row.date, text: row.text, senderId: row.senderId,
            receiverId: row.receiverId, type: row.type, isIncoming: row.isIncoming, isRead: row.isRead)
    }
}

extension Dialog {
    init(_ info: GRDBSubject.DialogInfo) {
        self.init(uniqueId: info.dialog.id, isPinned: info.dialog.isPinned, messages: info.messages.map(Message.init))
    }
}
