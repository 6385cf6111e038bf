// A reader task and a writer task on one store, through the async API, on
// any backend: the writer appends messages to a dialog, one persist each; the
// reader pages the dialog's latest messages while it does, and checks that
// what it sees only grows and is always whole.
//
//   swift run reader-writer [json|plist|sqlite|lmdb|postgres] [messages] [directory]
//
// `postgres` works in a schema of its own on the server DAO_POSTGRES_URL
// names, and drops it at the end.
//
// Every call awaits: the store runs it on its own threads (a writer thread,
// reader threads beside it), so neither task holds a thread of Swift's
// cooperative pool while the store works. Exits 1 when a check fails.

import DAOCore
import DialogGraph
import FileStorage
import Foundation
import LMDBStorage
import PostgresStorage
import SQLiteStorage

/// Opens the store of `backend` in `directory`.
func openStore(_ backend: String, in directory: URL) throws -> any Store {
    switch backend {
    case "json": return try FileStore(directory: directory, format: .json, durability: .none)
    case "plist": return try FileStore(directory: directory, format: .propertyList, durability: .none)
    case "sqlite": return try SQLiteDatabase(path: directory.appending(path: "store.sqlite"), durability: .none)
    case "lmdb": return try LMDBEnvironment(directory: directory, durability: .none)
    case "postgres":
        guard let url = ProcessInfo.processInfo.environment["DAO_POSTGRES_URL"], !url.isEmpty else {
            throw ExampleError("postgres needs DAO_POSTGRES_URL=postgres://user@host:port/database")
        }
        var configuration = try PostgresConfiguration(url: url)
        configuration.schema = "reader_writer_\(UInt32.random(in: 0...UInt32.max))"
        configuration.durability = .none
        return try PostgresStore(configuration)
    default: throw ExampleError("unknown backend '\(backend)'; use json, plist, sqlite, lmdb or postgres")
    }
}

struct ExampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func run(backend: String, messageCount: Int, directory: URL) async throws {
    let store = try openStore(backend, in: directory)
    let dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self), translator: DialogTranslator())
    let messages = DAO(storage: try store.anyStorage(for: MessageRecord.self), translator: MessageTranslator())
    let dialogId: Int64 = 1
    try await dialogs.persist(Dialog(uniqueId: dialogId, isPinned: false, messages: []))

    let writer = Task {
        for index in 0..<messageCount {
            try await messages.persist(
                Message(
                    uniqueId: Int64(index), dialogId: dialogId,
                    date: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)), text: "message \(index)",
                    senderId: 1, receiverId: 2, type: 0, isIncoming: index.isMultiple(of: 2), isRead: false))
        }
    }
    let reader = Task {
        var pages = 0
        var seen = 0
        while seen < messageCount {
            // The latest ten messages, newest first, then how many there are.
            let page = try await messages.read(
                where: #Predicate { $0.dialogId == dialogId }, sortedBy: [SortDescriptor(\.date, order: .reverse)],
                limit: 10)
            let count = try await messages.count(where: #Predicate { $0.dialogId == dialogId })
            // One message per commit, in order: a page that saw `held`
            // messages holds the newest ten of them, and neither it nor the
            // count after it sees fewer than the reader saw before.
            let held = page.first.map { Int($0.uniqueId) + 1 } ?? 0
            guard page.count == min(10, held), held >= seen, count >= held,
                zip(page, page.dropFirst()).allSatisfy({ $0.uniqueId == $1.uniqueId + 1 })
            else {
                throw ExampleError("read \(page.map(\.uniqueId)) and \(count) messages after seeing \(seen)")
            }
            seen = count
            pages += 1
            await Task.yield()
        }
        return pages
    }
    try await writer.value
    let pages = try await reader.value
    let stored = try await messages.count()
    print("\(backend): the writer stored \(stored) messages; the reader read \(pages) pages beside it")
    if let server = store as? PostgresStore {
        try server.removeSchema()
    } else {
        try store.close()
    }
    guard stored == messageCount else { throw ExampleError("\(stored) messages stored, \(messageCount) written") }
}

let arguments = CommandLine.arguments.dropFirst()
let backend = arguments.first ?? "sqlite"
let messageCount = arguments.dropFirst().first.flatMap { Int($0) } ?? 200
let directory =
    arguments.dropFirst(2).first.map { URL(filePath: $0) }
    ?? FileManager.default.temporaryDirectory.appending(path: "reader-writer-\(UUID().uuidString)")
let removesDirectory = arguments.count < 3
var failed = false
do {
    try await run(backend: backend, messageCount: messageCount, directory: directory)
} catch {
    FileHandle.standardError.write(Data("reader-writer: \(error)\n".utf8))
    failed = true
}
if removesDirectory {
    do {
        try FileManager.default.removeItem(at: directory)
    } catch {
        FileHandle.standardError.write(Data("reader-writer: the directory could not be removed: \(error)\n".utf8))
    }
}
exit(failed ? 1 : 0)
