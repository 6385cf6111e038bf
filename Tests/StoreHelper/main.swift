// The tests' second process (driven by TestSupport's `HelperProcess`):
// another process growing an LMDB map, or holding an SQLite write
// transaction, a writer to kill, a reader of a damaged store. The tests start
// it with a command and its arguments and talk to it through its standard
// input and output; it never decides when to stop on a timer. Its backends
// are TestSupport's `allBackends`. Besides the commands below, it runs those
// of the crash and corruption tests (CrashCommands.swift).
//
//   lmdb-grow <directory> <first-id> <count>
//       opens the LMDB environment in <directory> with a 64 KiB map, persists
//       <count> dialogs of 20 messages from <first-id> on (growing the map),
//       prints the map size and exits.
//   sqlite-hold-write <file> <dialog-id>
//       opens the SQLite database <file>, begins a write transaction
//       (BEGIN IMMEDIATE), inserts dialog <dialog-id>, prints "locked", waits
//       until its standard input ends, then commits, prints "committed" and exits.
//   trial-write <backend> <directory> <from> <to>
//       opens that backend's store in <directory> (durability full) and makes
//       the transactions <from>..<to> of `TrialWrites` (Tests/TestSupport)
//       through DAOs, printing "done <i>" after each call returns: what the
//       tests kill mid-write.
//   tracker-write <backend> <directory> <from> <to>
//       the same with the tracker's three levels (`TrackerWrites`): persists
//       of whole projects, erasures of projects and of closed issues (every
//       text in NFC on plist, which refuses two spellings in one document).
//   logistics-write <backend> <directory> <from> <to>
//       the same with the logistics domain's three levels
//       (`LogisticsWrites`): persists of whole shipments, parcels moved by
//       their own storage, erasures of shipments and of parcels by a
//       predicate over their scans (every text in NFC on plist).
//   tracker-check <backend> <directory> <count>
//       opens that backend's store in <directory>, reads every project
//       through the DAO and every level through its own storage, and prints
//       "equal" (the state after <count> calls of `TrackerWrites`, children
//       counted on their own agreeing), "empty", "different", or "error
//       <kind>" (a `StorageError`) or "untyped <error>": what the damage
//       tests run, so that a crash inside an engine is a verdict.
//   trial-read-only <backend> <directory>
//       when run as root, first gives up root for good (the `nobody` user and
//       group, no supplementary groups), then checks that it cannot write
//       <directory>; opens that backend's store there, reads every library,
//       tries to persist a book, and closes the store, printing one line per
//       step: "uid <n>", then "open ok" or "open error <kind>", "read <n>
//       <equal|different>" or "read error <kind>", "persist ok" or "persist
//       error <kind>", "close ok" or "close error <kind>" (a step after a
//       failed open is not taken). Exits 0 when every step ran.
//   trial-full <backend> <directory> <from> <bytes>
//       a full disk, as far as this process can tell: ignores SIGXFSZ and
//       limits every file it writes to <bytes> (RLIMIT_FSIZE, so a write
//       past it fails with EFBIG), opens that backend's store in
//       <directory> and makes the transactions of `TrialWrites` from <from>
//       on, printing "done <i>" after each call returns, until one fails:
//       then prints "error <kind>" (or "untyped <type>: <error>"), reads
//       every library ("read after <n>" or "read after error <kind>"), and
//       prints "close ok" or "close error <kind>". Exits 0 when a call failed.

import CSQLite
import DAOCore
import DialogGraph
import FileStorage
import Foundation
import LMDBStorage
import SQLiteStorage
import TestSupport

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}

/// Writes `text` and a newline to standard output at once, unbuffered, so a
/// line reported is a line the parent can read after a SIGKILL.
func say(_ text: String) {
    let line = Array((text + "\n").utf8)
    line.withUnsafeBytes { buffer in
        guard let base = buffer.baseAddress else { return }
        var offset = 0
        while offset < buffer.count {
            let written = write(1, base + offset, buffer.count - offset)
            if written <= 0 { return }
            offset += written
        }
    }
}

let arguments = CommandLine.arguments.dropFirst()
guard let command = arguments.first else { fail("usage: StoreHelper <command> <arguments…>") }

switch (command, Array(arguments.dropFirst())) {
case ("lmdb-grow", let rest) where rest.count == 3:
    guard let first = Int64(rest[1]), let count = Int64(rest[2]) else { fail("lmdb-grow: bad numbers") }
    do {
        let env = try LMDBEnvironment(directory: URL(fileURLWithPath: rest[0]), durability: .none, mapSize: 64 << 10)
        let dialogs = try env.storage(for: DialogRecord.self)
        let records = (first..<first + count).map { id in
            DialogRecord(
                id: id, isPinned: false,
                messages: (0..<20).map { index in
                    MessageRecord(
                        id: id * 100 + index, dialogId: id, date: Date(timeIntervalSince1970: 1_700_000_000),
                        text: String(repeating: "m", count: 200), senderId: 1, receiverId: 2, type: 0,
                        isIncoming: false, isRead: false)
                })
        }
        for record in records {
            try dialogs.persist(record)
        }
        say("mapsize \(try env.mapSize)")
        env.close()
    } catch {
        fail("lmdb-grow: \(error)")
    }

case ("sqlite-hold-write", let rest) where rest.count == 2:
    guard let id = Int64(rest[1]) else { fail("sqlite-hold-write: bad id") }
    var db: OpaquePointer?
    guard sqlite3_open_v2(rest[0], &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else {
        fail("sqlite-hold-write: cannot open \(rest[0])")
    }
    func run(_ sql: String) {
        var message: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(db, sql, nil, nil, &message) != SQLITE_OK {
            fail("sqlite-hold-write: \(sql): \(message.map { String(cString: $0) } ?? "?")")
        }
    }
    run("BEGIN IMMEDIATE")
    run("INSERT INTO dialogs (id, isPinned) VALUES (\(id), 1)")
    say("locked")
    _ = FileHandle.standardInput.readDataToEndOfFile()
    run("COMMIT")
    say("committed")
    sqlite3_close(db)

case ("trial-write", let rest) where rest.count == 4:
    guard let from = Int(rest[2]), let to = Int(rest[3]) else { fail("trial-write: bad numbers") }
    let directory = URL(fileURLWithPath: rest[1])
    do {
        let store = try openStore(rest[0], directory)
        let libraries = DAO(storage: try store.anyStorage(for: LibraryRecord.self), translator: LibraryTranslator())
        for index in from..<to {
            switch TrialWrites.step(index) {
            case .persist(let library): try libraries.persist(library)
            case .erase(let code): _ = try libraries.erase(byPrimaryKey: code)
            }
            say("done \(index)")
        }
        try store.close()
    } catch {
        fail("trial-write: \(error)")
    }

case ("tracker-write", let rest) where rest.count == 4:
    guard let from = Int(rest[2]), let to = Int(rest[3]) else { fail("tracker-write: bad numbers") }
    let directory = URL(fileURLWithPath: rest[1])
    do {
        let store = try openStore(rest[0], directory)
        let daos = try TrackerDAOs(store)
        for index in from..<to {
            try TrackerWrites.apply(index, oneSpelling: rest[0] == "plist", to: daos)
            say("done \(index)")
        }
        try store.close()
    } catch {
        fail("tracker-write: \(error)")
    }

case ("logistics-write", let rest) where rest.count == 4:
    guard let from = Int(rest[2]), let to = Int(rest[3]) else { fail("logistics-write: bad numbers") }
    let directory = URL(fileURLWithPath: rest[1])
    do {
        let store = try openStore(rest[0], directory)
        let daos = try LogisticsDAOs(store)
        for index in from..<to {
            try LogisticsWrites.apply(index, oneSpelling: rest[0] == "plist", to: daos)
            say("done \(index)")
        }
        try store.close()
    } catch {
        fail("logistics-write: \(error)")
    }

case ("tracker-check", let rest) where rest.count == 3:
    guard let count = Int(rest[2]) else { fail("tracker-check: bad number") }
    let directory = URL(fileURLWithPath: rest[1])
    do {
        let store = try openStore(rest[0], directory)
        let daos = try TrackerDAOs(store)
        let projects = try daos.projects.read()
        let counts = try daos.counts()
        try store.close()
        let expected = TrackerWrites.state(after: count, oneSpelling: rest[0] == "plist")
        let issues = projects.flatMap(\.issues)
        let agree = counts == [projects.count, issues.count, issues.flatMap(\.comments).count]
        if projects.isEmpty && counts == [0, 0, 0] {
            say("empty")
        } else if agree && projects == expected
            && Array(String(reflecting: projects).utf8) == Array(String(reflecting: expected).utf8)
        {
            say("equal")
        } else {
            say("different")
        }
    } catch let error as StorageError {
        say("error \(error.kind.rawValue) \(error)")
    } catch {
        say("untyped \(type(of: error)): \(error)")
    }

case ("trial-read-only", let rest) where rest.count == 2:
    let directory = URL(fileURLWithPath: rest[1])
    if geteuid() == 0 {
        // `nobody` (65534 on Debian and most Linux systems): a user that owns
        // nothing here. Group first: a process that is no longer root cannot
        // change its group.
        let nobody: uid_t = 65534
        guard setgroups(0, nil) == 0, setgid(nobody) == 0, setuid(nobody) == 0 else {
            fail("trial-read-only: cannot give up root: errno \(errno)")
        }
        guard geteuid() == nobody, getegid() == nobody, setuid(0) != 0 else {
            fail("trial-read-only: still privileged after giving up root")
        }
    }
    say("uid \(geteuid())")
    // The test is about a directory that cannot be written: make sure it is one.
    guard access(directory.path, W_OK) != 0 else { fail("trial-read-only: \(directory.path) is writable") }
    func kind(_ error: any Error) -> String {
        (error as? StorageError).map { $0.kind.rawValue } ?? "untyped \(type(of: error)): \(error)"
    }
    let store: any Store
    do {
        store = try openStore(rest[0], directory)
        say("open ok")
    } catch {
        say("open error \(kind(error))")
        exit(0)
    }
    do {
        let libraries = DAO(storage: try store.anyStorage(for: LibraryRecord.self), translator: LibraryTranslator())
        let read = try libraries.read()
        say("read \(read.count) \(read == Sample.sortedCorpus() ? "equal" : "different")")
    } catch {
        say("read error \(kind(error))")
    }
    do {
        let books = DAO(storage: try store.anyStorage(for: BookRecord.self), translator: BookTranslator())
        try books.persist(Sample.book(77, shelf: "central-a"))
        say("persist ok")
    } catch {
        say("persist error \(kind(error))")
    }
    do {
        try store.close()
        say("close ok")
    } catch {
        say("close error \(kind(error))")
    }

case ("trial-full", let rest) where rest.count == 4:
    guard let from = Int(rest[2]), let bytes = rlim_t(rest[3]) else { fail("trial-full: bad numbers") }
    let directory = URL(fileURLWithPath: rest[1])
    func kind(_ error: any Error) -> String {
        (error as? StorageError).map { "\($0.kind.rawValue) \($0)" } ?? "untyped \(type(of: error)): \(error)"
    }
    signal(SIGXFSZ, SIG_IGN)
    var limit = rlimit(rlim_cur: bytes, rlim_max: bytes)
    guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0 else { fail("trial-full: setrlimit: errno \(errno)") }
    let store: any Store
    do {
        store = try openStore(rest[0], directory)
    } catch {
        say("open error \(kind(error))")
        exit(0)
    }
    do {
        let libraries = DAO(storage: try store.anyStorage(for: LibraryRecord.self), translator: LibraryTranslator())
        for index in from..<(from + 600) {
            switch TrialWrites.step(index) {
            case .persist(let library): try libraries.persist(library)
            case .erase(let code): _ = try libraries.erase(byPrimaryKey: code)
            }
            say("done \(index)")
        }
        fail("trial-full: 600 calls and the limit was not reached")
    } catch {
        say("error \(kind(error))")
    }
    // The store after the failure, in the same process: reads answer (or
    // fail with a typed error).
    do {
        let libraries = DAO(storage: try store.anyStorage(for: LibraryRecord.self), translator: LibraryTranslator())
        say("read after \(try libraries.read().count)")
    } catch {
        say("read after error \(kind(error))")
    }
    do {
        try store.close()
        say("close ok")
    } catch {
        say("close error \(kind(error))")
    }

default:
    // The commands of the crash and corruption tests (CrashCommands.swift).
    exit(crashCommand(Array(arguments)))
}
