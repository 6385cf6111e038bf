import CReference
import DAOCore
import DialogGraph
import Foundation
import StorageBenchKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `sqlite-c` and `lmdb-c`: the workload in plain C on libsqlite3 and liblmdb
/// (the CReference target), what the DAO's reads are measured against by
/// instructions: the limit a program that reads into its own structs reaches
/// on the engine, with no Swift on its path.
///
/// The C code uses each engine as `sqlite-raw` and `lmdb-raw` do (the same
/// schema, statements, keys and bytes stored, one transaction per call) and
/// materializes every answer into C structs, each text copied into a buffer
/// of its own. As a ``HoldingSubject`` it is timed on its C work alone: the
/// graphs it writes are converted into C structs before the first timed
/// region; a plain read's answer stays in C memory until the harness takes
/// it as plain objects after the region, to check it; a borrowing read folds
/// each record into the ``ReadDigest`` in C (the same fold), then releases it.
public final class CReferenceSubject: HoldingSubject {
    /// The engine under the C code.
    public enum Engine: Sendable {
        case sqlite, lmdb

        var name: String { self == .sqlite ? "sqlite" : "lmdb" }
        var code: cref_engine { self == .sqlite ? CREF_SQLITE : CREF_LMDB }
    }

    private let engine: Engine
    private let store: OpaquePointer
    /// The graphs converted by ``prepareInputs(_:)``.
    private var inputs: [CGraph] = []
    /// Where each dialog converted by ``prepareInputs(_:)`` is: its graph and index.
    private var inputDialogs: [Int64: (graph: CGraph, index: Int)] = [:]
    /// The answers held: read-all's or the lookups' dialogs, the queries' messages.
    private var heldDialogs = cref_dialogs()
    private var heldMessages = cref_message_lists()

    /// The settings read back from the engine.
    public let settingsDescription: String

    /// Creates the store in `directory` with its schema.
    /// - Throws: ``ReferenceError`` when the engine fails.
    public init(engine: Engine, directory: URL, durability: Durability) throws {
        self.engine = engine
        var handle: OpaquePointer?
        var reason = [CChar](repeating: 0, count: 512)
        let code = cref_open(engine.code, directory.path, durability == .full ? 1 : 0, &handle, &reason, reason.count)
        guard code == 0, let handle else {
            throw ReferenceError(
                engine: engine.name, operation: "open", code: code,
                message: String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        store = handle
        settingsDescription = String(cString: cref_settings(handle))
    }

    deinit {
        cref_dialogs_free(&heldDialogs)
        cref_message_lists_free(&heldMessages)
        inputs = []
        cref_close(store)
    }

    private func check(_ code: Int32, _ operation: @autoclosure () -> String) throws {
        guard code == 0 else {
            throw ReferenceError(
                engine: engine.name, operation: operation(), code: code, message: String(cString: cref_error_message(store)))
        }
    }

    // MARK: Writes

    public func prepareInputs(_ inputs: [[Dialog]]) throws {
        self.inputs = try inputs.map { try CGraph($0) }
        inputDialogs = [:]
        for graph in self.inputs {
            for index in graph.source.indices where inputDialogs[graph.source[index].uniqueId] == nil {
                inputDialogs[graph.source[index].uniqueId] = (graph, index)
            }
        }
    }

    /// `dialogs` in C: the converted graph when it is one of the inputs (the
    /// same array), else a conversion made now.
    private func converted(_ dialogs: [Dialog]) throws -> CGraph {
        try inputs.first { $0.isConversion(of: dialogs) } ?? CGraph(dialogs)
    }

    public func persist(_ dialogs: [Dialog]) throws {
        let graph = try converted(dialogs)
        try check(cref_persist(store, graph.dialogs, graph.count), "persist")
    }

    public func update(_ dialogs: [Dialog]) throws {
        let graph = try converted(dialogs)
        try check(cref_update(store, graph.dialogs, graph.count), "update")
    }

    public func persistSingle(_ dialog: Dialog) throws {
        if let (graph, index) = inputDialogs[dialog.uniqueId], graph.isConversion(of: dialog, at: index) {
            try check(cref_persist(store, graph.dialogs + index, 1), "persist-single")
        } else {
            let graph = try CGraph([dialog])
            try check(cref_persist(store, graph.dialogs, 1), "persist-single")
        }
    }

    public func erase(dialogIds ids: [Int64]) throws -> Int {
        var erased: Int64 = 0
        try ids.withUnsafeBufferPointer { ids in
            try check(cref_erase(store, ids.baseAddress, ids.count, &erased), "erase-by-id")
        }
        return Int(erased)
    }

    public func eraseAll() throws -> Int {
        var erased: Int64 = 0
        try check(cref_erase_all(store, &erased), "erase-all")
        return Int(erased)
    }

    // MARK: Reads, held

    public func holdAll() throws {
        cref_dialogs_free(&heldDialogs)
        try check(cref_read_all(store, &heldDialogs), "read-all")
    }

    public func holdDialog(id: Int64) throws -> Bool {
        var found: Int32 = 0
        try check(cref_hold_dialog(store, id, &heldDialogs, &found), "read-by-id")
        return found != 0
    }

    public func holdUnreadMessages(dialogId id: Int64) throws {
        try check(cref_hold_unread(store, id, &heldMessages), "query")
    }

    public func takeHeldDialogs() throws -> [Dialog] {
        defer { cref_dialogs_free(&heldDialogs) }
        return (0..<heldDialogs.count).map { Self.dialog(heldDialogs.items[$0]) }
    }

    public func takeHeldMessages() -> [[Message]] {
        defer { cref_message_lists_free(&heldMessages) }
        return (0..<heldMessages.count).map { Self.messages(heldMessages.items[$0].items, heldMessages.items[$0].count) }
    }

    // MARK: Reads, folded (the borrowing reads)

    public func foldAll(into digest: inout ReadDigest) throws {
        var folded = Self.cDigest(digest)
        try check(cref_fold_all(store, &folded), "read-all-borrowing")
        digest = Self.digest(folded)
    }

    public func foldDialog(id: Int64, into digest: inout ReadDigest) throws -> Bool {
        var folded = Self.cDigest(digest)
        var found: Int32 = 0
        try check(cref_fold_dialog(store, id, &folded, &found), "read-by-id-borrowing")
        digest = Self.digest(folded)
        return found != 0
    }

    public func foldUnreadMessages(dialogId id: Int64, into digest: inout ReadDigest) throws {
        var folded = Self.cDigest(digest)
        try check(cref_fold_unread(store, id, &folded), "query-borrowing")
        digest = Self.digest(folded)
    }

    // MARK: Reads as plain objects (the checks, and any caller)

    public func readAll() throws -> [Dialog] {
        var all = cref_dialogs()
        defer { cref_dialogs_free(&all) }
        try check(cref_read_all(store, &all), "read-all")
        return (0..<all.count).map { Self.dialog(all.items[$0]) }
    }

    public func read(dialogId id: Int64) throws -> Dialog? {
        var dialog = cref_dialog()
        defer { cref_dialog_free(&dialog) }
        var found: Int32 = 0
        try check(cref_read_dialog(store, id, &dialog, &found), "read-by-id")
        return found != 0 ? Self.dialog(dialog) : nil
    }

    public func unreadMessages(dialogId id: Int64) throws -> [Message] {
        var unread = cref_messages()
        defer { cref_messages_free(&unread) }
        try check(cref_read_unread(store, id, &unread), "query")
        return Self.messages(unread.items, unread.count)
    }

    public func read(dialogIds ids: [Int64]) throws -> [Dialog] {
        try ids.compactMap { try read(dialogId: $0) }
    }

    public func dialogCount() throws -> Int { try count(CREF_COUNT_DIALOGS) }

    public func messageCount() throws -> Int { try count(CREF_COUNT_MESSAGES) }

    public func unreadMessageCount() throws -> Int { try count(CREF_COUNT_UNREAD) }

    private func count(_ kind: cref_count_kind) throws -> Int {
        var count: Int64 = 0
        try check(cref_count(store, kind, &count), "count")
        return Int(count)
    }

    // MARK: Conversions

    private static func cDigest(_ digest: ReadDigest) -> cref_digest {
        cref_digest(value: digest.value, dialogs: Int64(digest.dialogs), messages: Int64(digest.messages))
    }

    private static func digest(_ folded: cref_digest) -> ReadDigest {
        ReadDigest(value: folded.value, dialogs: Int(folded.dialogs), messages: Int(folded.messages))
    }

    private static func dialog(_ dialog: cref_dialog) -> Dialog {
        Dialog(uniqueId: dialog.id, isPinned: dialog.is_pinned != 0, messages: messages(dialog.messages, dialog.count))
    }

    private static func messages(_ items: UnsafeMutablePointer<cref_message>?, _ count: Int) -> [Message] {
        guard let items else { return [] }
        return (0..<count).map { index in
            let m = items[index]
            let text = m.text.map { bytes in
                String(
                    decoding: UnsafeRawBufferPointer(start: bytes, count: Int(m.text_length)), as: UTF8.self)
            } ?? ""
            return Message(
                uniqueId: m.id, dialogId: m.dialog_id, date: Date(timeIntervalSince1970: m.date), text: text,
                senderId: m.sender_id, receiverId: m.receiver_id, type: Int(m.type), isIncoming: m.is_incoming != 0,
                isRead: m.is_read != 0)
        }
    }
}

/// Dialogs converted into C structs (texts copied, NUL-terminated), released
/// with the object; keeps the array it was made from, so that the same array
/// can be recognized by its storage.
private final class CGraph {
    let source: [Dialog]
    let dialogs: UnsafeMutablePointer<cref_dialog>
    let count: Int

    init(_ source: [Dialog]) throws {
        self.source = source
        count = source.count
        guard let raw = malloc(max(1, count) * MemoryLayout<cref_dialog>.stride) else { throw Self.noMemory }
        dialogs = raw.bindMemory(to: cref_dialog.self, capacity: max(1, count))
        dialogs.initialize(repeating: cref_dialog(), count: count)
        for (index, dialog) in source.enumerated() {
            dialogs[index].id = dialog.uniqueId
            dialogs[index].is_pinned = dialog.isPinned ? 1 : 0
            let messages = dialog.messages
            guard let items = malloc(max(1, messages.count) * MemoryLayout<cref_message>.stride) else {
                throw Self.noMemory
            }
            let typed = items.bindMemory(to: cref_message.self, capacity: max(1, messages.count))
            dialogs[index].messages = typed
            dialogs[index].capacity = max(1, messages.count)
            for message in messages {
                var text = message.text
                let copy = text.withUTF8 { bytes in
                    bytes.withMemoryRebound(to: CChar.self) { cref_copy_text($0.baseAddress, $0.count) }
                }
                guard let copy else { throw Self.noMemory }
                typed[dialogs[index].count] = cref_message(
                    id: message.uniqueId, dialog_id: message.dialogId, date: message.date.timeIntervalSince1970,
                    text: copy, text_length: Int32(text.utf8.count), type: Int32(message.type),
                    sender_id: message.senderId, receiver_id: message.receiverId,
                    is_incoming: message.isIncoming ? 1 : 0, is_read: message.isRead ? 1 : 0)
                dialogs[index].count += 1
            }
        }
    }

    deinit {
        for index in 0..<count { cref_dialog_free(dialogs + index) }
        free(dialogs)
    }

    private static let noMemory = ReferenceError(engine: "c", operation: "convert", code: -1001, message: "out of memory")

    /// Whether `dialogs` is the array this was made from (its storage, not an equal copy).
    func isConversion(of dialogs: [Dialog]) -> Bool {
        dialogs.count == count && Self.base(dialogs) == Self.base(source)
    }

    /// Whether `dialog` is the one at `index` of the array this was made from
    /// (its messages' storage).
    func isConversion(of dialog: Dialog, at index: Int) -> Bool {
        let original = source[index]
        return original.uniqueId == dialog.uniqueId && original.isPinned == dialog.isPinned
            && original.messages.count == dialog.messages.count
            && Self.base(original.messages) == Self.base(dialog.messages)
    }

    private static func base<T>(_ array: [T]) -> UnsafeRawPointer? {
        array.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
    }
}
