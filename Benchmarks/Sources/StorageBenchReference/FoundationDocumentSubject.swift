import DAOCore
import DialogGraph
import Foundation
import StorageBenchKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `json-raw` and `plist-raw`: the workload kept in memory and written with
/// Foundation's `JSONEncoder` or `PropertyListEncoder` directly, the plainest
/// fast way and with no DAO: the limit the whole-file stores can reach with
/// Foundation's coders.
///
/// Two documents, shaped as the file store's: `dialogs.<ext>` and
/// `messages.<ext>`, each `{"entity": …, "records": […], "version": 1}` with
/// concrete ``DialogRecord`` and ``MessageRecord`` values (dialogs with their
/// messages emptied; records in primary-key order), encoded with the same
/// settings as the store (JSON: sorted keys, no escaped slashes; property
/// lists: binary). Every write call re-encodes both documents in one
/// `encode` call each and replaces them with the store's durability: a
/// temporary file, `fsync` (``Durability/full`` only), `rename`, then one
/// directory `fsync` (``Durability/full`` only). Reads are answered from the
/// in-memory dictionaries.
public final class FoundationDocumentSubject: WorkloadSubject {
    /// The document format.
    public enum Format: Sendable {
        /// `JSONEncoder`, `.json` files.
        case json
        /// `PropertyListEncoder`, binary, `.plist` files.
        case propertyList
    }

    /// One document: the store's shape with a concrete record type.
    private struct Document<Element: Codable>: Codable {
        var version: Int
        var entity: String
        var records: [Element]
    }

    private let directory: URL
    private let format: Format
    private let durability: Durability
    private let jsonEncoder: JSONEncoder
    private let plistEncoder: PropertyListEncoder
    /// Dialogs by id, messages emptied.
    private var dialogs: [Int64: DialogRecord] = [:]
    /// Messages by id.
    private var messages: [Int64: MessageRecord] = [:]
    /// The ids of each dialog's messages.
    private var messagesOfDialog: [Int64: [Int64]] = [:]

    /// The format and how writes reach the disk.
    public var settingsDescription: String {
        let sync = durability == .full ? "fsync+rename+dirsync" : "none (rename only)"
        return "format=\(format == .json ? "json" : "plist") encoder=Foundation sync=\(sync)"
    }

    /// A subject writing its documents in `directory`.
    public init(directory: URL, format: Format, durability: Durability) {
        self.directory = directory
        self.format = format
        self.durability = durability
        jsonEncoder = JSONEncoder()
        jsonEncoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        plistEncoder = PropertyListEncoder()
        plistEncoder.outputFormat = .binary
    }

    public func persist(_ dialogs: [Dialog]) throws { try store(dialogs) }

    public func update(_ dialogs: [Dialog]) throws { try store(dialogs) }

    public func persistSingle(_ dialog: Dialog) throws { try store([dialog]) }

    public func readAll() throws -> [Dialog] {
        try dialogs.keys.sorted().compactMap(dialog)
    }

    public func read(dialogId id: Int64) throws -> Dialog? { try dialog(id) }

    public func unreadMessages(dialogId id: Int64) throws -> [Message] {
        var result: [Message] = []
        for messageId in messagesOfDialog[id] ?? [] {
            if let record = messages[messageId], !record.isRead { result.append(try Self.plain(record)) }
        }
        result.sort { $0.date != $1.date ? $0.date > $1.date : $0.uniqueId < $1.uniqueId }
        return result
    }

    public func erase(dialogIds ids: [Int64]) throws -> Int {
        var erased = 0
        for id in ids where dialogs.removeValue(forKey: id) != nil {
            erased += 1
            for messageId in messagesOfDialog.removeValue(forKey: id) ?? [] { messages[messageId] = nil }
        }
        try save()
        return erased
    }

    public func eraseAll() throws -> Int {
        let erased = dialogs.count
        dialogs = [:]
        messages = [:]
        messagesOfDialog = [:]
        try save()
        return erased
    }

    public func read(dialogIds ids: [Int64]) throws -> [Dialog] { try ids.compactMap(dialog) }

    public func dialogCount() throws -> Int { dialogs.count }

    public func messageCount() throws -> Int { messages.count }

    public func unreadMessageCount() throws -> Int { messages.values.reduce(0) { $0 + ($1.isRead ? 0 : 1) } }

    // MARK: Writing

    /// Upserts `items` with exactly their messages, then saves both documents.
    private func store(_ items: [Dialog]) throws {
        for item in items {
            for messageId in messagesOfDialog[item.uniqueId] ?? [] { messages[messageId] = nil }
            dialogs[item.uniqueId] = DialogRecord(id: item.uniqueId, isPinned: item.isPinned, messages: [])
            var ids: [Int64] = []
            ids.reserveCapacity(item.messages.count)
            for message in item.messages {
                guard message.dialogId == item.uniqueId else {
                    throw ReferenceError(
                        engine: "foundation", operation: "persist message \(message.uniqueId)", code: 0,
                        message: "the message names dialog \(message.dialogId), not \(item.uniqueId)")
                }
                messages[message.uniqueId] = MessageRecord(
                    id: message.uniqueId, dialogId: message.dialogId, date: message.date, text: message.text,
                    senderId: message.senderId, receiverId: message.receiverId, type: Int64(message.type),
                    isIncoming: message.isIncoming, isRead: message.isRead)
                ids.append(message.uniqueId)
            }
            messagesOfDialog[item.uniqueId] = ids.sorted()
        }
        try save()
    }

    /// Encodes both documents and replaces them on disk.
    private func save() throws {
        let dialogRecords = dialogs.keys.sorted().compactMap { dialogs[$0] }
        let messageRecords = messages.keys.sorted().compactMap { messages[$0] }
        let dialogData = try encode(Document(version: 1, entity: "dialogs", records: dialogRecords))
        let messageData = try encode(Document(version: 1, entity: "messages", records: messageRecords))
        let ext = format == .json ? "json" : "plist"
        try replace(directory.appendingPathComponent("dialogs.\(ext)"), with: dialogData)
        try replace(directory.appendingPathComponent("messages.\(ext)"), with: messageData)
        if durability == .full { try syncDirectory() }
    }

    private func encode<T: Encodable>(_ document: T) throws -> Data {
        switch format {
        case .json: try jsonEncoder.encode(document)
        case .propertyList: try plistEncoder.encode(document)
        }
    }

    /// Writes `data` to a temporary file, syncs it (full durability) and renames it over `url`.
    private func replace(_ url: URL, with data: Data) throws {
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).tmp")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Self.posixError("open \(temporary.path)") }
        do {
            try data.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = write(fd, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw Self.posixError("write \(temporary.path)")
                    }
                    offset += written
                }
            }
            if durability == .full, fsync(fd) != 0 { throw Self.posixError("fsync \(temporary.path)") }
        } catch {
            close(fd)
            throw error
        }
        guard close(fd) == 0 else { throw Self.posixError("close \(temporary.path)") }
        guard rename(temporary.path, url.path) == 0 else { throw Self.posixError("rename \(url.path)") }
    }

    private func syncDirectory() throws {
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Self.posixError("open \(directory.path)") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Self.posixError("fsync \(directory.path)") }
    }

    private static func posixError(_ operation: String) -> ReferenceError {
        let code = errno
        return ReferenceError(engine: "posix", operation: operation, code: code, message: String(cString: strerror(code)))
    }

    // MARK: Reading

    private func dialog(_ id: Int64) throws -> Dialog? {
        guard let record = dialogs[id] else { return nil }
        var plains: [Message] = []
        let ids = messagesOfDialog[id] ?? []
        plains.reserveCapacity(ids.count)
        for messageId in ids {
            if let message = messages[messageId] { plains.append(try Self.plain(message)) }
        }
        return Dialog(uniqueId: record.id, isPinned: record.isPinned, messages: plains)
    }

    private static func plain(_ record: MessageRecord) throws -> Message {
        guard let type = Int(exactly: record.type) else {
            throw ReferenceError(
                engine: "foundation", operation: "read message \(record.id)", code: 0,
                message: "type \(record.type) does not fit an Int")
        }
        return Message(
            uniqueId: record.id, dialogId: record.dialogId, date: record.date, text: record.text,
            senderId: record.senderId, receiverId: record.receiverId, type: type,
            isIncoming: record.isIncoming, isRead: record.isRead)
    }
}
