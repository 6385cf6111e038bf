import DialogGraph
import Foundation

/// YCSB's zipfian generator (`ZipfianGenerator`, after Gray et al., "Quickly
/// Generating Billion-Record Synthetic Databases", SIGMOD 1994): item 0 is
/// the most popular, item `i` is chosen with probability ∝ 1/(i+1)^θ. The item
/// count may grow (for ``KeyDistribution/latest``); ζ(n) is then extended
/// incrementally, as YCSB does.
public struct ZipfianGenerator: Sendable {
    /// θ, the skew.
    public let theta: Double
    private let alpha: Double
    private let zeta2: Double
    /// The item count ζ was computed for.
    public private(set) var items: Int64
    private var zetaN: Double
    private var eta: Double

    /// A generator over `items` items (0…items−1) with skew `theta`.
    /// - Precondition: `items >= 1`, `0 < theta < 1`.
    public init(items: Int64, theta: Double) {
        precondition(items >= 1 && theta > 0 && theta < 1, "a zipfian generator needs items and 0 < θ < 1")
        self.theta = theta
        alpha = 1 / (1 - theta)
        zeta2 = Self.zeta(from: 0, to: 2, theta: theta, initial: 0)
        self.items = items
        zetaN = Self.zeta(from: 0, to: items, theta: theta, initial: 0)
        eta = (1 - pow(2 / Double(items), 1 - theta)) / (1 - zeta2 / zetaN)
    }

    /// A generator whose ζ(n) is given, for a count too large to sum
    /// (YCSB's scrambled zipfian uses 10¹⁰ items and its precomputed ζ).
    init(items: Int64, theta: Double, zetaN: Double) {
        self.theta = theta
        alpha = 1 / (1 - theta)
        zeta2 = Self.zeta(from: 0, to: 2, theta: theta, initial: 0)
        self.items = items
        self.zetaN = zetaN
        eta = (1 - pow(2 / Double(items), 1 - theta)) / (1 - zeta2 / zetaN)
    }

    /// Σ 1/(i+1)^θ for i in `from..<to`, added to `initial`.
    static func zeta(from: Int64, to: Int64, theta: Double, initial: Double) -> Double {
        var sum = initial
        var i = from
        while i < to {
            sum += 1 / pow(Double(i + 1), theta)
            i += 1
        }
        return sum
    }

    /// The next item, in 0..<``items``, from the uniform `unit` in [0, 1).
    public func item(unit u: Double) -> Int64 {
        let uz = u * zetaN
        if uz < 1 { return 0 }
        if uz < 1 + pow(0.5, theta) { return 1 }
        let item = Int64(Double(items) * pow(eta * u - eta + 1, alpha))
        return min(max(item, 0), items - 1)
    }

    /// Grows the item count to `newItems` (ζ extended by the new terms).
    public mutating func grow(to newItems: Int64) {
        guard newItems > items else { return }
        zetaN = Self.zeta(from: items, to: newItems, theta: theta, initial: zetaN)
        items = newItems
        eta = (1 - pow(2 / Double(items), 1 - theta)) / (1 - zeta2 / zetaN)
    }
}

/// YCSB's 64-bit FNV-1a hash of a long (`Utils.fnvhash64`), which its
/// scrambled zipfian uses to spread the hot items over the key space.
@inline(__always)
func ycsbFNVHash64(_ value: Int64) -> Int64 {
    var value = value
    var hash: Int64 = Int64(bitPattern: 0xCBF2_9CE4_8422_2325)
    for _ in 0..<8 {
        let octet = value & 0xFF
        value >>= 8
        hash ^= octet
        hash = hash &* 1_099_511_628_211
    }
    return hash == .min ? .max : abs(hash)
}

/// Chooses the dialog each operation touches, by a ``KeyDistribution``, from
/// a client's own seeded generator: the same seed gives the same dialogs on
/// every backend (for ``KeyDistribution/latest`` the dialogs depend on which
/// inserts have been acknowledged, as in YCSB).
public struct KeyChooser: Sendable {
    /// YCSB's item count for the scrambled zipfian, and its ζ for θ = 0.99.
    static let scrambledItems: Int64 = 10_000_000_000
    static let scrambledZeta099 = 26.46902820178302

    private let distribution: KeyDistribution
    /// The dialogs stored before the run: ids 1…count.
    private let count: Int64
    private var zipfian: ZipfianGenerator?

    /// A chooser over dialogs 1…`count` by `distribution` (θ for zipfian and latest).
    public init(distribution: KeyDistribution, count: Int, theta: Double) {
        self.distribution = distribution
        self.count = Int64(count)
        switch distribution {
        case .uniform:
            zipfian = nil
        case .zipfian:
            zipfian =
                theta == 0.99
                ? ZipfianGenerator(items: Self.scrambledItems, theta: theta, zetaN: Self.scrambledZeta099)
                : ZipfianGenerator(items: Int64(count), theta: theta)
        case .latest:
            zipfian = ZipfianGenerator(items: Int64(count), theta: theta)
        }
    }

    /// The next dialog id; `latest` is the newest acknowledged dialog id (for
    /// ``KeyDistribution/latest``; the others ignore it).
    public mutating func next(_ random: inout SplitMix64, latest: Int64) -> Int64 {
        let unit = Double(random.next() >> 11) * 0x1p-53
        switch distribution {
        case .uniform:
            return 1 + Int64(random.next() % UInt64(count))
        case .zipfian:
            guard let zipfian else { return 1 }
            let item = zipfian.item(unit: unit)
            // YCSB: scrambled = min + fnvhash64(item) % itemcount.
            return 1 + ycsbFNVHash64(item) % count
        case .latest:
            // YCSB's SkewedLatestGenerator: latest − zipfian(latest).
            let newest = max(latest, 1)
            zipfian?.grow(to: newest)
            let back = zipfian?.item(unit: unit) ?? 0
            return max(1, newest - back)
        }
    }

    /// The `n` dialogs a zipfian chooser picks most often, hottest first (the
    /// dialogs the chat mix observes); for the other distributions, 1…n.
    public static func hottest(_ n: Int, distribution: KeyDistribution, count: Int) -> [Int64] {
        guard n > 0 else { return [] }
        guard distribution == .zipfian else { return (1...Int64(min(n, count))).map { $0 } }
        var seen: Set<Int64> = []
        var result: [Int64] = []
        var item: Int64 = 0
        while result.count < min(n, count) && item < Int64(count) * 64 {
            let key = 1 + ycsbFNVHash64(item) % Int64(count)
            if seen.insert(key).inserted { result.append(key) }
            item += 1
        }
        return result
    }
}
