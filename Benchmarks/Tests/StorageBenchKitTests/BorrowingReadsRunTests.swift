import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@testable import StorageBenchKit

/// A ``MemorySubject`` whose borrowing query lends one message too few, or
/// whose borrowing read-all lends the dialogs out of order.
final class SkippingSubject: ForwardingSubject {
    let inner = MemorySubject()
    let skipsInQuery: Bool

    init(skipsInQuery: Bool) { self.skipsInQuery = skipsInQuery }

    var settingsDescription: String { "skipping" }

    func forEachDialog(_ body: (borrowing Dialog) throws -> Void) throws {
        for dialog in try inner.readAll().reversed() { try body(dialog) }
    }

    func forEachUnreadMessage(dialogId id: Int64, _ body: (borrowing Message) throws -> Void) throws {
        for message in try inner.unreadMessages(dialogId: id).dropLast(skipsInQuery ? 1 : 0) { try body(message) }
    }
}

@Suite struct BorrowingReadsRunTests {
    static func run(_ backend: Backend, _ size: BenchSize, _ operations: [BenchOperation], readRuns: Int = 1)
        -> IterationResult
    {
        var job = IterationJob(backend: backend.name, size: size, seed: 42, durability: .full, operations: operations)
        job.readRuns = readRuns
        job.minReadRuns = readRuns
        let data = WorkloadData(dialogs: size.dialogs, messagesPerDialog: size.messagesPerDialog, seed: 42)
        return WorkloadRunner.run(job, backend: backend, data: data)
    }

    @Test func theBorrowingReadsAreOutsideWorkloadV1AndChosenByName() throws {
        #expect(BenchOperation.workload.count == 8)
        #expect(!BenchOperation.workload.contains { $0.isBorrowing })
        #expect(
            BenchOperation.borrowingReads == [
                .readAllBorrowing, .readByIdBorrowing, .queryBorrowing, .readAllView, .readByIdView, .queryView,
            ])
        #expect(
            BenchOperation.borrowingReads.compactMap(\.plainRead) == [
                .readAll, .readById, .query, .readAll, .readById, .query,
            ])
        #expect(try BenchOperation.parseList("all") == BenchOperation.workload)
        #expect(try BenchOperation.parseList("borrowing") == BenchOperation.borrowingReads)
        #expect(try BenchOperation.parseList("borrowing,all") == BenchOperation.allCases)
        #expect(try BenchOperation.parseList("query-borrowing,persist") == [.persist, .queryBorrowing])
        #expect(throws: ConfigurationError.self) { try BenchOperation.parseList("read-all-lent") }
        for operation in BenchOperation.borrowingReads {
            let plain = try #require(operation.plainRead)
            #expect(operation.unit == plain.unit && operation.isPerCall == plain.isPerCall && operation.isReadOnly)
            let size = try BenchSize(dialogs: 1000, messagesPerDialog: 10)
            #expect(operation.expectedUnits(for: size) == plain.expectedUnits(for: size))
        }
        // The run order: the borrowing reads right after the v1 reads, on the store persist left.
        #expect(BenchOperation.allCases.firstIndex(of: .readAllBorrowing) == 4)
    }

    @Test(arguments: [1, 3])
    func theBorrowingReadsCountTheirUnitsOnADAOAndOnASubject(_ readRuns: Int) throws {
        let size = try BenchSize(dialogs: 14, messagesPerDialog: 5)
        let plain = Backend(name: "plain", subject: { _, _ in MemorySubject() })
        for backend in [TestBackends.memory, plain] {
            let result = Self.run(backend, size, BenchOperation.borrowingReads, readRuns: readRuns)
            #expect(result.error == nil, "\(backend.name): \(result.error ?? "")")
            #expect(result.measurements.map(\.operation) == BenchOperation.borrowingReads)
            for measurement in result.measurements {
                #expect(measurement.units == measurement.operation.expectedUnits(for: size), "\(measurement.operation)")
                #expect(measurement.seconds > 0)
                #expect((measurement.runSeconds?.count ?? 1) == readRuns)
                if measurement.operation.isPerCall {
                    #expect(measurement.callNanoseconds?.count == measurement.units * readRuns)
                } else {
                    #expect(measurement.callNanoseconds == nil)
                }
            }
        }
    }

    @Test("the view reads fold, on every adapter, the digest of what the plain reads answer")
    func theViewReadsOnEveryAdapter() throws {
        let size = try BenchSize(dialogs: 9, messagesPerDialog: 7)
        let views: [BenchOperation] = [.readAllView, .readByIdView, .queryView]
        for backend in BackendRegistry.standard.backends {
            // The runner checks each view read's digest against the plain
            // read's answer, computed from the generated graph.
            let result = Self.run(backend, size, [.query] + views)
            #expect(result.error == nil, "\(backend.name): \(result.error ?? "")")
            #expect(result.measurements.map(\.operation) == [.query] + views, "\(backend.name)")
        }
    }

    @Test func aViewFoldIsTheFoldOfTheObjects() {
        let data = WorkloadData(dialogs: 3, messagesPerDialog: 4, seed: 5)
        var objects = ReadDigest()
        var fields = ReadDigest()
        for dialog in data.initial {
            objects.add(dialog)
            fields.addDialog(uniqueId: dialog.uniqueId, isPinned: dialog.isPinned)
            for message in dialog.messages {
                var text = message.text
                text.withUTF8 { _ in }
                fields.addMessage(
                    uniqueId: message.uniqueId, dialogId: message.dialogId, date: message.date, text: text.utf8Span,
                    senderId: message.senderId, receiverId: message.receiverId, type: Int64(message.type),
                    isIncoming: message.isIncoming, isRead: message.isRead)
            }
        }
        #expect(objects == fields)
        #expect(fields.messages == 12 && fields.dialogs == 3)
    }

    @Test func aBorrowingReadThatSkipsARecordFailsItsCheck() throws {
        let size = try BenchSize(dialogs: 12, messagesPerDialog: 20)  // every query has unread messages
        let skipping = Backend(name: "skipping", subject: { _, _ in SkippingSubject(skipsInQuery: true) })
        let failed = Self.run(skipping, size, [.queryBorrowing])
        let error = try #require(failed.error)
        #expect(error.hasPrefix("query-borrowing:"), "\(error)")
        #expect(failed.measurements.isEmpty)
        // The same subject's plain query answers right, and so does its borrowing read-all... in the wrong order.
        let reordered = Self.run(skipping, size, [.query, .readAllBorrowing])
        #expect(reordered.error?.hasPrefix("read-all-borrowing:") == true, "\(reordered.error ?? "no error")")
        #expect(reordered.measurements.map(\.operation) == [.query])
        let faithful = Backend(name: "faithful", subject: { _, _ in SkippingSubject(skipsInQuery: false) })
        #expect(Self.run(faithful, size, [.queryBorrowing]).error == nil)
    }

    @Test func theDigestFoldsEveryFieldInOrder() {
        let data = WorkloadData(dialogs: 6, messagesPerDialog: 4, seed: 3)
        var digest = ReadDigest()
        for dialog in data.initial { digest.add(dialog) }
        #expect(digest.dialogs == 6 && digest.messages == 24)
        var reversed = ReadDigest()
        for dialog in data.initial.reversed() { reversed.add(dialog) }
        #expect(reversed != digest)
        let message = data.initial[0].messages[0]
        var one = ReadDigest()
        one.add(message)
        let changes = [
            message.with(isRead: !message.isRead),
            Message(
                uniqueId: message.uniqueId, dialogId: message.dialogId, date: message.date.addingTimeInterval(0.001),
                text: message.text, senderId: message.senderId, receiverId: message.receiverId, type: message.type,
                isIncoming: message.isIncoming, isRead: message.isRead),
            Message(
                uniqueId: message.uniqueId, dialogId: message.dialogId, date: message.date, text: message.text + "x",
                senderId: message.senderId, receiverId: message.receiverId, type: message.type,
                isIncoming: message.isIncoming, isRead: message.isRead),
            Message(
                uniqueId: message.uniqueId, dialogId: message.dialogId, date: message.date, text: message.text,
                senderId: message.senderId + 1, receiverId: message.receiverId, type: message.type,
                isIncoming: message.isIncoming, isRead: message.isRead),
        ]
        for changed in changes {
            var other = ReadDigest()
            other.add(changed)
            #expect(other != one)
        }
    }
}
