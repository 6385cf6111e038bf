import DAOCore
import Foundation
import Testing
import TestSupport

// One record shape (a String key, an optional real) under names that every
// backend must refuse alike, and a name every backend must accept.

protocol NamedThing: Record, Equatable where PrimaryKey == String {}

struct EmptyNamedThing: NamedThing {
    var id: String
    var weight: Double?
    static let entity = Entity<EmptyNamedThing>("", primaryKey: "id", \.id, fields: [Field("weight", \.weight)])
}

struct HashNamedThing: NamedThing {
    var id: String
    var weight: Double?
    static let entity = Entity<HashNamedThing>("things#1", primaryKey: "id", \.id, fields: [Field("weight", \.weight)])
}

struct UnderscoreNamedThing: NamedThing {
    var id: String
    var weight: Double?
    static let entity = Entity<UnderscoreNamedThing>("__things", primaryKey: "id", \.id, fields: [Field("weight", \.weight)])
}

struct SQLiteNamedThing: NamedThing {
    var id: String
    var weight: Double?
    static let entity = Entity<SQLiteNamedThing>("SQLite_things", primaryKey: "id", \.id, fields: [Field("weight", \.weight)])
}

struct DAONamedThing: NamedThing {
    var id: String
    var weight: Double?
    static let entity = Entity<DAONamedThing>("_Dao_metadata", primaryKey: "id", \.id, fields: [Field("weight", \.weight)])
}

struct NULNamedThing: NamedThing {
    var id: String
    var weight: Double?
    static let entity = Entity<NULNamedThing>("things\u{0}2", primaryKey: "id", \.id, fields: [Field("weight", \.weight)])
}

/// A name every backend takes: mixed case, `-`, a space, a non-ASCII letter and an emoji.
struct WellNamedThing: NamedThing {
    var id: String
    var weight: Double?
    static let entity = Entity<WellNamedThing>("Well named-Thing \u{E9}\u{1F680}", primaryKey: "id", \.id, fields: [Field("weight", \.weight)])
}

/// A parent with a fine name whose child's name is refused: opening the parent is refused.
struct ParentOfBadlyNamed: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var children: [BadlyNamedChild]
    static let entity = Entity<ParentOfBadlyNamed>(
        "named_parents", primaryKey: "id", \.id, fields: [],
        relations: [Relation("children", \.children, foreignKey: "parentId", \BadlyNamedChild.parentId)])
}

struct BadlyNamedChild: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var parentId: String
    var note: String?
    static let entity = Entity<BadlyNamedChild>(
        "sqlite_children", primaryKey: "id", \.id, fields: [Field("parentId", \.parentId), Field("note", \.note)],
        ownedBy: ParentOfBadlyNamed.self)
}

@Suite("Conformance: every backend refuses the same entity names, with the same error")
struct EntityNameTests {
    static let refused: [any NamedThing.Type] = [
        EmptyNamedThing.self, HashNamedThing.self, UnderscoreNamedThing.self, SQLiteNamedThing.self,
        DAONamedThing.self, NULNamedThing.self,
    ]

    func open<R: Record>(_ type: R.Type, _ store: any MigratableStore) throws {
        _ = try store.anyStorage(for: type)
    }

    @Test("declaring a record type with a reserved or empty name fails with schemaMismatch", arguments: allBackends)
    func declaration(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        for type in Self.refused {
            let error = expectStorageError { try open(type, store) }
            #expect(error?.kind == .schemaMismatch, "\(backend.name): '\(type.entityName)' gave \(String(describing: error))")
            #expect(error?.entity == type.entityName, "\(backend.name): \(String(describing: error))")
        }
        let error = expectStorageError { try open(ParentOfBadlyNamed.self, store) }
        #expect(error?.kind == .schemaMismatch, "\(backend.name): \(String(describing: error))")
        #expect(error?.entity == "sqlite_children", "\(backend.name): \(String(describing: error))")
        let well = try store.anyStorage(for: WellNamedThing.self)
        try well.persist([WellNamedThing(id: "a", weight: 0.5), WellNamedThing(id: "b", weight: nil)])
        #expect(try well.readAll() == [WellNamedThing(id: "a", weight: 0.5), WellNamedThing(id: "b", weight: nil)])
    }

    @Test("a migration that renames an entity to a refused name fails with schemaMismatch and changes nothing",
          arguments: allBackends)
    func migration(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let records = [WellNamedThing(id: "a", weight: 0.25), WellNamedThing(id: "\u{1F680}", weight: nil)]
        do {
            let store = try backend.open(directory.url)
            try store.anyStorage(for: WellNamedThing.self).persist(records)
            try store.close()
        }
        for type in Self.refused {
            var migrator = Migrator()
            migrator.register("rename", [.renameEntity(WellNamedThing.entityName, to: type.entityName)])
            let store = try backend.open(directory.url)
            let error = expectStorageError { _ = try migrator.migrate(store) }
            #expect(error?.kind == .schemaMismatch, "\(backend.name): '\(type.entityName)' gave \(String(describing: error))")
            try store.close()
        }
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        #expect(try Migrator.state(of: store).applied == [])
        #expect(try store.anyStorage(for: WellNamedThing.self).readAll().map(\.id) == records.map(\.id))
    }
}
