import CLMDB
import DAOCore
import DialogGraph
import Foundation
import StorageBenchKit

/// `lmdb-raw`: the workload on liblmdb's C API, used the plainest fast way and
/// with no DAO: the limit a Swift program can reach on LMDB.
///
/// Two named databases:
/// - `dialogs`: key the dialog id (8 bytes, big-endian); value `isPinned` (1 byte);
/// - `messages`: key the dialog id then the message id (8 + 8 bytes, big-endian),
///   so that a dialog's messages are one cursor range in id order; value
///   `date` (Float64), `senderId`, `receiverId` (Int64), `type` (Int32),
///   `isIncoming`, `isRead` (1 byte each), in native byte order, then the
///   text's UTF-8 bytes.
///
/// One transaction per call (a read-only one per lookup), a fixed 4 GiB map, and
/// the durability of the DAO's LMDB store: default flags (synced commits) for
/// ``Durability/full``, `MDB_NOSYNC` for ``Durability/none``.
public final class LMDBRawSubject: WorkloadSubject {
    /// The environment, closed when released.
    private final class Environment {
        let handle: OpaquePointer
        init(_ handle: OpaquePointer) { self.handle = handle }
        deinit { mdb_env_close(handle) }
    }

    /// The bytes of a message value before its text.
    private static let fixedBytes = 30
    /// The map size: the whole store must fit in it.
    public static let mapSize = 4 << 30

    private let environment: Environment
    private var env: OpaquePointer { environment.handle }
    private let dialogs: MDB_dbi
    private let messages: MDB_dbi

    /// The environment's flags, map size and the LMDB version.
    public let settingsDescription: String

    /// Creates the environment in `directory` with its two databases.
    /// - Throws: ``ReferenceError`` when LMDB fails.
    public init(directory: URL, durability: Durability) throws {
        let path = directory.path
        var handle: OpaquePointer?
        let code = mdb_env_create(&handle)
        guard code == MDB_SUCCESS, let handle else { throw Self.error(code, "mdb_env_create") }
        environment = Environment(handle)
        try Self.check(mdb_env_set_maxdbs(handle, 2), "mdb_env_set_maxdbs")
        try Self.check(mdb_env_set_mapsize(handle, Self.mapSize), "mdb_env_set_mapsize")
        let flags: UInt32 = durability == .full ? 0 : UInt32(MDB_NOSYNC)
        try Self.check(mdb_env_open(handle, path, flags, 0o644), "mdb_env_open \(path)")
        var transaction: OpaquePointer?
        try Self.check(mdb_txn_begin(handle, nil, 0, &transaction), "mdb_txn_begin")
        guard let transaction else { throw Self.error(0, "mdb_txn_begin gave no transaction") }
        var dialogs = MDB_dbi()
        var messages = MDB_dbi()
        do {
            try Self.check(mdb_dbi_open(transaction, "dialogs", UInt32(MDB_CREATE), &dialogs), "mdb_dbi_open dialogs")
            try Self.check(mdb_dbi_open(transaction, "messages", UInt32(MDB_CREATE), &messages), "mdb_dbi_open messages")
        } catch {
            mdb_txn_abort(transaction)
            throw error
        }
        try Self.check(mdb_txn_commit(transaction), "mdb_txn_commit")
        self.dialogs = dialogs
        self.messages = messages
        var inForce: UInt32 = 0
        try Self.check(mdb_env_get_flags(handle, &inForce), "mdb_env_get_flags")
        let names = [(UInt32(MDB_NOSYNC), "NOSYNC"), (UInt32(MDB_NOMETASYNC), "NOMETASYNC"),
                     (UInt32(MDB_WRITEMAP), "WRITEMAP"), (UInt32(MDB_MAPASYNC), "MAPASYNC")]
            .filter { inForce & $0.0 != 0 }.map(\.1)
        settingsDescription =
            "flags=\(names.isEmpty ? "none" : names.joined(separator: ",")) mapsize=\(Self.mapSize) "
            + "lmdb=\(String(cString: mdb_version(nil, nil, nil)))"
    }

    // MARK: The workload

    public func persist(_ dialogs: [Dialog]) throws {
        try write { try put(dialogs, $0) }
    }

    public func update(_ dialogs: [Dialog]) throws {
        try write { try put(dialogs, $0) }
    }

    public func persistSingle(_ dialog: Dialog) throws {
        try write { try put([dialog], $0) }
    }

    public func readAll() throws -> [Dialog] {
        try read { transaction in
            var ids: [Int64] = []
            var pinned: [Bool] = []
            try withCursor(transaction, dialogs) { cursor in
                var key = MDB_val()
                var value = MDB_val()
                var code = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
                while code == MDB_SUCCESS {
                    guard key.mv_size == 8, value.mv_size == 1, let k = key.mv_data, let v = value.mv_data else {
                        throw Self.error(0, "read-all: a dialog entry of the wrong size")
                    }
                    ids.append(Int64(bitPattern: UInt64(bigEndian: k.loadUnaligned(as: UInt64.self))))
                    pinned.append(v.load(as: UInt8.self) != 0)
                    code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
                }
                if code != MDB_NOTFOUND { throw Self.error(code, "mdb_cursor_get dialogs") }
            }
            // Both databases are ordered by dialog id: merge.
            var messagesOf = [[Message]](repeating: [], count: ids.count)
            try withCursor(transaction, messages) { cursor in
                var key = MDB_val()
                var value = MDB_val()
                var index = 0
                var code = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
                while code == MDB_SUCCESS {
                    let message = try Self.message(key, value)
                    while index < ids.count && ids[index] < message.dialogId { index += 1 }
                    guard index < ids.count, ids[index] == message.dialogId else {
                        throw Self.error(0, "read-all: a message of dialog \(message.dialogId), which does not exist")
                    }
                    messagesOf[index].append(message)
                    code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
                }
                if code != MDB_NOTFOUND { throw Self.error(code, "mdb_cursor_get messages") }
            }
            var result: [Dialog] = []
            result.reserveCapacity(ids.count)
            for index in ids.indices {
                result.append(Dialog(uniqueId: ids[index], isPinned: pinned[index], messages: messagesOf[index]))
            }
            return result
        }
    }

    public func read(dialogId id: Int64) throws -> Dialog? {
        try read { try dialog(id, $0) }
    }

    public func unreadMessages(dialogId id: Int64) throws -> [Message] {
        var result = try read { transaction in
            try withCursor(transaction, messages) { cursor in
                var unread: [Message] = []
                try scan(cursor, dialog: id, unreadOnly: true, into: &unread)
                return unread
            }
        }
        // The range comes in id order; reversed, messages that were written in
        // date order are already sorted and the sort only checks them.
        result.reverse()
        result.sort { $0.date != $1.date ? $0.date > $1.date : $0.uniqueId < $1.uniqueId }
        return result
    }

    public func erase(dialogIds ids: [Int64]) throws -> Int {
        try write { transaction in
            try withCursor(transaction, messages) { cursor in
                var erased = 0
                for id in ids {
                    var dialogKey = UInt64(bitPattern: id).bigEndian
                    let code = withUnsafeMutableBytes(of: &dialogKey) { raw in
                        var key = MDB_val(mv_size: 8, mv_data: raw.baseAddress)
                        return mdb_del(transaction, dialogs, &key, nil)
                    }
                    if code == MDB_SUCCESS {
                        erased += 1
                    } else if code != MDB_NOTFOUND {
                        throw Self.error(code, "mdb_del dialog \(id)")
                    }
                    var start = (UInt64(bitPattern: id).bigEndian, UInt64(0))
                    try withUnsafeMutableBytes(of: &start) { raw in
                        var key = MDB_val(mv_size: 16, mv_data: raw.baseAddress)
                        var value = MDB_val()
                        var code = mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE)
                        while code == MDB_SUCCESS, Self.dialogId(of: key) == id {
                            try Self.check(mdb_cursor_del(cursor, 0), "mdb_cursor_del")
                            // After a delete, MDB_NEXT yields the entry that followed it.
                            code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
                        }
                        if code != MDB_SUCCESS && code != MDB_NOTFOUND { throw Self.error(code, "mdb_cursor_get") }
                    }
                }
                return erased
            }
        }
    }

    public func eraseAll() throws -> Int {
        try write { transaction in
            let erased = try entries(transaction, dialogs)
            try Self.check(mdb_drop(transaction, messages, 0), "mdb_drop messages")
            try Self.check(mdb_drop(transaction, dialogs, 0), "mdb_drop dialogs")
            return erased
        }
    }

    // MARK: Under load (the load command)

    /// Up to `limit` messages of dialog `id` by date, oldest first or newest
    /// first, in one read-only transaction (safe from any number of threads at
    /// once: each call has its own transaction).
    ///
    /// The cursor walks the dialog's range in id order from its start or from
    /// its end and stops after `limit` messages: the workload's message ids
    /// grow with their dates, so these are the oldest or newest by date; the
    /// sort by date afterwards only checks that, for ordered input.
    /// - Throws: ``ReferenceError`` when LMDB fails.
    public func messages(dialogId id: Int64, limit: Int, newestFirst: Bool) throws -> [Message] {
        var result = try read { transaction in
            try withCursor(transaction, messages) { cursor in
                var found: [Message] = []
                found.reserveCapacity(limit)
                var start = (UInt64(bitPattern: newestFirst ? id + 1 : id).bigEndian, UInt64(0))
                try withUnsafeMutableBytes(of: &start) { raw in
                    var key = MDB_val(mv_size: 16, mv_data: raw.baseAddress)
                    var value = MDB_val()
                    var code = mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE)
                    if newestFirst {
                        // The entry before the next dialog's first (or the last entry).
                        code = mdb_cursor_get(cursor, &key, &value, code == MDB_NOTFOUND ? MDB_LAST : MDB_PREV)
                    }
                    while code == MDB_SUCCESS, found.count < limit, Self.dialogId(of: key) == id {
                        found.append(try Self.message(key, value))
                        code = mdb_cursor_get(cursor, &key, &value, newestFirst ? MDB_PREV : MDB_NEXT)
                    }
                    if code != MDB_SUCCESS && code != MDB_NOTFOUND { throw Self.error(code, "mdb_cursor_get") }
                }
                return found
            }
        }
        if newestFirst {
            result.sort { $0.date != $1.date ? $0.date > $1.date : $0.uniqueId < $1.uniqueId }
        } else {
            result.sort { $0.date != $1.date ? $0.date < $1.date : $0.uniqueId < $1.uniqueId }
        }
        return result
    }

    /// Puts one message into its (existing) dialog, in a transaction of its own.
    /// - Throws: ``ReferenceError`` when LMDB fails.
    public func append(_ message: Message) throws {
        var scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer { scratch.deallocate() }
        try write { try put(message, $0, scratch: &scratch) }
    }

    // MARK: The checks

    public func read(dialogIds ids: [Int64]) throws -> [Dialog] {
        try read { transaction in try ids.compactMap { try dialog($0, transaction) } }
    }

    public func dialogCount() throws -> Int { try read { try entries($0, dialogs) } }

    public func messageCount() throws -> Int { try read { try entries($0, messages) } }

    public func unreadMessageCount() throws -> Int {
        try read { transaction in
            try withCursor(transaction, messages) { cursor in
                var key = MDB_val()
                var value = MDB_val()
                var unread = 0
                var code = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
                while code == MDB_SUCCESS {
                    if try !Self.message(key, value).isRead { unread += 1 }
                    code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
                }
                if code != MDB_NOTFOUND { throw Self.error(code, "mdb_cursor_get messages") }
                return unread
            }
        }
    }

    // MARK: Helpers

    private static func error(_ code: Int32, _ operation: String) -> ReferenceError {
        ReferenceError(engine: "lmdb", operation: operation, code: code, message: String(cString: mdb_strerror(code)))
    }

    @inline(__always)
    private static func check(_ code: Int32, _ operation: @autoclosure () -> String) throws {
        if code != MDB_SUCCESS { throw error(code, operation()) }
    }

    /// `body` in one write transaction, committed when it returns, aborted when it throws.
    private func write<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        var handle: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, 0, &handle), "mdb_txn_begin")
        guard let transaction = handle else { throw Self.error(0, "mdb_txn_begin gave no transaction") }
        let result: T
        do {
            result = try body(transaction)
        } catch {
            mdb_txn_abort(transaction)
            throw error
        }
        // mdb_txn_commit frees the transaction whether it succeeds or not.
        try Self.check(mdb_txn_commit(transaction), "mdb_txn_commit")
        return result
    }

    /// `body` in one read-only transaction, aborted when it returns.
    private func read<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        var handle: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &handle), "mdb_txn_begin")
        guard let transaction = handle else { throw Self.error(0, "mdb_txn_begin gave no transaction") }
        defer { mdb_txn_abort(transaction) }
        return try body(transaction)
    }

    private func withCursor<T>(
        _ transaction: OpaquePointer, _ dbi: MDB_dbi, _ body: (OpaquePointer) throws -> T
    ) throws -> T {
        var handle: OpaquePointer?
        try Self.check(mdb_cursor_open(transaction, dbi, &handle), "mdb_cursor_open")
        guard let cursor = handle else { throw Self.error(0, "mdb_cursor_open gave no cursor") }
        defer { mdb_cursor_close(cursor) }
        return try body(cursor)
    }

    private func entries(_ transaction: OpaquePointer, _ dbi: MDB_dbi) throws -> Int {
        var stat = MDB_stat()
        try Self.check(mdb_stat(transaction, dbi, &stat), "mdb_stat")
        return stat.ms_entries
    }

    /// Puts `dialogs` and their messages (a put replaces what a key held).
    private func put(_ items: [Dialog], _ transaction: OpaquePointer) throws {
        var scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer { scratch.deallocate() }
        for dialog in items {
            var key = UInt64(bitPattern: dialog.uniqueId).bigEndian
            var pinned: UInt8 = dialog.isPinned ? 1 : 0
            let code = withUnsafeMutableBytes(of: &key) { keyBytes in
                withUnsafeMutableBytes(of: &pinned) { pinnedBytes in
                    var k = MDB_val(mv_size: 8, mv_data: keyBytes.baseAddress)
                    var v = MDB_val(mv_size: 1, mv_data: pinnedBytes.baseAddress)
                    return mdb_put(transaction, dialogs, &k, &v, 0)
                }
            }
            try Self.check(code, "mdb_put dialog \(dialog.uniqueId)")
            for message in dialog.messages { try put(message, transaction, scratch: &scratch) }
        }
    }

    /// Puts one message under (its dialog's id, its id), encoding it in `scratch`
    /// (grown when too small).
    @inline(__always)
    private func put(
        _ message: Message, _ transaction: OpaquePointer, scratch: inout UnsafeMutableRawBufferPointer
    ) throws {
        var key = (UInt64(bitPattern: message.dialogId).bigEndian, UInt64(bitPattern: message.uniqueId).bigEndian)
        var text = message.text
        let code = text.withUTF8 { utf8 in
            let size = Self.fixedBytes + utf8.count
            if scratch.count < size {
                scratch.deallocate()
                scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: size * 2, alignment: 8)
            }
            scratch.storeBytes(of: message.date.timeIntervalSince1970, toByteOffset: 0, as: Double.self)
            scratch.storeBytes(of: message.senderId, toByteOffset: 8, as: Int64.self)
            scratch.storeBytes(of: message.receiverId, toByteOffset: 16, as: Int64.self)
            scratch.storeBytes(of: Int32(truncatingIfNeeded: message.type), toByteOffset: 24, as: Int32.self)
            scratch.storeBytes(of: message.isIncoming ? 1 : 0, toByteOffset: 28, as: UInt8.self)
            scratch.storeBytes(of: message.isRead ? 1 : 0, toByteOffset: 29, as: UInt8.self)
            UnsafeMutableRawBufferPointer(rebasing: scratch[Self.fixedBytes...]).copyMemory(from: UnsafeRawBufferPointer(utf8))
            return withUnsafeMutableBytes(of: &key) { keyBytes in
                var k = MDB_val(mv_size: 16, mv_data: keyBytes.baseAddress)
                var v = MDB_val(mv_size: size, mv_data: scratch.baseAddress)
                return mdb_put(transaction, messages, &k, &v, 0)
            }
        }
        try Self.check(code, "mdb_put message \(message.uniqueId)")
    }

    /// The dialog `id` with its messages, or `nil`.
    private func dialog(_ id: Int64, _ transaction: OpaquePointer) throws -> Dialog? {
        var dialogKey = UInt64(bitPattern: id).bigEndian
        var value = MDB_val()
        let code = withUnsafeMutableBytes(of: &dialogKey) { raw in
            var key = MDB_val(mv_size: 8, mv_data: raw.baseAddress)
            return mdb_get(transaction, dialogs, &key, &value)
        }
        if code == MDB_NOTFOUND { return nil }
        try Self.check(code, "mdb_get dialog \(id)")
        guard value.mv_size == 1, let pinned = value.mv_data?.load(as: UInt8.self) else {
            throw Self.error(0, "dialog \(id): a value of \(value.mv_size) bytes")
        }
        var messages: [Message] = []
        try withCursor(transaction, self.messages) { cursor in
            try scan(cursor, dialog: id, unreadOnly: false, into: &messages)
        }
        return Dialog(uniqueId: id, isPinned: pinned != 0, messages: messages)
    }

    /// Appends the messages of dialog `id` (all, or the unread ones, skipped
    /// before they are decoded), in id order.
    private func scan(_ cursor: OpaquePointer, dialog id: Int64, unreadOnly: Bool, into result: inout [Message]) throws {
        var start = (UInt64(bitPattern: id).bigEndian, UInt64(0))
        try withUnsafeMutableBytes(of: &start) { raw in
            var key = MDB_val(mv_size: 16, mv_data: raw.baseAddress)
            var value = MDB_val()
            var code = mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE)
            while code == MDB_SUCCESS, Self.dialogId(of: key) == id {
                if unreadOnly {
                    guard value.mv_size >= Self.fixedBytes, let bytes = value.mv_data else {
                        throw Self.error(0, "a message entry of \(value.mv_size) bytes")
                    }
                    if bytes.load(fromByteOffset: 29, as: UInt8.self) != 0 {  // isRead: skip before decoding
                        code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
                        continue
                    }
                }
                result.append(try Self.message(key, value))
                code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
            }
            if code != MDB_SUCCESS && code != MDB_NOTFOUND { throw Self.error(code, "mdb_cursor_get") }
        }
    }

    /// The dialog id of a message key, or `nil` for a key of another size.
    @inline(__always)
    private static func dialogId(of key: MDB_val) -> Int64? {
        guard key.mv_size == 16, let bytes = key.mv_data else { return nil }
        return Int64(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)))
    }

    /// Decodes a message entry.
    @inline(__always)
    private static func message(_ key: MDB_val, _ value: MDB_val) throws -> Message {
        guard key.mv_size == 16, value.mv_size >= fixedBytes, let k = key.mv_data, let v = value.mv_data else {
            throw error(0, "a message entry of the wrong size (key \(key.mv_size), value \(value.mv_size) bytes)")
        }
        let text = String(
            decoding: UnsafeRawBufferPointer(start: v + fixedBytes, count: value.mv_size - fixedBytes), as: UTF8.self)
        return Message(
            uniqueId: Int64(bitPattern: UInt64(bigEndian: k.loadUnaligned(fromByteOffset: 8, as: UInt64.self))),
            dialogId: Int64(bitPattern: UInt64(bigEndian: k.loadUnaligned(as: UInt64.self))),
            date: Date(timeIntervalSince1970: v.loadUnaligned(as: Double.self)), text: text,
            senderId: v.loadUnaligned(fromByteOffset: 8, as: Int64.self),
            receiverId: v.loadUnaligned(fromByteOffset: 16, as: Int64.self),
            type: Int(v.loadUnaligned(fromByteOffset: 24, as: Int32.self)),
            isIncoming: v.load(fromByteOffset: 28, as: UInt8.self) != 0,
            isRead: v.load(fromByteOffset: 29, as: UInt8.self) != 0)
    }
}
