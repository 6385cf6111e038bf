import DAOCore
import Foundation

/// The stored shape of a ``Message``: a row of `messages`, keyed by `id`, with
/// the `dialogId` of the dialog that owns it.
public struct MessageRecord: Record, Hashable {
    public typealias PrimaryKey = Int64

    public var id: Int64
    public var dialogId: Int64
    public var date: Date
    public var text: String
    public var senderId: Int64
    public var receiverId: Int64
    public var type: Int64
    public var isIncoming: Bool
    public var isRead: Bool

    /// Creates a record.
    public init(
        id: Int64, dialogId: Int64, date: Date, text: String, senderId: Int64,
        receiverId: Int64, type: Int64, isIncoming: Bool, isRead: Bool
    ) {
        self.id = id
        self.dialogId = dialogId
        self.date = date
        self.text = text
        self.senderId = senderId
        self.receiverId = receiverId
        self.type = type
        self.isIncoming = isIncoming
        self.isRead = isRead
    }

    /// `messages`, keyed by `id`, indexed by (`dialogId`, `date`) for "a
    /// dialog's unread messages, newest first": the index of the C reference
    /// program and `sqlite-raw` (WORKLOAD.md), so that the engine does the
    /// same work under the DAO as under them.
    public static let entity = Entity<MessageRecord>(
        "messages",
        primaryKey: "id", \.id,
        fields: [
            Field("dialogId", \.dialogId),
            Field("date", \.date),
            Field("text", \.text),
            Field("senderId", \.senderId),
            Field("receiverId", \.receiverId),
            Field("type", \.type),
            Field("isIncoming", \.isIncoming),
            Field("isRead", \.isRead),
        ],
        indexes: [Index("messages_by_dialog_date", on: ["dialogId", "date"])],
        ownedBy: DialogRecord.self
    )
}

/// The stored shape of a ``Dialog``: a row of `dialogs` that owns its messages
/// through the `messages` relation.
public struct DialogRecord: Record, Hashable {
    public typealias PrimaryKey = Int64

    public var id: Int64
    public var isPinned: Bool
    public var messages: [MessageRecord]

    /// Creates a record.
    public init(id: Int64, isPinned: Bool, messages: [MessageRecord]) {
        self.id = id
        self.isPinned = isPinned
        self.messages = messages
    }

    /// `dialogs`, keyed by `id`, owning `messages` through their `dialogId`.
    public static let entity = Entity<DialogRecord>(
        "dialogs",
        primaryKey: "id", \.id,
        fields: [Field("isPinned", \.isPinned)],
        relations: [Relation("messages", \.messages, foreignKey: "dialogId", \MessageRecord.dialogId)]
    )
}

/// The stored shape of a ``User``: a row of `users` keyed by the user's handle,
/// with optional fields stored as nulls.
public struct UserRecord: Record, Hashable {
    public typealias PrimaryKey = String

    public var id: String
    public var name: String
    public var bio: String?
    public var email: String?
    public var birthDate: Date?
    public var gender: Gender?

    /// Creates a record.
    public init(id: String, name: String, bio: String?, email: String?, birthDate: Date?, gender: Gender?) {
        self.id = id
        self.name = name
        self.bio = bio
        self.email = email
        self.birthDate = birthDate
        self.gender = gender
    }

    /// `users`, keyed by handle, indexed by e-mail.
    public static let entity = Entity<UserRecord>(
        "users",
        primaryKey: "id", \.id,
        fields: [
            Field("name", \.name),
            Field("bio", \.bio),
            Field("email", \.email),
            Field("birthDate", \.birthDate),
            Field("gender", \.gender),
        ],
        indexes: [Index("users_by_email", on: ["email"])]
    )
}

// MARK: - Reading fields by position

// `UserRecord` stays on `Decodable`, so that every adapter's conformance run
// exercises both ways of reading a record.

extension MessageRecord: FieldwiseRecord {
    /// Reads the fields in the order of ``entity``.
    public init(fields: inout some FieldReader) throws {
        self.init(
            id: try fields.decode(), dialogId: try fields.decode(), date: try fields.decode(),
            text: try fields.decode(), senderId: try fields.decode(), receiverId: try fields.decode(),
            type: try fields.decode(), isIncoming: try fields.decode(), isRead: try fields.decode())
    }

    /// Writes the fields in the order of ``entity``.
    public func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encode(dialogId)
        try fields.encode(date)
        try fields.encode(text)
        try fields.encode(senderId)
        try fields.encode(receiverId)
        try fields.encode(type)
        try fields.encode(isIncoming)
        try fields.encode(isRead)
    }
}

extension DialogRecord: FieldwiseRecord {
    /// Reads the fields in the order of ``entity``; the messages are attached by the storage.
    public init(fields: inout some FieldReader) throws {
        self.init(id: try fields.decode(), isPinned: try fields.decode(), messages: [])
    }

    /// Writes the fields in the order of ``entity``; the storage writes the messages.
    public func write(fields: inout some FieldWriter) throws {
        try fields.encode(id)
        try fields.encode(isPinned)
    }
}
