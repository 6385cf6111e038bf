import DAOCore
import Foundation
import StorageBenchKit
import StorageBenchReference
import Testing

@Suite("Reference backends under load: the same work as the DAO's")
struct ReferenceLoadTests {
    /// Every operation a mix can draw, a fixed number of operations, two
    /// clients: each reference counts the same operations and the same rows
    /// read and written as the DAO backends, with no error.
    /// (Appends run beside pages and scans shorter than any dialog, so that no
    /// count depends on how the clients interleave.)
    @Test(arguments: [
        (["read": 0.4, "update": 0.2, "scan": 0.2, "read-modify-write": 0.2], Durability.none),
        (["page": 0.5, "scan": 0.3, "append": 0.2], Durability.none),
        (["read": 0.5, "update": 0.2, "scan": 0.1, "page": 0.1, "read-modify-write": 0.1], Durability.full),
    ])
    func theReferencesDoTheSameWorkAsTheDAO(_ operations: [String: Double], _ durability: Durability) async throws {
        let object: [String: Any] = [
            "name": "every-operation", "dialogs": 30, "messagesPerDialog": 5,
            "operations": operations,
            "distribution": "zipfian", "scanLength": 3, "pageSize": 4,
        ]
        let mix = try LoadMix.parse(try JSONSerialization.data(withJSONObject: object), file: "every-operation.json")
        let backends = LoadBackendRegistry.withReferences
        #expect(backends.names == ["json", "plist", "sqlite", "sqlite-raw", "grdb", "lmdb", "lmdb-raw"])
        let results = await LoadSweep.run(
            LoadSweepOptions(
                mixes: [mix], backends: try backends.select("sqlite,sqlite-raw,grdb,lmdb,lmdb-raw"), clients: [2],
                durationSeconds: nil, operationCount: 200, targetRate: nil, warmupSeconds: 0, durability: durability),
            progress: { _ in })
        #expect(results.map(\.backend) == ["sqlite", "sqlite-raw", "grdb", "lmdb", "lmdb-raw"])
        for result in results {
            #expect(result.failure == nil, "\(result.backend): \(result.failure ?? "")")
            #expect(result.all?.operations == 200, "\(result.backend)")
            #expect(result.all?.errors == 0, "\(result.backend): \(result.all?.firstError ?? "")")
            #expect(!result.settings.isEmpty && !result.api.isEmpty)
        }
        for operation in Array(operations.keys) + ["all"] {
            let rows = results.map { result in result.figures.first { $0.operation == operation }?.rows ?? -1 }
            #expect(Set(rows).count == 1, "\(operation): \(rows)")
        }
        let rows = LoadReport.rows(results)
        let sqlite = try #require(rows.first { $0.backend == "sqlite" && $0.operation == "all" })
        #expect(sqlite.reference == "sqlite-raw")
        #expect((sqlite.throughputRatioToRaw ?? 0) > 0 && (sqlite.p99RatioToRaw ?? 0) > 0)
        #expect(rows.first { $0.backend == "sqlite-raw" }?.settings.contains("journal_mode=wal") == true)
        let lmdb = try #require(rows.first { $0.backend == "lmdb" && $0.operation == "scan" })
        #expect((lmdb.throughputRatioToRaw ?? 0) > 0)
    }
}
