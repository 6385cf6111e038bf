import DAOCore
import Foundation
import Testing
import TestSupport

@testable import LMDBStorage

/// Erasing parents of the three-level, String-keyed domain (libraries own
/// shelves own books; books keep a stored index), with book ids that are
/// neighbours in `#id` within a shelf and with ids that interleave across
/// shelves, so that the `#id` eraser both finds the next key where a delete
/// left its cursor and has to search for it.
@Suite("LMDB erasure three levels deep")
struct ThreeLevelErasureTests {
    /// Library `index`'s shelves and books: 3 shelves of 70 books; for an odd
    /// library the book ids of its shelves interleave (shelf `s` holds the
    /// ids ≡ `s` modulo 3), for an even one each shelf's ids are one run.
    private func library(_ index: Int) -> Library {
        let code = "bib-\(index)-é"
        let shelves = (0..<3).map { shelf -> Shelf in
            let id = "\(code)/ shelf \(shelf) 📚"
            let books = (0..<70).map { position -> Book in
                let base = Int64(index) * 1_000
                let bookId = index % 2 == 1 ? base + Int64(position * 3 + shelf) : base + Int64(shelf * 70 + position)
                return Sample.book(
                    bookId, shelf: id, title: "T\(bookId)", author: ["Ōe", "Austen", ""][position % 3],
                    year: position % 4 == 0 ? nil : Int64(1900 + position), price: Double(position),
                    summary: String(repeating: "x", count: position % 9))
            }
            return Shelf(
                uniqueId: id, libraryCode: code, floor: Int64(shelf), label: "L\(shelf)", capacity: nil, books: books)
        }
        return Library(uniqueId: code, name: "Library \(index)", city: nil, opened: Sample.epoch, rating: nil, shelves: shelves)
    }

    @Test("erasing libraries out of key order, then all the rest, leaves every #id and index entry exact")
    func erasures() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none)
            let libraries = try env.storage(for: LibraryRecord.self)
            let shelves = try env.storage(for: ShelfRecord.self)
            let books = try env.storage(for: BookRecord.self)
            var model = Dictionary(uniqueKeysWithValues: (0..<8).map { index in
                let record = LibraryTranslator().record(from: library(index))
                return (record.code, record)
            })
            try libraries.persist(Array(model.values))

            func expectStore() throws {
                let kept = model.values.sorted { $0.code.utf8.lexicographicallyPrecedes($1.code.utf8) }
                let keptShelves = kept.flatMap(\.shelves)
                let keptBooks = keptShelves.flatMap(\.books)
                #expect(try libraries.verify() == kept.count)
                #expect(try shelves.verify() == keptShelves.count)
                #expect(try books.verify() == keptBooks.count)
                #expect(try books.count() == keptBooks.count)
                for book in keptBooks { #expect(try books.read(primaryKey: book.id) == book) }
                for shelf in keptShelves { #expect(try shelves.read(primaryKey: shelf.id)?.books.count == 70) }
            }
            try expectStore()

            let erasedBooks = ["bib-5-é", "bib-0-é", "bib-3-é"].flatMap { model[$0]?.shelves.flatMap(\.books) ?? [] }
            #expect(try libraries.erase(primaryKeys: ["bib-5-é", "bib-0-é", "bib-3-é"]) == 3)
            for code in ["bib-5-é", "bib-0-é", "bib-3-é"] { model[code] = nil }
            try expectStore()
            for book in erasedBooks { #expect(try books.read(primaryKey: book.id) == nil) }

            let rest = Array(model.keys)
            #expect(try libraries.erase(primaryKeys: rest) == rest.count)
            model = [:]
            try expectStore()
        }
    }
}
