import DAOCore
import Foundation
import TestSupport
import Testing

// The library domain (Tests/TestSupport/LibraryDomain.swift, which StoreHelper
// writes too) as the trial's tests open it: its three DAOs over one store.

/// The three DAOs of the trial over one store.
struct LibraryDAOs {
    let libraries: DAO<AnyStorage<LibraryRecord>, LibraryTranslator>
    let shelves: DAO<AnyStorage<ShelfRecord>, ShelfTranslator>
    let books: DAO<AnyStorage<BookRecord>, BookTranslator>

    init(_ store: any Store) throws {
        libraries = DAO(storage: try store.anyStorage(for: LibraryRecord.self), translator: LibraryTranslator())
        shelves = DAO(storage: try store.anyStorage(for: ShelfRecord.self), translator: ShelfTranslator())
        books = DAO(storage: try store.anyStorage(for: BookRecord.self), translator: BookTranslator())
    }

    /// How many records each entity holds, counted through its own storage.
    func counts() throws -> [Int] {
        [try libraries.count(), try shelves.count(), try books.count()]
    }
}

/// Opens `backend` in `directory`, runs `body` with its DAOs, and closes the
/// store (also when `body` throws).
func withLibrary<T>(_ backend: TestBackend, in directory: URL, _ body: (LibraryDAOs, any MigratableStore) throws -> T)
    throws -> T
{
    try withStore(backend, in: directory, LibraryDAOs.init, body)
}

/// The Unicode scalars of `text`: what the stored meaning compares (Swift's
/// `==` on `String` would take NFC and NFD for one value).
func scalars(_ text: String) -> [UInt32] { text.unicodeScalars.map(\.value) }

/// Every String of a library tree, by scalars, in order: so that a test can
/// tell whether a value came back in another normalization.
func allScalars(_ libraries: [Library]) -> [[UInt32]] {
    libraries.flatMap { library in
        [scalars(library.uniqueId), scalars(library.name), scalars(library.city ?? "∅")]
            + library.shelves.flatMap { shelf in
                [scalars(shelf.uniqueId), scalars(shelf.libraryCode), scalars(shelf.label)]
                    + shelf.books.flatMap { [scalars($0.shelfId), scalars($0.title), scalars($0.author), scalars($0.summary)] }
            }
    }
}

/// The library as the tests run on several domains see it.
struct LibraryTrial: TrialDomain {
    var description: String { "library" }
    var writer: String { "trial-write" }
    var kills: KillPlan {
        KillPlan(
            rounds: 4, seedStart: 7, seedFactor: 31, delayBound: 4_000,
            target: { _, written, random in written + 1 + random.below(8) }, end: { written, _ in written + 60 })
    }

    func reopened(_ backend: TestBackend, in directory: URL, round: Int) throws -> (_ calls: Int) -> Bool {
        let read = try withLibrary(backend, in: directory) { daos, _ in
            // Children counted on their own agree with those read through parents.
            let libraries = try daos.libraries.read()
            #expect(try daos.shelves.count() == libraries.flatMap(\.shelves).count)
            #expect(try daos.books.count() == libraries.flatMap(\.shelves).flatMap(\.books).count)
            return libraries
        }
        return { read == TrialWrites.state(after: $0) }
    }
}
