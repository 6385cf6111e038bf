import CLMDB
import DAOCore
import DialogGraph
import Foundation
import Testing
import TestSupport

@testable import LMDBStorage

@Suite("LMDB with another process: a map grown elsewhere, one environment per file")
struct TwoProcessTests {
    /// Runs the helper that grows the map of the environment at `directory`
    /// with `count` dialogs from `first` on, and returns the map size it reached.
    func growInAnotherProcess(_ directory: URL, first: Int64, count: Int64) throws -> Int? {
        let helper = try HelperProcess(["lmdb-grow", directory.path, String(first), String(count)])
        let line = helper.readLine()
        let (status, errors) = helper.wait()
        #expect(status == 0, "\(errors)")
        return line.flatMap { $0.split(separator: " ").last.flatMap { Int($0) } }
    }

    @Test("a map grown by another process is adopted when opening databases and storages, reading and writing")
    func mapGrownElsewhere() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none, mapSize: 64 << 10)
            let dialogs = try env.storage(for: DialogRecord.self)
            try dialogs.persist(DialogRecord(id: 1, isPinned: true, messages: []))

            // The other process writes far beyond this process's 64 KiB map.
            let grown = try #require(try growInAnotherProcess(directory.store, first: 100, count: 40))
            #expect(grown > 64 << 10)
            #expect(try env.mapSize == 64 << 10)
            // Opening a database (the path that begins a write transaction
            // directly) adopts the new size instead of failing.
            #expect(try env.database("opened-after-growth") != nil)
            #expect(try env.mapSize >= grown)

            _ = try #require(try growInAnotherProcess(directory.store, first: 200, count: 80))
            // Opening a storage of a new type after the map grew again.
            let users = try env.storage(for: UserRecord.self)
            try users.persist(UserRecord(id: "u", name: "Ann", bio: nil, email: nil, birthDate: nil, gender: nil))

            _ = try #require(try growInAnotherProcess(directory.store, first: 400, count: 80))
            // Reading and writing after yet another growth.
            #expect(try dialogs.count() == 1 + 40 + 80 + 80)
            try dialogs.persist(DialogRecord(id: 2, isPinned: false, messages: []))
            #expect(try dialogs.read(primaryKey: 250)?.messages.count == 20)
            #expect(try users.count() == 1)
        }
    }

    @Test("readers and writers keep working while another process grows the map again and again")
    func growthUnderLoad() throws {
        try withStoreDirectory { directory in
            let env = try LMDBEnvironment(directory: directory.store, durability: .none, mapSize: 64 << 10)
            let dialogs = try env.storage(for: DialogRecord.self)
            try dialogs.persist(DialogRecord(id: 1, isPinned: true, messages: []))
            let rounds = 6
            let done = Flag()
            let failures = Failures()
            let group = DispatchGroup()
            // Threads, not tasks: these loops never suspend, and must not hold
            // the cooperative pool the test itself runs on.
            for worker in 0..<4 {
                DispatchQueue.global().async(group: group) {
                    var id = Int64(10_000 + worker * 10_000)
                    while !done.isSet {
                        do {
                            if worker < 2 {
                                id += 1
                                try dialogs.persist(DialogRecord(id: id, isPinned: false, messages: []))
                            } else {
                                _ = try dialogs.read(primaryKey: 1)
                                _ = try dialogs.count(where: #Predicate { $0.isPinned })
                            }
                        } catch {
                            failures.add("\(error)")
                        }
                    }
                }
            }
            for round in 0..<rounds {
                _ = try growInAnotherProcess(directory.store, first: Int64(100 + round * 50), count: 50)
            }
            done.set()
            group.wait()
            #expect(failures.list.isEmpty, "\(failures.list.prefix(3))")
            #expect(try dialogs.count(where: #Predicate { $0.id >= 100 && $0.id < 10_000 }) == rounds * 50)
        }
    }

    @Test("two paths to one environment (a symbolic link) are one environment: the second open is busy until close")
    func symbolicLink() throws {
        try withStoreDirectory { directory in
            let link = directory.url.appendingPathComponent("link")
            let env = try LMDBEnvironment(directory: directory.store)
            try env.storage(for: DialogRecord.self).persist(DialogRecord(id: 1, isPinned: false, messages: []))
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: directory.store)
            let error = #expect(throws: StorageError.self) { _ = try LMDBEnvironment(directory: link) }
            #expect(error?.kind == .busy)
            let dotted = directory.store.appendingPathComponent("..").appendingPathComponent("store")
            #expect(throws: StorageError.self) { _ = try LMDBEnvironment(directory: dotted) }
            env.close()
            let again = try LMDBEnvironment(directory: link)
            #expect(try again.storage(for: DialogRecord.self).count() == 1)
        }
    }

    @Test("a store file reached through a hard link is the same environment")
    func hardLink() throws {
        try withStoreDirectory { directory in
            let file = directory.url.appendingPathComponent("single.mdb")
            // A single-file environment (MDB_NOSUBDIR): an existing file is opened as one.
            #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
            let env = try LMDBEnvironment(directory: file)
            try env.storage(for: DialogRecord.self).persist(DialogRecord(id: 1, isPinned: false, messages: []))
            let other = directory.url.appendingPathComponent("other.mdb")
            try FileManager.default.linkItem(at: file, to: other)
            let error = #expect(throws: StorageError.self) { _ = try LMDBEnvironment(directory: other) }
            #expect(error?.kind == .busy)
            env.close()
        }
    }
}

/// A flag set once, read from several tasks.
final class Flag: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched with `lock` held.
    private let lock = NSLock()
    private var value = false

    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return value
    }

    func set() {
        lock.lock()
        value = true
        lock.unlock()
    }
}

/// Errors collected from several threads.
final class Failures: @unchecked Sendable {
    // @unchecked Sendable: `errors` is only touched with `lock` held.
    private let lock = NSLock()
    private var errors: [String] = []

    func add(_ error: String) {
        lock.lock()
        errors.append(error)
        lock.unlock()
    }

    var list: [String] {
        lock.lock()
        defer { lock.unlock() }
        return errors
    }
}
