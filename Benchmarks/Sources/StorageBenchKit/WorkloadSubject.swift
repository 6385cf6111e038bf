import DAOCore
import DialogGraph
import Foundation
import LMDBStorage

/// What runs the workload: the operations of WORKLOAD.md on plain objects
/// (``Dialog``, ``Message``), and the reads the correctness checks need.
///
/// ``WorkloadRunner`` keeps the timing, the checks and the measurements and
/// calls a subject for the work, so that every subject is timed over the same
/// regions and checked by the same code. ``DAOSubject`` runs the operations
/// through the public ``DAO`` on any ``Store``; reference implementations (an
/// engine's C API used directly, another library) conform the same way.
///
/// Each call is one transaction of the engine, as a DAO call is.
public protocol WorkloadSubject {
    /// The settings in force, read back from the engine (e.g. `journal_mode=wal
    /// synchronous=FULL`), as one line, or empty.
    var settingsDescription: String { get }

    /// `persist`: writes `dialogs` with their messages into the empty store, in one transaction.
    /// - Throws: when the engine fails.
    func persist(_ dialogs: [Dialog]) throws

    /// `update`: writes `dialogs` with their messages again, replacing what is
    /// stored under their ids (an upsert), in one transaction.
    /// - Throws: when the engine fails.
    func update(_ dialogs: [Dialog]) throws

    /// `persist-single`: writes one new dialog with its messages, in a transaction of its own.
    /// - Throws: when the engine fails.
    func persistSingle(_ dialog: Dialog) throws

    /// `read-all`: every dialog with all its messages, ordered by dialog id.
    /// - Throws: when the engine fails.
    func readAll() throws -> [Dialog]

    /// `read-by-id`: the dialog with `id` and its messages, or `nil`.
    /// - Throws: when the engine fails.
    func read(dialogId id: Int64) throws -> Dialog?

    /// `query`: the unread messages of dialog `id`, newest first.
    /// - Throws: when the engine fails.
    func unreadMessages(dialogId id: Int64) throws -> [Message]

    /// Prepares what the borrowing reads need, before the first of them
    /// and outside its timed region, so that a run without them prepares
    /// nothing more. The default does nothing.
    /// - Throws: when the engine fails.
    func prepareBorrowingReads() throws

    /// `read-all-borrowing`: lends every dialog with all its messages to
    /// `body`, ordered by dialog id, without returning them. The default
    /// reads ``readAll()`` and lends its dialogs: the reference a subject
    /// without a borrowing read is measured by.
    /// - Throws: when the engine fails, or what `body` throws.
    func forEachDialog(_ body: (borrowing Dialog) throws -> Void) throws

    /// `read-by-id-borrowing`: lends the dialog with `id` and its messages
    /// to `body`, if there is one; returns whether there was. The default
    /// reads ``read(dialogId:)``.
    /// - Throws: when the engine fails, or what `body` throws.
    func withDialog(id: Int64, _ body: (borrowing Dialog) throws -> Void) throws -> Bool

    /// `query-borrowing`: lends the unread messages of dialog `id` to
    /// `body`, newest first. The default reads ``unreadMessages(dialogId:)``.
    /// - Throws: when the engine fails, or what `body` throws.
    func forEachUnreadMessage(dialogId id: Int64, _ body: (borrowing Message) throws -> Void) throws

    /// `read-all-view`: every dialog's fields and its messages' folded into
    /// `digest`, ordered by dialog id, as ``ReadDigest/add(_:)-(Dialog)``
    /// folds them. The default folds what ``forEachDialog(_:)`` lends: the
    /// reference a subject without views is measured by.
    /// - Throws: when the engine fails.
    func viewAll(into digest: inout ReadDigest) throws

    /// `read-by-id-view`: dialog `id` and its messages folded into
    /// `digest`, if there is one; returns whether there was. The default
    /// folds what ``withDialog(id:_:)`` lends.
    /// - Throws: when the engine fails.
    func viewDialog(id: Int64, into digest: inout ReadDigest) throws -> Bool

    /// `query-view`: the unread messages of dialog `id` folded into
    /// `digest`, newest first. The default folds what
    /// ``forEachUnreadMessage(dialogId:_:)`` lends.
    /// - Throws: when the engine fails.
    func viewUnreadMessages(dialogId id: Int64, into digest: inout ReadDigest) throws

    /// `erase-by-id`: erases the dialogs with `ids` and their messages, in one
    /// transaction; returns how many dialogs were erased.
    /// - Throws: when the engine fails.
    func erase(dialogIds ids: [Int64]) throws -> Int

    /// `erase-all`: erases every dialog and message, in one transaction;
    /// returns how many dialogs were erased.
    /// - Throws: when the engine fails.
    func eraseAll() throws -> Int

    /// The dialogs with `ids` that exist, in the order of `ids` (for the checks).
    /// - Throws: when the engine fails.
    func read(dialogIds ids: [Int64]) throws -> [Dialog]

    /// The number of dialogs stored (for the checks).
    /// - Throws: when the engine fails.
    func dialogCount() throws -> Int

    /// The number of messages stored (for the checks).
    /// - Throws: when the engine fails.
    func messageCount() throws -> Int

    /// The number of messages stored with `isRead == false` (for the checks).
    /// - Throws: when the engine fails.
    func unreadMessageCount() throws -> Int

    /// The bytes the store holds outside its directory (a server's tables and
    /// indexes), reported as `bytes_on_disk` instead of the directory's size;
    /// `nil` (the default) for a store that lives in its directory.
    /// - Throws: when the engine fails.
    func bytesStoredElsewhere() throws -> Int64?
}

extension WorkloadSubject {
    public func bytesStoredElsewhere() throws -> Int64? { nil }

    public func prepareBorrowingReads() throws {}

    /// Reads ``readAll()`` and lends its dialogs, in order.
    public func forEachDialog(_ body: (borrowing Dialog) throws -> Void) throws {
        let all = try readAll()
        for index in all.indices { try body(all[index]) }
    }

    /// Reads ``read(dialogId:)`` and lends the dialog, if there is one.
    public func withDialog(id: Int64, _ body: (borrowing Dialog) throws -> Void) throws -> Bool {
        guard let dialog = try read(dialogId: id) else { return false }
        try body(dialog)
        return true
    }

    /// Reads ``unreadMessages(dialogId:)`` and lends its messages, in order.
    public func forEachUnreadMessage(dialogId id: Int64, _ body: (borrowing Message) throws -> Void) throws {
        let unread = try unreadMessages(dialogId: id)
        for index in unread.indices { try body(unread[index]) }
    }

    /// Folds what ``forEachDialog(_:)`` lends.
    public func viewAll(into digest: inout ReadDigest) throws {
        try forEachDialog { dialog in digest.add(dialog) }
    }

    /// Folds what ``withDialog(id:_:)`` lends.
    public func viewDialog(id: Int64, into digest: inout ReadDigest) throws -> Bool {
        try withDialog(id: id) { dialog in digest.add(dialog) }
    }

    /// Folds what ``forEachUnreadMessage(dialogId:_:)`` lends.
    public func viewUnreadMessages(dialogId id: Int64, into digest: inout ReadDigest) throws {
        try forEachUnreadMessage(dialogId: id) { message in digest.add(message) }
    }
}

/// A ``Store`` whose data lives outside the run's directory (a server's
/// tables and indexes) and that can say how many bytes it takes there:
/// ``DAOSubject`` reports them through ``WorkloadSubject/bytesStoredElsewhere()``.
public protocol StoreSizedElsewhere: Store {
    /// The bytes the store holds outside its directory.
    /// - Throws: when the engine fails.
    func bytesStoredElsewhere() throws -> Int64
}

/// Runs the workload through the public ``DAO`` on any ``Store``: plain objects
/// in and out, translated to ``DialogRecord`` and ``MessageRecord`` by the
/// DialogGraph translators.
public struct DAOSubject: WorkloadSubject {
    /// The store the DAOs read and write.
    public let store: any Store
    /// The DAO of dialogs (with their messages).
    public let dialogs: DAO<AnyStorage<DialogRecord>, DialogTranslator>
    /// The DAO of messages, for the query and the counts.
    public let messages: DAO<AnyStorage<MessageRecord>, MessageTranslator>

    /// The `query` operation, prepared once with the dialog's id as its
    /// parameter (README, "Prepared queries"): each call binds the id.
    private let unread: PreparedObjectQuery<AnyStorage<MessageRecord>, MessageTranslator, Int64>
    /// A dialog's messages, by its id (the view reads' second half).
    private let dialogMessages: PreparedQuery<MessageRecord, Int64>
    /// Where the view reads find each field.
    private let fields: MessageViewFields
    /// The order `read-all-view` reads messages in (``viewAll(into:)``),
    /// decided here: a cast of the store in the timed region cost a
    /// conformance scan of the whole program the first time it ran.
    private let viewAllOrder: [SortDescriptor<MessageRecord>]

    /// A subject over `store`.
    /// - Throws: when the store cannot hand out a storage for dialogs or messages.
    public init(store: any Store) throws {
        self.store = store
        dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self), translator: DialogTranslator())
        messages = DAO(storage: try store.anyStorage(for: MessageRecord.self), translator: MessageTranslator())
        unread = try messages.prepare(
            where: #Predicate<MessageRecord, Int64> { message, dialog in message.dialogId == dialog && !message.isRead },
            sortedBy: [SortDescriptor(\MessageRecord.date, order: .reverse)])
        dialogMessages = try PreparedQuery(
            where: #Predicate<MessageRecord, Int64> { message, dialog in message.dialogId == dialog })
        fields = try MessageViewFields()
        viewAllOrder = store is LMDBEnvironment ? [SortDescriptor(\.dialogId)] : []
    }

    public var settingsDescription: String { store.settingsDescription }

    /// The store's ``StoreSizedElsewhere/bytesStoredElsewhere()`` when it is a
    /// ``StoreSizedElsewhere``; `nil` for a store that lives in its directory.
    public func bytesStoredElsewhere() throws -> Int64? {
        guard let sized = store as? any StoreSizedElsewhere else { return nil }
        return try sized.bytesStoredElsewhere()
    }

    public func persist(_ dialogs: [Dialog]) throws { try self.dialogs.persist(dialogs) }

    public func update(_ dialogs: [Dialog]) throws { try self.dialogs.persist(dialogs) }

    public func persistSingle(_ dialog: Dialog) throws { try dialogs.persist(dialog) }

    public func readAll() throws -> [Dialog] { try dialogs.read() }

    public func read(dialogId id: Int64) throws -> Dialog? { try dialogs.read(byPrimaryKey: id) }

    public func unreadMessages(dialogId id: Int64) throws -> [Message] {
        try unread.read(id)
    }

    public func forEachDialog(_ body: (borrowing Dialog) throws -> Void) throws {
        try dialogs.forEach(body)
    }

    /// The borrowing lookup by key (`DAO.forEach(byPrimaryKey:_:)`), as
    /// `read-by-id` reads by key.
    public func withDialog(id: Int64, _ body: (borrowing Dialog) throws -> Void) throws -> Bool {
        try dialogs.forEach(byPrimaryKey: id, body)
    }

    public func forEachUnreadMessage(dialogId id: Int64, _ body: (borrowing Message) throws -> Void) throws {
        try unread.forEach(id, body)
    }

    /// The dialogs' views, then every message's, folded in the order of a
    /// dialog with its messages: each dialog's fields are kept (id and pin)
    /// until its messages come. The messages are read in the order the
    /// engine keeps them in: on LMDB sorted by dialog (the order of its
    /// keys), elsewhere in primary-key order (a table scan), which the
    /// generated ids group by dialog; a message whose dialog comes before
    /// the last one's fails the read.
    public func viewAll(into digest: inout ReadDigest) throws {
        let fields = fields
        var heads: [(id: Int64, isPinned: Bool)] = []
        try dialogs.forEachView { dialog in heads.append((try dialog.integer(0), try dialog.bool(fields.isPinned))) }
        var next = 0
        var last = Int64.min
        try messages.forEachView(sortedBy: viewAllOrder) { message in
            let dialogId = try message.integer(fields.dialogId)
            guard dialogId >= last else {
                throw WorkloadRunner.CheckFailure(description: "read-all-view: the messages' ids are not grouped by dialog")
            }
            last = dialogId
            while next < heads.count, heads[next].id <= dialogId {
                digest.addDialog(uniqueId: heads[next].id, isPinned: heads[next].isPinned)
                next += 1
            }
            try fields.fold(message, dialogId: dialogId, into: &digest)
        }
        while next < heads.count {
            digest.addDialog(uniqueId: heads[next].id, isPinned: heads[next].isPinned)
            next += 1
        }
    }

    /// The dialog's view by key, then its messages' (in key order).
    public func viewDialog(id: Int64, into digest: inout ReadDigest) throws -> Bool {
        let fields = fields
        let found = try dialogs.forEachView(byPrimaryKey: id) { dialog in
            digest.addDialog(uniqueId: try dialog.integer(0), isPinned: try dialog.bool(fields.isPinned))
        }
        guard found else { return false }
        try messages.storage.forEachView(dialogMessages, values: id) { message in
            try fields.fold(message, dialogId: id, into: &digest)
        }
        return true
    }

    /// The prepared `query`'s views.
    public func viewUnreadMessages(dialogId id: Int64, into digest: inout ReadDigest) throws {
        let fields = fields
        try messages.storage.forEachView(unread.prepared, values: id) { message in
            try fields.fold(message, dialogId: id, into: &digest)
        }
    }

    public func erase(dialogIds ids: [Int64]) throws -> Int { try dialogs.erase(byPrimaryKeys: ids) }

    public func eraseAll() throws -> Int { try dialogs.erase() }

    public func read(dialogIds ids: [Int64]) throws -> [Dialog] { try dialogs.read(byPrimaryKeys: ids) }

    public func dialogCount() throws -> Int { try dialogs.count() }

    public func messageCount() throws -> Int { try messages.count() }

    public func unreadMessageCount() throws -> Int {
        try messages.count(where: #Predicate<MessageRecord> { !$0.isRead })
    }
}

/// The positions of a message's fields in its views, found once.
struct MessageViewFields: Sendable {
    let id: Int
    let dialogId: Int
    let date: Int
    let text: Int
    let senderId: Int
    let receiverId: Int
    let type: Int
    let isIncoming: Int
    let isRead: Int
    /// A dialog's `isPinned` (its key is at 0).
    let isPinned: Int

    init() throws {
        let entity = MessageRecord.entity
        id = try entity.position(of: \.id)
        dialogId = try entity.position(of: \.dialogId)
        date = try entity.position(of: \.date)
        text = try entity.position(of: \.text)
        senderId = try entity.position(of: \.senderId)
        receiverId = try entity.position(of: \.receiverId)
        type = try entity.position(of: \.type)
        isIncoming = try entity.position(of: \.isIncoming)
        isRead = try entity.position(of: \.isRead)
        isPinned = try DialogRecord.entity.position(of: \.isPinned)
    }

    /// Folds the message `view` lends, whose dialog is `dialogId`.
    func fold(_ view: borrowing RecordView<MessageRecord>, dialogId: Int64, into digest: inout ReadDigest) throws {
        digest.addMessage(
            uniqueId: try view.integer(id), dialogId: dialogId, date: try view.date(date), text: try view.text(text),
            senderId: try view.integer(senderId), receiverId: try view.integer(receiverId),
            type: try view.integer(type), isIncoming: try view.bool(isIncoming), isRead: try view.bool(isRead))
    }
}
