/// CRC-32C (Castagnoli), the checksum stores use to tell damaged bytes from
/// what they wrote: it detects every single-bit error, every burst of up to 32
/// bits and, otherwise, all but one change in 2³².
///
/// ```swift
/// let sum = CRC32C.checksum(bytes)   // UInt32
/// ```
///
/// Table-driven, eight bytes per step ("slicing by 8").
public enum CRC32C {
    /// The checksum of `bytes`.
    @inlinable
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        if let sum = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0)) }) {
            return sum
        }
        let copy = Array(bytes)
        return copy.withUnsafeBytes { checksum($0) }
    }

    /// The checksum of the bytes in `buffer`.
    public static func checksum(_ buffer: UnsafeRawBufferPointer) -> UInt32 {
        update(0, buffer)
    }

    /// Continues the checksum `crc` (of the bytes before) over `buffer`.
    public static func update(_ crc: UInt32, _ buffer: UnsafeRawBufferPointer) -> UInt32 {
        var crc = ~crc
        let count = buffer.count
        guard count > 0, let base = buffer.baseAddress else { return ~crc }
        return tables.withUnsafeBufferPointer { t in
            var position = 0
            while count - position >= 8 {
                let low = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt32.self)) ^ crc
                let high = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: position + 4, as: UInt32.self))
                crc = t[7 &* 256 &+ Int(low & 0xFF)] ^ t[6 &* 256 &+ Int((low >> 8) & 0xFF)]
                    ^ t[5 &* 256 &+ Int((low >> 16) & 0xFF)] ^ t[4 &* 256 &+ Int(low >> 24)]
                    ^ t[3 &* 256 &+ Int(high & 0xFF)] ^ t[2 &* 256 &+ Int((high >> 8) & 0xFF)]
                    ^ t[1 &* 256 &+ Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
                position &+= 8
            }
            while position < count {
                let byte = base.load(fromByteOffset: position, as: UInt8.self)
                crc = t[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
                position &+= 1
            }
            return ~crc
        }
    }

    /// Eight tables of 256 entries: table 0 is the byte-wise table, table k
    /// advances a byte's contribution by k further bytes.
    private static let tables: [UInt32] = {
        let polynomial: UInt32 = 0x82F6_3B78  // reversed 0x1EDC6F41
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for index in 0..<256 {
            var crc = UInt32(index)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ polynomial : crc >> 1 }
            t[index] = crc
        }
        for index in 0..<256 {
            for k in 1..<8 {
                let previous = t[(k - 1) * 256 + index]
                t[k * 256 + index] = t[Int(previous & 0xFF)] ^ (previous >> 8)
            }
        }
        return t
    }()
}
