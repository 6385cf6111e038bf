import DAOCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX file operations the store needs, each checked and reported as a
/// ``StorageError`` that names the path and `errno`.
enum FileIO {
    /// Reads the whole file.
    static func read(_ url: URL, operation: StorageError.Operation) throws -> Data {
        do {
            return try Data(contentsOf: url)
        } catch {
            throw StorageError(.io, operation, path: url.path, message: "the file could not be read", underlying: error)
        }
    }

    /// Writes `data` to a new file at `url` (which must not exist) and, when
    /// `sync` is set, flushes it to disk before returning.
    static func create(_ url: URL, data: Data, sync: Bool, operation: StorageError.Operation) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw posixError(operation, url, "the file could not be created") }
        var closed = false
        defer { if !closed { close(fd) } }
        try data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw posixError(operation, url, "the file could not be written")
                }
                offset += written
            }
        }
        if sync { try fullSync(fd, url, operation) }
        closed = true
        if close(fd) != 0 { throw posixError(operation, url, "the file could not be closed") }
    }

    /// Writes `data` to `url` atomically: a temporary file beside it, synced when
    /// `sync` is set, renamed over `url`, and the directory synced.
    ///
    /// With `sync`, the files `written` (new files in the same directory, not
    /// yet synced) are synced together with the temporary file, before the
    /// rename: once `url` names the new contents, they are on disk too.
    static func replace(
        _ url: URL, data: Data, sync: Bool, syncingAlso written: [URL] = [], operation: StorageError.Operation
    ) throws {
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp")
        try removeIfPresent(temporary, operation: operation)  // a leftover of a crashed writer
        try create(temporary, data: data, sync: false, operation: operation)
        if sync {
            do {
                try self.sync([temporary] + written, operation: operation)
            } catch {
                unlink(temporary.path)
                throw error
            }
        }
        guard rename(temporary.path, url.path) == 0 else {
            let error = posixError(operation, url, "the new file could not be renamed into place")
            unlink(temporary.path)
            throw error
        }
        if sync { try syncDirectory(url.deletingLastPathComponent(), operation: operation) }
    }

    /// Flushes the written files at `urls` to disk, all at once: one thread
    /// each, so that the file system can commit them together (on ext4, one
    /// journal commit instead of one per file). Returns when every file is
    /// on disk; throws the first failure.
    static func sync(_ urls: [URL], operation: StorageError.Operation) throws {
        guard urls.count > 1 else {
            for url in urls { try sync(url, operation: operation) }
            return
        }
        let failures = SyncFailures()
        let group = DispatchGroup()
        for url in urls.dropFirst() {
            group.enter()
            let thread = Thread {
                do {
                    try sync(url, operation: operation)
                } catch {
                    failures.errors.withLock { $0.append(error) }
                }
                group.leave()
            }
            thread.start()
        }
        var first: (any Error)?
        do {
            try sync(urls[0], operation: operation)
        } catch {
            first = error
        }
        group.wait()
        if let error = first ?? failures.errors.withLock({ $0.first }) { throw error }
    }

    /// The errors of the threads of ``sync(_:operation:)``.
    private final class SyncFailures: Sendable {
        let errors = Mutex<[any Error]>([])
    }

    /// Flushes the file at `url` to disk.
    private static func sync(_ url: URL, operation: StorageError.Operation) throws {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw posixError(operation, url, "the file could not be opened to sync it") }
        defer { close(fd) }
        try fullSync(fd, url, operation)
    }

    /// Flushes the directory entry changes (creations, renames) of `directory`.
    static func syncDirectory(_ directory: URL, operation: StorageError.Operation) throws {
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw posixError(operation, directory, "the directory could not be opened to sync it") }
        defer { close(fd) }
        try fullSync(fd, directory, operation)
    }

    /// Removes the file at `url` if there is one.
    ///
    /// - Throws: ``StorageError``; ``StorageError/Kind/io`` naming the path and
    ///   what to do when a directory stands there (named like a file the store
    ///   writes and removes, but not one it wrote: it stays).
    static func removeIfPresent(_ url: URL, operation: StorageError.Operation) throws {
        guard unlink(url.path) != 0 && errno != ENOENT else { return }
        let error = posixError(operation, url, "the file could not be removed")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw error
        }
        throw StorageError(
            .io, operation, path: url.path, engineCode: error.engineCode,
            message: "'\(url.lastPathComponent)' is a directory, named like a file the store writes and removes; the store "
                + "does not remove what it did not write: move or remove the directory, then try again")
    }

    private static func fullSync(_ fd: Int32, _ url: URL, _ operation: StorageError.Operation) throws {
        #if canImport(Darwin)
        if fcntl(fd, F_FULLFSYNC) == 0 { return }
        #endif
        guard fsync(fd) == 0 else { throw posixError(operation, url, "the file could not be synced to disk") }
    }

    /// A ``StorageError`` for the current `errno`.
    static func posixError(_ operation: StorageError.Operation, _ url: URL, _ what: String) -> StorageError {
        let code = errno
        let kind: StorageError.Kind =
            switch code {
            case ENOSPC, EDQUOT: .full
            case EACCES, EPERM, EROFS: .readOnly
            default: .io
            }
        return StorageError(
            kind, operation, path: url.path, engineCode: code,
            message: "\(what): \(String(cString: strerror(code)))")
    }
}

/// An exclusive advisory lock on the store's directory, held for the life of a
/// ``FileStore``, so that two stores (in one process or two) never write the same
/// directory at once.
///
/// Between processes it is a POSIX record lock (`fcntl(F_SETLK)`) on the
/// `store.lock` file; within this process, a set of the lock files held. A
/// record lock belongs to the process and is not inherited by a child process,
/// unlike a `flock`, which the child shares between `fork` and `exec`: with
/// `flock`, a store closed while another thread was starting a process could
/// stay locked for that moment, and a reopen failed with `busy`. A record lock
/// is released when the process closes any descriptor of the file; the lock
/// file is opened only here, once per directory (the set sees to that).
final class DirectoryLock: Sendable {
    /// A file's identity: device and inode, the same through any path to it.
    private struct FileID: Hashable {
        let device: UInt64
        let inode: UInt64

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }

    /// The lock files this process holds.
    private static let held = Mutex<Set<FileID>>([])

    /// The lock file's descriptor and identity; the descriptor is -1 once released.
    private let state: Mutex<(fd: Int32, id: FileID)>

    init(directory: URL) throws {
        let url = directory.appendingPathComponent("store.lock")
        let busy = StorageError(
            .busy, .open, path: directory.path,
            message: "another FileStore (in this or another process) has this directory open")
        // Taken whole under the set's lock, so that this process never opens
        // a lock file it already holds: closing that descriptor again would
        // release the holder's record lock.
        state = Mutex(try Self.held.withLock { held in
            var info = stat()
            if stat(url.path, &info) == 0, held.contains(FileID(info)) { throw busy }
            let fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw FileIO.posixError(.open, url, "the lock file could not be opened") }
            guard fstat(fd, &info) == 0 else {
                let code = errno
                close(fd)
                errno = code
                throw FileIO.posixError(.open, url, "the lock file could not be examined")
            }
            let id = FileID(info)
            // The path now names a lock file this process holds (it was
            // replaced since the check above): closing this descriptor would
            // release that lock, so it stays open, one descriptor, until exit.
            guard !held.contains(id) else { throw busy }
            var lock = flock()
            lock.l_type = Int16(F_WRLCK)
            lock.l_whence = Int16(SEEK_SET)
            lock.l_start = 0
            lock.l_len = 0
            guard fcntl(fd, F_SETLK, &lock) == 0 else {
                let code = errno
                close(fd)
                if code == EAGAIN || code == EACCES {
                    var error = busy
                    error.engineCode = code
                    throw error
                }
                errno = code
                throw FileIO.posixError(.open, url, "the lock file could not be locked")
            }
            held.insert(id)
            return (fd, id)
        })
    }

    /// Releases the lock (closing the lock file releases it); does nothing
    /// the second time.
    func release() {
        state.withLock { state in
            guard state.fd >= 0 else { return }
            Self.held.withLock { held in
                close(state.fd)
                held.remove(state.id)
            }
            state.fd = -1
        }
    }

    deinit {
        release()
    }
}
