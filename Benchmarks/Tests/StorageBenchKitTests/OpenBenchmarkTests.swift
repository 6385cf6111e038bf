import DAOCore
import Foundation
import StorageBenchKit
import Testing

@Suite("The open measurement")
struct OpenBenchmarkTests {
    let provenance = Provenance(
        runId: "r1", timestamp: "2026-01-01T00:00:00Z", gitCommit: "abc", host: "h", os: "Linux", cpu: "cpu",
        swiftVersion: "6", build: "debug")

    @Test("every standard backend opens a small store cold and warm, two rows each with its bytes on disk")
    func standardBackends() throws {
        let benchmark = OpenBenchmark(
            backends: OpenBenchmark.standardSubjects, sizes: [try BenchSize(dialogs: 4, messagesPerDialog: 3)],
            iterations: 2, seed: 7)
        let rows = benchmark.run(provenance: provenance)
        let names = ["json", "plist", "sqlite", "lmdb", "lmdb-metapages"]
        #expect(rows.map(\.backend) == names.flatMap { [$0, $0] })
        #expect(rows.map(\.operation) == Array(repeating: ["open-cold", "open-warm"], count: names.count).flatMap { $0 })
        for row in rows {
            #expect(row.error == "", "\(row.backend) \(row.operation)")
            #expect(row.units == 12)
            #expect(row.iterations == 2)
            #expect((row.medianSeconds ?? 0) > 0, "\(row.backend) \(row.operation)")
            #expect((row.bytesOnDisk ?? 0) > 0, "\(row.backend) \(row.operation)")
            #expect(row.workload == OpenBenchmark.workload)
        }
        // LMDB's rows say which check ran: the same flags, the same file.
        let lmdb = rows.filter { $0.backend.hasPrefix("lmdb") }
        #expect(Set(lmdb.map(\.bytesOnDisk)).count == 1)
        // The rows are report rows: they go through the CSV form unchanged.
        let csv = CSV.document(header: ReportRow.columns, rows: rows.map(\.fields))
        let parsed = try CSV.parse(csv)
        #expect(parsed.count == rows.count + 1)
    }

    @Test("a backend whose open fails gets rows with the error, not figures")
    func failingBackend() throws {
        let failing = OpenBenchmark.Subject("failing") { _ in
            throw StorageError(.corrupt, .open, message: "page 9 is damaged")
        }
        let benchmark = OpenBenchmark(
            backends: [failing], sizes: [try BenchSize(dialogs: 2, messagesPerDialog: 2)], iterations: 1, seed: 7)
        let rows = benchmark.run(provenance: provenance)
        #expect(rows.count == 2)
        #expect(rows.allSatisfy { $0.error.contains("page 9 is damaged") && $0.medianSeconds == nil })
    }

    @Test("backends are chosen by name")
    func selection() throws {
        #expect(try OpenBenchmark.select("all").map(\.name) == ["json", "plist", "sqlite", "lmdb", "lmdb-metapages"])
        #expect(try OpenBenchmark.select("lmdb-metapages,json").map(\.name) == ["json", "lmdb-metapages"])
        #expect(throws: ConfigurationError.self) { try OpenBenchmark.select("sqlite-raw") }
        #expect(throws: ConfigurationError.self) { try OpenBenchmark.select("") }
    }
}
