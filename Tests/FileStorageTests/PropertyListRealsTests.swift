import DAOCore
import Foundation
import Testing

@testable import FileStorage

// The property-list spelling of reals (Sources/FileStorage/PropertyListReals.swift):
// Foundation's binary writer stores equal numbers once per document, so a
// document written as Foundation writes it gives back one zero for both; the
// respelled document gives back each as given, in every kind of container,
// and decodes with Foundation's own decoder.

@Suite("File store: the property list's spelling of -0.0, 0.0 and NaN")
struct PropertyListRealsTests {
    struct Reals: Codable {
        var double: Double
        var float: Float
        var optional: Double?
        var list: [Double]
        var floats: [Float]
        var nested: Nested
        var date: Date
        var text: String
        var bytes: Data
    }

    /// A value encoded through a single-value container.
    struct Nested: Codable {
        var value: Double
        init(_ value: Double) { self.value = value }
        init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Double.self) }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }

    static func sample(_ zero: Double, _ other: Double) -> Reals {
        Reals(
            double: zero, float: Float(other), optional: other, list: [zero, other, .nan, 1.5], floats: [Float(zero), Float(other)],
            nested: Nested(other), date: Date(timeIntervalSinceReferenceDate: 12.5), text: "t", bytes: Data([0x22, 0x80, 0, 0, 0]))
    }

    static func encoder() -> PropertyListEncoder {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        return encoder
    }

    static func bits(_ value: Reals) -> [UInt64] {
        [value.double.bitPattern, Double(value.float).bitPattern, value.optional?.bitPattern ?? 1]
            + value.list.map(\.bitPattern) + value.floats.map { Double($0).bitPattern } + [value.nested.value.bitPattern]
    }

    @Test("every zero keeps its sign and every NaN comes back canonical, whichever zero comes first")
    func zerosStayApart() throws {
        let payloadNaN = Double(bitPattern: 0x7FF0_0000_0000_0001)
        for (zero, other) in [(0.0, -0.0), (-0.0, 0.0), (-0.0, -0.0), (0.0, 0.0), (-0.0, payloadNaN)] {
            let values = [Self.sample(zero, other), Self.sample(other, zero)]
            let data = try Self.encoder().encode(RealsRespelled(value: values))
            let read = try PropertyListDecoder().decode([Reals].self, from: data)
            let expected = values.map { Self.bits($0).map { Double(bitPattern: $0).isNaN ? Double.nan.bitPattern : $0 } }
            #expect(read.map(Self.bits) == expected, "\(zero), \(other)")
            #expect(read.map(\.date) == values.map(\.date))
            #expect(read.map(\.bytes) == values.map(\.bytes))
        }
    }

    @Test("Foundation's own spelling merges the zeros of one document (why the store respells them)")
    func foundationMergesZeros() throws {
        let data = try Self.encoder().encode([0.0, -0.0])
        let read = try PropertyListDecoder().decode([Double].self, from: data)
        #expect(read.map(\.sign) == [.plus, .plus])
        let respelled = try PropertyListDecoder().decode([Double].self, from: Self.encoder().encode(RealsRespelled(value: [0.0, -0.0])))
        #expect(respelled.map(\.sign) == [.plus, .minus])
    }

    @Test("a NaN date is written canonical; other dates as they are")
    func dates() throws {
        let dates = [Date(timeIntervalSinceReferenceDate: Double(bitPattern: 0xFFF8_0000_0000_0001)), Date(timeIntervalSinceReferenceDate: 3)]
        let read = try PropertyListDecoder().decode([Date].self, from: Self.encoder().encode(RealsRespelled(value: dates)))
        #expect(read.map(\.timeIntervalSinceReferenceDate.bitPattern) == [Double.nan.bitPattern, (3.0).bitPattern])
    }

    @Test("a document may hold a respelled -0.0 only if it holds its bytes")
    func detection() throws {
        #expect(!mayHoldRespelledZero(try Self.encoder().encode([0.0, 1.5, -2])))
        #expect(mayHoldRespelledZero(try Self.encoder().encode(RealsRespelled(value: [0.0, -0.0]))))
        #expect(!mayHoldRespelledZero(Data([0x22, 0x80, 0, 0])))
        #expect(mayHoldRespelledZero(Data([1, 0x22, 0x80, 0, 0, 0])))
    }
}
