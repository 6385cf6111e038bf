import DAOCore
@testable import FileStorage
import Foundation
import TestSupport
import Testing

/// A rolled-back call puts each record it replaced back; the positions it
/// leaves behind are holes that only a commit used to close. Calls that
/// keep failing, with no call succeeding in between, must not make a
/// table's array grow without bound (nor its reads walk every hole).
@Suite("File store: holes left by rolled-back calls")
struct RollbackHolesTests {
    @Test("failed calls in a row leave no more holes than records (past the first 64)", arguments: FileFormat.allCases)
    func failedCallsCloseTheirHoles(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: format, durability: .none)
        let gardens = try store.storage(for: LayoutGarden.self)
        let plants = (0..<40).map { LayoutPlant(code: "p\($0)", bed: 1, height: Double($0), note: nil) }
        let good = LayoutGarden(
            name: "a", owner: nil, beds: [LayoutBed(id: 1, garden: "a", soil: "clay", depth: nil, plants: plants)])
        let other = LayoutGarden(
            name: "b", owner: nil, beds: [LayoutBed(id: 2, garden: "b", soil: "sand", depth: 1, plants: [])])
        try gardens.persist([good, other])
        for attempt in 0..<50 {
            // The first garden's plants are replaced, then the second
            // garden's bed names the first: the call fails and rolls back.
            var changed = good
            for index in changed.beds[0].plants.indices { changed.beds[0].plants[index].height += Double(attempt + 1) }
            var bad = other
            bad.beds[0].garden = "a"
            #expect(throws: StorageError.self) { try gardens.persist([changed, bad]) }
        }
        #expect(try gardens.readAll() == TableLayoutTests.ordered(["a": good, "b": other]))
        let (holes, count) = try store.state.withLock { state in
            let table = try state.table(LayoutPlant.self)
            return (table.state.holes, table.state.count)
        }
        #expect(count == 40)
        #expect(holes <= max(64, count), "\(holes) holes for \(count) records")
    }
}
