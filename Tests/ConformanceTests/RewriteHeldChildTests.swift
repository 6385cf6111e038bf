import DAOCore
import Foundation
import TestSupport
import Testing

// A parent whose relation holds a child type that names no owner (the one
// relation that holds it owns it), keyed by Int64 with an optional real,
// before and after the general step renames the child.

struct ShelfV1: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var room: String?
    var jars: [JarV1]

    static let entity = Entity<ShelfV1>(
        "rw_shelves", primaryKey: "id", \.id, fields: [Field("room", \.room)],
        relations: [Relation("jars", \.jars, foreignKey: "shelfId", \JarV1.shelfId)])
}

struct JarV1: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var shelfId: String
    var label: String
    var litres: Double?

    static let entity = Entity<JarV1>(
        "rw_jars", primaryKey: "id", \.id,
        fields: [Field("shelfId", \.shelfId), Field("label", \.label), Field("litres", \.litres)])
}

struct ShelfV2: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var room: String?
    var jars: [JarV2]

    static let entity = Entity<ShelfV2>(
        "rw_shelves", primaryKey: "id", \.id, fields: [Field("room", \.room)],
        relations: [Relation("jars", \.jars, foreignKey: "shelfId", \JarV2.shelfId)])
}

/// `JarV1` under a new entity name, its label upper-cased by the step.
struct JarV2: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var shelfId: String
    var label: String
    var litres: Double?

    static let entity = Entity<JarV2>(
        "rw_containers", primaryKey: "id", \.id,
        fields: [Field("shelfId", \.shelfId), Field("label", \.label), Field("litres", \.litres)])
}

@Suite("Conformance: the general step on a child that names no owner")
struct RewriteHeldChildTests {
    let shelves = [
        ShelfV1(
            id: "s1", room: "caf\u{E9}",
            jars: [
                JarV1(id: 1, shelfId: "s1", label: "fl\u{301}our 🌾", litres: 1.5),
                JarV1(id: 2, shelfId: "s1", label: "rice", litres: nil),
            ]),
        ShelfV1(id: "s2", room: nil, jars: []),
    ]

    /// A store of ``shelves`` on `backend`, migrated ("v2") by a general step
    /// that rewrites `rw_jars` as `Jar`, upper-casing every label; closed.
    func storeShelvesAndRewriteJars<Jar: Record>(on backend: TestBackend, to jar: Jar.Type) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        do {
            let store = try backend.open(directory.url)
            try store.anyStorage(for: ShelfV1.self).persist(shelves)
            try store.close()
        }
        var migrator = Migrator()
        migrator.register("v2", [
            .rewrite("rw_jars", to: jar) { row in
                if case .text(let label) = row["label"] { row["label"] = .text(label.uppercased()) }
            }
        ])
        let store = try backend.open(directory.url)
        #expect(try migrator.migrate(store) == ["v2"], "on \(backend.name)")
        try store.close()
        return directory
    }

    @Test("the child keeps its name: its records stay children of their parents", arguments: allBackends)
    func rewrittenHeldChild(backend: TestBackend) throws {
        let directory = try storeShelvesAndRewriteJars(on: backend, to: JarV1.self)
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        var expected = shelves
        for index in expected.indices {
            for jar in expected[index].jars.indices { expected[index].jars[jar].label = expected[index].jars[jar].label.uppercased() }
        }
        let storage = try store.anyStorage(for: ShelfV1.self)
        #expect(try storage.readAll() == expected, "on \(backend.name)")
        #expect(try storage.erase(primaryKey: "s1"), "on \(backend.name)")
        #expect(try store.anyStorage(for: JarV1.self).count() == 0, "erase cascades on \(backend.name)")
    }

    @Test("the parent's relation follows the child's new name", arguments: allBackends)
    func renamedHeldChild(backend: TestBackend) throws {
        let directory = try storeShelvesAndRewriteJars(on: backend, to: JarV2.self)
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        let expected = shelves.map { shelf in
            ShelfV2(
                id: shelf.id, room: shelf.room,
                jars: shelf.jars.map { JarV2(id: $0.id, shelfId: $0.shelfId, label: $0.label.uppercased(), litres: $0.litres) })
        }
        #expect(try store.anyStorage(for: ShelfV2.self).readAll() == expected, "on \(backend.name)")
        #expect(try store.anyStorage(for: JarV2.self).count() == 2, "on \(backend.name)")
    }
}
