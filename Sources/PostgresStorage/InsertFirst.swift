import DAOCore
import PostgresNIO
import Synchronization

/// Whether a `persist` call whose records go in one statement sends a plain
/// `INSERT` first, and the upsert only when that fails on a stored key.
///
/// A plain `INSERT` of new rows costs the server less than an upsert
/// (`INSERT … ON CONFLICT DO UPDATE` inserts speculatively and checks each
/// row against the key's index twice), and it deletes no children, which a
/// new parent has none of (``TreeSQL/insert``). A call cannot tell new
/// records from stored ones without asking the server, so each table keeps
/// what its recent calls found: after a call whose `INSERT` met a stored
/// key (SQLSTATE 23505), the next calls go straight to the upsert, 2 of
/// them after the first such call in a row, twice as many after each
/// further one, up to ``mostSkipped``; a call whose `INSERT` succeeds starts
/// the count again. A table that is only updated then pays one failed
/// `INSERT` in every ``mostSkipped`` + 1 calls, a table that is only
/// inserted into pays none.
///
/// The `INSERT` is the call's one statement, sent without `BEGIN`: a
/// statement is atomic on its own, so the one that fails leaves nothing, and
/// the upsert after it is the call's one statement too, made of the
/// records the call already holds (a ``PersistHandoff`` is not run again).
/// Between the two another client may write the same keys; the upsert then
/// writes over them, as it would have had it been sent first a moment later.
///
/// Races between calls on the counts only change which statement a call
/// sends first, never what it stores; the counts are relaxed atomics.
final class InsertFirst: Sendable {
    /// The most calls that go straight to the upsert after a failed `INSERT`.
    static let mostSkipped = 64
    /// The calls still to go straight to the upsert.
    private let skipped = Atomic<Int>(0)
    /// The failed `INSERT`s in a row, since the last one that succeeded.
    private let failures = Atomic<Int>(0)

    /// The calls still to go straight to the upsert.
    var callsToSkip: Int { skipped.load(ordering: .relaxed) }

    /// Whether the next call tries the plain `INSERT` first.
    func tries() -> Bool {
        let left = skipped.load(ordering: .relaxed)
        guard left > 0 else { return true }
        skipped.store(left - 1, ordering: .relaxed)
        return false
    }

    /// A call's `INSERT` succeeded.
    func inserted() {
        if failures.load(ordering: .relaxed) != 0 { failures.store(0, ordering: .relaxed) }
    }

    /// A call's `INSERT` met a stored key: the next calls go straight to the upsert.
    func collided() {
        let row = min(failures.load(ordering: .relaxed) + 1, 6)
        failures.store(row, ordering: .relaxed)
        skipped.store(min(Self.mostSkipped, 1 << row), ordering: .relaxed)
    }

    /// Sends the call's one statement: `insert`, when the table's recent
    /// calls suggest it, waited for, then `upsert` if it met a stored key;
    /// else `upsert`. Both take `binds`.
    /// - Throws: what the server and the driver throw, but the failed `INSERT`'s
    ///   unique violation.
    func sendAlone(insert: String, upsert: String, _ binds: [PostgresData], _ connection: ServerConnection) throws {
        guard tries() else {
            try connection.sendAlone(upsert, binds)
            return
        }
        try connection.sendAlone(insert, binds)
        do {
            _ = try connection.collect()
        } catch let error where PostgresErrors.sqlState(error) == "23505" {
            // The statement failed whole on a key stored before it: nothing of it is kept.
            collided()
            try connection.sendAlone(upsert, binds)
            return
        }
        inserted()
    }
}
