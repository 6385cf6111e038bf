import DAOCore
import DialogGraph
import FileStorage
import Foundation
import TestSupport
import Testing

@Suite("File store: the manifest records migrations under its checksum")
struct MigrationManifestTests {
    @Test("a migration record edited in the manifest is corrupt: the checksum covers it", arguments: FileFormat.allCases)
    func editedMigrationRecord(format: FileFormat) throws {
        let scratch = try TemporaryDirectory("file-store")
        try seed(scratch.url, format: format)
        do {
            let store = try FileStore(directory: scratch.url, format: format)
            #expect(try DialogGraphMigrations.migrator.migrate(store) == [DialogGraphMigrations.reactionCount])
            #expect(try store.storage(for: DialogRecordV2.self).readAll().first?.messages.map(\.reactionCount) == [0, 0])
            store.close()
        }
        let url = scratch.file("manifest.json")
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.contains(DialogGraphMigrations.reactionCount))
        // The store reopens with the record as written.
        do {
            let store = try FileStore(directory: scratch.url, format: format)
            #expect(try Migrator.state(of: store).applied == [DialogGraphMigrations.reactionCount])
            store.close()
        }
        let changed = text.replacingOccurrences(of: "reaction count", with: "reaction total")
        try Data(changed.utf8).write(to: url)
        let error = #expect(throws: StorageError.self) { try FileStore(directory: scratch.url, format: format) }
        #expect(error?.kind == .corrupt)
    }
}
