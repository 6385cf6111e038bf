import DAOCore
import Testing

// The one total order of reals (docs/SEMANTICS.md): -inf < … < -0.0 = 0.0 <
// … < +inf < NaN, every NaN tied with every NaN; `StoredValue`'s order and
// the ordered form of sort keys (and so LMDB's index keys) agree on it.
@Suite("Reals: one total order for sorts and indexes")
struct RealOrderTests {
    static let reals: [Double] = [
        -.infinity, -.greatestFiniteMagnitude, -1, -.leastNormalMagnitude, -.leastNonzeroMagnitude, -0.0, 0,
        .leastNonzeroMagnitude, .leastNormalMagnitude, 1, 9_007_199_254_740_992, .greatestFiniteMagnitude, .infinity,
        .nan, -.nan, .signalingNaN, Double(bitPattern: 0x7FF0_0000_0000_0001), Double(bitPattern: 0xFFFF_FFFF_FFFF_FFFF),
    ]

    /// The documented rank: by value, NaN above everything.
    static func before(_ a: Double, _ b: Double) -> Bool {
        if a.isNaN { return false }
        if b.isNaN { return true }
        return a < b
    }

    @Test("StoredValue and SortKey order every pair of reals alike, as documented")
    func pairs() {
        for a in Self.reals {
            for b in Self.reals {
                let expected = Self.before(a, b)
                #expect((StoredValue.real(a) < .real(b)) == expected, "\(a) < \(b)")
                #expect((SortKey.ordered(a) < SortKey.ordered(b)) == expected, "ordered \(a) < \(b)")
                let tied = !Self.before(a, b) && !Self.before(b, a)
                #expect((SortKey.ordered(a) == SortKey.ordered(b)) == tied, "tie \(a), \(b)")
            }
        }
    }

    @Test("integers order before NaN; an ordered form gives its real back")
    func integersAndRoundTrip() {
        #expect(StoredValue.integer(.max) < .real(.nan))
        #expect(!(StoredValue.real(.nan) < .integer(.min)))
        #expect(StoredValue.integer(0) < .real(.infinity))
        for real in Self.reals {
            let back = SortKey.real(ordered: SortKey.ordered(real))
            if real.isNaN {
                #expect(back.isNaN)
            } else {
                #expect(back == real && (real != 0 || back.sign == .plus))
            }
        }
    }
}
