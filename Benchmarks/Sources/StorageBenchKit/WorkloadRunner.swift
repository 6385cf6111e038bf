import DAOCore
import DialogGraph
import Foundation

/// Runs the operations of WORKLOAD.md, in order, on a fresh store in a fresh
/// temporary directory, through a backend's ``WorkloadSubject`` (plain objects
/// in and out; for an adapter, the public ``DAO``). The timing, the correctness
/// checks and the measurements are here, the same for every subject.
public enum WorkloadRunner {
    /// A failed correctness check: the store did not hold what was written.
    public struct CheckFailure: Error, CustomStringConvertible, Sendable {
        /// What differed.
        public let description: String
    }

    /// Runs `job` on `backend` with the generated `data` (which must be the job's
    /// size and seed) and returns what it measured; never throws: a failure is
    /// the result's ``IterationResult/error``.
    ///
    /// - Parameters:
    ///   - measuresMemory: whether to measure the rise of resident memory
    ///     (``IterationResult/workloadPeakRSSBytes``, each operation's
    ///     ``OperationMeasurement/peakRSSRiseBytes``, read-all's
    ///     ``OperationMeasurement/decodedBytes``): only in a process that runs
    ///     nothing else at the same time (a worker); never under callgrind.
    ///   - progress: called as each operation starts.
    ///   - gate: called outside the timed regions before each operation starts
    ///     (with run 0) and before each further run of an operation that runs
    ///     in place (``BenchOperation/runsInPlace``; with its run number): a
    ///     worker stepped by its parent waits there for its turn
    ///     (``SteppedWorkers``). It returns whether to take the
    ///     step: false before a further run ends that operation's runs (false
    ///     before a run 0 is a failure). A failure ends the iteration with
    ///     that error.
    public static func run(
        _ job: IterationJob, backend: Backend, data: WorkloadData, measuresMemory: Bool = false,
        progress: (BenchOperation) -> Void = { _ in }, gate: (BenchOperation, Int) throws -> Bool = { _, _ in true }
    ) -> IterationResult {
        var result = IterationResult(job: job)
        // Everything the workload hands the store is generated before the
        // memory figures start, so that they are the backend's alone.
        let updated = data.updated
        var probe = measuresMemory && !job.countsInstructions ? MemoryProbe() : nil
        let directory: URL
        do {
            directory = try makeScratchDirectory(backend.name)
        } catch {
            result.error = "could not create a temporary directory: \(error)"
            return result
        }
        var current = BenchOperation.persist
        do {
            try runOperations(
                job, backend: backend, data: data, updated: updated, directory: directory, result: &result,
                current: &current, probe: &probe, progress: progress, gate: gate)
        } catch {
            result.error = "\(current.rawValue): \(error)"
        }
        if var probe { result.workloadPeakRSSBytes = probe.workloadPeak() }
        removeScratchDirectory(directory)
        return result
    }

    // The subject lives only inside this function, so its store is closed before
    // its directory is removed.
    private static func runOperations(
        _ job: IterationJob, backend: Backend, data: WorkloadData, updated: [Dialog], directory: URL,
        result: inout IterationResult, current: inout BenchOperation, probe: inout MemoryProbe?,
        progress: (BenchOperation) -> Void, gate: (BenchOperation, Int) throws -> Bool
    ) throws {
        let selected = Set(job.operations)
        let size = job.size
        // Every operation's first run is taken: a gate that refuses it has failed.
        func enter(_ operation: BenchOperation) throws {
            guard try gate(operation, 0) else {
                throw CheckFailure(description: "the worker was told not to start \(operation.rawValue)")
            }
        }
        let m = size.messagesPerDialog
        let subject = try backend.open(directory, job.durability)
        result.settings = subject.settingsDescription
        // A subject on memory of its own (a C reference) has what it will
        // write converted now, and holds its reads' answers until they are
        // taken after each timed region (HoldingSubject).
        let holding = subject as? any HoldingSubject
        try holding?.prepareInputs([data.initial, updated, data.extra])

        // The memory probe brackets each timed region, outside it.
        var rise: Int64?
        func begin() -> UInt64 {
            probe?.beginOperation()
            return TimedRegion.begin()
        }
        func stop(_ start: UInt64) -> Double {
            let elapsed = TimedRegion.seconds(since: start, in: current)
            rise = probe?.endOperation()
            return elapsed
        }
        func record(_ measurement: OperationMeasurement) {
            var measurement = measurement
            measurement.peakRSSRiseBytes = rise
            rise = nil
            if selected.contains(measurement.operation) { result.measurements.append(measurement) }
        }

        // persist: everything after it needs the initial graph.
        current = .persist
        try enter(.persist)
        progress(.persist)
        var start = begin()
        try subject.persist(data.initial)
        record(OperationMeasurement(operation: .persist, seconds: stop(start), units: size.dialogs * m))

        // A read-only operation runs again in place, on the unchanged store,
        // while its runs are fewer than job.readRuns and either fewer than
        // job.minReadRuns or adding up to less than job.readRunSeconds, and
        // the gate lets it (a stepped pair stops together); never under
        // callgrind, whose counts are of one run. Its time is the median of
        // its runs. Memory is measured in the
        // first run only; each run of read-all starts, as the first does, after
        // the allocator has given its free pages back.
        let readRuns = job.countsInstructions ? 1 : max(1, job.readRuns)
        func runsAgain(_ operation: BenchOperation, _ runs: [Double]) throws -> Bool {
            guard runs.count < readRuns, runs.count < job.minReadRuns || runs.reduce(0, +) < job.readRunSeconds
            else { return false }
            return try gate(operation, runs.count)
        }
        func readMeasurement(
            _ operation: BenchOperation, runs: [Double], units: Int, calls: [UInt64]? = nil
        ) -> OperationMeasurement {
            var measurement = OperationMeasurement(
                operation: operation, seconds: Self.median(runs), units: units, callNanoseconds: calls)
            if runs.count > 1 { measurement.runSeconds = runs }
            return measurement
        }

        if selected.contains(.readAll) {
            current = .readAll
            try enter(.readAll)
            progress(.readAll)
            // The allocator's free pages go back first, so that the rise of
            // resident memory counts what reading everything touches.
            if probe != nil { MemoryProbe.trimHeap() }
            // The graph lives only inside this closure: what the allocator
            // gets back when it returns is the decoded graph's size.
            let (elapsed, count, held) = try { () throws -> (Double, Int, Int64?) in
                let start = begin()
                let all: [Dialog]
                let elapsed: Double
                var held: Int64?
                if let holding {
                    try holding.holdAll()
                    elapsed = stop(start)
                    held = probe == nil ? nil : MemoryProbe.heapInUse()
                    all = try holding.takeHeldDialogs()
                } else {
                    all = try subject.readAll()
                    elapsed = stop(start)
                }
                try checkReadAll(all, size: size)
                let count = all.reduce(0) { $0 + $1.messages.count }
                if holding == nil { held = probe == nil ? nil : withExtendedLifetime(all) { MemoryProbe.heapInUse() } }
                return (elapsed, count, held)
            }()
            let decoded = held.flatMap { held in MemoryProbe.heapInUse().map { max(0, held - $0) } }
            var runs = [elapsed]
            while try runsAgain(.readAll, runs) {
                // Each run starts as the first did: the free pages given back.
                if probe != nil { MemoryProbe.trimHeap() }
                runs.append(
                    try { () throws -> Double in
                        let start = Self.now()
                        let all: [Dialog]
                        let elapsed: Double
                        if let holding {
                            try holding.holdAll()
                            elapsed = Self.seconds(since: start)
                            all = try holding.takeHeldDialogs()
                        } else {
                            all = try subject.readAll()
                            elapsed = Self.seconds(since: start)
                        }
                        try checkReadAll(all, size: size)
                        return elapsed
                    }())
            }
            var measurement = readMeasurement(.readAll, runs: runs, units: count)
            measurement.decodedBytes = decoded
            record(measurement)
        }

        if selected.contains(.readById) {
            current = .readById
            try enter(.readById)
            progress(.readById)
            var calls: [UInt64] = []
            calls.reserveCapacity(data.readIds.count)
            var first: Dialog?
            // Another run of the K lookups, each call timed; its first answer is checked too.
            func lookups() throws -> Double {
                var found = 0
                var answer: Dialog?
                let start = Self.now()
                if let holding {
                    for id in data.readIds {
                        let callStart = Self.now()
                        if try holding.holdDialog(id: id) { found += 1 }
                        calls.append(Self.now() - callStart)
                    }
                } else {
                    for id in data.readIds {
                        let callStart = Self.now()
                        let dialog = try subject.read(dialogId: id)
                        calls.append(Self.now() - callStart)
                        if dialog != nil { found += 1 }
                        if answer == nil { answer = dialog }
                    }
                }
                let elapsed = Self.seconds(since: start)
                guard found == data.readIds.count else {
                    throw CheckFailure(description: "read-by-id found \(found) of \(data.readIds.count) dialogs")
                }
                if let holding { try checkHeldLookups(holding, data: data, what: ", run again") }
                if let id = data.readIds.first, let answer {
                    try compare(answer, data.initial[Int(id) - 1], what: "read-by-id of dialog \(id), run again")
                }
                return elapsed
            }
            start = begin()
            var found = 0
            if let holding {
                for id in data.readIds {
                    let callStart = now()
                    if try holding.holdDialog(id: id) { found += 1 }
                    calls.append(now() - callStart)
                }
            } else {
                for id in data.readIds {
                    let callStart = now()
                    let dialog = try subject.read(dialogId: id)
                    calls.append(now() - callStart)
                    if dialog != nil { found += 1 }
                    if first == nil { first = dialog }
                }
            }
            let elapsed = stop(start)
            guard found == data.readIds.count else {
                throw CheckFailure(description: "read-by-id found \(found) of \(data.readIds.count) dialogs")
            }
            if let holding { try checkHeldLookups(holding, data: data, what: "") }
            if let id = data.readIds.first, let first {
                try compare(first, data.initial[Int(id) - 1], what: "read-by-id of dialog \(id)")
            }
            var runs = [elapsed]
            while try runsAgain(.readById, runs) { runs.append(try lookups()) }
            record(readMeasurement(.readById, runs: runs, units: data.readIds.count, calls: calls))
        }

        if selected.contains(.query) {
            current = .query
            try enter(.query)
            progress(.query)
            var calls: [UInt64] = []
            calls.reserveCapacity(data.queryIds.count)
            var first: [Message]?
            start = begin()
            if let holding {
                for id in data.queryIds {
                    let callStart = now()
                    try holding.holdUnreadMessages(dialogId: id)
                    calls.append(now() - callStart)
                }
            } else {
                for id in data.queryIds {
                    let callStart = now()
                    let unread = try subject.unreadMessages(dialogId: id)
                    calls.append(now() - callStart)
                    if first == nil { first = unread }
                }
            }
            let elapsed = stop(start)
            if let holding { first = holding.takeHeldMessages().first }
            let firstId = data.queryIds.first
            let expected = firstId.map { id in
                data.initial[Int(id) - 1].messages.filter { !$0.isRead }
                    .sorted { $0.date != $1.date ? $0.date > $1.date : $0.uniqueId < $1.uniqueId }
            }
            if let id = firstId, let first, let expected {
                try compare(first, expected, what: "query of dialog \(id)")
            }
            // Another run of the K queries, each call timed; its first answer is checked too.
            func queries() throws -> Double {
                var answer: [Message]?
                let start = Self.now()
                if let holding {
                    for id in data.queryIds {
                        let callStart = Self.now()
                        try holding.holdUnreadMessages(dialogId: id)
                        calls.append(Self.now() - callStart)
                    }
                } else {
                    for id in data.queryIds {
                        let callStart = Self.now()
                        let unread = try subject.unreadMessages(dialogId: id)
                        calls.append(Self.now() - callStart)
                        if answer == nil { answer = unread }
                    }
                }
                let elapsed = Self.seconds(since: start)
                if let holding { answer = holding.takeHeldMessages().first }
                if let id = firstId, let answer, let expected {
                    try compare(answer, expected, what: "query of dialog \(id), run again")
                }
                return elapsed
            }
            var runs = [elapsed]
            while try runsAgain(.query, runs) { runs.append(try queries()) }
            record(readMeasurement(.query, runs: runs, units: data.queryIds.count, calls: calls))
        }

        // The borrowing reads (outside workload v1): each the same read as
        // its v1 operation, through the subject's borrowing read, every
        // record lent folded into a digest that must equal the digest of
        // what the read answers, computed from the generated graph outside
        // the timed region (expectedDigest). Timed, run again and measured
        // as the v1 reads are.
        // What they need is prepared before the first, outside its region.
        if let first = BenchOperation.borrowingReads.first(where: selected.contains) {
            current = first
            try subject.prepareBorrowingReads()
        }
        for operation in BenchOperation.borrowingReads where selected.contains(operation) {
            current = operation
            try enter(operation)
            progress(operation)
            let expected = Self.expectedDigest(operation, data: data)
            let perCall = operation.isPerCall
            let ids = perCall ? (operation.plainRead == .readById ? data.readIds : data.queryIds) : [0]
            var calls: [UInt64] = []
            if perCall { calls.reserveCapacity(ids.count) }
            // One run: every call, each timed when the operation is per call;
            // the digest checked after the timed region.
            func lend(first: Bool) throws -> (seconds: Double, digest: ReadDigest) {
                var digest = ReadDigest()
                var missing = 0
                func call(_ id: Int64) throws {
                    if let holding {
                        // A C reference has one borrowing read: its structs folded.
                        switch operation.plainRead {
                        case .readAll: try holding.foldAll(into: &digest)
                        case .readById:
                            if try !holding.foldDialog(id: id, into: &digest) { missing += 1 }
                        default: try holding.foldUnreadMessages(dialogId: id, into: &digest)
                        }
                        return
                    }
                    switch operation {
                    case .readAllBorrowing: try subject.forEachDialog { dialog in digest.add(dialog) }
                    case .readByIdBorrowing:
                        if try !subject.withDialog(id: id, { dialog in digest.add(dialog) }) { missing += 1 }
                    case .queryBorrowing:
                        try subject.forEachUnreadMessage(dialogId: id) { message in digest.add(message) }
                    case .readAllView: try subject.viewAll(into: &digest)
                    case .readByIdView:
                        if try !subject.viewDialog(id: id, into: &digest) { missing += 1 }
                    default: try subject.viewUnreadMessages(dialogId: id, into: &digest)
                    }
                }
                let start = first ? begin() : Self.now()
                for id in ids {
                    if perCall {
                        let callStart = Self.now()
                        try call(id)
                        calls.append(Self.now() - callStart)
                    } else {
                        try call(id)
                    }
                }
                let elapsed = first ? stop(start) : Self.seconds(since: start)
                guard missing == 0, digest == expected else {
                    throw CheckFailure(
                        description: "\(operation.rawValue)\(first ? "" : ", run again,") consumed \(digest)"
                            + (missing > 0 ? " (\(missing) dialogs not found)" : "") + "; the read answers \(expected)")
                }
                return (elapsed, digest)
            }
            let (elapsed, digest) = try lend(first: true)
            var runs = [elapsed]
            while try runsAgain(operation, runs) { runs.append(try lend(first: false).seconds) }
            let units = perCall ? ids.count : digest.messages
            record(readMeasurement(operation, runs: runs, units: units, calls: perCall ? calls : nil))
        }

        if selected.contains(.update) {
            current = .update
            try enter(.update)
            progress(.update)
            start = begin()
            try subject.update(updated)
            let elapsed = stop(start)
            result.bytesOnDisk = try subject.bytesStoredElsewhere() ?? directorySize(directory)
            try check(subject, expected: updated, size: size)
            // update runs again in place (never under callgrind, whose
            // counts are of one run) while its runs are fewer than
            // job.updateRuns and one more restore and run fit in
            // job.updateRunSeconds (updatesAgain), and the gate lets it (a
            // stepped pair stops together). Before each further run the
            // store is put back, untimed, to what it held before update:
            // the dialogs as persist wrote them (their messages not yet
            // read), upserted again in one call through the subject's own
            // update, then checked (checkRestoredBeforeUpdate); each further
            // run is checked as the first. The iteration's time is the
            // median of the runs.
            let updateRuns = job.countsInstructions ? 1 : max(1, job.updateRuns)
            var runs = [elapsed]
            var restoring = 0.0
            if updateRuns > 1 {
                let unread = data.initial.reduce(0) { sum, dialog in sum + dialog.messages.count { message in !message.isRead } }
                while Self.updatesAgain(runs: runs, restoring: restoring, most: updateRuns, seconds: job.updateRunSeconds),
                    try gate(.update, runs.count)
                {
                    let restoreStart = Self.now()
                    try subject.update(data.initial)
                    try checkRestoredBeforeUpdate(subject, initial: data.initial, size: size, unread: unread)
                    restoring += Self.seconds(since: restoreStart)
                    let runStart = Self.now()
                    try subject.update(updated)
                    runs.append(Self.seconds(since: runStart))
                    let checkStart = Self.now()
                    try check(subject, expected: updated, size: size)
                    restoring += Self.seconds(since: checkStart)
                }
            }
            record(Self.inPlaceMeasurement(.update, runs: runs, restoring: restoring, units: size.dialogs * m))
        }

        let erases = selected.contains(.eraseById) || selected.contains(.eraseAll)
        if selected.contains(.persistSingle) {
            current = .persistSingle
            try enter(.persistSingle)
            progress(.persistSingle)
            let total = data.extra.count
            let timed = min(backend.singleCallLimit ?? total, total)
            var calls: [UInt64] = []
            calls.reserveCapacity(timed)
            start = begin()
            for dialog in data.extra.prefix(timed) {
                let callStart = now()
                try subject.persistSingle(dialog)
                calls.append(now() - callStart)
            }
            let elapsed = stop(start)
            var note: String?
            if timed < total {
                try subject.persist(Array(data.extra[timed...]))
                note = "timed \(timed) of \(total) single-dialog calls; the other \(total - timed) were persisted in one untimed call"
            }
            record(
                OperationMeasurement(
                    operation: .persistSingle, seconds: elapsed, units: timed, callNanoseconds: calls, note: note))
        } else if erases {
            try subject.persist(data.extra)
        }

        if selected.contains(.eraseById) {
            current = .eraseById
            try enter(.eraseById)
            progress(.eraseById)
            let before = try subject.messageCount()
            start = begin()
            let erased = try subject.erase(dialogIds: data.eraseIds)
            let elapsed = stop(start)
            let after = try subject.messageCount()
            guard erased == data.eraseIds.count, before - after == erased * m else {
                throw CheckFailure(
                    description: "erase-by-id erased \(erased) dialogs and \(before - after) messages "
                        + "(expected \(data.eraseIds.count) and \(data.eraseIds.count * m))")
            }
            record(OperationMeasurement(operation: .eraseById, seconds: elapsed, units: before - after))
        }

        if selected.contains(.eraseAll) {
            current = .eraseAll
            try enter(.eraseAll)
            progress(.eraseAll)
            let before = try subject.messageCount()
            let dialogsBefore = try subject.dialogCount()
            // Every run is checked as the first: all of it erased, nothing left.
            func checkErasedAll(_ erased: Int, run: String) throws {
                let after = try subject.messageCount()
                let dialogsAfter = try subject.dialogCount()
                guard erased == dialogsBefore, after == 0, dialogsAfter == 0 else {
                    throw CheckFailure(
                        description: "erase-all\(run) erased \(erased) of \(dialogsBefore) dialogs and left "
                            + "\(dialogsAfter) dialogs and \(after) messages")
                }
            }
            start = begin()
            let erased = try subject.eraseAll()
            let elapsed = stop(start)
            try checkErasedAll(erased, run: "")
            // erase-all runs again in place (never under callgrind, whose
            // counts are of one run) while its runs are fewer than
            // job.eraseRuns and its runs and their restores add up to less
            // than job.eraseRunSeconds, and the gate lets it (a stepped
            // pair stops together). Before each further run the store is
            // put back, untimed, through the subject's own API: what the
            // first run erased, persisted again in one call, then checked
            // to be there. The iteration's time is the median of the runs.
            let eraseRuns = job.countsInstructions ? 1 : max(1, job.eraseRuns)
            var runs = [elapsed]
            var restoring = 0.0
            if eraseRuns > 1 {
                let left = Self.dialogsLeft(
                    data: data, updated: selected.contains(.update) ? updated : data.initial,
                    erasedById: selected.contains(.eraseById))
                while runs.count < eraseRuns, runs.reduce(0, +) + restoring < job.eraseRunSeconds,
                    try gate(.eraseAll, runs.count)
                {
                    let restoreStart = Self.now()
                    try subject.persist(left)
                    try checkRestored(subject, left: left, dialogs: dialogsBefore, messages: before)
                    restoring += Self.seconds(since: restoreStart)
                    let runStart = Self.now()
                    let erased = try subject.eraseAll()
                    runs.append(Self.seconds(since: runStart))
                    try checkErasedAll(erased, run: ", run again,")
                }
            }
            record(Self.inPlaceMeasurement(.eraseAll, runs: runs, restoring: restoring, units: before))
        }
    }

    /// What the store holds when `erase-all` starts: `updated` (the graph
    /// as `update` left it, or the initial one when it did not run) and
    /// the dialogs above D, less every even id when `erase-by-id` ran.
    static func dialogsLeft(data: WorkloadData, updated: [Dialog], erasedById: Bool) -> [Dialog] {
        let all = updated + data.extra
        return erasedById ? all.filter { $0.uniqueId % 2 != 0 } : all
    }

    /// The check after the store is put back for a further run of
    /// `erase-all`: as many dialogs and messages as before its first run,
    /// and a sample of the dialogs put back read and compared field by field.
    static func checkRestored(_ subject: some WorkloadSubject, left: [Dialog], dialogs: Int, messages: Int) throws {
        let dialogCount = try subject.dialogCount()
        let messageCount = try subject.messageCount()
        guard dialogCount == dialogs, messageCount == messages else {
            throw CheckFailure(
                description: "put back for erase-all to run again, the store holds \(dialogCount) dialogs and "
                    + "\(messageCount) messages (expected \(dialogs) and \(messages))")
        }
        try checkSample(subject, of: left, "put back for erase-all to run again")
    }

    /// The measurement of an operation that ran `runs.count` times in place
    /// with the store put back between runs (`restoring` seconds, untimed):
    /// the median run, and every run and the restores when it ran more than once.
    static func inPlaceMeasurement(
        _ operation: BenchOperation, runs: [Double], restoring: Double, units: Int
    ) -> OperationMeasurement {
        var measurement = OperationMeasurement(operation: operation, seconds: median(runs), units: units)
        if runs.count > 1 {
            measurement.runSeconds = runs
            measurement.restoreSeconds = restoring
        }
        return measurement
    }

    /// Whether `update` runs again in place after `runs` (their seconds)
    /// and `restoring` (the seconds of the restores and checks so far):
    /// while its runs are fewer than `most` and a further restore and run,
    /// each reckoned as long as the last run (a restore is an upsert of as
    /// many records), still fit in `seconds` with what was spent. Unlike
    /// `erase-all`'s restores, which are far longer than its runs, a
    /// further `update` costs about twice a run: a backend whose single run
    /// takes more than a third of the budget runs once rather than
    /// overrunning it.
    static func updatesAgain(runs: [Double], restoring: Double, most: Int, seconds: Double) -> Bool {
        guard runs.count < most, let last = runs.last else { return false }
        return runs.reduce(0, +) + restoring + 2 * last <= seconds
    }

    /// The check after the store is put back for a further run of
    /// `update`: as many dialogs and messages as `persist` wrote, as many of
    /// them unread (`unread`, counted in `initial`), and a sample of the
    /// dialogs read and compared field by field with `initial`.
    static func checkRestoredBeforeUpdate(
        _ subject: some WorkloadSubject, initial: [Dialog], size: BenchSize, unread: Int
    ) throws {
        let dialogCount = try subject.dialogCount()
        let messageCount = try subject.messageCount()
        let unreadCount = try subject.unreadMessageCount()
        guard dialogCount == size.dialogs, messageCount == size.dialogs * size.messagesPerDialog,
            unreadCount == unread
        else {
            throw CheckFailure(
                description: "put back for update to run again, the store holds \(dialogCount) dialogs and "
                    + "\(messageCount) messages, \(unreadCount) unread (expected \(size.dialogs), "
                    + "\(size.dialogs * size.messagesPerDialog), \(unread))")
        }
        try checkSample(subject, of: Array(initial.prefix(size.dialogs)), "put back for update to run again")
    }

    /// The check of the lookups a ``HoldingSubject`` held in a run of
    /// `read-by-id` (taken after its timed region): each found dialog, in
    /// the order of the lookups, compared field by field with the one written.
    static func checkHeldLookups(_ holding: some HoldingSubject, data: WorkloadData, what: String) throws {
        let answers = try holding.takeHeldDialogs()
        for (id, answer) in zip(data.readIds, answers) {
            try compare(answer, data.initial[Int(id) - 1], what: "read-by-id of dialog \(id)\(what)")
        }
    }

    /// The check of `read-all`'s answer: every dialog with all its messages, ordered by id.
    static func checkReadAll(_ all: [Dialog], size: BenchSize) throws {
        let count = all.reduce(0) { $0 + $1.messages.count }
        guard all.count == size.dialogs, count == size.dialogs * size.messagesPerDialog,
            all.map(\.uniqueId) == Array(1...Int64(size.dialogs))
        else {
            throw CheckFailure(
                description: "read-all returned \(all.count) dialogs with \(count) messages "
                    + "(expected \(size.dialogs) with \(size.dialogs * size.messagesPerDialog), ordered by id)")
        }
    }

    /// The digest of what a borrowing read must consume on the store as
    /// `persist` left it: every dialog of the initial graph in id order
    /// (`read-all-borrowing`), the dialog of each lookup
    /// (`read-by-id-borrowing`), or the unread messages of each query's
    /// dialog, newest first, ties by id (`query-borrowing`), as the v1 read
    /// answers them; an empty digest for another operation.
    static func expectedDigest(_ operation: BenchOperation, data: WorkloadData) -> ReadDigest {
        var digest = ReadDigest()
        switch operation.plainRead {
        case .readAll:
            for dialog in data.initial { digest.add(dialog) }
        case .readById:
            for id in data.readIds { digest.add(data.initial[Int(id) - 1]) }
        case .query:
            for id in data.queryIds {
                let unread = data.initial[Int(id) - 1].messages.filter { !$0.isRead }
                    .sorted { $0.date != $1.date ? $0.date > $1.date : $0.uniqueId < $1.uniqueId }
                for message in unread { digest.add(message) }
            }
        default:
            break
        }
        return digest
    }

    /// The median of `runs` (one run: itself).
    static func median(_ runs: [Double]) -> Double {
        SampleStatistics(runs)?.median ?? 0
    }

    /// Seconds since the clock reading `start` (``now()``).
    @inline(__always)
    static func seconds(since start: UInt64) -> Double { Double(now() - start) / 1e9 }

    /// The correctness check of WORKLOAD.md after `update`: the counts, no unread
    /// message, and a sample of dialogs compared field by field.
    static func check(_ subject: some WorkloadSubject, expected: [Dialog], size: BenchSize) throws {
        let dialogCount = try subject.dialogCount()
        let messageCount = try subject.messageCount()
        let unread = try subject.unreadMessageCount()
        guard dialogCount == size.dialogs, messageCount == size.dialogs * size.messagesPerDialog, unread == 0 else {
            throw CheckFailure(
                description: "after update the store holds \(dialogCount) dialogs and \(messageCount) messages, "
                    + "\(unread) unread (expected \(size.dialogs), \(size.dialogs * size.messagesPerDialog), 0)")
        }
        try checkSample(subject, of: Array(expected.prefix(size.dialogs)), "after update")
    }

    /// Reads a sample of `dialogs` (``sampleIds(count:)`` as positions) back
    /// by id and compares each with the one expected, field by field.
    /// - Throws: ``CheckFailure`` saying `situation` when one is missing or
    ///   differs.
    static func checkSample(_ subject: some WorkloadSubject, of dialogs: [Dialog], _ situation: String) throws {
        let sample = sampleIds(count: dialogs.count).map { dialogs[Int($0) - 1] }
        let read = try subject.read(dialogIds: sample.map(\.uniqueId))
        guard read.count == sample.count else {
            throw CheckFailure(description: "\(situation), \(read.count) of the \(sample.count) sampled dialogs were found")
        }
        for (dialog, expected) in zip(read, sample) {
            try compare(dialog, expected, what: "dialog \(expected.uniqueId) \(situation)")
        }
    }

    /// Up to 16 dialog ids spread over 1…`count`, the first and the last among them.
    static func sampleIds(count: Int) -> [Int64] {
        let n = min(count, 16)
        guard n > 1 else { return [1] }
        var ids: [Int64] = []
        for i in 0..<n {
            let id = 1 + Int64(i * (count - 1) / (n - 1))
            if ids.last != id { ids.append(id) }
        }
        return ids
    }

    /// Compares a dialog read back with the one written, field by field.
    /// - Throws: ``CheckFailure`` naming the first field that differs.
    static func compare(_ actual: Dialog, _ expected: Dialog, what: String) throws {
        guard actual.uniqueId == expected.uniqueId else {
            throw CheckFailure(description: "\(what): id is \(actual.uniqueId), expected \(expected.uniqueId)")
        }
        guard actual.isPinned == expected.isPinned else {
            throw CheckFailure(description: "\(what): isPinned is \(actual.isPinned), expected \(expected.isPinned)")
        }
        try compare(actual.messages, expected.messages, what: what)
    }

    /// Compares messages read back with those written, in order, field by field;
    /// dates must agree to the millisecond.
    /// - Throws: ``CheckFailure`` naming the first field that differs.
    static func compare(_ actual: [Message], _ expected: [Message], what: String) throws {
        guard actual.count == expected.count else {
            throw CheckFailure(description: "\(what): \(actual.count) messages, expected \(expected.count)")
        }
        for (a, e) in zip(actual, expected) {
            func fail(_ field: String, _ got: Any, _ want: Any) -> CheckFailure {
                CheckFailure(description: "\(what): message \(e.uniqueId) \(field) is \(got), expected \(want)")
            }
            if a.uniqueId != e.uniqueId { throw fail("id", a.uniqueId, e.uniqueId) }
            if a.dialogId != e.dialogId { throw fail("dialogId", a.dialogId, e.dialogId) }
            if abs(a.date.timeIntervalSince1970 - e.date.timeIntervalSince1970) >= 0.0005 {
                throw fail("date", a.date.timeIntervalSince1970, e.date.timeIntervalSince1970)
            }
            if a.text != e.text { throw fail("text", a.text.debugDescription, e.text.debugDescription) }
            if a.senderId != e.senderId { throw fail("senderId", a.senderId, e.senderId) }
            if a.receiverId != e.receiverId { throw fail("receiverId", a.receiverId, e.receiverId) }
            if a.type != e.type { throw fail("type", a.type, e.type) }
            if a.isIncoming != e.isIncoming { throw fail("isIncoming", a.isIncoming, e.isIncoming) }
            if a.isRead != e.isRead { throw fail("isRead", a.isRead, e.isRead) }
        }
    }

    /// The total size of the regular files under `directory`, in bytes.
    /// - Throws: when the directory cannot be listed or a size read.
    public static func directorySize(_ directory: URL) throws -> Int64 {
        let keys: [URLResourceKey] = [.isRegularFileKey, .fileSizeKey]
        guard let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: keys) else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: directory.path])
        }
        var total: Int64 = 0
        for case let url as URL in enumerator {
            let values = try url.resourceValues(forKeys: Set(keys))
            if values.isRegularFile == true { total += Int64(values.fileSize ?? 0) }
        }
        return total
    }

    @inline(__always)
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
