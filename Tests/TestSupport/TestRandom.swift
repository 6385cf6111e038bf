/// The tests' seeded generator (SplitMix64, as the workload's): the same
/// numbers from the same seed on every machine, so a failing run repeats
/// from the seed it prints.
public struct TestRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator from `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound` (0 when `bound` is not positive).
    public mutating func below(_ bound: Int) -> Int { bound <= 0 ? 0 : Int(next() % UInt64(bound)) }

    /// One of `choices`, which must not be empty.
    public mutating func pick<T>(_ choices: [T]) -> T { choices[below(choices.count)] }
}
