import DAOCore
import DialogGraph
import Foundation
import NIOCore
import PostgresNIO
import StorageBenchKit

extension PostgresRawSubject {
    /// Writes `dialogs` and their messages into the empty tables with
    /// `COPY … FROM STDIN` (text format, sent in 256 KiB chunks), both tables
    /// in one transaction: PostgreSQL's fastest way in, the yardstick of
    /// `storage-bench postgres-bulk`.
    /// - Throws: ``ReferenceError`` when the server fails.
    public func copy(_ dialogs: [Dialog]) throws {
        let connection = connection
        let logger = PostgresServer.logger
        do {
            try bridge.run {
                try await connection.withTransaction(logger: logger) { connection in
                    try await connection.copyFrom(table: "dialogs", columns: ["id", "is_pinned"], logger: logger) {
                        writer in
                        var buffer = ByteBuffer()
                        buffer.reserveCapacity(Self.chunk + 64)
                        for dialog in dialogs {
                            buffer.writeString("\(dialog.uniqueId)\t\(dialog.isPinned ? "t" : "f")\n")
                            if buffer.readableBytes >= Self.chunk {
                                try await writer.write(buffer)
                                buffer.clear()
                            }
                        }
                        if buffer.readableBytes > 0 { try await writer.write(buffer) }
                    }
                    try await connection.copyFrom(
                        table: "messages",
                        columns: [
                            "id", "dialog_id", "date", "text", "sender_id", "receiver_id", "type", "is_incoming",
                            "is_read",
                        ], logger: logger
                    ) { writer in
                        var buffer = ByteBuffer()
                        buffer.reserveCapacity(Self.chunk + 4096)
                        for dialog in dialogs {
                            for m in dialog.messages {
                                Self.writeRow(m, into: &buffer)
                                if buffer.readableBytes >= Self.chunk {
                                    try await writer.write(buffer)
                                    buffer.clear()
                                }
                            }
                        }
                        if buffer.readableBytes > 0 { try await writer.write(buffer) }
                    }
                }
            }
        } catch {
            throw ReferenceError.postgres("copy", error)
        }
    }

    private static let chunk = 256 * 1024

    /// One line of `COPY`'s text format: the columns separated by tabs, the
    /// text with backslash, tab, newline and carriage return escaped; the date
    /// as the shortest decimal that reads back as the same `Double`.
    private static func writeRow(_ m: Message, into buffer: inout ByteBuffer) {
        buffer.writeString("\(m.uniqueId)\t\(m.dialogId)\t\(m.date.timeIntervalSince1970)\t")
        var text = m.text
        text.withUTF8 { bytes in
            var start = 0
            for (index, byte) in bytes.enumerated() {
                let escape: UInt8
                switch byte {
                case UInt8(ascii: "\\"): escape = UInt8(ascii: "\\")
                case UInt8(ascii: "\t"): escape = UInt8(ascii: "t")
                case UInt8(ascii: "\n"): escape = UInt8(ascii: "n")
                case UInt8(ascii: "\r"): escape = UInt8(ascii: "r")
                default: continue
                }
                buffer.writeBytes(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[start..<index]))
                buffer.writeInteger(UInt8(ascii: "\\"))
                buffer.writeInteger(escape)
                start = index + 1
            }
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[start...]))
        }
        buffer.writeString(
            "\t\(m.senderId)\t\(m.receiverId)\t\(m.type)\t\(m.isIncoming ? "t" : "f")\t\(m.isRead ? "t" : "f")\n")
    }
}

/// `storage-bench postgres-bulk`: the time to persist a D × M graph into
/// empty tables on a PostgreSQL server, by `COPY … FROM STDIN`
/// (``PostgresRawSubject/copy(_:)``) and by each backend's `persist` (one
/// call, one transaction), round by round in the same order, each write in a
/// fresh schema that is checked (counts) and dropped afterwards.
public struct PostgresBulkBenchmark: Sendable {
    /// One method's figures.
    public struct Row: Sendable {
        /// `copy`, or a backend's name.
        public var method: String
        /// The seconds of each measured round.
        public var seconds: [Double]
        /// Each round's seconds divided by `copy`'s in the same round.
        public var overCopy: [Double]
        /// The settings in force, as the backend reads them back.
        public var settings: String
    }

    /// The server.
    public let server: PostgresServer
    /// The backends whose `persist` is measured beside `copy`.
    public let backends: [Backend]
    /// The graph's size.
    public let size: BenchSize
    /// Measured rounds (after one unmeasured warm-up round).
    public let rounds: Int
    /// `synchronous_commit` on (full) or off (none).
    public let durability: Durability

    /// A benchmark of `backends` beside `COPY`.
    public init(server: PostgresServer, backends: [Backend], size: BenchSize, rounds: Int, durability: Durability) {
        self.server = server
        self.backends = backends
        self.size = size
        self.rounds = rounds
        self.durability = durability
    }

    /// Runs the rounds; `progress` hears each step.
    /// - Throws: ``ReferenceError`` or a backend's error when a write or its check fails.
    public func run(progress: (String) -> Void) throws -> [Row] {
        let data = WorkloadData(dialogs: size.dialogs, messagesPerDialog: size.messagesPerDialog)
        let messages = size.dialogs * size.messagesPerDialog
        var rows = [Row(method: "copy", seconds: [], overCopy: [], settings: "")]
        rows += backends.map { Row(method: $0.name, seconds: [], overCopy: [], settings: "") }
        for round in 0...rounds {
            let measured = round > 0
            progress("postgres-bulk: round \(round)\(measured ? "" : " (warm-up)") of \(rounds)")
            var copySeconds = 0.0
            for index in rows.indices {
                let method = rows[index].method
                let (seconds, settings) = try measure(method, data: data, messages: messages)
                if index == 0 { copySeconds = seconds }
                if measured {
                    rows[index].seconds.append(seconds)
                    rows[index].overCopy.append(seconds / copySeconds)
                    rows[index].settings = settings
                }
            }
        }
        return rows
    }

    /// One write of `data.initial` by `method` into a fresh schema, timed, then checked.
    private func measure(_ method: String, data: WorkloadData, messages: Int) throws -> (Double, String) {
        let directory = try makeScratchDirectory("bulk")
        defer { removeScratchDirectory(directory) }
        // The subject lives only in this closure: its release drops its schema.
        return try { () throws -> (Double, String) in
            let subject: any WorkloadSubject
            let write: () throws -> Void
            if method == "copy" {
                let raw = try PostgresRawSubject(server: server, durability: durability)
                subject = raw
                write = { try raw.copy(data.initial) }
            } else {
                guard let backend = backends.first(where: { $0.name == method }) else {
                    throw ConfigurationError("postgres-bulk: no backend \(method)")
                }
                let opened = try backend.open(directory, durability)
                subject = opened
                write = { try opened.persist(data.initial) }
            }
            let start = DispatchTime.now().uptimeNanoseconds
            try write()
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            let (dialogs, stored) = (try subject.dialogCount(), try subject.messageCount())
            guard dialogs == size.dialogs, stored == messages else {
                throw ConfigurationError(
                    "postgres-bulk: \(method) stored \(dialogs) dialogs and \(stored) messages, "
                        + "expected \(size.dialogs) and \(messages)")
            }
            return (seconds, subject.settingsDescription)
        }()
    }

    /// The CSV of `rows`: one line per method, with the run's conditions.
    public func csv(_ rows: [Row], provenance: Provenance) -> String {
        var text =
            "method,dialogs,messages_per_dialog,messages,rounds,median_s,min_s,max_s,messages_per_s,"
            + "over_copy_median,over_copy_max,durability,settings,swift_version,build,cpu,host,timestamp\n"
        let messages = size.dialogs * size.messagesPerDialog
        for row in rows {
            let sorted = row.seconds.sorted()
            let ratios = row.overCopy.sorted()
            let median = Self.median(sorted)
            let fields: [String] = [
                row.method, "\(size.dialogs)", "\(size.messagesPerDialog)", "\(messages)", "\(row.seconds.count)",
                String(format: "%.6f", median), String(format: "%.6f", sorted.first ?? 0),
                String(format: "%.6f", sorted.last ?? 0), String(format: "%.0f", median > 0 ? Double(messages) / median : 0),
                String(format: "%.3f", Self.median(ratios)), String(format: "%.3f", ratios.last ?? 0),
                durability.rawValue, row.settings, provenance.swiftVersion, provenance.build, provenance.cpu,
                provenance.host, provenance.timestamp,
            ]
            text += fields.map(Self.quoted).joined(separator: ",") + "\n"
        }
        return text
    }

    static func median(_ sorted: [Double]) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func quoted(_ field: String) -> String {
        guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) else { return field }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
