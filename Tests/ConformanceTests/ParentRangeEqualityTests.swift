import DAOCore
import Foundation
import TestSupport
import Testing

// A child entity queried by its parent's key and equalities on its other
// fields (outside any index that serves the parent's range): optionals equal
// to nil and to a value, text with non-ASCII letters, integers, at the second
// and third levels of a tree with String keys. Every backend answers as the
// core's definition does (LMDB checks such equalities on the stored bytes of
// the parent's range).
@Suite("Conformance: a parent's children by their other fields")
struct ParentRangeEqualityTests {
    @Test("equalities besides the parent's key answer as the core says", arguments: allBackends)
    func childrenByOtherFields(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let authors = try store.anyStorage(for: CatalogAuthor.self)
            try authors.persist(catalogAuthors())
            let books = try store.anyStorage(for: CatalogBook.self)
            let chapters = try store.anyStorage(for: CatalogChapter.self)
            let allBooks = try books.readAll()
            let allChapters = try chapters.readAll()
            var answered = 0
            for book in allBooks {
                let b = book.id
                let chapterQueries: [Predicate<CatalogChapter>] = [
                    #Predicate { $0.bookId == b && $0.number == 2 },
                    #Predicate { $0.bookId == b && $0.wordCount == nil },
                    #Predicate { $0.bookId == b && $0.wordCount == 300 },
                    #Predicate { $0.text == "xxxxxxxxxx" && $0.bookId == b },
                    #Predicate { $0.bookId == b && $0.number == 1 && $0.wordCount == 100 },
                ]
                for predicate in chapterQueries {
                    let query = Query(where: predicate, sortedBy: [SortDescriptor(\.number, order: .reverse)])
                    let expected = try query.apply(to: allChapters)
                    #expect(try chapters.read(query) == expected)
                    #expect(try chapters.count(where: predicate) == expected.count)
                    answered += expected.count
                }
            }
            for author in ["author-1", "author-2", "author-3"] {
                let bookQueries: [Predicate<CatalogBook>] = [
                    #Predicate { $0.authorId == author && $0.subtitle == nil },
                    #Predicate { $0.authorId == author && $0.subtitle == "A subtitle 🚀" },
                    #Predicate { $0.authorId == author && $0.title == "Title 2.2" },
                ]
                for predicate in bookQueries {
                    let expected = try Query(where: predicate).apply(to: allBooks)
                    #expect(try books.read(where: predicate) == expected)
                    answered += expected.count
                }
            }
            #expect(answered >= 20)
        }
    }
}
