import DAOCore
import DAOMacros
import Foundation
import PostgresStorage
import TestSupport
import Testing

// The batched writes of the PostgreSQL adapter: a persist call is one
// statement a table per batch of rows, so these tests check what the
// one-upsert-a-record semantics promise with records of a shape of their
// own: a parent holding two relations, one of them three levels deep, with
// text, integer, real, date, bool and byte fields; duplicate keys at every
// level in one call; children moving between parents; calls larger than
// the batch bound; and failures in the middle of a call.

@StoredRecord("bw_shelves", primaryKey: "code")
struct ShelfRecord: Equatable {
    var code: String
    var room: String
    var capacity: Int64?
    @Children(foreignKey: "shelfCode") var boxes: [BoxRecord]
    @Children(foreignKey: "shelfCode") var tags: [TagRecord]
}

@StoredRecord("bw_boxes", ownedBy: ShelfRecord.self)
struct BoxRecord: Equatable {
    var id: Int64
    var shelfCode: String
    var weight: Double
    var sealed: Bool
    var photo: Data?
    @Children(foreignKey: "boxId") var items: [ItemRecord]
}

@StoredRecord("bw_items", ownedBy: BoxRecord.self)
struct ItemRecord: Equatable {
    var id: Int64
    var boxId: Int64
    var name: String
    var added: Date
}

@StoredRecord("bw_tags", primaryKey: "name", ownedBy: ShelfRecord.self)
struct TagRecord: Equatable {
    var name: String
    var shelfCode: String
    var color: String?
}

/// Shelves drawn from few keys at every level, so that one call holds the
/// same shelf several times and the same box, item or tag under several
/// shelves or boxes (a child moving); within one shelf every key is once.
func generatedShelves(count: Int, keys: Int, using generator: inout TestRandom) -> [ShelfRecord] {
    let codes = (0..<keys).map { $0 % 3 == 0 ? "Zo\u{EB}-\($0)" : $0 % 3 == 1 ? "Zoe\u{308}-\($0)" : "s\($0)" }
    return (0..<count).map { _ in
        let code = codes[Int.random(in: 0..<codes.count, using: &generator)]
        var boxIds = Set<Int64>()
        var itemIds = Set<Int64>()
        var boxes: [BoxRecord] = []
        for _ in 0..<Int.random(in: 0...3, using: &generator) {
            let id = Int64.random(in: 0..<Int64(keys * 2), using: &generator)
            guard boxIds.insert(id).inserted else { continue }
            var items: [ItemRecord] = []
            for _ in 0..<Int.random(in: 0...3, using: &generator) {
                let item = Int64.random(in: -Int64(keys * 3)..<Int64(keys * 3), using: &generator)
                guard itemIds.insert(item).inserted else { continue }
                items.append(
                    ItemRecord(
                        id: item, boxId: id, name: "item \(item) \u{0}\(Int.random(in: 0..<100, using: &generator))",
                        added: Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0..<1_000_000, using: &generator)) / 8)))
            }
            let photo: Data? = Bool.random(using: &generator) ? Data((0..<Int.random(in: 0..<6, using: &generator)).map { UInt8($0) }) : nil
            boxes.append(
                BoxRecord(
                    id: id, shelfCode: code, weight: Double(Int.random(in: -50...50, using: &generator)) / 4,
                    sealed: Bool.random(using: &generator), photo: photo, items: items))
        }
        var tagNames = Set<String>()
        var tags: [TagRecord] = []
        for _ in 0..<Int.random(in: 0...2, using: &generator) {
            let name = "t\(Int.random(in: 0..<keys, using: &generator))"
            guard tagNames.insert(name).inserted else { continue }
            tags.append(TagRecord(name: name, shelfCode: code, color: Bool.random(using: &generator) ? "red" : nil))
        }
        return ShelfRecord(
            code: code, room: "room \(Int.random(in: 0..<4, using: &generator))",
            capacity: Bool.random(using: &generator) ? Int64.random(in: -5...5, using: &generator) : nil, boxes: boxes, tags: tags)
    }
}

/// Everything a store holds of the four entities, each read through its own storage.
struct ShelfState: Equatable {
    var shelves: [ShelfRecord]
    var boxes: [BoxRecord]
    var items: [ItemRecord]
    var tags: [TagRecord]

    init(_ database: PostgresStore) throws {
        shelves = try database.storage(for: ShelfRecord.self).readAll()
        boxes = try database.storage(for: BoxRecord.self).readAll()
        items = try database.storage(for: ItemRecord.self).readAll()
        tags = try database.storage(for: TagRecord.self).readAll()
    }
}

struct ProducerFailure: Error {}

@Suite(.enabled(if: Server.url != nil, "DAO_POSTGRES_URL names no server"), .serialized)
struct BatchWriteTests {
    /// Writing records in one call (in batches of `rowsPerStatement` rows)
    /// stores what writing them one call each stores: of duplicate keys the
    /// last wins, at every level; a parent keeps exactly the children it
    /// holds last; a child held by another parent later moves.
    @Test(arguments: [1, 7, 4096])
    func oneCallStoresWhatOneCallPerRecordStores(rowsPerStatement: Int) throws {
        var heldEveryLevel = false
        for seed in 1...3 as ClosedRange<UInt64> {
            var generator = TestRandom(seed: seed &* 7919 &+ UInt64(rowsPerStatement))
            let before = generatedShelves(count: 12, keys: 6, using: &generator)
            let call = generatedShelves(count: 40, keys: 6, using: &generator)
            #expect(Set(call.map(\.code)).count < call.count, "the call holds duplicate keys")
            let expected = try Server.withStore { database, _ in
                let shelves = try database.storage(for: ShelfRecord.self)
                for record in before + call { try shelves.persist([record]) }
                return try ShelfState(database)
            }
            for handingOver in [false, true] {
                let stored = try Server.withStore({ $0.rowsPerStatement = rowsPerStatement }) { database, _ in
                    let shelves = try database.storage(for: ShelfRecord.self)
                    try shelves.persist(before)
                    if handingOver {
                        try shelves.persist(handingOver: { hand in
                            for record in call { try hand(record) }
                        })
                    } else {
                        try shelves.persist(call)
                    }
                    return try ShelfState(database)
                }
                #expect(stored == expected, "seed \(seed), handing over: \(handingOver)")
                heldEveryLevel = heldEveryLevel || (!stored.boxes.isEmpty && !stored.items.isEmpty && !stored.tags.isEmpty)
            }
        }
        #expect(heldEveryLevel, "no seed left rows at every level to compare")
    }

    /// A parent holding two children with one key stores the last of them.
    @Test func aParentHoldingTwoChildrenWithOneKeyStoresTheLast() throws {
        try Server.withStore { database, _ in
            let shelves = try database.storage(for: ShelfRecord.self)
            let first = BoxRecord(id: 1, shelfCode: "a", weight: 1, sealed: false, photo: nil, items: [])
            let second = BoxRecord(
                id: 1, shelfCode: "a", weight: 2, sealed: true, photo: Data([1]),
                items: [ItemRecord(id: 5, boxId: 1, name: "x", added: Date(timeIntervalSinceReferenceDate: 0))])
            try shelves.persist(ShelfRecord(code: "a", room: "r", capacity: nil, boxes: [first, second], tags: []))
            #expect(try shelves.read(primaryKey: "a")?.boxes == [second])
        }
    }

    /// A call of more rows than the bound (4096 by default) is written
    /// whole, and replacing what every parent holds in a call that large
    /// removes the children they no longer hold, at every level.
    @Test func aCallLargerThanTheBoundIsWrittenWhole() throws {
        try Server.withStore { database, _ in
            #expect(database.configuration.rowsPerStatement == 4096)
            let shelves = try database.storage(for: ShelfRecord.self)
            func shelf(_ index: Int, boxes: Int) -> ShelfRecord {
                let code = "shelf \(index)"
                return ShelfRecord(
                    code: code, room: "room \(index % 7)", capacity: Int64(index),
                    boxes: (0..<boxes).map { box in
                        let id = Int64(index * 10 + box)
                        return BoxRecord(
                            id: id, shelfCode: code, weight: Double(index) / 3, sealed: box % 2 == 0, photo: nil,
                            items: (0..<2).map {
                                ItemRecord(id: id * 10 + Int64($0), boxId: id, name: "i\($0)", added: Date(timeIntervalSinceReferenceDate: Double(id)))
                            })
                    },
                    tags: (0..<2).map { TagRecord(name: "\(code) tag \($0)", shelfCode: code, color: nil) })
            }
            // 600 shelves of 1 + 3 boxes + 6 items + 2 tags: 7,200 rows.
            let large = (0..<600).map { shelf($0, boxes: 3) }
            try shelves.persist(large)
            var state = try ShelfState(database)
            // Read back in key order: by the codes' bytes.
            func byKey(_ shelves: [ShelfRecord]) -> [ShelfRecord] {
                shelves.sorted { Array($0.code.utf8).lexicographicallyPrecedes(Array($1.code.utf8)) }
            }
            #expect(state.shelves == byKey(large))
            #expect(state.boxes.count == 1800)
            #expect(state.items.count == 3600)
            #expect(state.tags.count == 1200)
            let fewer = (0..<600).map { shelf($0, boxes: 1) }
            try shelves.persist(fewer)
            state = try ShelfState(database)
            #expect(state.shelves == byKey(fewer))
            #expect(state.boxes.count == 600)
            #expect(state.items.count == 1200)
            #expect(try shelves.read(primaryKeys: ["shelf 599", "shelf 0", "nothing"]) == [fewer[599], fewer[0]])
        }
    }

    /// A call that fails in a later batch, after earlier batches were sent,
    /// writes nothing: a child naming another parent (refused before it is
    /// sent), a child naming no stored owner (refused by the server), and a
    /// producer that throws after handing over several batches.
    @Test func aFailureInTheMiddleOfACallWritesNothing() throws {
        try Server.withStore({ $0.rowsPerStatement = 5 }) { database, _ in
            let shelves = try database.storage(for: ShelfRecord.self)
            let boxes = try database.storage(for: BoxRecord.self)
            var generator = TestRandom(seed: 42)
            try shelves.persist(generatedShelves(count: 10, keys: 8, using: &generator))
            let before = try ShelfState(database)
            #expect(!before.boxes.isEmpty)

            var call = (0..<30).map { index in
                ShelfRecord(
                    code: "new \(index)", room: "r", capacity: nil,
                    boxes: [BoxRecord(id: Int64(1000 + index), shelfCode: "new \(index)", weight: 1, sealed: false, photo: nil, items: [])],
                    tags: [])
            }
            call[22].boxes[0].shelfCode = "new 3"
            do {
                try shelves.persist(call)
                Issue.record("a child naming another parent was written")
            } catch let error as StorageError {
                #expect(error.kind == .constraint)
            }
            #expect(try ShelfState(database) == before)

            var orphans = (0..<30).map { index in
                BoxRecord(id: Int64(2000 + index), shelfCode: before.shelves[index % before.shelves.count].code, weight: 2, sealed: true, photo: nil, items: [])
            }
            orphans[22].shelfCode = "no such shelf"
            do {
                try boxes.persist(orphans)
                Issue.record("a box naming no stored shelf was written")
            } catch let error as StorageError {
                #expect(error.kind == .constraint)
                #expect(error.context == "SQLSTATE 23503")
            }
            #expect(try ShelfState(database) == before)

            #expect(throws: ProducerFailure.self) {
                try shelves.persist(handingOver: { hand in
                    for (index, record) in call.enumerated() where index != 22 {
                        if index == 25 { throw ProducerFailure() }
                        try hand(record)
                    }
                })
            }
            #expect(try ShelfState(database) == before)
        }
    }
}
