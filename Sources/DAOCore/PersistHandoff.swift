/// The bookkeeping of one ``Storage/persist(handingOver:)`` call in an
/// adapter that writes each record as it is handed over (SQLite, LMDB), so
/// that the call answers exactly as ``Storage/persist(_:)`` does for the
/// array of the same records.
///
/// ``Storage/persist(_:)`` on an array saw every record before writing any,
/// and the ``DAO`` translated every plain object before that; so its errors
/// came in this order: the first translation error, then what stopped the
/// write. Handed over one at a time, a record can fail to be written before
/// a later plain object fails to translate. So after the first failure
/// ``run(_:stoppingAt:write:)`` goes on taking records without writing
/// them, and ``refusal(after:_:)`` reports the translation error, which
/// comes first in that order.
///
/// ```swift
/// var handoff = PersistHandoff<Record>(keepingRecords: store.commits.isObserved)
/// do {
///     try transaction {
///         try handoff.run(produce) { record in try writer.write(record) }
///     }
/// } catch {
///     if let refused = try handoff.refusal(after: error, produce) { throw refused }
///     throw error
/// }
/// if handoff.count > 0 { store.commits.didCommit(handoff.change) }
/// ```
public struct PersistHandoff<Record: DAOCore.Record> {
    /// How many records the last run was handed.
    public private(set) var count = 0
    /// Whether the records are kept for the commit's ``change``.
    private let keepsRecords: Bool
    /// The records of the last run, when kept.
    private var kept: [Record] = []
    /// The error that stopped the writes of the last run.
    private var failure: (any Error)?
    /// What `produce` itself threw, as it threw it.
    private var producerError: (any Error)?
    /// Whether `produce` ran to its end (or threw).
    private var produced = false

    /// A handoff that keeps the records for the commit's ``change`` when
    /// `keepingRecords` (someone observes the store: pass
    /// ``CommitBroadcaster/isObserved``), else lets each go once written.
    public init(keepingRecords: Bool) {
        keepsRecords = keepingRecords
    }

    /// Calls `produce` and writes each record it hands over with `write`,
    /// then throws the first write's error if one failed; call it inside the
    /// transaction, which that error then rolls back. Every run starts
    /// afresh (a transaction started again runs it again).
    ///
    /// After `write` throws, the records that follow are taken without
    /// being written, and `produce` goes on to its end, so that its own
    /// error, if it has one, still comes first. An error that `stopsAt` accepts (one after which
    /// the transaction is started again, as LMDB's full map) ends the run at
    /// once instead.
    /// - Throws: what `produce` throws, as it is; else the first error of
    ///   `write`.
    public mutating func run(
        _ produce: (_ hand: RecordHandoff<Record>) throws -> Void,
        stoppingAt stopsAt: (any Error) -> Bool = { _ in false },
        write: (borrowing Record) throws -> Void
    ) throws {
        count = 0
        kept.removeAll(keepingCapacity: true)
        failure = nil
        produced = false
        var stopped: (any Error)?
        do {
            // Neither closure escapes: `produce` is done with the one that
            // calls them when it returns.
            try withoutActuallyEscaping(write) { write in
                try withoutActuallyEscaping(stopsAt) { stopsAt in
                    try produce { (record: consuming Record) in
                        count += 1
                        if failure == nil {
                            do {
                                try write(record)
                            } catch {
                                if stopsAt(error) {
                                    stopped = error
                                    throw error
                                }
                                failure = error
                            }
                        }
                        if keepsRecords { kept.append(record) }
                    }
                }
            }
        } catch {
            if let stopped { throw stopped }
            produced = true
            producerError = error
            throw error
        }
        produced = true
        if let failure { throw failure }
    }

    /// After `error` ended the call (thrown by ``run(_:stoppingAt:write:)``,
    /// by the transaction around it, or before the transaction began):
    /// throws `produce`'s own error if it threw one; runs `produce` once
    /// more, writing nothing, if it never ran to its end (so its error is
    /// found). Returns an error the call reports instead of `error`, or
    /// `nil` (every record is stored as given, so none is refused before
    /// the write: `nil` whenever `produce` throws nothing).
    /// - Throws: what `produce` throws.
    public mutating func refusal(
        after error: any Error, _ produce: (_ hand: RecordHandoff<Record>) throws -> Void
    ) throws -> (any Error)? {
        if let producerError { throw producerError }
        if !produced {
            try produce { (record: consuming Record) in _ = record }
        }
        return nil
    }

    /// What the commit changed, for ``CommitBroadcaster/didCommit(_:)``: the
    /// records when they were kept; otherwise (nobody observed the store
    /// when the call began) records of this type, which ones not known.
    public var change: CommitChange {
        keepsRecords ? .persisted(kept) : .persisted(Record.self)
    }
}
