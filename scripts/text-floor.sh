#!/usr/bin/env bash
# The floor of lending a plain object's text: what a loop that does only the
# unavoidable work of a message's text costs per text, by instructions under
# callgrind, for the workload's texts (WORKLOAD.md: 16-256 characters drawn
# from its vocabulary, 161 UTF-8 bytes on average).
#
#   Swift: the bytes (known valid) copied into a `String`
#          (`String(copying: UTF8Span(unchecked:))`), its length and first and
#          last byte folded as the harness's digest does, the string released;
#          and the same with the bytes validated first (`UTF8Text.isValid`, as
#          SQLite's text is).
#   C:     the bytes copied into `malloc`ed memory, folded, `free`d (what the C
#          references do per text).
#
#   bash scripts/text-floor.sh        # needs swiftc, cc and valgrind
#
# Each program runs under callgrind at N and 2N texts; the difference ÷ N is
# the cost per text, without the program's start and the texts' generation.
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cat >"$work/main.swift" <<'EOF'
// The workload's texts (DialogGraph's generator, its vocabulary and lengths).
let vocabulary: [String] = [
    "the", "a", "message", "hello", "world", "meeting", "tomorrow", "project", "update", "please",
    "review", "database", "storage", "swift", "quick", "brown", "fox", "lazy", "dog", "coffee",
    "release", "build", "test", "ok", "thanks", "see", "you", "soon", "привет", "мир",
    "сообщение", "завтра", "спасибо", "встреча", "caf\u{E9}", "na\u{EF}ve", "r\u{E9}sum\u{E9}",
    "Z\u{FC}rich", "se\u{F1}or", "fa\u{E7}ade", "sm\u{F6}rg\u{E5}sbord", "\u{1F680}",
]
var state: UInt64 = 42
func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}
let count = Int(CommandLine.arguments[1]) ?? 0
let mode = CommandLine.arguments[2]
var texts: [[UInt8]] = []
for _ in 0..<4000 {
    let length = 16 + Int(next() % 241)
    var scalars: [Unicode.Scalar] = []
    while scalars.count < length {
        if !scalars.isEmpty { scalars.append(" ") }
        scalars += vocabulary[Int(next() % 42)].unicodeScalars.prefix(length - scalars.count)
    }
    var text = ""
    text.unicodeScalars.append(contentsOf: scalars.prefix(length))
    texts.append(Array(text.utf8))
}
if mode == "lengths" {
    for index in 0..<count { print(texts[index % texts.count].count) }
} else {
    @inline(never) func fold(_ text: String, into digest: inout UInt64) {
        let word: UInt64 = text.utf8.withContiguousStorageIfAvailable { (bytes: UnsafeBufferPointer<UInt8>) -> UInt64 in
            let length = UInt64(bytes.count) << 16
            return length | UInt64(bytes[0]) << 8 | UInt64(bytes[bytes.count - 1])
        } ?? 0
        digest = (digest ^ word) &* 0x9E37_79B9_7F4A_7C15
        digest ^= digest >> 29
    }
    // One buffer of every text, so that the loop only slices it.
    let all = texts.flatMap { $0 }
    var starts: [Int] = []
    var start = 0
    for text in texts {
        starts.append(start)
        start += text.count
    }
    starts.append(start)
    let validate = mode == "validated"
    let digest = all.withUnsafeBufferPointer { all -> UInt64 in
        var digest: UInt64 = 0
        guard let base = all.baseAddress, mode != "none" else { return digest }
        for index in 0..<count {
            let slot = index % texts.count
            let bytes = UnsafeBufferPointer(start: base + starts[slot], count: starts[slot + 1] - starts[slot])
            if validate, !UTF8Text.isValid(UnsafeRawBufferPointer(bytes)) { continue }
            fold(String(copying: unsafe UTF8Span(unchecked: Span(_unsafeElements: bytes))), into: &digest)
        }
        return digest
    }
    print(digest)
}
EOF

cat >"$work/floor.c" <<'EOF'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static uint64_t digest;
__attribute__((noinline)) static void fold(const unsigned char *text, size_t length) {
    uint64_t word = (uint64_t)length << 16 | (uint64_t)text[0] << 8 | text[length - 1];
    digest = (digest ^ word) * 0x9E3779B97F4A7C15ULL;
    digest ^= digest >> 29;
}
int main(int argc, char **argv) {  // floor N MODE < lengths
    int count = atoi(argv[1]), copy = !strcmp(argv[2], "malloc");
    size_t *lengths = malloc(count * sizeof *lengths);
    unsigned char *source = malloc(4096);
    memset(source, 'a', 4096);
    for (int i = 0; i < count; i++) if (scanf("%zu", &lengths[i]) != 1) return 1;
    for (int i = 0; i < count && copy; i++) {
        char *text = malloc(lengths[i] + 1);
        memcpy(text, source, lengths[i]);
        text[lengths[i]] = 0;
        fold((unsigned char *)text, lengths[i]);
        free(text);
    }
    printf("%llu\n", (unsigned long long)digest);
    return 0;
}
EOF

swiftc -O Sources/DAOCore/UTF8Text.swift "$work/main.swift" -o "$work/floor-swift"
cc -O2 "$work/floor.c" -o "$work/floor-c"
n=20000
"$work/floor-swift" $((2 * n)) lengths >"$work/lengths"
instructions() {  # command... -> instructions
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
per_text() {  # label program mode
    local base one two
    base=$(instructions "$2" "$n" none <"$work/lengths")
    one=$(instructions "$2" "$n" "$3" <"$work/lengths")
    two=$(instructions "$2" $((2 * n)) "$3" <"$work/lengths")
    # (two - one) is n texts of the loop; the generation of 2n against n
    # texts is the same in both modes, so it is taken off with base at 2n.
    local base2
    base2=$(instructions "$2" $((2 * n)) none <"$work/lengths")
    echo "$1: $(( ((two - base2) - (one - base)) / n )) instructions a text"
}
per_text "Swift String, bytes known valid" "$work/floor-swift" string
per_text "Swift String, bytes validated" "$work/floor-swift" validated
per_text "C malloc, memcpy, free" "$work/floor-c" malloc
