import CCallgrind
import Foundation
import Synchronization

/// The worker's memory figures: how far resident memory rises above a
/// starting point, using Linux's resettable high-water mark (`VmHWM` in
/// `/proc/self/status`, reset by writing `5` to `/proc/self/clear_refs`), and
/// the C allocator's bytes in use.
///
/// A probe that cannot reset the high-water mark (not Linux, or a kernel that
/// refuses) measures nothing: its figures are `nil`.
struct MemoryProbe {
    /// The resident memory when the probe started, in bytes.
    private(set) var startResident: Int64
    /// The highest resident memory seen since the probe started, in bytes.
    private(set) var highest: Int64
    /// The resident memory when the current operation began.
    private var operationStart: Int64 = 0

    /// A probe starting now (the workload's data generated, no store open),
    /// or `nil` where the high-water mark cannot be reset.
    init?() {
        guard Self.resetPeak(), let resident = Self.residentBytes() else { return nil }
        startResident = resident
        highest = resident
    }

    /// Marks the start of an operation: folds the peak so far into
    /// ``highest`` and resets the high-water mark to the current resident memory.
    mutating func beginOperation() {
        fold()
        _ = Self.resetPeak()
        operationStart = Self.residentBytes() ?? highest
    }

    /// The rise of resident memory since ``beginOperation()`` at its highest,
    /// in bytes (0 when it did not rise).
    mutating func endOperation() -> Int64? {
        guard let peak = SystemInfo.peakResidentBytes() else { return nil }
        highest = max(highest, peak)
        return max(0, peak - operationStart)
    }

    /// The highest rise of resident memory above the start, in bytes.
    mutating func workloadPeak() -> Int64 {
        fold()
        return max(0, highest - startResident)
    }

    private mutating func fold() {
        if let peak = SystemInfo.peakResidentBytes() { highest = max(highest, peak) }
    }

    /// The current resident memory (`VmRSS`), in bytes.
    static func residentBytes() -> Int64? {
        let status: String
        do {
            status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        } catch {
            return nil  // not Linux: no figure
        }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let digits = line.dropFirst(6).filter(\.isNumber)
            if let kib = Int64(String(digits)) { return kib * 1024 }
        }
        return nil
    }

    /// The highest `VmHWM` seen just before each reset of it, in bytes.
    private static let peakBeforeResets = Mutex<Int64>(0)

    /// The peak resident memory of the whole process, in bytes: the larger of
    /// the current high-water mark and every high-water mark that
    /// ``resetPeak()`` cleared (a reset clears `VmHWM` itself, so reading it
    /// after the probe has run would give only the peak since the last
    /// operation began).
    static func processPeakBytes() -> Int64? {
        let before = peakBeforeResets.withLock { $0 }
        guard let now = SystemInfo.peakResidentBytes() else { return before > 0 ? before : nil }
        return max(now, before)
    }

    /// Resets the high-water mark of resident memory to the current resident
    /// memory, keeping the mark it clears for ``processPeakBytes()``; `false`
    /// when the system does not let it.
    static func resetPeak() -> Bool {
        if let peak = SystemInfo.peakResidentBytes() {
            peakBeforeResets.withLock { $0 = max($0, peak) }
        }
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        do {
            try handle.write(contentsOf: Data("5".utf8))
            try handle.close()
            return true
        } catch {
            return false  // the kernel refused: the probe measures nothing
        }
    }

    /// The C allocator's bytes in use, or `nil` where it cannot say.
    static func heapInUse() -> Int64? {
        let bytes = storage_bench_heap_in_use()
        return bytes >= 0 ? Int64(bytes) : nil
    }

    /// Returns the allocator's free memory to the system, so that a rise of
    /// resident memory counts the pages an operation touches anew.
    static func trimHeap() {
        storage_bench_heap_trim()
    }
}
