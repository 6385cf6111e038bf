import DialogGraph
import Foundation

/// What a borrowing read consumed: every record it was lent, folded field by
/// field, in order, into one 64-bit value, and the dialogs and messages
/// counted. The harness checks a borrowing read's digest against the digest
/// of the records the read must answer (WORKLOAD.md, "Extra operations"), so
/// a read that skipped a record, or lent one wrong, fails.
///
/// The fold costs a few instructions a field, so that the figures stay those
/// of the read: each number, the date to the millisecond (every store keeps
/// dates to it), and of the text its length in UTF-8 bytes and its first and
/// last byte (constant time for a native string, and enough to tell texts
/// apart that were lent out of place).
public struct ReadDigest: Hashable, Sendable, CustomStringConvertible {
    /// The folded value.
    public private(set) var value: UInt64 = 0
    /// The dialogs folded in.
    public private(set) var dialogs = 0
    /// The messages folded in, on their own or in a dialog.
    public private(set) var messages = 0

    /// An empty digest.
    public init() {}

    /// A digest folded elsewhere the same way (a C reference folds its own
    /// structs): `value` after `dialogs` dialogs and `messages` messages.
    public init(value: UInt64, dialogs: Int, messages: Int) {
        self.value = value
        self.dialogs = dialogs
        self.messages = messages
    }

    /// Folds in a dialog: its id, whether it is pinned, and its messages in order.
    public mutating func add(_ dialog: borrowing Dialog) {
        dialogs += 1
        mix(UInt64(bitPattern: dialog.uniqueId))
        mix(dialog.isPinned ? 1 : 0)
        for index in dialog.messages.indices { add(dialog.messages[index]) }
    }

    /// Folds in a message, field by field.
    public mutating func add(_ message: borrowing Message) {
        messages += 1
        mix(UInt64(bitPattern: message.uniqueId))
        mix(UInt64(bitPattern: message.dialogId))
        mix(UInt64(bitPattern: Int64((message.date.timeIntervalSince1970 * 1000).rounded())))
        mix(Self.textWord(message.text))
        mix(UInt64(bitPattern: message.senderId))
        mix(UInt64(bitPattern: message.receiverId))
        mix(UInt64(bitPattern: Int64(message.type)) &<< 2 | (message.isIncoming ? 2 : 0) | (message.isRead ? 1 : 0))
    }

    /// Folds in a dialog's own fields, as ``add(_:)-(Dialog)`` does before
    /// its messages: for a read that lends a dialog and then its messages
    /// apart (the view reads), which then folds each with
    /// ``addMessage(uniqueId:dialogId:date:text:senderId:receiverId:type:isIncoming:isRead:)``.
    public mutating func addDialog(uniqueId: Int64, isPinned: Bool) {
        dialogs += 1
        mix(UInt64(bitPattern: uniqueId))
        mix(isPinned ? 1 : 0)
    }

    /// Folds in a message from its fields, as ``add(_:)-(Message)`` does;
    /// its text's bytes where they lie.
    public mutating func addMessage(
        uniqueId: Int64, dialogId: Int64, date: Date, text: borrowing UTF8Span, senderId: Int64, receiverId: Int64,
        type: Int64, isIncoming: Bool, isRead: Bool
    ) {
        messages += 1
        mix(UInt64(bitPattern: uniqueId))
        mix(UInt64(bitPattern: dialogId))
        mix(UInt64(bitPattern: Int64((date.timeIntervalSince1970 * 1000).rounded())))
        let bytes = text.span
        let count = bytes.count
        mix(count == 0 ? 0 : UInt64(count) &<< 16 | UInt64(bytes[0]) &<< 8 | UInt64(bytes[count - 1]))
        mix(UInt64(bitPattern: senderId))
        mix(UInt64(bitPattern: receiverId))
        mix(UInt64(bitPattern: type) &<< 2 | (isIncoming ? 2 : 0) | (isRead ? 1 : 0))
    }

    /// A text's length in UTF-8 bytes and its first and last byte, read
    /// from its bytes where they lie, as the C references read their `char`
    /// arrays (through `String.UTF8View`'s `first` and `last`, a native
    /// string's last byte cost about 80 instructions, the fold of a message
    /// more than its decoding from LMDB).
    @inline(__always)
    static func textWord(_ text: String) -> UInt64 {
        let word = text.utf8.withContiguousStorageIfAvailable { bytes -> UInt64 in
            guard let last = bytes.last else { return 0 }
            return UInt64(bytes.count) &<< 16 | UInt64(bytes[0]) &<< 8 | UInt64(last)
        }
        if let word { return word }
        let utf8 = text.utf8
        return UInt64(utf8.count) &<< 16 | UInt64(utf8.first ?? 0) &<< 8 | UInt64(utf8.last ?? 0)
    }

    /// One step of the fold: order matters, so records lent in another
    /// order give another value.
    private mutating func mix(_ word: UInt64) {
        value = (value ^ word) &* 0x9E37_79B9_7F4A_7C15
        value ^= value &>> 29
    }

    public var description: String {
        "\(dialogs) dialogs, \(messages) messages, digest \(String(value, radix: 16))"
    }
}
