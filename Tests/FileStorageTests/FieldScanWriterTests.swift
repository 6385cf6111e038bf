import DAOCore
import DialogGraph
import Foundation
import Testing

@testable import FileStorage

/// The file stores read a positional child's primary key and foreign key, and
/// the property-list store finds the date of -0.0 it refuses and whether a
/// real is -0.0 or a NaN, with one ``FieldScanWriter`` pass; it must give the
/// stored values ``StoredValueWriter`` gives for the same fields, at every
/// position and for every field type, and the position of the first date of
/// -0.0.
@Suite struct FieldScanWriterTests {
    /// Writes a row of fields of every stored type, optionals absent and present.
    private func writeRow(_ writer: inout some FieldWriter, present: Bool, real: Double = -0.5) throws {
        try writer.encode("Straße e\u{301} 🚲")  // the primary key: NFD text, emoji
        try writer.encode(Int64(-42))
        try writer.encode(real)
        try writer.encode(true)
        try writer.encode(Date(timeIntervalSinceReferenceDate: 1_234.5))
        try writer.encode(Data([0, 1, 255]))
        try writer.encodeIfPresent(present ? "optional text" : nil)
        try writer.encodeIfPresent(present ? Int64.max : nil)
        try writer.encodeIfPresent(present ? Date(timeIntervalSinceReferenceDate: -1) : nil)
        try writer.encode("a\u{0}b")
    }

    @Test(arguments: [false, true])
    func everyPositionGivesTheValuesOfTheStoredValueWriter(present: Bool) throws {
        var all = StoredValueWriter()
        try writeRow(&all, present: present)
        #expect(all.values.count == 10)
        for position in 1..<all.values.count {
            var scanner = FieldScanWriter(keeping: 0, and: position)
            try writeRow(&scanner, present: present)
            #expect(scanner.first == all.values[0])
            #expect(scanner.second == all.values[position], "position \(position)")
            #expect(scanner.unstorable == nil)
            #expect(!scanner.holdsSpecialReal)
            #expect(scanner.position == all.values.count)
        }
        var none = FieldScanWriter()
        try writeRow(&none, present: present)
        #expect(none.first == .null && none.second == .null)
    }

    @Test("a real of -0.0 or NaN is noted; only a date of -0.0 is found by position", arguments: [-0.0, Double.nan, -.nan])
    func negativeZero(real: Double) throws {
        var scanner = FieldScanWriter(keeping: 0, and: 2)
        try writeRow(&scanner, present: true, real: real)
        #expect(scanner.unstorable == nil)
        #expect(scanner.holdsSpecialReal)
        #expect(scanner.second.hashValue == StoredValue.real(real).hashValue)
        var stored = FieldScanWriter()
        try writeRow(&stored, present: true, real: 0.0)
        #expect(stored.unstorable == nil)
        #expect(!stored.holdsSpecialReal)
        #expect(try FieldScanWriter.scan(Date(timeIntervalSinceReferenceDate: -0.0)) == (0, true))
        #expect(try FieldScanWriter.scan(Date(timeIntervalSinceReferenceDate: .nan)) == (nil, true))
        #expect(try FieldScanWriter.scan(Date(timeIntervalSinceReferenceDate: .infinity)) == (nil, false))
    }

    @Test("a record's scanFields writes what write(fields:) writes")
    func recordScan() throws {
        let message = MessageRecord(
            id: 7, dialogId: 3, date: Date(timeIntervalSinceReferenceDate: -0.0), text: "e\u{301}", senderId: 1,
            receiverId: 2, type: 0, isIncoming: true, isRead: false)
        var all = StoredValueWriter()
        try message.write(fields: &all)
        var scanner = FieldScanWriter(keeping: 0, and: 3)
        try message.scanFields(&scanner)
        #expect(scanner.first == all.values[0] && scanner.second == all.values[3])
        #expect(scanner.unstorable == 2)
        #expect(scanner.holdsSpecialReal)
    }
}

extension FieldScanWriter {
    /// The position of the date of -0.0 of a one-field row holding `date`,
    /// and whether the row holds a real of -0.0 or NaN.
    fileprivate static func scan(_ date: Date) throws -> (Int?, Bool) {
        var scanner = FieldScanWriter()
        try scanner.encode(date)
        return (scanner.unstorable, scanner.holdsSpecialReal)
    }
}

extension FieldScanWriterTests {
    @Test("scanning many records keeps the values in order, past a date of -0.0 unless asked to stop at it")
    func manyRecords() throws {
        func message(_ id: Int64, date: Double = 5) -> MessageRecord {
            MessageRecord(
                id: id, dialogId: id * 10, date: Date(timeIntervalSinceReferenceDate: date), text: "t\(id)", senderId: 1,
                receiverId: 2, type: 0, isIncoming: true, isRead: false)
        }
        var firsts: [StoredValue] = []
        var seconds: [StoredValue] = []
        let all = try MessageRecord.scanFields(
            of: [message(1), message(2), message(3)], keeping: 0, and: 3, into: &firsts, &seconds, stoppingAtNegativeZeroDate: true)
        #expect(all.negativeZeroDate == nil && !all.special)
        #expect(firsts == [.integer(1), .integer(2), .integer(3)])
        #expect(seconds == [.text("t1"), .text("t2"), .text("t3")])
        firsts = []
        seconds = []
        let awkward = [message(1), message(2, date: .nan), message(3, date: -0.0), message(4)]
        let found = try MessageRecord.scanFields(
            of: awkward, keeping: 1, and: -1, into: &firsts, &seconds, stoppingAtNegativeZeroDate: true)
        #expect(found.negativeZeroDate?.record == 2 && found.negativeZeroDate?.field == 2)
        #expect(found.special)
        #expect(firsts == [.integer(10), .integer(20)] && seconds.isEmpty)
        // The key readers go on past it.
        firsts = []
        let none = try MessageRecord.scanFields(
            of: awkward, keeping: 1, and: -1, into: &firsts, &seconds, stoppingAtNegativeZeroDate: false)
        #expect(none.negativeZeroDate == nil && none.special)
        #expect(firsts == [.integer(10), .integer(20), .integer(30), .integer(40)])
    }
}
