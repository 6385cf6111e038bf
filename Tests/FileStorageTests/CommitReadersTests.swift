import DAOCore
@testable import FileStorage
import Foundation
import Synchronization
import TestSupport
import Testing

/// A commit writes and syncs its files without the store's state lock: a
/// read that comes meanwhile answers the committed state at once, never the
/// state the commit is writing (which a failed write would roll back).
/// ``FileStore/beforeManifest`` holds a commit between writing its
/// documents and replacing the manifest.
@Suite("File store: readers beside a commit's file I/O")
struct CommitReadersTests {
    /// How long a read may take before the test says it waited for the
    /// commit. Long: a read that waits for a held commit never answers, so
    /// only a failing run waits this long, and the whole suite shares two
    /// cores, where a task may not be scheduled for seconds.
    static let limit = Duration.seconds(60)

    /// A value another thread or task sets once (a later value is dropped).
    final class Outcome<Value: Sendable>: Sendable {
        private let value = Mutex<Value?>(nil)
        func set(_ new: Value) { value.withLock { $0 = $0 ?? new } }
        var current: Value? { value.withLock { $0 } }
    }

    /// Holds the first commit that reaches it until ``open()``; later ones pass.
    final class Gate: Sendable {
        let arrived = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)
        private let calls = Mutex(0)

        func pass() {
            guard calls.withLock({ count in
                count += 1
                return count == 1
            }) else { return }
            arrived.signal()
            released.wait()
        }

        func open() { released.signal() }
    }

    struct HookFailure: Error {}
    struct ReadWaited: Error {}

    /// Runs `body` as it is: in an `async` test, a closure that is not
    /// `async` calls the storages' synchronous overloads.
    static func sync<T>(_ body: () throws -> T) rethrows -> T { try body() }

    /// Polls `done` until it holds or ``limit`` has passed; whether it holds.
    static func within(_ done: () -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while !done() {
            guard clock.now < deadline else { return false }
            do {
                try await Task.sleep(for: .milliseconds(1))
            } catch {
                return done()
            }
        }
        return true
    }

    static func garden(_ index: Int, height: Double) -> LayoutGarden {
        let name = "g" + String(100 + index)
        let bed = Int64(index)
        let plants = (0..<5).map { LayoutPlant(code: "\(name)-p\($0)", bed: bed, height: height + Double($0), note: nil) }
        return LayoutGarden(
            name: name, owner: nil, beds: [LayoutBed(id: bed, garden: name, soil: "loam", depth: 1, plants: plants)])
    }

    /// Every document of a store in the directory is one the manifest names.
    static func strayFiles(_ scratch: TemporaryDirectory) throws -> [String] {
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: scratch.file("manifest.json")))
        let referenced = manifest.referencedFiles
        return try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).filter { name in
            (StoreFiles.isDocumentOfAnyStore(name) && !referenced.contains(name)) || StoreFiles.isManifestTemporary(name)
        }
    }

    static func checkLayouts(_ store: FileStore, step: Int) throws {
        try TableInvariantTests.check(store, LayoutGarden.self, step: step)
        try TableInvariantTests.check(store, LayoutBed.self, step: step)
        try TableInvariantTests.check(store, LayoutPlant.self, step: step)
    }

    @Test(
        "reads answer the committed state while a commit writes its files, then the new one",
        arguments: FileFormat.allCases)
    func readsBesideAHeldCommit(format: FileFormat) async throws {
        let scratch = try TemporaryDirectory("file-store")
        var store = try FileStore(directory: scratch.url, format: format, durability: .full)
        var gardens = try store.storage(for: LayoutGarden.self)
        var model: [String: LayoutGarden] = [:]
        for index in 0..<20 { model[Self.garden(index, height: 1).name] = Self.garden(index, height: 1) }
        try Self.sync { try gardens.persist(Array(model.values)) }

        // Each write: one garden's plants (a delta), a new garden at the
        // end, an erasure, every garden (whole documents), erasing all.
        let writes: [(String, @Sendable (FileRecordStorage<LayoutGarden>) throws -> Void, ([String: LayoutGarden]) -> [String: LayoutGarden])] = [
            ("one garden", { try $0.persist([Self.garden(3, height: 7)]) }, { model in
                var model = model
                model[Self.garden(3, height: 7).name] = Self.garden(3, height: 7)
                return model
            }),
            ("a new garden", { try $0.persist([Self.garden(20, height: 2)]) }, { model in
                var model = model
                model[Self.garden(20, height: 2).name] = Self.garden(20, height: 2)
                return model
            }),
            ("an erasure", { _ = try $0.erase(primaryKeys: [Self.garden(5, height: 1).name]) }, { model in
                var model = model
                model[Self.garden(5, height: 1).name] = nil
                return model
            }),
            ("every garden", { storage in
                try storage.persist((0..<21).filter { $0 != 5 }.map { Self.garden($0, height: 3) })
            }, { _ in
                var model: [String: LayoutGarden] = [:]
                for index in 0..<21 where index != 5 { model[Self.garden(index, height: 3).name] = Self.garden(index, height: 3) }
                return model
            }),
            ("erasing all", { _ = try $0.eraseAll() }, { _ in [:] }),
        ]
        for (step, (what, write, expected)) in writes.enumerated() {
            let gate = Gate()
            store.beforeManifest.withLock { $0 = { gate.pass() } }
            let storage = gardens
            let written = Outcome<Result<Void, any Error>>()
            Thread {
                do {
                    try write(storage)
                    written.set(.success(()))
                } catch {
                    written.set(.failure(error))
                }
            }.start()
            let held = await Self.within { gate.arrived.wait(timeout: .now()) == .success }
            try #require(held, "\(what): the commit never reached its hook")

            // While the commit is held: a synchronous read on another thread
            // and an async read answer, and answer the committed state.
            let syncRead = Outcome<Result<[LayoutGarden], any Error>>()
            Thread {
                do {
                    syncRead.set(.success(try storage.readAll()))
                } catch {
                    syncRead.set(.failure(error))
                }
            }.start()
            let asyncRead = Outcome<Result<[LayoutGarden], any Error>>()
            Task {
                do {
                    asyncRead.set(.success(try await storage.readAll()))
                } catch {
                    asyncRead.set(.failure(error))
                }
            }
            let answered = await Self.within { syncRead.current != nil && asyncRead.current != nil }
            #expect(answered, "\(what): a read waited for the commit's files")
            #expect(written.current == nil, "\(what): the write returned while its commit was held")
            gate.open()
            #expect(await Self.within { syncRead.current != nil && asyncRead.current != nil })
            let before = TableLayoutTests.ordered(model)
            #expect(try #require(syncRead.current).get() == before, "\(what): the synchronous read")
            #expect(try #require(asyncRead.current).get() == before, "\(what): the async read")

            #expect(await Self.within { written.current != nil }, "\(what): the write did not return")
            try #require(written.current).get()
            model = expected(model)
            #expect(try Self.sync { try gardens.readAll() } == TableLayoutTests.ordered(model), "\(what): after the commit")
            #expect(try await gardens.readAll() == TableLayoutTests.ordered(model), "\(what): after the commit, async")
            try Self.checkLayouts(store, step: step)
            #expect(try Self.strayFiles(scratch) == [], "\(what)")
        }

        // A second write that comes while a commit is held waits for it,
        // then commits after it.
        let gate = Gate()
        store.beforeManifest.withLock { $0 = { gate.pass() } }
        let first = Self.garden(1, height: 4)
        let second = Self.garden(2, height: 5)
        let storage = gardens
        let firstWritten = Outcome<Result<Void, any Error>>()
        let secondWritten = Outcome<Result<Void, any Error>>()
        Thread {
            do {
                try storage.persist([first])
                firstWritten.set(.success(()))
            } catch {
                firstWritten.set(.failure(error))
            }
        }.start()
        try #require(await Self.within { gate.arrived.wait(timeout: .now()) == .success })
        Thread {
            do {
                try storage.persist([second])
                secondWritten.set(.success(()))
            } catch {
                secondWritten.set(.failure(error))
            }
        }.start()
        try await Task.sleep(for: .milliseconds(100))
        #expect(secondWritten.current == nil, "the second write committed while the first was held")
        // On a thread of its own: a read that waited would hold up the test.
        let besideBoth = Outcome<Result<[LayoutGarden], any Error>>()
        Thread { besideBoth.set(Result { try storage.readAll() }) }.start()
        #expect(await Self.within { besideBoth.current != nil }, "a read waited beside two writes")
        gate.open()
        #expect(await Self.within { besideBoth.current != nil })
        #expect(try #require(besideBoth.current).get() == TableLayoutTests.ordered(model))
        #expect(await Self.within { firstWritten.current != nil && secondWritten.current != nil })
        try #require(firstWritten.current).get()
        try #require(secondWritten.current).get()
        model[first.name] = first
        model[second.name] = second
        #expect(try Self.sync { try gardens.readAll() } == TableLayoutTests.ordered(model))

        store.close()
        store = try FileStore(directory: scratch.url, format: format, durability: .full)
        gardens = try store.storage(for: LayoutGarden.self)
        #expect(try Self.sync { try gardens.readAll() } == TableLayoutTests.ordered(model), "after reopening")
        #expect(try Self.strayFiles(scratch) == [])
        store.close()
    }

    @Test(
        "a commit that fails after writing its files leaves readers and the store at the committed state, no file behind",
        arguments: FileFormat.allCases)
    func failedCommitChangesNothing(format: FileFormat) async throws {
        let scratch = try TemporaryDirectory("file-store")
        var store = try FileStore(directory: scratch.url, format: format, durability: .full)
        var gardens = try store.storage(for: LayoutGarden.self)
        var model: [String: LayoutGarden] = [:]
        for index in 0..<20 { model[Self.garden(index, height: 1).name] = Self.garden(index, height: 1) }
        try Self.sync { try gardens.persist(Array(model.values)) }
        let files = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).sorted()

        store.beforeManifest.withLock { $0 = { throw HookFailure() } }
        let failing: [(String, () throws -> Void)] = [
            ("one garden", { try gardens.persist([Self.garden(3, height: 7)]) }),
            ("a new garden", { try gardens.persist([Self.garden(20, height: 2)]) }),
            ("an erasure", { _ = try gardens.erase(primaryKeys: [Self.garden(5, height: 1).name]) }),
            ("every garden", { try gardens.persist((0..<20).map { Self.garden($0, height: 3) }) }),
            ("erasing all", { _ = try gardens.eraseAll() }),
        ]
        for (step, (what, write)) in failing.enumerated() {
            #expect(throws: StorageError.self, "\(what)") { try write() }
            #expect(try Self.sync { try gardens.readAll() } == TableLayoutTests.ordered(model), "\(what)")
            #expect(try await gardens.readAll() == TableLayoutTests.ordered(model), "\(what), async")
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).sorted() == files, "\(what)")
            try Self.checkLayouts(store, step: step)
        }

        // The store goes on: the next commits write, as deltas and whole.
        store.beforeManifest.withLock { $0 = nil }
        try Self.sync { try gardens.persist([Self.garden(3, height: 7)]) }
        model[Self.garden(3, height: 7).name] = Self.garden(3, height: 7)
        _ = try Self.sync { try gardens.erase(primaryKeys: [Self.garden(5, height: 1).name]) }
        model[Self.garden(5, height: 1).name] = nil
        #expect(try Self.sync { try gardens.readAll() } == TableLayoutTests.ordered(model))
        try Self.checkLayouts(store, step: failing.count)
        store.close()
        store = try FileStore(directory: scratch.url, format: format, durability: .full)
        gardens = try store.storage(for: LayoutGarden.self)
        #expect(try Self.sync { try gardens.readAll() } == TableLayoutTests.ordered(model), "after reopening")
        #expect(try Self.strayFiles(scratch) == [])
        store.close()
    }

    /// What the reads of ``randomCommitsReadBesideTheirFiles(format:)`` answer.
    struct Answers: Equatable, Sendable {
        var gardens: [LayoutGarden]
        /// Through the composite index on soil and depth.
        var clayBeds: [LayoutBed]
        /// Through the foreign key's index, by bed.
        var plantsByBed: [Int64: [LayoutPlant]]
        var plantCount: Int

        init(model: [String: LayoutGarden]) {
            gardens = TableLayoutTests.ordered(model)
            let beds = gardens.flatMap(\.beds)
            clayBeds = beds.filter { $0.soil == "clay" && $0.depth == 1 }.sorted { $0.id < $1.id }
            plantsByBed = Dictionary(uniqueKeysWithValues: beds.map { ($0.id, $0.plants) })
            plantCount = beds.reduce(0) { $0 + $1.plants.count }
        }

        init(
            _ gardens: FileRecordStorage<LayoutGarden>, _ beds: FileRecordStorage<LayoutBed>, _ plants: FileRecordStorage<LayoutPlant>,
            bedIds: [Int64]
        ) throws {
            self.gardens = try gardens.readAll()
            clayBeds = try beds.read(Query(where: #Predicate<LayoutBed> { $0.soil == "clay" && $0.depth == 1 }))
            var byBed: [Int64: [LayoutPlant]] = [:]
            for id in bedIds where try beds.read(primaryKey: id) != nil {
                byBed[id] = try plants.read(Query(where: #Predicate<LayoutPlant> { $0.bed == id }))
            }
            plantsByBed = byBed
            plantCount = try plants.count()
        }
    }

    @Test(
        "random writes: reads made while each commit writes its files answer the state before it, a commit failed there changes nothing",
        arguments: FileFormat.allCases)
    func randomCommitsReadBesideTheirFiles(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let names = ["pear", "apple", "fig", "Zebra", "olive", "çà", "kiwi", "date", "yuzu", "lime", "🍋", "b"]
        var model: [String: LayoutGarden] = [:]
        var rng = TestRandom(seed: format == .json ? 31 : 32)
        var store = try FileStore(directory: scratch.url, format: format, durability: .none)
        var commits = 0
        var failed = 0
        for step in 0..<160 {
            let gardens = try store.storage(for: LayoutGarden.self)
            let beds = try store.storage(for: LayoutBed.self)
            let plants = try store.storage(for: LayoutPlant.self)
            // Every bed a garden of the model may hold, present or not.
            let bedIds = names.indices.flatMap { index in (0..<Int64(6)).map { Int64(index) * 100 + $0 } }
            // The reads run on a thread of their own while the commit waits
            // in its hook: they answer unless they wait for the commit.
            let failing = rng.next() % 3 == 0
            let seen = Outcome<Result<Answers, any Error>>()
            let open = store
            open.beforeManifest.withLock {
                $0 = {
                    let done = DispatchSemaphore(value: 0)
                    Thread {
                        seen.set(Result { try Answers(gardens, beds, plants, bedIds: bedIds) })
                        done.signal()
                    }.start()
                    guard done.wait(timeout: .now() + .seconds(60)) == .success else {
                        seen.set(.failure(ReadWaited()))
                        throw ReadWaited()
                    }
                    try Self.checkLayouts(open, step: step)
                    if failing { throw HookFailure() }
                }
            }
            let before = model
            var next = model
            let write: () throws -> Void
            switch rng.next() % 6 {
            case 0, 1:
                var batch: [LayoutGarden] = []
                for index in names.indices.shuffled(using: &rng).prefix(Int.random(in: 1...3, using: &rng)) {
                    batch.append(TableLayoutTests.garden(names[index], &rng, base: Int64(index) * 100, format: format))
                }
                for garden in batch { next[garden.name] = garden }
                write = { try gardens.persist(batch) }
            case 2:
                let chosen = Array(names.shuffled(using: &rng).prefix(Int.random(in: 1...4, using: &rng)))
                for name in chosen { next[name] = nil }
                write = { _ = try gardens.erase(primaryKeys: chosen) }
            case 3:
                let held = model.values.flatMap(\.beds).map(\.id)
                guard let id = held.randomElement(using: &rng) else { continue }
                for name in next.keys { next[name]?.beds.removeAll { $0.id == id } }
                write = { _ = try beds.erase(primaryKeys: [id]) }
            case 4:
                // Most of the table rewritten: the saved state, whole documents.
                var batch = names.indices.map {
                    TableLayoutTests.garden(names[$0], &rng, base: Int64($0) * 100, format: format)
                }
                batch.removeLast(Int.random(in: 0...3, using: &rng))
                for garden in batch { next[garden.name] = garden }
                write = { try gardens.persist(batch) }
            default:
                if rng.next() % 2 == 0 {
                    write = { _ = try gardens.eraseAll() }
                    next = [:]
                } else {
                    store.close()
                    store = try FileStore(directory: scratch.url, format: format, durability: .none)
                    #expect(try store.storage(for: LayoutGarden.self).readAll() == TableLayoutTests.ordered(model), "step \(step): reopened")
                    continue
                }
            }
            do {
                try write()
                #expect(!(failing && seen.current != nil), "step \(step): a commit failed in its hook did not throw")
                model = next
            } catch is StorageError {
                #expect(failing && seen.current != nil, "step \(step): a commit failed without its hook failing")
                failed += 1
            }
            if let answers = seen.current {
                commits += 1
                #expect(try answers.get() == Answers(model: before), "step \(step): read beside the commit's files")
            } else {
                // No commit: the call changed nothing.
                #expect(next == before, "step \(step): a call that changed the model did not commit")
            }
            #expect(try Answers(gardens, beds, plants, bedIds: bedIds) == Answers(model: model), "step \(step): after the call")
            try Self.checkLayouts(store, step: step)
            #expect(try Self.strayFiles(scratch) == [], "step \(step)")
        }
        // The draw above fails about a third of the commits: both kinds ran.
        #expect(commits > 60 && failed > 15, "\(commits) commits, \(failed) failed")
        store.close()
        let reopened = try FileStore(directory: scratch.url, format: format)
        #expect(try reopened.storage(for: LayoutGarden.self).readAll() == TableLayoutTests.ordered(model))
        reopened.close()
    }
}
