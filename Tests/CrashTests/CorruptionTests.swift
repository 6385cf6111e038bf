import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One way to damage one file of a store.
enum Damage: CustomStringConvertible {
    case delete
    case truncate(Int)
    case flip(offset: Int, mask: UInt8)
    /// Overwrites `count` bytes at `offset` with zeros (`fill == nil`) or with
    /// bytes from the generator seeded by `fill`.
    case overwrite(offset: Int, count: Int, fill: UInt64?)

    var description: String {
        switch self {
        case .delete: "deleted"
        case .truncate(let size): "truncated to \(size) bytes"
        case .flip(let offset, let mask): "byte \(offset) xor 0x\(String(mask, radix: 16))"
        case .overwrite(let offset, let count, let fill): "\(count) bytes at \(offset) \(fill == nil ? "zeroed" : "overwritten with garbage")"
        }
    }

    /// Whether the damage changes bytes without changing the file's size.
    var changesBytesInPlace: Bool {
        switch self {
        case .flip, .overwrite: true
        case .delete, .truncate: false
        }
    }

    func apply(to url: URL) throws {
        switch self {
        case .delete:
            try FileManager.default.removeItem(at: url)
        case .truncate(let size):
            guard Glibc.truncate(url.path, off_t(size)) == 0 else { throw POSIXError(.EIO) }
        case .flip(let offset, let mask):
            var data = try Data(contentsOf: url)
            data[data.startIndex + offset] ^= mask
            try data.write(to: url)
        case .overwrite(let offset, let count, let fill):
            var data = try Data(contentsOf: url)
            var random = TestRandom(seed: fill ?? 0)
            for index in offset..<min(offset + count, data.count) {
                data[data.startIndex + index] = fill == nil ? 0 : UInt8(truncatingIfNeeded: random.next())
            }
            try data.write(to: url)
        }
    }

    /// The damages to try on a file of `size` bytes: every kind, at offsets
    /// spread over the file (`scale` more of each in a torture run).
    static func cases(size: Int, scale: Int, random: inout TestRandom) -> [Damage] {
        var cases: [Damage] = [.delete]
        var sizes: Set<Int> = [0, 1, size / 2, max(size - 1, 0)]
        for page in stride(from: 4096, to: size, by: 4096) where sizes.count < 8 * scale { sizes.insert(page) }
        for _ in 0..<(4 * scale) { sizes.insert(random.below(size)) }
        cases += sizes.filter { $0 < size }.sorted().map { .truncate($0) }
        guard size > 0 else { return cases }
        for _ in 0..<(8 * scale) {
            cases.append(.flip(offset: random.below(size), mask: UInt8(1 + random.below(255))))
        }
        for _ in 0..<(3 * scale) {
            let offset = random.below(max(size / 4096, 1)) * 4096
            cases.append(.overwrite(offset: offset, count: 4096, fill: random.below(2) == 0 ? nil : random.next()))
            cases.append(.overwrite(offset: random.below(size), count: 1 + random.below(64), fill: random.next()))
        }
        return cases
    }
}

/// Each file of a seeded store, damaged in many ways (truncated at many
/// offsets, bytes flipped, pages zeroed or overwritten, deleted); then a child
/// process opens the store and reads everything. The verdict must be a typed
/// `StorageError` or exactly the data written: never a crash, never a store
/// that opens empty, never wrong records.
@Suite("Corruption: damaged files give a typed error or the right data")
struct CorruptionTests {
    static let transactions = 40
    /// Cases per backend in `make test`; every case in `make torture`.
    static let sample = 24

    @Test("a damaged file never crashes, empties or falsifies the store", arguments: backends)
    func damagedFiles(backend: String) throws {
        let original = try TemporaryDirectory("crash-corrupt-\(backend)")
        defer { original.remove() }
        let seed = "7"
        let writer = try HelperProcess.run(["write", backend, original.url.path, seed, String(Self.transactions)])
        try #require(writer.status == 0, "\(writer)")
        let intact = try HelperProcess.run(["verify", backend, original.url.path, seed, String(Self.transactions)])
        try #require(intact.status == 0, "the undamaged store: \(intact)")

        var random = TestRandom(seed: Torture.seed ^ UInt64(backend.utf8.count))
        let files = try FileManager.default.contentsOfDirectory(atPath: original.url.path).sorted()
        var cases: [(file: String, damage: Damage)] = []
        for file in files {
            let size = try (FileManager.default.attributesOfItem(atPath: original.url.appendingPathComponent(file).path)[.size] as? Int) ?? 0
            cases += Damage.cases(size: size, scale: Torture.isOn ? 6 : 1, random: &random).map { (file, $0) }
        }
        if !Torture.isOn {
            // A fixed sample, so `make test` stays short; every file keeps its deletion.
            var sampled = cases.filter { if case .delete = $0.damage { true } else { false } }
            var rest = cases.filter { if case .delete = $0.damage { false } else { true } }
            while sampled.count < Self.sample && !rest.isEmpty {
                sampled.append(rest.remove(at: random.below(rest.count)))
            }
            cases = sampled
        }
        var outcomes: [String: Int] = [:]
        for (file, damage) in cases {
            let copy = try TemporaryDirectory("crash-case-\(backend)")
            defer { copy.remove() }
            try FileManager.default.removeItem(at: copy.url)
            try FileManager.default.copyItem(at: original.url, to: copy.url)
            try damage.apply(to: copy.url.appendingPathComponent(file))
            // When every file left is empty or gone, nothing tells the store
            // from a new one: an empty store is then a right answer too.
            let noTrace = try FileManager.default.contentsOfDirectory(atPath: copy.url.path).allSatisfy { name in
                let size = try FileManager.default.attributesOfItem(atPath: copy.url.appendingPathComponent(name).path)[.size]
                return (size as? Int) == 0
            }
            let accepted = [String(Self.transactions)] + (noTrace ? ["0"] : [])
            let verdict = try HelperProcess.run(["verify", backend, copy.url.path, seed] + accepted)
            let kind = verdict.hung ? "hung" : verdict.signal.map { "signal \($0)" } ?? (verdict.status == 10
                ? String(verdict.output.split(separator: ":").first ?? "error") : "status \(verdict.status)")
            outcomes[kind, default: 0] += 1
            let message: Comment = "\(backend): \(file) \(damage) (torture seed \(Torture.seed)): \(verdict)"
            if backend == "sqlite" && damage.changesBytesInPlace && verdict.status == 20 {
                withKnownIssue(
                    "SQLite keeps no checksum of its pages: a changed byte inside a row can read back as a wrong value (docs/CRASHES.md)"
                ) {
                    Issue.record(message)
                }
            } else if backend == "lmdb" && damage.changesBytesInPlace && verdict.status == 20 {
                // A crash is no known issue: the open check walks every page
                // liblmdb will read.
                withKnownIssue(
                    "LMDB pages carry no checksum: changed key bytes that leave every size as it was can hide a record from reads (docs/LMDB.md)"
                ) {
                    Issue.record(message)
                }
            } else {
                #expect(verdict.status == 0 || verdict.status == 10, message)
            }
        }
        print("\(backend): \(cases.count) damaged copies of \(files.count) files: \(outcomes.sorted { $0.key < $1.key })")
    }
}

/// The damages liblmdb itself does not survive (it maps a truncated file and
/// dies of SIGBUS; it aborts on a zeroed root page), each of which the adapter
/// must refuse at open with `corrupt`.
@Suite("Corruption: LMDB data files liblmdb cannot read")
struct LMDBOpenCheckTests {
    @Test("a truncated data file, damaged meta pages, a zeroed root page, a removed data file: corrupt, not a crash")
    func damagedDataFile() throws {
        let original = try TemporaryDirectory("crash-lmdb-open")
        defer { original.remove() }
        let writer = try HelperProcess.run(["write", "lmdb", original.url.path, "3", "40"])
        try #require(writer.status == 0, "\(writer)")
        let data = try Data(contentsOf: original.url.appendingPathComponent("data.mdb"))
        let pageSize = 4096
        #expect(data.count % pageSize == 0 && data.count > 4 * pageSize)
        // The meta page in use is the one with the larger transaction id.
        func word(_ offset: Int) -> UInt64 {
            data.subdata(in: offset..<(offset + 8)).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
        }
        let meta = word(pageSize + 144) > word(144) ? pageSize : 0
        let mainRoot = Int(word(meta + 128))
        try #require(mainRoot >= 2 && mainRoot * pageSize < data.count)
        let cases: [(String, Damage)] = [
            ("data.mdb", .truncate(data.count - pageSize)),
            ("data.mdb", .truncate(data.count / 2)),
            ("data.mdb", .truncate(2 * pageSize)),
            ("data.mdb", .truncate(pageSize + 100)),
            ("data.mdb", .truncate(100)),
            ("data.mdb", .truncate(0)),
            ("data.mdb", .delete),
            ("data.mdb", .overwrite(offset: 0, count: pageSize, fill: nil)),
            ("data.mdb", .overwrite(offset: pageSize, count: pageSize, fill: nil)),
            ("data.mdb", .overwrite(offset: pageSize, count: pageSize, fill: 99)),
            ("data.mdb", .flip(offset: meta + 16, mask: 0xFF)),
            ("data.mdb", .overwrite(offset: mainRoot * pageSize, count: pageSize, fill: nil)),
            ("data.mdb", .overwrite(offset: mainRoot * pageSize, count: 16, fill: 5)),
        ]
        for (file, damage) in cases {
            let copy = try TemporaryDirectory("crash-lmdb-open-case")
            defer { copy.remove() }
            try FileManager.default.removeItem(at: copy.url)
            try FileManager.default.copyItem(at: original.url, to: copy.url)
            try damage.apply(to: copy.url.appendingPathComponent(file))
            let verdict = try HelperProcess.run(["verify", "lmdb", copy.url.path, "3", "40"])
            // A cut that takes only pages on the free list loses nothing
            // (liblmdb does not even write some of them): the exact data of
            // the 40 transactions is then the right answer.
            let cutFreePagesOnly: Bool
            if case .truncate = damage { cutFreePagesOnly = verdict.status == 0 && verdict.output.trimmingCharacters(in: .whitespacesAndNewlines) == "ok 40" } else { cutFreePagesOnly = false }
            #expect(
                (verdict.status == 10 && verdict.output.hasPrefix("error corrupt")) || cutFreePagesOnly,
                "\(file) \(damage): \(verdict)")
        }
    }
}

/// The kinds of damage inside an LMDB data file's trees that crashed liblmdb
/// (its assertion `IS_LEAF(mp)`, SIGSEGV) or the adapter (SIGBUS reading a
/// value past the end of the file): each must be `corrupt` at open, naming
/// the data file and the damaged page, in a child process.
@Suite("Corruption: LMDB pages damaged inside the trees")
struct LMDBPageCheckTests {
    /// One page of a data file as a test reads it: enough of LMDB's format
    /// (0.9, 64-bit) to find a page of each kind to damage.
    struct FileReader {
        let data: [UInt8]
        let pageSize = 4096

        func u16(_ offset: Int) -> Int { Int(data[offset]) | Int(data[offset + 1]) << 8 }
        func u64(_ offset: Int) -> UInt64 {
            (0..<8).reduce(0) { $0 | UInt64(data[offset + $1]) << (8 * $1) }
        }
        func flags(_ page: Int) -> Int { u16(page * pageSize + 10) }
        func count(_ page: Int) -> Int { (u16(page * pageSize + 12) - 16) / 2 }
        func node(_ page: Int, _ slot: Int) -> Int { page * pageSize + u16(page * pageSize + 16 + 2 * slot) }

        /// The meta page in use: the one with the larger transaction id.
        var metaOffset: Int { u64(pageSize + 144) > u64(144) ? pageSize : 0 }

        /// Every page reachable from the main database, as (page, flags,
        /// parent, database name), with the overflow pages its leaves name.
        func pages() -> [(page: Int, flags: Int, parent: Int?, database: String)] {
            var found: [(page: Int, flags: Int, parent: Int?, database: String)] = []
            func walk(_ page: Int, parent: Int?, named: String?) {
                found.append((page, flags(page), parent, named ?? ""))
                for slot in 0..<count(page) {
                    let node = node(page, slot)
                    let nodeFlags = u16(node + 4)
                    let keySize = u16(node + 6)
                    if flags(page) & 0x01 != 0 {
                        walk(Int(u64(node) & 0xFFFF_FFFF_FFFF), parent: page, named: named)
                    } else if nodeFlags == 0x01 {
                        let overflow = Int(u64(node + 8 + keySize))
                        found.append((overflow, flags(overflow), page, named ?? ""))
                    } else if nodeFlags == 0x02 && named == nil {
                        let name = String(decoding: data[(node + 8)..<(node + 8 + keySize)], as: UTF8.self)
                        let root = u64(node + 8 + keySize + 40)
                        if root != UInt64.max { walk(Int(root), parent: nil, named: name) }
                    }
                }
            }
            walk(Int(u64(metaOffset + 128)), parent: nil, named: nil)
            return found
        }
    }

    @Test("a zeroed leaf page, a branch page naming a page past the file, an overflow run past the file, a value past its page")
    func damagedPages() throws {
        let original = try TemporaryDirectory("crash-lmdb-pages")
        defer { original.remove() }
        // Dialogs with 100 messages each: branch pages in the messages'
        // database; and the crash helper's store, with overflow pages.
        let writer = try HelperProcess.run(["write", "lmdb", original.url.path, "5", "60"])
        try #require(writer.status == 0, "\(writer)")
        let filler = try HelperProcess.run(["fill", "lmdb", original.url.path, "5", "100"])
        try #require(filler.status == 0, "\(filler)")
        let intact = try HelperProcess.run(["read-filled", "lmdb", original.url.path, "5", "100"])
        try #require(intact.status == 0 && intact.output.hasPrefix("ok 100 dialogs, 10000 messages"), "the undamaged store: \(intact)")
        let file = FileReader(data: [UInt8](try Data(contentsOf: original.url.appendingPathComponent("data.mdb"))))
        let filePages = file.data.count / file.pageSize
        let pages = file.pages()
        // Leaves of the records' databases, not of the ones every open reads.
        let leaves = pages.filter { $0.flags == 0x02 && $0.parent != nil && !$0.database.hasPrefix("__") }
        let branches = pages.filter { $0.flags == 0x01 }
        let overflows = pages.filter { $0.flags == 0x04 }
        // A leaf whose first node holds its value in the page.
        let plainLeaf = leaves.first { file.u16(file.node($0.page, 0) + 4) == 0 }
        let leaf = try #require(leaves.last, "no leaf under a branch page in \(pages)")
        let branch = try #require(branches.first, "no branch page in \(pages)")
        let overflow = try #require(overflows.first, "no overflow page in \(pages)")
        let valueLeaf = try #require(plainLeaf, "no leaf with a value in its page")

        func patch(_ offset: Int, _ bytes: [UInt8]) -> (inout [UInt8]) -> Void {
            { data in data.replaceSubrange(offset..<(offset + bytes.count), with: bytes) }
        }
        func little(_ value: UInt64, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        let branchNode = file.node(branch.page, 1)
        let valueNode = file.node(valueLeaf.page, 0)
        let cases: [(String, Int, (inout [UInt8]) -> Void)] = [
            ("a zeroed leaf page", leaf.page, patch(leaf.page * file.pageSize, [UInt8](repeating: 0, count: file.pageSize))),
            // The child's page number: mn_lo, mn_hi, then the high bits in mn_flags.
            ("a branch page naming a page past the file", branch.page,
             patch(branchNode, little(UInt64(filePages + 1000), 6))),
            ("an overflow run past the file", overflow.page,
             patch(overflow.page * file.pageSize + 12, little(UInt64(filePages), 4))),
            ("a value whose length runs past its page", valueLeaf.page, patch(valueNode, little(0xFFFF, 4))),
        ]
        for (what, page, damage) in cases {
            let copy = try TemporaryDirectory("crash-lmdb-pages-case")
            defer { copy.remove() }
            try FileManager.default.removeItem(at: copy.url)
            try FileManager.default.copyItem(at: original.url, to: copy.url)
            var bytes = file.data
            damage(&bytes)
            try Data(bytes).write(to: copy.url.appendingPathComponent("data.mdb"))
            let verdict = try HelperProcess.run(["read-filled", "lmdb", copy.url.path, "5", "100"])
            #expect(verdict.status == 10 && verdict.output.hasPrefix("error corrupt"), "\(what): \(verdict)")
            #expect(verdict.output.contains("page \(page) is damaged"), "\(what) (page \(page)): \(verdict)")
            #expect(verdict.output.contains("data.mdb"), "\(what): \(verdict)")
            if page == leaf.page {
                // Without the walk the open reads the meta and root pages
                // only, and this file opens (a read of that page could crash).
                let unchecked = try HelperProcess.run(["open-meta-pages-only", "lmdb", copy.url.path, "5", "100"])
                #expect(unchecked.status == 0 && unchecked.output.hasPrefix("ok"), "\(what), metaPages: \(unchecked)")
            }
        }
    }

    /// A value on overflow pages whose length runs past the end of the file:
    /// liblmdb hands out a pointer to it without reading it. With the walk
    /// the open refuses the file; without it (``metaPages``) the adapter's
    /// bounds check must refuse the value as it is read, where reading it
    /// would die of SIGBUS.
    @Test("a value running past the end of the file: corrupt at open, and corrupt when read without the walk")
    func valuePastTheFile() throws {
        let original = try TemporaryDirectory("crash-lmdb-value-past")
        defer { original.remove() }
        let writer = try HelperProcess.run(["write", "lmdb", original.url.path, "5", "60"])
        try #require(writer.status == 0, "\(writer)")
        let file = FileReader(data: [UInt8](try Data(contentsOf: original.url.appendingPathComponent("data.mdb"))))
        let filePages = file.data.count / file.pageSize
        // The overflow run nearest the end of the file, and the leaf node naming it.
        let overflow = try #require(
            file.pages().filter { $0.flags == 0x04 }.max { $0.page < $1.page }, "no overflow page")
        let leaf = try #require(overflow.parent)
        let node = try #require(
            (0..<file.count(leaf)).map { file.node(leaf, $0) }.first { node in
                file.u16(node + 4) == 0x01 && Int(file.u64(node + 8 + file.u16(node + 6))) == overflow.page
            }, "no node names overflow page \(overflow.page)")
        // The value's length (mn_lo, mn_hi): up to a page past the file's end.
        let length = (filePages - overflow.page) * file.pageSize
        var bytes = file.data
        for index in 0..<4 { bytes[node + index] = UInt8(truncatingIfNeeded: length >> (8 * index)) }
        try Data(bytes).write(to: original.url.appendingPathComponent("data.mdb"))

        let walked = try HelperProcess.run(["verify", "lmdb", original.url.path, "5", "60"])
        #expect(walked.status == 10 && walked.output.hasPrefix("error corrupt"), "with the walk: \(walked)")
        #expect(walked.output.contains("page \(leaf) is damaged") || walked.output.contains("page \(overflow.page) is damaged"), "\(walked)")
        let unwalked = try HelperProcess.run(["verify", "lmdb-metapages", original.url.path, "5", "60"])
        #expect(unwalked.status == 10 && unwalked.output.hasPrefix("error corrupt"), "without the walk: \(unwalked)")
        #expect(unwalked.output.contains("liblmdb gave \(length) bytes") && unwalked.output.contains("data.mdb"), "\(unwalked)")
        // A migration reads every value of the entity it rewrites through
        // the same check (the value is a chapter's long text).
        let migrated = try HelperProcess.run(["migrate-chapters", "lmdb-metapages", original.url.path, "5", "60"])
        #expect(migrated.status == 10 && migrated.output.contains("error corrupt"), "a migration without the walk: \(migrated)")
        #expect(migrated.output.contains("liblmdb gave \(length) bytes"), "\(migrated)")
    }
}
