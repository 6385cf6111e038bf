import CLMDB
import DAOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where liblmdb mapped the data file, and how much of that mapping is file:
/// what every value the adapter reads itself is checked against
/// before it is touched.
///
/// liblmdb maps more address space than the file holds (the map size); a
/// read of a mapped byte past the file's end kills the process with
/// `SIGBUS`. The open check (``DataFileCheck``) makes sure that every value
/// of a sound file lies inside it; this check holds the same for a file
/// changed after it was opened, or opened with
/// ``LMDBEnvironment/FileCheck/metaPages``: a value that would run past the
/// end of the file is ``StorageError/Kind/corrupt``, never read.
///
/// A pointer liblmdb gives is one of two things: a place in the map (a page
/// of the file as some committed transaction wrote it), or, in a write
/// transaction, a place in a page liblmdb copied into memory it allocated
/// (a dirty page), which is no part of the file and is not checked. Only
/// pointers inside `start ..< start + length` are file bytes. liblmdb does
/// not say where it mapped the file (`mdb_env_info`'s `me_mapaddr` is the
/// address of a fixed map, `MDB_FIXEDMAP`, and zero otherwise), so the
/// mapping is looked up in the process's own memory map
/// (`/proc/self/maps`): the region of the data file's device and inode at
/// file offset zero. Where that cannot be read (no `/proc`, another system)
/// `length` is zero and values are not checked; the open check still is.
struct MapBounds {
    /// The address of the map and its length in bytes: changed only with no
    /// transaction of this process open (after `mdb_env_set_mapsize`).
    var start: UInt = 0
    var length: UInt = 0

    /// The region of the process's memory that maps the file of `device`
    /// and `inode` from file offset zero, `length` bytes long at most (the
    /// map size): the lines of `/proc/self/maps` for that file, from the one
    /// at offset zero through those that continue it. `nil` when there is
    /// none or the table cannot be read.
    static func located(device: UInt64, inode: UInt64, length: UInt) -> MapBounds? {
        #if os(Linux)
            guard let table = readProcessMaps() else { return nil }
            // glibc's dev_t: major in bits 8-19 and 32-63, minor in bits 0-7 and 20-31.
            let major = (device >> 8) & 0xFFF | (device >> 32) & ~0xFFF
            let minor = device & 0xFF | (device >> 12) & ~0xFF
            var found: MapBounds?
            for line in table.split(separator: UInt8(ascii: "\n")) {
                guard let region = Region(line), region.inode == inode, region.major == major, region.minor == minor else {
                    continue
                }
                if var bounds = found {
                    // A region that continues the map (the kernel splits one
                    // mapping into several regions when their settings differ).
                    guard region.start == bounds.start + bounds.length,
                        region.offset == UInt64(bounds.length)
                    else { continue }
                    bounds.length += region.end - region.start
                    found = bounds
                } else if region.offset == 0 {
                    found = MapBounds(start: region.start, length: region.end - region.start)
                }
            }
            guard var bounds = found else { return nil }
            bounds.length = min(bounds.length, length)
            return bounds
        #else
            return nil
        #endif
    }

    #if os(Linux)
        /// One line of `/proc/self/maps`:
        /// `start-end perms offset major:minor inode path`, numbers in
        /// hexadecimal except the inode.
        private struct Region {
            var start: UInt
            var end: UInt
            var offset: UInt64
            var major: UInt64
            var minor: UInt64
            var inode: UInt64

            init?(_ bytes: ArraySlice<UInt8>) {
                var index = bytes.startIndex
                func number(radix: UInt64, until terminator: UInt8) -> UInt64? {
                    var value: UInt64 = 0
                    var digits = 0
                    while index < bytes.endIndex, bytes[index] != terminator {
                        let byte = bytes[index]
                        let digit: UInt64
                        switch byte {
                        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
                        case UInt8(ascii: "a")...UInt8(ascii: "f") where radix == 16: digit = UInt64(byte - UInt8(ascii: "a") + 10)
                        default: return nil
                        }
                        let (scaled, overflow) = value.multipliedReportingOverflow(by: radix)
                        guard !overflow else { return nil }
                        value = scaled + digit
                        digits += 1
                        index += 1
                    }
                    guard digits > 0, index < bytes.endIndex else { return nil }
                    index += 1  // the terminator
                    return value
                }
                func skip(until terminator: UInt8) -> Bool {
                    while index < bytes.endIndex, bytes[index] != terminator { index += 1 }
                    guard index < bytes.endIndex else { return false }
                    index += 1
                    return true
                }
                let space = UInt8(ascii: " ")
                guard let start = number(radix: 16, until: UInt8(ascii: "-")),
                    let end = number(radix: 16, until: space), end > start,
                    skip(until: space),
                    let offset = number(radix: 16, until: space),
                    let major = number(radix: 16, until: UInt8(ascii: ":")),
                    let minor = number(radix: 16, until: space),
                    let inode = number(radix: 10, until: space)
                else { return nil }
                self.start = UInt(start)
                self.end = UInt(end)
                self.offset = offset
                self.major = major
                self.minor = minor
                self.inode = inode
            }
        }

        /// The whole of `/proc/self/maps` (its size is not known before it is read).
        private static func readProcessMaps() -> [UInt8]? {
            let fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            var table: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count >= 0 else { return nil }
                if count == 0 { return table }
                table += chunk[0..<count]
            }
        }
    #endif
}

/// What every value read is checked against (``lent(_:_:)``), at an address
/// the environment owns for its lifetime: a pointer, copied into every
/// transaction and every range of rows, so a check costs no reference
/// counting. The map's bounds change only with no transaction of this
/// process open (at open and after `mdb_env_set_mapsize`, with the
/// environment's resize lock held exclusively); the file's length as last
/// seen is atomic, as any reader may read it again.
struct ValueBounds {
    struct State: ~Copyable {
        var map = MapBounds()
        /// How many bytes of the data file are known to be there: read again
        /// from the file when a value in the map lies past it, since the file
        /// grows.
        let knownFileLength = Atomic<UInt>(0)
        /// liblmdb's descriptor of the data file, its path and page size:
        /// for the rare value past the length last seen.
        var fileDescriptor: Int32 = -1
        var dataFilePath = ""
        var pageSize: UInt = 0
    }

    let state: UnsafeMutablePointer<State>

    static func allocate() -> ValueBounds {
        let state = UnsafeMutablePointer<State>.allocate(capacity: 1)
        state.initialize(to: State())
        return ValueBounds(state: state)
    }

    func deallocate() {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    var map: MapBounds { state.pointee.map }

    /// The data file's length as last seen.
    var knownFileLength: UInt { state.pointee.knownFileLength.load(ordering: .relaxed) }

    /// The bytes of `value`, which liblmdb gave: a pointer into the map (a
    /// page of the file), or, in a write transaction, into a page liblmdb
    /// copied into memory it allocated (``MapBounds``), which is not checked.
    /// The bytes in the map must lie inside the file. Inside the map, one
    /// comparison with the file's length as last seen; the file is examined
    /// again only when a value lies past it (the file grows as transactions
    /// commit).
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` when they do not.
    @inline(__always)
    func lent(_ value: MDB_val, _ operation: StorageError.Operation) throws -> UnsafeRawBufferPointer {
        let offset = UInt(bitPattern: value.mv_data) &- state.pointee.map.start
        if offset < state.pointee.map.length,
            offset &+ UInt(value.mv_size) > state.pointee.knownFileLength.load(ordering: .relaxed)
        {
            try confirmInFile(offset: offset, count: UInt(value.mv_size), operation)
        }
        return UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
    }

    /// Reads the data file's length again (it grows as transactions commit)
    /// and throws unless `count` bytes at `offset` lie inside it.
    @inline(never)
    private func confirmInFile(offset: UInt, count: UInt, _ operation: StorageError.Operation) throws {
        let length = try fileLength(operation)
        // Never lowered by a thread that examined the file earlier than another.
        var known = state.pointee.knownFileLength.load(ordering: .relaxed)
        while known < length {
            let (exchanged, original) = state.pointee.knownFileLength.compareExchange(
                expected: known, desired: length, ordering: .relaxed)
            if exchanged { break }
            known = original
        }
        let (end, overflow) = offset.addingReportingOverflow(count)
        guard overflow || end > length else { return }
        let pageSize = state.pointee.pageSize
        let page = pageSize > 0 ? " (page \(offset / pageSize))" : ""
        throw StorageError(
            .corrupt, operation, path: state.pointee.dataFilePath, engineCode: MDB_CORRUPTED,
            message: "liblmdb gave \(count) bytes at offset \(offset) of the data file\(page), which ends at \(length) bytes: the file is damaged or was changed after it was opened")
    }

    /// The data file's length now (`fstat` on liblmdb's descriptor).
    func fileLength(_ operation: StorageError.Operation) throws -> UInt {
        var status = stat()
        guard fstat(state.pointee.fileDescriptor, &status) == 0 else {
            let code = errno
            throw StorageError(
                .io, operation, path: state.pointee.dataFilePath, engineCode: code,
                message: "the data file could not be examined: \(String(cString: strerror(code)))")
        }
        return UInt(status.st_size)
    }
}

extension LMDBEnvironment {
    /// The data file: the environment's path itself when it was opened as a
    /// file (`MDB_NOSUBDIR`), else `data.mdb` in its directory.
    var dataFilePath: String {
        var flags: UInt32 = 0
        guard mdb_env_get_flags(handle, &flags) == MDB_SUCCESS, flags & UInt32(MDB_NOSUBDIR) == 0 else { return path }
        return path + "/data.mdb"
    }

    /// The data file's length now.
    func dataFileLength(_ operation: StorageError.Operation) throws -> UInt {
        try valueBounds.fileLength(operation)
    }

    /// Finds the map liblmdb holds now (its size from `mdb_env_info`, its
    /// place from ``MapBounds/located(device:inode:length:)``) and sets the
    /// bounds values are checked against: at open and after every change of
    /// the map size, with no transaction of this process open. When the map
    /// is not found, the length last seen is the largest, and no value is
    /// checked.
    func locateMap(_ operation: StorageError.Operation) throws {
        let state = valueBounds.state
        var fd: Int32 = -1
        try LMDBError.check(mdb_env_get_fd(handle, &fd), operation, path: path, call: "mdb_env_get_fd")
        state.pointee.fileDescriptor = fd
        state.pointee.dataFilePath = dataFilePath
        var environmentStat = MDB_stat()
        try LMDBError.check(mdb_env_stat(handle, &environmentStat), operation, path: path, call: "mdb_env_stat")
        state.pointee.pageSize = UInt(environmentStat.ms_psize)
        var info = MDB_envinfo()
        try LMDBError.check(mdb_env_info(handle, &info), operation, path: path, call: "mdb_env_info")
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            let code = errno
            throw StorageError(
                .io, operation, path: path, engineCode: code,
                message: "the data file could not be examined: \(String(cString: strerror(code)))")
        }
        let map = MapBounds.located(
            device: UInt64(status.st_dev), inode: UInt64(status.st_ino), length: UInt(info.me_mapsize)) ?? MapBounds()
        state.pointee.map = map
        state.pointee.knownFileLength.store(map.length == 0 ? UInt.max : UInt(status.st_size), ordering: .relaxed)
    }

    /// Where liblmdb mapped the data file (``MapBounds``).
    var map: MapBounds { valueBounds.map }
}
