import CLMDB
import DAOCore
import DialogGraph
import Foundation
import Testing

@testable import LMDBStorage

/// Ranges read backwards (`Transaction.scan(_:prefix:backwards:_:)`, the
/// cursor placed on the last key of the prefix and stepped with `MDB_PREV`)
/// give the entries a forward scan gives, in the reverse order, whatever
/// the prefix: bytes 0xFF at its end (no successor in its own length), a
/// prefix of the database's last keys, one no key has, the empty one.
@Suite("LMDB ranges read backwards")
struct BackwardScanTests {
    /// Keys of one, two and three bytes around 0x00, 0x7F and 0xFF.
    private static let keys: [[UInt8]] = {
        let bytes: [UInt8] = [0x00, 0x01, 0x7F, 0xFE, 0xFF]
        var keys: [[UInt8]] = bytes.map { [$0] }
        for a in bytes { for b in bytes { keys.append([a, b]) } }
        for a in [UInt8(0x7F), 0xFF] { for b in bytes { for c in bytes { keys.append([a, b, c]) } } }
        return keys
    }()

    private func entries(
        _ txn: borrowing Transaction, _ dbi: MDB_dbi, prefix: [UInt8], backwards: Bool
    ) throws -> [[UInt8]] {
        var found: [[UInt8]] = []
        try txn.scan(dbi, prefix: prefix, backwards: backwards) { key, value in
            #expect([UInt8](value) == [UInt8](key).reversed())
            found.append([UInt8](key))
            return true
        }
        return found
    }

    @Test("every prefix: the forward range reversed")
    func everyPrefix() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let dbi = try #require(try env.database("backward-scan"))
            try env.write(.persist) { txn in
                for key in Self.keys { try txn.put(dbi, key, key.reversed()) }
            }
            var prefixes: [[UInt8]] = [[], [0x02], [0xFF, 0xFF, 0xFF, 0xFF]]
            prefixes += Self.keys
            try env.read(.read) { txn in
                for prefix in prefixes {
                    let forward = try entries(txn, dbi, prefix: prefix, backwards: false)
                    let expected = Self.keys.filter { $0.starts(with: prefix) }.sorted { $0.lexicographicallyPrecedes($1) }
                    #expect(forward == expected, "prefix \(prefix)")
                    let backward = try entries(txn, dbi, prefix: prefix, backwards: true)
                    #expect(backward == expected.reversed(), "prefix \(prefix)")
                }
            }
        }
    }

    @Test("a query that reads its range backwards answers as one that reads it forwards")
    func queryAnswers() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let dialogs = try env.storage(for: DialogRecord.self)
            let messages = try env.storage(for: MessageRecord.self)
            try dialogs.persist(try dialogRecords(dialogs: 6, messages: 40))
            let newestFirst = [SortDescriptor(\MessageRecord.date, order: .reverse)]
            let oldestFirst = [SortDescriptor(\MessageRecord.date)]
            for dialog in Int64(1)...6 {
                let unread = #Predicate<MessageRecord> { $0.dialogId == dialog && !$0.isRead }
                for sort in [newestFirst, oldestFirst] {
                    let all = try messages.read(Query())
                    let expected = SortPlan(sort).sorted(all.filter { $0.dialogId == dialog && !$0.isRead })
                    #expect(!expected.isEmpty)
                    // The first call reads forwards; the later ones in the
                    // direction the first found the asked order in.
                    for _ in 0..<3 {
                        #expect(try messages.read(Query(where: unread, sortedBy: sort)) == expected)
                        #expect(try messages.read(Query(where: unread, sortedBy: sort, limit: 2)) == Array(expected.prefix(2)))
                    }
                    // The messages' dates rise with their keys: newest first
                    // is read backwards from the second call on.
                    let plan = QueryPlan(Query(where: unread, sortedBy: sort), parts: [.accessPath])
                    #expect(plan.prefersDescendingCandidates == (sort == newestFirst))
                }
            }
        }
    }
}
