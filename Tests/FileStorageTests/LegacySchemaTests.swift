import DAOCore
import DialogGraph
import FileStorage
import Foundation
import TestSupport
import Testing

/// `users` as a later release might declare it: without `bio`.
struct UserWithoutBio: Record, Equatable {
    typealias PrimaryKey = String
    var id: String
    var name: String
    var email: String?
    var birthDate: Date?
    var gender: Gender?

    static let entity = Entity<UserWithoutBio>(
        "users", primaryKey: "id", \.id,
        fields: [Field("name", \.name), Field("email", \.email), Field("birthDate", \.birthDate), Field("gender", \.gender)],
        indexes: [Index("users_by_email", on: ["email"])])
}

@Suite("File store: a store written before schemas were recorded")
struct LegacySchemaTests {
    /// Writes users, then rewrites the manifest as an earlier version of the
    /// library wrote it: layout version 1, without recorded schemas, store
    /// identity or checksums.
    func legacyStore(_ directory: URL, format: FileFormat, users: [UserRecord]) throws {
        let store = try FileStore(directory: directory, format: format)
        try store.storage(for: UserRecord.self).persist(users)
        store.close()
        let manifestURL = directory.appendingPathComponent("manifest.json")
        var manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as? [String: Any])
        #expect(manifest["schemas"] != nil)
        manifest["schemas"] = nil
        for key in ["storeId", "checksums", "checksum"] { manifest[key] = nil }
        manifest["version"] = 1
        try JSONSerialization.data(withJSONObject: manifest).write(to: manifestURL)
    }

    @Test("a record type that dropped a stored field is refused, and the field's values survive", arguments: FileFormat.allCases)
    func droppedField(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        let users = [
            UserRecord(id: "a", name: "Ann", bio: "likes tea", email: nil, birthDate: nil, gender: .female),
            UserRecord(id: "b", name: "Bob", bio: nil, email: "b@example.com", birthDate: nil, gender: nil),
        ]
        try legacyStore(scratch.url, format: format, users: users)

        let store = try FileStore(directory: scratch.url, format: format)
        let error = #expect(throws: StorageError.self) { _ = try store.storage(for: UserWithoutBio.self) }
        #expect(error?.kind == .schemaMismatch)
        #expect(error?.entity == "users")
        #expect(error?.message.contains("'bio'") == true)
        // The declared type still opens, reads every value, and records its schema.
        #expect(try store.storage(for: UserRecord.self).readAll() == users)
        store.close()
        let reopened = try FileStore(directory: scratch.url, format: format)
        let again = #expect(throws: StorageError.self) { _ = try reopened.storage(for: UserWithoutBio.self) }
        #expect(again?.schemaChanges == [.fieldRemoved(.init(name: "bio", type: .text, optional: true))])
    }
}
