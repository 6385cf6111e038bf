import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

/// Replacing a parent's children finds the keys stored under it as the
/// children are written (the fused walk: matched at the write cursor while
/// they come in the stored order, listed through one cursor kept for the
/// call from the first that does not): checked against a model when the
/// children come out of key order, move from another parent, are new or
/// are removed, several parents a call. `FusedWalkTests` places the first
/// mismatch on purpose.
@Suite("LMDB storage: replacing children against a model")
struct ChildrenReplacementTests {
    @Test("children out of key order, moved between parents, added and removed, several parents a call")
    func replaceAgainstModel() throws {
        try withStoreDirectory { directory in
            var random = SplitMix64(seed: 14)
            let initial = try dialogRecords(dialogs: 6, messages: 8)
            var model = Dictionary(uniqueKeysWithValues: initial.map { ($0.id, $0) })
            let env = try LMDBEnvironment(directory: directory.store)
            let dialogs = try env.storage(for: DialogRecord.self)
            let messages = try env.storage(for: MessageRecord.self)
            try dialogs.persist(initial)
            guard let template = initial.first?.messages.first else {
                Issue.record("the workload made no message")
                return
            }
            var nextMessageId = (initial.flatMap(\.messages).map(\.id).max() ?? 0) + 1
            let parentIds: [Int64] = Array(1...8)  // 7 and 8 are new parents when first chosen
            for round in 0..<60 {
                let chosen = Array(parentIds.shuffled(using: &random).prefix(Int.random(in: 1...4, using: &random)))
                var batch: [DialogRecord] = []
                for parentId in chosen {
                    var parent = model[parentId] ?? {
                        var made = initial[0]
                        made.id = parentId
                        made.messages = []
                        return made
                    }()
                    var children = parent.messages
                    // Removed.
                    children.removeAll { _ in Int.random(in: 0..<4, using: &random) == 0 }
                    // Changed in place.
                    for index in children.indices where Bool.random(using: &random) {
                        children[index].text = "round \(round)"
                    }
                    // Moved from a parent not written in this call (when
                    // the parent keeps it below).
                    var movedFrom: (parent: Int64, child: Int64)?
                    let others = model.keys.filter { !chosen.contains($0) }.sorted()
                    if let from = others.randomElement(using: &random), let moved = model[from]?.messages.randomElement(using: &random) {
                        var child = moved
                        child.dialogId = parentId
                        children.append(child)
                        movedFrom = (from, moved.id)
                    }
                    // New.
                    for _ in 0..<Int.random(in: 0...2, using: &random) {
                        var child = template
                        child.id = nextMessageId
                        child.dialogId = parentId
                        child.text = "new in round \(round)"
                        nextMessageId += 1
                        children.append(child)
                    }
                    // Out of key order in most rounds; sometimes none at all.
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0: children.sort { $0.id < $1.id }
                    case 1: children.sort { $0.id > $1.id }
                    case 2: children.shuffle(using: &random)
                    default: if Int.random(in: 0..<3, using: &random) == 0 { children = [] }
                    }
                    if let movedFrom, children.contains(where: { $0.id == movedFrom.child }) {
                        model[movedFrom.parent]?.messages.removeAll { $0.id == movedFrom.child }
                    }
                    parent.messages = children
                    batch.append(parent)
                    var stored = parent
                    stored.messages.sort { $0.id < $1.id }
                    model[parentId] = stored
                }
                try dialogs.persist(batch)
                let expected = model.values.sorted { $0.id < $1.id }
                #expect(try dialogs.readAll() == expected, "round \(round)")
                #expect(try messages.readAll() == expected.flatMap(\.messages).sorted { $0.id < $1.id }, "round \(round)")
                #expect(try messages.count() == expected.reduce(0) { $0 + $1.messages.count }, "round \(round)")
            }
            _ = try dialogs.verify()
            _ = try messages.verify()
        }
    }
}
