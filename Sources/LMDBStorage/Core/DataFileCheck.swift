import CLMDB
import DAOCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Checks an environment's data file before liblmdb maps it.
///
/// liblmdb trusts its file: a data file shorter than the pages its meta page
/// names is mapped anyway, and reading past the end kills the process with
/// `SIGBUS`; a zeroed or garbage page makes it abort on an assertion or read
/// through a wild pointer. So before `mdb_env_open` the adapter reads both
/// meta pages itself (LMDB 0.9 data format, version 1) and refuses, with
/// ``StorageError/Kind/corrupt`` naming the data file:
///
/// - a meta page that is not one (wrong page number, flags, magic, version or
///   page size), or two that disagree on the page size;
/// - a meta page in use (the one with the larger transaction id) that names
///   an impossible last page;
/// - a data file that is missing or empty while the lock file exists and
///   holds liblmdb's lock table: the environment existed, and opening would
///   create an empty one in its place. An empty lock file proves nothing:
///   liblmdb sizes the lock file before it creates the data file, so an
///   empty one is what a first open that failed there (a full disk, a file
///   size limit) leaves, and such a directory opens as a new environment.
///
/// Then, with ``LMDBEnvironment/FileCheck/everyPage`` (the default), it walks
/// every page reachable from the meta page in use (``PageWalk``, which lists
/// what it refuses) and names the damaged page. With
/// ``LMDBEnvironment/FileCheck/metaPages`` it checks only the two root pages'
/// headers and the file's length: a data file shorter than
/// `(last_pgno + 1) × page size` is refused unless every page past its end is
/// on the free list (liblmdb does not write pages a transaction allocated
/// and freed again). See docs/LMDB.md, "Damaged files".
enum DataFileCheck {
    /// `MDB_meta` offsets in a meta page (64-bit build: `pgno_t` and `size_t`
    /// are 8 bytes); the page header is 16 bytes.
    private enum Offset {
        static let pageNumber = 0
        static let pageFlags = 10
        static let magic = 16
        static let version = 20
        static let pageSize = 40  // mm_dbs[FREE_DBI].md_pad
        static let freeFlags = 44
        static let freeDepth = 46
        static let freeRoot = 80
        static let mainFlags = 92
        static let mainDepth = 94
        static let mainRoot = 128
        static let lastPage = 136
        static let transactionID = 144
        static let end = 152
    }

    private static let magic: UInt32 = 0xBEEF_C0DE
    private static let dataVersion: UInt32 = 1
    private static let metaFlag: UInt16 = 0x08
    private static let branchFlag: UInt16 = 0x01
    private static let leafFlag: UInt16 = 0x02
    private static let overflowFlag: UInt16 = 0x04
    private static let invalidPage = UInt64.max
    /// `PAGEHDRSZ` and the fixed part of an `MDB_node`.
    private static let pageHeaderSize = 16
    private static let nodeHeaderSize = 8
    /// `F_BIGDATA`: the node's data is on overflow pages.
    private static let bigDataFlag: UInt16 = 0x01

    /// One meta page, as read.
    struct Meta {
        var pageSize: Int
        var freeFlags: UInt16
        var freeDepth: Int
        var freeRoot: UInt64
        var mainFlags: UInt16
        var mainDepth: Int
        var mainRoot: UInt64
        var lastPage: UInt64
        var transactionID: UInt64
    }

    /// Checks the data file of the environment at `path` (a directory, or the
    /// data file itself when `isFile`).
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` as described on the type,
    ///   ``StorageError/Kind/io`` when the file cannot be read.
    static func check(path: String, isFile: Bool, walkingPages: Bool = true) throws {
        let dataPath = isFile ? path : path + "/data.mdb"
        let lockPath = isFile ? path + "-lock" : path + "/lock.mdb"
        var status = stat()
        guard stat(dataPath, &status) == 0 else {
            let code = errno
            if code == ENOENT && lockTableExists(lockPath) {
                throw corrupt(
                    dataPath,
                    "the data file is missing but the lock file is there: the environment existed and its data file was removed")
            }
            return  // a new environment (or an error mdb_env_open reports)
        }
        let size = UInt64(status.st_size)
        if size == 0 {
            if lockTableExists(lockPath) {
                throw corrupt(
                    dataPath,
                    "the data file is empty but the lock file is there: the environment existed and its data file was truncated (if it never held data, remove the directory)")
            }
            return  // a new environment
        }
        let fd = open(dataPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            throw StorageError(
                LMDBError.kind(code), .open, path: dataPath, engineCode: code,
                message: "the data file could not be opened to check it: \(String(cString: strerror(code)))")
        }
        defer { close(fd) }
        // Another process may be committing to a live environment while this
        // runs: a round whose meta pages changed under it proves nothing either
        // way and is repeated. A file that keeps changing is being written, not
        // damaged, and is left to liblmdb.
        for _ in 0..<8 {
            let before = try transactionIDs(fd, path: dataPath)
            let verdict: StorageError?
            do {
                try checkRound(fd, path: dataPath, walkingPages: walkingPages)
                verdict = nil
            } catch let error as StorageError where error.kind == .corrupt {
                verdict = error
            }
            guard try transactionIDs(fd, path: dataPath) == before else { continue }
            if let verdict { throw verdict }
            return
        }
    }

    /// Whether the lock file at `path` exists and is not empty: liblmdb sizes
    /// it for its lock table when it first opens an environment, before it
    /// creates the data file, so an empty or missing one shows that no
    /// environment was opened here.
    private static func lockTableExists(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_size > 0
    }

    /// The transaction ids of the two meta pages, or `nil` when they cannot
    /// be read (the round that follows says why).
    private static func transactionIDs(_ fd: Int32, path: String) throws -> [UInt64]? {
        var bytes = [UInt8](repeating: 0, count: Offset.end)
        guard pread(fd, &bytes, Offset.end, 0) == Offset.end else { return nil }
        let pageSize = Int(load(UInt32.self, bytes, Offset.pageSize))
        guard pageSize >= 512, pageSize <= 65536 else { return nil }
        let first = load(UInt64.self, bytes, Offset.transactionID)
        guard pread(fd, &bytes, Offset.end, off_t(pageSize)) == Offset.end else { return nil }
        return [first, load(UInt64.self, bytes, Offset.transactionID)]
    }

    /// One reading of the meta pages and the root pages they name. The file's
    /// size is taken after the meta pages are read: data files only grow, and
    /// a commit writes its pages before its meta page.
    private static func checkRound(_ fd: Int32, path dataPath: String, walkingPages: Bool) throws {
        let first = try readMeta(fd, at: 0, index: 0, path: dataPath, size: try fileSize(fd, dataPath))
        let second = try readMeta(fd, at: UInt64(first.pageSize), index: 1, path: dataPath, size: try fileSize(fd, dataPath))
        guard first.pageSize == second.pageSize else {
            throw corrupt(dataPath, "the two meta pages disagree on the page size (\(first.pageSize), \(second.pageSize))")
        }
        // liblmdb uses the meta page with the larger transaction id.
        let meta = second.transactionID > first.transactionID ? second : first
        let size = try fileSize(fd, dataPath)
        let pageSize = UInt64(meta.pageSize)
        let (pages, overflow) = meta.lastPage.addingReportingOverflow(1)
        let (needed, overflow2) = pages.multipliedReportingOverflow(by: pageSize)
        guard meta.lastPage >= 1, !overflow, !overflow2 else {
            throw corrupt(dataPath, "the meta page (transaction \(meta.transactionID)) names an impossible last page \(meta.lastPage)")
        }
        if walkingPages {
            try walk(fd, meta: meta, size: size, path: dataPath)
            return
        }
        // liblmdb does not write the pages a transaction allocated and freed
        // again (loose pages, overflow pages of a value put and erased): a
        // sound file can end before `last_pgno` when every page past its end
        // is on the free list.
        if size < needed {
            let firstMissing = size / pageSize
            guard try tailIsFree(fd, meta: meta, from: firstMissing, path: dataPath) else {
                throw corrupt(
                    dataPath,
                    "the data file holds \(size) bytes but its meta page (transaction \(meta.transactionID)) names pages up to \(meta.lastPage) of \(pageSize) bytes, and pages from \(firstMissing) on are not all free: it was truncated")
            }
        }
        for (name, root) in [("main", meta.mainRoot), ("free", meta.freeRoot)] where root != invalidPage {
            guard root >= 2, root <= meta.lastPage else {
                throw corrupt(dataPath, "the \(name) database's root page \(root) is outside pages 2...\(meta.lastPage)")
            }
            var header = [UInt8](repeating: 0, count: 16)
            try readExactly(fd, &header, at: root * pageSize, path: dataPath)
            let number = load(UInt64.self, header, Offset.pageNumber)
            let flags = load(UInt16.self, header, Offset.pageFlags)
            guard number == root, flags & (branchFlag | leafFlag) != 0 else {
                throw corrupt(
                    dataPath,
                    "the \(name) database's root page \(root) is damaged (it names page \(number), flags \(flags))")
            }
        }
    }

    /// The walk's mapping: private and read-only; on Linux populated in the
    /// `mmap` call (`MAP_POPULATE`: the kernel reads the file ahead and maps
    /// every page at once, instead of a page fault for every few pages as
    /// the walk reaches them, reading the disk in the walk's order; the
    /// figures are in docs/ARCHITECTURE.md's LMDB section).
    #if os(Linux)
        private static let walkMappingFlags = MAP_PRIVATE | MAP_POPULATE
    #else
        private static let walkMappingFlags = MAP_PRIVATE
    #endif

    /// Walks every page reachable from `meta` (``PageWalk``) through a
    /// private read-only mapping of the file's `size` bytes.
    private static func walk(_ fd: Int32, meta: Meta, size: UInt64, path: String) throws {
        let pageSize = UInt64(meta.pageSize)
        // Pages past the end of the file must all be on the free list, whose
        // entries take 8 bytes each: a meta page naming more is damaged
        // (and the walk's bitmaps, sized by the last page, stay small).
        let filePages = size / pageSize
        guard meta.lastPage < filePages + size / 8 else {
            throw corrupt(
                path,
                "the meta page (transaction \(meta.transactionID)) names pages up to \(meta.lastPage), far past the end of the file (\(size) bytes): it was truncated or the meta page is damaged")
        }
        guard let length = Int(exactly: size),
            let mapped = mmap(nil, length, PROT_READ, walkMappingFlags, fd, 0),
            mapped != UnsafeMutableRawPointer(bitPattern: -1)
        else {
            let code = errno
            throw StorageError(
                .io, .open, path: path, engineCode: code,
                message: "the data file could not be mapped to check it: \(String(cString: strerror(code)))")
        }
        defer { munmap(mapped, length) }
        var walk = PageWalk(
            file: UnsafeRawBufferPointer(start: mapped, count: length), path: path, pageSize: meta.pageSize,
            lastPage: meta.lastPage)
        try walk.run(
            free: PageWalk.Tree(
                kind: .free, name: "the free list", flags: meta.freeFlags, depth: meta.freeDepth, root: meta.freeRoot),
            main: PageWalk.Tree(
                kind: .main, name: "the main database", flags: meta.mainFlags, depth: meta.mainDepth,
                root: meta.mainRoot))
    }

    /// Whether every page from `firstMissing` to the meta page's last page is
    /// on the free list of that meta page's free-list database (`FREE_DBI`),
    /// read with `pread` from its root: `MDB_IDL` values (a count, then page
    /// numbers) keyed by transaction id, stored in the node or on overflow
    /// pages. A free-list page that lies past the end of the file, or that is
    /// not a page of the kind and number its parent names, is damage.
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` for a damaged free list.
    private static func tailIsFree(_ fd: Int32, meta: Meta, from firstMissing: UInt64, path: String) throws -> Bool {
        guard meta.freeRoot != invalidPage else { return false }
        let pageSize = meta.pageSize
        let tail = Int(meta.lastPage - firstMissing + 1)
        var free = [Bool](repeating: false, count: tail)
        var freeCount = 0
        var page = [UInt8](repeating: 0, count: pageSize)
        var pending: [(page: UInt64, depth: Int)] = [(meta.freeRoot, 0)]
        var visited = 0
        while let (number, depth) = pending.popLast() {
            visited += 1
            guard number >= 2, number < firstMissing, depth < 64, UInt64(visited) <= meta.lastPage else {
                throw corrupt(path, "the free list names page \(number), which is not a page of the file's free list")
            }
            try readExactly(fd, &page, at: number * UInt64(pageSize), path: path)
            let flags = load(UInt16.self, page, Offset.pageFlags)
            guard load(UInt64.self, page, Offset.pageNumber) == number, flags & (branchFlag | leafFlag) != 0 else {
                throw corrupt(path, "the free list's page \(number) is damaged (flags \(flags))")
            }
            let lower = Int(load(UInt16.self, page, 12))
            guard lower >= pageHeaderSize, lower <= pageSize else {
                throw corrupt(path, "the free list's page \(number) is damaged (lower bound \(lower))")
            }
            for slot in 0..<((lower - pageHeaderSize) / 2) {
                let node = Int(load(UInt16.self, page, pageHeaderSize + 2 * slot))
                guard node + nodeHeaderSize <= pageSize else {
                    throw corrupt(path, "the free list's page \(number) is damaged (a node at \(node))")
                }
                let low = UInt64(load(UInt16.self, page, node))
                let high = UInt64(load(UInt16.self, page, node + 2))
                let nodeFlags = load(UInt16.self, page, node + 4)
                let keySize = Int(load(UInt16.self, page, node + 6))
                if flags & branchFlag != 0 {
                    pending.append((low | high << 16 | UInt64(nodeFlags) << 32, depth + 1))
                    continue
                }
                let dataSize = Int(low | high << 16)
                let dataStart = node + nodeHeaderSize + keySize
                let ids: [UInt8]
                if nodeFlags & bigDataFlag != 0 {
                    guard dataStart + 8 <= pageSize else {
                        throw corrupt(path, "the free list's page \(number) is damaged (a node at \(node))")
                    }
                    let overflow = load(UInt64.self, page, dataStart)
                    let span = UInt64((pageHeaderSize + dataSize + pageSize - 1) / pageSize)
                    guard overflow >= 2, overflow + span <= firstMissing else {
                        throw corrupt(path, "the free list names overflow pages \(overflow) and on, past the end of the file")
                    }
                    var bytes = [UInt8](repeating: 0, count: pageHeaderSize + dataSize)
                    try readExactly(fd, &bytes, at: overflow * UInt64(pageSize), path: path)
                    guard load(UInt64.self, bytes, Offset.pageNumber) == overflow,
                        load(UInt16.self, bytes, Offset.pageFlags) & overflowFlag != 0
                    else {
                        throw corrupt(path, "the free list's overflow page \(overflow) is damaged")
                    }
                    ids = Array(bytes[pageHeaderSize...])
                } else {
                    guard dataStart + dataSize <= pageSize else {
                        throw corrupt(path, "the free list's page \(number) is damaged (a node at \(node))")
                    }
                    ids = Array(page[dataStart..<(dataStart + dataSize)])
                }
                guard ids.count >= 8 else {
                    throw corrupt(path, "the free list's page \(number) holds a list of \(ids.count) bytes")
                }
                let count = Int(load(UInt64.self, ids, 0))
                guard count <= ids.count / 8 - 1 else {
                    throw corrupt(path, "the free list's page \(number) holds a list that names \(count) pages in \(ids.count) bytes")
                }
                for index in 0..<count {
                    let id = load(UInt64.self, ids, 8 * (index + 1))
                    guard id >= firstMissing, id <= meta.lastPage else { continue }
                    let position = Int(id - firstMissing)
                    if !free[position] {
                        free[position] = true
                        freeCount += 1
                    }
                }
            }
        }
        return freeCount == tail
    }

    private static func fileSize(_ fd: Int32, _ path: String) throws -> UInt64 {
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            let code = errno
            throw StorageError(
                .io, .open, path: path, engineCode: code,
                message: "the data file could not be examined: \(String(cString: strerror(code)))")
        }
        return UInt64(status.st_size)
    }

    private static func readMeta(_ fd: Int32, at offset: UInt64, index: UInt64, path: String, size: UInt64) throws -> Meta {
        guard size >= offset + UInt64(Offset.end) else {
            throw corrupt(path, "the data file (\(size) bytes) ends before meta page \(index)")
        }
        var bytes = [UInt8](repeating: 0, count: Offset.end)
        try readExactly(fd, &bytes, at: offset, path: path)
        let number = load(UInt64.self, bytes, Offset.pageNumber)
        let flags = load(UInt16.self, bytes, Offset.pageFlags)
        let foundMagic = load(UInt32.self, bytes, Offset.magic)
        let version = load(UInt32.self, bytes, Offset.version)
        let pageSize = Int(load(UInt32.self, bytes, Offset.pageSize))
        guard number == index, flags & metaFlag != 0, foundMagic == magic else {
            throw corrupt(
                path, "meta page \(index) is not an LMDB meta page (page number \(number), flags \(flags), magic \(foundMagic))",
                code: MDB_INVALID)
        }
        guard version == dataVersion else {
            throw corrupt(
                path, "meta page \(index) has data version \(version); this liblmdb reads version \(dataVersion)",
                code: MDB_VERSION_MISMATCH)
        }
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else {
            throw corrupt(path, "meta page \(index) names a page size of \(pageSize) bytes")
        }
        return Meta(
            pageSize: pageSize, freeFlags: load(UInt16.self, bytes, Offset.freeFlags),
            freeDepth: Int(load(UInt16.self, bytes, Offset.freeDepth)), freeRoot: load(UInt64.self, bytes, Offset.freeRoot),
            mainFlags: load(UInt16.self, bytes, Offset.mainFlags),
            mainDepth: Int(load(UInt16.self, bytes, Offset.mainDepth)), mainRoot: load(UInt64.self, bytes, Offset.mainRoot),
            lastPage: load(UInt64.self, bytes, Offset.lastPage),
            transactionID: load(UInt64.self, bytes, Offset.transactionID))
    }

    private static func readExactly(_ fd: Int32, _ bytes: inout [UInt8], at offset: UInt64, path: String) throws {
        let wanted = bytes.count
        let read = bytes.withUnsafeMutableBytes { buffer in
            pread(fd, buffer.baseAddress, wanted, off_t(offset))
        }
        guard read == wanted else {
            if read < 0 {
                let code = errno
                throw StorageError(
                    .io, .open, path: path, engineCode: code,
                    message: "the data file could not be read to check it: \(String(cString: strerror(code)))")
            }
            throw corrupt(path, "the data file ends inside the page at byte \(offset)")
        }
    }

    private static func load<T: FixedWidthInteger>(_ type: T.Type, _ bytes: [UInt8], _ offset: Int) -> T {
        // liblmdb writes its pages in the machine's byte order.
        bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: T.self) }
    }

    private static func corrupt(_ path: String, _ message: String, code: Int32 = MDB_CORRUPTED) -> StorageError {
        StorageError(.corrupt, .open, path: path, engineCode: code, message: message)
    }
}
