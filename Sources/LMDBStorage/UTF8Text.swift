/// Builds `String`s from the UTF-8 bytes of stored text.
///
/// `String(decoding:as:)` validates the bytes with the standard library's
/// validator, which goes byte by byte once it meets a non-ASCII byte (about
/// 9.6 instructions a byte on the workload's mixed Latin, Cyrillic and emoji
/// text, 1.6k per message). This validator checks eight ASCII bytes at a
/// time and a two-byte sequence (Latin accents, Cyrillic, Greek) with one
/// 16-bit comparison, then builds the string from the bytes it has just
/// validated without validating them again (`UTF8Span(unchecked:)`,
/// SE-0464). Bytes that are not valid UTF-8 go the standard library's way
/// and are repaired as before (each ill-formed sequence becomes U+FFFD), so
/// the result is the same `String` for every input. See docs/DESIGN.md,
/// "LMDB, fifth round".
enum UTF8Text {
    /// The text whose UTF-8 bytes are `bytes`.
    @inline(__always)
    static func string(_ bytes: UnsafeRawBufferPointer) -> String {
        // `UTF8Span` and `String(copying:)` came with Swift 6.2 (and its
        // runtime, macOS 26 and its peers); elsewhere the standard library
        // validates, as before.
        #if compiler(>=6.2)
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *), isValid(bytes) {
            let elements = bytes.assumingMemoryBound(to: UInt8.self)
            return String(copying: unsafe UTF8Span(unchecked: Span(_unsafeElements: elements)))
        }
        #endif
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `bytes` are well-formed UTF-8 (Unicode 15, table 3-7: no
    /// overlong forms, no surrogates, nothing above U+10FFFF, no sequence
    /// cut short), as the standard library's validator decides.
    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let count = bytes.count
        var index = 0
        while index < count {
            if count - index >= 8 {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let high = word & 0x8080_8080_8080_8080
                if high == 0 {
                    index += 8
                    continue
                }
                // Past the ASCII bytes before the first that is not.
                index += high.trailingZeroBitCount >> 3
            } else if base.load(fromByteOffset: index, as: UInt8.self) < 0x80 {
                index += 1
                continue
            }
            // At a byte of 0x80 or more. Two-byte sequences while they
            // last, each checked as one little-endian pair: lead 110xxxxx
            // (not 0xC0 or 0xC1, which would be overlong), then a
            // continuation 10xxxxxx.
            while count - index >= 2 {
                let pair = UInt16(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt16.self))
                guard pair & 0xC0E0 == 0x80C0 else { break }
                guard pair & 0x1E != 0 else { return false }
                index += 2
            }
            guard index < count else { break }
            let lead = base.load(fromByteOffset: index, as: UInt8.self)
            if lead < 0x80 { continue }
            if lead < 0xE0 { return false }  // a stray continuation, or a two-byte sequence cut short
            if lead < 0xF0 {
                guard count - index >= 3 else { return false }
                let second = base.load(fromByteOffset: index + 1, as: UInt8.self)
                guard isContinuation(second), isContinuation(base.load(fromByteOffset: index + 2, as: UInt8.self))
                else { return false }
                if lead == 0xE0 && second < 0xA0 { return false }  // overlong
                if lead == 0xED && second >= 0xA0 { return false }  // a surrogate
                index += 3
            } else {
                guard lead <= 0xF4, count - index >= 4 else { return false }
                let second = base.load(fromByteOffset: index + 1, as: UInt8.self)
                guard isContinuation(second), isContinuation(base.load(fromByteOffset: index + 2, as: UInt8.self)),
                    isContinuation(base.load(fromByteOffset: index + 3, as: UInt8.self))
                else { return false }
                if lead == 0xF0 && second < 0x90 { return false }  // overlong
                if lead == 0xF4 && second >= 0x90 { return false }  // above U+10FFFF
                index += 4
            }
        }
        return true
    }

    @inline(__always)
    private static func isContinuation(_ byte: UInt8) -> Bool { byte & 0xC0 == 0x80 }
}
