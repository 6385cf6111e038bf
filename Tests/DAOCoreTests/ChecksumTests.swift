import CCRC32C
import DAOCore
import Testing

@Suite("CRC-32C")
struct ChecksumTests {
    @Test("known values")
    func knownValues() {
        // The check value of CRC-32C (RFC 3720, appendix B.4).
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
    }

    /// CRC-32C a bit at a time, straight from its definition.
    static func reference(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        }
        return ~crc
    }

    @Test("both paths (CPU instruction, tables) agree with the definition at every length and alignment")
    func paths() {
        var bytes: [UInt8] = []
        var state: UInt32 = 1
        for _ in 0..<100 {
            state = state &* 1_664_525 &+ 1_013_904_223
            bytes.append(UInt8(truncatingIfNeeded: state >> 24))
        }
        for start in 0..<9 {
            for end in start...bytes.count {
                let slice = Array(bytes[start..<end])
                let expected = Self.reference(slice)
                #expect(CRC32C.checksum(slice) == expected)
                #expect(slice.withUnsafeBytes { dao_crc32c_update_portable(0, $0.baseAddress, $0.count) } == expected)
                // Continued in two parts.
                let cut = slice.count / 3
                let first = Array(slice[..<cut]).withUnsafeBytes { CRC32C.update(0, $0) }
                #expect(Array(slice[cut...]).withUnsafeBytes { CRC32C.update(first, $0) } == expected)
            }
        }
    }

    @Test("every single flipped bit changes the checksum")
    func flips() {
        let bytes = Array("a record's value, with some text in it".utf8)
        let sum = CRC32C.checksum(bytes)
        for index in bytes.indices {
            for bit in 0..<8 {
                var damaged = bytes
                damaged[index] ^= 1 << bit
                #expect(CRC32C.checksum(damaged) != sum)
            }
        }
    }
}
