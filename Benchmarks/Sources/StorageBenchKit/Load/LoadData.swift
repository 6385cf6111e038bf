import DAOCore
import DialogGraph
import Foundation
import Synchronization

/// The data a mix writes, generated once per mix from its seed.
final class LoadData: Sendable {
    /// The initial dialogs (ids 1…D).
    let initial: [Dialog]
    /// The initial dialogs with one field of the dialog and one of its first
    /// message changed: what `update` writes, alternating with ``initial`` so
    /// that each update changes the record.
    let changed: [Dialog]

    init(mix: LoadMix) {
        let data = WorkloadData(dialogs: mix.dialogs, messagesPerDialog: mix.messagesPerDialog, seed: mix.seed)
        initial = data.initial
        changed = data.initial.map { dialog in
            var messages = dialog.messages
            if let first = messages.first { messages[0] = first.with(isRead: !first.isRead) }
            return Dialog(uniqueId: dialog.uniqueId, isPinned: !dialog.isPinned, messages: messages)
        }
    }
}

/// What the clients of one backend × mix share: the data to write and the
/// counters of new ids (which carry over from one client count to the next,
/// as the store keeps what was inserted).
final class LoadShared: Sendable {
    let mix: LoadMix
    let data: LoadData
    var initial: [Dialog] { data.initial }
    var changed: [Dialog] { data.changed }
    /// The next id an `insert` takes.
    let nextDialog: Atomic<Int64>
    /// The newest dialog id whose insert has returned (`latest` reads from it down).
    let latestDialog: Atomic<Int64>
    /// The next serial of an appended message.
    let nextMessage = Atomic<Int64>(0)
    /// The first id of an appended message: above every id the mix's inserts can reach.
    static let appendedIdBase: Int64 = 1 << 42

    init(mix: LoadMix, data: LoadData) {
        self.mix = mix
        self.data = data
        nextDialog = Atomic(Int64(mix.dialogs) + 1)
        latestDialog = Atomic(Int64(mix.dialogs))
    }

    /// The dialog an `update` of `id` writes.
    func updated(_ id: Int64, flip: Bool) -> Dialog {
        let index = Int((id - 1) % Int64(initial.count))
        let template = flip ? changed[index] : initial[index]
        if template.uniqueId == id { return template }
        return renumbered(template, as: id)
    }

    /// A new dialog under `id`, shaped as an initial one.
    func inserted(_ id: Int64) -> Dialog {
        renumbered(initial[Int((id - 1) % Int64(initial.count))], as: id)
    }

    private func renumbered(_ template: Dialog, as id: Int64) -> Dialog {
        let perDialog = Int64(mix.messagesPerDialog)
        let messages = template.messages.enumerated().map { offset, message in
            Message(
                uniqueId: (id - 1) * perDialog + Int64(offset) + 1, dialogId: id, date: message.date,
                text: message.text, senderId: message.senderId, receiverId: message.receiverId, type: message.type,
                isIncoming: message.isIncoming, isRead: message.isRead)
        }
        return Dialog(uniqueId: id, isPinned: template.isPinned, messages: messages)
    }

    /// A new message in dialog `id`, newer than every message stored.
    func appended(to id: Int64) -> Message {
        let serial = nextMessage.wrappingAdd(1, ordering: .relaxed).oldValue
        let template = initial[Int(serial % Int64(initial.count))].messages.first
        return Message(
            uniqueId: Self.appendedIdBase + serial, dialogId: id,
            date: Date(timeIntervalSince1970: 2_000_000_000 + Double(serial) / 1000),
            text: template?.text ?? "hello", senderId: template?.senderId ?? 1,
            receiverId: template?.receiverId ?? 2, type: template?.type ?? 0,
            isIncoming: template?.isIncoming ?? false, isRead: false)
    }
}
