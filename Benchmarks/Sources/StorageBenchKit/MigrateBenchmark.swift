import DAOCore
import DialogGraph
import FileStorage
import Foundation
import LMDBStorage
import SQLiteStorage

/// The `migrate` measurement, outside workload v1: what a schema change costs
/// on each engine. A store of D dialogs × M messages is written with
/// ``MessageRecord``, closed and reopened; then two things are timed:
///
/// - `migrate-add-field`: ``DialogGraphMigrations/migrator`` adds
///   `reactionCount` (0) to every message, in one transaction;
/// - `read-migrated`: every dialog is read back as ``DialogRecordV2`` with its
///   messages, and checked (every message there, every `reactionCount` 0).
///
/// Each backend × iteration runs on a fresh store in a fresh temporary
/// directory, in this process. Rows use the report's CSV columns, with the
/// workload `dialog-graph-migrate-v1` and the messages as units.
public struct MigrateBenchmark: Sendable {
    /// The workload name written in the rows.
    public static let workload = "dialog-graph-migrate-v1"

    /// One store that can be migrated: a name and how to open it in a directory.
    public struct Subject: Sendable {
        /// The backend's name, as in the workload's reports.
        public let name: String
        /// Opens (creating if missing) the store in `directory`.
        public let open: @Sendable (_ directory: URL, _ durability: Durability) throws -> any MigratableStore

        /// Declares a subject.
        public init(
            _ name: String, open: @escaping @Sendable (_ directory: URL, _ durability: Durability) throws -> any MigratableStore
        ) {
            self.name = name
            self.open = open
        }
    }

    /// The library's four backends, in report order.
    public static let standardSubjects: [Subject] = [
        Subject("json") { try FileStore(directory: $0, format: .json, durability: $1) },
        Subject("plist") { try FileStore(directory: $0, format: .propertyList, durability: $1) },
        Subject("sqlite") { try SQLiteDatabase(path: $0.appendingPathComponent("store.sqlite"), durability: $1) },
        Subject("lmdb") { try LMDBEnvironment(directory: $0, durability: $1) },
    ]

    /// The subjects `list` names (comma-separated, or `all`), in report order.
    /// - Throws: ``ConfigurationError`` for an unknown or empty list.
    public static func select(_ list: String) throws -> [Subject] {
        let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if names == ["all"] { return standardSubjects }
        for name in names where !standardSubjects.contains(where: { $0.name == name }) {
            throw ConfigurationError(
                "unknown backend '\(name)' for migrate; use \(standardSubjects.map(\.name).joined(separator: ", ")) or all")
        }
        guard !names.isEmpty else { throw ConfigurationError("no backend given") }
        return standardSubjects.filter { names.contains($0.name) }
    }

    /// The backends to measure.
    public var backends: [Subject]
    /// The store's size.
    public var size: BenchSize
    /// The durability the stores are opened with.
    public var durability: Durability
    /// Measured iterations per backend.
    public var iterations: Int
    /// Warm-up iterations run first and discarded.
    public var warmup: Int
    /// The generator seed.
    public var seed: UInt64

    /// Describes a run.
    public init(
        backends: [Subject], size: BenchSize, durability: Durability, iterations: Int, warmup: Int, seed: UInt64
    ) {
        self.backends = backends
        self.size = size
        self.durability = durability
        self.iterations = iterations
        self.warmup = warmup
        self.seed = seed
    }

    /// The timings of one iteration, in seconds.
    struct Timing {
        var migrate: Double
        var read: Double
        var bytesOnDisk: Int64?
        var settings: String
    }

    /// Runs every backend and returns two rows for each (an error row pair
    /// when the backend failed).
    public func run(provenance: Provenance) -> [ReportRow] {
        let data = WorkloadData(dialogs: size.dialogs, messagesPerDialog: size.messagesPerDialog, seed: seed)
        var rows: [ReportRow] = []
        for backend in backends {
            var timings: [Timing] = []
            var failure = ""
            do {
                for iteration in 0..<(warmup + iterations) {
                    let timing = try measure(backend, data)
                    if iteration >= warmup { timings.append(timing) }
                }
            } catch {
                failure = "\(error)"
            }
            let messages = size.dialogs * size.messagesPerDialog
            for (operation, seconds) in [
                ("migrate-add-field", timings.map(\.migrate)), ("read-migrated", timings.map(\.read)),
            ] {
                let statistics = failure.isEmpty ? SampleStatistics(seconds) : nil
                var row = ReportRow(
                    workload: Self.workload, provenance: provenance, backend: backend.name,
                    durability: durability.rawValue, operation: operation, dialogs: size.dialogs,
                    messagesPerDialog: size.messagesPerDialog, units: messages, unit: "messages",
                    iterations: failure.isEmpty ? timings.count : 0, medianSeconds: statistics?.median,
                    minSeconds: statistics?.min, maxSeconds: statistics?.max, meanSeconds: statistics?.mean,
                    stddevSeconds: statistics?.standardDeviation,
                    throughputPerSecond: statistics.map { $0.median > 0 ? Double(messages) / $0.median : 0 },
                    bytesOnDisk: operation == "migrate-add-field" ? timings.compactMap(\.bytesOnDisk).sorted().middle : nil,
                    seed: seed, warmup: warmup, note: "in process; outside workload v1", error: failure)
                row.settings = timings.first?.settings ?? ""
                if failure.isEmpty, let interval = MedianInterval(seconds) {
                    row.ciLowSeconds = interval.low
                    row.ciHighSeconds = interval.high
                }
                rows.append(row)
            }
        }
        return rows
    }

    /// One iteration on a fresh store.
    private func measure(_ backend: Subject, _ data: WorkloadData) throws -> Timing {
        let directory = try makeScratchDirectory("migrate")
        defer { removeScratchDirectory(directory) }
        let translator = DialogTranslator()
        let records = try data.initial.map { try translator.record(from: $0) }
        do {
            let store = try backend.open(directory, durability)
            defer { closeReporting(store) }
            try store.anyStorage(for: DialogRecord.self).persist(records)
        }
        let store = try backend.open(directory, durability)
        defer { closeReporting(store) }
        let clock = ContinuousClock()
        let migrateStart = clock.now
        let applied = try DialogGraphMigrations.migrator.migrate(store)
        let migrate = clock.now - migrateStart
        guard applied == [DialogGraphMigrations.reactionCount] else {
            throw StorageError(.engine, .open, message: "the migration applied \(applied), not the one expected")
        }
        let readStart = clock.now
        let read = try store.anyStorage(for: DialogRecordV2.self).readAll()
        let readTime = clock.now - readStart
        let expected = records.reduce(0) { $0 + $1.messages.count }
        let found = read.reduce(0) { $0 + $1.messages.count }
        guard read.count == records.count, found == expected,
            read.allSatisfy({ $0.messages.allSatisfy { $0.reactionCount == 0 } })
        else {
            throw StorageError(
                .engine, .read,
                message: "read back \(read.count) dialogs with \(found) messages, expected \(records.count) with \(expected), every reactionCount 0")
        }
        return Timing(
            migrate: migrate.seconds, read: readTime.seconds, bytesOnDisk: try Self.bytes(in: directory),
            settings: store.settingsDescription)
    }

    private func closeReporting(_ store: any Store) {
        do {
            try store.close()
        } catch {
            FileHandle.standardError.write(Data("storage-bench: closing the store failed: \(error)\n".utf8))
        }
    }

    /// The bytes of every file under `directory`.
    static func bytes(in directory: URL) throws -> Int64 {
        var total: Int64 = 0
        let names = try FileManager.default.subpathsOfDirectory(atPath: directory.path)
        for name in names {
            let attributes = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)
            if (attributes[.type] as? FileAttributeType) == .typeRegular {
                total += (attributes[.size] as? NSNumber)?.int64Value ?? 0
            }
        }
        return total
    }
}

extension Duration {
    fileprivate var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}

extension Array where Element == Int64 {
    fileprivate var middle: Int64? { isEmpty ? nil : self[count / 2] }
}
