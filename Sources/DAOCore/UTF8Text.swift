/// Builds `String`s from the UTF-8 bytes of stored text.
///
/// `String(decoding:as:)` validates the bytes with the standard library's
/// validator, which goes byte by byte once it meets a non-ASCII byte (about
/// 9.6 instructions a byte on the workload's mixed Latin, Cyrillic and emoji
/// text, 1.6k per message). This validator checks eight bytes at a time,
/// without a branch on them while they are ASCII, continuations and
/// two-byte leads (Latin accents, Cyrillic, Greek), and with a table-driven
/// state machine around longer sequences, then builds the string from the bytes it has just
/// validated without validating them again (`UTF8Span(unchecked:)`,
/// SE-0464). Bytes that are not valid UTF-8 go the standard library's way
/// and are repaired as before (each ill-formed sequence becomes U+FFFD), so
/// the result is the same `String` for every input. The LMDB and SQLite
/// adapters build every stored text this way (docs/ARCHITECTURE.md,
/// "Values").
public enum UTF8Text {
    /// The text whose UTF-8 bytes are `bytes`, with ill-formed sequences
    /// repaired as `String(decoding:as:)` repairs them.
    @inlinable @inline(__always)
    public static func string(_ bytes: UnsafeRawBufferPointer) -> String {
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

    /// The text whose UTF-8 bytes are `bytes`, which the caller knows to be
    /// well-formed: built without validating them again.
    ///
    /// Only for bytes whose validity something the adapter checked vouches
    /// for: LMDB's values of format 2 carry a CRC-32C of bytes the store
    /// wrote from Swift strings (always well-formed), so once the checksum
    /// matches, the text inside is what a `String` gave. Ill-formed bytes
    /// here would make a `String` that breaks its own invariants; every
    /// other source of text (SQLite's columns, LMDB's values without a
    /// checksum, bytes a checksum was not yet compared for) goes through
    /// ``string(_:)``.
    @inlinable @inline(__always)
    public static func string(validated bytes: UnsafeRawBufferPointer) -> String {
        #if compiler(>=6.2)
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            let elements = bytes.assumingMemoryBound(to: UInt8.self)
            return String(copying: unsafe UTF8Span(unchecked: Span(_unsafeElements: elements)))
        }
        #endif
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `bytes` are well-formed UTF-8 (Unicode 15, table 3-7: no
    /// overlong forms, no surrogates, nothing above U+10FFFF, no sequence
    /// cut short), as the standard library's validator decides.
    ///
    /// Eight bytes (a word) at a time, two words a turn. A word of ASCII,
    /// continuation bytes and two-byte leads only (Latin, Greek, Cyrillic,
    /// Hebrew, Arabic text) is checked without a branch on its bytes: each
    /// continuation must follow a lead and each lead be followed by one,
    /// across words too, and no lead may be 0xC0 or 0xC1 (overlong). A word
    /// with a three- or four-byte lead, or one inside a sequence longer than
    /// two bytes, goes through a shift-based state machine (a row of next
    /// states per byte), one table load and one shift a byte. The last bytes
    /// are checked as a word padded with zeros, which a sequence cut short
    /// fails.
    public static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        return rows.withUnsafeBufferPointer { rows in
            // Never nil: the table has 256 rows.
            guard let rows = rows.baseAddress else { return String(validating: bytes, as: UTF8.self) != nil }
            return isValid(base, bytes.count, rows)
        }
    }

    @inline(__always)
    private static func isValid(_ base: UnsafeRawPointer, _ count: Int, _ rows: UnsafePointer<UInt64>) -> Bool {
        var scan = Scan()
        var index = 0
        // Two words a turn (callgrind, the workload's texts, 161 bytes on
        // average: about 650 instructions a text, 790 without the turn for
        // ASCII below). Two words of ASCII need no look at
        // their bytes: only a two-byte lead before them, left without its
        // continuation, or a longer sequence cut short, makes them fail.
        // Words of ASCII, continuations and two-byte leads take one branch
        // for both and no branch on their bytes; the rest go through the
        // state machine.
        while count &- index >= 16 {
            let first = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            let second = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index &+ 8, as: UInt64.self))
            index &+= 16
            let firstHigh = first & Scan.high
            let secondHigh = second & Scan.high
            if firstHigh | secondHigh == 0 {
                if scan.inMachine { return false }
                scan.failures |= scan.carry
                scan.carry = 0
                continue
            }
            let firstBit6 = (first &<< 1) & Scan.high
            let secondBit6 = (second &<< 1) & Scan.high
            if (firstHigh & firstBit6 & (first &<< 2)) | (secondHigh & secondBit6 & (second &<< 2)) == 0
                && !scan.inMachine
            {
                scan.checkShort(first, high: firstHigh, bit6: firstBit6)
                scan.checkShort(second, high: secondHigh, bit6: secondBit6)
            } else {
                scan.check(first, rows)
                scan.check(second, rows)
            }
        }
        if count &- index >= 8 {
            scan.check(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self)), rows)
            index &+= 8
        }
        let rest = count &- index
        if rest > 0 {
            var word: UInt64 = 0
            if count >= 8 {
                // The last eight bytes, those already checked shifted out.
                word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
                    &>> UInt64(8 * (8 - rest))
            } else {
                for offset in 0..<rest {
                    word |= UInt64(base.load(fromByteOffset: offset, as: UInt8.self)) &<< UInt64(8 * offset)
                }
            }
            scan.check(word, rows)
        }
        return scan.isComplete
    }

    /// The state of ``isValid(_:)`` between words.
    private struct Scan {
        /// 0x80 when the previous word ended with a two-byte lead (its
        /// continuation is this word's first byte), else 0.
        var carry: UInt64 = 0
        /// Nonzero once a word of the branch-free kind was ill-formed.
        var failures: UInt64 = 0
        /// The state machine's state, while ``inMachine``.
        var state = State.accept
        /// Whether the last word ended inside a sequence of three or four
        /// bytes with more than one continuation to come, or in the
        /// machine's error state (one continuation to come is ``carry``).
        var inMachine = false

        /// Well-formed so far and not inside a sequence.
        var isComplete: Bool { !inMachine && failures == 0 && carry == 0 }

        /// The top bit of each byte.
        static let high: UInt64 = 0x8080_8080_8080_8080

        /// Checks a word with no byte 111xxxxx (ASCII, continuations
        /// 10xxxxxx and leads 110xxxxx only), outside a longer sequence:
        /// `high` holds each byte's top bit, `bit6` its next one, in the
        /// top bit's place.
        @inline(__always)
        mutating func checkShort(_ word: UInt64, high: UInt64, bit6: UInt64) {
            let leads = high & bit6
            let continuations = high ^ leads
            // A lead's bits 4…1 zero: 0xC0 or 0xC1. (Each byte of the sum
            // stays below 0x100, so no carry crosses bytes.)
            let payload = ((word & 0x1E1E_1E1E_1E1E_1E1E) &+ 0x7F7F_7F7F_7F7F_7F7F) & Self.high
            failures |= (((leads &<< 8) | carry) ^ continuations) | (leads & ~payload)
            carry = leads &>> 56
        }

        /// Checks any word, by ``checkShort(_:high:bit6:)`` when it can,
        /// else by the state machine.
        @inline(__always)
        mutating func check(_ word: UInt64, _ rows: UnsafePointer<UInt64>) {
            let high = word & Self.high  // bytes of 0x80 and above
            let bit6 = (word &<< 1) & Self.high
            if high & bit6 & (word &<< 2) == 0 && !inMachine {
                checkShort(word, high: high, bit6: bit6)
                return
            }
            var state = inMachine ? self.state : (carry != 0 ? State.one : State.accept)
            for shift in stride(from: 0 as UInt64, to: 64, by: 8) {
                state = rows[Int(truncatingIfNeeded: (word &>> shift) & 0xFF)] &>> state
            }
            switch state & 63 {
            case State.accept:
                carry = 0
                inMachine = false
            case State.one:
                carry = 0x80
                inMachine = false
            default:
                self.state = state
                inMachine = true
            }
        }
    }

    /// The state machine's states, each the offset of its next state's six
    /// bits in a byte's row (only the low six bits of a state count; a shift
    /// by it ignores the rest).
    private enum State {
        static let error: UInt64 = 0
        static let accept: UInt64 = 6
        /// One, two or three continuation bytes to come.
        static let one: UInt64 = 12
        static let two: UInt64 = 18
        static let three: UInt64 = 24
        /// After 0xE0 (next A0…BF), 0xED (80…9F), 0xF0 (90…BF), 0xF4 (80…8F).
        static let afterE0: UInt64 = 30
        static let afterED: UInt64 = 36
        static let afterF0: UInt64 = 42
        static let afterF4: UInt64 = 48
    }

    /// For each byte, the next state from each state: the next state from
    /// `s` is `rows[byte] >> s` (its low six bits); every state not listed
    /// goes to `error` (0), which goes nowhere else.
    static let rows: [UInt64] = (0...255).map { byte in
        let moves: [(from: UInt64, to: UInt64)]
        switch byte {
        case 0x00...0x7F: moves = [(State.accept, State.accept)]
        case 0x80...0x8F:
            moves = [
                (State.one, State.accept), (State.two, State.one), (State.three, State.two),
                (State.afterED, State.one), (State.afterF4, State.two),
            ]
        case 0x90...0x9F:
            moves = [
                (State.one, State.accept), (State.two, State.one), (State.three, State.two),
                (State.afterED, State.one), (State.afterF0, State.two),
            ]
        case 0xA0...0xBF:
            moves = [
                (State.one, State.accept), (State.two, State.one), (State.three, State.two),
                (State.afterE0, State.one), (State.afterF0, State.two),
            ]
        case 0xC2...0xDF: moves = [(State.accept, State.one)]
        case 0xE0: moves = [(State.accept, State.afterE0)]
        case 0xE1...0xEC, 0xEE...0xEF: moves = [(State.accept, State.two)]
        case 0xED: moves = [(State.accept, State.afterED)]
        case 0xF0: moves = [(State.accept, State.afterF0)]
        case 0xF1...0xF3: moves = [(State.accept, State.three)]
        case 0xF4: moves = [(State.accept, State.afterF4)]
        default: moves = []  // 0xC0, 0xC1 (overlong), 0xF5…0xFF
        }
        return moves.reduce(0) { $0 | ($1.to &<< $1.from) }
    }
}
