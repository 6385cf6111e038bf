import CLMDB
import DAOCore
import Foundation
import Synchronization

// Read and write transactions: kept readers, retries, and the map growing when a write fills it.
extension LMDBEnvironment {
    /// Runs `body` in a read-only transaction, which ends (is aborted) when
    /// `body` returns or throws. Values read are valid only inside `body`.
    ///
    /// - Throws: ``StorageError/Kind/closed`` after ``close()``, or what
    ///   `body` throws.
    func read<T>(_ operation: StorageError.Operation, _ body: (borrowing Transaction) throws -> T) throws -> T {
        while true {
            if StoreExecutor.readsMustNotWait {
                // A read in place for an `async` call: the map is being resized
                // or the environment closed, so it moves to a reader thread.
                guard pthread_rwlock_tryrdlock(resizeLock) == 0 else { throw StoreExecutor.wouldWait() }
            } else {
                pthread_rwlock_rdlock(resizeLock)
            }
            if isClosed {
                pthread_rwlock_unlock(resizeLock)
                throw StorageError.closed(operation, path: path)
            }
            var txn: OpaquePointer?
            var code = Int32(MDB_NOTFOUND)
            if let kept = takeKeptReader() {
                code = mdb_txn_renew(kept)
                if code == MDB_SUCCESS {
                    txn = kept
                } else {
                    mdb_txn_abort(kept)
                }
            }
            // None kept, or renewing failed: a new transaction, whose error
            // (a grown map included) is the one handled.
            if txn == nil { code = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn) }
            if code == MDB_MAP_RESIZED {
                // Another process grew the map: adopt its size, then retry.
                pthread_rwlock_unlock(resizeLock)
                if StoreExecutor.readsMustNotWait { throw StoreExecutor.wouldWait() }
                writeLock.lock()
                defer { writeLock.unlock() }
                try adoptGrownMap(operation)
                continue
            }
            defer { pthread_rwlock_unlock(resizeLock) }
            guard code == MDB_SUCCESS, let txn else {
                throw LMDBError.error(code, operation, path: path, call: "mdb_txn_begin")
            }
            // The transaction ends inside `run`, before the lock is released.
            return try Self.run(Transaction(txn, environment: self, operation: operation, isReusable: true), body)
        }
    }

    /// Ends the read-only transaction `txn`: resets it and keeps it for a
    /// later read, or aborts it when enough are kept. Called with
    /// `resizeLock` held for reading, so ``close()`` is not running.
    func keepReader(_ txn: OpaquePointer) {
        mdb_txn_reset(txn)
        if fastReader.compareExchange(expected: 0, desired: UInt(bitPattern: txn), ordering: .releasing).exchanged {
            return
        }
        let kept = keptReaders.withLock { kept in
            guard kept.handles.count < Self.maxKeptReaders - 1 else { return false }
            kept.handles.append(ReaderHandle(pointer: txn))
            return true
        }
        if !kept { mdb_txn_abort(txn) }
    }

    /// A kept read transaction, reset: the one in ``fastReader`` first,
    /// else one of the pool's; `nil` when none is kept.
    private func takeKeptReader() -> OpaquePointer? {
        if let kept = OpaquePointer(bitPattern: fastReader.exchange(0, ordering: .acquiring)) { return kept }
        return keptReaders.withLock { $0.handles.popLast() }?.pointer
    }

    /// Aborts the kept read transactions, before the handle is closed.
    func abortKeptReaders() {
        if let kept = OpaquePointer(bitPattern: fastReader.exchange(0, ordering: .acquiring)) { mdb_txn_abort(kept) }
        let handles = keptReaders.withLock { kept in
            defer { kept.handles.removeAll() }
            return kept.handles
        }
        for handle in handles { mdb_txn_abort(handle.pointer) }
    }

    /// Calls `body` with `transaction`, which ends (aborts unless committed)
    /// when this returns.
    private static func run<T>(
        _ transaction: consuming Transaction, _ body: (borrowing Transaction) throws -> T
    ) throws -> T {
        try body(transaction)
    }

    /// Runs `body` in a write transaction and commits it when `body` returns; a
    /// throw aborts it, so nothing of it is stored. Writers run one at a time.
    /// When the map is full the transaction is aborted, the map doubled and
    /// `body` run again, so `body` must do nothing but transaction work.
    ///
    /// - Throws: ``StorageError/Kind/readOnly`` in a read-only environment,
    ///   ``StorageError/Kind/closed`` after ``close()``, or what `body` and the
    ///   commit throw.
    func write<T>(_ operation: StorageError.Operation, _ body: (borrowing Transaction) throws -> T) throws -> T {
        if isReadOnly {
            throw StorageError(
                .readOnly, operation, path: path, engineCode: EACCES,
                message: "the environment was opened read-only")
        }
        writeLock.lock()
        defer { writeLock.unlock() }
        guard !isClosed else { throw StorageError.closed(operation, path: path) }
        while true {
            do {
                return try attemptWrite(operation, body)
            } catch let error as StorageError where error.engineCode == MDB_MAP_FULL {
                try grow(operation)
            } catch let error as StorageError where error.engineCode == MDB_MAP_RESIZED {
                try adoptGrownMap(operation)
            }
        }
    }

    /// Whether `error` is one after which ``write(_:_:)`` aborts the
    /// transaction, grows or adopts the map and runs its body again.
    static func startsWriteAgain(_ error: any Error) -> Bool {
        guard let error = error as? StorageError else { return false }
        return error.engineCode == MDB_MAP_FULL || error.engineCode == MDB_MAP_RESIZED
    }

    private func attemptWrite<T>(
        _ operation: StorageError.Operation, _ body: (borrowing Transaction) throws -> T
    ) throws -> T {
        var txn: OpaquePointer?
        try LMDBError.check(mdb_txn_begin(handle, nil, 0, &txn), operation, path: path, call: "mdb_txn_begin")
        guard let txn else {
            throw StorageError(.engine, operation, path: path, message: "mdb_txn_begin gave no transaction")
        }
        var transaction = Transaction(txn, environment: self, operation: operation)
        let result = try body(transaction)
        try transaction.commit()
        return result
    }

    /// Doubles the map. Called with the write lock held and no write
    /// transaction open; waits until no read transaction is open, so no
    /// transaction of this process is active while the size changes, as
    /// `mdb_env_set_mapsize` requires.
    ///
    /// - Throws: ``StorageError/Kind/full`` when the map cannot grow further,
    ///   or what LMDB reports; never returns without the map having grown.
    func grow(_ operation: StorageError.Operation) throws {
        pthread_rwlock_wrlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        let current = try currentMapSize(operation)
        guard current < Int.max / 4 else {
            throw StorageError(.full, operation, path: path, engineCode: MDB_MAP_FULL, message: "the map cannot grow further")
        }
        try LMDBError.check(mdb_env_set_mapsize(handle, current * 2), operation, path: path, call: "mdb_env_set_mapsize")
        try locateMap(operation)
        let grown = try currentMapSize(operation)
        guard grown > current else {
            throw StorageError(
                .full, operation, path: path, engineCode: MDB_MAP_FULL,
                message: "the map did not grow beyond \(current) bytes")
        }
    }

    /// Adopts the map size another process set (after `MDB_MAP_RESIZED`).
    /// Called with the write lock held and no transaction of this process open
    /// (it waits for the read transactions to end), as `mdb_env_set_mapsize`
    /// requires.
    func adoptGrownMap(_ operation: StorageError.Operation) throws {
        pthread_rwlock_wrlock(resizeLock)
        defer { pthread_rwlock_unlock(resizeLock) }
        guard !isClosed else { throw StorageError.closed(operation, path: path) }
        try LMDBError.check(mdb_env_set_mapsize(handle, 0), operation, path: path, call: "mdb_env_set_mapsize")
        try locateMap(operation)
    }
}
