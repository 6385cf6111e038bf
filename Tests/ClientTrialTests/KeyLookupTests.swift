import DAOCore
import Foundation
import TestSupport
import Testing

// Looking records up by key as a client does: keys in another normalization
// than stored, repeated and missing keys, keys in any order. docs/SEMANTICS.md:
// keys are equal when their Unicode scalars are; `read(byPrimaryKeys:)`
// answers in the order of the keys and skips missing ones.

@Suite("Client trial: key lookups by Unicode scalars, with repeated and missing keys")
struct KeyLookupTests {
    @Test("a key spelled in another normalization finds nothing; every backend answers alike")
    func lookups() throws {
        let nfc = "Zo\u{EB}", nfd = "Zoe\u{308}"
        var answers: [String: [String]] = [:]
        for backend in localBackends {
            let directory = try TemporaryDirectory()
            try withLibrary(backend, in: directory.url) { daos, _ in
                try daos.libraries.persist([
                    Library(uniqueId: nfc, name: "nfc", city: nil, opened: Sample.epoch, rating: nil, shelves: [
                        Shelf(uniqueId: "s-" + nfc, libraryCode: nfc, floor: 0, label: "", capacity: nil,
                              books: [Sample.book(1, shelf: "s-" + nfc)]),
                    ]),
                    Library(uniqueId: "b", name: "b", city: nil, opened: Sample.epoch, rating: nil, shelves: []),
                    Library(uniqueId: "a", name: "a", city: nil, opened: Sample.epoch, rating: nil, shelves: []),
                ])
                // Only the NFC spelling is stored.
                #expect(try daos.libraries.read(byPrimaryKey: nfd) == nil, "\(backend.name)")
                #expect(try daos.shelves.read(byPrimaryKey: "s-" + nfd) == nil, "\(backend.name)")
                #expect(try daos.libraries.count(where: #Predicate { $0.code == nfd }) == 0, "\(backend.name)")
                #expect(try daos.libraries.read(where: #Predicate { [nfd, "x"].contains($0.code) }).isEmpty, "\(backend.name)")
                #expect(try daos.shelves.count(where: #Predicate { $0.libraryCode == nfd }) == 0, "\(backend.name)")
                // A child naming its owner in the other spelling names no owner.
                expectStorageError(.constraint, "\(backend.name)") {
                    try daos.shelves.persist(Shelf(uniqueId: "s2", libraryCode: nfd, floor: 0, label: "", capacity: nil, books: []))
                }

                let read = try daos.libraries.read(byPrimaryKeys: ["b", nfd, nfc, "missing", "a", nfc, "b"])
                #expect(read.map(\.name).first == "b", "\(backend.name): in the order of the keys")
                #expect(!read.map(\.name).contains("missing"), "\(backend.name)")
                // A repeated key gives its record again, as many times as asked.
                #expect(read.map(\.name) == ["b", "nfc", "a", "nfc", "b"], "\(backend.name)")
                answers["read(byPrimaryKeys:)", default: []].append("\(read.map(\.name))")

                #expect(try daos.libraries.erase(byPrimaryKey: nfd) == false, "\(backend.name)")
                #expect(try daos.counts() == [3, 1, 1], "\(backend.name): nothing erased by the other spelling")
                let erased = try daos.libraries.erase(byPrimaryKeys: ["a", "a", nfd, "missing"])
                answers["erase(byPrimaryKeys:)", default: []].append("\(erased)")
                #expect(erased == 1, "\(backend.name): a repeated key erases one record, counted once")
                // Key order is scalar order: "Z" (U+005A) before "b".
                #expect(try daos.libraries.read().map(\.name) == ["nfc", "b"], "\(backend.name)")
            }
        }
        for (call, perBackend) in answers {
            #expect(Set(perBackend).count == 1, "backends differ on \(call): \(zip(localBackends.map(\.name), perBackend).map { "\($0): \($1)" })")
        }
    }

    @Test("a key or indexed text over 511 bytes: LMDB refuses it before writing, the others store it",
          arguments: localBackends)
    func longKeys(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        let long = String(repeating: "ß", count: 300)  // 600 bytes of UTF-8
        try withLibrary(backend, in: directory.url) { daos, _ in
            let byKey = Library(uniqueId: long, name: "", city: nil, opened: Sample.epoch, rating: nil, shelves: [])
            let byIndex = Library(uniqueId: "short", name: "", city: long, opened: Sample.epoch, rating: nil, shelves: [])
            if backend.name == "lmdb" {
                expectStorageError(.invalidArgument) { try daos.libraries.persist(byKey) }
                expectStorageError(.invalidArgument) { try daos.libraries.persist([byIndex]) }
                #expect(try daos.libraries.count() == 0)
            } else {
                try daos.libraries.persist([byKey, byIndex])
                #expect(try daos.libraries.read(byPrimaryKey: long) == byKey)
                #expect(try daos.libraries.read(where: #Predicate { $0.city == long }) == [byIndex])
            }
        }
    }
}
