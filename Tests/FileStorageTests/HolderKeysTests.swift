import DAOCore
@testable import FileStorage
import Foundation
import TestSupport
import Testing

// A child type that names no owner (`HkTag`, held by `HkRack.tags`), written
// through its own storage while its holder's storage is not opened: the store
// checks each tag's rack among the keys of the racks' document and deltas,
// decoded once per version of those files, not at each call.

struct HkRack: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var label: String
    var tags: [HkTag]

    static let entity = Entity<HkRack>(
        "hk_racks", primaryKey: "id", \.id, fields: [Field("label", \.label)],
        relations: [Relation("tags", \.tags, foreignKey: "rackId", \HkTag.rackId)])
}

/// Held by ``HkRack/tags``; names no owner.
struct HkTag: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var rackId: String

    static let entity = Entity<HkTag>("hk_tags", primaryKey: "id", \.id, fields: [Field("rackId", \.rackId)])
}

@Suite("File stores: the holder's keys of a child type that names no owner")
struct HolderKeysTests {
    func rack(_ number: Int) -> HkRack { HkRack(id: "r\(number)", label: "rack \(number)", tags: []) }

    func decodes(_ store: FileStore) -> Int { store.state.withLock { $0.keyDecodes } }

    func refusal(_ body: () throws -> Void) -> StorageError.Kind? {
        do {
            try body()
            return nil
        } catch let error as StorageError {
            return error.kind
        } catch {
            return .engine
        }
    }

    @Test("decoded once while they do not change, and right after other stores and storages write them", arguments: FileFormat.allCases)
    func decodedOnce(format: FileFormat) throws {
        let directory = try TemporaryDirectory()
        // The racks written by another store: a document, then two deltas
        // (one adds a rack, one erases one).
        do {
            let store = try FileStore(directory: directory.url, format: format, durability: .none)
            let racks = try store.storage(for: HkRack.self)
            try racks.persist((1...40).map(rack))
            try racks.persist(rack(41))
            #expect(try racks.erase(primaryKey: "r40"))
            store.close()
        }
        do {
            let store = try FileStore(directory: directory.url, format: format, durability: .none)
            let tags = try store.storage(for: HkTag.self)
            try tags.persist(HkTag(id: 1, rackId: "r1"))
            let first = decodes(store)
            #expect(first > 0)
            // Each persist commits (a new manifest generation) but leaves the
            // racks' files as they were: decoded no more.
            for id in 2...30 { try tags.persist(HkTag(id: Int64(id), rackId: "r\(id)")) }
            try tags.persist(HkTag(id: 41, rackId: "r41"))
            #expect(refusal { try tags.persist(HkTag(id: 40, rackId: "r40")) } == .constraint)
            #expect(refusal { try tags.persist(HkTag(id: 99, rackId: "r99")) } == .constraint)
            #expect(decodes(store) == first)
            // Another storage of the store writes the racks.
            let racks = try store.storage(for: HkRack.self)
            try racks.persist(rack(99))
            #expect(try racks.erase(primaryKey: "r2"))
            try tags.persist(HkTag(id: 99, rackId: "r99"))
            #expect(refusal { try tags.persist(HkTag(id: 2, rackId: "r2")) } == .constraint)
            store.close()
        }
        // Another store writes the racks, as another process would.
        do {
            let store = try FileStore(directory: directory.url, format: format, durability: .none)
            let racks = try store.storage(for: HkRack.self)
            try racks.persist(rack(100))
            #expect(try racks.erase(primaryKey: "r3"))
            store.close()
        }
        do {
            let store = try FileStore(directory: directory.url, format: format, durability: .none)
            let tags = try store.storage(for: HkTag.self)
            try tags.persist(HkTag(id: 100, rackId: "r100"))
            let first = decodes(store)
            #expect(refusal { try tags.persist(HkTag(id: 3, rackId: "r3")) } == .constraint)
            #expect(refusal { try tags.persist(HkTag(id: 2, rackId: "r2")) } == .constraint)
            try tags.persist(HkTag(id: 101, rackId: "r99"))
            try tags.persist(HkTag(id: 102, rackId: "r41"))
            #expect(decodes(store) == first)
            #expect(try tags.readAll().map(\.id) == [1] + Array(4...30) + [41, 99, 100, 101, 102])
            store.close()
        }
    }
}
