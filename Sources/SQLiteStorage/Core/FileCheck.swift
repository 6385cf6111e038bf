import DAOCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Checks a database file's header before SQLite opens it.
///
/// SQLite reads a file shorter than one page, or one cut short in the middle,
/// without an error: a file truncated to a few bytes opens as an empty
/// database, and one truncated at a page boundary loses the rows of the
/// missing pages silently. So before opening, when the file is not empty, the
/// adapter reads its 100-byte header (<https://sqlite.org/fileformat.html>)
/// and refuses, with ``StorageError/Kind/corrupt``, a file shorter than the
/// header, one whose header does not start with `SQLite format 3`, one with an
/// impossible page size, and (when no write-ahead log holds newer pages) one
/// shorter than the page count its header records.
///
/// An empty (zero-byte) file is a new database to SQLite and stays one: a
/// store whose only file was emptied or removed leaves nothing to tell it from
/// a new store.
enum FileCheck {
    static func check(path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }  // missing (a new database) or unreadable: SQLite's open reports it
        defer { close(fd) }
        var status = stat()
        var bytes = [UInt8](repeating: 0, count: 100)
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 100, 0) }
        guard fstat(fd, &status) == 0, read >= 0 else {
            let code = errno
            throw StorageError(
                .io, .open, path: path, engineCode: code,
                message: "the database file could not be read to check it: \(String(cString: strerror(code)))")
        }
        let size = UInt64(status.st_size)
        guard size > 0 else { return }
        guard read == 100 else {
            throw corrupt(path, "the file is \(size) bytes long, shorter than an SQLite header: it was truncated")
        }
        guard bytes.starts(with: Array("SQLite format 3\0".utf8)) else {
            throw corrupt(path, "the file does not start with an SQLite header")
        }
        let rawPageSize = Int(bytes[16]) << 8 | Int(bytes[17])
        let pageSize = rawPageSize == 1 ? 65536 : rawPageSize
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else {
            throw corrupt(path, "the header names a page size of \(rawPageSize)")
        }
        func word(_ offset: Int) -> UInt64 {
            bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt64($1) }
        }
        // The header's page count is valid when its "version-valid-for" number
        // equals the change counter (SQLite 3.7.0 and later write both).
        let pageCount = word(28)
        guard pageCount > 0, word(92) == word(24) else { return }
        var log = stat()
        if stat(path + "-wal", &log) == 0 && log.st_size > 0 {
            return  // the log may hold pages a checkpoint has not copied yet
        }
        guard size >= pageCount * UInt64(pageSize) else {
            throw corrupt(
                path,
                "the file is \(size) bytes long but its header records \(pageCount) pages of \(pageSize) bytes: it was truncated")
        }
    }

    /// Refuses a directory in place of the database's write-ahead log
    /// (`-wal`) or of its shared-memory index (`-shm`), which SQLite would
    /// report as an I/O error for the one and as a read-only database for the
    /// other, naming neither. The store removes nothing it did not write, so
    /// the directory stays; the error names it and says what to do.
    ///
    /// - Throws: ``StorageError/Kind/io`` naming the directory.
    static func checkSideFiles(path: String) throws {
        for (suffix, what) in [("-wal", "write-ahead log"), ("-shm", "shared-memory index of its write-ahead log")] {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path + suffix, isDirectory: &isDirectory), isDirectory.boolValue
            else { continue }
            throw StorageError(
                .io, .open, path: path + suffix, engineCode: EISDIR,
                message: "'\(path + suffix)' is a directory, where SQLite keeps the database's \(what); the store "
                    + "does not remove what it did not write: move or remove the directory, then open the database again")
        }
    }

    /// Refuses a file at the database's rollback-journal name (`-journal`)
    /// that SQLite did not write for this database, which SQLite would delete
    /// (a file that is not a journal, or any file beside an empty database)
    /// or play back into the database (a journal of another copy of it).
    ///
    /// The store keeps its databases in write-ahead-log mode, and a database
    /// in that mode (its header's read and write versions are 2) never has a
    /// rollback journal. A rollback journal of this store can exist only
    /// while the database is still in the rollback mode a new database starts
    /// in: beside a database of that mode the file is left to SQLite, and
    /// beside an empty or missing one only a file that starts as a journal
    /// does (<https://sqlite.org/fileformat.html#the_rollback_journal>).
    ///
    /// - Throws: ``StorageError/Kind/io`` naming the file; it is left in place.
    static func checkJournal(path: String) throws {
        let journalPath = path + "-journal"
        var journal = stat()
        guard lstat(journalPath, &journal) == 0 else { return }
        let header = firstBytes(of: path, count: 20)
        let journalStart = firstBytes(of: journalPath, count: 8)
        let walMode = header.count == 20 && header[18] == 2 && header[19] == 2
        let journalMagic: [UInt8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]
        let ours: Bool
        if (journal.st_mode & S_IFMT) != S_IFREG || walMode {
            ours = false
        } else if header.isEmpty {
            ours = journalStart == journalMagic
        } else {
            ours = true
        }
        guard !ours else { return }
        throw StorageError(
            .io, .open, path: journalPath, engineCode: EEXIST,
            message: "'\(journalPath)' is where SQLite keeps the database's rollback journal, but "
                + (walMode
                    ? "the database is in write-ahead-log mode, so SQLite did not write it there"
                    : "it is not a rollback journal of this database")
                + "; opening would let SQLite delete it or play it back into the database, and the store does not "
                + "remove what it did not write: move or remove it, then open the database again")
    }

    /// Up to `count` bytes from the start of the file at `path` (none when it
    /// is missing, empty or unreadable).
    private static func firstBytes(of path: String, count: Int) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, 0) }
        return read > 0 ? Array(bytes[0..<read]) : []
    }

    private static func corrupt(_ path: String, _ message: String) -> StorageError {
        StorageError(.corrupt, .open, path: path, engineCode: 26, message: message)  // SQLITE_NOTADB
    }
}
