import CSQLite
import DAOCore
import Foundation

/// The errors of reading a table's columns.
final class LayoutAccess: ColumnAccess, @unchecked Sendable {
    // @unchecked: holds one immutable, Sendable layout.
    let layout: RowLayout

    init(layout: RowLayout) {
        self.layout = layout
    }

    override func readError(column: Int32, message: String?) -> StorageError {
        layout.columnError(column, message)
    }

    override func storageClassError(column: Int32, found: Int32) -> StorageError {
        layout.storageClassError(column, found)
    }
}

/// Binds text and bytes to one statement (text through the statement's own
/// buffers) and makes the errors of binding to it. The statement keeps it
/// (``Statement/columnAccess``), so it holds the statement unretained.
final class StatementAccess: ColumnAccess, @unchecked Sendable {
    // @unchecked: used only by the writers of storage calls, under the
    // connection's lock, as the statement that keeps it.
    unowned(unsafe) let statement: Statement
    let layout: RowLayout

    init(statement: Statement, layout: RowLayout) {
        self.statement = statement
        self.layout = layout
    }

    override func readError(column: Int32, message: String?) -> StorageError {
        layout.columnError(column, message)
    }

    override func bindText(_ value: String, at parameter: Int32) throws {
        try statement.bind(value, at: parameter)
    }

    override func bindBytes(_ value: Data, at parameter: Int32) throws {
        try value.withUnsafeBytes { try statement.bind(blob: $0, at: parameter) }
    }

    override func writeError(_ failure: ColumnWriteFailure) -> any Error {
        switch failure {
        case .code(let code):
            return sqliteError(code, db: sqlite3_db_handle(statement.handle), sql: statement.sql)
        case .tooManyFields:
            return StorageError(
                .schemaMismatch, .persist, entity: layout.entityName,
                message: "the record writes more fields than the \(layout.names.count) '\(layout.entityName)' declares")
        case .tooFewFields(let written):
            return StorageError(
                .schemaMismatch, .persist, entity: layout.entityName,
                message: "the record wrote \(written) fields; '\(layout.entityName)' declares \(layout.names.count)")
        }
    }
}

/// SQLite's functions for ``ColumnRowWriter``.
let sqliteBindFunctions = ColumnBindFunctions(
    int64: sqlite3_bind_int64, double: sqliteBindReal, null: sqlite3_bind_null, okCode: SQLITE_OK)

/// SQLite's functions for `ColumnRowReader`.
let sqliteColumnFunctions = ColumnFunctions(
    step: sqlite3_step, int64: sqlite3_column_int64, double: sqlite3_column_double, type: sqlite3_column_type,
    text: sqlite3_column_text, blob: sqlite3_column_blob, bytes: sqlite3_column_bytes,
    value: sqlite3_column_value, valueType: sqlite3_value_type, valueInt64: sqlite3_value_int64,
    valueDouble: sqlite3_value_double, valueText: sqlite3_value_text, valueBlob: sqlite3_value_blob,
    valueBytes: sqlite3_value_bytes,
    rowCode: SQLITE_ROW, nullType: SQLITE_NULL, integerType: SQLITE_INTEGER, realType: SQLITE_FLOAT,
    textType: SQLITE_TEXT, blobType: SQLITE_BLOB)
