import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

// Backend transcripts compared: one seeded sequence of calls (persists with
// moves, children out of key order and duplicate keys in one batch; erasures
// by key, by predicate and of everything; reads by keys, missing and repeated;
// queries over optionals, relations and text, with ties and limits; counts;
// the store closed and reopened at random points, its storages opened again
// in the order the calls need them) is run on every backend, each call's
// outcome written to one line (its answer, or the `StorageError`'s kind,
// operation and entity), and the backends' transcripts are compared line by
// line. Unlike the differential test (DifferentialTests.swift), no reference
// model is written: any answer one backend gives and another does not is a
// difference, errors included.
//
// The record types have other shapes than the other suites': String keys with
// non-ASCII text in two normalizations, a three-level owned tree (shelves,
// boxes, items) with a composite index, a child type that names no owner held
// by the same parent (notes), and a top-level type with an optional of every
// supported value type (probes).
//
// The property-list store refuses a second spelling of canonically equivalent
// text (docs/SEMANTICS.md, "Limits of one backend"): every seed runs twice,
// once with the texts as given on json, sqlite and lmdb, once with every text
// in NFC on all four.
//
// `DAO_TRANSCRIPT_SEEDS` sets the number of seeds (default 6),
// `DAO_TRANSCRIPT_STEPS` the calls per seed (default 250).

// MARK: - Record types

struct TxShelf: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var label: String
    var boxes: [TxBox]
    var notes: [TxNote]

    static let entity = Entity<TxShelf>(
        "tx_shelves", primaryKey: "id", \.id, fields: [Field("label", \.label)],
        relations: [
            Relation("boxes", \.boxes, foreignKey: "shelfId", \TxBox.shelfId),
            Relation("notes", \.notes, foreignKey: "shelfId", \TxNote.shelfId),
        ])
}

struct TxBox: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var shelfId: String
    var label: String
    var rank: Int64
    var weight: Double?
    var items: [TxItem]

    static let entity = Entity<TxBox>(
        "tx_boxes", primaryKey: "id", \.id,
        fields: [Field("shelfId", \.shelfId), Field("label", \.label), Field("rank", \.rank), Field("weight", \.weight)],
        indexes: [Index("tx_boxes_by_label_rank", on: ["label", "rank"])],
        relations: [Relation("items", \.items, foreignKey: "boxId", \TxItem.boxId)],
        ownedBy: TxShelf.self)
}

struct TxItem: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var boxId: String
    var name: String
    var count: Int64?

    static let entity = Entity<TxItem>(
        "tx_items", primaryKey: "id", \.id,
        fields: [Field("boxId", \.boxId), Field("name", \.name), Field("count", \.count)],
        ownedBy: TxBox.self)
}

/// Held by ``TxShelf/notes``; names no owner.
struct TxNote: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var shelfId: String
    var text: String

    static let entity = Entity<TxNote>(
        "tx_notes", primaryKey: "id", \.id, fields: [Field("shelfId", \.shelfId), Field("text", \.text)])
}

enum TxMood: String, Codable, Sendable, CaseIterable, FieldValue { case calm, eager, zoë = "zo\u{EB}" }
enum TxLevel: Int64, Codable, Sendable, CaseIterable, FieldValue { case low = -1, mid = 0, high = 9 }

/// An optional of every supported value type.
struct TxProbe: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var i64: Int64?
    var int: Int?
    var i32: Int32?
    var i16: Int16?
    var i8: Int8?
    var u32: UInt32?
    var flag: Bool?
    var real: Double?
    var float: Float?
    var date: Date?
    var text: String?
    var bytes: Data?
    var uuid: UUID?
    var mood: TxMood?
    var level: TxLevel?

    static let entity = Entity<TxProbe>(
        "tx_probes", primaryKey: "id", \.id,
        fields: [
            Field("i64", \.i64), Field("int", \.int), Field("i32", \.i32), Field("i16", \.i16), Field("i8", \.i8),
            Field("u32", \.u32), Field("flag", \.flag), Field("real", \.real), Field("float", \.float),
            Field("date", \.date), Field("text", \.text), Field("bytes", \.bytes), Field("uuid", \.uuid),
            Field("mood", \.mood), Field("level", \.level),
        ],
        indexes: [Index("tx_probes_by_mood_i64", on: ["mood", "i64"])])
}

// MARK: - The test

@Suite("Conformance: the backends' transcripts of one seeded sequence of calls are identical")
struct TranscriptTests {
    static var seeds: Int { ProcessInfo.processInfo.environment["DAO_TRANSCRIPT_SEEDS"].flatMap(Int.init) ?? 6 }
    static var steps: Int { ProcessInfo.processInfo.environment["DAO_TRANSCRIPT_STEPS"].flatMap(Int.init) ?? 250 }
    static var firstSeed: UInt64 { 20_261_127 }

    @Test("texts as given (json, sqlite, lmdb)", arguments: 0..<seeds)
    func asGiven(round: Int) throws {
        try compare(seed: Self.firstSeed &+ UInt64(round), nfc: false, backends: allBackends.filter { $0.name != "plist" })
    }

    @Test("texts in NFC (every backend)", arguments: 0..<seeds)
    func inNFC(round: Int) throws {
        try compare(seed: Self.firstSeed &+ UInt64(round), nfc: true, backends: allBackends)
    }

    func compare(seed: UInt64, nfc: Bool, backends: [TestBackend]) throws {
        let transcripts = try backends.map { try TranscriptRun(seed: seed, nfc: nfc, steps: Self.steps).run(on: $0) }
        let first = transcripts[0]
        // The calls must reach the interesting outcomes, or the comparison is idle.
        #expect(first.contains { $0.contains("error(constraint") }, "seed \(seed): no refused write")
        #expect(first.contains { $0.contains("reopened") }, "seed \(seed): no reopening")
        for (backend, transcript) in zip(backends, transcripts).dropFirst() {
            #expect(transcript.count == first.count, "seed \(seed) nfc \(nfc): \(backend.name) wrote \(transcript.count) lines, \(backends[0].name) \(first.count)")
            var shown = 0
            for (index, (a, b)) in zip(first, transcript).enumerated() where a != b {
                shown += 1
                guard shown <= 3 else { break }
                Issue.record("seed \(seed) nfc \(nfc), line \(index): \(backends[0].name) and \(backend.name) differ\n  \(backends[0].name): \(a)\n  \(backend.name): \(b)")
            }
        }
    }
}

/// One backend's run of a seed: the calls, and a line for each.
struct TranscriptRun {
    let seed: UInt64
    let nfc: Bool
    let steps: Int

    func text(_ value: String) -> String { nfc ? value.precomposedStringWithCanonicalMapping : value }

    var shelfKeys: [String] { ["Zo\u{EB}", "Zoe\u{308}", "e\u{301}mile", "\u{E9}mile", "Stra\u{DF}e", "日本", "a", "B", "", "🚀"].map(text) }
    var boxKeys: [String] { (0..<9).map { ["b\($0)", "β\($0)", "B\($0)"][$0 % 3] }.map(text) }
    var itemKeys: [String] { (0..<12).map { $0 % 4 == 0 ? "i\u{308}\($0)" : $0 % 4 == 1 ? "\u{EF}\($0)" : "i\($0)" }.map(text) }
    var labels: [String] { ["", "a", "A", "ab", "Zo\u{EB}", "Zoe\u{308}", "caf\u{E9}", "cafe\u{301}", "x\u{0}y", "é", "e", "z"].map(text) }
    var needles: [String] { ["", "e", "\u{308}", "\u{EB}", "a", "Zo", "\u{0}", "caf"].map(text) }
    var probeKeys: [String] { ["p", "P", "p\u{301}", "\u{1E55}", "ü", "u\u{308}", "q"].map(text) }

    func pick<T>(_ values: [T], _ random: inout SplitMix64) -> T { values[Int(random.next() % UInt64(values.count))] }
    func chance(_ percent: UInt64, _ random: inout SplitMix64) -> Bool { random.next() % 100 < percent }

    func run(on backend: TestBackend) throws -> [String] {
        var random = SplitMix64(seed: seed)
        var lines: [String] = []
        let directory = try TemporaryDirectory()
        return try withExtendedLifetime(directory) {
            var session = Session(store: try backend.open(directory.url, .full))
            // The holder first, so that the store records who holds the notes
            // before any is written (a note written before that is another
            // case: OwnerlessChildTests).
            lines.append("open shelves -> \(attempt { _ = try session.shelfStorage(); return "ok" })")
            for step in 0..<steps {
                let choice = random.next() % 100
                let (call, outcome) = self.call(choice, &random, &session, backend: backend, directory: directory.url)
                lines.append("\(step) \(call) -> \(outcome)")
            }
            // The whole store, through every storage, last.
            lines.append("end -> \(attempt { try dump(&session) })")
            try session.store.close()
            return lines
        }
    }

    /// The store and the storages opened since it was last opened.
    struct Session {
        var store: any Store
        var shelves: AnyStorage<TxShelf>?
        var boxes: AnyStorage<TxBox>?
        var items: AnyStorage<TxItem>?
        var notes: AnyStorage<TxNote>?
        var probes: AnyStorage<TxProbe>?

        mutating func shelfStorage() throws -> AnyStorage<TxShelf> {
            if let shelves { return shelves }
            let opened = try store.anyStorage(for: TxShelf.self)
            shelves = opened
            return opened
        }
        mutating func boxStorage() throws -> AnyStorage<TxBox> {
            if let boxes { return boxes }
            let opened = try store.anyStorage(for: TxBox.self)
            boxes = opened
            return opened
        }
        mutating func itemStorage() throws -> AnyStorage<TxItem> {
            if let items { return items }
            let opened = try store.anyStorage(for: TxItem.self)
            items = opened
            return opened
        }
        mutating func noteStorage() throws -> AnyStorage<TxNote> {
            if let notes { return notes }
            let opened = try store.anyStorage(for: TxNote.self)
            notes = opened
            return opened
        }
        mutating func probeStorage() throws -> AnyStorage<TxProbe> {
            if let probes { return probes }
            let opened = try store.anyStorage(for: TxProbe.self)
            probes = opened
            return opened
        }

    }

    // MARK: Calls

    func call(_ choice: UInt64, _ random: inout SplitMix64, _ s: inout Session, backend: TestBackend, directory: URL) -> (String, String) {
        switch choice {
        case 0..<4:
            // Close and reopen; the storages are opened again as calls need them.
            let closed = attempt { try s.store.close(); return "closed" }
            do {
                s = Session(store: try backend.open(directory, .full))
                return ("close, reopen", "\(closed), reopened")
            } catch {
                return ("close, reopen", "\(closed), reopening failed: \(error)")
            }
        case 4..<18:
            let batch = (0..<Int(1 + random.next() % 3)).map { _ in shelf(&random) }
            var batchWithDuplicate = batch
            if chance(25, &random), let again = batch.first {
                var changed = shelf(&random)
                changed.id = again.id
                for index in changed.boxes.indices { changed.boxes[index].shelfId = again.id }
                for index in changed.notes.indices { changed.notes[index].shelfId = again.id }
                batchWithDuplicate.append(changed)
            }
            if chance(8, &random), let index = batchWithDuplicate.indices.randomElement(using: &random),
                !batchWithDuplicate[index].boxes.isEmpty
            {
                // A child that names another parent: refused, nothing written.
                batchWithDuplicate[index].boxes[0].shelfId = pick(shelfKeys, &random) + "?"
            }
            let batchToWrite = batchWithDuplicate
            return (
                "persist shelves \(describe(batchToWrite))",
                attempt { try s.shelfStorage().persist(batchToWrite); return "ok" }
            )
        case 18..<24:
            // Through the box's own storage: a move, a new box, or an unknown shelf.
            var batch = (0..<Int(1 + random.next() % 2)).map { _ in box(&random, shelf: pick(shelfKeys, &random)) }
            if chance(20, &random) { batch.append(box(&random, shelf: pick(shelfKeys, &random) + "?")) }
            let written = batch
            return ("persist boxes \(describe(written))", attempt { try s.boxStorage().persist(written); return "ok" })
        case 24..<29:
            let written = (0..<Int(1 + random.next() % 3)).map { _ in item(&random, box: pick(boxKeys, &random)) }
            return ("persist items \(describe(written))", attempt { try s.itemStorage().persist(written); return "ok" })
        case 29..<35:
            // The child that names no owner, through its own storage.
            let shelfId = chance(25, &random) ? "nowhere" : pick(shelfKeys, &random)
            let written = (0..<Int(1 + random.next() % 2)).map { _ in note(&random, shelf: shelfId) }
            return ("persist notes \(describe(written))", attempt { try s.noteStorage().persist(written); return "ok" })
        case 35..<42:
            var batch = (0..<Int(1 + random.next() % 3)).map { _ in probe(&random) }
            if chance(30, &random), let first = batch.first {
                var again = probe(&random)
                again.id = first.id
                batch.append(again)
            }
            let written = batch
            return ("persist probes \(describe(written))", attempt { try s.probeStorage().persist(written); return "ok" })
        case 42..<47:
            let keys = (0..<Int(random.next() % 4)).map { _ in pick(shelfKeys, &random) }
            return ("erase shelves \(describe(keys))", attempt { "\(try s.shelfStorage().erase(primaryKeys: keys))" })
        case 47..<50:
            let keys = (0..<Int(random.next() % 4)).map { _ in pick(boxKeys, &random) }
            return ("erase boxes \(describe(keys))", attempt { "\(try s.boxStorage().erase(primaryKeys: keys))" })
        case 50..<54:
            let (name, predicate) = boxPredicate(&random)
            return ("erase boxes where \(name)", attempt { "\(try s.boxStorage().erase(where: predicate))" })
        case 54..<56:
            let (name, predicate) = itemPredicate(&random)
            return ("erase items where \(name)", attempt { "\(try s.itemStorage().erase(where: predicate))" })
        case 56..<58:
            let which = random.next() % 3
            switch which {
            case 0: return ("erase all notes", attempt { "\(try s.noteStorage().eraseAll())" })
            case 1: return ("erase all probes", attempt { "\(try s.probeStorage().eraseAll())" })
            default: return ("erase all items", attempt { "\(try s.itemStorage().eraseAll())" })
            }
        case 58..<60:
            let (name, predicate) = probePredicate(&random)
            return ("erase probes where \(name)", attempt { "\(try s.probeStorage().erase(where: predicate))" })
        case 60..<65:
            let keys = (0..<Int(random.next() % 5)).map { _ in pick(shelfKeys, &random) }
            return ("read shelves \(describe(keys))", attempt { describe(try s.shelfStorage().read(primaryKeys: keys)) })
        case 65..<68:
            let keys = (0..<Int(random.next() % 5)).map { _ in pick(itemKeys, &random) }
            return ("read items \(describe(keys))", attempt { describe(try s.itemStorage().read(primaryKeys: keys)) })
        case 68..<70:
            let key = pick(probeKeys, &random)
            return ("read probe \(describe(key))", attempt { describe(try s.probeStorage().read(primaryKey: key)) })
        case 70..<76:
            let (name, predicate) = shelfPredicate(&random)
            let limit = self.limit(&random)
            let sorts: [SortDescriptor<TxShelf>] = chance(50, &random) ? [SortDescriptor(\.label)] : [SortDescriptor(\.boxes.count, order: .reverse)]
            let query = Query(where: predicate, sortedBy: sorts, limit: limit)
            return ("query shelves \(name) limit \(describe(limit))", attempt { describe(try s.shelfStorage().read(query)) })
        case 76..<84:
            let (name, predicate) = boxPredicate(&random)
            let limit = self.limit(&random)
            let sorts: [[SortDescriptor<TxBox>]] = [
                [], [SortDescriptor(\.rank)], [SortDescriptor(\.weight, order: .reverse)],
                [SortDescriptor(\.label), SortDescriptor(\.rank, order: .reverse)], [SortDescriptor(\.items.count)],
            ]
            let sortIndex = Int(random.next() % UInt64(sorts.count))
            let query = Query(where: predicate, sortedBy: sorts[sortIndex], limit: limit)
            return ("query boxes \(name) sort \(sortIndex) limit \(describe(limit))", attempt { describe(try s.boxStorage().read(query)) })
        case 84..<88:
            let (name, predicate) = itemPredicate(&random)
            let limit = self.limit(&random)
            let query = Query(where: predicate, sortedBy: chance(50, &random) ? [SortDescriptor(\.count)] : [], limit: limit)
            return ("query items \(name) limit \(describe(limit))", attempt { describe(try s.itemStorage().read(query)) })
        case 88..<93:
            let (name, predicate) = probePredicate(&random)
            let limit = self.limit(&random)
            let sorts: [[SortDescriptor<TxProbe>]] = [
                [], [SortDescriptor(\.i64)], [SortDescriptor(\.date, order: .reverse)], [SortDescriptor(\.text)],
                [SortDescriptor(\.i16), SortDescriptor(\.real)], [SortDescriptor(\.float, order: .reverse)],
                [SortDescriptor(\.int), SortDescriptor(\.i32)], [SortDescriptor(\.u32, order: .reverse), SortDescriptor(\.i8)],
            ]
            let sortIndex = Int(random.next() % UInt64(sorts.count))
            let query = Query(where: predicate, sortedBy: sorts[sortIndex], limit: limit)
            return ("query probes \(name) sort \(sortIndex) limit \(describe(limit))", attempt { describe(try s.probeStorage().read(query)) })
        case 93..<97:
            switch random.next() % 4 {
            case 0:
                let (name, predicate) = boxPredicate(&random)
                return ("count boxes \(name)", attempt { "\(try s.boxStorage().count(where: predicate))" })
            case 1:
                let (name, predicate) = probePredicate(&random)
                return ("count probes \(name)", attempt { "\(try s.probeStorage().count(where: predicate))" })
            case 2:
                let shelfId = pick(shelfKeys, &random)
                return ("count notes of \(describe(shelfId))", attempt { "\(try s.noteStorage().count(where: #Predicate { $0.shelfId == shelfId }))" })
            default:
                let (name, predicate) = shelfPredicate(&random)
                return ("count shelves \(name)", attempt { "\(try s.shelfStorage().count(where: predicate))" })
            }
        default:
            return ("dump", attempt { try dump(&s) })
        }
    }

    /// Every record of every entity, each through its own storage.
    func dump(_ s: inout Session) throws -> String {
        return "shelves \(describe(try s.shelfStorage().readAll())) boxes \(describe(try s.boxStorage().readAll())) "
            + "items \(describe(try s.itemStorage().readAll())) notes \(describe(try s.noteStorage().readAll())) "
            + "probes \(describe(try s.probeStorage().readAll()))"
    }

    func limit(_ random: inout SplitMix64) -> Int? {
        switch random.next() % 5 {
        case 0: 0
        case 1: 1
        case 2: 1000
        case 3: Int(random.next() % 4)
        default: nil
        }
    }

    // MARK: Records

    func shelf(_ random: inout SplitMix64) -> TxShelf {
        let id = pick(shelfKeys, &random)
        var boxes = (0..<Int(random.next() % 4)).map { _ in box(&random, shelf: id) }
        // Out of key order, as given.
        if chance(50, &random) { boxes.reverse() }
        let notes = (0..<Int(random.next() % 3)).map { _ in note(&random, shelf: id) }
        return TxShelf(id: id, label: pick(labels, &random), boxes: boxes, notes: notes)
    }

    func box(_ random: inout SplitMix64, shelf: String) -> TxBox {
        let id = pick(boxKeys, &random)
        var items = (0..<Int(random.next() % 4)).map { _ in item(&random, box: id) }
        if chance(50, &random) { items.reverse() }
        return TxBox(
            id: id, shelfId: shelf, label: pick(labels, &random), rank: Int64(random.next() % 3),
            weight: chance(30, &random) ? nil : pick([0.5, 1, 2.25, -1, .infinity, .leastNonzeroMagnitude], &random), items: items)
    }

    func item(_ random: inout SplitMix64, box: String) -> TxItem {
        TxItem(
            id: pick(itemKeys, &random), boxId: box, name: pick(labels, &random),
            count: chance(30, &random) ? nil : pick([0, 1, -1, .max, .min], &random))
    }

    func note(_ random: inout SplitMix64, shelf: String) -> TxNote {
        TxNote(id: Int64(random.next() % 8) - 2, shelfId: shelf, text: pick(labels, &random))
    }

    func probe(_ random: inout SplitMix64) -> TxProbe {
        func maybe<T>(_ values: [T], _ random: inout SplitMix64) -> T? {
            random.next() % 3 == 0 ? nil : values[Int(random.next() % UInt64(values.count))]
        }
        return TxProbe(
            id: pick(probeKeys, &random),
            i64: maybe([0, 1, -1, .max, .min], &random),
            int: maybe([0, 7, .max, .min], &random),
            i32: maybe([0, .max, .min], &random),
            i16: maybe([0, .max, .min], &random),
            i8: maybe([0, .max, .min], &random),
            u32: maybe([0, 1, .max], &random),
            flag: maybe([false, true], &random),
            real: maybe([0, 1.5, -2, .infinity, -.infinity, .greatestFiniteMagnitude, .leastNormalMagnitude], &random),
            float: maybe([0, 1.5, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude], &random),
            date: maybe([Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -1.25), .distantFuture], &random),
            text: maybe(labels, &random),
            bytes: maybe([Data(), Data([0]), Data([0, 255]), Data([1])], &random),
            uuid: maybe([UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)), UUID(uuid: (255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))], &random),
            mood: maybe(TxMood.allCases, &random),
            level: maybe(TxLevel.allCases, &random))
    }

    // MARK: Predicates

    func shelfPredicate(_ random: inout SplitMix64) -> (String, Predicate<TxShelf>?) {
        let n = Int(random.next() % 3)
        let t = pick(labels, &random)
        let k = pick(shelfKeys, &random)
        switch random.next() % 7 {
        case 0: return ("all", nil)
        case 1: return ("boxes.count > \(n)", #Predicate { $0.boxes.count > n })
        case 2: return ("notes.isEmpty", #Predicate { $0.notes.isEmpty })
        case 3: return ("label < \(describe(t))", #Predicate { $0.label < t })
        case 4: return ("id >= \(describe(k)) && !notes.isEmpty", #Predicate { $0.id >= k && !$0.notes.isEmpty })
        case 5: return ("a box labelled \(describe(t))", #Predicate { $0.boxes.contains { $0.label == t } })
        default: return ("id == \(describe(k))", #Predicate { $0.id == k })
        }
    }

    func boxPredicate(_ random: inout SplitMix64) -> (String, Predicate<TxBox>) {
        let t = pick(labels, &random)
        let n = pick(needles, &random)
        let rank = Int64(random.next() % 3)
        let shelf = pick(shelfKeys, &random)
        let weight: Double? = chance(30, &random) ? nil : pick([0.5, 1, -1, .infinity], &random)
        let rankInt = Int(rank)
        switch random.next() % 13 {
        case 0: return ("label == \(describe(t)) && rank == \(rank)", #Predicate { $0.label == t && $0.rank == rank })
        case 1: return ("label == \(describe(t))", #Predicate { $0.label == t })
        case 2: return ("label contains \(describe(n))", #Predicate { $0.label.contains(n) })
        case 3: return ("label starts with \(describe(n))", #Predicate { $0.label.starts(with: n) })
        case 4: return ("label > \(describe(t))", #Predicate { $0.label > t })
        case 5: return ("weight == \(describe(weight))", #Predicate { $0.weight == weight })
        case 6: return ("weight != \(describe(weight))", #Predicate { $0.weight != weight })
        case 7: return ("items.isEmpty", #Predicate { $0.items.isEmpty })
        case 8: return ("items.count >= \(rank)", #Predicate { $0.items.count >= rankInt })
        case 9: return ("shelfId == \(describe(shelf))", #Predicate { $0.shelfId == shelf })
        case 10: return ("shelfId == \(describe(shelf)) && rank <= \(rank)", #Predicate { $0.shelfId == shelf && $0.rank <= rank })
        case 11: return ("true", #Predicate { _ in true })
        default: return ("label == shelfId || rank > \(rank)", #Predicate { $0.label == $0.shelfId || $0.rank > rank })
        }
    }

    func itemPredicate(_ random: inout SplitMix64) -> (String, Predicate<TxItem>) {
        let count: Int64? = chance(30, &random) ? nil : pick([0, 1, -1, .max], &random)
        let n = pick(needles, &random)
        let box = pick(boxKeys, &random)
        switch random.next() % 6 {
        case 0: return ("count == \(describe(count))", #Predicate { $0.count == count })
        case 1: return ("count != nil", #Predicate { $0.count != nil })
        case 2: return ("name contains \(describe(n))", #Predicate { $0.name.contains(n) })
        case 3: return ("boxId == \(describe(box))", #Predicate { $0.boxId == box })
        case 4: return ("id starts with \(describe(n))", #Predicate { $0.id.starts(with: n) })
        default: return ("!(count == \(describe(count)))", #Predicate { !($0.count == count) })
        }
    }

    func probePredicate(_ random: inout SplitMix64) -> (String, Predicate<TxProbe>) {
        let i64: Int64? = chance(30, &random) ? nil : pick([0, -1, .max], &random)
        let real: Double? = chance(30, &random) ? nil : pick([0, 1.5, .infinity, -.infinity], &random)
        let flag: Bool? = chance(30, &random) ? nil : pick([false, true], &random)
        let date: Date? = chance(30, &random) ? nil : Date(timeIntervalSinceReferenceDate: pick([0, -1.25, 1e10], &random))
        let text: String? = chance(30, &random) ? nil : pick(labels, &random)
        let bytes: Data? = chance(30, &random) ? nil : pick([Data(), Data([0, 255])], &random)
        let mood: TxMood? = chance(30, &random) ? nil : pick(TxMood.allCases, &random)
        let level: TxLevel? = chance(30, &random) ? nil : pick(TxLevel.allCases, &random)
        let u32: UInt32? = chance(30, &random) ? nil : pick([0, .max], &random)
        let float: Float? = chance(30, &random) ? nil : pick([0, 1.5, -.infinity], &random)
        let bound = text ?? ""
        switch random.next() % 16 {
        case 0: return ("i64 == \(describe(i64))", #Predicate { $0.i64 == i64 })
        case 1: return ("i64 != \(describe(i64))", #Predicate { $0.i64 != i64 })
        case 2: return ("real == \(describe(real))", #Predicate { $0.real == real })
        case 3: return ("flag == \(describe(flag))", #Predicate { $0.flag == flag })
        case 4: return ("date == \(describe(date))", #Predicate { $0.date == date })
        case 5: return ("text == \(describe(text))", #Predicate { $0.text == text })
        case 6: return ("bytes == \(describe(bytes))", #Predicate { $0.bytes == bytes })
        case 7: return ("mood == \(describe(mood))", #Predicate { $0.mood == mood })
        case 8: return ("mood == \(describe(mood)) && i64 == \(describe(i64))", #Predicate { $0.mood == mood && $0.i64 == i64 })
        case 9: return ("level == \(describe(level))", #Predicate { $0.level == level })
        case 10: return ("u32 != \(describe(u32))", #Predicate { $0.u32 != u32 })
        case 11: return ("float == \(describe(float))", #Predicate { $0.float == float })
        case 12: return ("uuid == nil", #Predicate { $0.uuid == nil })
        case 13: return ("int == nil || i8 == nil", #Predicate { $0.int == nil || $0.i8 == nil })
        case 14: return ("!(text == \(describe(text)))", #Predicate { !($0.text == text) })
        default: return ("id < \(describe(bound))", #Predicate { $0.id < bound })
        }
    }
}

// MARK: - Lines

/// `body`'s answer, or the error's kind, operation and entity.
func attempt(_ body: () throws -> String) -> String {
    do {
        return try body()
    } catch let error as StorageError {
        return "error(\(error.kind), \(error.operation), \(error.entity ?? "-"))"
    } catch {
        return "error(not a StorageError: \(type(of: error)))"
    }
}

/// A deterministic, exact rendering of any value: records through a sorted-key
/// JSON encoding (reals and dates to the last bit, text to the last scalar,
/// escaped so NUL and combining marks show).
func describe<T: Encodable>(_ value: T) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
    encoder.dateEncodingStrategy = .custom { date, encoder in
        var container = encoder.singleValueContainer()
        try container.encode(String(date.timeIntervalSinceReferenceDate.bitPattern, radix: 16))
    }
    do {
        let data = try encoder.encode(value)
        return String(decoding: data, as: UTF8.self).unicodeScalars.map { $0.isASCII ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined()
    } catch {
        return "unencodable: \(error)"
    }
}
