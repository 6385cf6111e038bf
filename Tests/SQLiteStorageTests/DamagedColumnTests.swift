import CSQLite
import DAOCore
import DialogGraph
import Foundation
@testable import SQLiteStorage
import Testing
import TestSupport

/// A record read through `Codable` (String key, every field type, optionals).
struct GaugeReading: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var count: Int64
    var level: Double
    var taken: Date
    var label: String
    var valid: Bool
    var raw: Data
    var note: String?
    var limit: Int64?

    static let entity = Entity<GaugeReading>(
        "damaged_gauges", primaryKey: "id", \.id,
        fields: [
            Field("count", \.count), Field("level", \.level), Field("taken", \.taken), Field("label", \.label),
            Field("valid", \.valid), Field("raw", \.raw), Field("note", \.note), Field("limit", \.limit),
        ],
        indexes: [Index("by_label_count", on: ["label", "count"])])
}

@Suite("SQLite: a column of a non-optional field damaged outside the store reads as corrupt")
struct DamagedColumnTests {
    let readings = [
        GaugeReading(
            id: "g1", count: 3, level: 0.5, taken: Date(timeIntervalSinceReferenceDate: 100), label: "caf\u{E9} \u{1F30A}",
            valid: true, raw: Data([0, 1, 2]), note: nil, limit: 7),
        GaugeReading(
            id: "g2", count: 0, level: 0, taken: Date(timeIntervalSinceReferenceDate: 0), label: "", valid: false,
            raw: Data(), note: "n\u{0}ul", limit: nil),
    ]

    /// A new store in `directory` holding ``readings``, closed again; its file.
    func storeReadings(in directory: URL) throws -> URL {
        let url = directory.appending(path: "store.sqlite")
        let database = try SQLiteDatabase(path: url)
        try database.storage(for: GaugeReading.self).persist(readings)
        try database.close()
        return url
    }

    /// Runs `sql` on the database at `url` over a connection of its own.
    func damage(_ url: URL, _ sql: String) throws {
        let connection = try Connection(path: url.path(percentEncoded: false), flags: SQLITE_OPEN_READWRITE)
        try connection.execute(sql)
        try connection.close()
    }

    /// Sets `column` of `table` to NULL in the row `where`, though the column
    /// is `NOT NULL`: through an edited schema, put back afterwards.
    /// (`type` empty: a column declared without a type, as a real's is.)
    func setNull(_ url: URL, table: String, column: String, type: String, where condition: String) throws {
        let nullable = type.isEmpty ? "\"\(column)\"" : "\"\(column)\" \(type)"
        let declared = "\(nullable) NOT NULL"
        try damage(
            url,
            """
            PRAGMA writable_schema = ON;
            UPDATE sqlite_master SET sql = replace(sql, '\(declared)', '\(nullable)') WHERE name = '\(table)';
            """)
        try damage(url, "UPDATE \"\(table)\" SET \"\(column)\" = NULL WHERE \(condition)")
        try damage(
            url,
            """
            PRAGMA writable_schema = ON;
            UPDATE sqlite_master SET sql = replace(sql, '\(nullable),', '\(declared),') WHERE name = '\(table)';
            """)
    }

    func expectCorrupt(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("expected a corrupt error, the read returned", sourceLocation: sourceLocation)
        } catch let error as StorageError {
            #expect(error.kind == .corrupt, "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected a StorageError, got \(error)", sourceLocation: sourceLocation)
        }
    }

    static let damages: [(column: String, value: String)] = [
        ("count", "'abc'"), ("count", "'12abc'"), ("count", "1.5"), ("count", "x'01'"),
        ("level", "'abc'"), ("taken", "'1.5x'"), ("valid", "'yes'"),
        ("label", "x'00ff'"), ("raw", "'text'"), ("limit", "'abc'"),
    ]

    @Test("another storage class in a column, read through Codable", arguments: Self.damages.indices)
    func codableRecord(damageIndex: Int) throws {
        let (column, value) = Self.damages[damageIndex]
        try withTemporaryDirectory { directory in
            let url = try storeReadings(in: directory)
            try damage(url, "UPDATE damaged_gauges SET \"\(column)\" = \(value) WHERE id = 'g2'")
            let database = try SQLiteDatabase(path: url)
            let storage = try database.storage(for: GaugeReading.self)
            expectCorrupt { _ = try storage.readAll() }
            expectCorrupt { _ = try storage.read(primaryKey: "g2") }
            // The undamaged row still reads.
            #expect(try storage.read(primaryKey: "g1") == readings[0])
            try database.close()
        }
    }

    @Test("NULL in a NOT NULL column of every type, read through Codable",
          arguments: [("count", "INTEGER"), ("level", ""), ("taken", ""), ("label", "TEXT"), ("valid", "INTEGER"), ("raw", "BLOB")])
    func codableNull(column: String, type: String) throws {
        try withTemporaryDirectory { directory in
            let url = try storeReadings(in: directory)
            try setNull(url, table: "damaged_gauges", column: column, type: type, where: "id = 'g1'")
            let database = try SQLiteDatabase(path: url)
            let storage = try database.storage(for: GaugeReading.self)
            expectCorrupt { _ = try storage.read(primaryKey: "g1") }
            expectCorrupt { _ = try storage.readAll() }
            #expect(try storage.read(primaryKey: "g2") == readings[1])
            try database.close()
        }
    }

    @Test("text or NULL in an integer column of a record read in its own module (the workload's messages)")
    func fieldwiseRecord() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            let dialogs = try workloadRecords(dialogs: 3, messages: 4)
            do {
                let database = try SQLiteDatabase(path: url)
                try database.storage(for: DialogRecord.self).persist(dialogs)
                try database.close()
            }
            let damaged = dialogs[1].messages[2].id
            let dialogId = dialogs[1].id
            try damage(url, "UPDATE messages SET senderId = 'abc' WHERE id = \(damaged)")
            do {
                let database = try SQLiteDatabase(path: url)
                let dialogStorage = try database.storage(for: DialogRecord.self)
                let messages = try database.storage(for: MessageRecord.self)
                expectCorrupt { _ = try dialogStorage.readAll() }
                expectCorrupt { _ = try messages.readAll() }
                expectCorrupt { _ = try messages.read(primaryKey: damaged) }
                expectCorrupt {
                    _ = try messages.read(
                        where: #Predicate { $0.dialogId == dialogId }, sortedBy: [SortDescriptor(\.date)])
                }
                #expect(try dialogStorage.read(primaryKey: dialogs[0].id) == dialogs[0])
                try database.close()
            }
            try damage(url, "UPDATE messages SET senderId = 1 WHERE id = \(damaged)")
            try setNull(url, table: "messages", column: "isRead", type: "INTEGER", where: "id = \(damaged)")
            let database = try SQLiteDatabase(path: url)
            expectCorrupt { _ = try database.storage(for: DialogRecord.self).readAll() }
            expectCorrupt { _ = try database.storage(for: MessageRecord.self).read(primaryKey: damaged) }
            try database.close()
        }
    }

    /// A limited read with no condition reads the children of the parents it
    /// returns, not the whole child table: a damaged child of a parent it does
    /// not return leaves it unharmed, while reading every parent fails.
    @Test("views answer as read: invalid UTF-8 repaired, another storage class corrupt")
    func views() throws {
        let directory = try TemporaryDirectory()
        let url = try storeReadings(in: directory.url)
        // "f", a byte that is no UTF-8, "o"; and text where an integer belongs.
        try damage(url, "UPDATE damaged_gauges SET label = CAST(x'66FF6F' AS TEXT) WHERE id = 'g1'")
        try damage(url, "UPDATE damaged_gauges SET \"count\" = 'abc' WHERE id = 'g2'")
        let database = try SQLiteDatabase(path: url)
        let storage = try database.storage(for: GaugeReading.self)
        let label = try GaugeReading.entity.position(of: \.label)
        let count = try GaugeReading.entity.position(of: \.count)
        let read = try #require(try storage.read(primaryKey: "g1"))
        #expect(read.label == "f\u{FFFD}o")
        var labels: [String] = []
        for query in [Query<GaugeReading>(where: #Predicate { $0.id == "g1" }), Query(limit: 1)] {
            try storage.forEachView(query) { view in labels.append(String(copying: try view.text(label))) }
        }
        try storage.forEachView(primaryKey: "g1") { view in labels.append(String(copying: try view.text(label))) }
        #expect(labels == [read.label, read.label, read.label])
        expectCorrupt { _ = try storage.read(primaryKey: "g2") }
        expectCorrupt { try storage.forEachView(primaryKey: "g2") { view in _ = try view.integer(count) } }
        try database.close()
    }

    @Test("a limited read of parents decodes only the children of the parents it returns")
    func limitedReadReadsItsChildren() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appending(path: "store.sqlite")
            let dialogs = try workloadRecords(dialogs: 4, messages: 3).sorted { $0.id < $1.id }
            do {
                let database = try SQLiteDatabase(path: url)
                try database.storage(for: DialogRecord.self).persist(dialogs)
                try database.close()
            }
            try damage(url, "UPDATE messages SET senderId = 'abc' WHERE id = \(dialogs[3].messages[1].id)")
            let database = try SQLiteDatabase(path: url)
            let storage = try database.storage(for: DialogRecord.self)
            expectCorrupt { _ = try storage.readAll() }
            expectCorrupt { _ = try storage.read(Query(sortedBy: [SortDescriptor(\.id)])) }
            #expect(try storage.read(Query(sortedBy: [SortDescriptor(\.id)], limit: 1)) == [dialogs[0]])
            #expect(try storage.read(Query(sortedBy: [SortDescriptor(\.id)], limit: 3)) == Array(dialogs[0..<3]))
            #expect(try storage.read(Query(limit: 2)).count == 2)
            expectCorrupt { _ = try storage.read(Query(sortedBy: [SortDescriptor(\.id)], limit: 4)) }
            try database.close()
        }
    }
}
