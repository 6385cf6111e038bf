// The commands of the crash and corruption tests (Tests/CrashTests): a
// writer of a seeded sequence of transactions that reports each one that
// returned, and a checker of a store against that sequence. The exit status
// is the verdict:
//
//   0  the store holds exactly the expected state (or one of the two expected)
//   10 a StorageError was thrown (printed as "error <kind>: <description>")
//   20 the store opened and answered, with records that differ from the expected
//   21 the store opened empty though the expected state is not
//   30 another error was thrown
//   64 bad arguments
//
//   write  <backend> <dir> <seed> <count> [<start>]  transactions start..<count, "done <i>" after each
//   verify <backend> <dir> <seed> <n> [<n2>]         the state after n (or n2) transactions; "ok <n>"
//   open   <backend> <dir> <seed> <count>            opens the store <count> times, reading a count each
//   drop postgres <dir>                              drops the PostgreSQL schema of <dir>
//
// and the migration commands of CrashMigration.swift and CrashRelationMigration.swift.

import DAOCore
import DialogGraph
import FileStorage
import Foundation
import LMDBStorage
import TestSupport

/// Opens the store of `backend` in `directory`: one of the tests' backends
/// (``allBackends``: PostgreSQL when `DAO_POSTGRES_URL` names a server, in a
/// schema named after the directory), or `lmdb-metapages`.
func openStore(_ backend: String, _ directory: URL) throws -> any Store {
    // LMDB without the open check's page walk: what is then left to the
    // per-value bounds check.
    if backend == "lmdb-metapages" { return try LMDBEnvironment(directory: directory, fileCheck: .metaPages) }
    guard let known = testBackend(named: backend) else {
        throw StorageError(.invalidArgument, .open, message: "unknown backend '\(backend)'")
    }
    return try known.open(directory)
}

// MARK: The transactions

/// One transaction: one storage or DAO call.
enum Operation {
    case putAuthor(AuthorRecord)
    case eraseAuthors([String])
    case putDialog(Dialog)
    case eraseDialog(Int64)
}

/// Transaction `index` of the sequence `seed`: a function of both alone, not of
/// what the store holds.
func operation(_ index: Int, seed: UInt64) -> Operation {
    var random = SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(index))
    let i = Int64(index)
    switch random.next() % 6 {
    case 0, 1, 2:
        let handle = ["ana", "Zoë", "li-😀", "o'brien", "x"][Int(random.next() % 5)] + "\(random.next() % 4)"
        let bookCount = Int(random.next() % 4)
        let books = (0..<bookCount).map { b -> CrashBookRecord in
            let isbn = "isbn-\(i)-\(b)"
            let chapterCount = Int(random.next() % 4)
            let chapters = (0..<chapterCount).map { c -> ChapterRecord in
                let long = random.next() % 5 == 0
                return ChapterRecord(
                    id: i * 100 + Int64(b * 10 + c), bookIsbn: isbn, number: Int64(c + 1),
                    text: long ? String(repeating: "chapter \(c) 📚 ", count: 150) : "chapter \(c) of \(isbn)",
                    note: random.next() % 2 == 0 ? nil : "note\u{0}\(random.next() % 1000)")
            }
            return CrashBookRecord(
                isbn: isbn, authorHandle: handle, title: "title \(random.next() % 100)",
                year: random.next() % 3 == 0 ? nil : Int64(1900 + random.next() % 120), chapters: chapters)
        }
        return .putAuthor(
            AuthorRecord(
                handle: handle, name: "name \(random.next() % 10)",
                born: random.next() % 2 == 0 ? nil : Date(timeIntervalSinceReferenceDate: Double(random.next() % 1_000_000)),
                rating: random.next() % 2 == 0 ? nil : Double(random.next() % 1000) / 8, books: books))
    case 3:
        let handles = (0..<Int(1 + random.next() % 2)).map { _ in
            ["ana", "Zoë", "li-😀", "o'brien", "x"][Int(random.next() % 5)] + "\(random.next() % 4)"
        }
        return .eraseAuthors(handles)
    case 4:
        let dialogId = Int64(random.next() % 8)
        let messages = (0..<Int(random.next() % 5)).map { m in
            Message(
                uniqueId: i * 10 + Int64(m), dialogId: dialogId, date: Date(timeIntervalSinceReferenceDate: Double(i)),
                text: "message \(m) of \(i)", senderId: Int64(random.next() % 5), receiverId: 7, type: Int(random.next() % 5),
                isIncoming: random.next() % 2 == 0, isRead: random.next() % 2 == 0)
        }
        return .putDialog(Dialog(uniqueId: dialogId, isPinned: random.next() % 2 == 0, messages: messages))
    default:
        return .eraseDialog(Int64(random.next() % 8))
    }
}

/// What a store holds after some transactions.
struct State: Equatable {
    var authors: [String: AuthorRecord] = [:]
    var dialogs: [Int64: Dialog] = [:]

    init() {}

    init(after count: Int, seed: UInt64) {
        for index in 0..<count { apply(operation(index, seed: seed)) }
    }

    mutating func apply(_ operation: Operation) {
        switch operation {
        case .putAuthor(let author): authors[author.handle] = author.normalized
        case .eraseAuthors(let handles): for handle in handles { authors[handle] = nil }
        case .putDialog(let dialog): dialogs[dialog.uniqueId] = normalized(dialog)
        case .eraseDialog(let id): dialogs[id] = nil
        }
    }

    var isEmpty: Bool { authors.isEmpty && dialogs.isEmpty }
    var books: Int { authors.values.reduce(0) { $0 + $1.books.count } }
    var chapters: Int { authors.values.reduce(0) { $0 + $1.books.reduce(0) { $0 + $1.chapters.count } } }
    var messages: Int { dialogs.values.reduce(0) { $0 + $1.messages.count } }
}

func normalized(_ dialog: Dialog) -> Dialog {
    Dialog(uniqueId: dialog.uniqueId, isPinned: dialog.isPinned, messages: dialog.messages.sorted { $0.uniqueId < $1.uniqueId })
}

/// The access paths of one store.
struct Handles {
    let authors: AnyStorage<AuthorRecord>
    let books: AnyStorage<CrashBookRecord>
    let chapters: AnyStorage<ChapterRecord>
    let dialogs: DAO<AnyStorage<DialogRecord>, DialogTranslator>
    let messages: AnyStorage<MessageRecord>

    init(_ store: any Store) throws {
        authors = try store.anyStorage(for: AuthorRecord.self)
        books = try store.anyStorage(for: CrashBookRecord.self)
        chapters = try store.anyStorage(for: ChapterRecord.self)
        dialogs = DAO(storage: try store.anyStorage(for: DialogRecord.self), translator: DialogTranslator())
        messages = try store.anyStorage(for: MessageRecord.self)
    }

    func run(_ operation: Operation) throws {
        switch operation {
        case .putAuthor(let author): try authors.persist(author)
        case .eraseAuthors(let handles): try authors.erase(primaryKeys: handles)
        case .putDialog(let dialog): try dialogs.persist(dialog)
        case .eraseDialog(let id): _ = try dialogs.erase(byPrimaryKey: id)
        }
    }

    /// Everything the store holds, read through every access path; the counts
    /// of children read on their own must agree with those read through parents.
    func state() throws -> (State, [String]) {
        var state = State()
        var problems: [String] = []
        for author in try authors.readAll() { state.authors[author.handle] = author.normalized }
        for dialog in try dialogs.read() { state.dialogs[dialog.uniqueId] = normalized(dialog) }
        let counts = (try books.count(), try chapters.count(), try messages.count())
        if counts.0 != state.books { problems.append("books: \(counts.0) stored, \(state.books) under authors") }
        if counts.1 != state.chapters { problems.append("chapters: \(counts.1) stored, \(state.chapters) under books") }
        if counts.2 != state.messages { problems.append("messages: \(counts.2) stored, \(state.messages) under dialogs") }
        // The indexes and lookups must give the same records as the full reads.
        let names = Set(state.authors.values.map(\.name)).union(["name 10"])
        for name in names.sorted() {
            let found = try authors.read(where: #Predicate { $0.name == name }).map(\.handle).sorted()
            let expected = state.authors.values.filter { $0.name == name }.map(\.handle).sorted()
            if found != expected { problems.append("authors named '\(name)': \(found), expected \(expected)") }
        }
        for author in state.authors.values {
            if try authors.read(primaryKey: author.handle)?.normalized != author {
                problems.append("author '\(author.handle)' read by key differs")
            }
            for book in author.books {
                if try books.read(primaryKey: book.isbn).map({ AuthorRecord.normalizedBook($0) }) != book {
                    problems.append("book '\(book.isbn)' read by key differs")
                }
                let isbn = book.isbn
                let found = try chapters.read(where: #Predicate { $0.bookIsbn == isbn && $0.number == 1 }).map(\.id)
                let expected = book.chapters.filter { $0.number == 1 }.map(\.id)
                if found != expected { problems.append("chapter 1 of '\(isbn)': \(found), expected \(expected)") }
            }
        }
        for dialog in state.dialogs.values {
            let id = dialog.uniqueId
            let found = try messages.read(where: #Predicate { $0.dialogId == id && $0.isRead == false }).map(\.id).sorted()
            let expected = dialog.messages.filter { !$0.isRead }.map(\.uniqueId).sorted()
            if found != expected { problems.append("unread messages of dialog \(id): \(found), expected \(expected)") }
        }
        return (state, problems)
    }
}

func describeDifference(_ found: State, _ expected: State) -> String {
    var lines: [String] = []
    for key in Set(found.authors.keys).union(expected.authors.keys).sorted() where found.authors[key] != expected.authors[key] {
        lines.append("author \(key): found \(found.authors[key].map { "\($0)" } ?? "nothing"), expected \(expected.authors[key].map { "\($0)" } ?? "nothing")")
    }
    for key in Set(found.dialogs.keys).union(expected.dialogs.keys).sorted() where found.dialogs[key] != expected.dialogs[key] {
        lines.append("dialog \(key): found \(found.dialogs[key].map { "\($0)" } ?? "nothing"), expected \(expected.dialogs[key].map { "\($0)" } ?? "nothing")")
    }
    return lines.prefix(3).joined(separator: "\n")
}

// MARK: Commands

/// Runs the crash tests' command `arguments` (`write`, `verify`, ...; see
/// above) and returns its exit status.
func crashCommand(_ arguments: [String]) -> Int32 {
    if arguments.count == 3, arguments[0] == "drop", arguments[1] == "postgres" {
        // drop postgres <dir>: drops the schema the tests' stores of <dir> made.
        do {
            try PostgresTestServer.drop(URL(fileURLWithPath: arguments[2]))
            return 0
        } catch {
            say("error: \(error)")
            return 10
        }
    }
    guard arguments.count >= 5, let seed = UInt64(arguments[3]), let count = Int(arguments[4]) else {
        say("usage: StoreHelper write|verify <backend> <dir> <seed> <count> [<count2>]")
        return 64
    }
    let backend = arguments[1]
    let directory = URL(fileURLWithPath: arguments[2])
    do {
        switch arguments[0] {
        case "write":
            let store = try openStore(backend, directory)
            let handles = try Handles(store)
            say("open")
            let start = arguments.count > 5 ? Int(arguments[5]) ?? 0 : 0
            for index in start..<max(start, count) {
                try handles.run(operation(index, seed: seed))
                say("done \(index)")
            }
            return 0
        case "open":
            // Opens the store (while another process may be writing it) and
            // reads it once; <count> times.
            for _ in 0..<max(count, 1) {
                let store = try openStore(backend, directory)
                _ = try Handles(store).authors.count()
            }
            say("ok")
            return 0
        case "fill":
            // Persists <count> dialogs of the workload (100 messages each):
            // a store with branch pages in its databases.
            let store = try openStore(backend, directory)
            let data = WorkloadData(dialogs: count, messagesPerDialog: 100, seed: seed)
            let translator = DialogTranslator()
            try store.anyStorage(for: DialogRecord.self).persist(data.initial.map { try translator.record(from: $0) })
            say("ok")
            return 0
        case "read-filled":
            // Opens a store `fill` wrote and reads every dialog.
            let store = try openStore(backend, directory)
            let read = try store.anyStorage(for: DialogRecord.self).readAll()
            say("ok \(read.count) dialogs, \(read.reduce(0) { $0 + $1.messages.count }) messages")
            return 0
        case "lmdb-walk":
            // Opens an LMDB environment read-only: "walked" when the open
            // check passed (the environment may still be refused after it, as
            // one this store did not write), the error when it did not.
            do {
                _ = try LMDBEnvironment(directory: directory, readOnly: true)
            } catch let error as StorageError where !error.message.contains(" is damaged: ") {
                say("walked (then \(error.kind.rawValue))")
                return 0
            }
            say("walked")
            return 0
        case "open-meta-pages-only":
            // Opens the LMDB environment with only its meta pages checked,
            // and reads nothing.
            _ = try LMDBEnvironment(directory: directory, fileCheck: .metaPages)
            say("ok")
            return 0
        case "verify":
            let accepted = [count] + arguments.dropFirst(5).compactMap { Int($0) }
            let store = try openStore(backend, directory)
            if let environment = store as? LMDBEnvironment {
                _ = try environment.storage(for: AuthorRecord.self).verify()
                _ = try environment.storage(for: CrashBookRecord.self).verify()
                _ = try environment.storage(for: ChapterRecord.self).verify()
                _ = try environment.storage(for: DialogRecord.self).verify()
                _ = try environment.storage(for: MessageRecord.self).verify()
            }
            let (found, problems) = try Handles(store).state()
            if let problem = problems.first {
                say("wrong: \(problem)")
                return 20
            }
            let expected = accepted.map { State(after: $0, seed: seed) }
            if let match = expected.firstIndex(of: found) {
                say("ok \(accepted[match])")
                return 0
            }
            if found.isEmpty {
                say("empty")
                return 21
            }
            say("wrong: after \(accepted) transactions:\n\(describeDifference(found, expected[0]))")
            return 20
        case "migrate":
            return try migrateCommand(try openStore(backend, directory))
        case "migrate-chapters":
            return try migrateCommand(try openStore(backend, directory), chapterMigrator)
        case "verify-migrated":
            return try verifyMigratedCommand(try openStore(backend, directory), seed: seed, count: count)
        case "migrate-labels":
            return try runMigrator(RelationMigrations.adding, try openStore(backend, directory))
        case "verify-labels":
            return try verifyLabelsCommand(
                try openStore(backend, directory), seed: seed, count: count, labelled: arguments.dropFirst(5).first == "labelled")
        case "write-labels":
            return try writeLabelsCommand(try openStore(backend, directory), seed: seed, count: count)
        case "migrate-drop":
            return try runMigrator(RelationMigrations.dropping, try openStore(backend, directory))
        case "verify-drop":
            return try verifyDropCommand(try openStore(backend, directory), seed: seed, count: count)
        case "readd-labels":
            return try readdLabelsCommand(try openStore(backend, directory), seed: seed, count: count)
        default:
            say("unknown command \(arguments[0])")
            return 64
        }
    } catch let error as StorageError {
        say("error \(error.kind.rawValue): \(error)")
        return 10
    } catch {
        say("other error: \(error)")
        return 30
    }
}
