import DAOCore
import PostgresNIO

/// The records of one `persist` call, gathered into batches that are each
/// one statement a table (``RecordTable/send(_:parents:_:)``); a call of one
/// batch whose children hold none is one statement in all
/// (``RecordTable/sendTree(_:_:_:)``).
///
/// A batch ends when it holds `bound` rows or more (a record goes whole
/// into one batch, with every child it holds), and before a record that
/// holds a key the batch already holds, at any level: the statements of a
/// batch then never touch a row twice, and batches run in the order of the
/// records, so a later record with an earlier one's key wins, as writing the
/// records one after another would have it. A record that holds one key
/// twice below it is written row by row (``RecordTable/sendRowByRow(_:_:)``). While the server runs one batch, the next one is
/// gathered and encoded; it is sent once the first is answered, so at most
/// two batches are held at once.
struct WriteBatch<R: Record> {
    let table: RecordTable<R>
    let bound: Int
    private var records: [R] = []
    /// The keys of the batch's rows, by table, as the tables' indexes see them.
    private var keys: [ObjectIdentifier: Set<StoredValue>] = [:]
    private var rows = 0
    private var sentOne = false

    init(table: RecordTable<R>, bound: Int) {
        self.table = table
        self.bound = max(1, bound)
    }

    /// Adds `record` to the batch, sending the batch first when `record`
    /// holds one of its keys and after when it is full.
    /// - Throws: what encoding and sending throw (an earlier batch's failure too).
    mutating func add(_ record: R, _ connection: ServerConnection) throws {
        var added = table.collectKeys(record, into: &keys)
        if distinctKeys < rows + added {
            // A key the batch holds, or one the record holds twice: the batch goes first.
            try send(connection)
            keys.removeAll(keepingCapacity: true)
            added = table.collectKeys(record, into: &keys)
            if distinctKeys < added {
                // The record holds a key twice below it: its rows go one by one.
                _ = try connection.collect()
                try table.sendRowByRow(record, connection)
                sentOne = true
                keys.removeAll(keepingCapacity: true)
                return
            }
        }
        rows += added
        records.append(record)
        if rows >= bound { try send(connection) }
    }

    /// How many keys the batch holds, at every level.
    private var distinctKeys: Int { keys.values.reduce(0) { $0 + $1.count } }

    /// Sends what the batch holds; the call's transaction then commits.
    mutating func finish(_ connection: ServerConnection) throws {
        if !sentOne, !records.isEmpty {
            // One statement in all: atomic on its own, sent without BEGIN.
            if !table.hasLinks {
                try table.send(records, parents: nil, alone: true, connection)
                return
            }
            if let tree = table.tree {
                try table.sendTree(records, tree, connection)
                return
            }
        }
        try send(connection)
    }

    private mutating func send(_ connection: ServerConnection) throws {
        guard !records.isEmpty else { return }
        // The batch before it answered first (its failure is the call's).
        _ = try connection.collect()
        try table.send(records, parents: nil, connection)
        sentOne = true
        records.removeAll(keepingCapacity: true)
        keys.removeAll(keepingCapacity: true)
        rows = 0
    }
}
