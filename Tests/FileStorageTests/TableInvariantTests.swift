import DAOCore
@testable import FileStorage
import Foundation
import TestSupport
import Testing

/// The table's layout after every call of a random sequence (persists in
/// and out of key order, erasures from the middle and of the last keys,
/// failed calls, reopening): the map, the holes and the order flag agree
/// with the arrays.
@Suite("File store: table layout invariants")
struct TableInvariantTests {
    static func check<R: Record>(_ store: FileStore, _ type: R.Type, step: Int) throws {
        try store.state.withLock { state in
            let table = try state.table(R.self)
            let layout = table.state
            #expect(layout.records.count == layout.keys.count && layout.keys.count == layout.live.count, "step \(step)")
            #expect(layout.holes == layout.live.filter { !$0 }.count, "step \(step)")
            #expect(layout.positions.count == layout.live.filter { $0 }.count, "step \(step)")
            for (key, position) in layout.positions {
                #expect(layout.live[position] && layout.keys[position] == key, "step \(step)")
                #expect(layout.records[position].primaryKey.storedValue == key, "step \(step)")
            }
            if layout.inKeyOrder {
                for position in layout.keys.indices.dropFirst() {
                    #expect(layout.keys[position - 1] < layout.keys[position], "step \(step): flag says key order")
                }
            }
        }
    }

    @Test(arguments: FileFormat.allCases)
    func invariantsHold(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        var rng = TestRandom(seed: format == .json ? 5 : 6)
        let names = (0..<30).map { "g\($0 * 7 % 30)" }
        var store = try FileStore(directory: scratch.url, format: format, durability: .none)
        for step in 0..<150 {
            let gardens = try store.storage(for: LayoutGarden.self)
            let beds = try store.storage(for: LayoutBed.self)
            switch rng.next() % 6 {
            case 0, 1:
                var batch: [LayoutGarden] = []
                for index in names.indices.shuffled(using: &rng).prefix(Int.random(in: 1...8, using: &rng)) {
                    batch.append(TableLayoutTests.garden(names[index], &rng, base: Int64(index) * 100, format: format))
                }
                try gardens.persist(batch)
            case 2:
                _ = try gardens.erase(primaryKeys: Array(names.shuffled(using: &rng).prefix(Int.random(in: 1...10, using: &rng))))
            case 3:
                let held = try beds.readAll().map(\.id)
                // The highest keys first, or any.
                let chosen = rng.next() % 2 == 0 ? Array(held.sorted().suffix(3)) : Array(held.shuffled(using: &rng).prefix(3))
                _ = try beds.erase(primaryKeys: chosen)
            case 4:
                var batch = names.indices.map { TableLayoutTests.garden(names[$0], &rng, base: Int64($0) * 100, format: format) }
                guard let last = batch.indices.last(where: { !batch[$0].beds.isEmpty }) else { continue }
                batch[last].beds[0].garden = batch[(last + 1) % batch.count].name
                #expect(throws: StorageError.self) { try gardens.persist(batch) }
            default:
                store.close()
                store = try FileStore(directory: scratch.url, format: format, durability: .none)
            }
            try Self.check(store, LayoutGarden.self, step: step)
            try Self.check(store, LayoutBed.self, step: step)
            try Self.check(store, LayoutPlant.self, step: step)
        }
        store.close()
    }
}
