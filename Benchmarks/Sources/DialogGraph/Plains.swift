import DAOCore
import Foundation

/// A conversation: the plain object an app holds, with its messages.
public struct Dialog: Plain, Hashable {
    /// The dialog's id.
    public let uniqueId: Int64
    /// Whether the dialog is pinned to the top of the list.
    public let isPinned: Bool
    /// The dialog's messages. A dialog read from a store holds them in
    /// `uniqueId` order (every backend returns children in primary-key order),
    /// so give them in that order for a round trip to return an equal dialog.
    public let messages: [Message]

    /// Creates a dialog.
    public init(uniqueId: Int64, isPinned: Bool, messages: [Message]) {
        self.uniqueId = uniqueId
        self.isPinned = isPinned
        self.messages = messages
    }
}

/// One message of a dialog.
public struct Message: Plain, Hashable {
    /// The message's id.
    public let uniqueId: Int64
    /// The id of the dialog the message belongs to.
    public let dialogId: Int64
    /// When the message was sent.
    public let date: Date
    /// The message text.
    public let text: String
    /// Who sent it.
    public let senderId: Int64
    /// Who it was sent to.
    public let receiverId: Int64
    /// The kind of message (0…4 in the workload).
    public let type: Int
    /// Whether the message was received rather than sent.
    public let isIncoming: Bool
    /// Whether the message has been read.
    public let isRead: Bool

    /// Creates a message.
    public init(
        uniqueId: Int64, dialogId: Int64, date: Date, text: String, senderId: Int64,
        receiverId: Int64, type: Int, isIncoming: Bool, isRead: Bool
    ) {
        self.uniqueId = uniqueId
        self.dialogId = dialogId
        self.date = date
        self.text = text
        self.senderId = senderId
        self.receiverId = receiverId
        self.type = type
        self.isIncoming = isIncoming
        self.isRead = isRead
    }

    /// The same message with `isRead` replaced.
    public func with(isRead: Bool) -> Message {
        Message(
            uniqueId: uniqueId, dialogId: dialogId, date: date, text: text, senderId: senderId,
            receiverId: receiverId, type: type, isIncoming: isIncoming, isRead: isRead)
    }
}

/// A person's gender, as a user chooses to state it.
public enum Gender: String, Codable, Sendable, Hashable, CaseIterable, FieldValue {
    case female, male, nonBinary, other
}

/// A user of the app: the entity with optional fields and a string key.
public struct User: Plain, Hashable {
    /// The user's handle, unique among users.
    public let uniqueId: String
    /// The display name.
    public let name: String
    /// A short text about the user, if they wrote one.
    public let bio: String?
    /// The user's e-mail address, if known.
    public let email: String?
    /// The user's birth date, if known.
    public let birthDate: Date?
    /// The user's gender, if stated.
    public let gender: Gender?

    /// Creates a user.
    public init(
        uniqueId: String, name: String, bio: String? = nil, email: String? = nil,
        birthDate: Date? = nil, gender: Gender? = nil
    ) {
        self.uniqueId = uniqueId
        self.name = name
        self.bio = bio
        self.email = email
        self.birthDate = birthDate
        self.gender = gender
    }
}
