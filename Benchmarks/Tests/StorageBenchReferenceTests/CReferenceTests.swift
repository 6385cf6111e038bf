import DAOCore
import DialogGraph
import Foundation
import StorageBenchReference
import TestSupport
import Testing

@testable import StorageBenchKit

/// A C reference whose answers are wrong in one way, to show that the
/// harness's checks of what a ``HoldingSubject`` holds and folds fail the run.
final class MisreadingCSubject: HoldingSubject, ForwardingSubject {
    enum Fault { case heldLookup, heldQuery, heldReadAll, foldedLookup, foldedQuery, foldedReadAll }

    let inner: CReferenceSubject
    let fault: Fault

    init(_ inner: CReferenceSubject, fault: Fault) {
        self.inner = inner
        self.fault = fault
    }

    /// Another dialog than `id` (the workload's ids start at 1).
    static func other(_ id: Int64) -> Int64 { id == 1 ? 2 : id - 1 }

    func prepareInputs(_ inputs: [[Dialog]]) throws { try inner.prepareInputs(inputs) }
    func holdAll() throws { try inner.holdAll() }
    func holdDialog(id: Int64) throws -> Bool {
        try inner.holdDialog(id: fault == .heldLookup ? Self.other(id) : id)
    }
    func holdUnreadMessages(dialogId id: Int64) throws {
        try inner.holdUnreadMessages(dialogId: fault == .heldQuery ? Self.other(id) : id)
    }
    func takeHeldDialogs() throws -> [Dialog] {
        let held = try inner.takeHeldDialogs()
        // read-all's dialogs, the last one's messages lost.
        guard fault == .heldReadAll, let last = held.last, held.count > 1 else { return held }
        return held.dropLast() + [Dialog(uniqueId: last.uniqueId, isPinned: last.isPinned, messages: [])]
    }
    func takeHeldMessages() -> [[Message]] { inner.takeHeldMessages() }
    func foldAll(into digest: inout ReadDigest) throws {
        try inner.foldAll(into: &digest)
        if fault == .foldedReadAll { _ = try inner.foldDialog(id: 1, into: &digest) }
    }
    func foldDialog(id: Int64, into digest: inout ReadDigest) throws -> Bool {
        try inner.foldDialog(id: fault == .foldedLookup ? Self.other(id) : id, into: &digest)
    }
    func foldUnreadMessages(dialogId id: Int64, into digest: inout ReadDigest) throws {
        try inner.foldUnreadMessages(dialogId: fault == .foldedQuery ? Self.other(id) : id, into: &digest)
    }
}

@Suite("C references: the workload in plain C, its answers checked like every subject's")
struct CReferenceTests {
    static let engines: [(String, CReferenceSubject.Engine, String)] = [
        ("sqlite-c", .sqlite, "sqlite"), ("lmdb-c", .lmdb, "lmdb"),
    ]

    /// The C subject folds into the harness's digest exactly what the DAO's
    /// borrowing reads lend on the same engine with the same data: every
    /// dialog, each lookup, each query; and holds the plain reads' answers
    /// equal to the DAO's.
    @Test(arguments: [0, 1])
    func theCDigestIsTheDAOs(_ which: Int) throws {
        let (_, engine, daoName) = Self.engines[which]
        let data = WorkloadData(dialogs: 31, messagesPerDialog: 13, seed: 11)
        let scratch = try TemporaryDirectory("c-reference")
        defer { try? FileManager.default.removeItem(at: scratch.url) }
        let cDirectory = scratch.url.appendingPathComponent("c")
        let daoDirectory = scratch.url.appendingPathComponent("dao")
        for directory in [cDirectory, daoDirectory] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        let c = try CReferenceSubject(engine: engine, directory: cDirectory, durability: .none)
        let dao = try #require(BackendRegistry.standard.backend(named: daoName)).open(daoDirectory, .none)
        try c.prepareInputs([data.initial])
        try c.persist(data.initial)
        try dao.persist(data.initial)

        var cAll = ReadDigest()
        try c.foldAll(into: &cAll)
        var daoAll = ReadDigest()
        try dao.forEachDialog { daoAll.add($0) }
        #expect(cAll == daoAll)
        #expect(cAll == WorkloadRunner.expectedDigest(.readAllBorrowing, data: data))
        #expect(cAll.dialogs == 31 && cAll.messages == 31 * 13)

        var cLookups = ReadDigest()
        var daoLookups = ReadDigest()
        for id in data.readIds {
            #expect(try c.foldDialog(id: id, into: &cLookups))
            #expect(try dao.withDialog(id: id) { daoLookups.add($0) })
        }
        #expect(cLookups == daoLookups)
        #expect(cLookups == WorkloadRunner.expectedDigest(.readByIdBorrowing, data: data))
        var untouched = ReadDigest()
        #expect(try !c.foldDialog(id: 999, into: &untouched))
        #expect(untouched == ReadDigest())

        var cQueries = ReadDigest()
        var daoQueries = ReadDigest()
        for id in data.queryIds {
            try c.foldUnreadMessages(dialogId: id, into: &cQueries)
            try dao.forEachUnreadMessage(dialogId: id) { daoQueries.add($0) }
        }
        #expect(cQueries == daoQueries)
        #expect(cQueries == WorkloadRunner.expectedDigest(.queryBorrowing, data: data))
        #expect(cQueries.messages > 0)

        // Dates compared to the millisecond, the precision WORKLOAD.md asks for.
        let ms = ReferenceBackendTests.ms as ([Dialog?]) -> [Dialog?]
        try c.holdAll()
        #expect(ms(try c.takeHeldDialogs()) == ms(try dao.readAll()))
        #expect(try c.takeHeldDialogs().isEmpty)
        for id in data.readIds { #expect(try c.holdDialog(id: id)) }
        #expect(try !c.holdDialog(id: 999))
        #expect(ms(try c.takeHeldDialogs()) == ms(try data.readIds.map { try dao.read(dialogId: $0) }))
        for id in data.queryIds { try c.holdUnreadMessages(dialogId: id) }
        let held = c.takeHeldMessages()
        #expect(held.count == data.queryIds.count)
        for (messages, id) in zip(held, data.queryIds) {
            #expect(ReferenceBackendTests.ms(messages) == ReferenceBackendTests.ms(try dao.unreadMessages(dialogId: id)))
        }
    }

    /// Both C references run the eight operations and the borrowing reads
    /// through the harness, their held and folded answers checked, and count
    /// every operation's units; a run of each read again in place (times
    /// only) is checked too.
    @Test(arguments: ["sqlite-c", "lmdb-c"], [1, 3])
    func aCReferenceRunsEveryOperation(_ name: String, _ readRuns: Int) throws {
        let backend = try #require(BackendRegistry.reference.backend(named: name))
        let size = try BenchSize(dialogs: 24, messagesPerDialog: 9)
        var job = IterationJob(
            backend: name, size: size, seed: 42, durability: .none, operations: BenchOperation.allCases)
        job.readRuns = readRuns
        job.minReadRuns = readRuns
        let result = WorkloadRunner.run(job, backend: backend, data: WorkloadData(dialogs: 24, messagesPerDialog: 9))
        #expect(result.error == nil, "\(result.error ?? "")")
        #expect(result.measurements.map(\.operation) == BenchOperation.allCases)
        for measurement in result.measurements {
            #expect(measurement.units == measurement.operation.expectedUnits(for: size), "\(measurement.operation)")
            if measurement.operation.isReadOnly {
                #expect((measurement.runSeconds?.count ?? 1) == readRuns, "\(measurement.operation)")
            }
        }
    }

    /// A C reference that answers a read wrongly, held or folded, fails the run
    /// at that read, naming it.
    @Test(arguments: [
        (MisreadingCSubject.Fault.heldLookup, "read-by-id"), (.heldQuery, "query"), (.heldReadAll, "read-all"),
        (.foldedLookup, "read-by-id-borrowing"), (.foldedQuery, "query-borrowing"),
        (.foldedReadAll, "read-all-borrowing"),
    ])
    func aWrongCAnswerFailsTheRun(_ fault: MisreadingCSubject.Fault, _ operation: String) throws {
        for (name, engine, _) in Self.engines {
            let backend = Backend(name: name) { directory, durability in
                MisreadingCSubject(
                    try CReferenceSubject(engine: engine, directory: directory, durability: durability), fault: fault)
            }
            let size = try BenchSize(dialogs: 12, messagesPerDialog: 8)
            let job = IterationJob(
                backend: name, size: size, seed: 42, durability: .none, operations: BenchOperation.allCases)
            let result = WorkloadRunner.run(job, backend: backend, data: WorkloadData(dialogs: 12, messagesPerDialog: 8))
            let error = try #require(result.error, "\(name) \(fault)")
            #expect(error.hasPrefix("\(operation):"), "\(name): \(error)")
        }
    }
}
