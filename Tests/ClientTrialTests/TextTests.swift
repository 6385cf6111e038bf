import DAOCore
import Foundation
import TestSupport
import Testing

// Text: keys and values spelled in NFC and NFD, pasted text of every kind,
// and a spelling taken once the other is gone. docs/SEMANTICS.md: texts are
// equal when their Unicode scalars are; the property list refuses a second
// spelling of a text in one entity's document.

@Suite("Text: every spelling kept by its Unicode scalars")
struct TextTests {}

extension TextTests {
    @Suite("Client trial, library: NFC and NFD keys")
    struct LibraryDomain {
        @Test("NFC and NFD spellings are two keys (the property list refuses the second, as documented)", arguments: localBackends)
        func normalization(backend: TestBackend) throws {
            let directory = try TemporaryDirectory()
            let nfc = "Zo\u{EB}", nfd = "Zoe\u{308}"
            let libraries = [nfc, nfd].map {
                Library(uniqueId: $0, name: $0, city: $0, opened: Sample.epoch, rating: nil, shelves: [
                    Shelf(uniqueId: "shelf-" + $0, libraryCode: $0, floor: 0, label: $0, capacity: nil,
                          books: [Sample.book(Int64($0.unicodeScalars.count), shelf: "shelf-" + $0, author: $0)]),
                ])
            }
            try withLibrary(backend, in: directory.url) { daos, _ in
                try daos.libraries.persist(libraries[0])
                if backend.name == "plist" {
                    expectStorageError(.invalidArgument) { try daos.libraries.persist(libraries[1]) }
                    #expect(try daos.counts() == [1, 1, 1])
                    return
                }
                try daos.libraries.persist(libraries[1])
                #expect(try daos.counts() == [2, 2, 2])
                let byNFD = try daos.libraries.read(byPrimaryKey: nfd)
                #expect(byNFD.map { scalars($0.uniqueId) } == scalars(nfd))
                #expect(byNFD.map { scalars($0.name) } == scalars(nfd))
                #expect(try daos.books.read(where: #Predicate { $0.author == nfc }).map { scalars($0.author) } == [scalars(nfc)])
                #expect(try daos.shelves.read(where: #Predicate { $0.libraryCode == nfd }).map(\.uniqueId).map(scalars) == [scalars("shelf-" + nfd)])
                // Key order is scalar order: "Zoe\u{308}" < "Zo\u{EB}".
                #expect(try daos.libraries.read().map { scalars($0.uniqueId) } == [scalars(nfd), scalars(nfc)])
            }
            if backend.name == "plist" { return }
            try withLibrary(backend, in: directory.url) { daos, _ in
                let read = try daos.libraries.read()
                #expect(read.map { allScalars([$0]) } == [allScalars([libraries[1]]), allScalars([libraries[0]])])
            }
        }
    }
}

extension TextTests {
    @Suite("Client trial, logistics: codes in NFC and NFD")
    struct LogisticsDomain {
        @Test("codes equal in NFC but not in bytes are three shipments, each with its own parcels", arguments: localBackends)
        func spellings(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("logistics-spellings")
            var random = TestRandom(seed: 5)
            var next: Int64 = 0
            // The codes as given; every other text in NFC on plist.
            let twins = ["\u{C5}rhus", "A\u{30A}rhus", "\u{212B}rhus"].map { code -> Shipment in
                let made = Logistics.shipment("x", parcels: 2, &random, next: &next, oneSpelling: oneSpelling(backend))
                return Shipment(
                    uniqueId: code, destination: made.destination, due: made.due, priority: made.priority,
                    insured: made.insured, declaredValue: made.declaredValue, createdAt: made.createdAt,
                    parcels: made.parcels.map { var parcel = $0; parcel.shipmentCode = code; return parcel })
            }
            try withLogistics(backend, in: directory.url) { daos, _ in
                if backend.name == "plist" {
                    // docs/SEMANTICS.md: the property-list store refuses a second
                    // spelling of canonically equivalent text in one document.
                    try daos.shipments.persist(twins[0])
                    expectStorageError(.invalidArgument, "a second spelling on plist") { try daos.shipments.persist(twins[1]) }
                    let counts = try daos.counts()
                    #expect(counts[0] == 1)
                    return
                }
                try daos.shipments.persist(twins)
                for twin in twins {
                    let code = twin.uniqueId
                    let read = try daos.shipments.read(where: #Predicate { $0.code == code })
                    #expect(sameBits(read, [twin]), "\(backend.name): \(scalars(code))")
                    let parcels = try daos.parcels.read(where: #Predicate { $0.shipmentCode == code })
                    #expect(sameBits(parcels, twin.parcels), "\(backend.name): parcels of \(scalars(code))")
                }
                let erased = try daos.shipments.erase(byPrimaryKey: twins[1].uniqueId)
                let left = try daos.shipments.read()
                #expect(erased)
                #expect(sameBits(left, Logistics.keyOrder([twins[0], twins[2]])))
            }
        }

        @Test("a parcel naming its shipment's code in the other normalization is a constraint error", arguments: localBackends)
        func otherNormalization(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("logistics-nfd-child")
            var random = TestRandom(seed: 9)
            var next: Int64 = 0
            let nfc = Logistics.shipment("caf\u{E9}", parcels: 1, &random, next: &next, oneSpelling: true)
            var parcel = nfc.parcels[0]
            parcel.shipmentCode = "cafe\u{301}"
            try withLogistics(backend, in: directory.url) { daos, _ in
                let error = expectStorageError(nil, "\(backend.name)") { try daos.shipments.persist(nfc.with(parcels: [parcel])) }
                // The property-list store may refuse the second spelling first (invalidArgument).
                let allowed: Set<StorageError.Kind> = backend.name == "plist" ? [.constraint, .invalidArgument] : [.constraint]
                #expect(error.map { allowed.contains($0.kind) } ?? false, "\(backend.name): \(String(describing: error))")
                let counts = try daos.counts()
                #expect(counts == [0, 0, 0])
            }
        }
    }
}

// Text a client pastes into an issue tracker: carriage returns, a byte-order
// mark, line and paragraph separators, controls, noncharacters, the last
// scalar. Every field that holds text (keys too) must give back its scalars
// exactly, after reopening, on every backend.

extension TextTests {
    @Suite("Client trial, tracker: pasted text")
    struct TrackerPastedText {
        static let texts = [
            "a\r\nb", "\r", "\u{FEFF}bom", "line\u{2028}para\u{2029}", "\u{1}\u{1F}\u{7F}", "\u{FFFE}\u{FFFF}",
            "\u{10FFFF}", "tab\there", "\u{0}", " ", "\\\"'", "\u{85}next", "]]>&<", "$key",
        ]

        @Test("every text comes back with its scalars, after reopening", arguments: localBackends)
        func pasted(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("tracker-text")
            let projects = Self.texts.enumerated().map { index, text in
                let slug = "\(text)#\(index)"
                return Project(
                    uniqueId: slug, title: text, archived: false, createdAt: Tracker.time(index),
                    issues: [TrackedIssue(
                        uniqueId: Int64(index), projectSlug: slug, title: text, state: .open, assignee: text, due: nil,
                        priority: 0, updatedAt: Tracker.time(0),
                        comments: [TrackedComment(
                            uniqueId: text + "-c", issueId: Int64(index), author: text, body: text + text,
                            postedAt: Tracker.time(0), editedAt: nil, payload: Data(text.utf8))])])
            }
            try withTracker(backend, in: directory.url) { daos, _ in try daos.projects.persist(projects) }
            try withTracker(backend, in: directory.url) { daos, _ in
                let read = try daos.projects.read()
                let want = Tracker.sorted(projects)
                #expect(read.count == want.count, "\(backend.name)")
                for (got, wanted) in zip(read, want) where !exactly(got, wanted) {
                    Issue.record("\(backend.name): \(String(reflecting: wanted.title)) came back as \(String(reflecting: got.title)) / \(String(reflecting: got.uniqueId))")
                }
                for text in Self.texts {
                    let found = try daos.comments.read(where: #Predicate { $0.author == text }).map(\.author)
                    #expect(found.map { Array($0.utf8) } == [Array(text.utf8)], "\(backend.name): \(String(reflecting: text))")
                }
            }
        }
    }
}

// The property-list store refuses a text canonically equivalent to one stored
// in the same entity's document but spelled otherwise (docs/SEMANTICS.md).
// Once the other spelling is gone (its record erased or rewritten), the
// text is no longer equivalent to anything stored and must be taken.

extension TextTests {
    @Suite("Client trial, tracker: a spelling taken once the other is gone")
    struct TrackerSpelling {
        static func project(_ slug: String, title: String) -> Project {
            Project(uniqueId: slug, title: title, archived: false, createdAt: Tracker.time(0), issues: [])
        }

        @Test("erase the one spelling, then store the other", arguments: localBackends)
        func spellings(backend: TestBackend) throws {
            let directory = try TemporaryDirectory("tracker-spelling")
            let nfc = "caf\u{E9}", nfd = "cafe\u{301}"
            var lines: [String] = []
            func scalars(_ daos: TrackerDAOs) throws -> String {
                try daos.projects.read().map {
                    ($0.uniqueId + "/" + $0.title).unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " ")
                }.joined(separator: ", ")
            }
            try withTracker(backend, in: directory.url) { daos, _ in
                noteStep("NFC slug", in: &lines) { try daos.projects.persist(Self.project(nfc, title: "x")); return "ok" }
                noteStep("erased", in: &lines) { "\(try daos.projects.erase(byPrimaryKey: nfc))" }
                noteStep("NFD slug", in: &lines) { try daos.projects.persist(Self.project(nfd, title: "x")); return "ok" }
                noteStep("NFD slug erased by a predicate", in: &lines) {
                    "\(try daos.projects.erase(where: #Predicate { $0.title == "x" }))"
                }
                noteStep("NFC title", in: &lines) { try daos.projects.persist(Self.project("p", title: nfc)); return "ok" }
            }
            try withTracker(backend, in: directory.url) { daos, _ in
                noteStep("erased after reopening", in: &lines) { "\(try daos.projects.erase(byPrimaryKey: "p"))" }
                noteStep("NFD title", in: &lines) { try daos.projects.persist(Self.project("q", title: nfd)); return "ok" }
            }
            try withTracker(backend, in: directory.url) { daos, _ in
                noteStep("every project erased after reopening", in: &lines) { "\(try daos.projects.erase())" }
                noteStep("NFC slug and title", in: &lines) { try daos.projects.persist(Self.project(nfc, title: nfc)); return "ok" }
                noteStep("read", in: &lines) { try scalars(daos) }
            }
            #expect(lines == [
                "NFC slug: ok", "erased: true", "NFD slug: ok", "NFD slug erased by a predicate: 1", "NFC title: ok",
                "erased after reopening: true", "NFD title: ok", "every project erased after reopening: 1",
                "NFC slug and title: ok", "read: 63 61 66 e9 2f 63 61 66 e9",
            ], "\(backend.name)")
        }
    }
}
