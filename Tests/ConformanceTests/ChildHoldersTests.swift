import DAOCore
import Foundation
import TestSupport
import Testing

// One child entity type held by relations of two different parent entity
// types in one store. A child names its parent through one foreign key, so
// the two parents' children could not be told apart: every backend refuses
// the second parent's storage when it is opened, with `schemaMismatch`
// naming both holders and the child, and writes nothing; the first keeps
// working, and reopening with it alone finds its data.

/// A note: held by patients, and (wrongly) by visits and by beds too.
struct HeldNote: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var ownerId: String
    var text: String

    static let entity = Entity<HeldNote>(
        "ch_notes", primaryKey: "id", \.id, fields: [Field("ownerId", \.ownerId), Field("text", \.text)])
}

struct HeldPatient: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var notes: [HeldNote]

    static let entity = Entity<HeldPatient>(
        "ch_patients", primaryKey: "id", \.id, fields: [Field("name", \.name)],
        relations: [Relation("notes", \.notes, foreignKey: "ownerId", \HeldNote.ownerId)])
}

/// Another parent type whose relation holds the patients' notes.
struct HeldVisit: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var day: Int64
    var notes: [HeldNote]

    static let entity = Entity<HeldVisit>(
        "ch_visits", primaryKey: "id", \.id, fields: [Field("day", \.day)],
        relations: [Relation("notes", \.notes, foreignKey: "ownerId", \HeldNote.ownerId)])
}

/// The visits before they held notes (the store a migration starts from).
struct PlainVisit: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var day: Int64

    static let entity = Entity<PlainVisit>("ch_visits", primaryKey: "id", \.id, fields: [Field("day", \.day)])
}

/// Visits holding memos: the entity a migration renames to `ch_notes`.
struct MemoVisit: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var day: Int64
    var memos: [HeldMemo]

    static let entity = Entity<MemoVisit>(
        "ch_visits", primaryKey: "id", \.id, fields: [Field("day", \.day)],
        relations: [Relation("memos", \.memos, foreignKey: "ownerId", \HeldMemo.ownerId)])
}

struct HeldMemo: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var ownerId: String
    var text: String

    static let entity = Entity<HeldMemo>(
        "ch_memos", primaryKey: "id", \.id, fields: [Field("ownerId", \.ownerId), Field("text", \.text)])
}

/// Three levels: wards own beds, which hold notes (the grandchild type
/// patients hold too).
struct HeldWard: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var beds: [HeldBed]

    static let entity = Entity<HeldWard>(
        "ch_wards", primaryKey: "id", \.id, fields: [],
        relations: [Relation("beds", \.beds, foreignKey: "wardId", \HeldBed.wardId)])
}

struct HeldBed: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var wardId: String
    var notes: [HeldNote]

    static let entity = Entity<HeldBed>(
        "ch_beds", primaryKey: "id", \.id, fields: [Field("wardId", \.wardId)],
        relations: [Relation("notes", \.notes, foreignKey: "ownerId", \HeldNote.ownerId)],
        ownedBy: HeldWard.self)
}

/// A child that names its owner (`ownedBy:`): rooms hold items.
struct HeldRoom: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var items: [HeldItem]

    static let entity = Entity<HeldRoom>(
        "ch_rooms", primaryKey: "id", \.id, fields: [],
        relations: [Relation("items", \.items, foreignKey: "roomId", \HeldItem.roomId)])
}

struct HeldItem: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var roomId: String

    static let entity = Entity<HeldItem>(
        "ch_items", primaryKey: "id", \.id, fields: [Field("roomId", \.roomId)], ownedBy: HeldRoom.self)
}

/// Another parent type whose relation holds the rooms' items.
struct HeldCart: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var items: [HeldItem]

    static let entity = Entity<HeldCart>(
        "ch_carts", primaryKey: "id", \.id, fields: [],
        relations: [Relation("items", \.items, foreignKey: "roomId", \HeldItem.roomId)])
}

/// Whether `error` is the refusal of a child held by two parents: a
/// `schemaMismatch` on open whose message names the child and both holders.
func isHolderRefusal(_ error: any Error, child: String, holders: [String]) -> Bool {
    guard let error = error as? StorageError, error.kind == .schemaMismatch, error.operation == .open else {
        return false
    }
    return ([child] + holders).allSatisfy { error.message.contains("'\($0)") }
}

@Suite("Conformance: a child entity held by two parent entity types is refused alike")
struct ChildHoldersTests {
    let patients = [
        HeldPatient(
            id: "p1", name: "Ann",
            notes: [HeldNote(id: 1, ownerId: "p1", text: "first"), HeldNote(id: 2, ownerId: "p1", text: "caf\u{E9}")]),
        HeldPatient(id: "p2", name: "Bob", notes: [HeldNote(id: 3, ownerId: "p2", text: "third")]),
    ]
    let wards = [
        HeldWard(
            id: "w1",
            beds: [
                HeldBed(id: "b1", wardId: "w1", notes: [HeldNote(id: 11, ownerId: "b1", text: "bed note")]),
                HeldBed(id: "b2", wardId: "w1", notes: []),
            ])
    ]

    /// Opens `first`'s storage, stores `records`, then checks that `second`'s
    /// storage is refused naming `child` and both holders, that `first` keeps
    /// working, and, after a close and reopen, that `second` is still refused
    /// (by the recorded schemas) while `first` alone finds its data.
    func refusesSecond<First: Record & Equatable, Second: Record>(
        _ backend: TestBackend, first: First.Type, records: [First], second: Second.Type,
        child: String, holders: [String], added: First
    ) throws {
        let directory = try TemporaryDirectory()
        do {
            let store = try backend.open(directory.url, .full)
            let storage = try store.anyStorage(for: First.self)
            try storage.persist(records)
            #expect { _ = try store.anyStorage(for: Second.self) } throws: {
                isHolderRefusal($0, child: child, holders: holders)
            }
            // The first parent keeps working.
            try storage.persist([added])
            #expect(try storage.readAll() == (records + [added]).sorted { $0.primaryKey < $1.primaryKey })
            try store.close()
        }
        do {
            // The recorded schemas, not this process's state, refuse it now.
            let store = try backend.open(directory.url, .full)
            #expect { _ = try store.anyStorage(for: Second.self) } throws: {
                isHolderRefusal($0, child: child, holders: holders)
            }
            try store.close()
        }
        let store = try backend.open(directory.url, .full)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        #expect(try store.anyStorage(for: First.self).readAll() == (records + [added]).sorted { $0.primaryKey < $1.primaryKey })
    }

    @Test("a second parent type holding the child is refused at open, in either order", arguments: allBackends)
    func twoParents(backend: TestBackend) throws {
        try refusesSecond(
            backend, first: HeldPatient.self, records: patients, second: HeldVisit.self,
            child: "ch_notes", holders: ["ch_patients", "ch_visits"],
            added: HeldPatient(id: "p3", name: "Cy", notes: [HeldNote(id: 4, ownerId: "p3", text: "fourth")]))
        try refusesSecond(
            backend, first: HeldVisit.self,
            records: [HeldVisit(id: "v1", day: 3, notes: [HeldNote(id: 1, ownerId: "v1", text: "visit note")])],
            second: HeldPatient.self, child: "ch_notes", holders: ["ch_patients", "ch_visits"],
            added: HeldVisit(id: "v2", day: 4, notes: []))
    }

    @Test("the child's own storage opened first, then two parents: the second is refused", arguments: allBackends)
    func childFirst(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let notes = try store.anyStorage(for: HeldNote.self)
            let patientStorage = try store.anyStorage(for: HeldPatient.self)
            try patientStorage.persist(patients)
            #expect { _ = try store.anyStorage(for: HeldVisit.self) } throws: {
                isHolderRefusal($0, child: "ch_notes", holders: ["ch_patients", "ch_visits"])
            }
            #expect(try notes.count() == 3)
            #expect(try patientStorage.readAll() == patients)
            try store.close()
        }
    }

    @Test("a grandchild type reused under another parent type is refused, in either order", arguments: allBackends)
    func threeLevels(backend: TestBackend) throws {
        try refusesSecond(
            backend, first: HeldWard.self, records: wards, second: HeldPatient.self,
            child: "ch_notes", holders: ["ch_beds", "ch_patients"],
            added: HeldWard(id: "w2", beds: [HeldBed(id: "b3", wardId: "w2", notes: [])]))
        try refusesSecond(
            backend, first: HeldPatient.self, records: patients, second: HeldWard.self,
            child: "ch_notes", holders: ["ch_beds", "ch_patients"],
            added: HeldPatient(id: "p3", name: "Cy", notes: []))
        // Through the middle entity's own storage too.
        try refusesSecond(
            backend, first: HeldPatient.self, records: patients, second: HeldBed.self,
            child: "ch_notes", holders: ["ch_beds", "ch_patients"],
            added: HeldPatient(id: "p3", name: "Cy", notes: []))
    }

    @Test("a parent type holding a child that names another owner is refused, in either order", arguments: allBackends)
    func namedOwner(backend: TestBackend) throws {
        try refusesSecond(
            backend, first: HeldRoom.self,
            records: [HeldRoom(id: "r1", items: [HeldItem(id: 1, roomId: "r1"), HeldItem(id: 2, roomId: "r1")])],
            second: HeldCart.self, child: "ch_items", holders: ["ch_rooms", "ch_carts"],
            added: HeldRoom(id: "r2", items: [HeldItem(id: 3, roomId: "r2")]))
        // The cart refused first leaves nothing behind: the rooms open after it.
        let directory = try TemporaryDirectory()
        do {
            let store = try backend.open(directory.url, .full)
            #expect { _ = try store.anyStorage(for: HeldCart.self) } throws: {
                isHolderRefusal($0, child: "ch_items", holders: ["ch_rooms", "ch_carts"])
            }
            try store.close()
        }
        let store = try backend.open(directory.url, .full)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        let rooms = try store.anyStorage(for: HeldRoom.self)
        let room = HeldRoom(id: "r1", items: [HeldItem(id: 1, roomId: "r1")])
        try rooms.persist([room])
        #expect(try rooms.readAll() == [room])
    }
}

@Suite("Conformance: a migration that makes a child held by a second parent type is refused alike")
struct ChildHoldersMigrationTests {
    let patients = [
        HeldPatient(
            id: "p1", name: "Ann",
            notes: [HeldNote(id: 1, ownerId: "p1", text: "first"), HeldNote(id: 2, ownerId: "p1", text: "second")])
    ]

    /// A store holding the patients and `seed`'s records; `migration`'s steps
    /// are refused naming both holders, nothing is applied, and the patients
    /// and `seed`'s records read back as stored.
    func refused<Other: Record & Equatable>(
        _ backend: TestBackend, seed other: [Other], _ steps: [MigrationStep]
    ) throws {
        let directory = try TemporaryDirectory()
        do {
            let store = try backend.open(directory.url)
            try store.anyStorage(for: HeldPatient.self).persist(patients)
            try store.anyStorage(for: Other.self).persist(other)
            try store.close()
        }
        var migrator = Migrator()
        migrator.register("v2", steps)
        do {
            let store = try backend.open(directory.url)
            #expect { try migrator.migrate(store) } throws: {
                isHolderRefusal($0, child: "ch_notes", holders: ["ch_patients", "ch_visits"])
            }
            #expect(try Migrator.state(of: store).version == 0, "on \(backend.name)")
            try store.close()
        }
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        #expect(try store.anyStorage(for: HeldPatient.self).readAll() == patients, "on \(backend.name)")
        #expect(try store.anyStorage(for: Other.self).readAll() == other, "on \(backend.name)")
    }

    @Test("the general step giving another parent type a relation to the child", arguments: allBackends)
    func rewriteAddsHolder(backend: TestBackend) throws {
        try refused(backend, seed: [PlainVisit(id: "v1", day: 3)], [.rewrite("ch_visits", to: HeldVisit.self) { _ in }])
    }

    @Test("the lightweight step adding a parent type that holds the child", arguments: allBackends)
    func lightweightAddsHolder(backend: TestBackend) throws {
        try refused(backend, seed: [HeldRoom(id: "r1", items: [])], [.lightweight(to: HeldVisit.self)])
    }

    @Test("the general step renaming another parent's child to the child's name", arguments: allBackends)
    func rewriteRenamesOntoChild(backend: TestBackend) throws {
        let visits = [MemoVisit(id: "v1", day: 3, memos: [HeldMemo(id: 7, ownerId: "v1", text: "memo")])]
        try refused(backend, seed: visits, [.rewrite("ch_memos", to: HeldNote.self) { _ in }])
    }

    @Test("renaming another parent's child to the child's name", arguments: allBackends)
    func renameOntoChild(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let visits = [MemoVisit(id: "v1", day: 3, memos: [HeldMemo(id: 7, ownerId: "v1", text: "memo")])]
        do {
            let store = try backend.open(directory.url)
            try store.anyStorage(for: HeldPatient.self).persist(patients)
            try store.anyStorage(for: MemoVisit.self).persist(visits)
            try store.close()
        }
        var migrator = Migrator()
        migrator.register("v2", [.renameEntity("ch_memos", to: "ch_notes")])
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        #expect { try migrator.migrate(store) } throws: {
            ($0 as? StorageError)?.kind == .schemaMismatch
        }
        #expect(try store.anyStorage(for: HeldPatient.self).readAll() == patients, "on \(backend.name)")
        #expect(try store.anyStorage(for: MemoVisit.self).readAll() == visits, "on \(backend.name)")
    }
}
