import DAOCore
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

// Closing and reopening: every call on a closed store is `closed`, its
// observations end, and the store opens again with everything.

@Suite("Lifecycle: a closed store refuses every call and opens again")
struct LifecycleTests {}

extension LifecycleTests {
    @Suite("Client trial, library: closing and reopening")
    struct LibraryDomain {
        @Test("calls after close are .closed; the store opens again with everything", arguments: localBackends)
        func closeAndReopen(backend: TestBackend) throws {
            let directory = try TemporaryDirectory()
            let store = try backend.open(directory.url)
            let daos = try LibraryDAOs(store)
            try daos.libraries.persist(Sample.corpus())
            try store.close()
            try store.close()
            expectStorageError(.closed) { _ = try daos.books.read() }
            expectStorageError(.closed) { try daos.libraries.persist(Sample.corpus()) }
            expectStorageError(.closed) { _ = try store.anyStorage(for: BookRecord.self) }
            try withLibrary(backend, in: directory.url) { daos, _ in
                let read = try daos.libraries.read()
                #expect(read == Sample.sortedCorpus())
            }
        }
    }
}

extension LifecycleTests {
    @Suite("Client trial, tracker: a closed store")
    struct TrackerDomain {
        @Test("a closed store: every call through its DAOs is `closed`, its observations end, and it reopens",
              arguments: localBackends)
        func closed(backend: TestBackend) async throws {
            let directory = try TemporaryDirectory("tracker-closed")
            try writeTracker(backend, in: directory.url, calls: 0..<2)
            let store = try backend.open(directory.url)
            let daos = try TrackerDAOs(store)
            let iterator = daos.comments.observe(where: nil, sortedBy: [SortDescriptor(\.postedAt)]).makeAsyncIterator()
            _ = try #require(try await nextSnapshot(iterator))
            try store.close()
            var lines: [String] = []
            noteStep("read", in: &lines) { "\(try daos.projects.read().count)" }
            noteStep("count", in: &lines) { "\(try daos.issues.count())" }
            noteStep("persist", in: &lines) {
                try TrackerWrites.apply(2, oneSpelling: oneSpelling(backend), to: daos)
                return "ok"
            }
            noteStep("erase", in: &lines) { "\(try daos.comments.erase())" }
            noteStep("close again", in: &lines) {
                try store.close()
                return "ok"
            }
            #expect(lines == ["read: closed", "count: closed", "persist: closed", "erase: closed", "close again: ok"],
                    "\(backend.name): \(lines)")
            do {
                let next = try await nextSnapshot(iterator)
                #expect(next == nil, "an observation of a closed \(backend.name) store goes on")
            } catch let error as StorageError {
                #expect(error.kind == .closed, "\(error)")
            }
            try withTracker(backend, in: directory.url) { daos, _ in
                let read = try daos.projects.read()
                #expect(exactly(read, TrackerWrites.state(after: 2, oneSpelling: oneSpelling(backend))))
            }
        }
    }
}
