import DAOCore
import Foundation
import StorageBenchKit
import Testing

@Suite("The migrate measurement")
struct MigrateBenchmarkTests {
    let provenance = Provenance(
        runId: "r1", timestamp: "2026-01-01T00:00:00Z", gitCommit: "abc", host: "h", os: "Linux", cpu: "cpu",
        swiftVersion: "6", build: "debug")

    @Test("every standard backend migrates a small store and reads it back, two rows each")
    func standardBackends() throws {
        let benchmark = MigrateBenchmark(
            backends: MigrateBenchmark.standardSubjects, size: try BenchSize(dialogs: 4, messagesPerDialog: 3),
            durability: .none, iterations: 1, warmup: 0, seed: 7)
        let rows = benchmark.run(provenance: provenance)
        #expect(rows.map(\.backend) == ["json", "json", "plist", "plist", "sqlite", "sqlite", "lmdb", "lmdb"])
        #expect(rows.map(\.operation) == Array(repeating: ["migrate-add-field", "read-migrated"], count: 4).flatMap { $0 })
        for row in rows {
            #expect(row.error == "", "\(row.backend) \(row.operation)")
            #expect(row.units == 12)
            #expect(row.iterations == 1)
            #expect(row.medianSeconds != nil)
            #expect(row.workload == MigrateBenchmark.workload)
        }
        // The rows are report rows: they go through the CSV form unchanged.
        let csv = CSV.document(header: ReportRow.columns, rows: rows.map(\.fields))
        let parsed = try CSV.parse(csv)
        #expect(parsed.count == rows.count + 1)
    }

    @Test("a backend that fails gets rows with the error, not figures")
    func failingBackend() throws {
        let failing = MigrateBenchmark.Subject("failing") { _, _ in
            throw StorageError(.io, .open, message: "cannot open")
        }
        let benchmark = MigrateBenchmark(
            backends: [failing], size: try BenchSize(dialogs: 2, messagesPerDialog: 2), durability: .none,
            iterations: 1, warmup: 0, seed: 7)
        let rows = benchmark.run(provenance: provenance)
        #expect(rows.count == 2)
        #expect(rows.allSatisfy { $0.error.contains("cannot open") && $0.medianSeconds == nil })
    }

    @Test("backends are chosen by name")
    func selection() throws {
        #expect(try MigrateBenchmark.select("all").map(\.name) == ["json", "plist", "sqlite", "lmdb"])
        #expect(try MigrateBenchmark.select("lmdb,json").map(\.name) == ["json", "lmdb"])
        #expect(throws: ConfigurationError.self) { try MigrateBenchmark.select("sqlite-raw") }
    }
}
