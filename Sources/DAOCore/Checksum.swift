import CCRC32C

/// CRC-32C (Castagnoli), the checksum stores use to tell damaged bytes from
/// what they wrote: it detects every single-bit error, every burst of up to 32
/// bits and, otherwise, all but one change in 2³².
///
/// ```swift
/// let sum = CRC32C.checksum(bytes)   // UInt32
/// ```
///
/// The CPU's `crc32` instruction where there is one (x86-64 with SSE 4.2),
/// eight table lookups per 8 bytes otherwise (`Sources/CCRC32C`).
public enum CRC32C {
    /// The checksum of `bytes`.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        if let sum = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0)) }) {
            return sum
        }
        let copy = Array(bytes)
        return copy.withUnsafeBytes { checksum($0) }
    }

    /// The checksum of the bytes in `buffer`.
    ///
    /// Inlinable, as ``update(_:_:)`` is: a stored value is checked on every
    /// read, and the calls around the C function cost about 20 instructions.
    @inlinable
    public static func checksum(_ buffer: UnsafeRawBufferPointer) -> UInt32 {
        update(0, buffer)
    }

    /// Continues the checksum `crc` (of the bytes before) over `buffer`.
    @inlinable
    public static func update(_ crc: UInt32, _ buffer: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return crc }
        return dao_crc32c_update(crc, base, buffer.count)
    }
}
