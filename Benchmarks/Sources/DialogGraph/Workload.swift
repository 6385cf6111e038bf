import Foundation

/// The dialog-graph workload of WORKLOAD.md (v1): its sizes and the data it
/// writes and looks up, generated deterministically from a seed.
public struct WorkloadData: Sendable {
    /// The workload's name and version, written into every report.
    public static let name = "dialog-graph-v1"

    /// The vocabulary message texts are drawn from, in order (NFC).
    public static let vocabulary: [String] = [
        "the", "a", "message", "hello", "world", "meeting", "tomorrow", "project", "update", "please",
        "review", "database", "storage", "swift", "quick", "brown", "fox", "lazy", "dog", "coffee",
        "release", "build", "test", "ok", "thanks", "see", "you", "soon", "привет", "мир",
        "сообщение", "завтра", "спасибо", "встреча", "caf\u{E9}", "na\u{EF}ve", "r\u{E9}sum\u{E9}",
        "Z\u{FC}rich", "se\u{F1}or", "fa\u{E7}ade", "sm\u{F6}rg\u{E5}sbord", "\u{1F680}",
    ]

    /// The number of dialogs in the initial graph (`D`).
    public let dialogs: Int
    /// The number of messages in each dialog (`M`).
    public let messagesPerDialog: Int
    /// The seed of the generators.
    public let seed: UInt64
    /// The initial graph: dialogs 1…D.
    public let initial: [Dialog]
    /// The dialogs persisted one by one: ids D+1…D+P, `P = min(D, 200)`.
    public let extra: [Dialog]
    /// The dialog ids looked up by `read-by-id` (`K = min(D, 1000)` of them).
    public let readIds: [Int64]
    /// The dialog ids whose unread messages `query` asks for.
    public let queryIds: [Int64]

    /// Generates the workload for `dialogs` × `messagesPerDialog` from `seed`.
    ///
    /// - Precondition: `dialogs >= 1`, `messagesPerDialog >= 0`.
    public init(dialogs: Int, messagesPerDialog: Int, seed: UInt64 = 42) {
        precondition(dialogs >= 1 && messagesPerDialog >= 0, "the workload needs at least one dialog")
        self.dialogs = dialogs
        self.messagesPerDialog = messagesPerDialog
        self.seed = seed
        let extraCount = min(dialogs, 200)
        var random = SplitMix64(seed: seed)
        var all: [Dialog] = []
        all.reserveCapacity(dialogs + extraCount)
        for id in 1...Int64(dialogs + extraCount) {
            all.append(Self.dialog(id: id, messages: messagesPerDialog, random: &random))
        }
        initial = Array(all[..<dialogs])
        extra = Array(all[dialogs...])

        let lookups = min(dialogs, 1000)
        var lookupRandom = SplitMix64(seed: seed &+ 1)
        readIds = (0..<lookups).map { _ in 1 + Int64(lookupRandom.next() % UInt64(dialogs)) }
        queryIds = (0..<lookups).map { _ in 1 + Int64(lookupRandom.next() % UInt64(dialogs)) }
    }

    /// The initial dialogs with every message marked read: what `update` persists.
    public var updated: [Dialog] {
        initial.map { dialog in
            Dialog(
                uniqueId: dialog.uniqueId, isPinned: dialog.isPinned,
                messages: dialog.messages.map { $0.with(isRead: true) })
        }
    }

    /// The ids `erase-by-id` erases: every even id in 1…D+P.
    public var eraseIds: [Int64] {
        Array(stride(from: 2, through: Int64(dialogs + extra.count), by: 2))
    }

    /// The FNV-1a 64 fingerprint of dialogs 1…D+P, as WORKLOAD.md defines it.
    public var fingerprint: UInt64 {
        var hash = FNV1a64()
        for dialog in initial + extra {
            hash.combine(dialog.uniqueId)
            hash.combine(dialog.isPinned ? 1 : 0)
            for message in dialog.messages {
                hash.combine(message.uniqueId)
                hash.combine(message.dialogId)
                hash.combine(Int64(bitPattern: message.date.timeIntervalSince1970.bitPattern))
                hash.combine(bytes: message.text.utf8)
                hash.combine(message.senderId)
                hash.combine(message.receiverId)
                hash.combine(Int64(message.type))
                hash.combine(message.isIncoming ? 1 : 0)
                hash.combine(message.isRead ? 1 : 0)
            }
        }
        return hash.value
    }

    private static func dialog(id: Int64, messages count: Int, random: inout SplitMix64) -> Dialog {
        let isPinned = random.next() % 100 < 10
        var messages: [Message] = []
        messages.reserveCapacity(count)
        for j in 0..<Int64(count) {
            let messageId = (id - 1) * Int64(count) + j + 1
            let jitterMs = random.next() % 60_000
            let seconds = Double(1_700_000_000 + messageId * 60) + Double(jitterMs) / 1000
            let date = Date(timeIntervalSince1970: seconds)
            let text = Self.text(random: &random)
            let senderId = 1 + Int64(random.next() % 10_000)
            let receiverId = 1 + Int64(random.next() % 10_000)
            let type = Int(random.next() % 5)
            let isIncoming = random.next() & 1 == 1
            let isRead = random.next() % 100 < 70
            messages.append(
                Message(
                    uniqueId: messageId, dialogId: id, date: date, text: text, senderId: senderId,
                    receiverId: receiverId, type: type, isIncoming: isIncoming, isRead: isRead))
        }
        return Dialog(uniqueId: id, isPinned: isPinned, messages: messages)
    }

    /// Each vocabulary word as its scalars, each scalar as its UTF-8 bytes.
    private static let vocabularyUTF8: [[[UInt8]]] = vocabulary.map { word in
        word.unicodeScalars.map { Array(String($0).utf8) }
    }

    private static func text(random: inout SplitMix64) -> String {
        let length = 16 + Int(random.next() % 241)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length * 2)
        var count = 0
        while count < length {
            if count > 0 {
                bytes.append(0x20)
                count += 1
                if count == length { break }
            }
            let word = vocabularyUTF8[Int(random.next() % 42)]
            for scalar in word.prefix(length - count) {
                bytes.append(contentsOf: scalar)
            }
            count += min(word.count, length - count)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
