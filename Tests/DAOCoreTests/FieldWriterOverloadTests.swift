import DAOCore
import Foundation
import Testing

/// Writes `value` through `Optional`'s `WritableField` conformance only (the
/// generic path), whatever overloads exist for its type.
private func writtenGenerically<T: WritableField>(_ value: T?) throws -> [StoredValue] {
    var writer = StoredValueWriter()
    try value.write(to: &writer)
    return writer.values
}

/// The concrete `encode(_:)` and `encodeIfPresent(_:)` overloads for optionals
/// of the common field types (picked by the compiler where a field's type is
/// exactly one of them) write what the generic path writes.
@Suite("Field writer overloads for optionals")
struct FieldWriterOverloadTests {
    @Test("a value and nil of every common type, through both overloads")
    func sameAsGeneric() throws {
        let date = Date(timeIntervalSinceReferenceDate: -1.5)
        let data = Data([0, 1, 0xFF])
        var writer = StoredValueWriter()
        let int64: Int64? = .min, int: Int? = 42, double: Double? = -.infinity, text: String? = "Zoe\u{308} \u{0} 🚀"
        let flag: Bool? = false, when: Date? = date, bytes: Data? = data
        try writer.encodeIfPresent(int64)
        try writer.encodeIfPresent(int)
        try writer.encodeIfPresent(double)
        try writer.encodeIfPresent(text)
        try writer.encodeIfPresent(flag)
        try writer.encodeIfPresent(when)
        try writer.encodeIfPresent(bytes)
        try writer.encode(int64)
        try writer.encode(int)
        try writer.encode(double)
        try writer.encode(text)
        try writer.encode(flag)
        try writer.encode(when)
        try writer.encode(bytes)
        let generic = try writtenGenerically(int64) + writtenGenerically(int) + writtenGenerically(double)
            + writtenGenerically(text) + writtenGenerically(flag) + writtenGenerically(when) + writtenGenerically(bytes)
        #expect(writer.values == generic + generic)
        #expect(generic == [
            .integer(.min), .integer(42), .real(-.infinity), .text("Zoe\u{308} \u{0} 🚀"), .integer(0),
            .real(-1.5), .blob([0, 1, 0xFF]),
        ])

        var nils = StoredValueWriter()
        try nils.encodeIfPresent(Int64?.none)
        try nils.encodeIfPresent(Int?.none)
        try nils.encodeIfPresent(Double?.none)
        try nils.encodeIfPresent(String?.none)
        try nils.encodeIfPresent(Bool?.none)
        try nils.encodeIfPresent(Date?.none)
        try nils.encodeIfPresent(Data?.none)
        try nils.encode(Int64?.none)
        try nils.encode(Int?.none)
        try nils.encode(Double?.none)
        try nils.encode(String?.none)
        try nils.encode(Bool?.none)
        try nils.encode(Date?.none)
        try nils.encode(Data?.none)
        #expect(nils.values == Array(repeating: .null, count: 14))
    }
}
