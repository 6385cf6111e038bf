import DAOCore
import Foundation
import TestSupport
import Testing

@testable import FileStorage

// A parent whose positional children are read in one pass per parent (the
// real check, the key pairs, the property-list spelling test): the errors are
// those of the record-by-record order, and a child whose `write(fields:)`
// throws is read one by one.

/// A shelf, keyed by a String, owning its books.
struct ShelfRecord: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var books: [BookRecord]

    static let entity = Entity<ShelfRecord>(
        "shelves", primaryKey: "id", \.id, fields: [],
        relations: [Relation("books", \.books, foreignKey: "shelfId", \BookRecord.shelfId)])
}

/// A book with two texts, a real and a date; `refuses` makes its `write(fields:)` throw.
struct BookRecord: Record, Equatable, FieldwiseRecord {
    typealias PrimaryKey = Int64
    var id: Int64
    var shelfId: String
    var title: String
    var subtitle: String?
    var weight: Double
    var shelved: Date?
    var refuses = false

    struct Refused: Error, Equatable {
        var id: Int64
    }

    enum CodingKeys: String, CodingKey {
        case id, shelfId, title, subtitle, weight, shelved
    }

    init(
        id: Int64, shelfId: String, title: String, subtitle: String? = nil, weight: Double = 1, shelved: Date? = nil,
        refuses: Bool = false
    ) {
        self.id = id
        self.shelfId = shelfId
        self.title = title
        self.subtitle = subtitle
        self.weight = weight
        self.shelved = shelved
        self.refuses = refuses
    }

    init(fields: inout some FieldReader) throws {
        self.init(
            id: try fields.decode(), shelfId: try fields.decode(), title: try fields.decode(),
            subtitle: try fields.decode(), weight: try fields.decode(), shelved: try fields.decodeIfPresent())
    }

    func write(fields: inout some FieldWriter) throws {
        if refuses { throw Refused(id: id) }
        try fields.encode(id)
        try fields.encode(shelfId)
        try fields.encode(title)
        try fields.encodeIfPresent(subtitle)
        try fields.encode(weight)
        try fields.encodeIfPresent(shelved)
    }

    static let entity = Entity<BookRecord>(
        "books", primaryKey: "id", \.id,
        fields: [
            Field("shelfId", \.shelfId), Field("title", \.title), Field("subtitle", \.subtitle), Field("weight", \.weight),
            Field("shelved", \.shelved),
        ],
        ownedBy: ShelfRecord.self)
}

@Suite("File store: children read in one pass per parent")
struct ScanPathTests {
    @Test("the children's -0.0 and NaN are stored by both formats; a property list refuses the first date of -0.0 among them", arguments: FileFormat.allCases)
    func negativeZeroAndNaN(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let minusZeroDate = Date(timeIntervalSinceReferenceDate: -0.0)
        do {
            let store = try FileStore(directory: scratch.url, format: format)
            let shelves = try store.storage(for: ShelfRecord.self)
            try shelves.persist(ShelfRecord(id: "s", books: [
                BookRecord(id: 1, shelfId: "s", title: "a"), BookRecord(id: 2, shelfId: "s", title: "b", weight: -0.0),
                BookRecord(id: 3, shelfId: "s", title: "c", weight: .nan), BookRecord(id: 4, shelfId: "s", title: "d", weight: 0),
            ]))
            let shelf = ShelfRecord(id: "t", books: [
                BookRecord(id: 5, shelfId: "t", title: "e"), BookRecord(id: 6, shelfId: "t", title: "f", shelved: minusZeroDate),
                BookRecord(id: 7, shelfId: "t", title: "g", shelved: minusZeroDate),
            ])
            if format == .propertyList {
                #expect {
                    try shelves.persist(shelf)
                } throws: { error in
                    guard let error = error as? StorageError else { return false }
                    return error.kind == .invalidArgument && error.entity == "books"
                        && error.message.hasPrefix("field 'shelved' of record 6 is ")
                }
                #expect(try shelves.count() == 1)
            } else {
                try shelves.persist(shelf)
            }
        }
        let store = try FileStore(directory: scratch.url, format: format)
        let books = try store.storage(for: BookRecord.self).readAll()
        #expect(books.prefix(4).map(\.weight.bitPattern) == [1, -0.0, Double.nan, 0].map(\.bitPattern))
        let shelved = books.dropFirst(4).map { $0.shelved?.timeIntervalSinceReferenceDate.bitPattern }
        #expect(shelved == (format == .json ? [nil, (-0.0).bitPattern, (-0.0).bitPattern] : []))
    }

    @Test("a child whose write(fields:) throws is met in order: before a later date of -0.0, after an earlier one (property list)", arguments: FileFormat.allCases)
    func throwingChild(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: format)
        let shelves = try store.storage(for: ShelfRecord.self)
        let refusing = BookRecord(id: 1, shelfId: "s", title: "a", refuses: true)
        let negativeZero = BookRecord(id: 2, shelfId: "s", title: "b", shelved: Date(timeIntervalSinceReferenceDate: -0.0))
        func thrown(_ books: [BookRecord]) -> (any Error)? {
            do {
                try shelves.persist(ShelfRecord(id: "s", books: books))
                return nil
            } catch {
                return error
            }
        }
        // The record's own error, as thrown or as the store's error's underlying one.
        func refused(_ error: (any Error)?) -> BookRecord.Refused? {
            error as? BookRecord.Refused ?? (error as? StorageError)?.underlying as? BookRecord.Refused
        }
        let first = thrown([refusing, negativeZero])
        #expect(refused(first) == BookRecord.Refused(id: 1), "\(String(describing: first))")
        let second = thrown([negativeZero, refusing])
        if format == .propertyList {
            #expect((second as? StorageError)?.kind == .invalidArgument, "\(String(describing: second))")
        } else {
            #expect(refused(second) == BookRecord.Refused(id: 1), "\(String(describing: second))")
        }
        #expect(try shelves.count() == 0)
        // Without the -0.0, the refusing child alone.
        let third = thrown([BookRecord(id: 3, shelfId: "s", title: "c"), refusing])
        #expect(refused(third) == BookRecord.Refused(id: 1), "\(String(describing: third))")
        #expect(try shelves.count() == 0)
    }

    @Test("a child naming another parent is refused by the relation's rule")
    func otherParent() throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: .json)
        let shelves = try store.storage(for: ShelfRecord.self)
        #expect {
            try shelves.persist(ShelfRecord(id: "s", books: [
                BookRecord(id: 1, shelfId: "s", title: "a"), BookRecord(id: 2, shelfId: "t", title: "b"),
            ]))
        } throws: { error in
            guard let error = error as? StorageError else { return false }
            return error.kind == .constraint && error.entity == "books"
        }
        try shelves.persist(ShelfRecord(id: "s", books: [BookRecord(id: 1, shelfId: "s", title: "a")]))
        #expect(try store.storage(for: BookRecord.self).read(primaryKey: 1)?.shelfId == "s")
    }

    @Test("property lists: a second spelling of a stored text, in either of two text fields, is refused")
    func spellings() throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: .propertyList)
        let shelves = try store.storage(for: ShelfRecord.self)
        // All NFC: accepted on the one-pass test.
        try shelves.persist(ShelfRecord(id: "s", books: [
            BookRecord(id: 1, shelfId: "s", title: "Zo\u{EB}", subtitle: "caf\u{E9}"),
            BookRecord(id: 2, shelfId: "s", title: "plain"),
        ]))
        for (title, subtitle) in [("Zoe\u{308}", nil), ("x", "cafe\u{301}")] as [(String, String?)] {
            #expect {
                try shelves.persist(ShelfRecord(id: "t", books: [
                    BookRecord(id: 3, shelfId: "t", title: "ok"),
                    BookRecord(id: 4, shelfId: "t", title: title, subtitle: subtitle),
                ]))
            } throws: { error in
                (error as? StorageError)?.kind == .invalidArgument
            }
        }
        #expect(try shelves.count() == 1)
        // An NFD text no stored text is equivalent to is stored as it is.
        try shelves.persist(ShelfRecord(id: "u", books: [BookRecord(id: 5, shelfId: "u", title: "Ame\u{301}lie")]))
        #expect(try store.storage(for: BookRecord.self).read(primaryKey: 5)?.title == "Ame\u{301}lie")
    }
}
