import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

struct MigrationTestFailure: Error {}

@Suite("Conformance: migrations change a stored record type the same way on every backend")
struct MigrationTests {
    let authors = catalogAuthors()
    let tags = [
        CatalogTag(id: "t1", label: "fiction", weight: 0.5), CatalogTag(id: "t2", label: "poetry", weight: nil),
        CatalogTag(id: "t3", label: "nul\u{0}and 🚀", weight: 0.0),
    ]

    /// A store holding the catalog (three levels) and the tags, first version.
    func seeded(_ backend: TestBackend) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        try opened(backend, directory) { (store) throws in
            try store.anyStorage(for: CatalogAuthor.self).persist(authors)
            try store.anyStorage(for: CatalogTag.self).persist(tags)
        }
        return directory
    }

    func opened<T>(_ backend: TestBackend, _ directory: TemporaryDirectory, _ body: (any MigratableStore) throws -> T)
        throws -> T
    {
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        return try body(store)
    }

    /// Migrates with `steps` as one migration, then reopens the store and returns
    /// what `read` reads (checking that a second run applies nothing).
    func migrated<T>(
        _ backend: TestBackend, _ steps: [MigrationStep], read: (any Store) throws -> T
    ) throws -> T {
        let directory = try seeded(backend)
        var migrator = Migrator()
        migrator.register("v2", steps)
        try opened(backend, directory) { (store) throws in
            #expect(try migrator.migrate(store) == ["v2"])
        }
        return try opened(backend, directory) { (store) throws in
            #expect(try migrator.migrate(store) == [])
            #expect(try Migrator.state(of: store) == MigrationState(applied: ["v2"]))
            return try read(store)
        }
    }

    /// The books and chapters, untouched by a step on `authors`.
    func books(of author: CatalogAuthor) -> [CatalogBook] { author.books }

    @Test("add a field with a default", arguments: allBackends)
    func addField(backend: TestBackend) throws {
        let read = try migrated(
            backend, [.addField("born", to: "authors", type: .integer, optional: false, default: .integer(1900))]
        ) { try $0.anyStorage(for: AuthorBorn.self).readAll() }
        #expect(read == authors.map { AuthorBorn(id: $0.id, name: $0.name, country: $0.country, born: 1900, books: $0.books) })
    }

    @Test("add an optional field with a value in every record", arguments: allBackends)
    func addOptionalFieldWithValue(backend: TestBackend) throws {
        let read = try migrated(
            backend, [.addField("color", to: "tags", type: .text, optional: true, default: .text("red"))]
        ) { (store) throws in
            let tags = try store.anyStorage(for: TagColored.self)
            try tags.persist(TagColored(id: "t4", label: "new", weight: nil, color: nil))
            #expect(try tags.count(where: #Predicate { $0.color == nil }) == 1)
            return try tags.read(where: #Predicate { $0.color != nil })
        }
        #expect(read == tags.map { TagColored(id: $0.id, label: $0.label, weight: $0.weight, color: "red") })
    }

    @Test("add a field whose default has no SQL literal (a real, text with NUL)", arguments: allBackends)
    func addFieldOddDefault(backend: TestBackend) throws {
        let read = try migrated(
            backend,
            [
                .addField("born", to: "authors", type: .integer, optional: false, default: .integer(-7)),
                .dropField("born", from: "authors"),
                .addField("born", to: "authors", type: .integer, optional: false, default: .integer(Int64.min)),
            ]
        ) { try $0.anyStorage(for: AuthorBorn.self).readAll() }
        #expect(read.map(\.born) == [Int64.min, Int64.min, Int64.min])
        let tagsRead = try migrated(
            backend,
            [
                .dropIndex("tags_by_label_weight", from: "tags"), .dropField("label", from: "tags"),
                .addField("label", to: "tags", type: .text, optional: false, default: .text("a\u{0}b 'q'")),
                .addIndex("tags_by_label_weight", on: ["label", "weight"], to: "tags"),
                .changeField("weight", in: "tags", to: .real, optional: true) { _ in .real(0.1) },
            ]
        ) { try $0.anyStorage(for: TagReordered.self).readAll() }
        #expect(tagsRead.map(\.label) == ["a\u{0}b 'q'", "a\u{0}b 'q'", "a\u{0}b 'q'"])
        #expect(tagsRead.map(\.weight) == [0.1, 0.1, 0.1])
    }

    @Test("drop a field", arguments: allBackends)
    func dropField(backend: TestBackend) throws {
        let read = try migrated(backend, [.dropField("country", from: "authors")]) {
            try $0.anyStorage(for: AuthorNoCountry.self).readAll()
        }
        #expect(read == authors.map { AuthorNoCountry(id: $0.id, name: $0.name, books: $0.books) })
    }

    @Test("rename a field", arguments: allBackends)
    func renameField(backend: TestBackend) throws {
        let read = try migrated(backend, [.renameField("name", to: "fullName", in: "authors")]) { (store) throws in
            let authors = try store.anyStorage(for: AuthorFullName.self)
            #expect(try authors.read(where: #Predicate { $0.fullName == "李雷" }).map(\.id) == ["author-3"])
            return try authors.readAll()
        }
        #expect(read == authors.map { AuthorFullName(id: $0.id, fullName: $0.name, country: $0.country, books: $0.books) })
    }

    @Test("change a field's type through a closure", arguments: allBackends)
    func changeField(backend: TestBackend) throws {
        let read = try migrated(
            backend,
            [
                .changeField("country", in: "authors", to: .integer, optional: true) { value in
                    value == .text("FR") ? .integer(33) : .null
                }
            ]
        ) { try $0.anyStorage(for: AuthorCountryCode.self).readAll() }
        #expect(
            read
                == authors.map {
                    AuthorCountryCode(id: $0.id, name: $0.name, country: $0.country == nil ? nil : 33, books: $0.books)
                })
    }

    @Test("rename an entity; add and drop an index", arguments: allBackends)
    func entityAndIndexes(backend: TestBackend) throws {
        let labels = try migrated(backend, [.renameEntity("tags", to: "labels")]) { (store) throws in
            let labels = try store.anyStorage(for: LabelTag.self)
            #expect(try labels.count(where: #Predicate { $0.label == "poetry" }) == 1)
            // The old name is free: a new, empty entity.
            #expect(try store.anyStorage(for: CatalogTag.self).count() == 0)
            return try labels.readAll()
        }
        #expect(labels == tags.map { LabelTag(id: $0.id, label: $0.label, weight: $0.weight) })
        let indexed = try migrated(backend, [.addIndex("tags_by_weight", on: ["weight"], to: "tags")]) { (store) throws in
            let tags = try store.anyStorage(for: TagWithWeightIndex.self)
            #expect(try tags.read(where: #Predicate { $0.weight == 0.5 }).map(\.id) == ["t1"])
            return try tags.readAll()
        }
        #expect(indexed.map(\.id) == tags.map(\.id))
        let dropped = try migrated(backend, [.dropIndex("tags_by_label_weight", from: "tags")]) {
            try $0.anyStorage(for: TagWithoutIndex.self).readAll()
        }
        #expect(dropped == tags.map { TagWithoutIndex(id: $0.id, label: $0.label, weight: $0.weight) })
    }

    @Test("the general step rewrites each record with its children (three levels)", arguments: allBackends)
    func generalStep(backend: TestBackend) throws {
        let read = try migrated(
            backend,
            [
                .rewrite("authors", to: AuthorV2.self) { author in
                    author.children["books"] = try (author.children["books"] ?? []).map { book in
                        var book = book
                        guard case .integer(let year) = book["year"] else { throw MigrationTestFailure() }
                        book["published"] = .real(Date(timeIntervalSince1970: Double(year - 1970) * 31_556_952).timeIntervalSinceReferenceDate)
                        book.values["year"] = nil
                        book.children["chapters"] = try (book.children["chapters"] ?? []).map { chapter in
                            var chapter = chapter
                            guard case .text(let text) = chapter["text"] else { throw MigrationTestFailure() }
                            chapter["words"] = .integer(Int64(text.count))
                            return chapter
                        }
                        return book
                    }
                }
            ]
        ) { (store) throws in
            // A child storage opened on its own reads the same children.
            let chapters = try store.anyStorage(for: ChapterV2.self)
            #expect(try chapters.count() == 18)
            #expect(try chapters.read(primaryKey: "book-2-1-3")?.words == 30)
            let authors = try store.anyStorage(for: AuthorV2.self)
            let read = try authors.readAll()
            // The migrated store takes writes and erases with their children.
            var changed = read[0]
            changed.books[0].chapters.removeLast()
            changed.books[0].published = Date(timeIntervalSinceReferenceDate: 0)
            try authors.persist(changed)
            #expect(try chapters.count() == 17)
            #expect(try store.anyStorage(for: BookV2.self).count(where: #Predicate { $0.authorId == "author-1" }) == 2)
            #expect(try authors.erase(primaryKey: "author-2"))
            #expect(try chapters.count() == 11)
            #expect(try authors.read(primaryKey: "author-1") == changed)
            return read
        }
        let expected = authors.map { author in
            AuthorV2(
                id: author.id, name: author.name, country: author.country,
                books: author.books.map { book in
                    BookV2(
                        id: book.id, authorId: book.authorId, title: book.title, subtitle: book.subtitle,
                        published: Date(timeIntervalSince1970: Double(book.year - 1970) * 31_556_952),
                        chapters: book.chapters.map {
                            ChapterV2(
                                id: $0.id, bookId: $0.bookId, number: $0.number, text: $0.text, wordCount: $0.wordCount,
                                words: Int64($0.text.count))
                        })
                })
        }
        #expect(read == expected)
    }

    @Test("lightweight migration: dropped field, added optional field, added index", arguments: allBackends)
    func lightweight(backend: TestBackend) throws {
        let read = try migrated(backend, [.lightweight(to: AuthorLight.self), .lightweight(to: TagWithoutIndex.self)]) { (store) throws in
            let authors = try store.anyStorage(for: AuthorLight.self)
            #expect(try authors.count(where: #Predicate { $0.website == nil }) == 3)
            #expect(try store.anyStorage(for: TagWithoutIndex.self).count(where: #Predicate { $0.label == "poetry" }) == 1)
            return try authors.readAll()
        }
        #expect(read == authors.map { AuthorLight(id: $0.id, name: $0.name, website: nil, books: $0.books) })
    }

    @Test("lightweight migration refuses what it cannot infer, and applies nothing", arguments: allBackends)
    func lightweightRefuses(backend: TestBackend) throws {
        let directory = try seeded(backend)
        var migrator = Migrator()
        migrator.register("v2", [.lightweight(to: AuthorLight.self), .lightweight(to: TagReordered.self)])
        try opened(backend, directory) { (store) throws in
            let error = expectStorageError { try migrator.migrate(store) }
            #expect(error?.kind == .schemaMismatch)
            #expect(error?.schemaChanges == [.fieldsReordered(from: ["id", "label", "weight"], to: ["id", "weight", "label"])])
            #expect(
                error?.message == "migration 'v2': lightweight migration cannot infer this change: the fields were reordered from "
                    + "(id, label, weight) to (id, weight, label); write a migration step for it")
        }
        try expectUnchanged(backend, directory)
    }

    /// The first version still reads everything, the changed types are still
    /// refused, and no migration is recorded.
    func expectUnchanged(_ backend: TestBackend, _ directory: TemporaryDirectory, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try opened(backend, directory) { (store) throws in
            #expect(try Migrator.state(of: store).applied == [], sourceLocation: sourceLocation)
            #expect(
                expectStorageError { _ = try store.anyStorage(for: AuthorLight.self) }?.kind == .schemaMismatch,
                sourceLocation: sourceLocation)
            #expect(
                expectStorageError { _ = try store.anyStorage(for: AuthorBorn.self) }?.kind == .schemaMismatch,
                sourceLocation: sourceLocation)
            #expect(try store.anyStorage(for: CatalogAuthor.self).readAll() == authors, sourceLocation: sourceLocation)
            #expect(try store.anyStorage(for: CatalogTag.self).readAll() == tags, sourceLocation: sourceLocation)
        }
    }

    @Test("a failure in the middle applies nothing, in an earlier migration either", arguments: allBackends)
    func failureInTheMiddle(backend: TestBackend) throws {
        let directory = try seeded(backend)
        var migrator = Migrator()
        migrator.register("v2", [.addField("born", to: "authors", type: .integer, optional: false, default: .integer(1))])
        migrator.register(
            "v3",
            [
                .renameEntity("tags", to: "labels"),
                .dropField("country", from: "authors"),
                .changeField("name", in: "authors", to: .text, optional: false) { value in
                    if value == .text("李雷") { throw MigrationTestFailure() }
                    return value
                },
            ])
        try opened(backend, directory) { (store) throws in
            let error = expectStorageError { try migrator.migrate(store) }
            #expect(error?.message.contains("migration 'v3'") == true)
        }
        try expectUnchanged(backend, directory)
        // A value of the wrong type is refused the same way.
        var wrongType = Migrator()
        wrongType.register("v2", [.addField("born", to: "authors", type: .integer, optional: false, default: .text("x"))])
        try opened(backend, directory) { (store) throws in
            #expect(expectStorageError { try wrongType.migrate(store) }?.kind == .schemaMismatch)
        }
        try expectUnchanged(backend, directory)
    }

    @Test("a store with a migration this build does not know is refused", arguments: allBackends)
    func unknownMigration(backend: TestBackend) throws {
        let directory = try seeded(backend)
        var newer = Migrator()
        newer.register("v2", [.addIndex("authors_by_name", on: ["name"], to: "authors")])
        newer.register("v3", [.addField("born", to: "authors", type: .integer, optional: true)])
        try opened(backend, directory) { (store) throws in
            #expect(try newer.migrate(store) == ["v2", "v3"])
        }
        var older = Migrator()
        older.register("v2", [.addIndex("authors_by_name", on: ["name"], to: "authors")])
        try opened(backend, directory) { (store) throws in
            let error = expectStorageError { try older.migrate(store) }
            #expect(error?.kind == .schemaMismatch)
            #expect(error?.message.contains("'v3'") == true)
            #expect(try Migrator.state(of: store) == MigrationState(applied: ["v2", "v3"]))
        }
        var reordered = Migrator()
        reordered.register("v3", [.addField("born", to: "authors", type: .integer, optional: true)])
        reordered.register("v2", [.addIndex("authors_by_name", on: ["name"], to: "authors")])
        try opened(backend, directory) { (store) throws in
            let error = expectStorageError { try reordered.migrate(store) }
            #expect(error?.kind == .schemaMismatch)
            #expect(error?.message.contains("another order") == true)
        }
    }

    @Test("a migration must come before the first storage", arguments: allBackends)
    func migrateFirst(backend: TestBackend) throws {
        let directory = try seeded(backend)
        var migrator = Migrator()
        migrator.register("v2", [.dropField("country", from: "authors")])
        try opened(backend, directory) { (store) throws in
            _ = try store.anyStorage(for: CatalogTag.self)
            #expect(expectStorageError { try migrator.migrate(store) }?.kind == .invalidArgument)
        }
        try opened(backend, directory) { (store) throws in
            // A refused storage does not count: the app may try, then migrate.
            #expect(expectStorageError { _ = try store.anyStorage(for: AuthorNoCountry.self) }?.kind == .schemaMismatch)
            #expect(try migrator.migrate(store) == ["v2"])
            #expect(try store.anyStorage(for: AuthorNoCountry.self).count() == 3)
        }
    }

    @Test("rename a child entity and its foreign key (three levels)", arguments: allBackends)
    func renameChild(backend: TestBackend) throws {
        let read = try migrated(
            backend, [.renameEntity("chapters", to: "sections"), .renameField("bookId", to: "book", in: "sections")]
        ) { (store) throws in
            let sections = try store.anyStorage(for: SectionS.self)
            #expect(try sections.count(where: #Predicate { $0.book == "book-1-2" }) == 3)
            let authors = try store.anyStorage(for: AuthorS.self)
            let read = try authors.readAll()
            var changed = read[2]
            changed.books[1].chapters[0].text = "changed"
            try authors.persist(changed)
            #expect(try sections.read(primaryKey: "book-3-2-1")?.text == "changed")
            #expect(try authors.erase(primaryKey: "author-3"))
            #expect(try sections.count() == 12)
            return read
        }
        #expect(
            read
                == authors.map { author in
                    AuthorS(
                        id: author.id, name: author.name, country: author.country,
                        books: author.books.map { book in
                            BookS(
                                id: book.id, authorId: book.authorId, title: book.title, subtitle: book.subtitle,
                                year: book.year,
                                chapters: book.chapters.map {
                                    SectionS(id: $0.id, book: $0.bookId, number: $0.number, text: $0.text, wordCount: $0.wordCount)
                                })
                        })
                })
    }

    @Test("rename the middle entity of three levels: its owner and its children follow", arguments: allBackends)
    func renameMiddle(backend: TestBackend) throws {
        let read = try migrated(backend, [.renameEntity("books", to: "volumes")]) { (store) throws in
            // The leaf first: it finds its renamed owner.
            let chapters = try store.anyStorage(for: ChapterOfVolume.self)
            #expect(try chapters.count() == 18)
            let authors = try store.anyStorage(for: AuthorOfVolumes.self)
            let read = try authors.readAll()
            // Erasing cascades through the renamed entity; a child written on
            // its own must name an existing volume.
            #expect(try store.anyStorage(for: Volume.self).erase(primaryKey: "book-1-1"))
            #expect(try chapters.count() == 15)
            let orphan = ChapterOfVolume(id: "x", bookId: "book-1-1", number: 1, text: "", wordCount: nil)
            #expect(expectStorageError { try chapters.persist(orphan) }?.kind == .constraint)
            try chapters.persist(ChapterOfVolume(id: "x", bookId: "book-1-2", number: 9, text: "new", wordCount: 1))
            #expect(try authors.read(primaryKey: "author-1")?.books.first?.chapters.last?.id == "x")
            return read
        }
        #expect(
            read
                == authors.map { author in
                    AuthorOfVolumes(
                        id: author.id, name: author.name, country: author.country,
                        books: author.books.map { book in
                            Volume(
                                id: book.id, authorId: book.authorId, title: book.title, subtitle: book.subtitle,
                                year: book.year,
                                chapters: book.chapters.map {
                                    ChapterOfVolume(
                                        id: $0.id, bookId: $0.bookId, number: $0.number, text: $0.text, wordCount: $0.wordCount)
                                })
                        })
                })
    }

    @Test("every storage class survives a rewrite bit for bit", arguments: allBackends)
    func everyStorageClass(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        // What the engine reads back before the migration (each engine's own
        // rules apply; docs/SEMANTICS.md) is what it must read after.
        try opened(backend, directory) { store in
            try store.anyStorage(for: SampleV1.self).persist(samples())
        }
        let stored = try opened(backend, directory) { try $0.anyStorage(for: SampleV1.self).readAll() }
        #expect(stored.map(\.id) == samples().map(\.id))
        var migrator = Migrator()
        migrator.register(
            "v2",
            [
                .addField("checked", to: "samples", type: .bool, optional: false, default: .integer(1)),
                .renameField("note", to: "memo", in: "samples"),
                // A no-op retyping forces every engine to rewrite every value.
                .changeField("payload", in: "samples", to: .blob, optional: false) { $0 },
            ])
        try opened(backend, directory) { (store) throws in
            #expect(try migrator.migrate(store) == ["v2"])
        }
        try opened(backend, directory) { (store) throws in
            let samples = try store.anyStorage(for: SampleV2.self)
            let read = try samples.readAll()
            #expect(read.map(\.id) == stored.map(\.id))
            #expect(read.map(\.amount.bitPattern) == stored.map(\.amount.bitPattern))
            #expect(read.map(\.at) == stored.map(\.at))
            #expect(read.map(\.payload) == stored.map(\.payload))
            #expect(read.map(\.memo) == stored.map(\.note))
            #expect(read.map(\.extra) == stored.map(\.extra))
            #expect(read.map(\.flag) == stored.map(\.flag))
            #expect(read.map(\.checked) == stored.map { _ in true })
            #expect(try samples.read(where: #Predicate { $0.amount == 42 }).map(\.id) == [2])
        }
    }
}

@Suite("Conformance: the example domain's second message version")
struct DialogGraphMigrationTests {
    @Test("a store of the first version migrates to MessageRecordV2 on every backend", arguments: allBackends)
    func messagesGainReactionCount(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        var dialogs: [DialogRecord] = []
        for d in Int64(1)...4 {
            var messages: [MessageRecord] = []
            for m in Int64(1)...5 {
                messages.append(messageRecord(d * 100 + m, dialog: d, text: "m\(m) 🚀"))
            }
            dialogs.append(DialogRecord(id: d, isPinned: d == 2, messages: messages))
        }
        do {
            let store = try backend.open(directory.url)
            try store.anyStorage(for: DialogRecord.self).persist(dialogs)
            try store.close()
        }
        let store = try backend.open(directory.url)
        defer {
            do { try store.close() } catch { Issue.record("closing failed: \(error)") }
        }
        #expect(try DialogGraphMigrations.migrator.migrate(store) == [DialogGraphMigrations.reactionCount])
        let read = try store.anyStorage(for: DialogRecordV2.self).readAll()
        #expect(
            read
                == dialogs.map { dialog in
                    DialogRecordV2(
                        id: dialog.id, isPinned: dialog.isPinned,
                        messages: dialog.messages.map { MessageRecordV2($0, reactionCount: 0) })
                })
    }
}
