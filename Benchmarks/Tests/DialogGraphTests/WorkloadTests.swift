import DialogGraph
import Foundation
import Testing

@Suite("The dialog-graph workload generator")
struct WorkloadTests {
    @Test("SplitMix64 gives the reference sequence for seed 0")
    func splitMixReference() {
        var random = SplitMix64(seed: 0)
        // The published first outputs of SplitMix64 seeded with 0.
        #expect(random.next() == 0xE220_A839_7B1D_CDAF)
        #expect(random.next() == 0x6E78_9E6A_A1B9_65F4)
        #expect(random.next() == 0x06C4_5D18_8009_454F)
    }

    @Test("seed 42 gives the pinned fingerprints", arguments: [
        (100, 10, 0xfcd2_be78_34a2_b2cf as UInt64),
        (1000, 100, 0xa1f7_1c06_04d4_1daa as UInt64),
    ])
    func fingerprints(dialogs: Int, messages: Int, expected: UInt64) {
        let data = WorkloadData(dialogs: dialogs, messagesPerDialog: messages, seed: 42)
        #expect(String(data.fingerprint, radix: 16) == String(expected, radix: 16))
    }
}
