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
/// what every key and value the adapter reads itself is checked against
/// before it is touched.
///
/// liblmdb maps more address space than the file holds (the map size); a
/// read of a mapped byte past the file's end kills the process with
/// `SIGBUS`. The open check (``DataFileCheck``) makes sure that every value
/// of a sound file lies inside it; this check holds the same for a file
/// changed after it was opened, or opened with
/// ``LMDBEnvironment/FileCheck/metaPages``: a value that would run past the
/// end of the file is ``StorageError/Kind/corrupt``, never read.
struct MapBounds {
    /// `me_mapaddr` and `me_mapsize` (`mdb_env_info`): changed only with no
    /// transaction of this process open (after `mdb_env_set_mapsize`).
    var start: UInt = 0
    var length: UInt = 0
}

extension LMDBEnvironment {
    /// The bytes of `value`, which liblmdb gave: a pointer into the map (a
    /// page of the file), or, in a write transaction, into a page liblmdb
    /// copied into memory it allocated, which is not checked. The bytes in
    /// the map must lie inside the file.
    ///
    /// - Throws: ``StorageError/Kind/corrupt`` when they do not.
    @inline(__always)
    func lent(_ value: MDB_val, _ operation: StorageError.Operation) throws -> UnsafeRawBufferPointer {
        let offset = UInt(bitPattern: value.mv_data) &- map.start
        if offset < map.length, offset &+ UInt(value.mv_size) > knownFileLength.load(ordering: .relaxed) {
            try confirmInFile(offset: offset, count: UInt(value.mv_size), operation)
        }
        return UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
    }

    /// Reads the data file's length again (it grows as transactions commit)
    /// and throws unless `count` bytes at `offset` lie inside it.
    @inline(never)
    private func confirmInFile(offset: UInt, count: UInt, _ operation: StorageError.Operation) throws {
        let length = try dataFileLength(operation)
        knownFileLength.store(length, ordering: .relaxed)
        guard offset + count > length else { return }
        var stat = MDB_stat()
        let page = mdb_env_stat(handle, &stat) == MDB_SUCCESS && stat.ms_psize > 0
            ? " (page \(offset / UInt(stat.ms_psize)))" : ""
        throw StorageError(
            .corrupt, operation, path: dataFilePath, engineCode: MDB_CORRUPTED,
            message: "liblmdb gave \(count) bytes at offset \(offset) of the data file\(page), which ends at \(length) bytes: the file is damaged or was changed after it was opened")
    }

    /// The data file: the environment's path itself when it was opened as a
    /// file (`MDB_NOSUBDIR`), else `data.mdb` in its directory.
    var dataFilePath: String {
        var flags: UInt32 = 0
        guard mdb_env_get_flags(handle, &flags) == MDB_SUCCESS, flags & UInt32(MDB_NOSUBDIR) == 0 else { return path }
        return path + "/data.mdb"
    }

    /// The data file's length now (`fstat` on liblmdb's descriptor).
    func dataFileLength(_ operation: StorageError.Operation) throws -> UInt {
        var fd: Int32 = -1
        try LMDBError.check(mdb_env_get_fd(handle, &fd), operation, path: path, call: "mdb_env_get_fd")
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            let code = errno
            throw StorageError(
                .io, operation, path: path, engineCode: code,
                message: "the data file could not be examined: \(String(cString: strerror(code)))")
        }
        return UInt(status.st_size)
    }

    /// The map liblmdb holds now (`mdb_env_info`); called at open and after
    /// every change of the map size, with no transaction of this process open.
    func currentMap(_ operation: StorageError.Operation) throws -> MapBounds {
        var info = MDB_envinfo()
        try LMDBError.check(mdb_env_info(handle, &info), operation, path: path, call: "mdb_env_info")
        return MapBounds(start: UInt(bitPattern: info.me_mapaddr), length: UInt(info.me_mapsize))
    }
}
