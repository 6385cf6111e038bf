import DAOCore
import DAOMacros
import Foundation
import PostgresNIO
import PostgresStorage
import Testing

// Migrations that keep the rows where they are run as ALTER TABLE: the rows'
// versions on the server (`xmin`) are those from before, where a rewrite
// would have inserted every row again.

@StoredRecord("meters", indexes: [Index("meters_by_site", on: ["site"])])
struct MeterV1: Equatable {
    var id: Int64
    var label: String
    var site: String
    var reading: Double
    var note: String?
}

@StoredRecord("meters", indexes: [Index("meters_by_reading", on: ["reading"])])
struct MeterV2: Equatable {
    var id: Int64
    var name: String
    var site: String
    var reading: Double
    var unit: String
}

@StoredRecord("meters")
struct MeterV3: Equatable {
    var id: Int64
    var label: String
    var site: String
    var reading: Int64
    var note: String?
}

@Suite(.enabled(if: Server.url != nil, "DAO_POSTGRES_URL names no server"), .serialized)
struct AlterTableTests {
    /// `(id, xmin)` of every row of `table`, and the names of its indexes.
    func catalogue(_ schema: String, _ table: String) throws -> (versions: [String], indexes: Set<String>) {
        try Server.rawSession { connection in
            var versions: [String] = []
            for row in try connection.query(
                PostgresQuery(unsafeSQL: "SELECT id::text || ':' || xmin::text FROM \"\(schema)\".\"\(table)\" ORDER BY id"),
                logger: Server.logger
            ).wait() {
                versions.append(try row.decode(String.self))
            }
            var indexes = Set<String>()
            for row in try connection.query(
                PostgresQuery(
                    unsafeSQL: "SELECT indexname::text FROM pg_indexes WHERE schemaname = '\(schema)' AND tablename = '\(table)'"),
                logger: Server.logger
            ).wait() {
                indexes.insert(try row.decode(String.self))
            }
            return (versions, indexes)
        }
    }

    @Test("drop, rename, add and drop an index in place; an added field is set by one UPDATE")
    func inPlace() throws {
        let meters = (1...40).map {
            MeterV1(
                id: $0, label: "meter \($0)", site: $0.isMultiple(of: 2) ? "north" : "south",
                reading: Double($0) / 4, note: $0.isMultiple(of: 3) ? "checked" : nil)
        }
        try Server.withStore { database, schema in
            try database.storage(for: MeterV1.self).persist(meters)
            let before = try catalogue(schema, "meters")
            #expect(before.versions.count == 40)
            #expect(before.indexes.contains("_dao_ix_meters_meters_by_site"))

            var migrator = Migrator()
            migrator.register(
                "v2",
                [
                    .dropField("note", from: "meters"),
                    .renameField("label", to: "name", in: "meters"),
                    .dropIndex("meters_by_site", from: "meters"),
                    .addIndex("meters_by_reading", on: ["reading"], to: "meters"),
                ])
            let second = try PostgresStore(try Server.configuration(schema))
            #expect(try migrator.migrate(second) == ["v2"])
            let moved = try catalogue(schema, "meters")
            #expect(moved.versions == before.versions, "the rows were written again")
            #expect(!moved.indexes.contains("_dao_ix_meters_meters_by_site"))
            #expect(moved.indexes.contains("_dao_ix_meters_meters_by_reading"))
            try second.close()

            migrator.register(
                "v3", [.addField("unit", to: "meters", type: .text, optional: false, default: .text("kWh"))])
            let third = try PostgresStore(try Server.configuration(schema))
            #expect(try migrator.migrate(third) == ["v3"])
            let read = try third.storage(for: MeterV2.self).read(sortedBy: [SortDescriptor(\.id)])
            #expect(
                read
                    == meters.map {
                        MeterV2(id: $0.id, name: $0.label, site: $0.site, reading: $0.reading, unit: "kWh")
                    })
            let sites = try third.storage(for: MeterV2.self).count(where: #Predicate { $0.reading > 5 })
            #expect(sites == 20)
            try third.close()
        }
    }

    @Test("a changed type rewrites the table, its rows sent back a batch of rowsPerStatement at a time")
    func rewriteInBatches() throws {
        let meters = (1...10).map {
            MeterV1(
                id: $0, label: "meter \($0)", site: $0.isMultiple(of: 2) ? "north" : "south",
                reading: Double($0) * 2.5, note: $0.isMultiple(of: 3) ? "checked" : nil)
        }
        try Server.withStore { database, schema in
            try database.storage(for: MeterV1.self).persist(meters)
            let before = try catalogue(schema, "meters")
            var migrator = Migrator()
            migrator.register(
                "v3",
                [
                    .rewrite("meters", to: MeterV3.self) { row in
                        guard case .real(let reading) = row["reading"] else { return }
                        row.values["reading"] = .integer(Int64(reading.rounded(.down)))
                    }
                ])
            // 10 rows in statements of 3: three full batches and one of a row.
            var configuration = try Server.configuration(schema)
            configuration.rowsPerStatement = 3
            let migrating = try PostgresStore(configuration)
            #expect(try migrator.migrate(migrating) == ["v3"])
            try migrating.close()
            let after = try catalogue(schema, "meters")
            #expect(after.versions.count == 10)
            #expect(Set(after.versions).isDisjoint(with: before.versions), "the rows were not written again")
            let reopened = try PostgresStore(try Server.configuration(schema))
            let read = try reopened.storage(for: MeterV3.self).read(sortedBy: [SortDescriptor(\.id)])
            #expect(
                read
                    == meters.map {
                        MeterV3(
                            id: $0.id, label: $0.label, site: $0.site, reading: Int64($0.reading.rounded(.down)),
                            note: $0.note)
                    })
            try reopened.close()
        }
    }
}
