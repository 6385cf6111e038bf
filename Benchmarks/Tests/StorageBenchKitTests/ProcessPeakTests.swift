import Foundation
import Testing

@testable import StorageBenchKit

#if os(Linux)
import Glibc

/// The worker's `peak_rss_bytes` is its whole peak, though the memory probe
/// resets Linux's high-water mark before each operation.
@Suite struct ProcessPeakTests {
    @Test func theProcessPeakOutlivesAResetOfTheHighWaterMark() throws {
        // A mapping of its own, touched and then unmapped, so that resident
        // memory falls back below the peak it made.
        let bytes = 128 << 20
        let mapped = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        let block = try #require(mapped == MAP_FAILED ? nil : mapped)
        for offset in stride(from: 0, to: bytes, by: 4096) { block.storeBytes(of: 1, toByteOffset: offset, as: UInt8.self) }
        let peakWithBlock = try #require(SystemInfo.peakResidentBytes())
        #expect(munmap(block, bytes) == 0)

        try #require(MemoryProbe.resetPeak())
        // The reset cleared `VmHWM` down to what is resident now, without
        // the block; the process's peak still counts it. Tests running
        // alongside may reset the mark too, between reading it and clearing
        // it, and lose what grew in that moment (a worker has one thread and
        // cannot): a few MiB of slack, far less than the block.
        let processPeak = try #require(MemoryProbe.processPeakBytes())
        #expect(processPeak >= peakWithBlock - (16 << 20))
    }
}
#endif
