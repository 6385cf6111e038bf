import CSQLite
import DAOCore
import Foundation
@testable import SQLiteStorage
import Testing
import TestSupport

// Three levels keyed by Strings and an Int64, with optionals and composite
// indexes, whose entities declare the same index names: a port's `by_name`,
// a berth's `by_name` (composite, leading with its foreign key), a mooring's
// `by_name` and `By_Name` (names that differ in case only).

struct IndexedPort: Record, Equatable {
    typealias PrimaryKey = String
    var code: String
    var name: String
    var country: String?
    var berths: [IndexedBerth]

    static let entity = Entity<IndexedPort>(
        "ix_ports", primaryKey: "code", \.code,
        fields: [Field("name", \.name), Field("country", \.country)],
        indexes: [Index("by_name", on: ["name"])],
        relations: [Relation("berths", \.berths, foreignKey: "portCode", \IndexedBerth.portCode)])
}

struct IndexedBerth: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var portCode: String
    var label: String
    var depth: Double?
    var moorings: [IndexedMooring]

    static let entity = Entity<IndexedBerth>(
        "ix_berths", primaryKey: "id", \.id,
        fields: [Field("portCode", \.portCode), Field("label", \.label), Field("depth", \.depth)],
        indexes: [Index("by_name", on: ["portCode", "label"])],
        relations: [Relation("moorings", \.moorings, foreignKey: "berthId", \IndexedMooring.berthId)],
        ownedBy: IndexedPort.self)
}

struct IndexedMooring: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var berthId: String
    var vessel: String?
    var since: Date?

    static let entity = Entity<IndexedMooring>(
        "ix_moorings", primaryKey: "id", \.id,
        fields: [Field("berthId", \.berthId), Field("vessel", \.vessel), Field("since", \.since)],
        indexes: [Index("by_name", on: ["vessel", "since"]), Index("By_Name", on: ["since"])],
        ownedBy: IndexedBerth.self)
}

/// Two entities whose names are one text, in NFC and in NFD (two tables to SQLite).
struct ComposedLog: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var day: Int64?
    static let entity = Entity<ComposedLog>(
        "caf\u{E9}_log", primaryKey: "id", \.id, fields: [Field("day", \.day)], indexes: [Index("by_day", on: ["day"])])
}

struct DecomposedLog: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var day: Int64?
    static let entity = Entity<DecomposedLog>(
        "cafe\u{301}_log", primaryKey: "id", \.id, fields: [Field("day", \.day)], indexes: [Index("by_day", on: ["day"])])
}

/// `ComposedLog` renamed.
struct RenamedLog: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var day: Int64?
    static let entity = Entity<RenamedLog>(
        "ix_logs", primaryKey: "id", \.id, fields: [Field("day", \.day)], indexes: [Index("by_day", on: ["day"])])
}

@Suite("SQLite index names are derived per table")
struct IndexNameTests {
    let ports = [
        IndexedPort(
            code: "p1", name: "Hamburg", country: "DE",
            berths: [
                IndexedBerth(
                    id: "b1", portCode: "p1", label: "north", depth: 12.5,
                    moorings: [
                        IndexedMooring(id: 1, berthId: "b1", vessel: "Aurora", since: Date(timeIntervalSinceReferenceDate: 10)),
                        IndexedMooring(id: 2, berthId: "b1", vessel: nil, since: nil),
                    ]),
                IndexedBerth(id: "b2", portCode: "p1", label: "s\u{FC}d \u{1F6A2}", depth: nil, moorings: []),
            ]),
        IndexedPort(code: "p2", name: "Porto", country: nil, berths: []),
    ]

    /// The column lists of `table`'s indexes (made by `CREATE INDEX`), by index name.
    func indexes(of table: String, in path: String) throws -> [String: [String]] {
        let connection = try Connection(path: path, flags: SQLITE_OPEN_READONLY)
        let names = try IndexSet.indexes(of: table, connection)
        var result: [String: [String]] = [:]
        for name in names {
            let statement = try Statement(db: connection.handle, sql: "PRAGMA index_info(\(quoted(name)))", persistent: false)
            var columns: [String] = []
            while try statement.step() { columns.append(statement.text(2) ?? "") }
            result[name] = columns
        }
        return result
    }

    func columnLists(of table: String, in path: String) throws -> Set<[String]> {
        Set(try indexes(of: table, in: path).values)
    }

    @Test("entities that declare one index name each get their index; case-only different names are two indexes")
    func sameNameOnSeveralEntities() throws {
        try withDatabase { database in
            let storage = try database.storage(for: IndexedPort.self)
            try storage.persist(ports)
            let path = database.location.path(percentEncoded: false)
            #expect(try columnLists(of: "ix_ports", in: path) == [["name"]])
            #expect(try columnLists(of: "ix_berths", in: path) == [["portCode", "label"]])
            #expect(try columnLists(of: "ix_moorings", in: path) == [["vessel", "since"], ["since"], ["berthId"]])
            #expect(try storage.readAll() == ports)
            let moorings = try database.storage(for: IndexedMooring.self)
            #expect(try moorings.read(where: #Predicate { $0.vessel == "Aurora" }).map(\.id) == [1])
        }
    }

    @Test("opening an owned entity's storage on its own keeps the index on its foreign key")
    func ownedEntityOpenedOnItsOwn() throws {
        // Its parent's storage first, then its own, then the other way round.
        try withDatabase { database in
            try database.storage(for: IndexedPort.self).persist(ports)
            let path = database.location.path(percentEncoded: false)
            #expect(try columnLists(of: "ix_moorings", in: path) == [["vessel", "since"], ["since"], ["berthId"]])
            let moorings = try database.storage(for: IndexedMooring.self)
            #expect(try columnLists(of: "ix_moorings", in: path) == [["vessel", "since"], ["since"], ["berthId"]])
            #expect(try moorings.read(where: #Predicate { $0.vessel == "Aurora" }).map(\.id) == [1])
        }
        try withDatabase { database in
            _ = try database.storage(for: IndexedMooring.self)
            let path = database.location.path(percentEncoded: false)
            #expect(try columnLists(of: "ix_moorings", in: path) == [["vessel", "since"], ["since"], ["berthId"]])
        }
    }

    @Test("entities named in NFC and in NFD each get their index")
    func normalizationForms() throws {
        try withDatabase { database in
            try database.storage(for: ComposedLog.self).persist([ComposedLog(id: 1, day: 3)])
            try database.storage(for: DecomposedLog.self).persist([DecomposedLog(id: 1, day: nil)])
            let path = database.location.path(percentEncoded: false)
            #expect(try columnLists(of: "caf\u{E9}_log", in: path) == [["day"]])
            #expect(try columnLists(of: "cafe\u{301}_log", in: path) == [["day"]])
            #expect(try database.storage(for: DecomposedLog.self).readAll() == [DecomposedLog(id: 1, day: nil)])
        }
    }

    @Test("a migration that drops one entity's index leaves the index of that name of another entity")
    func dropIndexOfOneEntity() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            let path = url.path(percentEncoded: false)
            do {
                let database = try SQLiteDatabase(path: url)
                try database.storage(for: IndexedPort.self).persist(ports)
                try database.close()
            }
            var migrator = Migrator()
            migrator.register("drop", [.dropIndex("by_name", from: "ix_berths")])
            do {
                let database = try SQLiteDatabase(path: url)
                #expect(try migrator.migrate(database) == ["drop"])
                try database.close()
            }
            // Before any storage is opened again (which would recreate a lost index).
            #expect(try columnLists(of: "ix_ports", in: path) == [["name"]])
            #expect(try columnLists(of: "ix_berths", in: path) == [["portCode"]])
            #expect(try columnLists(of: "ix_moorings", in: path) == [["vessel", "since"], ["since"], ["berthId"]])
            let connection = try Connection(path: path, flags: SQLITE_OPEN_READONLY)
            #expect(try connection.scalarInt(#"SELECT count(*) FROM "ix_berths""#) == 2)
        }
    }

    @Test("renaming an entity renames its indexes; a new entity takes the old name and its index names")
    func renameEntity() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            let path = url.path(percentEncoded: false)
            do {
                let database = try SQLiteDatabase(path: url)
                try database.storage(for: ComposedLog.self).persist([ComposedLog(id: 7, day: 1)])
                try database.close()
            }
            var migrator = Migrator()
            migrator.register("rename", [.renameEntity("caf\u{E9}_log", to: "ix_logs")])
            do {
                let database = try SQLiteDatabase(path: url)
                #expect(try migrator.migrate(database) == ["rename"])
                try database.close()
            }
            #expect(try indexes(of: "ix_logs", in: path) == [IndexNames.declared(table: "ix_logs", index: "by_day"): ["day"]])
            let database = try SQLiteDatabase(path: url)
            #expect(try database.storage(for: RenamedLog.self).readAll() == [RenamedLog(id: 7, day: 1)])
            // The old name is free: a new entity, with its index.
            #expect(try database.storage(for: ComposedLog.self).count() == 0)
            try database.close()
            #expect(
                try indexes(of: "caf\u{E9}_log", in: path) == [IndexNames.declared(table: "caf\u{E9}_log", index: "by_day"): ["day"]])
            #expect(try indexes(of: "ix_logs", in: path) == [IndexNames.declared(table: "ix_logs", index: "by_day"): ["day"]])
        }
    }

    /// A store as written before index names were derived per table: each
    /// index under its declared name (the first entity to declare one got
    /// it) and the foreign-key index under `<table>_by_<column>`, plus an index
    /// the store did not make.
    func legacyStore(_ url: URL) throws {
        let database = try SQLiteDatabase(path: url)
        try database.storage(for: IndexedPort.self).persist(ports)
        try database.close()
        let connection = try Connection(path: url.path(percentEncoded: false), flags: SQLITE_OPEN_READWRITE)
        for table in ["ix_ports", "ix_berths", "ix_moorings"] {
            for name in try IndexSet.indexes(of: table, connection) {
                try connection.execute("DROP INDEX \(quoted(name))")
            }
        }
        try connection.execute(#"CREATE INDEX "by_name" ON "ix_ports" ("name")"#)
        try connection.execute(#"CREATE INDEX "ix_moorings_by_berthId" ON "ix_moorings" ("berthId")"#)
        try connection.execute(#"CREATE INDEX "own_vessel" ON "ix_moorings" ("vessel")"#)
        try connection.close()
    }

    @Test("a store whose indexes have the former global names gets the derived names on open, and keeps other indexes")
    func legacyNamesOnOpen() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            let path = url.path(percentEncoded: false)
            try legacyStore(url)
            let database = try SQLiteDatabase(path: url)
            let storage = try database.storage(for: IndexedPort.self)
            #expect(try storage.readAll() == ports)
            try database.close()
            let expected: [String: [String]] = [
                IndexNames.declared(table: "ix_moorings", index: "by_name"): ["vessel", "since"],
                IndexNames.declared(table: "ix_moorings", index: "By_Name"): ["since"],
                IndexNames.foreignKey(table: "ix_moorings"): ["berthId"],
                "own_vessel": ["vessel"],
            ]
            #expect(try indexes(of: "ix_moorings", in: path) == expected)
            #expect(try indexes(of: "ix_ports", in: path) == [IndexNames.declared(table: "ix_ports", index: "by_name"): ["name"]])
            #expect(
                try indexes(of: "ix_berths", in: path)
                    == [IndexNames.declared(table: "ix_berths", index: "by_name"): ["portCode", "label"]])
        }
    }

    @Test("an index of the client's own whose name starts like the adapter's stays through open and migration")
    func clientIndexUnderTheAdapterPrefix() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            let path = url.path(percentEncoded: false)
            do {
                let database = try SQLiteDatabase(path: url)
                try database.storage(for: IndexedPort.self).persist(ports)
                try database.close()
            }
            let connection = try Connection(path: path, flags: SQLITE_OPEN_READWRITE)
            try connection.execute(#"CREATE INDEX "_dao_own_vessel" ON "ix_moorings" ("vessel")"#)
            try connection.close()
            do {
                let database = try SQLiteDatabase(path: url)
                #expect(try database.storage(for: IndexedPort.self).readAll() == ports)
                try database.close()
            }
            #expect(try indexes(of: "ix_moorings", in: path)["_dao_own_vessel"] == ["vessel"], "after open")
            do {
                let database = try SQLiteDatabase(path: url)
                var migrator = Migrator()
                migrator.register("v2", [.addIndex("by_since", on: ["since"], to: "ix_moorings")])
                #expect(try migrator.migrate(database) == ["v2"])
                try database.close()
            }
            #expect(try indexes(of: "ix_moorings", in: path)["_dao_own_vessel"] == ["vessel"], "after a migration")
        }
    }

    @Test("an index of the client's own under a declared index's name or the former foreign-key name stays")
    func clientIndexUnderAFormerName() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            let path = url.path(percentEncoded: false)
            do {
                let database = try SQLiteDatabase(path: url)
                try database.storage(for: IndexedPort.self).persist(ports)
                try database.close()
            }
            // The store's indexes have the derived names; the client adds its
            // own under the names the adapter used before, one of them of the
            // very shape the adapter gave it then.
            let connection = try Connection(path: path, flags: SQLITE_OPEN_READWRITE)
            try connection.execute(#"CREATE INDEX "by_name" ON "ix_ports" ("country")"#)
            try connection.execute(#"CREATE INDEX "ix_moorings_by_berthId" ON "ix_moorings" ("berthId")"#)
            try connection.close()
            do {
                let database = try SQLiteDatabase(path: url)
                #expect(try database.storage(for: IndexedPort.self).readAll() == ports)
                try database.close()
            }
            #expect(try indexes(of: "ix_ports", in: path)["by_name"] == ["country"], "after open")
            #expect(try indexes(of: "ix_moorings", in: path)["ix_moorings_by_berthId"] == ["berthId"], "after open")
            do {
                let database = try SQLiteDatabase(path: url)
                var migrator = Migrator()
                migrator.register("v2", [
                    .addIndex("by_since", on: ["since"], to: "ix_moorings"),
                    .dropIndex("by_name", from: "ix_ports"),
                ])
                #expect(try migrator.migrate(database) == ["v2"])
                try database.close()
            }
            #expect(try indexes(of: "ix_ports", in: path) == ["by_name": ["country"]], "after a migration")
            #expect(try indexes(of: "ix_moorings", in: path)["ix_moorings_by_berthId"] == ["berthId"], "after a migration")
        }
    }

    @Test("in a store with the former names, an index under a declared name that the adapter did not make stays")
    func clientIndexInALegacyStore() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            let path = url.path(percentEncoded: false)
            try legacyStore(url)
            // The former adapter found the name taken and made no index: the
            // one there is the client's (unique, over other columns).
            let connection = try Connection(path: path, flags: SQLITE_OPEN_READWRITE)
            try connection.execute(#"DROP INDEX "by_name""#)
            try connection.execute(#"CREATE UNIQUE INDEX "by_name" ON "ix_ports" ("name", "country")"#)
            try connection.close()
            let database = try SQLiteDatabase(path: url)
            #expect(try database.storage(for: IndexedPort.self).readAll() == ports)
            try database.close()
            #expect(
                try indexes(of: "ix_ports", in: path) == [
                    "by_name": ["name", "country"], IndexNames.declared(table: "ix_ports", index: "by_name"): ["name"],
                ])
            // The former foreign-key index, the adapter's, got its derived name.
            #expect(try indexes(of: "ix_moorings", in: path)[IndexNames.foreignKey(table: "ix_moorings")] == ["berthId"])
            #expect(try indexes(of: "ix_moorings", in: path)["ix_moorings_by_berthId"] == nil)
        }
    }

    @Test("a migration of a store with the former names drops only its own entity's index")
    func legacyNamesInMigration() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            let path = url.path(percentEncoded: false)
            try legacyStore(url)
            var migrator = Migrator()
            migrator.register("drop", [.dropIndex("by_name", from: "ix_berths")])
            let database = try SQLiteDatabase(path: url)
            #expect(try migrator.migrate(database) == ["drop"])
            try database.close()
            #expect(try indexes(of: "ix_ports", in: path) == ["by_name": ["name"]])
            #expect(try indexes(of: "ix_berths", in: path) == [IndexNames.foreignKey(table: "ix_berths"): ["portCode"]])
        }
    }

    @Test("derived names never coincide: case, separators, NFC and NFD")
    func derivedNamesAreDistinct() {
        let pairs = [
            ("a", "b__c"), ("a__b", "c"), ("a_", "_b"), ("a", "_b"), ("A", "b"), ("a", "b"), ("a", "B"),
            ("caf\u{E9}", "x"), ("cafe\u{301}", "x"), ("t", ""), ("", "t"), ("t\u{0}", "x"), ("t", "\u{0}x"),
        ]
        var seen: [String: (String, String)] = [:]
        for (table, index) in pairs {
            let name = IndexNames.declared(table: table, index: index).lowercased()
            #expect(seen[name] == nil, "\(table)/\(index) and \(String(describing: seen[name])) share \(name)")
            seen[name] = (table, index)
            #expect(name.utf8.allSatisfy { $0 == UInt8(ascii: "_") || ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) })
        }
    }
}
