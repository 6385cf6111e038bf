import ArgumentParser
import DAOCore
import Foundation
import StorageBenchKit

/// `storage-bench open`: what opening a store costs on each backend, cold and warm.
struct Open: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure opening a D × M store on each backend, from the disk (cold) and from the page cache (warm).",
        discussion: """
            Outside workload v1. For each size and backend a store is written once; each iteration \
            then syncs its files and drops them from the page cache (posix_fadvise DONTNEED) and \
            times an open of the store and of its dialogs' storage (open-cold), then times another \
            (open-warm). lmdb-metapages is LMDB with its page walk turned off. Rows use the \
            report's CSV columns. Exit status: 0 when every backend ran, 3 when one failed.
            """
    )

    @Option(help: "Comma-separated backends, or all (\(OpenBenchmark.standardSubjects.map(\.name).joined(separator: ", "))).")
    var backends = "all"

    @Option(parsing: .unconditional, help: "Comma-separated sizes DxM (dialogs × messages per dialog), or a sweep (see run --help).")
    var sizes = "1000x100"

    @Option(parsing: .unconditional, help: "Measured iterations (each a cold and a warm open) per backend and size.")
    var iterations = "5"

    @Option(parsing: .unconditional, help: "The generator seed.")
    var seed = "42"

    @Option(help: "The CSV report file (default results/open-<UTC date-time>-<host>.csv).")
    var output: String?

    func benchmark() throws -> OpenBenchmark {
        return try validating {
            return OpenBenchmark(
                backends: try OpenBenchmark.select(backends), sizes: try BenchSize.parseSweep(sizes),
                iterations: try parseCount(iterations, option: "--iterations", in: RunConfiguration.iterationsRange),
                seed: try parseCount(seed, option: "--seed", in: UInt64.min...UInt64.max))
        }
    }

    func validate() throws {
        _ = try benchmark()
    }

    func run() throws {
        let benchmark = try benchmark()
        let started = Date()
        let provenance = Provenance.thisRun(startedAt: started)
        let rows = benchmark.run(provenance: provenance) { line in
            FileHandle.standardError.write(Data("\(line)\n".utf8))
        }
        let url = output.map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: "results/open-\(ReportWriter.compactTimestamp(started))-\(provenance.host).csv")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(CSV.document(header: ReportRow.columns, rows: rows.map(\.fields)).utf8).write(to: url, options: .atomic)
        for row in rows {
            let median = row.medianSeconds.map { String(format: "%.4f s", $0) } ?? "-"
            let bytes = row.bytesOnDisk.map { "\($0) bytes" } ?? ""
            print("\(row.backend)\t\(row.dialogs)x\(row.messagesPerDialog)\t\(row.operation)\t\(median)\t\(bytes)\t\(row.error)")
        }
        FileHandle.standardError.write(Data("wrote \(url.relativePath)\n".utf8))
        if rows.contains(where: { !$0.error.isEmpty }) { throw ExitCode(3) }
    }
}
