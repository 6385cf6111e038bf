import DAOCore
import FileStorage
import Foundation
import LMDBStorage
import SQLiteStorage
import TestSupport
import Testing

// A client that configures the wrong backend for a store: opens a JSON
// store's directory as a property-list store, an LMDB environment's directory
// as a file store, points SQLite at another store's file. Whatever the second
// backend answers (a typed error, or an empty store of its own beside the
// other's files), it must not change or remove a byte of the other store, and
// the right backend must find all its data afterwards.

@Suite("Client trial: a store opened with the wrong backend")
struct WrongBackendTests {
    static let pairs: [(String, String)] = localBackends.flatMap { writer in
        localBackends.filter { $0.name != writer.name }.map { (writer.name, $0.name) }
    }

    @Test("the other backend gives a typed error or an empty store, and leaves the store's files as they were",
          arguments: pairs)
    func wrongBackend(writerName: String, openerName: String) throws {
        let writer = try #require(localBackends.first { $0.name == writerName })
        let opener = try #require(localBackends.first { $0.name == openerName })
        let directory = try TemporaryDirectory("trial-wrong")
        let corpus = Sample.corpus()
        try withLibrary(writer, in: directory.url) { daos, _ in try daos.libraries.persist(corpus) }
        // Data files only: a lock file's bytes are the engine's business.
        let before = try fileContents(directory.url).filter { !$0.key.hasSuffix("lock.mdb") && !$0.key.hasSuffix(".lock") }
        do {
            let store = try opener.open(directory.url)
            do {
                let daos = try LibraryDAOs(store)
                let read = try daos.libraries.read()
                #expect(read.isEmpty, "\(openerName) over a \(writerName) store read \(read.count) libraries")
            } catch let error as StorageError {
                _ = error
            } catch {
                Issue.record("\(openerName) over a \(writerName) store: untyped \(type(of: error)): \(error)")
            }
            try store.close()
        } catch let error as StorageError {
            _ = error
        } catch {
            Issue.record("opening a \(writerName) store as \(openerName): untyped \(type(of: error)): \(error)")
        }
        let after = try fileContents(directory.url)
        for (path, bytes) in before {
            #expect(after[path] == bytes, "\(openerName) changed or removed \(path) of a \(writerName) store")
        }
        let read = try withLibrary(writer, in: directory.url) { daos, _ in try daos.libraries.read() }
        #expect(read == Sample.sortedCorpus(), "the \(writerName) store after \(openerName) opened it")
    }

    @Test("SQLite pointed at another store's file: a typed error, and the file is unchanged",
          arguments: localBackends.map(\.name).filter { $0 != "sqlite" })
    func sqliteOnAnotherFile(writerName: String) throws {
        let writer = try #require(localBackends.first { $0.name == writerName })
        let directory = try TemporaryDirectory("trial-wrong-file")
        try withLibrary(writer, in: directory.url) { daos, _ in try daos.libraries.persist(Sample.corpus()) }
        let files = try fileContents(directory.url).filter { !$0.key.hasSuffix("lock.mdb") && !$0.key.hasSuffix(".lock") }
        for (path, bytes) in files {
            let url = directory.url.appending(path: String(path.drop { $0 == "/" }))
            do {
                let database = try SQLiteDatabase(path: url)
                let read = Result { try LibraryDAOs(database).libraries.read() }
                try database.close()
                _ = try read.get()
                Issue.record("SQLite opened \(path) of a \(writerName) store and read it")
            } catch let error as StorageError {
                #expect(error.kind == .corrupt, "SQLite on \(path): \(error)")
            } catch {
                Issue.record("SQLite on \(path): untyped \(type(of: error)): \(error)")
            }
            #expect(try Data(contentsOf: url) == bytes, "SQLite changed \(path)")
        }
        let read = try withLibrary(writer, in: directory.url) { daos, _ in try daos.libraries.read() }
        #expect(read == Sample.sortedCorpus())
    }
}
