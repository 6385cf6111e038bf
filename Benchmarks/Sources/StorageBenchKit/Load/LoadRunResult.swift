import Foundation

/// How one load run goes: the mix, the client count and how long.
public struct LoadRunSettings: Sendable {
    /// The mix.
    public var mix: LoadMix
    /// Concurrent clients (the writer of a mix that has one comes on top).
    public var clients: Int
    /// Seconds measured (when ``operationCount`` is `nil`).
    public var durationSeconds: Double
    /// Operations over all clients, or `nil` to run for ``durationSeconds``.
    public var operationCount: Int?
    /// Operations per second over all clients, or `nil` for as fast as they can.
    public var targetRate: Double?
    /// Seconds run first and not measured (duration runs only).
    public var warmupSeconds: Double

    /// Creates settings.
    public init(
        mix: LoadMix, clients: Int, durationSeconds: Double, operationCount: Int?, targetRate: Double?,
        warmupSeconds: Double
    ) {
        self.mix = mix
        self.clients = clients
        self.durationSeconds = durationSeconds
        self.operationCount = operationCount
        self.targetRate = targetRate
        self.warmupSeconds = warmupSeconds
    }
}

/// The figures of one operation type (or of all, merged) in one run.
public struct LoadOperationFigures: Sendable, Hashable, Codable {
    /// The operation's name, or `all`.
    public var operation: String
    /// Operations that completed (with or without an error) in the measured window.
    public var operations: Int
    /// Completed operations per second.
    public var throughput: Double
    /// Operations that ended with an error.
    public var errors: Int
    /// Calls made again after a busy error.
    public var retries: Int
    /// Rows read or written (a dialog counts 1 + its messages).
    public var rows: Int
    /// Service-time latency percentiles and maximum, in microseconds.
    public var p50: Double, p90: Double, p99: Double, p999: Double, max: Double
    /// Latency from each operation's intended start (coordinated omission
    /// corrected), with a target rate only; microseconds.
    public var intendedP50: Double?, intendedP90: Double?, intendedP99: Double?, intendedP999: Double?,
        intendedMax: Double?
    /// The first error's description, or `nil`.
    public var firstError: String?
    /// The service-time latency at each percentile of ``LatencySpectrum/ladder``, or `nil` without operations.
    public var spectrum: LatencySpectrum? = nil
}

/// One backend × mix × client count.
public struct LoadRunResult: Sendable, Codable {
    /// The backend.
    public var backend: String
    /// The backend's raw reference, or `nil`.
    public var reference: String?
    /// The mix's name.
    public var mix: String
    /// The mix's proportions and distribution.
    public var mixDescription: String
    /// Clients.
    public var clients: Int
    /// How clients called the backend.
    public var api: String
    /// The settings in force.
    public var settings: String
    /// `full` or `none`.
    public var durability: String
    /// Dialogs × messages stored before the run.
    public var dialogs: Int, messagesPerDialog: Int
    /// The measured window, in seconds.
    public var seconds: Double
    /// The target rate, or `nil`.
    public var targetRate: Double?
    /// The seed.
    public var seed: UInt64
    /// Snapshots the observers received, or `nil` without observers.
    public var observerSnapshots: Int?
    /// The highest rise of resident memory since the store was opened, in bytes, or `nil`.
    public var peakResidentRise: Int64?
    /// The peak resident memory of the process that ran this backend × mix
    /// alone (a load worker), from its start to the end of this run, in
    /// bytes; `nil` when the run shared its process with other backends.
    public var peakResident: Int64? = nil
    /// Per operation type, then `all`.
    public var figures: [LoadOperationFigures]
    /// Why the run could not run at all (the store did not open or load), or `nil`.
    public var failure: String?

    /// The merged figures of every operation.
    public var all: LoadOperationFigures? { figures.first { $0.operation == "all" } }

    /// Errors over all operations (and a failure to run counts as one).
    public var errorCount: Int { (all?.errors ?? 0) + (failure == nil ? 0 : 1) }
}
