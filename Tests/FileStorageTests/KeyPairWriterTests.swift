import DAOCore
import Foundation
import Testing

@testable import FileStorage

/// The file stores read a positional child's primary key and foreign key with
/// their own ``KeyPairWriter``; it must give the stored values
/// ``StoredValueWriter`` gives for the same fields, at every position and for
/// every field type.
@Suite struct KeyPairWriterTests {
    /// Writes a row of fields of every stored type, optionals absent and present.
    private func writeRow(_ writer: inout some FieldWriter, present: Bool) throws {
        try writer.encode("Straße e\u{301} 🚲")  // the primary key: NFD text, emoji
        try writer.encode(Int64(-42))
        try writer.encode(-0.5)
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
            var pair = KeyPairWriter(foreignKeyPosition: position)
            try writeRow(&pair, present: present)
            #expect(pair.key == all.values[0])
            #expect(pair.foreignKey == all.values[position], "position \(position)")
        }
    }
}
