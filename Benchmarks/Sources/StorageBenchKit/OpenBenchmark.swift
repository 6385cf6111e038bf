import DAOCore
import DialogGraph
import FileStorage
import Foundation
import LMDBStorage
import SQLiteStorage

#if canImport(Glibc)
import Glibc
#endif

/// The `open` measurement, outside workload v1: what opening a store costs on
/// each engine, with what every open does first (the LMDB adapter's check of
/// the data file, the file stores' read of their documents). A store of D
/// dialogs × M messages is written (in chunks of at most 1000 dialogs, so
/// that a large store does not sit in memory) and closed; then each iteration
/// times two opens, each of the store and of its dialogs' storage
/// (`anyStorage(for: DialogRecord.self)`), each closed again untimed:
///
/// - `open-cold`: after every file of the store was synced and dropped from
///   the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`), so the open reads
///   from the disk;
/// - `open-warm`: right after, the files in the page cache.
///
/// `lmdb-metapages` is the LMDB adapter with its page walk turned off
/// (``LMDBEnvironment/FileCheck/metaPages``): the difference to `lmdb` is
/// what the walk costs. Rows use the report's CSV columns, with the workload
/// `dialog-graph-open-v1`, the messages as units and the store's bytes on
/// disk.
public struct OpenBenchmark: Sendable {
    /// The workload name written in the rows.
    public static let workload = "dialog-graph-open-v1"

    /// One store to open: a name and how to open it in a directory.
    public struct Subject: Sendable {
        /// The backend's name in the rows.
        public let name: String
        /// Opens (creating if missing) the store in `directory`.
        public let open: @Sendable (_ directory: URL) throws -> any Store

        /// Declares a subject.
        public init(_ name: String, open: @escaping @Sendable (_ directory: URL) throws -> any Store) {
            self.name = name
            self.open = open
        }
    }

    /// The library's four backends, and LMDB without its page walk.
    public static let standardSubjects: [Subject] = [
        Subject("json") { try FileStore(directory: $0, format: .json) },
        Subject("plist") { try FileStore(directory: $0, format: .propertyList) },
        Subject("sqlite") { try SQLiteDatabase(path: $0.appendingPathComponent("store.sqlite")) },
        Subject("lmdb") { try LMDBEnvironment(directory: $0) },
        Subject("lmdb-metapages") { try LMDBEnvironment(directory: $0, fileCheck: .metaPages) },
    ]

    /// The subjects `list` names (comma-separated, or `all`), in report order.
    /// - Throws: ``ConfigurationError`` for an unknown or empty list.
    public static func select(_ list: String) throws -> [Subject] {
        let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if names == ["all"] { return standardSubjects }
        for name in names where !standardSubjects.contains(where: { $0.name == name }) {
            throw ConfigurationError(
                "unknown backend '\(name)' for open; use \(standardSubjects.map(\.name).joined(separator: ", ")) or all")
        }
        guard !names.isEmpty else { throw ConfigurationError("no backend given") }
        return standardSubjects.filter { names.contains($0.name) }
    }

    /// The backends to measure.
    public var backends: [Subject]
    /// The stores' sizes.
    public var sizes: [BenchSize]
    /// Measured iterations (each one cold and one warm open) per backend and size.
    public var iterations: Int
    /// The generator seed.
    public var seed: UInt64

    /// Describes a run.
    public init(backends: [Subject], sizes: [BenchSize], iterations: Int, seed: UInt64) {
        self.backends = backends
        self.sizes = sizes
        self.iterations = iterations
        self.seed = seed
    }

    /// Runs every backend at every size and returns two rows for each (an
    /// error row pair when the backend failed). `progress` hears of each
    /// store written.
    public func run(provenance: Provenance, progress: (String) -> Void = { _ in }) -> [ReportRow] {
        var rows: [ReportRow] = []
        for size in sizes {
            for backend in backends {
                var cold: [Double] = []
                var warm: [Double] = []
                var bytes: Int64?
                var settings = ""
                var failure = ""
                do {
                    let directory = try makeScratchDirectory("open")
                    defer { removeScratchDirectory(directory) }
                    try write(backend, size, in: directory)
                    bytes = try MigrateBenchmark.bytes(in: directory)
                    progress("\(backend.name) \(size): wrote \(bytes ?? 0) bytes")
                    for _ in 0..<iterations {
                        try Self.dropFromPageCache(directory)
                        cold.append(try timeOpen(backend, directory, settings: &settings))
                        warm.append(try timeOpen(backend, directory, settings: &settings))
                    }
                } catch {
                    failure = "\(error)"
                }
                let messages = size.dialogs * size.messagesPerDialog
                for (operation, seconds) in [("open-cold", cold), ("open-warm", warm)] {
                    let statistics = failure.isEmpty ? SampleStatistics(seconds) : nil
                    var row = ReportRow(
                        workload: Self.workload, provenance: provenance, backend: backend.name,
                        durability: Durability.full.rawValue, operation: operation, dialogs: size.dialogs,
                        messagesPerDialog: size.messagesPerDialog, units: messages, unit: "messages",
                        iterations: failure.isEmpty ? seconds.count : 0, medianSeconds: statistics?.median,
                        minSeconds: statistics?.min, maxSeconds: statistics?.max, meanSeconds: statistics?.mean,
                        stddevSeconds: statistics?.standardDeviation,
                        throughputPerSecond: statistics.map { $0.median > 0 ? Double(messages) / $0.median : 0 },
                        bytesOnDisk: bytes, seed: seed, warmup: 0,
                        note: operation == "open-cold"
                            ? "in process; outside workload v1; files synced and dropped from the page cache (posix_fadvise DONTNEED) before each open"
                            : "in process; outside workload v1; files in the page cache",
                        error: failure)
                    row.settings = settings
                    rows.append(row)
                }
            }
        }
        return rows
    }

    /// Writes the store: the workload's dialogs 1…D with their messages, in
    /// chunks of at most 1000 dialogs (each chunk generated from its own seed,
    /// its ids moved past the chunks before it), one persist call each.
    private func write(_ backend: Subject, _ size: BenchSize, in directory: URL) throws {
        let store = try backend.open(directory)
        defer { closeReporting(store) }
        let storage = try store.anyStorage(for: DialogRecord.self)
        let translator = DialogTranslator()
        let chunk = min(size.dialogs, 1000)
        var written = 0
        var index: UInt64 = 0
        while written < size.dialogs {
            let count = min(chunk, size.dialogs - written)
            let data = WorkloadData(dialogs: count, messagesPerDialog: size.messagesPerDialog, seed: seed &+ index)
            let offset = Int64(written)
            let dialogs = data.initial.map { dialog in
                Dialog(
                    uniqueId: dialog.uniqueId + offset, isPinned: dialog.isPinned,
                    messages: dialog.messages.map { message in
                        Message(
                            uniqueId: message.uniqueId + offset * Int64(size.messagesPerDialog),
                            dialogId: message.dialogId + offset, date: message.date, text: message.text,
                            senderId: message.senderId, receiverId: message.receiverId, type: message.type,
                            isIncoming: message.isIncoming, isRead: message.isRead)
                    })
            }
            try storage.persist(try dialogs.map { try translator.record(from: $0) })
            written += count
            index += 1
        }
    }

    /// The time to open the store and its dialogs' storage; closed after,
    /// untimed.
    private func timeOpen(_ backend: Subject, _ directory: URL, settings: inout String) throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        let store = try backend.open(directory)
        defer { closeReporting(store) }
        _ = try store.anyStorage(for: DialogRecord.self)
        let elapsed = clock.now - start
        settings = store.settingsDescription
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    private func closeReporting(_ store: any Store) {
        do {
            try store.close()
        } catch {
            FileHandle.standardError.write(Data("storage-bench: closing the store failed: \(error)\n".utf8))
        }
    }

    /// Syncs every regular file under `directory` and asks the kernel to drop
    /// its pages from the page cache (`POSIX_FADV_DONTNEED` drops clean pages
    /// only, hence the sync first).
    static func dropFromPageCache(_ directory: URL) throws {
        for name in try FileManager.default.subpathsOfDirectory(atPath: directory.path) {
            let path = directory.appendingPathComponent(name).path
            var status = stat()
            guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            defer { close(fd) }
            guard fsync(fd) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            let code = posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED))
            guard code == 0 else { throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO) }
        }
    }
}
