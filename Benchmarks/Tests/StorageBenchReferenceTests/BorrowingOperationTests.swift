import DAOCore
import DialogGraph
import Foundation
import StorageBenchReference
import TestSupport
import Testing

@testable import StorageBenchKit

@Suite("Borrowing reads: the same answers as the plain reads, on every backend")
struct BorrowingOperationTests {
    /// The digest of records as a plain read returns them.
    static func digest(_ dialogs: [Dialog]) -> ReadDigest {
        var digest = ReadDigest()
        for dialog in dialogs { digest.add(dialog) }
        return digest
    }

    static func digest(_ messages: [Message]) -> ReadDigest {
        var digest = ReadDigest()
        for message in messages { digest.add(message) }
        return digest
    }

    /// On every DAO backend and every reference, each borrowing read lends
    /// exactly what the plain read returns, in its order: every dialog,
    /// each lookup (nothing for a missing id) and each query; and both
    /// agree with the digest the harness checks, computed from the data.
    @Test(arguments: BackendRegistry.withReferences.names)
    func aBorrowingReadLendsWhatThePlainReadReturns(_ name: String) throws {
        let backend = try #require(BackendRegistry.withReferences.backend(named: name))
        let scratch = try TemporaryDirectory("borrowing")
        defer { try? FileManager.default.removeItem(at: scratch.url) }
        let data = WorkloadData(dialogs: 23, messagesPerDialog: 11, seed: 5)
        let subject = try backend.open(scratch.url, .none)
        try subject.persist(data.initial)

        var all = ReadDigest()
        try subject.forEachDialog { dialog in all.add(dialog) }
        #expect(all == Self.digest(try subject.readAll()))
        #expect(all == WorkloadRunner.expectedDigest(.readAllBorrowing, data: data))
        #expect(all.dialogs == 23 && all.messages == 23 * 11)

        var plainLookups = ReadDigest()
        for id in data.readIds {
            var one = ReadDigest()
            #expect(try subject.withDialog(id: id) { dialog in one.add(dialog) })
            let plain = try #require(try subject.read(dialogId: id))
            #expect(one == Self.digest([plain]), "dialog \(id)")
            plainLookups.add(plain)
        }
        #expect(WorkloadRunner.expectedDigest(.readByIdBorrowing, data: data) == plainLookups)
        var lent = 0
        #expect(try !subject.withDialog(id: 9999) { _ in lent += 1 })
        #expect(lent == 0)

        var queries = ReadDigest()
        for id in data.queryIds {
            var one = ReadDigest()
            try subject.forEachUnreadMessage(dialogId: id) { message in one.add(message) }
            let plain = try subject.unreadMessages(dialogId: id)
            #expect(one == Self.digest(plain), "dialog \(id)")
            for message in plain { queries.add(message) }
        }
        #expect(WorkloadRunner.expectedDigest(.queryBorrowing, data: data) == queries)
        #expect(queries.messages > 0)
    }

    /// A reference backend runs the borrowing reads with the rest of the
    /// workload, through the harness and its checks, and counts their units.
    @Test(arguments: ["sqlite", "lmdb-raw", "json"])
    func theBorrowingReadsRunInTheWorkload(_ name: String) throws {
        let backend = try #require(BackendRegistry.withReferences.backend(named: name))
        let size = try BenchSize(dialogs: 20, messagesPerDialog: 6)
        let job = IterationJob(
            backend: name, size: size, seed: 42, durability: .none, operations: try BenchOperation.parseList("all,borrowing"))
        let result = WorkloadRunner.run(job, backend: backend, data: WorkloadData(dialogs: 20, messagesPerDialog: 6))
        #expect(result.error == nil, "\(result.error ?? "")")
        #expect(result.measurements.map(\.operation) == BenchOperation.allCases)
        for measurement in result.measurements where measurement.operation.isBorrowing {
            #expect(measurement.units == measurement.operation.expectedUnits(for: size), "\(measurement.operation)")
            #expect((measurement.callNanoseconds?.count ?? 0) == (measurement.operation.isPerCall ? measurement.units : 0))
        }
    }
}
