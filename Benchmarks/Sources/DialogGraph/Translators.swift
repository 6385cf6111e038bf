import DAOCore

/// Translates ``Message`` to ``MessageRecord`` and back.
public struct MessageTranslator: Translator {
    /// Creates the translator.
    public init() {}

    public func record(from plain: Message) throws -> MessageRecord {
        MessageRecord(
            id: plain.uniqueId, dialogId: plain.dialogId, date: plain.date, text: plain.text,
            senderId: plain.senderId, receiverId: plain.receiverId, type: Int64(plain.type),
            isIncoming: plain.isIncoming, isRead: plain.isRead)
    }

    /// - Throws: ``TranslationError/outOfRange(field:value:)`` when the stored
    ///   `type` does not fit an `Int`.
    public func plain(from record: MessageRecord) throws -> Message {
        guard let type = Int(exactly: record.type) else {
            throw TranslationError.outOfRange(field: "type", value: String(record.type))
        }
        return Message(
            uniqueId: record.id, dialogId: record.dialogId, date: record.date, text: record.text,
            senderId: record.senderId, receiverId: record.receiverId, type: type,
            isIncoming: record.isIncoming, isRead: record.isRead)
    }
}

/// Translates ``Dialog`` to ``DialogRecord`` and back, its messages through a
/// ``MessageTranslator``.
public struct DialogTranslator: Translator {
    /// The translator of the dialog's messages.
    public let messages: MessageTranslator

    /// Creates the translator.
    public init(messages: MessageTranslator = MessageTranslator()) {
        self.messages = messages
    }

    /// - Throws: ``TranslationError/foreignMessage(dialog:message:owner:)`` when a
    ///   message names another dialog.
    public func record(from plain: Dialog) throws -> DialogRecord {
        var records: [MessageRecord] = []
        records.reserveCapacity(plain.messages.count)
        for message in plain.messages {
            guard message.dialogId == plain.uniqueId else {
                throw TranslationError.foreignMessage(
                    dialog: plain.uniqueId, message: message.uniqueId, owner: message.dialogId)
            }
            records.append(try messages.record(from: message))
        }
        return DialogRecord(id: plain.uniqueId, isPinned: plain.isPinned, messages: records)
    }

    public func plain(from record: DialogRecord) throws -> Dialog {
        var plains: [Message] = []
        plains.reserveCapacity(record.messages.count)
        for message in record.messages {
            plains.append(try messages.plain(from: message))
        }
        return Dialog(uniqueId: record.id, isPinned: record.isPinned, messages: plains)
    }
}

/// Translates ``User`` to ``UserRecord`` and back.
public struct UserTranslator: Translator {
    /// Creates the translator.
    public init() {}

    public func record(from plain: User) throws -> UserRecord {
        UserRecord(
            id: plain.uniqueId, name: plain.name, bio: plain.bio, email: plain.email,
            birthDate: plain.birthDate, gender: plain.gender)
    }

    public func plain(from record: UserRecord) throws -> User {
        User(
            uniqueId: record.id, name: record.name, bio: record.bio, email: record.email,
            birthDate: record.birthDate, gender: record.gender)
    }
}

/// Why a translator refused a value.
public enum TranslationError: Error, Equatable, CustomStringConvertible {
    /// A stored number does not fit the plain object's type.
    case outOfRange(field: String, value: String)
    /// A dialog holds a message whose `dialogId` names another dialog.
    case foreignMessage(dialog: Int64, message: Int64, owner: Int64)

    public var description: String {
        switch self {
        case let .outOfRange(field, value): "\(field) = \(value) is out of range"
        case let .foreignMessage(dialog, message, owner):
            "dialog \(dialog) holds message \(message), which belongs to dialog \(owner)"
        }
    }
}
