import DAOCore
import Foundation
import TestSupport
import Testing

// LMDB keys hold at most 511 bytes (docs/SEMANTICS.md, "Limits of one
// backend"). A child is stored under its parent's key: a child key and a
// parent key each well under the limit can together pass it.

@Suite("Conformance: a child whose key and parent's key are each short but long together")
struct LongChildKeyTests {
    @Test("300-byte keys at two levels: LMDB refuses with invalidArgument and writes nothing; the others store them")
    func twoLevels() throws {
        let boxId = String(repeating: "b", count: 300)
        let item = TxItem(id: String(repeating: "i", count: 300), boxId: boxId, name: "n", count: nil)
        let shelf = TxShelf(
            id: "s", label: "l",
            boxes: [TxBox(id: boxId, shelfId: "s", label: "x", rank: 0, weight: nil, items: [item])], notes: [])
        for backend in allBackends {
            try withStore(backend) { store, _ in
                let shelves = try store.anyStorage(for: TxShelf.self)
                var message = ""
                let outcome = attempt {
                    do {
                        try shelves.persist(shelf)
                    } catch let error as StorageError {
                        message = error.message
                        throw error
                    }
                    return "ok"
                }
                let stored = try shelves.readAll()
                if backend.name == "lmdb" {
                    #expect(outcome == "error(invalidArgument, persist, tx_shelves)", "\(backend.name)")
                    #expect(stored.isEmpty, "\(backend.name)")
                    #expect(message.contains("longer than LMDB allows"), "\(backend.name): \(message)")
                    // The record whose key is too long is named: the item,
                    // not the shelf persisted nor the box between them.
                    let named = "record \"\(String(repeating: "i", count: 24))…\" (300 bytes in UTF-8) of 'tx_items'"
                    #expect(message.hasPrefix(named), "\(backend.name): \(message)")
                } else {
                    #expect(outcome == "ok", "\(backend.name)")
                    #expect(stored == [shelf], "\(backend.name)")
                }
                try store.close()
            }
        }
    }

    @Test("a key too long at the top level: LMDB names the record persisted; the others store it")
    func topLevel() throws {
        let shelf = TxShelf(id: "é" + String(repeating: "s", count: 600), label: "l", boxes: [], notes: [])
        for backend in allBackends {
            try withStore(backend) { store, _ in
                let shelves = try store.anyStorage(for: TxShelf.self)
                var message = ""
                let outcome = attempt {
                    do {
                        try shelves.persist(shelf)
                    } catch let error as StorageError {
                        message = error.message
                        throw error
                    }
                    return "ok"
                }
                if backend.name == "lmdb" {
                    #expect(outcome == "error(invalidArgument, persist, tx_shelves)", "\(backend.name)")
                    let named = "record \"é\(String(repeating: "s", count: 23))…\" (602 bytes in UTF-8) of 'tx_shelves'"
                    #expect(message.hasPrefix(named), "\(backend.name): \(message)")
                    #expect(try shelves.readAll().isEmpty, "\(backend.name)")
                } else {
                    #expect(outcome == "ok", "\(backend.name)")
                    #expect(try shelves.readAll() == [shelf], "\(backend.name)")
                }
                try store.close()
            }
        }
    }
}
