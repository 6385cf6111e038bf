// A second process for the tests that need one: another process growing an
// LMDB map, or holding an SQLite write transaction. The tests start it with a
// command and its arguments and talk to it through its standard input and
// output; it never decides when to stop on a timer.
//
//   lmdb-grow <directory> <first-id> <count>
//       opens the LMDB environment in <directory> with a 64 KiB map, persists
//       <count> dialogs of 20 messages from <first-id> on (growing the map),
//       prints the map size and exits.
//   sqlite-hold-write <file> <dialog-id>
//       opens the SQLite database <file>, begins a write transaction
//       (BEGIN IMMEDIATE), inserts dialog <dialog-id>, prints "locked", waits
//       until its standard input ends, then commits, prints "committed" and exits.
//   trial-write <json|plist|sqlite|lmdb> <directory> <from> <to>
//       opens that backend's store in <directory> (durability full) and makes
//       the transactions <from>..<to> of `TrialWrites` (Tests/TestSupport)
//       through DAOs, printing "done <i>" after each call returns: what the
//       tests kill mid-write.

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

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
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
        let store: any Store
        switch rest[0] {
        case "json": store = try FileStore(directory: directory, format: .json)
        case "plist": store = try FileStore(directory: directory, format: .propertyList)
        case "sqlite": store = try SQLiteDatabase(path: directory.appending(path: "library.sqlite"))
        case "lmdb": store = try LMDBEnvironment(directory: directory)
        default: fail("trial-write: unknown backend \(rest[0])")
        }
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

default:
    fail("unknown command or wrong arguments: \(arguments.joined(separator: " "))")
}
