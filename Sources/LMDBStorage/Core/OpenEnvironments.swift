import CLMDB
import DAOCore
import Foundation

/// The environments open in this process, by the identity of their file.
let openEnvironments = OpenEnvironments()

/// A file or directory as the file system knows it: device and inode, the
/// same through every path (symbolic links, hard links, `..`) that reaches it.
struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64

    /// The identity of what `path` names (following symbolic links).
    /// - Throws: ``StorageError/Kind/io`` when it cannot be examined.
    init(path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            throw StorageError(
                LMDBError.kind(code), .open, path: path, engineCode: code,
                message: "the environment's path could not be examined: \(String(cString: strerror(code)))")
        }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

final class OpenEnvironments: @unchecked Sendable {
    // Unchecked Sendable: `identities` is only touched with `lock` held.
    private let lock = NSLock()
    private var identities = Set<FileIdentity>()

    func insert(_ identity: FileIdentity) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return identities.insert(identity).inserted
    }

    func remove(_ identity: FileIdentity) {
        lock.lock()
        defer { lock.unlock() }
        identities.remove(identity)
    }
}

/// A reset read-only transaction kept for reuse (``LMDBEnvironment/keepReader(_:)``).
/// Used by one read at a time: it leaves the keeper's lock before use.
struct ReaderHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// The reset read-only transactions an environment keeps.
struct KeptReaders: Sendable {
    var handles: [ReaderHandle] = []
}
