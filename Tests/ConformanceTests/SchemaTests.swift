import DAOCore
import Foundation
import TestSupport
import Testing

/// Opens `backend` at `directory`, runs `body`, and closes the store.
func withOpened<T>(_ backend: TestBackend, at directory: URL, _ body: (any Store) throws -> T) throws -> T {
    let store = try backend.open(directory, .full)
    defer {
        do { try store.close() } catch { Issue.record("closing failed: \(error)") }
    }
    return try body(store)
}

@Suite("Conformance: a changed record type is refused with the same schema mismatch on every backend")
struct SchemaTests {
    typealias FieldSchema = EntitySchema.FieldSchema
    typealias IndexSchema = EntitySchema.IndexSchema

    /// Stores the catalog with the first version of its types, then opens a
    /// storage for `opening` and returns the error, after checking that the
    /// data is still all there with the first version.
    func mismatch<R: Record>(
        _ backend: TestBackend, opening: R.Type, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> StorageError? {
        let directory = try TemporaryDirectory()
        let authors = catalogAuthors()
        let tags = [
            CatalogTag(id: "t1", label: "fiction", weight: 0.5), CatalogTag(id: "t2", label: "poetry", weight: nil),
        ]
        try withOpened(backend, at: directory.url) { store in
            try store.anyStorage(for: CatalogAuthor.self).persist(authors)
            try store.anyStorage(for: CatalogTag.self).persist(tags)
        }
        let error = try withOpened(backend, at: directory.url) { store in
            expectStorageError(sourceLocation: sourceLocation) { _ = try store.anyStorage(for: opening) }
        }
        // Nothing was lost or changed: the first version reads everything back.
        try withOpened(backend, at: directory.url) { (store) throws -> Void in
            #expect(try store.anyStorage(for: CatalogAuthor.self).readAll() == authors, sourceLocation: sourceLocation)
            #expect(try store.anyStorage(for: CatalogBook.self).count() == 6, sourceLocation: sourceLocation)
            #expect(try store.anyStorage(for: CatalogChapter.self).count() == 18, sourceLocation: sourceLocation)
            #expect(try store.anyStorage(for: CatalogTag.self).readAll() == tags, sourceLocation: sourceLocation)
        }
        return error
    }

    /// Checks `error` against the changes expected, and its message against the
    /// one sentence every backend gives.
    func expect(
        _ error: StorageError?, entity: String, _ changes: [SchemaChange], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(error?.kind == .schemaMismatch, sourceLocation: sourceLocation)
        #expect(error?.operation == .open, sourceLocation: sourceLocation)
        #expect(error?.entity == entity, sourceLocation: sourceLocation)
        #expect(error?.schemaChanges == changes, sourceLocation: sourceLocation)
        #expect(error?.message == EntitySchema.mismatch(entity: entity, changes).message, sourceLocation: sourceLocation)
    }

    @Test("a dropped field is named, through the child and through its owner, and no value is lost", arguments: allBackends)
    func droppedField(backend: TestBackend) throws {
        let removed = SchemaChange.fieldRemoved(FieldSchema(name: "subtitle", type: .text, optional: true))
        let direct = try mismatch(backend, opening: BookWithoutSubtitle.self)
        expect(direct, entity: "books", [removed])
        #expect(direct?.message.contains("field 'subtitle' (text?) was removed") == true)
        expect(try mismatch(backend, opening: CatalogAuthorOfBookWithoutSubtitle.self), entity: "books", [removed])
    }

    @Test("added, retyped and newly optional fields and a dropped owner are all named", arguments: allBackends)
    func changedFields(backend: TestBackend) throws {
        expect(
            try mismatch(backend, opening: ChapterChanged.self), entity: "chapters",
            [
                .fieldAdded(FieldSchema(name: "title", type: .text, optional: false)),
                .fieldChanged(
                    from: FieldSchema(name: "text", type: .text, optional: false),
                    to: FieldSchema(name: "text", type: .text, optional: true)),
                .fieldChanged(
                    from: FieldSchema(name: "wordCount", type: .integer, optional: true),
                    to: FieldSchema(name: "wordCount", type: .real, optional: true)),
                .ownerChanged(from: "books", to: nil),
            ])
    }

    @Test("a removed, changed or added index, reordered fields and another primary key are named", arguments: allBackends)
    func indexesAndKeys(backend: TestBackend) throws {
        let index = IndexSchema(name: "tags_by_label_weight", fields: ["label", "weight"])
        expect(try mismatch(backend, opening: TagWithoutIndex.self), entity: "tags", [.indexRemoved(index)])
        expect(
            try mismatch(backend, opening: TagWithOtherIndexes.self), entity: "tags",
            [
                .indexChanged(from: index, to: IndexSchema(name: "tags_by_label_weight", fields: ["weight", "label"])),
                .indexAdded(IndexSchema(name: "tags_by_weight", fields: ["weight"])),
            ])
        expect(
            try mismatch(backend, opening: TagReordered.self), entity: "tags",
            [.fieldsReordered(from: ["id", "label", "weight"], to: ["id", "weight", "label"])])
        expect(
            try mismatch(backend, opening: TagKeyedByLabel.self), entity: "tags",
            [
                .primaryKeyChanged(from: "id", to: "label"),
                .fieldsReordered(from: ["id", "label", "weight"], to: ["label", "id", "weight"]),
            ])
    }

    @Test("the schema is recorded when a storage is first opened, before anything is written", arguments: allBackends)
    func recordedAtOpen(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        try withOpened(backend, at: directory.url) { store in
            _ = try store.anyStorage(for: CatalogTag.self)
        }
        try withOpened(backend, at: directory.url) { (store) throws -> Void in
            let error = expectStorageError { _ = try store.anyStorage(for: TagWithoutIndex.self) }
            expect(error, entity: "tags", [.indexRemoved(IndexSchema(name: "tags_by_label_weight", fields: ["label", "weight"]))])
            // The declared type still opens, and works.
            let tags = try store.anyStorage(for: CatalogTag.self)
            try tags.persist(CatalogTag(id: "a", label: "b", weight: 0.5))
            #expect(try tags.count() == 1)
        }
    }

    @Test("the same record types reopen with their data, on every backend", arguments: allBackends)
    func sameTypesReopen(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let authors = catalogAuthors()
        try withOpened(backend, at: directory.url) { store in
            try store.anyStorage(for: CatalogChapter.self).persist([])
            try store.anyStorage(for: CatalogAuthor.self).persist(authors)
        }
        try withOpened(backend, at: directory.url) { (store) throws -> Void in
            // A child first, then its owner: the order of opening does not matter.
            let chapters = try store.anyStorage(for: CatalogChapter.self)
            #expect(try chapters.count(where: #Predicate { $0.wordCount == nil }) == 6)
            #expect(try store.anyStorage(for: CatalogAuthor.self).readAll() == authors)
        }
    }
}
