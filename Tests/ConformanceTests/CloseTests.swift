import DAOCore
import DialogGraph
import Foundation
import TestSupport
import Testing

@Suite("Conformance: close() releases the store; every later call is a closed error")
struct CloseTests {
    @Test("after close every call through the store and its storages throws .closed", arguments: allBackends)
    func callsAfterClose(backend: TestBackend) throws {
        try withStore(backend) { store, _ in
            let authors = try store.anyStorage(for: CatalogAuthor.self)
            let chapters = try store.anyStorage(for: CatalogChapter.self)
            try authors.persist(catalogAuthors())
            try store.close()

            var errors: [StorageError?] = []
            errors.append(expectStorageError { _ = try store.anyStorage(for: CatalogAuthor.self) })
            errors.append(expectStorageError { _ = try store.anyStorage(for: CatalogTag.self) })
            errors.append(expectStorageError { try authors.persist(catalogAuthors()) })
            errors.append(expectStorageError { _ = try authors.read(primaryKey: "author-1") })
            errors.append(expectStorageError { _ = try authors.read(primaryKeys: ["author-1"]) })
            errors.append(expectStorageError { _ = try authors.readAll() })
            errors.append(expectStorageError { _ = try chapters.read(where: #Predicate { $0.number > 1 }) })
            errors.append(expectStorageError { _ = try authors.count() })
            errors.append(expectStorageError { _ = try chapters.count(where: #Predicate { $0.wordCount == nil }) })
            errors.append(expectStorageError { try authors.erase(primaryKeys: ["author-1"]) })
            errors.append(expectStorageError { try chapters.erase(where: #Predicate { $0.number == 1 }) })
            errors.append(expectStorageError { try authors.eraseAll() })
            for error in errors {
                #expect(error?.kind == .closed, "\(String(describing: error))")
            }
            #expect(errors.compactMap(\.?.operation) == [
                .open, .open, .persist, .read, .read, .read, .read, .count, .count, .erase, .erase, .erase,
            ])
        }
    }

    @Test("close is idempotent, and the location opens again in the same process with its data", arguments: allBackends)
    func reopenAfterClose(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let store = try backend.open(directory.url, .full)
        try store.anyStorage(for: CatalogAuthor.self).persist(catalogAuthors())
        try store.close()
        try store.close()
        let again = try backend.open(directory.url, .full)
        #expect(try again.anyStorage(for: CatalogAuthor.self).readAll() == catalogAuthors())
        try again.close()
        // The first store stays closed after the location was opened again.
        #expect(expectStorageError { _ = try store.anyStorage(for: CatalogAuthor.self).count() }?.kind == .closed)
    }

    @Test("closing while other threads read and write: each call finishes or is a closed error", arguments: allBackends)
    func closeUnderLoad(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let store = try backend.open(directory.url, .none)
        let dialogs = try store.anyStorage(for: DialogRecord.self)
        try dialogs.persist((1...20).map { dialogRecord($0, messageIds: [$0 * 10, $0 * 10 + 1]) })
        let outcomes = Outcomes()
        let started = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for worker in 0..<4 {
            DispatchQueue.global().async(group: group) {
                started.signal()
                for round in 0..<200 {
                    do {
                        if worker % 2 == 0 {
                            let id = Int64(100 + worker * 1000 + round)
                            try dialogs.persist(dialogRecord(id, messageIds: [id * 10]))
                        } else {
                            _ = try dialogs.read(where: #Predicate { $0.isPinned == false }, limit: 5)
                            _ = try dialogs.count()
                        }
                        outcomes.add(nil)
                    } catch let error as StorageError {
                        outcomes.add(error.kind)
                    } catch {
                        outcomes.add(.engine)
                    }
                }
            }
        }
        for _ in 0..<4 { started.wait() }
        try store.close()
        group.wait()
        let kinds = outcomes.kinds
        #expect(kinds.count == 800)
        #expect(kinds.allSatisfy { $0 == nil || $0 == .closed }, "\(Set(kinds.compactMap { $0 }))")
        // Every call after close failed; whatever was written before is whole.
        let reopened = try backend.open(directory.url, .full)
        let stored = try reopened.anyStorage(for: DialogRecord.self).readAll()
        #expect(stored.count >= 20)
        for dialog in stored {
            #expect(dialog.messages.count == (dialog.id <= 20 ? 2 : 1))
        }
        try reopened.close()
    }
}

/// Outcomes collected from several threads.
final class Outcomes: @unchecked Sendable {
    // @unchecked Sendable: `list` is only touched with `lock` held.
    private let lock = NSLock()
    private var list: [StorageError.Kind?] = []

    func add(_ kind: StorageError.Kind?) {
        lock.lock()
        list.append(kind)
        lock.unlock()
    }

    var kinds: [StorageError.Kind?] {
        lock.lock()
        defer { lock.unlock() }
        return list
    }
}
