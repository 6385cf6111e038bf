import DAOCore
import DAOMacros
import Foundation
import Testing

@testable import PostgresStorage

// A statement whose parameters come to more than one message to the server
// may hold is refused before it is sent, with a typed error: PostgreSQL
// closes a connection that sends a longer message, and the driver traps on
// a parameter of 2 GiB or more (a batch's column of several large values).
// The limit is lowered here to 64 KiB, so that a few records pass it.

@StoredRecord("ml_shelves")
struct MlShelf: Equatable {
    var id: Int64
    var label: String
    @Children(foreignKey: "shelfId") var books: [MlBook]
}

@StoredRecord("ml_books", ownedBy: MlShelf.self)
struct MlBook: Equatable {
    var id: Int64
    var shelfId: Int64
    var text: String
}

@Suite(.enabled(if: Server.url != nil, "DAO_POSTGRES_URL names no server"), .serialized)
struct MessageLimitTests {
    static let limit = 64 * 1024

    /// `count` shelves of `books` books, each book's text `size` bytes.
    func shelves(_ ids: ClosedRange<Int64>, books: Int, size: Int) -> [MlShelf] {
        ids.map { id in
            MlShelf(
                id: id, label: "shelf \(id)",
                books: (0..<Int64(books)).map { n in
                    MlBook(id: id * 1000 + n, shelfId: id, text: String(repeating: "é", count: size / 2) + "\(n)")
                })
        }
    }

    @Test func aPersistPastTheLimitIsRefusedAndWritesNothing() throws {
        try Server.withStore({ $0.messageLimit = Self.limit }) { database, _ in
            let storage = try database.storage(for: MlShelf.self)
            let books = try database.storage(for: MlBook.self)
            try storage.persist(shelves(1...1, books: 1, size: 100))
            // 4 shelves of 5 books of 4 KB: 80 KB of book text in one statement.
            let error = #expect(throws: StorageError.self) {
                try storage.persist(shelves(2...5, books: 5, size: 4096))
            }
            #expect(error?.kind == .encoding)
            #expect(error?.operation == .persist)
            #expect(error?.message.contains("PostgresConfiguration.rowsPerStatement") == true, "\(String(describing: error))")
            // Nothing of the call is stored, and the store goes on.
            #expect(try storage.count() == 1 && books.count() == 1)
            try storage.persist(shelves(6...6, books: 2, size: 100))
            #expect(try storage.read().map(\.id) == [1, 6])
        }
    }

    @Test func fewerRowsAStatementFitUnderTheLimit() throws {
        try Server.withStore({
            $0.messageLimit = Self.limit
            $0.rowsPerStatement = 6
        }) { database, _ in
            let storage = try database.storage(for: MlShelf.self)
            let written = shelves(2...5, books: 5, size: 4096)
            try storage.persist(written)
            #expect(try storage.read() == written)
        }
    }

    @Test func aQueryWhoseValueIsPastTheLimitIsRefused() throws {
        try Server.withStore({ $0.messageLimit = Self.limit }) { database, _ in
            let books = try database.storage(for: MlBook.self)
            let storage = try database.storage(for: MlShelf.self)
            try storage.persist(shelves(1...2, books: 2, size: 100))
            let long = String(repeating: "x", count: Self.limit + 1)
            let error = #expect(throws: StorageError.self) {
                _ = try books.read(where: #Predicate<MlBook> { $0.text == long })
            }
            #expect(error?.kind == .invalidArgument)
            #expect(error?.operation == .read)
            #expect(try books.read(where: #Predicate<MlBook> { $0.shelfId == 2 }).count == 2)
        }
    }
}
