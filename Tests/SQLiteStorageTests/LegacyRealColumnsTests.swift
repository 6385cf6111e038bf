import CSQLite
import DAOCore
import DialogGraph
import Foundation
@testable import SQLiteStorage
import TestSupport
import Testing

// A store written before reals were kept bit for bit declared the column of a
// real or date field `REAL` (a column of REAL affinity stores an integral
// real as an integer and gives back 0.0 for -0.0). Opening a storage rebuilds
// such a table with columns without a type; nothing is lost or reordered.

/// A parent with reals of its own, whose children's foreign key names it: its
/// rebuild must not cascade into them.
private struct Station: Record, Equatable {
    typealias PrimaryKey = String
    var code: String
    var altitude: Double
    var opened: Date?
    var samples: [Sample]
    static let entity = Entity<Station>(
        "legacy_stations", primaryKey: "code", \.code, fields: [Field("altitude", \.altitude), Field("opened", \.opened)],
        relations: [Relation("samples", \.samples, foreignKey: "stationCode", \Sample.stationCode)])
}

private struct Sample: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var stationCode: String
    var value: Double
    var weight: Float?
    static let entity = Entity<Sample>(
        "legacy_samples", primaryKey: "id", \.id,
        fields: [Field("stationCode", \.stationCode), Field("value", \.value), Field("weight", \.weight)],
        indexes: [Index("legacy_samples_by_value", on: ["value"])],
        ownedBy: Station.self)
}

@Suite("SQLite: tables whose real columns are declared REAL")
struct LegacyRealColumnsTests {
    /// The reals of the old layout: integral ones (stored as integers by REAL
    /// affinity), fractions, extremes, and ones that compare equal.
    static let reals: [Double] = [0, 1, -1, 2.5, 1e300, -.infinity, .infinity, .leastNonzeroMagnitude, 9_007_199_254_740_992, 3]

    private func stations() -> [Station] {
        (0..<6).map { index in
            Station(
                code: "s\(index)", altitude: Self.reals[index % Self.reals.count],
                opened: index % 2 == 0 ? nil : Date(timeIntervalSinceReferenceDate: Self.reals[(index + 3) % Self.reals.count]),
                samples: (0..<4).map { sample in
                    let id = Int64(index * 10 + sample)
                    return Sample(
                        id: id, stationCode: "s\(index)", value: Self.reals[Int(id) % Self.reals.count],
                        weight: sample % 3 == 0 ? nil : Float(Self.reals[(Int(id) + 1) % Self.reals.count]))
                })
        }
    }

    /// Rewrites the tables of a store as the library wrote them before: every
    /// column of a real or date field declared `REAL`, the rows copied into it
    /// (so that REAL affinity stores them as it did), the indexes made again.
    private func declareRealsReal(_ url: URL, tables: [(name: String, reals: [String])]) throws {
        let connection = try Connection(path: url.path(percentEncoded: false), flags: SQLITE_OPEN_READWRITE)
        try connection.execute("PRAGMA foreign_keys = OFF")
        try connection.execute("BEGIN IMMEDIATE")
        for table in tables {
            var sql = try #require(try connection.scalarText("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = '\(table.name)'"))
            let indexes = try connection.oneOffStatement(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = '\(table.name)' AND sql IS NOT NULL")
            var indexSQL: [String] = []
            while try indexes.step() { indexSQL.append(indexes.text(0) ?? "") }
            for column in table.reals {
                let before = sql
                for end in [" NOT NULL", ",", ")"] {
                    sql = sql.replacingOccurrences(of: "\"\(column)\"\(end)", with: "\"\(column)\" REAL\(end)")
                }
                #expect(sql != before, "\(table.name).\(column) declared without a type")
            }
            sql = sql.replacingOccurrences(of: "CREATE TABLE \"\(table.name)\"", with: "CREATE TABLE \"\(table.name)__old\"")
            try connection.execute(sql)
            try connection.execute("INSERT INTO \"\(table.name)__old\" SELECT * FROM \"\(table.name)\"")
            try connection.execute("DROP TABLE \"\(table.name)\"")
            try connection.execute("ALTER TABLE \"\(table.name)__old\" RENAME TO \"\(table.name)\"")
            for index in indexSQL { try connection.execute(index) }
        }
        try connection.execute("COMMIT")
        try connection.close()
    }

    /// Each column's declared type, by table.
    private func columnTypes(_ url: URL, _ table: String) throws -> [String: String] {
        let connection = try Connection(path: url.path(percentEncoded: false), flags: SQLITE_OPEN_READONLY)
        let statement = try connection.oneOffStatement("PRAGMA table_info(\"\(table)\")")
        var types: [String: String] = [:]
        while try statement.step() { types[statement.text(1) ?? ""] = statement.text(2) ?? "" }
        return types
    }

    /// The indexes of a table and the foreign keys it holds.
    private func indexesAndForeignKeys(_ url: URL, _ table: String) throws -> [String] {
        let connection = try Connection(path: url.path(percentEncoded: false), flags: SQLITE_OPEN_READONLY)
        var found: [String] = []
        let indexes = try connection.oneOffStatement(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = '\(table)' ORDER BY name")
        while try indexes.step() { found.append("index \(indexes.text(0) ?? ""): \(indexes.text(1) ?? "")") }
        let keys = try connection.oneOffStatement("PRAGMA foreign_key_list(\"\(table)\")")
        while try keys.step() { found.append("foreign key \(keys.text(3) ?? "") → \(keys.text(2) ?? "").\(keys.text(4) ?? "") \(keys.text(6) ?? "")") }
        return found
    }

    @Test("a store with REAL columns opens, reads as before, is rebuilt once and then keeps -0.0 and NaN")
    func rebuiltOnOpen() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            let written = stations()
            let dialogs = try workloadRecords(dialogs: 4, messages: 5)
            let users = sampleUsers()
            var layout: [String: [String]] = [:]
            do {
                let database = try SQLiteDatabase(path: url)
                try database.storage(for: Station.self).persist(written)
                try database.storage(for: DialogRecord.self).persist(dialogs)
                try database.storage(for: UserRecord.self).persist(users)
                try database.close()
            }
            for table in ["legacy_stations", "legacy_samples", "messages", "users"] {
                layout[table] = try indexesAndForeignKeys(url, table)
            }
            try declareRealsReal(url, tables: [
                ("legacy_stations", ["altitude", "opened"]), ("legacy_samples", ["value", "weight"]), ("messages", ["date"]),
                ("users", ["birthDate"]),
            ])
            #expect(try columnTypes(url, "legacy_samples")["value"] == "REAL")
            #expect(try columnTypes(url, "messages")["date"] == "REAL")
            // The old layout holds the rows (REAL affinity keeps an integral
            // real as an integer on disk, and reads it back as a real).
            do {
                let connection = try Connection(path: url.path(percentEncoded: false), flags: SQLITE_OPEN_READONLY)
                #expect(try connection.scalarInt("SELECT count(*) FROM legacy_samples WHERE value = 1") ?? 0 > 0)
                try connection.close()
            }

            let database = try SQLiteDatabase(path: url)
            // The children first: the owner's table is set up by it.
            let samples = try database.storage(for: Sample.self)
            #expect(try samples.count() == written.flatMap(\.samples).count)
            let storage = try database.storage(for: Station.self)
            #expect(try storage.readAll() == written)
            #expect(try database.storage(for: DialogRecord.self).readAll() == dialogs)
            #expect(try database.storage(for: UserRecord.self).readAll() == users.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) })
            for table in ["legacy_stations", "legacy_samples", "messages", "users"] {
                #expect(try columnTypes(url, table).values.allSatisfy { $0 != "REAL" }, "\(table)")
                #expect(try indexesAndForeignKeys(url, table) == layout[table], "\(table)")
            }
            // Through the index on the real, as before.
            let one = 1.0
            #expect(try samples.read(where: #Predicate { $0.value == one }).map(\.id) == written.flatMap(\.samples).filter { $0.value == 1 }.map(\.id))

            // Now -0.0 and NaN are kept, at both levels.
            var changed = written[1]
            changed.altitude = -0.0
            changed.opened = Date(timeIntervalSinceReferenceDate: .nan)
            changed.samples[0].value = -0.0
            changed.samples[1].value = .nan
            changed.samples[2].weight = -Float(0)
            try storage.persist(changed)
            let read = try #require(try storage.read(primaryKey: changed.code))
            #expect(read.altitude.bitPattern == (-0.0).bitPattern)
            #expect(read.opened?.timeIntervalSinceReferenceDate.isNaN == true)
            #expect(read.samples[0].value.bitPattern == (-0.0).bitPattern)
            #expect(read.samples[1].value.isNaN)
            #expect(read.samples[2].weight?.bitPattern == (-Float(0)).bitPattern)
            let zero = 0.0
            #expect(try samples.read(where: #Predicate { $0.value == zero }).map(\.id).contains(changed.samples[0].id))
            try database.close()

            // Opened again: nothing is rebuilt, everything reads the same.
            let again = try SQLiteDatabase(path: url)
            let reread = try again.storage(for: Station.self).read(primaryKey: changed.code)
            #expect(reread?.samples[0].value.bitPattern == (-0.0).bitPattern)
            #expect(try again.storage(for: Station.self).readAll().count == written.count)
            try again.close()
        }
    }

    @Test("a column declared REAL where the record declares text is still a schema mismatch")
    func otherTypesStillMismatch() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            do {
                let connection = try Connection(path: url.path(percentEncoded: false), flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
                try connection.execute(
                    "CREATE TABLE users (id TEXT NOT NULL PRIMARY KEY, name REAL NOT NULL, bio TEXT, email TEXT, birthDate REAL, gender TEXT)")
            }
            let database = try SQLiteDatabase(path: url)
            let error = #expect(throws: StorageError.self) { try database.storage(for: UserRecord.self) }
            #expect(error?.kind == .schemaMismatch)
        }
    }
}
