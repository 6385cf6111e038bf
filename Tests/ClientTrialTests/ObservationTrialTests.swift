import DAOCore
import Foundation
import TestSupport
import Testing

// docs/OBSERVATION.md as a client uses it: a view of one library's shelves,
// kept only from snapshots and their changes, while books move between
// shelves, a shelf moves between libraries, and shelves are erased.

@Suite("Client trial: observing a library's shelves on every backend")
struct ObservationTrialTests {
    @Test("moves, edits and erases arrive as changes that rebuild the results exactly", arguments: localBackends)
    func shelvesOfALibrary(backend: TestBackend) async throws {
        let directory = try TemporaryDirectory()
        let store = try backend.open(directory.url)
        let daos = try LibraryDAOs(store)
        try await daos.libraries.persist(Sample.corpus())
        let sort = [SortDescriptor<ShelfRecord>(\.floor, order: .reverse), SortDescriptor(\.label)]
        let central = #Predicate<ShelfRecord> { $0.libraryCode == "central" }
        let iterator = daos.shelves.observe(where: central, sortedBy: sort).makeAsyncIterator()
        let book = try await #require(try daos.books.read(byPrimaryKey: 2))
        let bookIterator = daos.books.observe(primaryKey: 2).makeAsyncIterator()

        var rows = try #require(try await nextSnapshot(iterator)).results
        #expect(rows == (try await daos.shelves.read(where: central, sortedBy: sort)))
        #expect(try #require(try await nextSnapshot(bookIterator)).results == [book])

        let changes: [(String, () throws -> Void)] = [
            ("a book moved from another library onto central-b", {
                try daos.books.persist(Sample.book(40, shelf: "central-b", title: "moved in"))
            }),
            ("a shelf of east moved into central", {
                let shelf = try #require(try daos.shelves.read(byPrimaryKey: "east-2"))
                try daos.shelves.persist(Shelf(
                    uniqueId: shelf.uniqueId, libraryCode: "central", floor: 5, label: shelf.label, capacity: nil,
                    books: shelf.books))
            }),
            ("book 2 moved from central-a to central-c", {
                try daos.books.persist(Sample.book(2, shelf: "central-c", title: "moved across"))
            }),
            ("central-a erased with its books", {
                let erased = try daos.shelves.erase(byPrimaryKey: "central-a")
                #expect(erased)
            }),
            ("central renamed with the same shelves, then a shelf relabelled", {
                let library = try #require(try daos.libraries.read(byPrimaryKey: "central"))
                try daos.libraries.persist(Library(
                    uniqueId: "central", name: "Renamed", city: nil, opened: library.opened, rating: nil,
                    shelves: library.shelves))
                let shelf = try #require(library.shelves.first)
                try daos.shelves.persist(Shelf(
                    uniqueId: shelf.uniqueId, libraryCode: "central", floor: shelf.floor, label: "AAA",
                    capacity: shelf.capacity, books: shelf.books))
            }),
        ]
        for (name, change) in changes {
            try change()
            let snapshot = try #require(try await nextSnapshot(iterator), "\(name)")
            let fresh = try await daos.shelves.read(where: central, sortedBy: sort)
            let delivered = try #require(snapshot.changes, "\(name): a later snapshot carries its changes")
            rows = try #require(applying(delivered, to: rows, from: snapshot.results), "\(name): indexes out of range")
            #expect(snapshot.results == fresh, "\(name)")
            #expect(rows == fresh, "\(name): the changes do not rebuild the results")
        }
        // Book 2 moved to central-c before central-a was erased, so it lives on.
        let moved = try #require(try await nextSnapshot(bookIterator))
        #expect(moved.results.map(\.shelfId) == ["central-c"])
        #expect(try await daos.books.read(byPrimaryKey: 2)?.title == "moved across")

        #expect(try await daos.libraries.erase(byPrimaryKey: "central"))
        let erased = try #require(try await nextSnapshot(iterator))
        #expect(erased.results.isEmpty)
        #expect(erased.changes?.deletions.count == rows.count)
        let gone = try #require(try await nextSnapshot(bookIterator))
        #expect(gone.results.isEmpty)

        try store.close()
        #expect(try await nextSnapshot(iterator) == nil)
        #expect(try await nextSnapshot(bookIterator) == nil)
    }
}

