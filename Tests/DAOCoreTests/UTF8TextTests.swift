import Foundation
import Testing

import DAOCore

/// `UTF8Text` decides validity exactly as the standard library does and
/// builds the same `String`, for valid and ill-formed bytes alike.
/// A seeded linear congruential generator of the tests' picks: the same
/// texts on every run.
private struct SeededPicks {
    var state: UInt64

    /// A number in `0..<count`.
    mutating func below(_ count: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 29) % UInt64(count))
    }
}

@Suite struct UTF8TextTests {
    /// Whether the standard library finds `bytes` valid.
    private func standardIsValid(_ bytes: [UInt8]) -> Bool {
        String(validating: bytes, as: UTF8.self) != nil
    }

    /// Checks `bytes` alone and after `0...9` ASCII bytes with ASCII after
    /// them, so that each sequence is met both by the byte-wise and by the
    /// eight-byte path; returns the number of disagreements.
    private func disagreements(_ bytes: [UInt8]) -> Int {
        var found = 0
        for lead in 0...9 {
            let framed = [UInt8](repeating: 0x61, count: lead) + bytes + [UInt8](repeating: 0x7A, count: 9 - lead)
            for candidate in [bytes, framed] {
                let ours = candidate.withUnsafeBytes { UTF8Text.isValid($0) }
                let built = candidate.withUnsafeBytes { UTF8Text.string($0) }
                let expected = String(decoding: candidate, as: UTF8.self)
                if ours != standardIsValid(candidate) || Array(built.utf8) != Array(expected.utf8) { found += 1 }
            }
            if bytes.isEmpty { break }
        }
        return found
    }

    /// Whether `UTF8Text` and the standard library agree on `bytes` alone.
    private func agrees(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { UTF8Text.isValid($0) } == standardIsValid(bytes)
    }

    @Test func everyOneAndTwoByteInputAgreesWithTheStandardLibrary() {
        var found = disagreements([])
        for first in 0...255 {
            found += disagreements([UInt8(first)])
            for second in 0...255 where !agrees([UInt8(first), UInt8(second)]) { found += 1 }
        }
        #expect(found == 0)
    }

    @Test func threeAndFourByteSequencesAgreeWithTheStandardLibrary() {
        // Every lead of 0xC0 and above with every second byte, and the
        // boundary values of the bytes after it.
        let edges: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xF0, 0xFF]
        let fewer: [UInt8] = [0x41, 0x80, 0x8F, 0x90, 0xBF, 0xC0]
        var found = 0
        var checked = 0
        for lead in 0xC0...0xFF {
            for second in 0...255 {
                for third in edges {
                    if !agrees([UInt8(lead), UInt8(second), third]) { found += 1 }
                    checked += 1
                }
                guard lead >= 0xF0 else { continue }
                for third in fewer {
                    for fourth in fewer {
                        if !agrees([UInt8(lead), UInt8(second), third, fourth]) { found += 1 }
                        checked += 1
                    }
                }
            }
        }
        // Each well-formed sequence also inside ASCII on both sides.
        for sequence in [[0xE2, 0x82, 0xAC], [0xED, 0x9F, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF]] {
            found += disagreements(sequence.map(UInt8.init))
        }
        #expect(checked > 300_000)
        #expect(found == 0)
    }

    @Test func seededMixturesAgreeWithTheStandardLibrary() {
        var random = SeededPicks(state: 0x5EED)
        let pieces: [[UInt8]] = [
            Array("a".utf8), Array(" ".utf8), Array("é".utf8), Array("e\u{301}".utf8), Array("привет".utf8),
            Array("🚀".utf8), Array("\u{FFFF}".utf8), Array("\u{10FFFF}".utf8), [0x00], [0x80], [0xC0, 0x80],
            [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xF0, 0x9F, 0x9A], [0xFF],
        ]
        var found = 0
        var valid = 0
        for _ in 0..<4_000 {
            var bytes: [UInt8] = []
            for _ in 0..<random.below(24) { bytes += pieces[random.below(pieces.count)] }
            if standardIsValid(bytes) { valid += 1 }
            found += disagreements(bytes)
        }
        // Both kinds were generated.
        #expect(valid > 200 && valid < 3_800)
        #expect(found == 0)
    }

    /// Texts of every length from 0 to 40 bytes made of pieces of one to four
    /// bytes, well-formed and not, so that each kind of sequence starts at
    /// every offset of a word, crosses words, and ends in the last,
    /// zero-padded word: the branch-free words, the state machine's words,
    /// and the switches between them.
    @Test func sequencesAtEveryOffsetAgreeWithTheStandardLibrary() {
        var random = SeededPicks(state: 0xC0FFEE)
        let wellFormed: [[UInt8]] = [
            Array("a".utf8), Array("é".utf8), Array("ж".utf8), Array("日".utf8), Array("€".utf8),
            Array("🚀".utf8), Array("\u{7FF}".utf8), Array("\u{800}".utf8), Array("\u{D7FF}".utf8),
            Array("\u{E000}".utf8), Array("\u{10000}".utf8), Array("\u{10FFFF}".utf8),
        ]
        let illFormed: [[UInt8]] = [
            [0x80], [0xBF], [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x9F, 0x80], [0xED, 0xA0, 0x80],
            [0xF0, 0x8F, 0x80, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xC2], [0xE2, 0x82],
            [0xF0, 0x9F, 0x9A], [0xFF],
        ]
        var found = 0
        var valid = 0
        var invalid = 0
        for length in 0...40 {
            for round in 0..<120 {
                var bytes: [UInt8] = []
                while bytes.count < length {
                    bytes += wellFormed[random.below(wellFormed.count)]
                }
                // A third of them with one ill-formed piece at a random place.
                if round % 3 == 0 {
                    let at = random.below(bytes.count + 1)
                    bytes.insert(contentsOf: illFormed[random.below(illFormed.count)], at: at)
                }
                let expected = standardIsValid(bytes)
                if expected { valid += 1 } else { invalid += 1 }
                if !agrees(bytes) { found += 1 }
                // The same text cut anywhere: sequences cut short at the end.
                let cut = Array(bytes.prefix(random.below(bytes.count + 1)))
                if !agrees(cut) { found += 1 }
            }
        }
        #expect(valid > 1_000 && invalid > 1_000)
        #expect(found == 0)
    }

    @Test func longTextRoundTrips() {
        let text = String(repeating: "naïve café привет 🚀 e\u{301} \u{0} ", count: 2_000)
        let bytes = Array(text.utf8)
        let built = bytes.withUnsafeBytes { UTF8Text.string($0) }
        #expect(Array(built.utf8) == bytes)
        #expect(built.unicodeScalars.count == text.unicodeScalars.count)
    }
}
