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

    func outcomes(_ backend: TestBackend) throws -> [String] {
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

    /// The child's storage opened first in a new store, notes written that
    /// name a shelf no store holds, then the holder's storage opened: refused
    /// before anything is recorded or written, in this process and after
    /// reopening, until the notes written on their own are erased.
    func childFirstOutcomes(_ backend: TestBackend) throws -> [String] {
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
            let notes = try store.anyStorage(for: TxNote.self)
            lines.append("reopened, notes: " + attempt { describe(try notes.readAll()) })
            lines.append("notes erased: " + attempt { "\(try notes.eraseAll())" })
            lines.append("holder opened after erasing: " + attempt { describe(try store.anyStorage(for: TxShelf.self).readAll()) })
            lines.append("shelf written after erasing: " + attempt {
                try store.anyStorage(for: TxShelf.self).persist(TxShelf(id: "s1", label: "one", boxes: [], notes: [TxNote(id: 3, shelfId: "s1", text: "z")]))
                return "ok"
            })
            lines.append("unknown shelf at last: " + attempt { try notes.persist(TxNote(id: 6, shelfId: "nowhere", text: "v")); return "ok" })
            lines.append("known shelf at last: " + attempt { try notes.persist(TxNote(id: 7, shelfId: "s1", text: "u")); return "ok" })
            try store.close()
        }
        do {
            let store = try backend.open(directory.url, .full)
            lines.append("reopened at last, shelves: " + attempt { describe(try store.anyStorage(for: TxShelf.self).readAll()) })
            lines.append("reopened at last, notes: " + attempt { describe(try store.anyStorage(for: TxNote.self).readAll()) })
            try store.close()
        }
        return lines
    }

    @Test("the child's storage opened and written before its holder's, in a new store: the holder is refused alike")
    func childFirst() throws {
        let refused = "error(schemaMismatch, open, tx_shelves)"
        let expected = try childFirstOutcomes(allBackends[3])  // lmdb
        #expect(expected[1] == "holder opened: " + refused, "lmdb: \(expected)")
        #expect(expected[2] == "shelf written: " + refused, "lmdb: \(expected)")
        #expect(expected[5] == "reopened, shelves: " + refused, "lmdb: \(expected)")
        #expect(expected[8] == "holder opened after erasing: []", "lmdb: \(expected)")
        for backend in allBackends {
            let got = try childFirstOutcomes(backend)
            #expect(got == expected, "\(backend.name): \(got) against lmdb: \(expected)")
        }
    }

    @Test("the refusal names the holder, the child and what to do", arguments: allBackends)
    func childFirstMessage(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let store = try backend.open(directory.url, .full)
        try store.anyStorage(for: TxNote.self).persist(TxNote(id: 1, shelfId: "nowhere", text: "x"))
        let error = expectStorageError { _ = try store.anyStorage(for: TxShelf.self) }
        try store.close()
        #expect(error?.kind == .schemaMismatch)
        #expect(error?.operation == .open)
        #expect(error?.entity == "tx_shelves")
        let message = error?.message ?? ""
        for part in ["'tx_notes'", "'tx_shelves.notes'", "open the storage of 'tx_shelves'", "erase the records of 'tx_notes'"] {
            #expect(message.contains(part), "\(backend.name): \(message)")
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
