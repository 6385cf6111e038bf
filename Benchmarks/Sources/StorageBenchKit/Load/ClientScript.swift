import DAOCore
import DialogGraph
import Foundation
import Histogram
import Synchronization

/// One client's tallies, per operation type.
struct OperationTally: Sendable {
    var service = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
    var intended = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
    var count = 0
    var errors = 0
    var retries = 0
    var rows = 0
    var firstError: String?

    init() {
        service.autoResize = true
        intended.autoResize = true
    }

    /// Records one operation: its service time, its time from its intended
    /// start (paced runs), its rows, retries and error.
    mutating func record(service time: UInt64, intended fromIntended: UInt64?, rows: Int, retries: Int, error: (any Error)?) {
        _ = service.record(time)
        if let fromIntended { _ = intended.record(fromIntended) }
        count += 1
        self.rows += rows
        self.retries += retries
        if let error {
            errors += 1
            if firstError == nil { firstError = String(describing: error) }
        }
    }

    mutating func merge(_ other: OperationTally) {
        service.add(other.service)
        intended.add(other.intended)
        count += other.count
        errors += other.errors
        retries += other.retries
        rows += other.rows
        if firstError == nil { firstError = other.firstError }
    }
}

/// What one client does: its operations with their cumulative proportions, its
/// key chooser, its generator and its pace.
struct ClientScript: Sendable {
    enum Step {
        case read(Int64)
        case write(Dialog, inserted: Int64?)
        case messages(Int64, limit: Int, newestFirst: Bool)
        case append(Message)
        case readModifyWrite(Int64, Dialog)
    }

    let shared: LoadShared
    let cumulative: [(LoadOperation, Double)]
    var keys: KeyChooser
    var random: SplitMix64
    /// Nanoseconds between intended starts, or `nil` for no pace.
    let interval: UInt64?
    /// Operations this client runs, or `nil` to run until the deadline.
    let quota: Int?
    var tallies: [LoadOperation: OperationTally] = [:]
    var flip = false

    init(
        shared: LoadShared, operations: [LoadOperation: Double], distribution: KeyDistribution, seed: UInt64,
        rate: Double?, quota: Int?
    ) {
        self.shared = shared
        var total = 0.0
        var cumulative: [(LoadOperation, Double)] = []
        for (operation, share) in operations.sorted(by: { $0.key < $1.key }) {
            total += share
            cumulative.append((operation, total))
        }
        self.cumulative = cumulative
        keys = KeyChooser(distribution: distribution, count: shared.mix.dialogs, theta: shared.mix.zipfianTheta)
        random = SplitMix64(seed: seed)
        interval = rate.map { UInt64(max(1, 1e9 / $0)) }
        self.quota = quota
        for operation in operations.keys { tallies[operation] = OperationTally() }
    }

    /// The next operation and what it needs, made before its clock starts.
    mutating func next() -> (LoadOperation, Step) {
        let unit = Double(random.next() >> 11) * 0x1p-53
        let operation = cumulative.first { unit < $0.1 }?.0 ?? cumulative[cumulative.count - 1].0
        let latest = shared.latestDialog.load(ordering: .acquiring)
        switch operation {
        case .read:
            return (operation, .read(keys.next(&random, latest: latest)))
        case .update:
            flip.toggle()
            let id = keys.next(&random, latest: latest)
            return (operation, .write(shared.updated(id, flip: flip), inserted: nil))
        case .insert:
            let id = shared.nextDialog.wrappingAdd(1, ordering: .relaxed).oldValue
            return (operation, .write(shared.inserted(id), inserted: id))
        case .scan:
            return (operation, .messages(keys.next(&random, latest: latest), limit: shared.mix.scanLength, newestFirst: false))
        case .page:
            return (operation, .messages(keys.next(&random, latest: latest), limit: shared.mix.pageSize, newestFirst: true))
        case .append:
            return (operation, .append(shared.appended(to: keys.next(&random, latest: latest))))
        case .readModifyWrite:
            flip.toggle()
            let id = keys.next(&random, latest: latest)
            return (operation, .readModifyWrite(id, shared.updated(id, flip: flip)))
        }
    }

    /// Records one operation that started at `start` (intended at `intended`) and ended at `end`.
    mutating func record(
        _ operation: LoadOperation, start: UInt64, intended: UInt64, end: UInt64, rows: Int, retries: Int,
        error: (any Error)?
    ) {
        // Changed in place in the dictionary: a tally copied out and stored
        // back shared its histograms' counts with the one left in the
        // dictionary, so recording into the copy copied every count, once
        // per operation (under load, most of a client's time for a read from
        // memory, and memory traffic that the clients' cores shared).
        tallies[operation, default: OperationTally()].record(
            service: Swift.max(1, end &- start), intended: interval != nil ? Swift.max(1, end &- intended) : nil,
            rows: rows, retries: retries, error: error)
    }

    /// Publishes an acknowledged insert for `latest`.
    func acknowledge(_ step: Step) {
        if case .write(_, let inserted?) = step {
            var current = shared.latestDialog.load(ordering: .relaxed)
            while current < inserted {
                let (exchanged, original) = shared.latestDialog.compareExchange(
                    expected: current, desired: inserted, ordering: .acquiringAndReleasing)
                if exchanged { break }
                current = original
            }
        }
    }
}

/// Whether an error is worth a retry: the engine was busy.
func isBusy(_ error: any Error) -> Bool {
    (error as? StorageError)?.kind == .busy
}

/// The most times a busy call is made again.
let loadRetryLimit = 3
