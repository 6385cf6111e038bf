import DAOCore
import DAOMacros
import Foundation
import LMDBStorage
import TestSupport
import Testing

// Room to write: a write that finds the disk full, and LMDB's map filling
// with bytes and growing.

@Suite("Full disk: a write that finds no room")
struct DiskFullTests {}

// A full disk, as a writer sees it: StoreHelper's `trial-full` limits the
// size of every file it writes (RLIMIT_FSIZE), so the write that would grow
// a file past it fails with EFBIG, as a write to a full file system fails
// with ENOSPC. The failing call must be a typed StorageError, leave the store
// as the returned calls left it, and the store must open and take writes
// again once there is room.

extension DiskFullTests {
    @Suite("Client trial: a write that finds the disk full")
    struct LibraryDomain {
        @Test("the failing call is a typed error; the store holds the returned calls and takes writes again",
              arguments: localBackends)
        func fullDisk(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("trial-full")
            var written = 0
            // Per file, in bytes: the first limit of LMDB is below the size of its
            // lock file, so that its first open fails (what a new environment
            // meets on a full disk), the second below what its data file grows to.
            let limits = switch backend.name {
            case "lmdb": [40_000, 200_000]
            case "sqlite": [40_000, 90_000]
            default: [16_000, 20_000]
            }
            for (round, limit) in limits.enumerated() {
                let helper = try HelperProcess(["trial-full", backend.name, directory.url.path, "\(written)", "\(limit)"])
                var done = written
                var lines: [String] = []
                while let line = helper.readLine() {
                    if line.hasPrefix("done "), let index = Int(line.dropFirst(5)) { done = index + 1 } else { lines.append(line) }
                }
                let (status, errors) = helper.wait()
                #expect(status == 0, "round \(round) on \(backend.name): the writer failed: \(errors)")
                let failure = lines.first { $0.hasPrefix("error ") || $0.hasPrefix("open error ") }
                #expect(failure != nil, "round \(round) on \(backend.name): no call failed: \(lines)")
                #expect(!lines.contains { $0.contains("untyped") }, "round \(round) on \(backend.name): \(lines)")
                if failure?.hasPrefix("error ") == true {
                    // Read in the same process after the failed call: the state of
                    // the returned calls, or a typed error (SQLite, whose failed
                    // call was the one that creates the tables, fails again there).
                    #expect(lines.contains("read after \(TrialWrites.state(after: done).count)")
                                || lines.contains { $0.hasPrefix("read after error ") },
                            "round \(round) on \(backend.name): \(lines)")
                    #expect(lines.contains("close ok"), "round \(round) on \(backend.name): \(lines)")
                }
                let read = try withLibrary(backend, in: directory.url) { daos, _ in
                    let libraries = try daos.libraries.read()
                    #expect(try daos.shelves.count() == libraries.flatMap(\.shelves).count)
                    #expect(try daos.books.count() == libraries.flatMap(\.shelves).flatMap(\.books).count)
                    return libraries
                }
                #expect(read == TrialWrites.state(after: done),
                        "round \(round) on \(backend.name): after \(done) returned calls and a full disk, the store holds \(read.map(\.name)); \(lines)")
                written = done
                // Room again: the next calls go through, in this process, without a limit.
                try withLibrary(backend, in: directory.url) { daos, _ in
                    for index in written..<(written + 3) {
                        switch TrialWrites.step(index) {
                        case .persist(let library): try daos.libraries.persist(library)
                        case .erase(let code): _ = try daos.libraries.erase(byPrimaryKey: code)
                        }
                    }
                    #expect(try daos.libraries.read() == TrialWrites.state(after: written + 3))
                }
                written += 3
            }
        }
    }
}

extension DiskFullTests {
    @Suite("Client trial, logistics: LMDB's map fills and grows")
    struct LogisticsLMDBMap {
        @Test("LMDB's map fills with bytes and grows; a move and an erasure after it; all back after reopening")
        func lmdbMapFills() throws {
            let directory = try TemporaryDirectory("logistics-map")
            var random = TestRandom(seed: 3)
            var next: Int64 = 0
            var model = LogisticsModel()
            let env = try LMDBEnvironment(directory: directory.url, durability: .none, mapSize: 1 << 16)
            let start = try env.mapSize
            do {
                let daos = try LogisticsDAOs(env)
                for index in 0..<12 {
                    let shipment = Logistics.shipment("s\(index)", parcels: 3, &random, next: &next, oneSpelling: false, payload: 30_000)
                    try daos.shipments.persist(shipment)
                    model.persist(shipment)
                }
                var moved = model.parcelList[0]
                moved.shipmentCode = "s11"
                try daos.parcels.persist(moved)
                model.persist(moved)
                #expect(try daos.shipments.erase(byPrimaryKey: "s3"))
                model.erase(shipment: "s3")
                #expect(sameBits(try daos.shipments.read(), model.shipmentList))
            }
            let grown = try env.mapSize
            #expect(grown > start, "the map did not grow: \(grown)")
            env.close()
            let again = try LMDBEnvironment(directory: directory.url)
            defer { again.close() }
            let daos = try LogisticsDAOs(again)
            #expect(sameBits(try daos.shipments.read(), model.shipmentList))
            #expect(sameBits(try daos.scans.read(), model.scanList))
        }
    }
}
