import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

// Record types of other shapes than the dialog graph's: String keys, three
// levels of relations, optionals, a composite index.

/// A board (String key) owning cards, which own checklist items.
struct BoardRecord: Record, Plain, Hashable {
    typealias PrimaryKey = String
    var id: String
    var title: String
    var cards: [CardRecord]

    var uniqueId: String { id }

    static let entity = Entity<BoardRecord>(
        "obs_boards",
        primaryKey: "id", \.id,
        fields: [Field("title", \.title)],
        relations: [Relation("cards", \.cards, foreignKey: "boardId", \CardRecord.boardId)]
    )
}

/// A card of a board (String key), with an optional estimate and its items.
struct CardRecord: Record, Plain, Hashable {
    typealias PrimaryKey = String
    var id: String
    var boardId: String
    var title: String
    var rank: Int64
    var done: Bool
    var estimate: Double?
    var items: [ItemRecord]

    var uniqueId: String { id }

    static let entity = Entity<CardRecord>(
        "obs_cards",
        primaryKey: "id", \.id,
        fields: [
            Field("boardId", \.boardId), Field("title", \.title), Field("rank", \.rank), Field("done", \.done),
            Field("estimate", \.estimate),
        ],
        indexes: [Index("obs_cards_by_board_rank", on: ["boardId", "rank"])],
        relations: [Relation("items", \.items, foreignKey: "cardId", \ItemRecord.cardId)],
        ownedBy: BoardRecord.self
    )
}

/// A checklist item of a card: the third level.
struct ItemRecord: Record, Plain, Hashable {
    typealias PrimaryKey = Int64
    var id: Int64
    var cardId: String
    var text: String
    var checked: Bool

    var uniqueId: Int64 { id }

    static let entity = Entity<ItemRecord>(
        "obs_items",
        primaryKey: "id", \.id,
        fields: [Field("cardId", \.cardId), Field("text", \.text), Field("checked", \.checked)],
        ownedBy: CardRecord.self
    )
}

/// A translator for records that are their own plain objects.
struct Same<R: Record & Plain>: Translator where R.ID == R.PrimaryKey {
    func record(from plain: R) -> R { plain }
    func plain(from record: R) -> R { record }
}

/// Opens `backend` in a fresh directory and runs `body` with its store; the
/// store is released before the directory is removed.
func withAsyncStore<T>(
    _ backend: TestBackend, durability: Durability = .none, isolation: isolated (any Actor)? = #isolation,
    _ body: (any Store, URL) async throws -> T
) async throws -> T {
    let directory = try TemporaryDirectory()
    let result = try await body(try backend.open(directory.url, durability), directory.url)
    withExtendedLifetime(directory) {}
    return result
}

/// One observation under test: its iterator, the rows its snapshots have
/// built, and how to read the same results afresh.
struct Watched<V: Plain> {
    let name: String
    let iterator: Observation<V>.Iterator
    var rows: [V] = []
    var snapshots = 0
    let fresh: () throws -> [V]

    init(_ name: String, _ observation: Observation<V>, fresh: @escaping () throws -> [V]) {
        self.name = name
        self.iterator = observation.makeAsyncIterator()
        self.fresh = fresh
    }

    /// Takes the first snapshot and checks it against a fresh read.
    mutating func start() async throws {
        let first = try await nextSnapshot(iterator)
        #expect(first?.isInitial == true, "\(name): the first snapshot has no changes")
        rows = first?.results ?? []
        #expect(rows == (try fresh()), "\(name): the first snapshot is the current results")
    }

    /// After the store's commits have been handled: when a fresh read differs
    /// from the rows, exactly one snapshot must be waiting, whose changes turn
    /// the rows into its results, and whose results are the fresh read.
    mutating func catchUp() async throws {
        let expected = try fresh()
        guard expected != rows else { return }
        guard let snapshot = try await nextSnapshot(iterator) else {
            Issue.record("\(name): the observation ended")
            return
        }
        snapshots += 1
        guard let changes = snapshot.changes else {
            Issue.record("\(name): a later snapshot without changes")
            return
        }
        #expect(!changes.isEmpty, "\(name): a snapshot with no change")
        let applied = applying(changes, to: rows, from: snapshot.results)
        #expect(applied == snapshot.results, "\(name): the changes \(changes) do not turn the old rows into the new")
        #expect(snapshot.results == expected, "\(name): the snapshot is not what a fresh read returns")
        rows = snapshot.results
    }
}
