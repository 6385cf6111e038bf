/// Records decoded from rows, in memory the reader manages, until they are
/// moved out into arrays.
///
/// The storage's code is generic over the record type and runs unspecialized
/// for the caller's types. There, every operation on an `[R]` (an `append` per
/// row) looks up the metadata of `Array<R>` in the runtime's cache, and every
/// copy of a record (a sorted copy, a slice per parent) retains its strings
/// and releases them again. A buffer of `R` needs only `R`'s own metadata,
/// which generic code is handed, and its records leave it by move. Measured
/// on the workload (callgrind, instructions per unit): see docs/ARCHITECTURE.md,
/// "The SQLite adapter".
struct RecordBuffer<Element>: ~Copyable {
    private var base: UnsafeMutablePointer<Element>
    private var capacity: Int
    /// The elements before `first` were moved out; those from `first` to
    /// `count` are initialized.
    private var first = 0
    /// The number of elements appended.
    private(set) var count = 0

    /// An empty buffer with room for `capacity` elements before it grows.
    init(capacity: Int = 16) {
        self.capacity = max(capacity, 1)
        base = .allocate(capacity: self.capacity)
    }

    deinit {
        (base + first).deinitialize(count: count - first)
        base.deallocate()
    }

    /// Appends the element `initialize` writes into the uninitialized slot it
    /// is handed; nothing is appended when it throws (it must then leave the
    /// slot uninitialized). Only before anything was moved out.
    @inline(__always)
    mutating func append(_ initialize: (UnsafeMutablePointer<Element>) throws -> Void) throws {
        if count == capacity { grow() }
        try initialize(base + count)
        count += 1
    }

    private mutating func grow() {
        let newCapacity = capacity * 2
        let newBase = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
        (newBase + first).moveInitialize(from: base + first, count: count - first)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    /// Puts the elements in the order of `order`, a permutation of their
    /// positions (`order[i]` is the position of the element that goes to
    /// `i`), by moving them; only before anything was moved out.
    mutating func reorder(_ order: [Int]) {
        assert(first == 0 && order.count == count, "RecordBuffer.reorder: not a permutation of the elements")
        let newBase = UnsafeMutablePointer<Element>.allocate(capacity: capacity)
        for (target, source) in order.enumerated() {
            (newBase + target).moveInitialize(from: base + source, count: 1)
        }
        base.deallocate()
        base = newBase
    }

    /// The elements not moved out yet, to change in place.
    mutating func withElements<T>(_ body: (UnsafeMutableBufferPointer<Element>) throws -> T) rethrows -> T {
        try body(UnsafeMutableBufferPointer(start: base + first, count: count - first))
    }

    /// Moves the elements from the first not yet moved out up to `end`
    /// (exclusive) into an array.
    mutating func take(upTo end: Int) -> [Element] {
        assert(end >= first && end <= count, "RecordBuffer.take: out of range")
        let taken = end - first
        guard taken > 0 else { return [] }
        let source = base + first
        first = end
        return [Element](unsafeUninitializedCapacity: taken) { buffer, initialized in
            if let target = buffer.baseAddress {
                target.moveInitialize(from: source, count: taken)
                initialized = taken
            }
        }
    }

    /// Moves every element not moved out yet into an array.
    mutating func takeAll() -> [Element] {
        take(upTo: count)
    }

    /// Moves every element not moved out yet into an array and empties the
    /// buffer, keeping its memory for the next elements appended.
    mutating func takeAllAndReuse() -> [Element] {
        let taken = take(upTo: count)
        first = 0
        count = 0
        return taken
    }
}
