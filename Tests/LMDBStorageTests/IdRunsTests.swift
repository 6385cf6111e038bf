import CLMDB
import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

/// The `#id` database of layout version 2: one entry per run of a parent's
/// consecutive child keys. Children in key order take one run per parent;
/// keys in no useful order a run per child; moves split runs, erasures
/// shrink them; the upgrade from layout version 1 happens in one write
/// transaction at a writable open.
@Suite("LMDB #id runs")
struct IdRunsTests {
    /// The runs of `dbi`, in key order.
    func runs(_ env: LMDBEnvironment, _ dbi: MDB_dbi) throws -> [IdRun] {
        try env.read(.read) { txn in
            var runs: [IdRun] = []
            try txn.scan(dbi, prefix: []) { key, value in
                runs.append(try #require(IdRun(key: key, value: value)))
                return true
            }
            return runs
        }
    }

    func message(_ id: Int64, dialog: Int64, text: String = "m") -> MessageRecord {
        MessageRecord(
            id: id, dialogId: dialog, date: Date(timeIntervalSinceReferenceDate: Double(id)), text: "\(text)\(id)",
            senderId: 1, receiverId: 2, type: 0, isIncoming: id % 2 == 0, isRead: false)
    }

    func dialog(_ id: Int64, _ messageIds: [Int64], text: String = "m") -> DialogRecord {
        DialogRecord(id: id, isPinned: false, messages: messageIds.sorted().map { message($0, dialog: id, text: text) })
    }

    /// The stored runs as (first, last, dialog) of integer keys.
    func integerRuns(_ env: LMDBEnvironment, _ dbi: MDB_dbi) throws -> [[Int64]] {
        func integer(_ bytes: [UInt8]) -> Int64 {
            Int64(bitPattern: bytes.reduce(0) { $0 << 8 | UInt64($1) } ^ (1 << 63))
        }
        return try runs(env, dbi).map { [integer($0.first), integer($0.last), integer($0.parent)] }
    }

    @Test("children in key order take one run per parent; interleaved ids a run per child")
    func runsPerParent() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let dialogs = try env.storage(for: DialogRecord.self)
            let messages = try env.storage(for: MessageRecord.self)
            let byId = messages.table.byId
            // In key order, in one call and in one call per dialog.
            try dialogs.persist([dialog(1, Array(1...30)), dialog(2, Array(31...60))])
            try dialogs.persist(dialog(3, Array(61...90)))
            #expect(try integerRuns(env, byId) == [[1, 30, 1], [31, 60, 2], [61, 90, 3]])
            #expect(try messages.verify() == 90)
            // Interleaved: dialog 10 holds the even ids, 11 the odd ones.
            try dialogs.persist([dialog(10, Array(stride(from: 100, to: 120, by: 2))), dialog(11, Array(stride(from: 101, to: 120, by: 2)))])
            #expect(try runs(env, byId).count == 3 + 20)
            #expect(try messages.verify() == 110)
            for id in Int64(100)..<120 {
                #expect(try messages.read(primaryKey: id)?.dialogId == (id % 2 == 0 ? 10 : 11))
            }
            #expect(try messages.read(primaryKey: 95) == nil)
            #expect(try messages.read(primaryKey: 0) == nil)
            #expect(try messages.read(primaryKey: 500) == nil)
        }
    }

    @Test("erasing the first, last and middle children of a run shrinks it or leaves it; verify() after every call")
    func erasingInsideRuns() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let dialogs = try env.storage(for: DialogRecord.self)
            let messages = try env.storage(for: MessageRecord.self)
            let byId = messages.table.byId
            try dialogs.persist([dialog(1, Array(1...10)), dialog(2, Array(11...20))])
            #expect(try messages.erase(primaryKeys: [1]) == 1)
            #expect(try integerRuns(env, byId) == [[2, 10, 1], [11, 20, 2]])
            #expect(try messages.verify() == 19)
            #expect(try messages.erase(primaryKeys: [10]) == 1)
            #expect(try integerRuns(env, byId) == [[2, 9, 1], [11, 20, 2]])
            #expect(try messages.verify() == 18)
            #expect(try messages.erase(primaryKeys: [5]) == 1)
            #expect(try integerRuns(env, byId) == [[2, 9, 1], [11, 20, 2]])
            #expect(try messages.verify() == 17)
            #expect(try messages.read(primaryKey: 5) == nil)
            // Replacing a dialog's children erases the ones it no longer holds.
            try dialogs.persist(dialog(2, [11, 15, 16]))
            #expect(try integerRuns(env, byId) == [[2, 9, 1], [11, 16, 2]])
            #expect(try messages.verify() == 10)
            // A new child in the gap left by an erased one joins the run.
            try messages.persist(message(5, dialog: 1))
            #expect(try integerRuns(env, byId) == [[2, 9, 1], [11, 16, 2]])
            #expect(try messages.verify() == 11)
            // One child left, then none.
            try dialogs.persist(dialog(2, [16]))
            #expect(try integerRuns(env, byId) == [[2, 9, 1], [16, 16, 2]])
            try dialogs.persist(dialog(2, []))
            #expect(try integerRuns(env, byId) == [[2, 9, 1]])
            #expect(try messages.verify() == 8)
            #expect(try dialogs.erase(primaryKeys: [1]) == 1)
            #expect(try runs(env, byId).isEmpty)
            #expect(try messages.verify() == 0)
        }
    }

    @Test("moving children between parents splits runs, and moving them back joins them")
    func moves() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let dialogs = try env.storage(for: DialogRecord.self)
            let messages = try env.storage(for: MessageRecord.self)
            let byId = messages.table.byId
            try dialogs.persist([dialog(1, Array(1...10)), dialog(2, Array(11...20))])
            // Message 5 to dialog 2, through the parent.
            try dialogs.persist([dialog(1, Array(1...4) + Array(6...10)), dialog(2, [5] + Array(11...20))])
            #expect(try integerRuns(env, byId) == [[1, 4, 1], [5, 5, 2], [6, 10, 1], [11, 20, 2]])
            #expect(try messages.verify() == 20)
            #expect(try messages.read(primaryKey: 5)?.dialogId == 2)
            // Message 7 to dialog 2, through its own storage.
            try messages.persist(message(7, dialog: 2))
            #expect(try integerRuns(env, byId) == [[1, 4, 1], [5, 5, 2], [6, 6, 1], [7, 7, 2], [8, 10, 1], [11, 20, 2]])
            #expect(try messages.verify() == 20)
            #expect(try dialogs.read(primaryKey: 1)?.messages.map(\.id) == [1, 2, 3, 4, 6, 8, 9, 10])
            // The first and the last of a run move.
            try messages.persist([message(1, dialog: 2), message(10, dialog: 2)])
            #expect(try integerRuns(env, byId) == [[1, 1, 2], [2, 4, 1], [5, 5, 2], [6, 6, 1], [7, 7, 2], [8, 9, 1], [10, 20, 2]])
            #expect(try messages.verify() == 20)
            // All back to dialog 1: the runs join again.
            try messages.persist([1, 5, 7, 10].map { message($0, dialog: 1) })
            #expect(try integerRuns(env, byId) == [[1, 10, 1], [11, 20, 2]])
            #expect(try messages.verify() == 20)
            #expect(try dialogs.read(primaryKey: 1)?.messages.map(\.id) == Array(1...10))
            #expect(try dialogs.read(primaryKey: 2)?.messages.map(\.id) == Array(11...20))
        }
    }

    @Test("text keys in no useful order: every child found, verified and erased")
    func textKeys() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let libraries = try env.storage(for: LibraryRecord.self)
            let shelves = try env.storage(for: ShelfRecord.self)
            var generator = SplitMix64(seed: 7)
            // Shelf ids drawn at random, so that the libraries' shelves
            // interleave in key order.
            var ids = Set<String>()
            while ids.count < 60 { ids.insert("s\(generator.next() % 10_000)-é\u{0}x") }
            let shuffled = Array(ids).shuffled(using: &generator)
            let records = (0..<4).map { index in
                let code = "lib\(index)"
                let own = shuffled[(index * 15)..<(index * 15 + 15)].sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                return Self.libraryRecord(
                    code, name: code, city: nil,
                    shelves: own.map { Self.shelfRecord($0, library: code, floor: 1, label: "l", capacity: nil, books: []) })
            }
            try libraries.persist(records)
            #expect(try shelves.verify() == 60)
            let runCount = try runs(env, shelves.table.byId).count
            #expect(runCount > 4 && runCount <= 60)
            for record in records {
                for shelf in record.shelves { #expect(try shelves.read(primaryKey: shelf.id) == shelf) }
            }
            #expect(try shelves.read(primaryKey: "s-none") == nil)
            #expect(try libraries.erase(primaryKeys: ["lib1", "lib2"]) == 2)
            #expect(try shelves.verify() == 30)
            for shelf in records[1].shelves + records[2].shelves { #expect(try shelves.read(primaryKey: shelf.id) == nil) }
            for shelf in records[0].shelves + records[3].shelves { #expect(try shelves.read(primaryKey: shelf.id) == shelf) }
        }
    }

    /// A seeded sequence of operations on the three-level library domain
    /// (String-keyed libraries and shelves, Int64 books, stored indexes),
    /// compared after every call with the tree a model of the semantics
    /// expects; `verify()` on each entity after every call.
    @Test("generated operations on three levels agree with a model", arguments: [UInt64(1), 2, 3])
    func model(seed: UInt64) throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let libraries = try env.storage(for: LibraryRecord.self)
            let shelves = try env.storage(for: ShelfRecord.self)
            let books = try env.storage(for: BookRecord.self)
            var model = TreeModel()
            var generator = SplitMix64(seed: seed)
            let codes = (0..<4).map { "L\($0)-ü" }
            let shelfIds = (0..<10).map { "shelf \(($0 * 7) % 10) 📚" }
            let bookIds = (0..<50).map { Int64(($0 * 37) % 50) * (seed == 3 ? 1_000 : 1) }
            var version = 0

            func pick<T>(_ values: [T]) -> T { values[Int(generator.next() % UInt64(values.count))] }
            func someBooks(shelf: String, avoiding used: inout Set<Int64>) -> [BookRecord] {
                let count = Int(generator.next() % 7)
                var chosen: [BookRecord] = []
                for _ in 0..<count {
                    let id = pick(bookIds)
                    guard used.insert(id).inserted else { continue }
                    version += 1
                    chosen.append(Self.book(id, shelf: shelf, version: version))
                }
                return chosen.sorted { $0.id < $1.id }
            }
            func someShelves(library: String) -> [ShelfRecord] {
                var usedBooks = Set<Int64>()
                var usedShelves = Set<String>()
                var chosen: [ShelfRecord] = []
                for _ in 0..<Int(generator.next() % 4) {
                    let id = pick(shelfIds)
                    guard usedShelves.insert(id).inserted else { continue }
                    version += 1
                    chosen.append(
                        Self.shelfRecord(
                            id, library: library, floor: Int64(version), label: "v\(version)", capacity: nil,
                            books: someBooks(shelf: id, avoiding: &usedBooks)))
                }
                return chosen.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
            }

            for step in 0..<120 {
                let operation = generator.next() % 6
                switch operation {
                case 0, 1:
                    let code = pick(codes)
                    version += 1
                    let record = Self.libraryRecord(
                        code, name: "v\(version)", city: version % 3 == 0 ? nil : "c", shelves: someShelves(library: code))
                    try libraries.persist(record)
                    model.persist(record)
                case 2:
                    let code = pick(codes)
                    #expect(try libraries.erase(primaryKeys: [code]) == (model.libraries[code] != nil ? 1 : 0))
                    model.eraseLibrary(code)
                case 3:
                    let id = pick(bookIds)
                    #expect(try books.erase(primaryKeys: [id]) == (model.books[id] != nil ? 1 : 0))
                    model.books[id] = nil
                case 4:
                    // A book written through its own storage, under a stored
                    // shelf: new, rewritten in place or moved.
                    guard let shelf = model.shelves.keys.sorted().first(where: { _ in generator.next() % 3 == 0 })
                        ?? model.shelves.keys.sorted().first
                    else { continue }
                    version += 1
                    let book = Self.book(pick(bookIds), shelf: shelf, version: version)
                    try books.persist(book)
                    model.books[book.id] = book
                default:
                    // A shelf through its own storage, under a stored library,
                    // with new books: it moves with its key, its books replaced.
                    guard let code = model.libraries.keys.sorted().first(where: { _ in generator.next() % 2 == 0 })
                        ?? model.libraries.keys.sorted().first
                    else { continue }
                    var used = Set<Int64>()
                    let id = pick(shelfIds)
                    version += 1
                    let shelf = Self.shelfRecord(
                        id, library: code, floor: 0, label: "v\(version)", capacity: 3,
                        books: someBooks(shelf: id, avoiding: &used))
                    try shelves.persist(shelf)
                    model.persistShelf(shelf)
                }
                let comment = Comment(rawValue: "seed \(seed), step \(step), operation \(operation)")
                #expect(try libraries.readAll() == model.tree(), comment)
                #expect(try libraries.verify() == model.libraries.count, comment)
                #expect(try shelves.verify() == model.shelves.count, comment)
                #expect(try books.verify() == model.books.count, comment)
                for id in bookIds { #expect(try books.read(primaryKey: id) == model.books[id], comment) }
                for id in shelfIds { #expect(try shelves.read(primaryKey: id)?.libraryCode == model.shelves[id]?.libraryCode, comment) }
                let runCount = try runs(env, books.table.byId).count
                #expect(runCount <= model.books.count, comment)
            }
        }
    }

    static func book(_ id: Int64, shelf: String, version: Int) -> BookRecord {
        BookTranslator().record(
            from: Sample.book(
                id, shelf: shelf, title: "t\(version)", author: ["Ōe", "Austen"][version % 2],
                year: version % 3 == 0 ? nil : Int64(version), price: Double(version), onLoan: version % 2 == 0))
    }

    static func shelfRecord(
        _ id: String, library: String, floor: Int64, label: String, capacity: Int64?, books: [BookRecord]
    ) -> ShelfRecord {
        ShelfTranslator().record(
            from: Shelf(
                uniqueId: id, libraryCode: library, floor: floor, label: label, capacity: capacity,
                books: books.map(BookTranslator().plain(from:))))
    }

    static func libraryRecord(_ code: String, name: String, city: String?, shelves: [ShelfRecord]) -> LibraryRecord {
        LibraryTranslator().record(
            from: Library(
                uniqueId: code, name: name, city: city, opened: Sample.epoch, rating: nil,
                shelves: shelves.map(ShelfTranslator().plain(from:))))
    }

    @Test("a store of layout version 1 is upgraded at a writable open in one transaction, refused read-only")
    func upgrade() throws {
        try withStoreDirectory { directory in
            // Interleaved and consecutive children, three levels, text keys.
            let dialogRecords = [dialog(1, Array(1...10)), dialog(2, Array(11...20)), dialog(3, [21, 23, 25]), dialog(4, [22, 24, 26])]
            let libraryRecords = Sample.sortedCorpus().map { LibraryTranslator().record(from: $0) }
            do {
                let env = try LMDBEnvironment(directory: directory.store, durability: .none)
                try env.storage(for: DialogRecord.self).persist(dialogRecords)
                try env.storage(for: LibraryRecord.self).persist(libraryRecords)
                try writeLayoutVersion1(env)
                env.close()
            }
            let before = try Data(contentsOf: directory.store.appendingPathComponent("data.mdb"))
            let error = storageError { _ = try LMDBEnvironment(directory: directory.store, readOnly: true) }
            #expect(error?.kind == .schemaMismatch)
            #expect(error?.message.contains("layout version 1") == true, "\(String(describing: error))")
            #expect(try Data(contentsOf: directory.store.appendingPathComponent("data.mdb")) == before)

            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let messages = try env.storage(for: MessageRecord.self)
            #expect(try integerRuns(env, messages.table.byId) == [[1, 10, 1], [11, 20, 2]] + (21...26).map { [$0, $0, 3 + ($0 + 1) % 2] })
            #expect(try env.storage(for: DialogRecord.self).readAll() == dialogRecords)
            #expect(try messages.verify() == 26)
            let libraries = try env.storage(for: LibraryRecord.self)
            #expect(try libraries.readAll() == libraryRecords)
            #expect(try env.storage(for: ShelfRecord.self).verify() == libraryRecords.flatMap(\.shelves).count)
            #expect(try env.storage(for: BookRecord.self).verify() == libraryRecords.flatMap(\.shelves).flatMap(\.books).count)
            let metadata = try #require(try env.database(LMDBEnvironment.metadataDatabase))
            #expect(try env.read(.read) { txn in try txn.copy(metadata, LayoutStamp.key) } == LayoutStamp.encoded())
            env.close()
        }
    }

    @Test("an upgrade that meets a damaged entry of layout version 1 writes nothing")
    func failedUpgrade() throws {
        try withStoreDirectory { directory in
            do {
                let env = try LMDBEnvironment(directory: directory.store, durability: .none)
                try env.storage(for: DialogRecord.self).persist([dialog(1, Array(1...10)), dialog(2, Array(11...20))])
                try writeLayoutVersion1(env)
                // An entry whose storage key does not end with its key.
                let byId = try env.storage(for: MessageRecord.self).table.byId
                try env.write(.persist) { txn in
                    try txn.put(byId, KeyCodec.encode(primaryKey: Int64(15)), KeyCodec.encode(primaryKey: Int64(2)) + [1])
                }
                env.close()
            }
            let before = try Data(contentsOf: directory.store.appendingPathComponent("data.mdb"))
            let error = storageError { _ = try LMDBEnvironment(directory: directory.store, durability: .none) }
            #expect(error?.kind == .corrupt)
            #expect(try Data(contentsOf: directory.store.appendingPathComponent("data.mdb")) == before)
        }
    }
}

/// What the store should hold after each call, by the semantics: a parent
/// written stores exactly the children it holds, moving those stored under
/// another parent and erasing the ones it no longer holds, with theirs.
struct TreeModel {
    var libraries: [String: LibraryRecord] = [:]
    var shelves: [String: ShelfRecord] = [:]
    var books: [Int64: BookRecord] = [:]

    mutating func persist(_ library: LibraryRecord) {
        let previous = shelves.values.filter { $0.libraryCode == library.code }.map(\.id)
        for shelf in library.shelves { persistShelf(shelf) }
        for id in previous where !library.shelves.contains(where: { $0.id == id }) { eraseShelf(id) }
        var stored = library
        stored.shelves = []
        libraries[library.code] = stored
    }

    mutating func persistShelf(_ shelf: ShelfRecord) {
        let previous = books.values.filter { $0.shelfId == shelf.id }.map(\.id)
        for book in shelf.books { books[book.id] = book }
        for id in previous where !shelf.books.contains(where: { $0.id == id }) { books[id] = nil }
        var stored = shelf
        stored.books = []
        shelves[shelf.id] = stored
    }

    mutating func eraseShelf(_ id: String) {
        shelves[id] = nil
        for book in books.values where book.shelfId == id { books[book.id] = nil }
    }

    mutating func eraseLibrary(_ code: String) {
        libraries[code] = nil
        for shelf in shelves.values where shelf.libraryCode == code { eraseShelf(shelf.id) }
    }

    /// Every library with its shelves and books, in key order.
    func tree() -> [LibraryRecord] {
        libraries.values.sorted { $0.code.utf8.lexicographicallyPrecedes($1.code.utf8) }.map { library in
            var library = library
            library.shelves = shelves.values.filter { $0.libraryCode == library.code }
                .sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
                .map { shelf in
                    var shelf = shelf
                    shelf.books = books.values.filter { $0.shelfId == shelf.id }.sorted { $0.id < $1.id }
                    return shelf
                }
            return library
        }
    }
}
