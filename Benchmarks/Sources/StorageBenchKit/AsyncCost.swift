import CCallgrind
import DAOCore
import DialogGraph
import Foundation

/// What the `async` form of a DAO call costs beside its synchronous form, on
/// one store, one client: `storage-bench async-cost`.
///
/// For each backend a fresh store is loaded with `dialogs` dialogs, then six
/// regions run, each `calls` calls long: `read-by-id` synchronous and
/// awaited, `persist-single` synchronous and awaited (each persist a new
/// dialog with its messages), and two regions of empty hops (`hop`: an empty
/// job on the store's writer thread, and a hop through a serial dispatch
/// queue). The two forms of `persist-single` and of `hop` run in halves, in
/// the order A B B A: each persist grows the tree the next one writes into,
/// and the halves' order makes that growth fall on both forms alike. Under
/// callgrind each half's end writes a dump described
/// `async-cost/BACKEND/OPERATION/API` holding its instructions, every
/// thread's (the store's writer and reader threads and the pool's included);
/// `scripts/async-cost.sh` adds a region's dumps up. Outside valgrind the
/// regions are timed.
public enum AsyncCost {
    /// One region's figures.
    public struct Region: Sendable {
        /// The backend's name.
        public var backend: String
        /// `read-by-id`, `persist-single` or `hop`.
        public var operation: String
        /// `sync` or `async`; for `hop`, `writer-thread` or `dispatch-queue`.
        public var api: String
        /// Calls made.
        public var calls: Int
        /// Wall time of the region, in seconds.
        public var seconds: Double
    }

    /// The name of a region's dump.
    static func dumpName(_ backend: String, _ operation: String, _ api: String) -> String {
        "async-cost/\(backend)/\(operation)/\(api)"
    }

    /// Runs the six regions on each of `backends` (DAO backends of
    /// ``LoadBackendRegistry/standard``).
    /// - Throws: ``ConfigurationError`` for a backend that is not a DAO
    ///   backend; ``StorageError`` from the store.
    public static func run(
        backends: [LoadBackend], dialogs: Int, messagesPerDialog: Int, calls: Int, durability: Durability
    ) async throws -> [Region] {
        let data = WorkloadData(dialogs: dialogs + 2 * calls, messagesPerDialog: messagesPerDialog, seed: 1)
        let initial = Array(data.initial.prefix(dialogs))
        let inserted = Array(data.initial.dropFirst(dialogs))
        var random = SplitMix64(seed: 7)
        let keys = (0..<calls).map { _ in Int64(random.next() % UInt64(dialogs)) + 1 }
        var regions: [Region] = []
        for backend in backends {
            let directory = try makeScratchDirectory("async-cost")
            defer { removeScratchDirectory(directory) }
            guard let subject = try backend.open(directory, durability) as? DAOLoadSubject else {
                throw ConfigurationError("async-cost measures the DAO backends; '\(backend.name)' is not one")
            }
            let dao = subject.dialogs
            try Synchronous.persist(initial, dao)
            // One call of each form first, untimed: threads start, statements are prepared.
            _ = try Synchronous.read(1, dao)
            _ = try await dao.read(byPrimaryKey: 1)

            // A region's calls, made at once or in halves (the halves' calls
            // and times add up into one region).
            func region(_ operation: String, _ api: String, calls: Int = calls, _ body: () async throws -> Void)
                async rethrows
            {
                let start = TimedRegion.beginDump()
                try await body()
                let seconds = TimedRegion.endDump(start, name: dumpName(backend.name, operation, api))
                if let index = regions.firstIndex(where: {
                    $0.backend == backend.name && $0.operation == operation && $0.api == api
                }) {
                    regions[index].calls += calls
                    regions[index].seconds += seconds
                } else {
                    regions.append(Region(backend: backend.name, operation: operation, api: api, calls: calls, seconds: seconds))
                }
            }
            try await region("read-by-id", "sync") {
                for key in keys { _ = try Synchronous.read(key, dao) }
            }
            try await region("read-by-id", "async") {
                for key in keys { _ = try await dao.read(byPrimaryKey: key) }
            }
            // Halves in the order sync, async, async, sync: a later persist
            // writes into a larger tree.
            let half = calls / 2
            let quarters = (0..<4).map { inserted[(calls * $0 / 2)..<(calls * ($0 + 1) / 2)] }
            for (index, api) in ["sync", "async", "async", "sync"].enumerated() {
                let dialogs = quarters[index]
                try await region("persist-single", api, calls: dialogs.count) {
                    if api == "sync" {
                        for dialog in dialogs { try Synchronous.persist(dialog, dao) }
                    } else {
                        for dialog in dialogs { try await dao.persist(dialog) }
                    }
                }
            }
            // What a hop costs with nothing in it: an empty job on the store's
            // writer thread, and the same through a serial dispatch queue
            // (GRDB's writer), the floor under an awaited write.
            let executor = dao.storage.executor
            let queue = DispatchQueue(label: "async-cost.hop")
            for (index, api) in ["writer-thread", "dispatch-queue", "dispatch-queue", "writer-thread"].enumerated() {
                let count = index < 2 ? half : calls - half
                try await region("hop", api, calls: count) {
                    if api == "writer-thread" {
                        for _ in 0..<count { try await executor.write { _ in } }
                    } else {
                        for _ in 0..<count {
                            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                                queue.async { continuation.resume() }
                            }
                        }
                    }
                }
            }
            try subject.close()
        }
        return regions
    }

    /// The synchronous calls, from a synchronous context (in an `async` one,
    /// the same spelling picks the `async` overload).
    enum Synchronous {
        static func read(_ key: Int64, _ dao: DAO<AnyStorage<DialogRecord>, DialogTranslator>) throws -> Dialog? {
            try dao.read(byPrimaryKey: key)
        }

        static func persist(_ dialog: Dialog, _ dao: DAO<AnyStorage<DialogRecord>, DialogTranslator>) throws {
            try dao.persist(dialog)
        }

        static func persist(_ dialogs: [Dialog], _ dao: DAO<AnyStorage<DialogRecord>, DialogTranslator>) throws {
            try dao.persist(dialogs)
        }
    }
}

extension TimedRegion {
    /// Starts a region measured outside the workload's operations; returns the
    /// clock reading for ``endDump(_:name:)``.
    static func beginDump() -> UInt64 {
        gapDumpName.withCString { storage_bench_callgrind_dump($0) }
        return DispatchTime.now().uptimeNanoseconds
    }

    /// Ends a region started at `start`, writing its costs to a dump
    /// described `name` under callgrind; returns its length in seconds.
    static func endDump(_ start: UInt64, name: String) -> Double {
        let end = DispatchTime.now().uptimeNanoseconds
        name.withCString { storage_bench_callgrind_dump($0) }
        return Double(end - start) / 1e9
    }
}
