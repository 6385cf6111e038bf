import DAOCore
import DialogGraph
import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

// Many tasks at once through the async API, on every backend: readers beside
// writers, reads while a write transaction is held open, cancellation in the
// middle of a batch.

@Suite("Conformance: concurrent async calls")
struct ConcurrencyTests {
    /// Each write moves an amount between two accounts of one ledger, by
    /// persisting the ledger with all its accounts in one call, and writes
    /// the ledger's new version into the note of its first account (lowest
    /// id); every read checks that each ledger it sees still holds its total
    /// and that its first account's note names its version, so a read that
    /// saw part of a commit, or a ledger of one commit with accounts of
    /// another, fails.
    @Test("120 tasks mixing reads and writes: every read sees whole commits", arguments: allBackends)
    func mixedTasks(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let ledgers = DAO(storage: try store.anyStorage(for: LedgerRecord.self), translator: Same<LedgerRecord>())
            let accounts = DAO(
                storage: try store.anyStorage(for: AccountRecord.self), translator: Same<AccountRecord>())
            let ledgerCount = 8
            let accountCount = 5
            let balance: Int64 = 100
            let total = balance * Int64(accountCount)
            try await ledgers.persist(makeLedgers(ledgerCount, accounts: accountCount, balance: balance))
            let inLedger = try accounts.prepare(
                where: #Predicate<AccountRecord, String> { account, ledger in account.ledgerId == ledger })
            let transfers = 12
            let readers = 112
            let readsEach = 6
            let checked = try await withWatchdog(seconds: 900, "mixed tasks on \(backend.name)") {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    // One writer task per ledger, which alone writes it, so it
                    // knows the ledger's state and writes no lost update.
                    for ledger in 0..<ledgerCount {
                        group.addTask {
                            var random = SplitMix64(seed: UInt64(ledger + 1))
                            guard var current = try await ledgers.read(byPrimaryKey: "ledger-\(ledger)") else {
                                Issue.record("ledger-\(ledger) is missing")
                                return 0
                            }
                            for _ in 0..<transfers {
                                let from = Int(random.next() % UInt64(accountCount))
                                let to = (from + 1 + Int(random.next() % UInt64(accountCount - 1))) % accountCount
                                let amount = Int64(random.next() % 40)
                                current.accounts[from].balance -= amount
                                current.accounts[to].balance += amount
                                current.version += 1
                                let first = current.accounts.indices.min { current.accounts[$0].id < current.accounts[$1].id }
                                if let first { current.accounts[first].note = "v\(current.version)" }
                                try await ledgers.persist(current)
                                await Task.yield()
                            }
                            return 0
                        }
                    }
                    for reader in 0..<readers {
                        group.addTask {
                            var checked = 0
                            for step in 0..<readsEach {
                                let ledger = "ledger-\((reader + step) % ledgerCount)"
                                switch (reader + step) % 4 {
                                case 0:
                                    let read = try await ledgers.read(byPrimaryKey: ledger)
                                    #expect(read?.total == total, "\(ledger) version \(read?.version ?? -1)")
                                    #expect(read?.accounts.count == accountCount)
                                    if let read { #expect(read.isOneCommit, "\(ledger) v\(read.version)") }
                                case 1:
                                    let all = try await ledgers.read()
                                    #expect(all.count == ledgerCount)
                                    for read in all {
                                        #expect(read.total == total, "\(read.id) v\(read.version)")
                                        #expect(read.isOneCommit, "\(read.id) v\(read.version)")
                                    }
                                case 2:
                                    let rows = try await inLedger.read(ledger)
                                    #expect(rows.count == accountCount)
                                    #expect(rows.reduce(0) { $0 + $1.balance } == total, "\(ledger)")
                                default:
                                    let rows = try await accounts.read(
                                        where: #Predicate { $0.balance >= 0 || $0.balance < 0 },
                                        sortedBy: [SortDescriptor(\.ledgerId)])
                                    #expect(rows.count == ledgerCount * accountCount)
                                    #expect(rows.reduce(0) { $0 + $1.balance } == total * Int64(ledgerCount))
                                }
                                checked += 1
                            }
                            return checked
                        }
                    }
                    return try await group.reduce(0, +)
                }
            }
            #expect(checked == readers * readsEach)
            let last = try await ledgers.read()
            #expect(last.map(\.version) == Array(repeating: Int64(transfers), count: ledgerCount))
            #expect(last.allSatisfy { $0.total == total && $0.isOneCommit })
        }
    }

    /// A persist whose records are handed over only after 200 reads,
    /// awaited from a task group, have come back: the write transaction is
    /// open the whole time (on SQLite and LMDB the handoff runs inside it).
    /// A store whose reads waited for the writer, or held the cooperative
    /// pool's threads while waiting, would never finish; the watchdog ends
    /// the run then.
    @Test("200 concurrent reads complete while a write transaction is held open", arguments: allBackends)
    func readsBesideOpenWrite(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let ledgers = DAO(storage: try store.anyStorage(for: LedgerRecord.self), translator: Same<LedgerRecord>())
            let made = makeLedgers(4, accounts: 3)
            try await ledgers.persist(made)
            let inside = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let changed = LedgerRecord(id: "ledger-0", name: "Changed", version: 1, accounts: [])
            let writer = Task {
                try await ledgers.storage.persist(handingOver: { hand in
                    inside.signal()
                    release.wait()
                    try hand(changed)
                })
            }
            try await withWatchdog(seconds: 900, "reads beside an open write on \(backend.name)") {
                // The writer thread is inside the handoff: wait for it on a
                // thread of its own, not on the pool's.
                await waitOffThePool(inside)
                let answers = try await withThrowingTaskGroup(of: LedgerRecord?.self) { group in
                    for index in 0..<200 {
                        group.addTask { try await ledgers.read(byPrimaryKey: "ledger-\(index % 4)") }
                    }
                    var answers: [LedgerRecord?] = []
                    for try await answer in group { answers.append(answer) }
                    return answers
                }
                #expect(answers.count == 200)
                // Every read saw the state before the write.
                #expect(answers.allSatisfy { answer in made.contains { $0 == answer } })
                release.signal()
                try await writer.value
            }
            #expect(try await ledgers.read(byPrimaryKey: "ledger-0") == changed)
        }
    }

    /// A batch whose handoff blocks after its first records until the task
    /// is cancelled: the call throws `CancellationError` and nothing of it is
    /// stored.
    @Test("a persist cancelled in the middle of its batch stores nothing", arguments: allBackends)
    func cancelledBatch(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let ledgers = DAO(storage: try store.anyStorage(for: LedgerRecord.self), translator: Same<LedgerRecord>())
            let before = makeLedgers(2, accounts: 2)
            try await ledgers.persist(before)
            let handedSome = DispatchSemaphore(value: 0)
            let cancelled = DispatchSemaphore(value: 0)
            let batch = makeLedgers(6, accounts: 3, balance: 7)
            let task = Task {
                try await ledgers.storage.persist(handingOver: { hand in
                    for (index, ledger) in batch.enumerated() {
                        try hand(ledger)
                        if index == 2 {
                            handedSome.signal()
                            cancelled.wait()
                        }
                    }
                })
            }
            try await withWatchdog(seconds: 900, "cancelled batch on \(backend.name)") {
                await waitOffThePool(handedSome)
                task.cancel()
                cancelled.signal()
                await #expect(throws: CancellationError.self) { try await task.value }
            }
            #expect(try await ledgers.read() == before)
            #expect(try await ledgers.storage.count() == 2)
        }
    }

    /// The DAO's batch persist checks between objects too; a task cancelled
    /// before its call starts does nothing and reads nothing.
    @Test("calls of a cancelled task throw CancellationError and do nothing", arguments: allBackends)
    func cancelledBeforeStart(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let ledgers = DAO(storage: try store.anyStorage(for: LedgerRecord.self), translator: Same<LedgerRecord>())
            let accounts = DAO(
                storage: try store.anyStorage(for: AccountRecord.self), translator: Same<AccountRecord>())
            let before = makeLedgers(3, accounts: 2)
            try await ledgers.persist(before)
            let outcomes = await Task {
                withUnsafeCurrentTask { $0?.cancel() }
                var outcomes: [String: Bool] = [:]
                func cancels(_ name: String, _ call: () async throws -> Void) async {
                    do {
                        try await call()
                        outcomes[name] = false
                    } catch {
                        outcomes[name] = error is CancellationError
                    }
                }
                await cancels("persist") { try await ledgers.persist(makeLedgers(5, accounts: 1, balance: 9)) }
                await cancels("persist one") {
                    try await ledgers.persist(LedgerRecord(id: "new", name: "New", version: 0, accounts: []))
                }
                await cancels("erase") { _ = try await ledgers.erase() }
                await cancels("erase by key") { _ = try await accounts.erase(byPrimaryKey: 0) }
                await cancels("read") { _ = try await ledgers.read() }
                await cancels("read by key") { _ = try await ledgers.read(byPrimaryKey: "ledger-0") }
                await cancels("count") { _ = try await accounts.count() }
                return outcomes
            }.value
            #expect(outcomes.count == 7)
            for (name, cancelled) in outcomes { #expect(cancelled, "\(name) did not throw CancellationError") }
            #expect(try await ledgers.read() == before)
        }
    }

    /// A write that committed answers normally even when its task is
    /// cancelled before the answer reaches it.
    @Test("a write cancelled after its commit returns normally", arguments: allBackends)
    func cancelledAfterCommit(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let storage = try store.anyStorage(for: LedgerRecord.self)
            let committed = DispatchSemaphore(value: 0)
            let proceed = DispatchSemaphore(value: 0)
            let ledger = LedgerRecord(id: "kept", name: "Kept", version: 3, accounts: [])
            let task = Task {
                try await storage.executor.write { _ in
                    try storage.persist(ledger)
                    committed.signal()
                    proceed.wait()
                    return 42
                }
            }
            try await withWatchdog(seconds: 900, "cancelled after commit on \(backend.name)") {
                await waitOffThePool(committed)
                task.cancel()
                proceed.signal()
                let answer = try await task.value
                #expect(answer == 42)
            }
            #expect(try await storage.read(primaryKey: "kept") == ledger)
        }
    }
}

@Suite("Examples: reader-writer")
struct ReaderWriterExampleTests {
    /// The example executable, built beside the tests.
    static func executable() throws -> URL {
        let here = URL(filePath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = here.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appending(path: "reader-writer")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw StorageError(
            .io, .open, path: here.path,
            message: "the reader-writer executable was not found next to the tests; build everything (make test does)")
    }

    @Test("the example's reader and writer agree on every backend", arguments: allBackends)
    func runs(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let process = Process()
        process.executableURL = try Self.executable()
        process.arguments = [backend.name, "150", directory.url.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(printed.contains("\(backend.name): the writer stored 150 messages"), "\(printed)")
    }
}

extension LedgerRecord {
    /// Whether the ledger and its accounts come from one commit of
    /// `mixedTasks`' writers: its first account's note names its version
    /// (and is the initial `nil` at version 0).
    fileprivate var isOneCommit: Bool {
        let first = accounts.min { $0.id < $1.id }
        return first?.note == (version == 0 ? nil : "v\(version)")
    }
}
