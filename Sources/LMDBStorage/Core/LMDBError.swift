import CLMDB
import DAOCore
import Foundation

/// Turns LMDB and errno result codes into ``StorageError``s.
enum LMDBError {
    /// LMDB's own text for `code` (it also knows the errno codes).
    static func text(_ code: Int32) -> String {
        guard let text = mdb_strerror(code) else { return "LMDB error \(code)" }
        return String(cString: text)
    }

    /// The ``StorageError/Kind`` for an LMDB or errno result code.
    static func kind(_ code: Int32) -> StorageError.Kind {
        switch code {
        case MDB_MAP_FULL, ENOSPC, MDB_TXN_FULL, MDB_DBS_FULL: .full
        case MDB_INVALID, MDB_VERSION_MISMATCH, MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_INCOMPATIBLE: .corrupt
        case EACCES, EROFS, EPERM: .readOnly
        case MDB_READERS_FULL, EAGAIN, EBUSY: .busy
        case MDB_KEYEXIST: .constraint
        case MDB_BAD_VALSIZE, EINVAL: .invalidArgument
        case EIO, ENOENT, ENOTDIR, EISDIR: .io
        default: .engine
        }
    }

    /// An error for a failed LMDB call.
    static func error(
        _ code: Int32, _ operation: StorageError.Operation, path: String?, call: String, context: String? = nil
    ) -> StorageError {
        StorageError(
            kind(code), operation, path: path, engineCode: code,
            message: "\(call): \(text(code))", context: context)
    }

    /// Throws when `code` is not `MDB_SUCCESS`.
    @inline(__always)
    static func check(
        _ code: Int32, _ operation: StorageError.Operation, path: String?, call: @autoclosure () -> String,
        context: @autoclosure () -> String? = nil
    ) throws {
        if code != MDB_SUCCESS {
            throw error(code, operation, path: path, call: call(), context: context())
        }
    }
}
