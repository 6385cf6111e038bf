import DAOCore
import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

// The async API on every backend: the same answers as the synchronous calls,
// reads beside writes, cancellation. Records of another shape than the
// dialog graph: ledgers (String key) owning accounts (Int64 key) with an
// optional note, indexed by ledger.

/// A ledger (String key) owning its accounts.
struct LedgerRecord: Record, Plain, Hashable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var version: Int64
    var accounts: [AccountRecord]

    var uniqueId: String { id }

    static let entity = Entity<LedgerRecord>(
        "async_ledgers",
        primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("version", \.version)],
        relations: [Relation("accounts", \.accounts, foreignKey: "ledgerId", \AccountRecord.ledgerId)]
    )

    /// The sum of its accounts' balances.
    var total: Int64 { accounts.reduce(0) { $0 + $1.balance } }
}

/// An account of a ledger, with a balance and an optional note.
struct AccountRecord: Record, Plain, Hashable {
    typealias PrimaryKey = Int64
    var id: Int64
    var ledgerId: String
    var balance: Int64
    var note: String?

    var uniqueId: Int64 { id }

    static let entity = Entity<AccountRecord>(
        "async_accounts",
        primaryKey: "id", \.id,
        fields: [Field("ledgerId", \.ledgerId), Field("balance", \.balance), Field("note", \.note)],
        indexes: [Index("async_accounts_by_ledger", on: ["ledgerId"])],
        ownedBy: LedgerRecord.self
    )
}

/// `count` ledgers of `accounts` accounts each, every account holding
/// `balance`; account ids are `ledger * 100 + account`.
func makeLedgers(_ count: Int, accounts: Int, balance: Int64 = 100) -> [LedgerRecord] {
    (0..<count).map { ledger in
        LedgerRecord(
            id: "ledger-\(ledger)", name: "Ledger \(ledger)", version: 0,
            accounts: (0..<accounts).map { account in
                AccountRecord(
                    id: Int64(ledger * 100 + account), ledgerId: "ledger-\(ledger)", balance: balance,
                    note: account.isMultiple(of: 2) ? nil : "note \(account)")
            })
    }
}

@Suite("Conformance: async calls")
struct AsyncCallTests {
    @Test("every async call answers as its synchronous call", arguments: allBackends)
    func sameAnswers(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let ledgers = DAO(storage: try store.anyStorage(for: LedgerRecord.self), translator: Same<LedgerRecord>())
            let accounts = DAO(
                storage: try store.anyStorage(for: AccountRecord.self), translator: Same<AccountRecord>())
            let made = makeLedgers(5, accounts: 4)
            try await ledgers.persist(made)
            try await ledgers.persist(LedgerRecord(id: "solo", name: "Solo", version: 1, accounts: []))
            #expect(try await ledgers.read() == (try ledgers.read()))
            #expect(try await ledgers.read().count == 6)
            #expect(try await ledgers.read(byPrimaryKey: "ledger-2") == made[2])
            #expect(try await ledgers.read(byPrimaryKey: "none") == nil)
            #expect(try await ledgers.read(byPrimaryKeys: ["ledger-4", "none", "ledger-1"]) == [made[4], made[1]])
            let odd = #Predicate<AccountRecord> { $0.note != nil }
            let sorted = try await accounts.read(
                where: odd, sortedBy: [SortDescriptor(\.id, order: .reverse)], limit: 3)
            #expect(sorted.map(\.id) == [403, 401, 303])
            #expect(sorted == (try await accounts.read(where: odd, sortedBy: [SortDescriptor(\.id, order: .reverse)], limit: 3)))
            #expect(try await accounts.count(where: odd) == 10)
            #expect(try await accounts.count() == 20)

            // Prepared calls.
            let inLedger = try accounts.prepare(
                where: #Predicate<AccountRecord, String> { account, ledger in account.ledgerId == ledger },
                sortedBy: [SortDescriptor(\.id)])
            #expect(try await inLedger.read("ledger-3") == made[3].accounts)
            #expect(try await inLedger.read(values: "ledger-3") == (try inLedger.read("ledger-3")))
            #expect(try await inLedger.count("ledger-3") == 4)
            let between = try accounts.prepare(
                where: #Predicate<AccountRecord, Int64, Int64> { $0.id >= $1 && $0.id < $2 })
            #expect(try await between.read(100, 200).map(\.id) == [100, 101, 102, 103])
            #expect(try await between.count(100, 200) == 4)
            #expect(try await between.erase(100, 102) == 2)
            #expect(try await ledgers.read(byPrimaryKey: "ledger-1")?.accounts.map(\.id) == [102, 103])
            #expect(try await inLedger.erase("ledger-2") == 4)

            // The storage's own calls.
            let storage = accounts.storage
            #expect(try await storage.read(primaryKey: 300)?.balance == 100)
            #expect(try await storage.read(primaryKeys: [301, 999, 300]).map(\.id) == [301, 300])
            #expect(try await storage.read(Query(where: odd, limit: 2)).map(\.id) == [1, 3])
            #expect(try await storage.readAll().count == 14)
            #expect(try await storage.count(where: nil) == 14)
            let prepared = try PreparedQuery(
                where: #Predicate<AccountRecord, String> { account, ledger in account.ledgerId == ledger })
            #expect(try await storage.read(prepared, "ledger-0").count == 4)
            #expect(try await storage.read(prepared.call(values: "ledger-4")).count == 4)
            #expect(try await storage.erase(primaryKey: 403))
            #expect(try await storage.erase(primaryKeys: [402, 999]) == 1)
            #expect(try await storage.erase(where: #Predicate { $0.balance > 1000 }) == 0)

            // Erasing through the DAO.
            #expect(try await ledgers.erase(byPrimaryKey: "ledger-4"))
            #expect(try await ledgers.erase(byPrimaryKeys: ["ledger-3", "none"]) == 1)
            #expect(try await ledgers.erase(where: #Predicate { $0.version == 1 }) == 1)
            #expect(try await ledgers.read().map(\.id) == ["ledger-0", "ledger-1", "ledger-2"])
            #expect(try await accounts.count() == 6)
            #expect(try await ledgers.erase() == 3)
            #expect(try await accounts.count() == 0)
            try await ledgers.persist(made[0])
            #expect(try await ledgers.storage.eraseAll() == 1)
            #expect(try await ledgers.storage.count() == 0)
        }
    }

    @Test("an async call fails as its synchronous call does", arguments: allBackends)
    func sameErrors(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let ledgers = DAO(storage: try store.anyStorage(for: LedgerRecord.self), translator: Same<LedgerRecord>())
            try await ledgers.persist(makeLedgers(1, accounts: 2))
            // A negative limit is refused, by both forms alike.
            await #expect(throws: StorageError.self) { _ = try await ledgers.read(limit: -1) }
            #expect(throws: StorageError.self) { _ = try ledgers.read(limit: -1) }
            try store.close()
            let error = await #expect(throws: StorageError.self) { _ = try await ledgers.read() }
            #expect(error?.kind == .closed)
            let writeError = await #expect(throws: StorageError.self) {
                try await ledgers.persist(LedgerRecord(id: "x", name: "x", version: 0, accounts: []))
            }
            #expect(writeError?.kind == .closed)
        }
    }
}
