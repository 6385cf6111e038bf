import CSQLite
import DAOCore

/// `SQLITE_TRANSIENT`: SQLite copies the bound bytes before the bind call returns.
/// Swift does not import the C macro, so it is spelled out here.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
/// `SQLITE_STATIC`: SQLite uses the bound bytes in place; they must stay valid
/// and unchanged until the parameter is rebound or the statement finalized.
let sqliteStatic: sqlite3_destructor_type? = nil

/// Maps an SQLite result code onto the storage error kinds.
func storageErrorKind(forSQLiteCode code: Int32) -> StorageError.Kind {
    switch code & 0xFF {
    case SQLITE_CONSTRAINT: .constraint
    case SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_FORMAT: .corrupt
    case SQLITE_BUSY, SQLITE_LOCKED: .busy
    case SQLITE_FULL: .full
    case SQLITE_READONLY: .readOnly
    case SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_PERM: .io
    case SQLITE_TOOBIG, SQLITE_RANGE, SQLITE_MISUSE: .invalidArgument
    default: .engine
    }
}

/// A ``StorageError`` for a failed SQLite call: its extended code, SQLite's
/// message and the SQL. The operation is provisional; the storage layer that
/// knows the operation, the entity and the path fills them in.
func sqliteError(_ code: Int32, db: OpaquePointer?, sql: String?, operation: StorageError.Operation = .read)
    -> StorageError
{
    var extended = code
    var message = String(cString: sqlite3_errstr(code))
    if let db {
        let dbCode = sqlite3_extended_errcode(db)
        if dbCode & 0xFF == code & 0xFF { extended = dbCode }
        if let text = sqlite3_errmsg(db) { message = String(cString: text) }
    }
    return StorageError(
        storageErrorKind(forSQLiteCode: extended), operation, engineCode: extended,
        message: "SQLite: \(message)", context: sql)
}

/// `SQLITE_CONSTRAINT_PRIMARYKEY`, the extended code of a primary-key
/// conflict (Swift does not import the C macro).
let sqliteConstraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)
