import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@testable import LMDBStorage

/// The fused walk (``StoredChildren``): a parent's children are matched
/// against the entries the main writer's cursor reaches, and only at the
/// first child that is not there are the range's keys listed, with the
/// children matched so far kept; at the end, one more step finds stored
/// children after the last match. Checked against a model on the library
/// domain's three levels: libraries (String codes) own shelves (String keys
/// of 0 to 4 characters, so keys of different lengths interleave in key
/// order) own books (Int64 keys, with an index of their own database, so a
/// book matched at the cursor has its old index entries read before its
/// rewrite). A shelf matched at the cursor has its own books walked before
/// the next shelf is matched.
///
/// Directed steps put the first mismatch at the first child, in the
/// middle, at the last child, after the last match (stored children
/// following), into an empty range, and come with children moved from
/// another parent, out of key order, and parents emptied; each step edits
/// the books of every kept shelf the same way. After every call: every
/// library read back, the counts, `verify()` of each level (index entries
/// one for one, `#id` runs), and the books found through their index.
@Suite("LMDB storage: the fused walk of a parent's stored children")
struct FusedWalkTests {
    /// How the books of a kept shelf are edited in a step.
    enum BookEdit: CaseIterable {
        case changed, unchanged, newFirst, newMiddle, removeFirst, removeMiddle, replaceLast, dropTail, newLast
        case reversed, shuffled, movedIn, emptied
    }

    final class Fixture {
        let libraries: LMDBRecordStorage<LibraryRecord>
        let shelves: LMDBRecordStorage<ShelfRecord>
        let books: LMDBRecordStorage<BookRecord>
        var model: [String: LibraryRecord] = [:]
        var nextBook: Int64 = 1_000
        /// Every book id ever given, so that a new book never takes the
        /// key of one stored elsewhere (which would be a move).
        var usedBooks: Set<Int64> = []
        var random = SplitMix64(seed: 16)

        init(_ env: LMDBEnvironment) throws {
            libraries = try env.storage(for: LibraryRecord.self)
            shelves = try env.storage(for: ShelfRecord.self)
            books = try env.storage(for: BookRecord.self)
        }

        func book(_ id: Int64, shelf: String, _ tag: String) -> BookRecord {
            BookTranslator().record(
                from: Book(
                    uniqueId: id, shelfId: shelf, title: "t\(tag)", author: "author \(id % 3)",
                    year: id % 2 == 0 ? nil : 1_990 + id, price: Double(id % 7) + 0.5, weight: nil, acquired: nil,
                    summary: tag, cover: id % 3 == 0 ? Data([UInt8(truncatingIfNeeded: id)]) : nil, onLoan: id % 2 == 0))
        }

        /// Fresh books in key order, a hundred apart.
        func newBooks(shelf: String, count: Int, _ tag: String) -> [BookRecord] {
            (0..<count).map { _ in
                nextBook += 100
                usedBooks.insert(nextBook)
                return book(nextBook, shelf: shelf, tag)
            }
        }

        func makeShelf(_ id: String, library: String, books: [BookRecord], _ tag: String) -> ShelfRecord {
            ShelfTranslator().record(
                from: Shelf(uniqueId: id, libraryCode: library, floor: Int64(id.utf8.count), label: tag, capacity: nil, books: []))
                .with(books: books)
        }

        func library(_ code: String, shelves: [ShelfRecord], _ tag: String) -> LibraryRecord {
            var record = LibraryTranslator().record(
                from: Library(uniqueId: code, name: tag, city: nil, opened: Date(timeIntervalSince1970: 0), rating: nil, shelves: []))
            record.shelves = shelves
            return record
        }

        /// A book of a library other than `code`, for a move.
        func foreignBook(notIn code: String) -> (library: String, shelf: String, book: BookRecord)? {
            for library in model.keys.sorted() where library != code {
                for shelf in model[library]?.shelves ?? [] {
                    if let book = shelf.books.first { return (library, shelf.id, book) }
                }
            }
            return nil
        }

        /// `books` (a kept shelf's, in key order) edited by `edit`.
        func edited(_ books: [BookRecord], shelf: String, library: String, _ edit: BookEdit, _ tag: String) -> [BookRecord] {
            var books = books.map { book -> BookRecord in
                var book = book
                book.shelfId = shelf
                return book
            }
            let ids = books.map(\.id)
            // A new book at `id` (where the edit puts it), or at a fresh
            // key when `id` was ever given.
            func fresh(_ id: Int64) -> BookRecord {
                guard usedBooks.insert(id).inserted else { return newBooks(shelf: shelf, count: 1, tag)[0] }
                return book(id, shelf: shelf, tag)
            }
            switch edit {
            case .changed:
                for index in books.indices {
                    books[index].title = "t\(tag)"
                    books[index].price += 1
                }
            case .unchanged: break
            case .newFirst: books.insert(fresh((ids.first ?? nextBook) - 1), at: 0)
            case .newMiddle:
                if ids.count >= 2 { books.insert(fresh(ids[0] + 1), at: 1) } else { books.append(fresh((ids.last ?? nextBook) + 1)) }
            case .removeFirst: if !books.isEmpty { books.removeFirst() }
            case .removeMiddle: if books.count >= 3 { books.remove(at: books.count / 2) }
            case .replaceLast:
                if let last = ids.last {
                    books.removeLast()
                    books.append(fresh(last + 5))
                }
            case .dropTail: books = Array(books.prefix(1))
            case .newLast: books.append(fresh((ids.last ?? nextBook) + 3))
            case .reversed: books.reverse()
            case .shuffled: books.shuffle(using: &random)
            case .movedIn:
                if let (from, fromShelf, moved) = foreignBook(notIn: library) {
                    var book = moved
                    book.shelfId = shelf
                    book.title = "moved \(tag)"
                    books.append(book)
                    books.sort { $0.id < $1.id }
                    if let index = model[from]?.shelves.firstIndex(where: { $0.id == fromShelf }) {
                        model[from]?.shelves[index].books.removeAll { $0.id == moved.id }
                    }
                }
            case .emptied: books = []
            }
            return books
        }

        /// Writes library `code` with the shelves `keys` in that order:
        /// a shelf it holds keeps its books, edited by `edit`; a shelf of
        /// another library moves in with its books; a new shelf gets three
        /// new books.
        func write(_ code: String, shelves keys: [String], books edit: BookEdit, _ tag: String) throws {
            var given: [ShelfRecord] = []
            for key in keys {
                if let kept = model[code]?.shelves.first(where: { $0.id == key }) {
                    var shelf = kept
                    shelf.label = "l\(tag)"
                    shelf.books = edited(kept.books, shelf: key, library: code, edit, tag)
                    given.append(shelf)
                } else if let from = model.keys.first(where: { $0 != code && model[$0]?.shelves.contains { $0.id == key } == true }),
                    let moved = model[from]?.shelves.first(where: { $0.id == key })
                {
                    var shelf = moved
                    shelf.libraryCode = code
                    shelf.label = "moved \(tag)"
                    given.append(shelf)
                    model[from]?.shelves.removeAll { $0.id == key }
                } else {
                    given.append(makeShelf(key, library: code, books: newBooks(shelf: key, count: 3, tag), tag))
                }
            }
            let record = library(code, shelves: given, tag)
            try libraries.persist([record])
            model[code] = Self.sorted(record)
        }

        static func sorted(_ library: LibraryRecord) -> LibraryRecord {
            var library = library
            library.shelves.sort { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
            for index in library.shelves.indices { library.shelves[index].books.sort { $0.id < $1.id } }
            return library
        }

        func expectStore(_ step: String) throws {
            let comment = Comment(rawValue: step)
            let expected = model.values.sorted { $0.code.utf8.lexicographicallyPrecedes($1.code.utf8) }
            #expect(try libraries.readAll() == expected, comment)
            let allShelves = expected.flatMap(\.shelves)
            let allBooks = allShelves.flatMap(\.books)
            #expect(try libraries.verify() == expected.count, comment)
            #expect(try shelves.verify() == allShelves.count, comment)
            #expect(try books.verify() == allBooks.count, comment)
            #expect(try books.count(where: nil) == allBooks.count, comment)
            for author in ["author 0", "author 1", "author 2"] {
                let found = try books.read(where: #Predicate { $0.author == author }).map(\.id).sorted()
                #expect(found == allBooks.filter { $0.author == author }.map(\.id).sorted(), comment)
            }
        }
    }

    @Test("the first mismatch at the first child, in the middle, at the last; stored children after the last match; empty ranges; moves; three levels")
    func directedSteps() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let fixture = try Fixture(env)
            // Another library, for shelves and books that move.
            try fixture.write("M", shelves: ["m1", "m2", "mm"], books: .changed, "m")
            try fixture.expectStore("M")
            let steps: [(String, [String], BookEdit)] = [
                ("new library: an empty range", ["a", "aa", "ab", "b", "ba", "bcd", "zz"], .changed),
                ("every child matched, values changed", ["a", "aa", "ab", "b", "ba", "bcd", "zz"], .changed),
                ("every child matched, values unchanged", ["a", "aa", "ab", "b", "ba", "bcd", "zz"], .unchanged),
                ("a new first child", ["", "a", "aa", "ab", "b", "ba", "bcd", "zz"], .newFirst),
                ("a new child in the middle", ["", "a", "aa", "ab", "abc", "b", "ba", "bcd", "zz"], .newMiddle),
                ("a removed child in the middle", ["", "a", "aa", "ab", "b", "ba", "bcd", "zz"], .removeMiddle),
                ("the first stored child removed", ["a", "aa", "ab", "b", "ba", "bcd", "zz"], .removeFirst),
                ("the last child replaced", ["a", "aa", "ab", "b", "ba", "bcd", "zzz"], .replaceLast),
                ("stored children after the last match", ["a", "aa", "ab"], .dropTail),
                ("a new child after every match", ["a", "aa", "ab", "abcd"], .newLast),
                ("children moved in from another parent", ["a", "aa", "ab", "abcd", "m1"], .movedIn),
                ("reversed", ["m1", "abcd", "ab", "aa", "a"], .reversed),
                ("shuffled, one moved in first", ["m2", "ab", "a", "m1", "abcd", "aa"], .shuffled),
                ("books emptied", ["a", "aa", "ab", "abcd", "m1", "m2"], .emptied),
                ("books into empty ranges", ["a", "aa", "ab", "abcd", "m1", "m2"], .newLast),
                ("emptied", [], .changed),
                ("empty, given empty", [], .changed),
                ("new children into an empty range", ["b", "ba", "c"], .changed),
                ("the last stored child dropped", ["b", "ba"], .unchanged),
            ]
            for (name, keys, edit) in steps {
                try fixture.write("L", shelves: keys, books: edit, name)
                try fixture.expectStore(name)
            }
        }
    }

    @Test("random edits of three libraries against the model", arguments: [UInt64(1), 2, 3])
    func randomEdits(seed: UInt64) throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let fixture = try Fixture(env)
            fixture.random = SplitMix64(seed: seed)
            let pool = ["", "a", "aa", "ab", "abc", "b", "ba", "bb", "bcd", "c", "cc", "zz", "zzz", "\u{E9}"]
            for round in 0..<40 {
                let code = ["L", "M", "N"][Int.random(in: 0..<3, using: &fixture.random)]
                var keys = fixture.model[code]?.shelves.map(\.id) ?? []
                keys.removeAll { _ in Int.random(in: 0..<5, using: &fixture.random) == 0 }
                for _ in 0..<Int.random(in: 0...2, using: &fixture.random) {
                    if let key = pool.randomElement(using: &fixture.random), !keys.contains(key) { keys.append(key) }
                }
                switch Int.random(in: 0..<5, using: &fixture.random) {
                case 0: keys.shuffle(using: &fixture.random)
                case 1: keys.reverse()
                case 2: if Int.random(in: 0..<3, using: &fixture.random) == 0 { keys = [] }
                default: keys.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                }
                let edit = BookEdit.allCases.randomElement(using: &fixture.random) ?? .changed
                let name = "seed \(seed), round \(round): \(code) \(keys) \(edit)"
                try fixture.write(code, shelves: keys, books: edit, name)
                try fixture.expectStore(name)
            }
        }
    }
}

extension ShelfRecord {
    fileprivate func with(books: [BookRecord]) -> ShelfRecord {
        var shelf = self
        shelf.books = books
        return shelf
    }
}
