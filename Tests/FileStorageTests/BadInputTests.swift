import DAOCore
import DialogGraph
@testable import FileStorage
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Writes one dialog with two messages through a store that is closed again.
func seed(_ directory: URL, format: FileFormat) throws {
    let store = try FileStore(directory: directory, format: format)
    let message = MessageRecord(
        id: 1, dialogId: 1, date: Date(timeIntervalSince1970: 1), text: "hi", senderId: 1, receiverId: 2, type: 0,
        isIncoming: true, isRead: false)
    var second = message
    second.id = 2
    try store.storage(for: DialogRecord.self).persist(DialogRecord(id: 1, isPinned: false, messages: [message, second]))
}

/// The current document of `entity`, as the manifest names it.
func documentURL(_ directory: URL, _ entity: String) throws -> URL {
    let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent("manifest.json")))
    let documents = try #require((manifest as? [String: Any])?["documents"] as? [String: String])
    return directory.appendingPathComponent(try #require(documents[entity]))
}

/// Replaces a document's bytes and records their checksum in the manifest, as
/// a writer of the store would: for tests of what the decoder says about
/// well-formed but wrong documents.
func rewriteDocument(_ url: URL, _ data: Data) throws {
    try data.write(to: url)
    let manifestURL = url.deletingLastPathComponent().appendingPathComponent("manifest.json")
    var manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: manifestURL))
    manifest.checksums?[url.lastPathComponent] = DocumentChecksum(crc32c: CRC32C.checksum(data), size: data.count)
    try JSONEncoder().encode(manifest.sealed()).write(to: manifestURL)
}

/// The name a commit `generations` after the current one gives `entity`'s document.
func nextDocumentURL(_ directory: URL, _ entity: String, generations: UInt64 = 1) throws -> URL {
    let manifest = try #require(
        JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent("manifest.json")))
            as? [String: Any])
    let storeId = try #require(manifest["storeId"] as? String)
    let generation = try #require((manifest["generation"] as? NSNumber)?.uint64Value)
    return directory.appendingPathComponent("dao-\(storeId)-\(generation + generations)-\(entity).json")
}

@Suite("File store: bad input gives a typed error and loses no data")
struct BadInputTests {
    @Test("a truncated document", arguments: FileFormat.allCases)
    func truncated(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: format)
        let url = try documentURL(scratch.url, "messages")
        let data = try Data(contentsOf: url)
        try data.prefix(data.count / 2).write(to: url)

        let store = try FileStore(directory: scratch.url, format: format)
        let error = #expect(throws: StorageError.self) { try store.storage(for: DialogRecord.self) }
        #expect(error?.kind == .corrupt)
        #expect(error?.path == url.path)
        #expect(error?.entity == "messages")
    }

    @Test("a document of garbage bytes", arguments: FileFormat.allCases)
    func garbage(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: format)
        let url = try documentURL(scratch.url, "dialogs")
        try Data([0x00, 0xFF, 0x13, 0x37, 0x42]).write(to: url)

        let store = try FileStore(directory: scratch.url, format: format)
        let error = #expect(throws: StorageError.self) { try store.storage(for: MessageRecord.self) }
        #expect(error?.kind == .corrupt)
        #expect(error?.path == url.path)
        #expect(error.map { "\($0)".contains(url.lastPathComponent) } == true)
    }

    // A document that parses, has its layout and matches its checksum, but
    // whose records the record type's decoding refuses (a renamed key, a
    // value of another type), is `.decoding`, as a column of another type is
    // on SQLite: the bytes are what a writer of the store wrote.
    @Test("a document of the wrong shape names the missing field")
    func wrongShape() throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        let url = try documentURL(scratch.url, "messages")
        let text = try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: "\"senderId\"", with: "\"sender\"")
        try rewriteDocument(url, Data(text.utf8))

        let store = try FileStore(directory: scratch.url, format: .json)
        let error = #expect(throws: StorageError.self) { try store.storage(for: MessageRecord.self) }
        #expect(error?.kind == .decoding)
        #expect(error?.underlying is DecodingError)
        #expect(error?.message.contains("senderId") == true)
    }

    @Test("a document whose values have the wrong type")
    func wrongType() throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        let url = try documentURL(scratch.url, "dialogs")
        let text = try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: "\"isPinned\":false", with: "\"isPinned\":\"no\"")
        try rewriteDocument(url, Data(text.utf8))

        let store = try FileStore(directory: scratch.url, format: .json)
        let error = #expect(throws: StorageError.self) { try store.storage(for: DialogRecord.self) }
        #expect(error?.kind == .decoding)
        #expect(error?.underlying is DecodingError)
        #expect(error?.message.contains("isPinned") == true)
    }

    @Test("a document without its list of records, or with records that are not a list, is .corrupt",
          arguments: ["records", "version"])
    func missingLayout(key: String) throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        let url = try documentURL(scratch.url, "messages")
        var document = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        document.removeValue(forKey: key)
        try rewriteDocument(url, JSONSerialization.data(withJSONObject: document))
        let store = try FileStore(directory: scratch.url, format: .json)
        let error = #expect(throws: StorageError.self) { try store.storage(for: MessageRecord.self) }
        #expect(error?.kind == .corrupt)
        #expect(error?.message.contains(key) == true, "\(String(describing: error))")
        store.close()

        document[key] = ["not": "a list"]
        try rewriteDocument(url, JSONSerialization.data(withJSONObject: document))
        let reopened = try FileStore(directory: scratch.url, format: .json)
        let other = #expect(throws: StorageError.self) { try reopened.storage(for: MessageRecord.self) }
        #expect(other?.kind == .corrupt)
    }

    @Test("a damaged manifest")
    func damagedManifest() throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        try Data("{\"version\": 1, \"form".utf8).write(to: scratch.file("manifest.json"))
        let error = #expect(throws: StorageError.self) { try FileStore(directory: scratch.url, format: .json) }
        #expect(error?.kind == .corrupt)
        #expect(error?.path == scratch.file("manifest.json").path)
    }

    @Test("a store written as JSON opened as a property list")
    func formatMismatch() throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        let error = #expect(throws: StorageError.self) { try FileStore(directory: scratch.url, format: .propertyList) }
        #expect(error?.kind == .schemaMismatch)
        // Nothing was lost: the store still opens as JSON.
        let store = try FileStore(directory: scratch.url, format: .json)
        #expect(try store.storage(for: MessageRecord.self).count() == 2)
    }

    @Test("a directory that cannot be created")
    func uncreatableDirectory() throws {
        let scratch = try TemporaryDirectory("file-store")
        let blocker = scratch.file("a-file")
        try Data("not a directory".utf8).write(to: blocker)
        let target = blocker.appendingPathComponent("store")
        let error = #expect(throws: StorageError.self) { try FileStore(directory: target) }
        #expect(error?.kind == .io)
        #expect(error?.path == target.path)
    }

    @Test("a directory that cannot be written", .enabled(if: getuid() != 0, "root writes through permissions"))
    func readOnlyDirectory() throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        let store = try FileStore(directory: scratch.url, format: .json)
        let dialogs = try store.storage(for: DialogRecord.self)
        try FileManager.default.setAttributes([.posixPermissions: 0o500], ofItemAtPath: scratch.url.path)
        defer { _ = try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: scratch.url.path) }
        let error = #expect(throws: StorageError.self) { try dialogs.persist(DialogRecord(id: 2, isPinned: true, messages: [])) }
        #expect(error?.kind == .readOnly)
        #expect(try dialogs.count() == 1)
    }

    @Test("a commit that cannot write its document changes nothing, in memory or on disk")
    func failedCommit() throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        let before = try Data(contentsOf: scratch.file("manifest.json"))
        do {
            let store = try FileStore(directory: scratch.url, format: .json)
            let dialogs = try store.storage(for: DialogRecord.self)
            // Occupy the names the next commit writes, as a directory, so the write fails.
            for entity in ["dialogs", "messages"] {
                try FileManager.default.createDirectory(at: try nextDocumentURL(scratch.url, entity), withIntermediateDirectories: false)
            }
            let error = #expect(throws: StorageError.self) {
                try dialogs.persist(DialogRecord(id: 9, isPinned: true, messages: []))
            }
            #expect(error?.kind == .io)
            #expect(error?.operation == .persist)
            #expect(try dialogs.count() == 1)
            #expect(try dialogs.read(primaryKey: 9) == nil)
            #expect(try Data(contentsOf: scratch.file("manifest.json")) == before)
        }
        for entity in ["dialogs", "messages"] {
            try FileManager.default.removeItem(at: try nextDocumentURL(scratch.url, entity))
        }
        let store = try FileStore(directory: scratch.url, format: .json)
        #expect(try store.storage(for: DialogRecord.self).readAll().map(\.id) == [1])
    }

    @Test("what a crash mid-commit leaves behind is ignored and removed")
    func crashLeftovers() throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: .json)
        // A document written by a commit whose manifest never landed, and a temporary file.
        let orphan = try nextDocumentURL(scratch.url, "dialogs", generations: 6)
        try Data("[]".utf8).write(to: orphan)
        try Data("partial".utf8).write(to: scratch.file(".manifest.json.123.tmp"))
        try Data("mine".utf8).write(to: scratch.file("notes.txt"))

        let store = try FileStore(directory: scratch.url, format: .json)
        #expect(try store.storage(for: DialogRecord.self).read(primaryKey: 1)?.messages.count == 2)
        let names = try Set(FileManager.default.contentsOfDirectory(atPath: scratch.url.path))
        #expect(!names.contains(orphan.lastPathComponent))
        #expect(!names.contains(".manifest.json.123.tmp"))
        #expect(names.contains("notes.txt"))
    }

    @Test("a second store on the same directory is refused while the first is open")
    func busy() throws {
        let scratch = try TemporaryDirectory("file-store")
        do {
            let first = try FileStore(directory: scratch.url, format: .json)
            let error = #expect(throws: StorageError.self) { try FileStore(directory: scratch.url, format: .json) }
            #expect(error?.kind == .busy)
            withExtendedLifetime(first) {}
        }
        // Once the first is gone, the directory opens again.
        #expect(throws: Never.self) { try FileStore(directory: scratch.url, format: .json) }
    }

    @Test("superseded documents are removed after each commit")
    func noGarbage() throws {
        let scratch = try TemporaryDirectory("file-store")
        let store = try FileStore(directory: scratch.url, format: .propertyList)
        let users = try store.storage(for: UserRecord.self)
        for index in 0..<5 {
            try users.persist(UserRecord(id: "u\(index)", name: "n", bio: nil, email: nil, birthDate: nil, gender: nil))
        }
        // Small commits add deltas after the first document: only the files
        // the manifest names are left, the last written by the fifth commit.
        let names = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).sorted()
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: scratch.file("manifest.json")))
        #expect(Set(names) == manifest.referencedFiles.union(["manifest.json", "store.lock"]))
        #expect(names.count == 2 + 1 + (manifest.deltas?["users"]?.count ?? 0))
        #expect(manifest.deltas?["users"]?.last?.hasSuffix("-5-users.plist") == true)
        // A commit that changes most records writes one whole document again.
        try users.persist((0..<5).map { UserRecord(id: "u\($0)", name: "m", bio: nil, email: nil, birthDate: nil, gender: nil) })
        let compacted = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).sorted()
        let document = try documentURL(scratch.url, "users").lastPathComponent
        #expect(Set(compacted) == ["manifest.json", "store.lock", document])
        #expect(document.hasSuffix("-6-users.plist"))
    }
}

@Suite("File store: a directory named like the manifest's temporary file")
struct ManifestTemporaryDirectoryTests {
    /// The store writes and removes `.manifest.json.<pid>.tmp`; a directory of
    /// that name is not what it wrote, so it stays, and opening (an existing
    /// store, which removes leftover temporary files, or a new one, which
    /// writes its first manifest) is refused with an error that names the
    /// directory and says what to do.
    @Test("refused with a message naming the directory and what to do, the directory kept", arguments: [true, false])
    func directory(existing: Bool) throws {
        let scratch = try TemporaryDirectory("file-store")
        if existing { try seed(scratch.url, format: .json) }
        let name = ".manifest.json.\(getpid()).tmp"
        let blocker = scratch.file(name)
        try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: false)
        try Data("mine".utf8).write(to: blocker.appendingPathComponent("inside.txt"))
        let error = #expect(throws: StorageError.self) { try FileStore(directory: scratch.url, format: .json) }
        #expect(error?.kind == .io)
        #expect(error?.operation == .open)
        #expect(error?.path == blocker.path)
        let message = error?.message ?? ""
        #expect(message.contains("'\(name)' is a directory"), "\(message)")
        #expect(message.contains("move or remove the directory"), "\(message)")
        #expect(try Data(contentsOf: blocker.appendingPathComponent("inside.txt")) == Data("mine".utf8))
        try FileManager.default.removeItem(at: blocker)
        let store = try FileStore(directory: scratch.url, format: .json)
        #expect(try store.storage(for: DialogRecord.self).readAll().map(\.id) == (existing ? [1] : []))
        store.close()
    }
}
