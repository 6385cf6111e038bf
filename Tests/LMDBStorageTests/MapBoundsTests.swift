import DAOCore
import DialogGraph
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import LMDBStorage

/// The check of every value the adapter reads against the data file
/// (``MapBounds``, ``LMDBEnvironment/lent(_:_:)``): it must find the map
/// liblmdb made, tell a value in the map from one in a page a write
/// transaction copied into memory, and follow a file that grows after open.
@Suite("LMDB values checked against the map and the file")
struct MapBoundsTests {
    /// Users with biographies of `size` bytes (more than a page: on overflow
    /// pages), named `prefix` and a number.
    func users(_ count: Int, prefix: String, bioSize: (Int) -> Int) -> [UserRecord] {
        (0..<count).map { index in
            UserRecord(
                id: "\(prefix)-\(index)", name: "user \(index) 🚀",
                bio: String(repeating: "bio \(index) of \(prefix); ", count: bioSize(index) / 16 + 1),
                email: index % 3 == 0 ? nil : "u\(index)@\(prefix).example", birthDate: nil,
                gender: index % 2 == 0 ? .female : nil)
        }
    }

    #if os(Linux)
        @Test("the map is found where liblmdb made it: its first bytes are the data file's")
        func mapFound() throws {
            try withStoreDirectory { directory in
                let env = try LMDBEnvironment(directory: directory.store, durability: .none, mapSize: 1 << 20)
                #expect(try env.map.length == UInt(env.mapSize))
                try env.storage(for: UserRecord.self).persist(users(40, prefix: "a", bioSize: { 100 * $0 }))
                let start = try #require(UnsafeRawPointer(bitPattern: env.map.start))
                let file = try Data(contentsOf: directory.store.appendingPathComponent("data.mdb"))
                #expect(Array(UnsafeRawBufferPointer(start: start, count: 2 * 4096)) == Array(file.prefix(2 * 4096)))
            }
        }
    #endif

    @Test("a committed value lies in the map; a value a write transaction just wrote does not, and is not refused")
    func mapOrWrittenPage() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let storage = try env.storage(for: UserRecord.self)
            let stored = users(20, prefix: "b", bioSize: { $0 % 2 == 0 ? 10 : 9000 })
            try storage.persist(stored)
            func inMap(_ value: UnsafeRawBufferPointer) -> Bool {
                UInt(bitPattern: value.baseAddress) &- env.map.start < env.map.length
            }
            for user in stored.prefix(2) {
                let key = KeyCodec.encode(primaryKey: user.id)
                let committed = try env.read(.read) { txn in try txn.withValue(storage.table.main, key, inMap) }
                #if os(Linux)
                    #expect(committed == true, "\(user.id)")
                #endif
                #expect(committed != nil)
                // Written in this transaction: on a page liblmdb copied into
                // memory it allocated, read back through the same check.
                let written = try env.write(.persist) { txn in
                    let fresh = KeyCodec.encode(primaryKey: user.id + "-new")
                    try txn.put(storage.table.main, fresh, [UInt8](repeating: 7, count: user.bio?.utf8.count ?? 1))
                    let found = try txn.withValue(storage.table.main, fresh) { ($0.count, inMap($0)) }
                    try txn.delete(storage.table.main, fresh)
                    return found
                }
                #expect(written?.0 == user.bio?.utf8.count && written?.1 == false, "\(user.id)")
            }
            #expect(try storage.readAll().sorted { $0.id < $1.id } == stored.sorted { $0.id < $1.id })
        }
    }

    @Test("a store that grows after open (the map doubled, the file many times its size) reads back at every durability",
          arguments: Durability.allCases)
    func growingStore(durability: Durability) throws {
        try withStoreDirectory { directory in
            // The smallest map: it doubles (and moves) many times.
            let env = try LMDBEnvironment(directory: directory.store, durability: durability, mapSize: 1 << 16)
            let fileAtOpen = try env.dataFileLength(.open)
            let users = try env.storage(for: UserRecord.self)
            let dialogs = try env.storage(for: DialogRecord.self)
            var expectedUsers: [String: UserRecord] = [:]
            let allDialogs = try dialogRecords(dialogs: 60, messages: 12)
            var persistedDialogs: [DialogRecord] = []
            for round in 0..<6 {
                // New users, large and small, and some of the last round's
                // replaced (their old values read in the write transaction).
                var batch = self.users(25, prefix: "r\(round)", bioSize: { ($0 * 977 + round * 131) % 12_000 })
                if round > 0 {
                    batch += self.users(10, prefix: "r\(round - 1)", bioSize: { ($0 * 313 + round) % 6000 })
                }
                try users.persist(batch)
                for user in batch { expectedUsers[user.id] = user }
                let slice = Array(allDialogs[(round * 10)..<(round * 10 + 10)])
                try dialogs.persist(slice)
                persistedDialogs += slice
                // Every value, read in a read transaction of the grown file.
                #expect(try users.readAll().sorted { $0.id < $1.id } == expectedUsers.values.sorted { $0.id < $1.id }, "round \(round)")
                #expect(try dialogs.readAll().sorted { $0.id < $1.id } == persistedDialogs.sorted { $0.id < $1.id }, "round \(round)")
                #expect(try users.read(primaryKey: "r\(round)-7") == expectedUsers["r\(round)-7"])
            }
            let fileNow = try env.dataFileLength(.read)
            #expect(fileNow > 8 * fileAtOpen, "the file grew from \(fileAtOpen) to \(fileNow) bytes")
            #expect(try env.mapSize > 1 << 16)
            #if os(Linux)
                #expect(try env.map.length == UInt(env.mapSize))
                // The length known was read again as values past it were read.
                #expect(env.valueBounds.knownFileLength > UInt(fileAtOpen))
                #expect(env.valueBounds.knownFileLength <= UInt(fileNow))
            #endif
        }
    }
}
