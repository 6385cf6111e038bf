import CLMDB
import DAOCore

/// A walk of every page reachable from one meta page of an LMDB data file
/// (LMDB 0.9 data format, 64-bit build), read through a bounds-checked view of
/// the file: a private read-only mapping made for the walk, never liblmdb's.
///
/// From the meta page's two databases (the free list, `FREE_DBI`, and the
/// main database) it follows every branch node to its child, every
/// `F_SUBDATA` node of the main database to the named database it describes
/// (its `MDB_db` record), every `F_SUBDATA | F_DUPDATA` node of an
/// `MDB_DUPSORT` database to its sub-database, every `F_DUPDATA` node to the
/// sub-page inside it, and every `F_BIGDATA` node to its overflow pages. It
/// refuses, as ``StorageError/Kind/corrupt`` naming the page:
///
/// - a page number outside `2...last_pgno`, or a page (or an overflow page's
///   run of pages) that does not lie wholly inside the file;
/// - a page reached twice (a visited bitmap), so no walk can loop;
/// - a page whose header names another page number, or whose type is not the
///   one its place in the tree calls for: a branch page above the tree's
///   depth (`md_depth`), a leaf page at it (`P_LEAF2` only in an
///   `MDB_DUPFIXED` sub-database), an overflow page under an `F_BIGDATA`
///   node; any other flag (`P_DIRTY` included, which a writer would take for
///   a page it may change in place) is damage;
/// - a page whose free-space bounds (`mp_lower`, `mp_upper`) are not
///   ordered inside the page, a branch page with fewer than two keys (one on
///   the free list) or a leaf page with none, which liblmdb asserts on;
/// - a node that does not lie wholly inside its page (its header, key and
///   data, found by `mp_ptrs`), a key longer than liblmdb's limit, node flags
///   that are not LMDB's or not allowed where they are, an `MDB_db` record
///   of another size than 48 bytes, a sub-page whose header, bounds or nodes
///   do not fit inside its node;
/// - an overflow run shorter than the value its node names, or past the end
///   of the file;
/// - a free-list entry whose page list is longer than its value, names a
///   page outside `2...last_pgno`, a page listed twice, or a page in use;
/// - pages past the end of the file that are not all on the free list
///   (liblmdb does not write pages a transaction allocated and freed again,
///   so only those may be missing).
///
/// What it does not check: the order of the keys, the bytes of keys and
/// values, the counts of an `MDB_db` record (`md_entries`, page counts), and
/// pages that are neither in use nor free (leaked pages). None of those makes
/// liblmdb read outside the file.
struct PageWalk {
    // Page flags (`mp_flags`).
    private static let branchPage: UInt16 = 0x01
    private static let leafPage: UInt16 = 0x02
    private static let overflowPage: UInt16 = 0x04
    private static let dirtyPage: UInt16 = 0x10
    private static let leaf2Page: UInt16 = 0x20
    private static let subPage: UInt16 = 0x40
    // Node flags (`mn_flags`) of a leaf node.
    private static let bigData: UInt16 = 0x01
    private static let subData: UInt16 = 0x02
    private static let dupData: UInt16 = 0x04
    // Database flags (`md_flags`).
    private static let dupSortFlag: UInt16 = 0x04
    private static let dupFixedFlag: UInt16 = 0x10
    /// `PAGEHDRSZ`, the fixed part of an `MDB_node` (`NODESIZE`), `sizeof(MDB_db)`.
    private static let headerSize = 16
    private static let nodeHeaderSize = 8
    private static let databaseRecordSize = 48
    /// liblmdb's `CURSOR_STACK`: no tree it reads is deeper.
    private static let maxDepth = 32
    private static let invalidPage = UInt64.max

    /// The longest key liblmdb stores (`mdb_env_get_maxkeysize`, a constant
    /// of the library's build).
    static let maxKeySize: Int = {
        var env: OpaquePointer?
        guard mdb_env_create(&env) == MDB_SUCCESS, let env else { return 511 }
        defer { mdb_env_close(env) }
        return Int(mdb_env_get_maxkeysize(env))
    }()

    /// One tree to walk: what it is, and what its nodes may hold.
    struct Tree {
        enum Kind { case free, main, named, duplicates }
        var kind: Kind
        var name: String
        var flags: UInt16
        var depth: Int
        var root: UInt64

        var isDupSort: Bool { flags & PageWalk.dupSortFlag != 0 }
        var isDupFixed: Bool { flags & PageWalk.dupFixedFlag != 0 }
    }

    private let file: UnsafeRawBufferPointer
    private let path: String
    private let pageSize: Int
    private let lastPage: UInt64
    /// The pages that lie wholly inside the file.
    private let filePages: UInt64
    private let maxKeySize: Int
    private var visited: [UInt64]
    private var free: [UInt64]
    /// Pages (overflow pages included) the walk went through.
    private(set) var pagesVisited = 0

    /// A walk over `file` (the whole data file, mapped), whose meta page in
    /// use names `lastPage`. The caller has checked that `lastPage` is not
    /// absurdly far past the end of the file (the bitmaps are sized by it).
    init(file: UnsafeRawBufferPointer, path: String, pageSize: Int, lastPage: UInt64) {
        self.file = file
        self.path = path
        self.pageSize = pageSize
        self.lastPage = lastPage
        filePages = UInt64(file.count / pageSize)
        maxKeySize = Self.maxKeySize
        let words = Int(lastPage / 64) + 1
        visited = [UInt64](repeating: 0, count: words)
        free = [UInt64](repeating: 0, count: words)
    }

    /// Walks the free list, then the main database and everything it leads
    /// to, then checks the free list against the pages in use and the pages
    /// missing from the file's end.
    mutating func run(free freeTree: Tree, main: Tree) throws {
        try walk(freeTree)
        try walk(main)
        for index in visited.indices where visited[index] & free[index] != 0 {
            let page = UInt64(index) * 64 + UInt64((visited[index] & free[index]).trailingZeroBitCount)
            throw corrupt(page, "it is in use and on the free list too")
        }
        if filePages <= lastPage {
            for page in filePages...lastPage where !isSet(free, page) {
                throw corrupt(
                    page,
                    "the data file holds \(file.count) bytes, which end before this page, and it is not on the free list: the file was truncated (its meta page names pages up to \(lastPage) of \(pageSize) bytes)"
                )
            }
        }
    }

    // MARK: - Trees and pages

    private mutating func walk(_ tree: Tree) throws {
        guard tree.root != Self.invalidPage else { return }
        guard tree.depth >= 1, tree.depth <= Self.maxDepth else {
            throw corrupt(tree.root, "it is the root of \(tree.name), whose depth is \(tree.depth)")
        }
        try walkPage(tree.root, level: 1, tree, parent: nil)
    }

    private mutating func walkPage(_ number: UInt64, level: Int, _ tree: Tree, parent: UInt64?) throws {
        try claim(number, in: tree, parent: parent)
        let base = Int(number) * pageSize
        let named = load(UInt64.self, base)
        guard named == number else {
            throw corrupt(number, "its header names page \(named) (in \(tree.name))")
        }
        let flags = load(UInt16.self, base + 10)
        let isLeaf = level == tree.depth
        let expected = isLeaf ? Self.leafPage : Self.branchPage
        let isLeaf2 = isLeaf && tree.kind == .duplicates && tree.isDupFixed && flags == Self.leafPage | Self.leaf2Page
        guard flags == expected || isLeaf2 else {
            throw corrupt(
                number,
                "its flags are 0x\(String(flags, radix: 16)) where a \(isLeaf ? "leaf" : "branch") page of \(tree.name) (level \(level) of \(tree.depth)) belongs"
            )
        }
        let lower = Int(load(UInt16.self, base + 12))
        let upper = Int(load(UInt16.self, base + 14))
        guard lower >= Self.headerSize, lower <= upper, upper <= pageSize else {
            throw corrupt(number, "its free-space bounds \(lower) and \(upper) do not fit a page of \(pageSize) bytes")
        }
        let count = (lower - Self.headerSize) >> 1
        let fewest = isLeaf || tree.kind == .free ? 1 : 2
        guard count >= fewest else {
            throw corrupt(number, "this \(isLeaf ? "leaf" : "branch") page of \(tree.name) holds \(count) keys")
        }
        if isLeaf2 {
            let keySize = Int(load(UInt16.self, base + 8))
            guard keySize >= 1, keySize <= maxKeySize, Self.headerSize + count * keySize <= pageSize else {
                throw corrupt(number, "its \(count) keys of \(keySize) bytes do not fit the page")
            }
            return
        }
        for slot in 0..<count {
            let node = Int(load(UInt16.self, base + Self.headerSize + 2 * slot))
            guard node >= upper, node + Self.nodeHeaderSize <= pageSize else {
                throw corrupt(number, "node \(slot) at offset \(node) lies outside the page's nodes (\(upper)..<\(pageSize))")
            }
            let at = base + node
            let low = UInt64(load(UInt16.self, at))
            let high = UInt64(load(UInt16.self, at + 2))
            let nodeFlags = load(UInt16.self, at + 4)
            let keySize = Int(load(UInt16.self, at + 6))
            let dataStart = node + Self.nodeHeaderSize + keySize
            guard keySize <= maxKeySize, dataStart <= pageSize else {
                throw corrupt(number, "node \(slot) has a key of \(keySize) bytes, which does not fit")
            }
            if !isLeaf {
                try walkPage(low | high << 16 | UInt64(nodeFlags) << 32, level: level + 1, tree, parent: number)
                continue
            }
            let dataSize = Int(low | high << 16)
            if tree.kind == .free && keySize != 8 {
                throw corrupt(number, "node \(slot) of the free list has a key of \(keySize) bytes, not a transaction id")
            }
            if nodeFlags == Self.bigData && tree.kind != .duplicates {
                guard dataStart + 8 <= pageSize else {
                    throw corrupt(number, "node \(slot) names overflow pages but does not hold their number")
                }
                let first = load(UInt64.self, base + dataStart)
                let value = try overflow(first, size: dataSize, in: tree, parent: number)
                if tree.kind == .free { try freeList(at: value, size: dataSize, page: first) }
                continue
            }
            guard dataStart + dataSize <= pageSize else {
                throw corrupt(number, "node \(slot)'s value of \(dataSize) bytes runs past the end of the page")
            }
            let data = base + dataStart
            switch (nodeFlags, tree.kind) {
            case (0, .free):
                try freeList(at: data, size: dataSize, page: number)
            case (0, _):
                break
            case (Self.subData, .main):
                guard dataSize == Self.databaseRecordSize else {
                    throw corrupt(number, "node \(slot) names a database with a record of \(dataSize) bytes")
                }
                let name = String(decoding: UnsafeRawBufferPointer(rebasing: file[(at + Self.nodeHeaderSize)..<(base + dataStart)]), as: UTF8.self)
                try walk(database(at: data, kind: .named, name: "database '\(name)'"))
            case (Self.subData | Self.dupData, .main), (Self.subData | Self.dupData, .named):
                guard tree.isDupSort, dataSize == Self.databaseRecordSize else {
                    throw corrupt(number, "node \(slot) names a sub-database (\(dataSize) bytes) in \(tree.name), which keeps no duplicates")
                }
                try walk(database(at: data, kind: .duplicates, name: "a sub-database of \(tree.name) in page \(number)", inheriting: tree.flags))
            case (Self.dupData, .main), (Self.dupData, .named):
                guard tree.isDupSort else {
                    throw corrupt(number, "node \(slot) holds duplicates in \(tree.name), which keeps none")
                }
                try checkSubPage(at: data, size: dataSize, page: number, slot: slot, tree: tree)
            default:
                throw corrupt(number, "node \(slot) has flags 0x\(String(nodeFlags, radix: 16)), which \(tree.name) cannot hold")
            }
        }
    }

    /// The `MDB_db` record at `offset` as a tree to walk.
    private func database(at offset: Int, kind: Tree.Kind, name: String, inheriting: UInt16? = nil) -> Tree {
        // A sub-database's record carries the flags of its database.
        let flags = inheriting ?? load(UInt16.self, offset + 4)
        return Tree(
            kind: kind, name: name, flags: flags, depth: Int(load(UInt16.self, offset + 6)),
            root: load(UInt64.self, offset + 40))
    }

    /// An inline sub-page of duplicates (`F_DUPDATA` without `F_SUBDATA`):
    /// a leaf page of `size` bytes inside its node, its node offsets relative
    /// to its own start.
    private func checkSubPage(at start: Int, size: Int, page: UInt64, slot: Int, tree: Tree) throws {
        let what = "the duplicates of node \(slot)"
        guard size >= Self.headerSize else {
            throw corrupt(page, "\(what) take \(size) bytes, less than a page header")
        }
        let flags = load(UInt16.self, start + 10)
        let allowed = Self.leafPage | Self.subPage | Self.dirtyPage | (tree.isDupFixed ? Self.leaf2Page : 0)
        guard flags & (Self.leafPage | Self.subPage) == Self.leafPage | Self.subPage, flags & ~allowed == 0 else {
            throw corrupt(page, "\(what) are not a sub-page (flags 0x\(String(flags, radix: 16)))")
        }
        let lower = Int(load(UInt16.self, start + 12))
        let upper = Int(load(UInt16.self, start + 14))
        guard lower >= Self.headerSize, lower <= upper, upper <= size else {
            throw corrupt(page, "\(what) have free-space bounds \(lower) and \(upper) outside their \(size) bytes")
        }
        let count = (lower - Self.headerSize) >> 1
        guard count >= 1 else { throw corrupt(page, "\(what) are none") }
        if flags & Self.leaf2Page != 0 {
            let keySize = Int(load(UInt16.self, start + 8))
            guard keySize >= 1, keySize <= maxKeySize, Self.headerSize + count * keySize <= size else {
                throw corrupt(page, "\(what): \(count) of \(keySize) bytes do not fit their \(size) bytes")
            }
            return
        }
        for index in 0..<count {
            let node = Int(load(UInt16.self, start + Self.headerSize + 2 * index))
            guard node >= upper, node + Self.nodeHeaderSize <= size else {
                throw corrupt(page, "\(what): duplicate \(index) at offset \(node) lies outside their \(size) bytes")
            }
            let at = start + node
            let dataSize = Int(load(UInt16.self, at)) | Int(load(UInt16.self, at + 2)) << 16
            let keySize = Int(load(UInt16.self, at + 6))
            guard load(UInt16.self, at + 4) == 0, keySize <= maxKeySize,
                node + Self.nodeHeaderSize + keySize + dataSize <= size
            else {
                throw corrupt(page, "\(what): duplicate \(index) (\(keySize) bytes) does not fit their \(size) bytes")
            }
        }
    }

    /// Checks the overflow run that starts at page `first` and holds a value
    /// of `size` bytes; returns the offset of the value in the file.
    private mutating func overflow(_ first: UInt64, size: Int, in tree: Tree, parent: UInt64) throws -> Int {
        try claim(first, in: tree, parent: parent)
        let base = Int(first) * pageSize
        let named = load(UInt64.self, base)
        let flags = load(UInt16.self, base + 10)
        guard named == first, flags == Self.overflowPage else {
            throw corrupt(first, "it is not an overflow page (it names page \(named), flags 0x\(String(flags, radix: 16))), which page \(parent) of \(tree.name) names")
        }
        let pages = UInt64(load(UInt32.self, base + 12))
        let needed = UInt64((Self.headerSize - 1 + size) / pageSize + 1)
        guard pages >= needed else {
            throw corrupt(first, "its run of \(pages) overflow pages is shorter than the \(needed) its value of \(size) bytes needs")
        }
        guard first + pages - 1 <= lastPage, first + pages <= filePages else {
            throw corrupt(
                first,
                "its run of \(pages) overflow pages runs past \(first + pages - 1 > lastPage ? "the last page, \(lastPage)" : "the end of the file (\(file.count) bytes)")")
        }
        if pages > 1 {
            for page in (first + 1)..<(first + pages) {
                guard !isSet(visited, page) else {
                    throw corrupt(page, "it is reached twice (the overflow run of page \(first) covers it)")
                }
                set(&visited, page)
            }
            pagesVisited += Int(pages) - 1
        }
        return base + Self.headerSize
    }

    /// Records the pages of one free-list entry (`MDB_IDL`: a count, then the
    /// page numbers), `size` bytes at `offset`.
    private mutating func freeList(at offset: Int, size: Int, page: UInt64) throws {
        guard size >= 8 else {
            throw corrupt(page, "a free-list entry holds \(size) bytes")
        }
        let count = load(UInt64.self, offset)
        guard count <= UInt64(size / 8 - 1) else {
            throw corrupt(page, "a free-list entry names \(count) pages in \(size) bytes")
        }
        for index in 0..<Int(count) {
            let id = load(UInt64.self, offset + 8 * (index + 1))
            guard id >= 2, id <= lastPage else {
                throw corrupt(page, "a free-list entry names page \(id), outside pages 2...\(lastPage)")
            }
            guard !isSet(free, id) else {
                throw corrupt(page, "a free-list entry names page \(id), which is on the free list already")
            }
            set(&free, id)
        }
    }

    /// Marks page `number` visited: it must be a page of the file other than
    /// the meta pages, and not visited before.
    private mutating func claim(_ number: UInt64, in tree: Tree, parent: UInt64?) throws {
        guard number >= 2, number <= lastPage, number < filePages, !isSet(visited, number) else {
            let from = parent.map { "page \($0) of \(tree.name)" } ?? "the meta page, as the root of \(tree.name)"
            if number < 2 || number > lastPage {
                throw corrupt(parent ?? number, "\(from) names page \(number), outside pages 2...\(lastPage)")
            }
            if number >= filePages {
                throw corrupt(
                    number,
                    "\(from) names it, and it lies past the end of the data file (\(file.count) bytes): the file was truncated")
            }
            throw corrupt(number, "it is reached twice (\(from) names it again)")
        }
        set(&visited, number)
        pagesVisited += 1
    }

    // MARK: - Reading

    @inline(__always)
    private func isSet(_ bits: [UInt64], _ page: UInt64) -> Bool {
        bits[Int(page >> 6)] & (1 << (page & 63)) != 0
    }

    @inline(__always)
    private func set(_ bits: inout [UInt64], _ page: UInt64) {
        bits[Int(page >> 6)] |= 1 << (page & 63)
    }

    /// A value of the file at `offset`. Every caller has checked first that
    /// the bytes lie inside a page (or a value, or a sub-page) that lies
    /// inside the file: a page number below the file's page count, a node
    /// inside its page, a value inside its node or overflow run.
    @inline(__always)
    private func load<T: FixedWidthInteger>(_ type: T.Type, _ offset: Int) -> T {
        assert(offset >= 0 && offset + MemoryLayout<T>.size <= file.count, "PageWalk read outside the file")
        // liblmdb writes its pages in the machine's byte order.
        return file.loadUnaligned(fromByteOffset: offset, as: T.self)
    }

    private func corrupt(_ page: UInt64, _ message: String) -> StorageError {
        StorageError(.corrupt, .open, path: path, engineCode: MDB_CORRUPTED, message: "page \(page) is damaged: \(message)")
    }
}
