import DAOCore
import Testing

// `[constants].contains($0.field)` looks its constants up in a set; the set
// must answer exactly as comparing with each constant through
// `Semantics.equal` does.

@Suite("StoredValueSet answers as Semantics.equal")
struct StoredValueSetTests {
    static let values: [StoredValue] = [
        .null, .integer(0), .integer(1), .integer(-1), .integer(.max), .integer(.min), .integer(1 << 53 + 1),
        .real(0), .real(-0.0), .real(1), .real(1.5), .real(-1), .real(.nan), .real(.infinity), .real(-.infinity),
        .real(9_223_372_036_854_775_808.0), .real(-9_223_372_036_854_775_808.0), .real(Double(1 << 53)),
        .real(.leastNonzeroMagnitude), .text(""), .text("Zo\u{EB}"), .text("Zoe\u{308}"), .text("0"), .text("a\u{0}"),
        .blob([]), .blob([0]), .blob([1, 2]),
    ]

    @Test("every value against every set of one, two and all the values")
    func sameAsEqual() {
        var sets: [[StoredValue]] = Self.values.map { [$0] }
        sets += zip(Self.values, Self.values.dropFirst()).map { [$0, $1] }
        sets.append(Self.values)
        for constants in sets {
            let set = StoredValueSet(constants)
            for value in Self.values {
                let expected = constants.contains { Semantics.equal(value, $0) }
                #expect(set.contains(value) == expected, "\(value) in \(constants)")
            }
        }
    }
}
