import DAOCore
import Foundation
import TestSupport
import Testing

// A parent that gains a relation in the app's next release (a new child
// entity with a child and an index of its own) is migrated by the lightweight
// step on every backend; a relation removed takes the explicit
// `.dropRelation`, which erases what it held.

/// The catalog's authors, second release: they hold labels too.
struct LabelledAuthor: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var country: String?
    var books: [CatalogBook]
    var labels: [AuthorLabel]

    static let entity = Entity<LabelledAuthor>(
        "authors", primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("country", \.country)],
        relations: [
            Relation("books", \.books, foreignKey: "authorId", \CatalogBook.authorId),
            Relation("labels", \.labels, foreignKey: "authorId", \AuthorLabel.authorId),
        ])
}

/// A new child entity, with an index and a child entity of its own.
struct AuthorLabel: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var authorId: String
    var text: String
    var rank: Int64?
    var notes: [LabelNote]

    static let entity = Entity<AuthorLabel>(
        "author_labels", primaryKey: "id", \.id,
        fields: [Field("authorId", \.authorId), Field("text", \.text), Field("rank", \.rank)],
        indexes: [Index("author_labels_by_text", on: ["text"])],
        relations: [Relation("notes", \.notes, foreignKey: "labelId", \LabelNote.labelId)],
        ownedBy: LabelledAuthor.self)
}

struct LabelNote: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var labelId: String
    var body: String

    static let entity = Entity<LabelNote>(
        "label_notes", primaryKey: "id", \.id,
        fields: [Field("labelId", \.labelId), Field("body", \.body)],
        indexes: [Index("label_notes_by_body", on: ["body"])],
        ownedBy: AuthorLabel.self)
}

/// Authors whose new relation holds `tags`, an entity the store holds already
/// (top-level, in the seeded catalog).
struct AuthorHoldingTags: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var country: String?
    var books: [CatalogBook]
    var tags: [OwnedTag]

    static let entity = Entity<AuthorHoldingTags>(
        "authors", primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("country", \.country)],
        relations: [
            Relation("books", \.books, foreignKey: "authorId", \CatalogBook.authorId),
            Relation("tags", \.tags, foreignKey: "authorId", \OwnedTag.authorId),
        ])
}

struct OwnedTag: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var authorId: String

    static let entity = Entity<OwnedTag>("tags", primaryKey: "id", \.id, fields: [Field("authorId", \.authorId)])
}

/// Authors holding a child type that does not name its owner.
struct PlainLabelledAuthor: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var country: String?
    var books: [CatalogBook]
    var marks: [PlainMark]

    static let entity = Entity<PlainLabelledAuthor>(
        "authors", primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("country", \.country)],
        relations: [
            Relation("books", \.books, foreignKey: "authorId", \CatalogBook.authorId),
            Relation("marks", \.marks, foreignKey: "authorId", \PlainMark.authorId),
        ])
}

struct PlainMark: Record, Equatable {
    typealias PrimaryKey = Int64
    var id: Int64
    var authorId: String
    var score: Double

    static let entity = Entity<PlainMark>(
        "marks", primaryKey: "id", \.id, fields: [Field("authorId", \.authorId), Field("score", \.score)],
        indexes: [Index("marks_by_score", on: ["score"])])
}

@Suite("Conformance: a relation added or removed in a migration, the same on every backend")
struct MigrationRelationTests {
    let catalog = MigrationTests()

    func labelled(_ author: CatalogAuthor, _ labels: [AuthorLabel] = []) -> LabelledAuthor {
        LabelledAuthor(id: author.id, name: author.name, country: author.country, books: author.books, labels: labels)
    }

    /// Two labels of `author`, one with two notes.
    func labels(of author: String) -> [AuthorLabel] {
        [
            AuthorLabel(
                id: "\(author)-l1", authorId: author, text: "classic", rank: 1,
                notes: [
                    LabelNote(id: 10, labelId: "\(author)-l1", body: "first 🚀"),
                    LabelNote(id: 11, labelId: "\(author)-l1", body: "second"),
                ]),
            AuthorLabel(id: "\(author)-l2", authorId: author, text: "nul\u{0}label", rank: nil, notes: []),
        ]
    }

    /// The seeded catalog migrated to ``LabelledAuthor`` by the lightweight step.
    func migratedToLabels(_ backend: TestBackend) throws -> TemporaryDirectory {
        let directory = try catalog.seeded(backend)
        var migrator = Migrator()
        migrator.register("v2: authors have labels", [.lightweight(to: LabelledAuthor.self)])
        try catalog.opened(backend, directory) { (store) throws in
            #expect(try migrator.migrate(store) == ["v2: authors have labels"])
        }
        return directory
    }

    @Test("lightweight: a parent gains a relation to a new child entity (with its own child and indexes)", arguments: allBackends)
    func relationAdded(backend: TestBackend) throws {
        let directory = try migratedToLabels(backend)
        let authors = catalog.authors
        // Existing authors read back intact, with no labels.
        try catalog.opened(backend, directory) { (store) throws in
            #expect(try Migrator.state(of: store).version == 1)
            let storage = try store.anyStorage(for: LabelledAuthor.self)
            #expect(try storage.readAll() == authors.map { labelled($0) }, "on \(backend.name)")
            #expect(try storage.count(where: #Predicate { $0.labels.isEmpty }) == 3)
            #expect(try store.anyStorage(for: CatalogTag.self).readAll() == catalog.tags)
            #expect(try store.anyStorage(for: AuthorLabel.self).count() == 0)
            // Later writes store labels and their notes.
            try storage.persist([labelled(authors[1], labels(of: authors[1].id))])
        }
        try catalog.opened(backend, directory) { (store) throws in
            let storage = try store.anyStorage(for: LabelledAuthor.self)
            let expected = authors.enumerated().map { labelled($1, $0 == 1 ? labels(of: $1.id) : []) }
            #expect(try storage.readAll() == expected, "on \(backend.name)")
            #expect(try storage.count(where: #Predicate { $0.labels.isEmpty }) == 2)
            let withLabels = try storage.read(where: #Predicate { !$0.labels.isEmpty })
            #expect(withLabels.map(\.id) == [authors[1].id])
            let labelStorage = try store.anyStorage(for: AuthorLabel.self)
            #expect(try labelStorage.count(where: #Predicate { $0.text == "classic" }) == 1)
            #expect(try labelStorage.count(where: #Predicate { $0.notes.isEmpty }) == 1)
            #expect(try store.anyStorage(for: LabelNote.self).count(where: #Predicate { $0.body == "second" }) == 1)
            // The old release's type is refused: the store moved on.
            #expect(expectStorageError { _ = try store.anyStorage(for: CatalogAuthor.self) }?.kind == .schemaMismatch)
        }
    }

    @Test("lightweight: a relation to a new child type that does not name its owner", arguments: allBackends)
    func relationAddedUnowned(backend: TestBackend) throws {
        let directory = try catalog.seeded(backend)
        let authors = catalog.authors
        var migrator = Migrator()
        migrator.register("v2", [.lightweight(to: PlainLabelledAuthor.self)])
        func plain(_ author: CatalogAuthor, _ marks: [PlainMark]) -> PlainLabelledAuthor {
            PlainLabelledAuthor(id: author.id, name: author.name, country: author.country, books: author.books, marks: marks)
        }
        let marks = [PlainMark(id: 1, authorId: authors[2].id, score: 2.5), PlainMark(id: 2, authorId: authors[2].id, score: 1)]
        try catalog.opened(backend, directory) { (store) throws in
            #expect(try migrator.migrate(store) == ["v2"])
            let storage = try store.anyStorage(for: PlainLabelledAuthor.self)
            #expect(try storage.readAll() == authors.map { plain($0, []) }, "on \(backend.name)")
            try storage.persist([plain(authors[2], marks)])
        }
        try catalog.opened(backend, directory) { (store) throws in
            let storage = try store.anyStorage(for: PlainLabelledAuthor.self)
            #expect(try storage.readAll() == authors.enumerated().map { plain($1, $0 == 2 ? marks : []) }, "on \(backend.name)")
            #expect(try storage.count(where: #Predicate { $0.marks.isEmpty }) == 2)
            #expect(try store.anyStorage(for: PlainMark.self).count(where: #Predicate { $0.score > 2 }) == 1)
        }
    }

    @Test("a failed migration that adds a relation applies nothing; the same one without the failure then does", arguments: allBackends)
    func relationAddedAtomically(backend: TestBackend) throws {
        let directory = try catalog.seeded(backend)
        var failing = Migrator()
        failing.register(
            "v2",
            [
                .lightweight(to: LabelledAuthor.self),
                .changeField("title", in: "books", to: .text, optional: false) { _ in throw MigrationTestFailure() },
            ])
        try catalog.opened(backend, directory) { (store) throws in
            #expect(expectStorageError { try failing.migrate(store) }?.message.contains("migration 'v2'") == true)
        }
        try catalog.opened(backend, directory) { (store) throws in
            #expect(try Migrator.state(of: store).applied == [])
            #expect(expectStorageError { _ = try store.anyStorage(for: LabelledAuthor.self) }?.kind == .schemaMismatch)
            #expect(try store.anyStorage(for: CatalogAuthor.self).readAll() == catalog.authors)
        }
        var migrator = Migrator()
        migrator.register("v2", [.lightweight(to: LabelledAuthor.self)])
        try catalog.opened(backend, directory) { (store) throws in
            #expect(try migrator.migrate(store) == ["v2"])
            #expect(try store.anyStorage(for: LabelledAuthor.self).readAll() == catalog.authors.map { labelled($0) })
        }
    }

    @Test("lightweight refuses a removed relation, naming .dropRelation, which erases it", arguments: allBackends)
    func relationRemoved(backend: TestBackend) throws {
        let directory = try migratedToLabels(backend)
        let authors = catalog.authors
        let stored = authors.enumerated().map { labelled($1, $0 == 0 ? labels(of: $1.id) : []) }
        try catalog.opened(backend, directory) { (store) throws in
            try store.anyStorage(for: LabelledAuthor.self).persist(stored)
        }
        var migrator = Migrator()
        migrator.register("v2: authors have labels", [.lightweight(to: LabelledAuthor.self)])
        migrator.register("v3: no labels", [.lightweight(to: CatalogAuthor.self)])
        try catalog.opened(backend, directory) { (store) throws in
            let error = expectStorageError { try migrator.migrate(store) }
            #expect(error?.kind == .schemaMismatch)
            #expect(error?.schemaChanges == [.relationRemoved(.init(name: "labels", child: "author_labels", foreignKey: "authorId"))])
            #expect(error?.message.contains(#".dropRelation("labels", from: "authors")"#) == true, "\(String(describing: error))")
            // One sentence, not two parenthetical notes in a row.
            #expect(
                error?.message == "migration 'v3: no labels': lightweight migration cannot infer this change: relation "
                    + "'labels' (author_labels by "
                    + #"authorId) was removed, which would erase its children: write .dropRelation("labels", from: "authors") for it"#)
        }
        try catalog.opened(backend, directory) { (store) throws in
            #expect(try Migrator.state(of: store).version == 1)
            #expect(try store.anyStorage(for: LabelledAuthor.self).readAll() == stored)
        }
        // The explicit step erases the labels and their notes.
        var dropping = Migrator()
        dropping.register("v2: authors have labels", [.lightweight(to: LabelledAuthor.self)])
        dropping.register("v3: no labels", [.dropRelation("labels", from: "authors")])
        try catalog.opened(backend, directory) { (store) throws in
            #expect(try dropping.migrate(store) == ["v3: no labels"])
        }
        try catalog.opened(backend, directory) { (store) throws in
            #expect(try store.anyStorage(for: CatalogAuthor.self).readAll() == authors, "on \(backend.name)")
            #expect(try store.anyStorage(for: CatalogTag.self).readAll() == catalog.tags)
        }
        // Added again, the relation starts empty: nothing of the old labels is left.
        dropping.register("v4: labels again", [.lightweight(to: LabelledAuthor.self)])
        try catalog.opened(backend, directory) { (store) throws in
            #expect(try dropping.migrate(store) == ["v4: labels again"])
            #expect(try store.anyStorage(for: LabelledAuthor.self).readAll() == authors.map { labelled($0) }, "on \(backend.name)")
            #expect(try store.anyStorage(for: LabelNote.self).count() == 0)
        }
    }

    @Test("lightweight refuses a relation to a child entity the store holds already, and applies nothing", arguments: allBackends)
    func relationToStoredEntity(backend: TestBackend) throws {
        let directory = try catalog.seeded(backend)
        var migrator = Migrator()
        migrator.register("v2", [.lightweight(to: AuthorHoldingTags.self)])
        try catalog.opened(backend, directory) { (store) throws in
            let error = expectStorageError { try migrator.migrate(store) }
            #expect(error?.kind == .schemaMismatch)
            #expect(error?.message.contains("the store holds 'tags' already") == true, "\(String(describing: error))")
            #expect(error?.message.contains(") (") == false, "\(String(describing: error))")
        }
        try catalog.expectUnchanged(backend, directory)
    }

    @Test("lightweight refuses a relation to a child entity another owner holds (one holder per child)", arguments: allBackends)
    func relationToHeldEntity(backend: TestBackend) throws {
        try ChildHoldersMigrationTests().refused(
            backend, seed: [PlainVisit(id: "v1", day: 3)], [.lightweight(to: HeldVisit.self)])
    }
}
