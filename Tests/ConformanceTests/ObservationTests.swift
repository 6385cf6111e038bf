import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@Suite("Conformance: change observation")
struct ObservationTests {
    // MARK: Random sequences

    @Test("random writes and erases: every change set turns the old snapshot into the new, which is a fresh read",
          arguments: allBackends)
    func randomBoards(backend: TestBackend) async throws {
        for seed: UInt64 in [1, 2] {
            try await withAsyncStore(backend) { store, _ in
                try await runRandomBoards(store, seed: seed, steps: 70, oneSpellingPerText: backend.name == "plist")
            }
        }
    }

    // A binary property list keeps one spelling of canonically equivalent text
    // and refuses a second one (docs/SEMANTICS.md), so its sequence holds one.
    private func runRandomBoards(_ store: any Store, seed: UInt64, steps: Int, oneSpellingPerText: Bool) async throws {
        let boards = DAO(storage: try store.anyStorage(for: BoardRecord.self), translator: Same<BoardRecord>())
        let cards = DAO(storage: try store.anyStorage(for: CardRecord.self), translator: Same<CardRecord>())
        let items = DAO(storage: try store.anyStorage(for: ItemRecord.self), translator: Same<ItemRecord>())
        let commits = try #require(cards.storage.commits)
        var random = SplitMix64(seed: seed)
        func pick(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
        let titles = ["Zoë", oneSpellingPerText ? "Zoe" : "Zoe\u{0308}", "émile", oneSpellingPerText ? "emile" : "e\u{0301}mile", "🚀 launch", "", "a\u{0}b", String(repeating: "long ", count: 300), "Ann", "ann"]
        let estimates: [Double?] = [nil, 0.0, Double.leastNonzeroMagnitude, 1.5, 1e300, -2.25]
        func card(_ board: String) -> CardRecord {
            let number = pick(14)
            let id = "c-\(number)"
            let itemCount = pick(3)
            return CardRecord(
                id: id, boardId: board, title: titles[pick(titles.count)], rank: Int64(pick(6)), done: pick(3) == 0,
                estimate: estimates[pick(estimates.count)],
                items: (0..<itemCount).map { ItemRecord(id: Int64(number * 10 + $0), cardId: id, text: "i\($0)", checked: false) })
        }
        let boardIds = ["b-1", "b-2", "b-3"]

        // Start with every board holding some cards.
        try await boards.persist(boardIds.map { board in
            BoardRecord(id: board, title: titles[pick(titles.count)], cards: [])
        })

        var observers = Observers(
            openCards: Watched(
                "open cards of b-1 by rank, top 4",
                cards.observe(where: #Predicate { $0.boardId == "b-1" && !$0.done }, sortedBy: [SortDescriptor(\.rank)], limit: 4),
                fresh: { try cards.read(where: #Predicate { $0.boardId == "b-1" && !$0.done }, sortedBy: [SortDescriptor(\.rank)], limit: 4) }),
            allCards: Watched(
                "all cards by title", cards.observe(sortedBy: [SortDescriptor(\.title)]),
                fresh: { try cards.read(sortedBy: [SortDescriptor(\.title)]) }),
            boards: Watched("all boards", boards.observe(), fresh: { try boards.read() }),
            oneCard: Watched(
                "card c-3 by key", cards.observe(primaryKey: "c-3"),
                fresh: { try cards.read(byPrimaryKey: "c-3").map { [$0] } ?? [] }))
        try await observers.start()

        for _ in 0..<steps {
            switch pick(9) {
            case 0, 1, 2:
                // A card written through the cards' storage, maybe moving it to another board.
                let board = boardIds[pick(3)]
                if try await boards.read(byPrimaryKey: board) != nil { try await cards.persist(card(board)) }
            case 3:
                try await cards.erase(byPrimaryKey: "c-\(pick(14))")
            case 4:
                // A board rewritten with new children: the old ones it no longer holds go.
                let board = boardIds[pick(3)]
                var fresh: [String: CardRecord] = [:]
                for _ in 0..<pick(4) {
                    let written = card(board)
                    fresh[written.id] = written
                }
                // A card of another board cannot be taken over silently: drop those.
                let others = Set(try await cards.read(where: #Predicate { $0.boardId != board }).map(\.id))
                try await boards.persist(BoardRecord(
                    id: board, title: titles[pick(titles.count)],
                    cards: fresh.values.filter { !others.contains($0.id) }.sorted { $0.id < $1.id }))
            case 5:
                if pick(3) == 0 { try await boards.erase(byPrimaryKey: boardIds[pick(3)]) }
            case 6:
                let rank = Int64(pick(6))
                try await cards.erase(where: #Predicate { $0.rank > rank && $0.done })
            case 7:
                // A third-level child: the card that holds it is modified.
                let existing = try await cards.read()
                if !existing.isEmpty {
                    let owner = existing[pick(existing.count)]
                    try await items.persist(ItemRecord(id: Int64(50_000 + pick(20)), cardId: owner.id, text: titles[pick(titles.count)], checked: pick(2) == 0))
                }
            default:
                // The same records written again: a commit that changes nothing.
                let existing = try await cards.read()
                if !existing.isEmpty { try await cards.persist(existing[pick(existing.count)]) }
            }
            await commits.drained()
            try await observers.catchUp()
        }
        #expect(observers.openCards.snapshots + observers.allCards.snapshots + observers.boards.snapshots > 10,
                "the sequence changed the observed results")
    }

    struct Observers {
        var openCards: Watched<CardRecord>
        var allCards: Watched<CardRecord>
        var boards: Watched<BoardRecord>
        var oneCard: Watched<CardRecord>

        mutating func start() async throws {
            try await openCards.start()
            try await allCards.start()
            try await boards.start()
            try await oneCard.start()
        }

        mutating func catchUp() async throws {
            try await openCards.catchUp()
            try await allCards.catchUp()
            try await boards.catchUp()
            try await oneCard.catchUp()
        }
    }

    @Test("the dialog graph: unread messages of a dialog and dialogs by key, under random writes", arguments: allBackends)
    func randomDialogs(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self), translator: DialogTranslator())
            let messages = DAO(storage: try store.anyStorage(for: MessageRecord.self), translator: MessageTranslator())
            let commits = try #require(messages.storage.commits)
            var random = SplitMix64(seed: 99)
            func pick(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
            func message(_ id: Int64, _ dialog: Int64) -> Message {
                Message(
                    uniqueId: id, dialogId: dialog, date: Date(timeIntervalSince1970: 1_700_000_000 + Double(pick(50))),
                    text: "m\(id)", senderId: 1, receiverId: 2, type: 0, isIncoming: true, isRead: pick(3) == 0)
            }
            try await dialogs.persist((1...4).map { Dialog(uniqueId: $0, isPinned: false, messages: []) })
            var unread = Watched(
                "unread of dialog 2, newest first",
                messages.observe(where: #Predicate { $0.dialogId == 2 && !$0.isRead }, sortedBy: [SortDescriptor(\.date, order: .reverse)]),
                fresh: { try messages.read(where: #Predicate { $0.dialogId == 2 && !$0.isRead }, sortedBy: [SortDescriptor(\.date, order: .reverse)]) })
            var dialog2 = Watched("dialog 2 by key", dialogs.observe(primaryKey: 2), fresh: { try dialogs.read(byPrimaryKey: 2).map { [$0] } ?? [] })
            try await unread.start()
            try await dialog2.start()
            for step in 0..<60 {
                let dialog = Int64(1 + pick(4))
                switch pick(5) {
                case 0:
                    try await dialogs.persist(Dialog(uniqueId: dialog, isPinned: pick(2) == 0, messages: (0..<pick(4)).map { message(dialog * 100 + Int64($0 * 7 % 10), dialog) }))
                case 1:
                    if pick(2) == 0 { try await dialogs.erase(byPrimaryKey: dialog) }
                case 2:
                    if try await dialogs.read(byPrimaryKey: dialog) != nil { try await messages.persist(message(dialog * 100 + Int64(pick(10)), dialog)) }
                case 3:
                    try await messages.erase(where: #Predicate { $0.isRead })
                default:
                    try await messages.erase(byPrimaryKey: Int64(200 + pick(10)))
                }
                await commits.drained()
                try await unread.catchUp()
                try await dialog2.catchUp()
                _ = step
            }
            #expect(unread.snapshots + dialog2.snapshots > 5)
        }
    }

    // MARK: Coalescing and silence

    @Test("a slow consumer gets one snapshot of the latest state, exact against the one it saw", arguments: allBackends)
    func coalescing(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let boards = DAO(storage: try store.anyStorage(for: BoardRecord.self), translator: Same<BoardRecord>())
            let cards = DAO(storage: try store.anyStorage(for: CardRecord.self), translator: Same<CardRecord>())
            let commits = try #require(cards.storage.commits)
            try await boards.persist(BoardRecord(id: "b", title: "board", cards: []))
            let iterator = cards.observe(sortedBy: [SortDescriptor(\.rank)]).makeAsyncIterator()
            let first = try #require(try await nextSnapshot(iterator))
            #expect(first.results.isEmpty)

            // Twenty commits while the consumer is away.
            for index in 0..<20 {
                try await cards.persist(CardRecord(id: "c\(index)", boardId: "b", title: "t", rank: Int64(index), done: false, estimate: nil, items: []))
            }
            try await cards.erase(byPrimaryKey: "c0")
            await commits.drained()

            let coalesced = try #require(try await nextSnapshot(iterator))
            #expect(coalesced.results.map(\.id) == (1..<20).map { "c\($0)" })
            #expect(coalesced.changes == ObservedChanges(insertions: Array(0..<19)))
            #expect(coalesced.results == (try await cards.read(sortedBy: [SortDescriptor(\.rank)])))

            // Nothing else is waiting: the next snapshot is the next commit's.
            try await cards.persist(CardRecord(id: "marker", boardId: "b", title: "t", rank: -1, done: false, estimate: nil, items: []))
            let marker = try #require(try await nextSnapshot(iterator))
            #expect(marker.changes == ObservedChanges(insertions: [0]))
            #expect(marker.results.first?.id == "marker")
        }
    }

    @Test("commits that cannot change the results are not read again, and produce no snapshot", arguments: allBackends)
    func silence(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let boards = DAO(storage: try store.anyStorage(for: BoardRecord.self), translator: Same<BoardRecord>())
            let cards = DAO(storage: try store.anyStorage(for: CardRecord.self), translator: Same<CardRecord>())
            let users = DAO(storage: try store.anyStorage(for: UserRecord.self), translator: UserTranslator())
            let commits = try #require(cards.storage.commits)
            func card(_ id: String, _ board: String, rank: Int64 = 1, done: Bool = false) -> CardRecord {
                CardRecord(id: id, boardId: board, title: id, rank: rank, done: done, estimate: nil, items: [])
            }
            try await boards.persist([
                BoardRecord(id: "mine", title: "m", cards: [card("m1", "mine"), card("m2", "mine", done: true)]),
                BoardRecord(id: "other", title: "o", cards: [card("o1", "other")]),
            ])
            let iterator = cards.observe(where: #Predicate { $0.boardId == "mine" && !$0.done }).makeAsyncIterator()
            let first = try #require(try await nextSnapshot(iterator))
            #expect(first.results.map(\.id) == ["m1"])
            await commits.drained()
            let rereads = commits.rereadCount

            // None of these can change the open cards of "mine".
            try await cards.persist(card("o2", "other"))
            try await cards.erase(byPrimaryKey: "o1")
            try await boards.persist(BoardRecord(id: "other", title: "o2", cards: [card("o3", "other")]))
            try await boards.erase(byPrimaryKey: "other")
            try await boards.persist(BoardRecord(id: "third", title: "t", cards: [card("t1", "third")]))
            try await users.persist(User(uniqueId: "u", name: "n", bio: nil, email: nil, birthDate: nil, gender: nil))
            try await cards.persist(card("m2", "mine", rank: 9, done: true))  // a done card stays out
            await commits.drained()
            #expect(commits.rereadCount == rereads, "commits that cannot affect the query read it again")

            // This one may (it rewrites an observed card) but changes nothing: read, no snapshot.
            try await cards.persist(card("m1", "mine"))
            await commits.drained()
            #expect(commits.rereadCount == rereads + 1)

            try await cards.persist(card("m3", "mine", rank: 0))
            let next = try #require(try await nextSnapshot(iterator))
            #expect(next.changes == ObservedChanges(insertions: [1]))
            #expect(next.results.map(\.id) == ["m1", "m3"])
        }
    }

    @Test("a change to a parent's children is a modification of the parent; cascades count", arguments: allBackends)
    func childrenModifyParents(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let boards = DAO(storage: try store.anyStorage(for: BoardRecord.self), translator: Same<BoardRecord>())
            let cards = DAO(storage: try store.anyStorage(for: CardRecord.self), translator: Same<CardRecord>())
            let items = DAO(storage: try store.anyStorage(for: ItemRecord.self), translator: Same<ItemRecord>())
            let card = CardRecord(id: "c", boardId: "b", title: "t", rank: 0, done: false, estimate: nil, items: [])
            try await boards.persist([BoardRecord(id: "a", title: "a", cards: []), BoardRecord(id: "b", title: "b", cards: [card])])
            let iterator = boards.observe().makeAsyncIterator()
            #expect(try await nextSnapshot(iterator)?.results.count == 2)

            try await items.persist(ItemRecord(id: 1, cardId: "c", text: "grandchild", checked: false))
            let modified = try #require(try await nextSnapshot(iterator))
            #expect(modified.changes == ObservedChanges(modifications: [1]))
            #expect(modified.results[1].cards.first?.items.map(\.text) == ["grandchild"])

            let cardIterator = cards.observe().makeAsyncIterator()
            #expect(try await nextSnapshot(cardIterator)?.results.map(\.id) == ["c"])
            try await boards.erase(byPrimaryKey: "b")
            #expect(try await nextSnapshot(iterator)?.changes == ObservedChanges(deletions: [1]))
            #expect(try await nextSnapshot(cardIterator)?.changes == ObservedChanges(deletions: [0]))
        }
    }

    // MARK: Ending

    @Test("cancelling, leaving the loop or dropping the iterator removes the observer and frees the store",
          arguments: allBackends)
    func cancellationFrees(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory()
        weak var weakStore: AnyObject?
        let commits: CommitBroadcaster
        do {
            let store = try backend.open(directory.url, .none)
            weakStore = store as AnyObject
            let boards = DAO(storage: try store.anyStorage(for: BoardRecord.self), translator: Same<BoardRecord>())
            commits = try #require(boards.storage.commits)
            try await boards.persist(BoardRecord(id: "b", title: "t", cards: []))

            // A task that iterates until it is cancelled.
            let (started, startedContinuation) = AsyncStream<Void>.makeStream()
            let task = Task {
                var count = 0
                for try await _ in boards.observe() {
                    count += 1
                    startedContinuation.yield()
                }
                return count
            }
            var startedIterator = started.makeAsyncIterator()
            await startedIterator.next()
            #expect(commits.activeObservers == 1)
            task.cancel()
            #expect(try await task.value == 1)
            #expect(commits.activeObservers == 0)

            // Leaving the loop.
            for try await snapshot in boards.observe() {
                #expect(snapshot.isInitial)
                #expect(commits.activeObservers == 1)
                break
            }
            #expect(commits.activeObservers == 0)

            // Dropping an iterator.
            do {
                let iterator = boards.observe(primaryKey: "b").makeAsyncIterator()
                #expect(try await nextSnapshot(iterator)?.results.count == 1)
                #expect(commits.activeObservers == 1)
            }
            #expect(commits.activeObservers == 0)
            try await boards.persist(BoardRecord(id: "b2", title: "t", cards: []))
            // The queue may still be returning from the last first read.
            await commits.drained()
        }
        #expect(weakStore == nil, "an ended observation still holds the store")
        #expect(commits.activeObservers == 0)
        withExtendedLifetime(directory) {}
    }

    @Test("closing the store ends every observation", arguments: allBackends)
    func closeEnds(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let boards = DAO(storage: try store.anyStorage(for: BoardRecord.self), translator: Same<BoardRecord>())
            let commits = try #require(boards.storage.commits)
            let iterator = boards.observe().makeAsyncIterator()
            #expect(try await nextSnapshot(iterator)?.isInitial == true)
            let waiting = Task { try await nextSnapshot(iterator) }
            try store.close()
            #expect(try await waiting.value == nil)
            #expect(commits.activeObservers == 0)
            // An observation started after the close ends at once.
            var late = boards.observe().makeAsyncIterator()
            #expect(try await late.next() == nil)
        }
    }

    @Test("a failing read ends the observation with the StorageError", arguments: allBackends)
    func failingRead(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let boards = DAO(storage: try store.anyStorage(for: BoardRecord.self), translator: Same<BoardRecord>())
            var iterator = boards.observe(limit: -1).makeAsyncIterator()
            await #expect(throws: StorageError.self) { _ = try await iterator.next() }
            #expect(try await iterator.next() == nil)
            #expect(boards.storage.commits?.activeObservers == 0)
        }
    }
}

@Suite("Conformance: observation across processes")
struct CrossProcessObservationTests {
    /// The backends another process can write while this one has the store open.
    static let backends = allBackends.filter { ["sqlite", "lmdb"].contains($0.name) }

    /// The example executable, which has a `write` mode that runs as the other process.
    static func writerExecutable() throws -> URL {
        let here = URL(filePath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = here.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appending(path: "observe-table")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw StorageError(
            .io, .open, path: here.path,
            message: "the observe-table executable was not found next to the tests; build everything (make test does)")
    }

    @Test("a commit by another process is noticed by polling", arguments: backends)
    func anotherProcessWrites(backend: TestBackend) async throws {
        let executable = try Self.writerExecutable()
        try await withAsyncStore(backend, durability: .full) { store, directory in
            let dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self), translator: DialogTranslator())
            let messages = DAO(storage: try store.anyStorage(for: MessageRecord.self), translator: MessageTranslator())
            try await dialogs.persist(Dialog(uniqueId: 1, isPinned: false, messages: []))
            let iterator = messages.observe(
                where: #Predicate { $0.dialogId == 7 && !$0.isRead }, pollInterval: .milliseconds(20)
            ).makeAsyncIterator()
            #expect(try await nextSnapshot(iterator)?.results.isEmpty == true)

            let process = Process()
            process.executableURL = executable
            process.arguments = ["write", backend.name, directory.path, "7", "3"]
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)

            // The other process's commit arrives as a snapshot; no write happened here.
            let snapshot = try #require(try await nextSnapshot(iterator))
            #expect(snapshot.results.map(\.uniqueId) == [7000, 7001, 7002])
            #expect(snapshot.changes == ObservedChanges(insertions: [0, 1, 2]))
            #expect(snapshot.results == (try await messages.read(where: #Predicate { $0.dialogId == 7 && !$0.isRead })))
        }
    }
}

/// A delegate that keeps rows only from what the controller tells it.
@MainActor
private final class RowsDelegate: ResultsDelegate {
    var rows: [CardRecord] = []
    var calls: [String] = []
    let (heard, hear) = AsyncStream<Void>.makeStream()

    func initial(_ results: [CardRecord]) {
        rows = results
        calls.append("initial")
        hear.yield()
    }

    func update(_ results: [CardRecord], deletions: [Int], insertions: [Int], modifications: [Int]) {
        for index in deletions.reversed() { rows.remove(at: index) }
        for index in insertions { rows.insert(results[index], at: index) }
        for index in modifications { rows[index] = results[index] }
        calls.append("update \(deletions) \(insertions) \(modifications)")
        hear.yield()
    }
}

@Suite("Conformance: the delegate adapter")
struct ResultsControllerTests {
    @MainActor
    @Test("ResultsController calls initial, then update with the changes, on the main actor", arguments: allBackends)
    func delegateHearsChanges(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let boards = DAO(storage: try store.anyStorage(for: BoardRecord.self), translator: Same<BoardRecord>())
            let cards = DAO(storage: try store.anyStorage(for: CardRecord.self), translator: Same<CardRecord>())
            func card(_ id: String, rank: Int64) -> CardRecord {
                CardRecord(id: id, boardId: "b", title: id, rank: rank, done: false, estimate: nil, items: [])
            }
            try await boards.persist(BoardRecord(id: "b", title: "b", cards: [card("x", rank: 1)]))
            let delegate = RowsDelegate()
            var heard = delegate.heard.makeAsyncIterator()
            let controller = ResultsController(cards.observe(sortedBy: [SortDescriptor(\.rank)]))
            controller.start(delegate: delegate)
            await heard.next(isolation: #isolation)
            try await cards.persist(card("y", rank: 0))
            await heard.next(isolation: #isolation)
            try await cards.persist(CardRecord(id: "x", boardId: "b", title: "renamed", rank: 1, done: false, estimate: nil, items: []))
            await heard.next(isolation: #isolation)
            #expect(delegate.calls == ["initial", "update [] [0] []", "update [] [] [1]"])
            #expect(delegate.rows == (try await cards.read(sortedBy: [SortDescriptor(\.rank)])))
            controller.stop()
            await controller.finished()
            #expect(cards.storage.commits?.activeObservers == 0)
        }
    }
}

import Synchronization

@Suite("Conformance: observation under a steady stream of commits")
struct SteadyWriterObservationTests {
    @Test("an observer that starts while a writer commits without pause gets its first snapshot",
          .timeLimit(.minutes(3)), arguments: allBackends)
    func firstSnapshotUnderLoad(backend: TestBackend) async throws {
        try await withAsyncStore(backend) { store, _ in
            let boards = DAO(storage: try store.anyStorage(for: BoardRecord.self), translator: Same<BoardRecord>())
            try await boards.persist(BoardRecord(id: "b", title: "0", cards: []))
            // Observers that every commit affects keep the broadcaster's queue
            // busier than the writer.
            var busy: [Observation<BoardRecord>.Iterator] = []
            for _ in 0..<40 {
                let iterator = boards.observe().makeAsyncIterator()
                #expect(try await nextSnapshot(iterator)?.isInitial == true)
                busy.append(iterator)
            }

            // The writer runs on a thread of its own, not on the concurrency
            // pool, which the observations need.
            let stop = Atomic<Bool>(false)
            let (finished, finish) = AsyncStream<Result<Int, any Error>>.makeStream()
            Thread {
                var round = 0
                do {
                    while !stop.load(ordering: .relaxed) {
                        round += 1
                        try boards.persist(BoardRecord(id: "b", title: "\(round)", cards: []))
                    }
                    finish.yield(.success(round))
                } catch {
                    finish.yield(.failure(error))
                }
                finish.finish()
            }.start()
            let late = boards.observe(primaryKey: "b").makeAsyncIterator()
            let first: Snapshot<BoardRecord>?
            do {
                // The writer is under way once a busy observer sees a change.
                _ = try await nextSnapshot(busy[0])
                first = try await nextSnapshot(late)
            } catch {
                stop.store(true, ordering: .relaxed)
                for await _ in finished {}
                throw error
            }
            stop.store(true, ordering: .relaxed)
            var results = finished.makeAsyncIterator()
            let rounds = try await results.next(isolation: #isolation)?.get() ?? 0
            #expect(first?.isInitial == true)
            #expect(first?.results.count == 1)
            #expect(rounds > 0)
            withExtendedLifetime(busy) {}
        }
    }
}
