/// The SplitMix64 generator of WORKLOAD.md: small, fast, and the same on every
/// machine, so a seed names one graph everywhere.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose state starts at `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// FNV-1a, 64 bits, for the graph fingerprint.
public struct FNV1a64: Sendable {
    /// The hash so far.
    public private(set) var value: UInt64 = 0xCBF2_9CE4_8422_2325

    /// A hash of nothing yet.
    public init() {}

    /// Mixes in `bytes`.
    public mutating func combine(bytes: some Sequence<UInt8>) {
        for byte in bytes {
            value = (value ^ UInt64(byte)) &* 0x100_0000_01B3
        }
    }

    /// Mixes in `integer` as 8 little-endian bytes.
    public mutating func combine(_ integer: Int64) {
        var bits = UInt64(bitPattern: integer)
        for _ in 0..<8 {
            value = (value ^ (bits & 0xFF)) &* 0x100_0000_01B3
            bits >>= 8
        }
    }
}
