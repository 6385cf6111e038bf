import DAOCore
import Foundation

/// The second version of ``MessageRecord``: the same fields, then
/// `reactionCount`, which the first version did not store. A store written
/// with the first version reaches this one through ``DialogGraphMigrations``.
public struct MessageRecordV2: Record, Hashable {
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
    /// How many reactions the message has; 0 for every message stored by the first version.
    public var reactionCount: Int64

    /// The first version's record, with `reactionCount`.
    public init(_ record: MessageRecord, reactionCount: Int64) {
        self.id = record.id
        self.dialogId = record.dialogId
        self.date = record.date
        self.text = record.text
        self.senderId = record.senderId
        self.receiverId = record.receiverId
        self.type = record.type
        self.isIncoming = record.isIncoming
        self.isRead = record.isRead
        self.reactionCount = reactionCount
    }

    /// `messages` as ``MessageRecord`` declares it, with `reactionCount` last.
    public static let entity = Entity<MessageRecordV2>(
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
            Field("reactionCount", \.reactionCount),
        ],
        indexes: [Index("messages_by_dialog_date", on: ["dialogId", "date"])],
        ownedBy: DialogRecordV2.self
    )
}

/// ``DialogRecord`` owning ``MessageRecordV2``s: the same stored `dialogs`.
public struct DialogRecordV2: Record, Hashable {
    public typealias PrimaryKey = Int64

    public var id: Int64
    public var isPinned: Bool
    public var messages: [MessageRecordV2]

    /// Creates a record.
    public init(id: Int64, isPinned: Bool, messages: [MessageRecordV2]) {
        self.id = id
        self.isPinned = isPinned
        self.messages = messages
    }

    /// `dialogs`, as ``DialogRecord`` declares it.
    public static let entity = Entity<DialogRecordV2>(
        "dialogs",
        primaryKey: "id", \.id,
        fields: [Field("isPinned", \.isPinned)],
        relations: [Relation("messages", \.messages, foreignKey: "dialogId", \MessageRecordV2.dialogId)]
    )
}

/// The example domain's migrations, in order.
public enum DialogGraphMigrations {
    /// The name of the migration from ``MessageRecord`` to ``MessageRecordV2``.
    public static let reactionCount = "v2: messages have a reaction count"

    /// Every migration of the example domain: today one, which adds
    /// `reactionCount` (0) to every stored message.
    public static var migrator: Migrator {
        var migrator = Migrator()
        migrator.register(
            reactionCount,
            [.addField("reactionCount", to: "messages", type: .integer, optional: false, default: .integer(0))])
        return migrator
    }
}
