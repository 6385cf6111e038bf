import DAOCore
import DialogGraph
@testable import FileStorage
import Foundation
import TestSupport
import Testing

/// The store removes only files it can prove it wrote, and never takes a
/// directory whose manifest is lost for an empty store.
@Suite("File store: what the store owns")
struct OwnershipTests {
    /// Files a user might keep in the same directory, some shaped like the
    /// documents of layout version 1.
    static let userFiles = ["backup-2024.json", "notes-1.plist", "dialogs-99.json", "todo.txt"]

    static func writeUserFiles(_ scratch: TemporaryDirectory) throws {
        for name in userFiles {
            try Data("user data \(name)".utf8).write(to: scratch.file(name))
        }
    }

    static func expectUserFilesIntact(_ scratch: TemporaryDirectory) throws {
        for name in userFiles {
            #expect(try Data(contentsOf: scratch.file(name)) == Data("user data \(name)".utf8), "\(name)")
        }
    }

    @Test("a user's files beside the store survive opening, commits and reopening", arguments: FileFormat.allCases)
    func userFilesSurvive(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        try Self.writeUserFiles(scratch)
        try seed(scratch.url, format: format)
        try Self.expectUserFilesIntact(scratch)
        do {
            let store = try FileStore(directory: scratch.url, format: format)
            let dialogs = try store.storage(for: DialogRecord.self)
            try dialogs.persist(DialogRecord(id: 2, isPinned: true, messages: []))
            try dialogs.erase(primaryKeys: [1])
        }
        let store = try FileStore(directory: scratch.url, format: format)
        #expect(try store.storage(for: DialogRecord.self).readAll().map(\.id) == [2])
        try Self.expectUserFilesIntact(scratch)
    }

    @Test("a missing manifest beside documents is corrupt, and the documents stay", arguments: FileFormat.allCases)
    func missingManifest(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: format)
        let documents = try ["dialogs", "messages"].map { try documentURL(scratch.url, $0) }
        let contents = try documents.map { try Data(contentsOf: $0) }
        try FileManager.default.removeItem(at: scratch.file("manifest.json"))

        let error = #expect(throws: StorageError.self) { try FileStore(directory: scratch.url, format: format) }
        #expect(error?.kind == .corrupt)
        #expect(error?.operation == .open)
        #expect(error?.message.contains("manifest") == true)
        #expect(try documents.map { try Data(contentsOf: $0) } == contents)
        #expect(!FileManager.default.fileExists(atPath: scratch.file("manifest.json").path))
    }

    @Test("a missing manifest beside documents of layout version 1 is corrupt")
    func missingVersion1Manifest() throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        try Self.downgradeToVersion1(scratch)
        try FileManager.default.removeItem(at: scratch.file("manifest.json"))
        let error = #expect(throws: StorageError.self) { try FileStore(directory: scratch.url, format: .json) }
        #expect(error?.kind == .corrupt)
        #expect(FileManager.default.fileExists(atPath: scratch.file("dialogs-1.json").path))
    }

    @Test("a new store beside files that only look like documents opens and keeps them")
    func newStoreBesideUserFiles() throws {
        let scratch = try TemporaryDirectory("file-store")
        try Self.writeUserFiles(scratch)
        let store = try FileStore(directory: scratch.url, format: .json)
        try store.storage(for: UserRecord.self).persist(
            UserRecord(id: "a", name: "A", bio: nil, email: nil, birthDate: nil, gender: nil))
        try Self.expectUserFilesIntact(scratch)
    }

    @Test("a document the manifest names but that is gone is corrupt, not empty", arguments: FileFormat.allCases)
    func missingDocument(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: format)
        let url = try documentURL(scratch.url, "messages")
        try FileManager.default.removeItem(at: url)
        let store = try FileStore(directory: scratch.url, format: format)
        let error = #expect(throws: StorageError.self) { try store.storage(for: DialogRecord.self) }
        #expect(error?.kind == .corrupt)
        #expect(error?.path == url.path)
    }

    @Test("a changed byte that still parses is corrupt, not a wrong value")
    func flippedDigit() throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        let url = try documentURL(scratch.url, "messages")
        let text = try String(contentsOf: url, encoding: .utf8)
        let changed = text.replacingOccurrences(of: "\"receiverId\":2", with: "\"receiverId\":3")
        #expect(changed != text)
        try Data(changed.utf8).write(to: url)
        let store = try FileStore(directory: scratch.url, format: .json)
        let error = #expect(throws: StorageError.self) { try store.storage(for: MessageRecord.self) }
        #expect(error?.kind == .corrupt)
    }

    @Test("a manifest edited into another valid manifest is corrupt")
    func editedManifest() throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        let url = scratch.file("manifest.json")
        let text = try String(contentsOf: url, encoding: .utf8)
        // The dialogs' entry renamed: a believed manifest would show no dialogs.
        let changed = text.replacingOccurrences(of: "\"dialogs\" :", with: "\"dialogz\" :")
        #expect(changed != text)
        try Data(changed.utf8).write(to: url)
        let error = #expect(throws: StorageError.self) { try FileStore(directory: scratch.url, format: .json) }
        #expect(error?.kind == .corrupt)
    }

    @Test("a recorded schema edited in the manifest is corrupt: the checksum covers it")
    func editedSchema() throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        let url = scratch.file("manifest.json")
        let text = try String(contentsOf: url, encoding: .utf8)
        let changed = text.replacingOccurrences(of: "\"isPinned\"", with: "\"isPinnet\"")
        #expect(changed != text)
        try Data(changed.utf8).write(to: url)
        let error = #expect(throws: StorageError.self) { try FileStore(directory: scratch.url, format: .json) }
        #expect(error?.kind == .corrupt)
    }

    @Test("a version 2 manifest whose version number changed to 1 is corrupt, not upgraded")
    func damagedVersionNumber() throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        let url = scratch.file("manifest.json")
        let text = try String(contentsOf: url, encoding: .utf8)
        let changed = text.replacingOccurrences(
            of: "\"version\" : \(Manifest.currentVersion)", with: "\"version\" : 1")
        #expect(changed != text)
        try Data(changed.utf8).write(to: url)
        let error = #expect(throws: StorageError.self) { try FileStore(directory: scratch.url, format: .json) }
        #expect(error?.kind == .corrupt)
        #expect(try String(contentsOf: url, encoding: .utf8) == changed)
    }

    @Test("a store of layout version 1 is read and upgraded; nothing else is removed")
    func version1Upgrade() throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        try Self.downgradeToVersion1(scratch)
        try Self.writeUserFiles(scratch)
        do {
            let store = try FileStore(directory: scratch.url, format: .json)
            let dialogs = try store.storage(for: DialogRecord.self)
            #expect(try dialogs.read(primaryKey: 1)?.messages.map(\.id) == [1, 2])
            try dialogs.persist(DialogRecord(id: 2, isPinned: true, messages: []))
        }
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: scratch.file("manifest.json")))
        #expect(manifest.version == Manifest.currentVersion)
        #expect(manifest.storeId.map(StoreFiles.isStoreId) == true)
        // The dialogs document was rewritten (and the version 1 one removed);
        // the messages document is still the version 1 one.
        #expect(!FileManager.default.fileExists(atPath: scratch.file("dialogs-1.json").path))
        #expect(manifest.documents["messages"] == "messages-1.json")
        let store = try FileStore(directory: scratch.url, format: .json)
        #expect(try store.storage(for: DialogRecord.self).readAll().map(\.id) == [1, 2])
        #expect(try store.storage(for: MessageRecord.self).count() == 2)
        try Self.expectUserFilesIntact(scratch)
    }

    @Test("a manifest of a future layout version is refused, and left alone")
    func futureVersion() throws {
        let scratch = try TemporaryDirectory("file-store")
        try Data(#"{"version": 4, "format": "json", "generation": 0, "documents": {}}"#.utf8)
            .write(to: scratch.file("manifest.json"))
        let before = try Data(contentsOf: scratch.file("manifest.json"))
        let error = #expect(throws: StorageError.self) { try FileStore(directory: scratch.url, format: .json) }
        #expect(error?.kind == .schemaMismatch)
        #expect(try Data(contentsOf: scratch.file("manifest.json")) == before)
    }

    @Test("document names escape the entity name and are recognized as the store's own")
    func names() {
        let id = StoreFiles.newStoreId()
        #expect(StoreFiles.isStoreId(id))
        let name = StoreFiles.documentName(storeId: id, generation: 12, entity: "a/b c-d", format: .json)
        #expect(name == "dao-\(id)-12-a%2Fb%20c%2Dd.json")
        #expect(StoreFiles.isOwnedDocument(name, storeId: id))
        #expect(!StoreFiles.isOwnedDocument(name, storeId: StoreFiles.newStoreId()))
        #expect(!StoreFiles.isOwnedDocument("backup-2024.json", storeId: id))
        #expect(!StoreFiles.isManifestTemporary(".notes.tmp"))
        #expect(StoreFiles.isManifestTemporary(".manifest.json.42.tmp"))
    }

    /// Rewrites a seeded version 2 store as layout version 1 wrote it:
    /// documents `<entity>-1.json`, a manifest without identity or checksums.
    static func downgradeToVersion1(_ scratch: TemporaryDirectory) throws {
        var documents: [String: String] = [:]
        for entity in ["dialogs", "messages"] {
            let name = "\(entity)-1.json"
            try FileManager.default.moveItem(at: try documentURL(scratch.url, entity), to: scratch.file(name))
            documents[entity] = name
        }
        let manifest: [String: Any] = ["version": 1, "format": "json", "generation": 1, "documents": documents]
        try JSONSerialization.data(withJSONObject: manifest).write(to: scratch.file("manifest.json"))
    }
}
