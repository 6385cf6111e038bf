import DAOCore
import DialogGraph
import Foundation
import Testing

@testable import LMDBStorage

/// Writes through the cursors a call keeps (appends for keys after every
/// stored key, in-place replacement of the entry after the last one
/// written, an ordinary put otherwise), checked against a model of what the
/// store must hold, with keys in and out of order, moves between parents
/// and values that change size.
@Suite("LMDB writes through kept cursors")
struct WriteCursorTests {
    /// A message of dialog `dialog` with id `id` and a text of `length` characters.
    private func message(_ id: Int64, of dialog: Int64, length: Int = 20, isRead: Bool = false) -> MessageRecord {
        MessageRecord(
            id: id, dialogId: dialog, date: Date(timeIntervalSinceReferenceDate: Double(id) * 60),
            text: String(repeating: "é", count: length) + "\(id)", senderId: id % 7, receiverId: id % 11,
            type: id % 5, isIncoming: id % 2 == 0, isRead: isRead)
    }

    /// Runs `body` with the dialog and message storages of a new store
    /// (written without syncs: these tests check what is stored, not durability).
    private func withStores(
        _ body: (LMDBRecordStorage<DialogRecord>, LMDBRecordStorage<MessageRecord>) throws -> Void
    ) throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            try body(try env.storage(for: DialogRecord.self), try env.storage(for: MessageRecord.self))
        }
    }

    /// Checks that the store holds exactly `model` (dialog id → dialog), by
    /// every way of reading it, and that `verify()` finds it consistent.
    private func expectStore(
        _ model: [Int64: DialogRecord], _ dialogs: LMDBRecordStorage<DialogRecord>, _ messages: LMDBRecordStorage<MessageRecord>
    ) throws {
        let expected = model.keys.sorted().compactMap { id -> DialogRecord? in
            guard var dialog = model[id] else { return nil }
            dialog.messages.sort { $0.id < $1.id }
            return dialog
        }
        #expect(try dialogs.readAll() == expected)
        let allMessages = expected.flatMap(\.messages)
        #expect(try messages.count() == allMessages.count)
        for message in allMessages {
            #expect(try messages.read(primaryKey: message.id) == message)
        }
        #expect(try dialogs.verify() == expected.count)
        #expect(try messages.verify() == allMessages.count)
    }

    @Test("keys in descending order, interleaved parents, inserts between stored keys")
    func outOfOrder() throws {
        try withStores { dialogs, messages in
            var model: [Int64: DialogRecord] = [:]
            // Parents and children in descending key order: no append fits.
            var batch: [DialogRecord] = []
            for dialog in stride(from: Int64(10), through: 6, by: -1) {
                let children = stride(from: dialog * 100 + 40, through: dialog * 100 + 2, by: -2).map { message($0, of: dialog) }
                batch.append(DialogRecord(id: dialog, isPinned: dialog % 3 == 0, messages: children))
            }
            try dialogs.persist(batch)
            for dialog in batch { model[dialog.id] = dialog }
            try expectStore(model, dialogs, messages)
            // Parents below every stored one, then above; children whose ids
            // fall between those of other parents.
            batch = [
                DialogRecord(id: 2, isPinned: false, messages: [message(701, of: 2), message(703, of: 2)]),
                DialogRecord(id: 20, isPinned: true, messages: [message(5, of: 20), message(2001, of: 20)]),
                DialogRecord(id: 1, isPinned: true, messages: [message(9999, of: 1), message(3, of: 1)]),
            ]
            try dialogs.persist(batch)
            for dialog in batch { model[dialog.id] = dialog }
            try expectStore(model, dialogs, messages)
            // Odd ids between the stored even ones of dialog 8, given out of
            // order with the stored ones, some of them longer (a value of
            // another size replaces the old one), one dropped.
            var eight = model[8]?.messages ?? []
            eight.removeAll { $0.id == 820 }
            eight = eight.map { $0.id % 4 == 0 ? message($0.id, of: 8, length: 300, isRead: true) : $0 }
            eight += stride(from: Int64(839), through: 801, by: -4).map { message($0, of: 8) }
            eight.shuffle()
            let updated = DialogRecord(id: 8, isPinned: true, messages: eight)
            try dialogs.persist([updated])
            model[8] = updated
            try expectStore(model, dialogs, messages)
        }
    }

    @Test("children moving between parents inside one call, and a parent's children replaced in order")
    func movesAndReplacements() throws {
        try withStores { dialogs, messages in
            var model: [Int64: DialogRecord] = [:]
            var batch: [DialogRecord] = []
            for dialog in Int64(1)...6 {
                batch.append(
                    DialogRecord(
                        id: dialog, isPinned: false,
                        messages: (Int64(1)...8).map { message((dialog - 1) * 8 + $0, of: dialog) }))
            }
            try dialogs.persist(batch)
            for dialog in batch { model[dialog.id] = dialog }
            try expectStore(model, dialogs, messages)
            // Every message marked read in order (in-place replacements), and
            // dialog 3 takes two messages of dialog 2 and one of dialog 5,
            // which dialog 5 is persisted without in the same call.
            batch = batch.map { dialog in
                DialogRecord(
                    id: dialog.id, isPinned: !dialog.isPinned,
                    messages: dialog.messages.map { message($0.id, of: dialog.id, length: 20, isRead: true) })
            }
            batch[1].messages.removeAll { $0.id == 10 || $0.id == 13 }
            batch[2].messages += [message(10, of: 3, isRead: true), message(13, of: 3, length: 90), message(37, of: 3)]
            batch[4].messages.removeAll { $0.id == 37 }
            try dialogs.persist(batch)
            for dialog in batch { model[dialog.id] = dialog }
            try expectStore(model, dialogs, messages)
            // The same graph again (every value stored already, left as it
            // is), then again with one message in the middle changed and
            // one after it of the same bytes.
            try dialogs.persist(batch)
            try expectStore(model, dialogs, messages)
            batch[3].messages[4] = message(batch[3].messages[4].id, of: 4, length: 33, isRead: false)
            try dialogs.persist(batch)
            for dialog in batch { model[dialog.id] = dialog }
            try expectStore(model, dialogs, messages)
            // A child moved through its own storage, then the whole graph
            // persisted again in reverse order.
            try messages.persist(message(1, of: 6, length: 5))
            model[1]?.messages.removeAll { $0.id == 1 }
            model[6]?.messages.append(message(1, of: 6, length: 5))
            try expectStore(model, dialogs, messages)
            let reversed = model.values.sorted { $0.id > $1.id }.map { dialog in
                DialogRecord(id: dialog.id, isPinned: dialog.isPinned, messages: dialog.messages.reversed())
            }
            try dialogs.persist(reversed)
            try expectStore(model, dialogs, messages)
        }
    }

    @Test("a store written in key order reads back after appends, erasures and new appends")
    func appendsAfterErasures() throws {
        try withStores { dialogs, messages in
            let records = try dialogRecords(dialogs: 30, messages: 40)
            try dialogs.persist(records)
            var model = Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0) })
            try expectStore(model, dialogs, messages)
            let doomed = model.keys.filter { $0 % 3 == 0 || $0 > 25 }
            #expect(try dialogs.erase(primaryKeys: doomed) == doomed.count)
            for id in doomed { model[id] = nil }
            try expectStore(model, dialogs, messages)
            // Persisted one by one above every stored key (appends), then
            // one below them all.
            for id in Int64(40)...45 {
                let dialog = DialogRecord(
                    id: id, isPinned: false, messages: (Int64(0)..<10).map { message(id * 1000 + $0, of: id) })
                try dialogs.persist([dialog])
                model[id] = dialog
            }
            let low = DialogRecord(id: 0, isPinned: true, messages: [message(-5, of: 0), message(-4, of: 0)])
            try dialogs.persist([low])
            model[0] = low
            try expectStore(model, dialogs, messages)
        }
    }

    @Test("erasing parents whose keys end in 0xFF bytes, at the ends of the key space, with children over many pages")
    func erasuresAtKeyBoundaries() throws {
        try withStores { dialogs, messages in
            // Keys are big-endian with the sign bit flipped: 255 and 65535 end
            // in 0xFF bytes, -1 is 0x7F then seven 0xFF, Int64.max all 0xFF,
            // Int64.min all 0x00: a parent's range ends next to its
            // neighbour's, or at an end of the database.
            let ids: [Int64] = [.min, -256, -1, 0, 1, 254, 255, 256, 65535, 65536, .max - 1, .max]
            var model: [Int64: DialogRecord] = [:]
            var next = Int64(1)
            for id in ids {
                // Several hundred children for some parents: their ranges
                // span pages, which merge as they empty.
                let count = id == 255 || id == .max ? 600 : 7
                let children = (0..<count).map { _ in
                    defer { next += 1 }
                    return message(next, of: id, length: Int(next % 50))
                }
                let dialog = DialogRecord(id: id, isPinned: id % 2 == 0, messages: children)
                model[id] = dialog
            }
            try dialogs.persist(ids.compactMap { model[$0] })
            try expectStore(model, dialogs, messages)
            for doomed in [[255, -1], [Int64.max, 65535], [Int64.min, 0]] {
                #expect(try dialogs.erase(primaryKeys: doomed) == doomed.count)
                for id in doomed { model[id] = nil }
                try expectStore(model, dialogs, messages)
            }
            // The neighbours of every erased range are still whole; erase the rest.
            let rest = Array(model.keys)
            #expect(try dialogs.erase(primaryKeys: rest) == rest.count)
            try expectStore([:], dialogs, messages)
        }
    }

    @Test("erasing every other parent, and then the rest, when their children's #id runs fill many pages")
    func erasuresAcrossIdPages() throws {
        try withStores { dialogs, messages in
            // 250 children per parent, their ids in runs of two interleaved
            // with the other parents' (1, 2 for parent 1, 3, 4 for parent 2,
            // …, 23, 24 for parent 12, then 25, 26 for parent 1 again): 125
            // `#id` runs per parent, 1,500 in all over many pages, each
            // parent's spread over every page. Deletes end pages, empty them
            // and merge them, and the entry a delete leaves the cursor on
            // belongs to another parent, erased or kept, or (at the very
            // end) to none.
            var model: [Int64: DialogRecord] = [:]
            for id in Int64(1)...12 {
                let children = (Int64(0)..<250).map { k in
                    message((k / 2) * 24 + (id - 1) * 2 + k % 2 + 1, of: id, length: Int(k % 7))
                }
                model[id] = DialogRecord(id: id, isPinned: false, messages: children)
            }
            try dialogs.persist(model.keys.sorted().compactMap { model[$0] })
            try expectStore(model, dialogs, messages)
            // The even parents, 12 (whose run ends `#id`) among them, in
            // descending order: the entry a delete leaves the cursor on is
            // always another parent's run, never the next one to go.
            let even = model.keys.filter { $0 % 2 == 0 }.sorted(by: >)
            #expect(try dialogs.erase(primaryKeys: even) == even.count)
            for id in even { model[id] = nil }
            try expectStore(model, dialogs, messages)
            // A parent that is gone, then the rest in ascending order.
            let rest = [Int64(2)] + model.keys.sorted()
            #expect(try dialogs.erase(primaryKeys: rest) == rest.count - 1)
            try expectStore([:], dialogs, messages)
            #expect(try messages.count() == 0)
        }
    }

    @Test("seeded calls of moves, drops, size changes, erasures and appends over several pages agree with a model")
    func seededAgainstModel() throws {
        try withStores { dialogs, messages in
            var model: [Int64: DialogRecord] = [:]
            var random = SplitMix64(seed: 0x5EED_C0DE)
            // Ids grow over the run, so later calls append after every stored
            // key while earlier ids are still moved, rewritten and dropped.
            var ceiling: Int64 = 200
            for call in 0..<40 {
                if call > 0, random.next() % 5 == 0 {
                    let victims = Array(model.keys.sorted().shuffled(using: &random).prefix(2))
                    #expect(try dialogs.erase(primaryKeys: victims) == victims.count, "call \(call)")
                    for id in victims { model[id] = nil }
                } else {
                    ceiling += Int64(random.next() % 120)
                    var pool = Array(Int64(1)...ceiling).shuffled(using: &random)
                    let parents = Array(Array(Int64(1)...12).shuffled(using: &random).prefix(Int(1 + random.next() % 4)))
                    var batch: [DialogRecord] = []
                    for parent in parents {
                        let count = Int(random.next() % 90)
                        let ids = Array(pool.prefix(count))
                        pool.removeFirst(min(count, pool.count))
                        let children = ids.map { message($0, of: parent, length: Int(random.next() % 400)) }
                        batch.append(DialogRecord(id: parent, isPinned: random.next() % 2 == 0, messages: children))
                    }
                    try dialogs.persist(batch)
                    // A child named under a parent leaves any other parent;
                    // a parent's children are exactly those it names.
                    for dialog in batch {
                        let named = Set(dialog.messages.map(\.id))
                        for (id, other) in model where id != dialog.id {
                            var kept = other
                            kept.messages.removeAll { named.contains($0.id) }
                            model[id] = kept
                        }
                        model[dialog.id] = dialog
                    }
                }
                try expectStore(model, dialogs, messages)
            }
        }
    }
}
