import DAOCore
import Foundation
import TestSupport
import Testing

// Three levels with String keys at the top and the bottom, optionals and a
// composite index: a shelf owns boxes, which own items.

/// A shelf, keyed by its label; owns its boxes.
struct ModelShelf: Record, Equatable {
    typealias PrimaryKey = String
    var label: String
    var note: String?
    var boxes: [ModelBox]

    static let entity = Entity<ModelShelf>(
        "model_shelves", primaryKey: "label", \.label, fields: [Field("note", \.note)],
        relations: [Relation("boxes", \.boxes, foreignKey: "shelf", \ModelBox.shelf)])
}

/// A box of a shelf; owns its items.
struct ModelBox: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var shelf: String
    var color: String?
    var size: Int64
    var items: [ModelItem]

    static let entity = Entity<ModelBox>(
        "model_boxes", primaryKey: "id", \.id,
        fields: [Field("shelf", \.shelf), Field("color", \.color), Field("size", \.size)],
        indexes: [Index("model_boxes_by_color_size", on: ["color", "size"])],
        relations: [Relation("items", \.items, foreignKey: "box", \ModelItem.box)],
        ownedBy: ModelShelf.self)
}

/// An item of a box, keyed by text.
struct ModelItem: Record, Equatable {
    typealias PrimaryKey = String
    var code: String
    var box: Int64
    var weight: Double
    var tag: String?

    static let entity = Entity<ModelItem>(
        "model_items", primaryKey: "code", \.code,
        fields: [Field("box", \.box), Field("weight", \.weight), Field("tag", \.tag)],
        indexes: [Index("model_items_by_tag", on: ["tag"])],
        ownedBy: ModelBox.self)
}

/// Tables of hundreds of records, far past the thresholds at which the file
/// store stops tracking changed keys (64) and closes the holes that removals
/// leave at a commit (as many holes as records, and more than 64): many
/// records erased and written back in one call, in and out of key order,
/// calls that fail after writing hundreds of records, and reopening, on
/// every backend, against a plain model.
@Suite("Conformance: large tables against a model")
struct LargeTableModelTests {
    static func byBytes(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    static func ordered(_ model: [String: ModelShelf]) -> [ModelShelf] {
        model.values.sorted { byBytes($0.label, $1.label) }.map { shelf in
            var shelf = shelf
            shelf.boxes.sort { $0.id < $1.id }
            for index in shelf.boxes.indices { shelf.boxes[index].items.sort { byBytes($0.code, $1.code) } }
            return shelf
        }
    }

    static let labels = (0..<24).map { ["s", "A", "é", "🙂", "m"][$0 % 5] + "\($0 * 7 % 24)" }

    fileprivate static func shelf(_ slot: Int, _ rng: inout TestRandom, version: Int) -> ModelShelf {
        let label = labels[slot]
        var boxes: [ModelBox] = []
        // Boxes from the shelf's own range, shuffled, some slots left empty.
        for offset in (0..<Int64(12)).shuffled(using: &rng).prefix(Int.random(in: 0...10, using: &rng)) {
            let id = Int64(slot) * 100 + offset
            var items: [ModelItem] = []
            for leaf in (0..<8).shuffled(using: &rng).prefix(Int.random(in: 0...6, using: &rng)) {
                items.append(
                    ModelItem(
                        code: "i\(id)-\(["z", "a", "\u{0}x", "ü", "🙂"][leaf % 5])\(leaf)", box: id,
                        weight: Double(Int.random(in: -4...4, using: &rng)) / 4 + Double(version),
                        tag: rng.next() % 3 == 0 ? nil : ["t1", "t2"][Int(rng.next() % 2)]))
            }
            boxes.append(
                ModelBox(
                    id: id, shelf: label, color: rng.next() % 4 == 0 ? nil : ["red", "blue"][Int(rng.next() % 2)],
                    size: Int64(rng.next() % 3), items: items))
        }
        return ModelShelf(label: label, note: rng.next() % 2 == 0 ? nil : "v\(version)", boxes: boxes)
    }

    @Test(arguments: allBackends)
    func largeTablesAgainstModel(_ backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        var rng = TestRandom(seed: 2026)
        var model: [String: ModelShelf] = [:]
        var store: (any Store)? = try backend.open(directory.url, .none)
        for step in 0..<60 {
            let open = try #require(store)
            let shelves = try open.anyStorage(for: ModelShelf.self)
            let boxes = try open.anyStorage(for: ModelBox.self)
            let items = try open.anyStorage(for: ModelItem.self)
            switch rng.next() % 9 {
            case 0, 1:
                // Many shelves written in one call, in no order.
                var batch: [ModelShelf] = []
                for slot in Array(0..<24).shuffled(using: &rng).prefix(Int.random(in: 1...20, using: &rng)) {
                    batch.append(Self.shelf(slot, &rng, version: step))
                }
                try shelves.persist(batch)
                for shelf in batch { model[shelf.label] = shelf }
            case 2:
                // Most shelves erased in one call: hundreds of holes.
                let chosen = Array(Self.labels.shuffled(using: &rng).prefix(Int.random(in: 6...22, using: &rng)))
                #expect(try shelves.erase(primaryKeys: chosen) == chosen.filter { model[$0] != nil }.count)
                for label in chosen { model[label] = nil }
            case 3:
                // Boxes erased through their own storage, from the middle.
                let held = model.values.flatMap(\.boxes).map(\.id)
                let chosen = Array(held.shuffled(using: &rng).prefix(held.count / 2))
                #expect(try boxes.erase(primaryKeys: chosen) == chosen.count)
                let erased = Set(chosen)
                for label in model.keys { model[label]?.boxes.removeAll { erased.contains($0.id) } }
            case 4:
                // A call that fails after writing hundreds of records: nothing changes.
                var batch = (0..<24).map { Self.shelf($0, &rng, version: step) }
                guard let last = batch.indices.last(where: { batch[$0].boxes.contains { !$0.items.isEmpty } }),
                    let box = batch[last].boxes.firstIndex(where: { !$0.items.isEmpty })
                else { continue }
                // A box of the last shelf that has items names the first shelf.
                batch[last].boxes[box].shelf = batch[(last + 1) % batch.count].label
                #expect(throws: StorageError.self) { try shelves.persist(batch) }
            case 5:
                // Every item rewritten through its own storage (more than half the table), plus new ones.
                var all = model.values.flatMap(\.boxes).flatMap(\.items)
                for index in all.indices { all[index].weight += 1 }
                if let box = model.values.flatMap(\.boxes).randomElement(using: &rng) {
                    all.append(ModelItem(code: "new\(step)", box: box.id, weight: 0, tag: nil))
                    all.append(ModelItem(code: "a-new\(step)", box: box.id, weight: 0, tag: "t1"))
                }
                try items.persist(all.shuffled(using: &rng))
                for item in all {
                    for label in model.keys {
                        guard let box = model[label]?.boxes.firstIndex(where: { $0.id == item.box }) else { continue }
                        if let index = model[label]?.boxes[box].items.firstIndex(where: { $0.code.utf8.elementsEqual(item.code.utf8) }) {
                            model[label]?.boxes[box].items[index] = item
                        } else {
                            model[label]?.boxes[box].items.append(item)
                        }
                    }
                }
            case 6:
                // Everything erased, then some back.
                _ = try shelves.eraseAll()
                model = [:]
                let batch = (0..<24).filter { _ in rng.next() % 2 == 0 }.map { Self.shelf($0, &rng, version: step) }
                try shelves.persist(batch)
                for shelf in batch { model[shelf.label] = shelf }
            case 7:
                // Small calls that rewrite one shelf's boxes and items and
                // then fail on the next shelf (a box naming another shelf),
                // many of them: each rollback puts the replaced records
                // back. Then one small call that succeeds.
                let held = Self.ordered(model).filter { !$0.boxes.isEmpty }
                guard held.count >= 2 else { continue }
                for _ in 0..<30 {
                    let pair = Array(held.shuffled(using: &rng).prefix(2))
                    var first = pair[0]
                    for box in first.boxes.indices {
                        first.boxes[box].size += 1
                        for item in first.boxes[box].items.indices { first.boxes[box].items[item].weight += 100 }
                    }
                    var second = pair[1]
                    second.boxes[0].shelf = first.label
                    #expect(throws: StorageError.self) { try shelves.persist([first, second]) }
                }
                var one = held[0]
                one.note = "changed \(step)"
                one.boxes.removeLast()
                try shelves.persist(one)
                model[one.label] = one
            default:
                try open.close()
                store = nil
                store = try backend.open(directory.url, .none)
                continue
            }
            let expected = Self.ordered(model)
            #expect(try shelves.readAll() == expected, "step \(step)")
            let allBoxes = expected.flatMap(\.boxes)
            let allItems = allBoxes.flatMap(\.items)
            #expect(try boxes.count() == allBoxes.count, "step \(step)")
            #expect(try items.count() == allItems.count, "step \(step)")
            let red = allBoxes.filter { $0.color == "red" && $0.size == 1 }.sorted { $0.id < $1.id }
            #expect(
                try boxes.read(Query(where: #Predicate<ModelBox> { $0.color == "red" && $0.size == 1 })).sorted { $0.id < $1.id }
                    == red, "step \(step)")
            let tagged = allItems.filter { $0.tag == "t2" }.sorted { Self.byBytes($0.code, $1.code) }
            #expect(
                try items.read(Query(where: #Predicate<ModelItem> { $0.tag == "t2" })).sorted { Self.byBytes($0.code, $1.code) }
                    == tagged, "step \(step)")
            if let box = allBoxes.randomElement(using: &rng) {
                let id = box.id
                #expect(try items.read(Query(where: #Predicate<ModelItem> { $0.box == id })) == box.items, "step \(step)")
                #expect(try items.count(where: #Predicate<ModelItem> { $0.box == id }) == box.items.count, "step \(step)")
            }
            for shelf in expected.prefix(3) {
                #expect(try shelves.read(primaryKey: shelf.label) == shelf, "step \(step)")
            }
        }
        try #require(store).close()
        let reopened = try backend.open(directory.url, .full)
        #expect(try reopened.anyStorage(for: ModelShelf.self).readAll() == Self.ordered(model))
        try reopened.close()
    }
}
