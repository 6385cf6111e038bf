import DialogGraph

/// The tests' seeded generator: the workload's SplitMix64 (DialogGraph), the
/// same numbers from the same seed on every machine, so a failing run
/// repeats from the seed it prints.
public typealias TestRandom = SplitMix64

extension SplitMix64 {
    /// A number in `0..<bound` (0 when `bound` is not positive).
    public mutating func below(_ bound: Int) -> Int { bound <= 0 ? 0 : Int(next() % UInt64(bound)) }

    /// One of `choices`, which must not be empty.
    public mutating func pick<T>(_ choices: [T]) -> T { choices[below(choices.count)] }
}
