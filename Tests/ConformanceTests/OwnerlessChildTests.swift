import DAOCore
import Foundation
import TestSupport
import Testing

// A child type that names no owner (`TxNote`, held by `TxShelf.notes`), written
// through its own storage: the store knows its holder from the schemas it
// recorded when the holder's storage was opened, in this process or an
// earlier one. Each scenario's outcome is written down per backend and the
// backends compared.

@Suite("Conformance: a child type that names no owner, written through its own storage")
struct OwnerlessChildTests {
    let shelf = TxShelf(id: "s1", label: "one", boxes: [], notes: [TxNote(id: 1, shelfId: "s1", text: "kept")])

    func outcomes(_ backend: Backend) throws -> [String] {
        var lines: [String] = []
        let directory = try TemporaryDirectory()
        // The holder opened in this process.
        do {
            let store = try backend.open(directory.url, .full)
            try store.anyStorage(for: TxShelf.self).persist(shelf)
            let notes = try store.anyStorage(for: TxNote.self)
            lines.append("same process, unknown shelf: " + attempt { try notes.persist(TxNote(id: 2, shelfId: "nowhere", text: "x")); return "ok" })
            lines.append("same process, known shelf: " + attempt { try notes.persist(TxNote(id: 3, shelfId: "s1", text: "y")); return "ok" })
            // Small commits (the file stores write them as deltas): s2 added
            // then erased, s3 added.
            let shelves = try store.anyStorage(for: TxShelf.self)
            try shelves.persist(TxShelf(id: "s2", label: "two", boxes: [], notes: []))
            try shelves.persist(TxShelf(id: "s3", label: "three", boxes: [], notes: []))
            lines.append("erased s2: " + attempt { "\(try shelves.erase(primaryKey: "s2"))" })
            try store.close()
        }
        // Reopened: only the note's storage is opened.
        do {
            let store = try backend.open(directory.url, .full)
            let notes = try store.anyStorage(for: TxNote.self)
            lines.append("reopened, unknown shelf: " + attempt { try notes.persist(TxNote(id: 4, shelfId: "nowhere", text: "z")); return "ok" })
            lines.append("reopened, erased shelf: " + attempt { try notes.persist(TxNote(id: 6, shelfId: "s2", text: "e")); return "ok" })
            lines.append("reopened, shelf of a later commit: " + attempt { try notes.persist(TxNote(id: 7, shelfId: "s3", text: "f")); return "ok" })
            lines.append("reopened, notes: " + attempt { describe(try notes.readAll()) })
            try store.close()
        }
        do {
            let store = try backend.open(directory.url, .full)
            lines.append("reopened, shelves: " + attempt { describe(try store.anyStorage(for: TxShelf.self).readAll()) })
            try store.close()
        }
        return lines
    }

    /// The child's storage opened first in a new store, a note written that
    /// names a shelf no store holds, then the holder's storage opened.
    func childFirstOutcomes(_ backend: Backend) throws -> [String] {
        var lines: [String] = []
        let directory = try TemporaryDirectory()
        do {
            let store = try backend.open(directory.url, .full)
            let notes = try store.anyStorage(for: TxNote.self)
            lines.append("no holder yet: " + attempt { try notes.persist([TxNote(id: 1, shelfId: "nowhere", text: "x"), TxNote(id: 2, shelfId: "s1", text: "y")]); return "ok" })
            lines.append("holder opened: " + attempt {
                let shelves = try store.anyStorage(for: TxShelf.self)
                return describe(try shelves.readAll())
            })
            lines.append("shelf written: " + attempt {
                try store.anyStorage(for: TxShelf.self).persist(TxShelf(id: "s1", label: "one", boxes: [], notes: [TxNote(id: 3, shelfId: "s1", text: "z")]))
                return "ok"
            })
            lines.append("notes: " + attempt { describe(try notes.readAll()) })
            lines.append("unknown shelf now: " + attempt { try notes.persist(TxNote(id: 5, shelfId: "nowhere", text: "w")); return "ok" })
            try store.close()
        }
        do {
            let store = try backend.open(directory.url, .full)
            lines.append("reopened, shelves: " + attempt { describe(try store.anyStorage(for: TxShelf.self).readAll()) })
            lines.append("reopened, notes: " + attempt { describe(try store.anyStorage(for: TxNote.self).readAll()) })
            try store.close()
        }
        return lines
    }

    /// Known difference, not fixed: a child type that names no owner, opened
    /// and written before any storage of its holder in a new store, holds
    /// records stored on their own; opening the holder's storage then is
    /// refused by LMDB with `schemaMismatch` ("already holds records stored
    /// on their own"), by SQLite with `constraint` (rebuilding the child's
    /// table with its foreign key fails on notes naming no shelf), and
    /// accepted by the file stores, which keep the notes naming no shelf.
    /// The one answer should be LMDB's, on every backend, before anything
    /// is written.
    @Test("the child's storage opened and written before its holder's, in a new store: the holder is refused")
    func childFirst() throws {
        let refused = "holder opened: error(schemaMismatch, open, tx_shelves)"
        for backend in allBackends {
            let got = try childFirstOutcomes(backend)
            if backend.name == "lmdb" {
                #expect(got[1] == refused, "\(backend.name): \(got)")
            } else {
                withKnownIssue("a holder opened after its ownerless child was written alone: \(backend.name) does not refuse it with schemaMismatch") {
                    #expect(got[1] == refused, "\(backend.name): \(got)")
                }
            }
        }
    }

    @Test("refused alike when the holder is known: in the same process and after reopening")
    func holderKnown() throws {
        let expected = try outcomes(allBackends[2])  // sqlite
        for backend in allBackends {
            let got = try outcomes(backend)
            #expect(got == expected, "\(backend.name): \(got) against sqlite: \(expected)")
        }
    }
}
