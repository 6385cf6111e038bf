// The table-view scenario of change observation, runnable against any backend:
// a "view" keeps the rows it shows (a dialog's unread messages, newest first)
// only from the first snapshot and the changes that follow; it never reads
// the store. A "model" writes to the store; at the end the view's rows are
// checked against a fresh read.
//
//   swift run observe-table [json|plist|sqlite|lmdb] [directory]
//   swift run observe-table write <backend> <directory> <dialog-id> <messages>
//
// `write` persists one dialog with `messages` unread messages and exits: the
// tests run it as another process to show that SQLite and LMDB observers
// notice commits made elsewhere.

import DAOCore
import DialogGraph
import FileStorage
import Foundation
import LMDBStorage
import SQLiteStorage

/// Opens the store of `backend` in `directory`.
func openStore(_ backend: String, in directory: URL) throws -> any Store {
    switch backend {
    case "json": try FileStore(directory: directory, format: .json)
    case "plist": try FileStore(directory: directory, format: .propertyList)
    case "sqlite": try SQLiteDatabase(path: directory.appending(path: "store.sqlite"))
    case "lmdb": try LMDBEnvironment(directory: directory)
    default: throw ExampleError("unknown backend '\(backend)'; use json, plist, sqlite or lmdb")
    }
}

struct ExampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func message(_ id: Int64, dialog: Int64, minute: Double, text: String, isRead: Bool = false) -> Message {
    Message(
        uniqueId: id, dialogId: dialog, date: Date(timeIntervalSince1970: 1_700_000_000 + minute * 60), text: text,
        senderId: 1, receiverId: 2, type: 0, isIncoming: true, isRead: isRead)
}

// MARK: - The view

/// What a table view of unread messages does with the observation: it keeps
/// its rows and applies each batch update to them, as `UITableView` would.
@MainActor
final class UnreadMessagesView: ResultsDelegate {
    private(set) var rows: [Message] = []
    private let updates: AsyncStream<Void>.Continuation
    let applied: AsyncStream<Void>

    init() {
        (applied, updates) = AsyncStream.makeStream()
    }

    func initial(_ results: [Message]) {
        rows = results
        print("  view: reloadData, \(rows.count) rows: \(rows.map(\.text))")
        updates.yield()
    }

    func update(_ results: [Message], deletions: [Int], insertions: [Int], modifications: [Int]) {
        for index in deletions.reversed() { rows.remove(at: index) }
        for index in insertions { rows.insert(results[index], at: index) }
        for index in modifications { rows[index] = results[index] }
        print("  view: delete rows \(deletions), insert rows \(insertions), reload rows \(modifications) → \(rows.map(\.text))")
        updates.yield()
    }

    func failed(_ error: any Error) {
        print("  view: the observation failed: \(error)")
        updates.finish()
    }
}

// MARK: - The scenario

@MainActor
func runScenario(backend: String, directory: URL) async throws {
    let store = try openStore(backend, in: directory)
    let dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self), translator: DialogTranslator())
    let messages = DAO(storage: try store.anyStorage(for: MessageRecord.self), translator: MessageTranslator())
    guard let commits = messages.storage.commits else { throw ExampleError("the store cannot be observed") }

    try await dialogs.persist([
        Dialog(uniqueId: 1, isPinned: true, messages: [
            message(10, dialog: 1, minute: 1, text: "hi"),
            message(11, dialog: 1, minute: 2, text: "are you there?"),
            message(12, dialog: 1, minute: 3, text: "old news", isRead: true),
        ]),
        Dialog(uniqueId: 2, isPinned: false, messages: [message(20, dialog: 2, minute: 1, text: "elsewhere")]),
    ])

    let view = UnreadMessagesView()
    var applied = view.applied.makeAsyncIterator()
    let controller = ResultsController(
        messages.observe(
            where: #Predicate { $0.dialogId == 1 && !$0.isRead },
            sortedBy: [SortDescriptor(\.date, order: .reverse)]))
    controller.start(delegate: view)
    await applied.next(isolation: #isolation)

    /// One write by the model; `visible` says whether the view should hear of it.
    func write(_ what: String, visible: Bool, _ body: () throws -> Void) async throws {
        print("model: \(what)")
        try body()
        await commits.drained()
        if visible { await applied.next(isolation: #isolation) } else { print("  view: (nothing to do)") }
    }

    try await write("a new message arrives in dialog 1", visible: true) {
        try messages.persist(message(13, dialog: 1, minute: 4, text: "hello?"))
    }
    try await write("the oldest unread message is read", visible: true) {
        try messages.persist(message(10, dialog: 1, minute: 1, text: "hi", isRead: true))
    }
    try await write("a message is edited", visible: true) {
        try messages.persist(message(11, dialog: 1, minute: 2, text: "are you there??"))
    }
    try await write("a message arrives in dialog 2", visible: false) {
        try messages.persist(message(21, dialog: 2, minute: 5, text: "not for this view"))
    }
    try await write("dialog 1 is rewritten with two new unread messages", visible: true) {
        try dialogs.persist(Dialog(uniqueId: 1, isPinned: true, messages: [
            message(11, dialog: 1, minute: 2, text: "are you there??"),
            message(14, dialog: 1, minute: 6, text: "ping"),
            message(15, dialog: 1, minute: 7, text: "pong"),
        ]))
    }
    try await write("dialog 1 is erased, with its messages", visible: true) {
        try dialogs.erase(byPrimaryKey: 1)
    }
    controller.stop()

    let expected = try await messages.read(
        where: #Predicate { $0.dialogId == 1 && !$0.isRead }, sortedBy: [SortDescriptor(\.date, order: .reverse)])
    guard view.rows == expected else {
        throw ExampleError("the view shows \(view.rows.map(\.text)), the store holds \(expected.map(\.text))")
    }
    print("the view's \(view.rows.count) rows match the store; it never read the store itself")
    try store.close()
}

// MARK: - Entry point

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    if arguments.first == "write" {
        guard arguments.count == 5, let dialog = Int64(arguments[3]), let count = Int64(arguments[4]) else {
            throw ExampleError("usage: observe-table write <backend> <directory> <dialog-id> <messages>")
        }
        let store = try openStore(arguments[1], in: URL(filePath: arguments[2], directoryHint: .isDirectory))
        let dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self), translator: DialogTranslator())
        let written = (0..<count).map {
            message(dialog * 1000 + $0, dialog: dialog, minute: Double($0), text: "from another process")
        }
        try dialogs.persist(Dialog(uniqueId: dialog, isPinned: false, messages: written))
        try store.close()
    } else {
        let backends = arguments.first.map { [$0] } ?? ["json", "plist", "sqlite", "lmdb"]
        for backend in backends {
            let directory =
                arguments.count > 1
                ? URL(filePath: arguments[1], directoryHint: .isDirectory)
                : FileManager.default.temporaryDirectory.appending(path: "observe-table-\(UUID().uuidString)")
            defer {
                if arguments.count <= 1 {
                    do {
                        try FileManager.default.removeItem(at: directory)
                    } catch {
                        print("could not remove \(directory.path): \(error)")
                    }
                }
            }
            print("== \(backend)")
            try await runScenario(backend: backend, directory: directory)
        }
    }
} catch {
    FileHandle.standardError.write(Data("observe-table: \(error)\n".utf8))
    exit(1)
}
