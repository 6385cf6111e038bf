import DAOCore
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

// Damaged files, as a client meets them: a store's files truncated, a byte
// changed, a file removed, files the store did not write lying in its
// directory. The verdict must be a typed StorageError or exactly the data
// written, and the files the store did not write must be left as they were.
// Only damages every engine is documented to detect are done here, in this
// process (docs/CRASHES.md: a changed byte inside an SQLite row, or inside an
// LMDB page's structure, is not detected, and the latter can crash a reader;
// Tests/CrashTests damages every file in a child process).

/// Files a client keeps next to a store: none may be touched by it.
let foreignFiles: [String: Data] = [
    "notes.txt": Data("my notes\n".utf8),
    // A copy of a store document under a name of a version 1 document's shape.
    "backup-2024.json": Data(#"{"entity":"trial_books","records":[],"version":1}"#.utf8),
    // The same shape of name, but not a store document.
    "backup-2023.json": Data(#"{"mine":[1,2,3]}"#.utf8),
    // The name of a document of another file store (another identity).
    "dao-0123456789abcdef0123456789abcdef-1-trial_books.json": Data(#"{"entity":"trial_books","records":[]}"#.utf8),
    "trial_books-1.json": Data("[]".utf8),
    "store.sqlite.bak": Data(repeating: 0x5A, count: 100),
    ".hidden": Data(),
]

/// Of `foreignFiles`, those a file store does not take for its own documents:
/// a directory holding a store document (of any store, or a file named like a
/// version 1 document that reads as one) but no manifest is refused as a store
/// whose manifest was lost (docs/ARCHITECTURE.md, "The file store"), so the others are
/// planted once the store exists.
let neutralFileNames: Set<String> = ["notes.txt", "backup-2023.json", "store.sqlite.bak", ".hidden"]

/// Writes `foreignFiles` (only the neutral ones when `neutralOnly`) into `directory`.
func plantForeignFiles(in directory: URL, neutralOnly: Bool = false) throws {
    for (name, data) in foreignFiles where !neutralOnly || neutralFileNames.contains(name) {
        try data.write(to: directory.appendingPathComponent(name))
    }
}

/// Records an issue for each foreign file that is missing or changed.
func expectForeignFilesUntouched(in directory: URL, _ context: String, sourceLocation: SourceLocation = #_sourceLocation) {
    for (name, data) in foreignFiles {
        let now = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path)
        #expect(now == data, "\(context): \(name) was \(now == nil ? "removed" : "changed")", sourceLocation: sourceLocation)
    }
}

/// The names of the regular files in `directory`.
func fileNames(in directory: URL) throws -> Set<String> {
    Set(try FileManager.default.contentsOfDirectory(atPath: directory.path))
}

/// A copy of `source` in a fresh temporary directory.
func copy(of source: URL) throws -> TemporaryDirectory {
    let copy = try TemporaryDirectory("trial-damaged")
    for name in try fileNames(in: source) {
        try FileManager.default.copyItem(at: source.appendingPathComponent(name), to: copy.url.appendingPathComponent(name))
    }
    return copy
}

/// One way to damage a file.
enum Damage: CustomStringConvertible {
    case remove, truncate(toFraction: Double), flipByte(atFraction: Double), zeroHead(bytes: Int)

    var description: String {
        switch self {
        case .remove: "removed"
        case .truncate(let fraction): "truncated to \(fraction) of its size"
        case .flipByte(let fraction): "a byte flipped at \(fraction) of its size"
        case .zeroHead(let bytes): "its first \(bytes) bytes zeroed"
        }
    }

    func apply(to url: URL) throws {
        var data = try Data(contentsOf: url)
        switch self {
        case .remove:
            try FileManager.default.removeItem(at: url)
            return
        case .truncate(let fraction):
            data = data.prefix(Int(Double(data.count) * fraction))
        case .flipByte(let fraction):
            guard !data.isEmpty else { return }
            let offset = min(data.count - 1, Int(Double(data.count) * fraction))
            data[offset] ^= 0x41
        case .zeroHead(let bytes):
            data.replaceSubrange(0..<min(bytes, data.count), with: Data(count: min(bytes, data.count)))
        }
        try data.write(to: url)
    }
}

/// The damages each backend is documented to detect, by file name.
func detectedDamages(_ backend: String, file: String) -> [Damage] {
    switch (backend, file) {
    case ("json", _), ("plist", _):
        return [.remove, .truncate(toFraction: 0), .truncate(toFraction: 0.5), .truncate(toFraction: 0.999),
                .flipByte(atFraction: 0.5), .flipByte(atFraction: 0.02), .flipByte(atFraction: 0.98)]
    case ("sqlite", "store.sqlite"):
        // Removing or emptying SQLite's only file leaves a new store (documented).
        return [.truncate(toFraction: 0.5), .zeroHead(bytes: 100), .flipByte(atFraction: 0.001)]
    case ("lmdb", "data.mdb"):
        return [.remove, .truncate(toFraction: 0.5), .truncate(toFraction: 0.01), .zeroHead(bytes: 8192)]
    case ("lmdb", "lock.mdb"):
        // The lock file holds no data: without it, the data as written.
        return [.remove, .truncate(toFraction: 0)]
    default:
        return []
    }
}

@Suite("Client trial: damaged files and files the store did not write")
struct DamageTests {
    /// A closed store holding the corpus, with foreign files beside it.
    func seeded(_ backend: TestBackend) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory("trial-seeded")
        try plantForeignFiles(in: directory.url, neutralOnly: true)
        try withLibrary(backend, in: directory.url) { daos, _ in
            try plantForeignFiles(in: directory.url)
            try daos.libraries.persist(Sample.corpus())
            // Several commits, so that the file stores hold deltas too.
            try daos.books.persist(Sample.book(9_000, shelf: "x", title: "late"))
            _ = try daos.books.erase(byPrimaryKey: 9_000)
        }
        expectForeignFilesUntouched(in: directory.url, "\(backend.name) after seeding")
        return directory
    }

    @Test("every documented damage is a typed error or the data as written; foreign files are untouched",
          arguments: localBackends)
    func damagedFiles(backend: TestBackend) throws {
        let seeded = try seeded(backend)
        let storeFiles = try fileNames(in: seeded.url).subtracting(foreignFiles.keys)
        #expect(!storeFiles.isEmpty)
        var detected = 0
        for file in storeFiles.sorted() {
            for damage in detectedDamages(backend.name, file: file) {
                let copy = try copy(of: seeded.url)
                try damage.apply(to: copy.url.appendingPathComponent(file))
                let context = "\(backend.name): \(file) \(damage)"
                do {
                    let read = try withLibrary(backend, in: copy.url) { daos, _ in
                        (try daos.libraries.read(), try daos.shelves.read(), try daos.books.read())
                    }
                    let corpus = Sample.sortedCorpus()
                    #expect(read.0 == corpus, "\(context): the store opened with other data")
                    #expect(read.1 == corpus.flatMap(\.shelves).sorted { ScalarKey(text: $0.uniqueId) < ScalarKey(text: $1.uniqueId) },
                            "\(context): other shelves")
                    #expect(read.2 == corpus.flatMap(\.shelves).flatMap(\.books).sorted { $0.uniqueId < $1.uniqueId },
                            "\(context): other books")
                } catch let error as StorageError {
                    detected += 1
                    #expect([.corrupt, .schemaMismatch].contains(error.kind), "\(context): \(error)")
                    #expect(!error.message.isEmpty)
                } catch {
                    Issue.record("\(context): not a StorageError: \(type(of: error)) \(error)")
                }
                expectForeignFilesUntouched(in: copy.url, context)
            }
        }
        // The damages chosen here are all detectable: at least one per file was seen.
        #expect(detected > 0)
    }

    @Test("a file store is not created over another store's document; the document is left alone",
          arguments: localBackends.filter(\.isFileStore))
    func notCreatedOverAStoreDocument(backend: TestBackend) throws {
        let directory = try TemporaryDirectory()
        try plantForeignFiles(in: directory.url)
        let error = expectStorageError(.corrupt) { _ = try backend.open(directory.url) }
        #expect(error?.message.contains("manifest") == true)
        expectForeignFilesUntouched(in: directory.url, backend.name)
    }

    @Test("a store writes, rewrites and reopens beside files it did not write, and leaves them alone",
          arguments: localBackends)
    func foreignFilesSurviveWork(backend: TestBackend) throws {
        let seeded = try seeded(backend)
        for round in 0..<3 {
            try withLibrary(backend, in: seeded.url) { daos, _ in
                // Enough rewrites that the file stores merge deltas and replace documents.
                for id in Int64(0)..<12 {
                    try daos.books.persist(Sample.book(10_000 + id, shelf: "central-a", title: "round \(round)"))
                }
                #expect(try daos.books.erase(where: #Predicate { $0.id >= 10_000 }) == 12)
                _ = try daos.libraries.erase()
                try daos.libraries.persist(Sample.corpus())
            }
            expectForeignFilesUntouched(in: seeded.url, "\(backend.name), round \(round)")
        }
        try withLibrary(backend, in: seeded.url) { daos, _ in
            let read = try daos.libraries.read()
            #expect(read == Sample.sortedCorpus())
        }
    }

    @Test("a store in a directory it cannot write is a typed error, not a crash or a loss", arguments: localBackends)
    func readOnlyDirectory(backend: TestBackend) throws {
        let seeded = try seeded(backend)
        let files = try fileNames(in: seeded.url)
        var before: [String: Data] = [:]
        for name in files { before[name] = FileManager.default.contents(atPath: seeded.url.appendingPathComponent(name).path) }
        for name in files { chmod(seeded.url.appendingPathComponent(name).path, 0o444) }
        chmod(seeded.url.path, 0o555)
        defer {
            chmod(seeded.url.path, 0o755)
            for name in files { chmod(seeded.url.appendingPathComponent(name).path, 0o644) }
        }
        // In a process of its own, which gives up root first when it has it
        // (root writes to a read-only directory anyway): see StoreHelper's
        // `trial-read-only`.
        let helper = try HelperProcess(["trial-read-only", backend.name, seeded.url.path])
        var lines: [String] = []
        while let line = helper.readLine() { lines.append(line) }
        let (status, errors) = helper.wait()
        try #require(status == 0, "\(lines) \(errors)")
        let uid = try #require(lines.first.flatMap { $0.hasPrefix("uid ") ? UInt32($0.dropFirst(4)) : nil }, "\(lines)")
        #expect(uid != 0, "the store ran as root")
        let typed = ["error readOnly", "error io"]
        if lines.count == 2 {
            // Refused at open (LMDB cannot take its lock file): a typed error.
            #expect(lines[1].hasPrefix("open error "), "\(lines)")
            #expect(typed.contains(String(lines[1].dropFirst(5))), "\(lines)")
        } else {
            // Opened: what was written reads back, the write is refused.
            #expect(lines.count == 5, "\(lines)")
            #expect(lines.dropFirst().first == "open ok", "\(lines)")
            #expect(lines.dropFirst(2).first == "read \(Sample.corpus().count) equal", "\(lines)")
            #expect(lines.dropFirst(3).first.map { typed.contains(String($0.dropFirst(8))) } == true, "\(lines)")
            #expect(lines.dropFirst(4).first.map { $0 == "close ok" || typed.contains(String($0.dropFirst(6))) } == true,
                    "\(lines)")
        }
        // Nothing was removed, added or changed.
        #expect(try fileNames(in: seeded.url) == files)
        for name in files {
            #expect(FileManager.default.contents(atPath: seeded.url.appendingPathComponent(name).path) == before[name],
                    "\(name) changed")
        }
        chmod(seeded.url.path, 0o755)
        try withLibrary(backend, in: seeded.url) { daos, _ in
            let read = try daos.libraries.read()
            #expect(read == Sample.sortedCorpus())
        }
        expectForeignFilesUntouched(in: seeded.url, backend.name)
    }
}
