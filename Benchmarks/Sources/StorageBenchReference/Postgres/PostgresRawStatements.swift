import DialogGraph
import Foundation
import PostgresNIO

/// The SQL of `postgres-raw`, as server-side prepared statements: each is
/// parsed and planned once per connection (postgres-nio prepares a
/// ``PostgresPreparedStatement`` under its name on first use and reuses it),
/// and every call is one statement, so one round trip and one transaction of
/// the server's own, except `erase-all` and `read-all` (see
/// ``PostgresRawSubject``). Bulk writes bind one array per column and insert
/// the rows with `unnest` (a multi-row `INSERT` whose statement does not
/// depend on the number of rows); a dialog and its messages go in one
/// statement, the dialogs' `INSERT` a data-modifying `WITH` before the
/// messages', so that the foreign keys are checked at its end.
enum PostgresRawSQL {
    /// The schema, created in the subject's own schema (the first of its search path).
    static let createTables = [
        "CREATE TABLE dialogs(id bigint PRIMARY KEY, is_pinned boolean NOT NULL)",
        """
        CREATE TABLE messages(id bigint PRIMARY KEY,
          dialog_id bigint NOT NULL REFERENCES dialogs(id) ON DELETE CASCADE,
          date double precision NOT NULL, text text COLLATE "C" NOT NULL, sender_id bigint NOT NULL,
          receiver_id bigint NOT NULL, type bigint NOT NULL, is_incoming boolean NOT NULL, is_read boolean NOT NULL)
        """,
        "CREATE INDEX messages_dialog_id_date ON messages(dialog_id, date)",
    ]

    /// The message columns after `id` and `dialog_id`, in the order the rows decode them.
    static let messageTail = "date, text, sender_id, receiver_id, type, is_incoming, is_read"

    /// The arrays of a graph's columns, bound as `$1` … `$11`.
    static func bindings(_ dialogs: [Dialog]) -> PostgresBindings {
        let count = dialogs.reduce(0) { $0 + $1.messages.count }
        var dialogIds: [Int64] = []
        var pinned: [Bool] = []
        dialogIds.reserveCapacity(dialogs.count)
        pinned.reserveCapacity(dialogs.count)
        var ids: [Int64] = []
        var owners: [Int64] = []
        var dates: [Double] = []
        var texts: [String] = []
        var senders: [Int64] = []
        var receivers: [Int64] = []
        var types: [Int64] = []
        var incoming: [Bool] = []
        var read: [Bool] = []
        ids.reserveCapacity(count)
        owners.reserveCapacity(count)
        dates.reserveCapacity(count)
        texts.reserveCapacity(count)
        senders.reserveCapacity(count)
        receivers.reserveCapacity(count)
        types.reserveCapacity(count)
        incoming.reserveCapacity(count)
        read.reserveCapacity(count)
        for dialog in dialogs {
            dialogIds.append(dialog.uniqueId)
            pinned.append(dialog.isPinned)
            for message in dialog.messages {
                ids.append(message.uniqueId)
                owners.append(message.dialogId)
                dates.append(message.date.timeIntervalSince1970)
                texts.append(message.text)
                senders.append(message.senderId)
                receivers.append(message.receiverId)
                types.append(Int64(message.type))
                incoming.append(message.isIncoming)
                read.append(message.isRead)
            }
        }
        var bindings = PostgresBindings(capacity: 11)
        bindings.append(dialogIds)
        bindings.append(pinned)
        bindings.append(ids)
        bindings.append(owners)
        bindings.append(dates)
        bindings.append(texts)
        bindings.append(senders)
        bindings.append(receivers)
        bindings.append(types)
        bindings.append(incoming)
        bindings.append(read)
        return bindings
    }

    /// A message row of the columns `id, dialog_id` and ``messageTail``.
    typealias MessageColumns = (Int64, Int64, Double, String, Int64, Int64, Int64, Bool, Bool)

    @inline(__always)
    static func message(_ c: MessageColumns) -> Message {
        Message(
            uniqueId: c.0, dialogId: c.1, date: Date(timeIntervalSince1970: c.2), text: c.3, senderId: c.4,
            receiverId: c.5, type: Int(c.6), isIncoming: c.7, isRead: c.8)
    }

    /// `persist` and `persist-single`: new dialogs and their messages.
    struct InsertGraph: PostgresPreparedStatement {
        static let sql = """
            WITH new_dialogs AS (
              INSERT INTO dialogs(id, is_pinned) SELECT * FROM unnest($1::bigint[], $2::boolean[]))
            INSERT INTO messages(id, dialog_id, \(PostgresRawSQL.messageTail))
            SELECT * FROM unnest($3::bigint[], $4::bigint[], $5::double precision[], $6::text[], $7::bigint[],
              $8::bigint[], $9::bigint[], $10::boolean[], $11::boolean[])
            """
        typealias Row = ()
        let dialogs: [Dialog]
        func makeBindings() throws -> PostgresBindings { PostgresRawSQL.bindings(dialogs) }
        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    /// `update` (and the load mixes' writes): dialogs and their messages written
    /// again over what is stored under their ids.
    struct UpsertGraph: PostgresPreparedStatement {
        static let sql = """
            WITH upserted_dialogs AS (
              INSERT INTO dialogs(id, is_pinned) SELECT * FROM unnest($1::bigint[], $2::boolean[])
              ON CONFLICT (id) DO UPDATE SET is_pinned = excluded.is_pinned)
            INSERT INTO messages(id, dialog_id, \(PostgresRawSQL.messageTail))
            SELECT * FROM unnest($3::bigint[], $4::bigint[], $5::double precision[], $6::text[], $7::bigint[],
              $8::bigint[], $9::bigint[], $10::boolean[], $11::boolean[])
            ON CONFLICT (id) DO UPDATE SET dialog_id = excluded.dialog_id, date = excluded.date,
              text = excluded.text, sender_id = excluded.sender_id, receiver_id = excluded.receiver_id,
              type = excluded.type, is_incoming = excluded.is_incoming, is_read = excluded.is_read
            """
        typealias Row = ()
        let dialogs: [Dialog]
        func makeBindings() throws -> PostgresBindings { PostgresRawSQL.bindings(dialogs) }
        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    /// `read-by-id`: a dialog and its messages by date, in one statement (a
    /// dialog without messages is one row of `NULL` message columns).
    struct ReadDialog: PostgresPreparedStatement {
        static let sql = """
            SELECT d.is_pinned, m.id, m.\(PostgresRawSQL.messageTail.replacingOccurrences(of: ", ", with: ", m."))
            FROM dialogs d LEFT JOIN messages m ON m.dialog_id = d.id WHERE d.id = $1 ORDER BY m.date
            """
        typealias Row = (Bool, Int64?, Double?, String?, Int64?, Int64?, Int64?, Bool?, Bool?)
        let id: Int64
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(id)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// `read-all`: every dialog with its messages, by dialog id and date.
    struct ReadAll: PostgresPreparedStatement {
        static let sql = """
            SELECT d.id, d.is_pinned, m.id, m.\(PostgresRawSQL.messageTail.replacingOccurrences(of: ", ", with: ", m."))
            FROM dialogs d LEFT JOIN messages m ON m.dialog_id = d.id ORDER BY d.id, m.date
            """
        typealias Row = (Int64, Bool, Int64?, Double?, String?, Int64?, Int64?, Int64?, Bool?, Bool?)
        func makeBindings() throws -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// `query`: a dialog's unread messages, newest first.
    struct Unread: PostgresPreparedStatement {
        static let sql = """
            SELECT id, dialog_id, \(PostgresRawSQL.messageTail) FROM messages WHERE dialog_id = $1 AND NOT is_read ORDER BY date DESC
            """
        typealias Row = Message
        let id: Int64
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(id)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row { PostgresRawSQL.message(try row.decode(MessageColumns.self)) }
    }

    /// The load mixes' `scan`: up to `$2` of a dialog's messages, oldest first.
    struct Oldest: PostgresPreparedStatement {
        static let sql = "SELECT id, dialog_id, \(PostgresRawSQL.messageTail) FROM messages WHERE dialog_id = $1 ORDER BY date LIMIT $2"
        typealias Row = Message
        let id: Int64
        let limit: Int64
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(id)
            bindings.append(limit)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row { PostgresRawSQL.message(try row.decode(MessageColumns.self)) }
    }

    /// The load mixes' `page`: up to `$2` of a dialog's messages, newest first.
    struct Newest: PostgresPreparedStatement {
        static let sql =
            "SELECT id, dialog_id, \(PostgresRawSQL.messageTail) FROM messages WHERE dialog_id = $1 ORDER BY date DESC LIMIT $2"
        typealias Row = Message
        let id: Int64
        let limit: Int64
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(id)
            bindings.append(limit)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row { PostgresRawSQL.message(try row.decode(MessageColumns.self)) }
    }

    /// The load mixes' `append`: one new message of an existing dialog.
    struct AppendMessage: PostgresPreparedStatement {
        static let sql = "INSERT INTO messages(id, dialog_id, \(PostgresRawSQL.messageTail)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        typealias Row = ()
        let message: Message
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 9)
            bindings.append(message.uniqueId)
            bindings.append(message.dialogId)
            bindings.append(message.date.timeIntervalSince1970)
            bindings.append(message.text)
            bindings.append(message.senderId)
            bindings.append(message.receiverId)
            bindings.append(Int64(message.type))
            bindings.append(message.isIncoming)
            bindings.append(message.isRead)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    /// `erase-by-id`: dialogs by id, their messages by the foreign key's
    /// cascade; one row, the number of dialogs erased.
    struct EraseDialogs: PostgresPreparedStatement {
        static let sql = """
            WITH erased AS (DELETE FROM dialogs WHERE id = ANY($1::bigint[]) RETURNING 1) SELECT count(*) FROM erased
            """
        typealias Row = Int64
        let ids: [Int64]
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(ids)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int64.self) }
    }

    /// Every message and every dialog deleted by one statement, answering
    /// the dialogs' count: the messages' `DELETE` first, so that the
    /// dialogs' cascade finds none left. Not `TRUNCATE`: it is not MVCC-safe
    /// (a transaction whose snapshot predates it sees the tables empty), so
    /// the adapter cannot use it either; its commit is synchronous whatever
    /// `synchronous_commit` says; and it makes new files for both tables and
    /// their indexes, which costs more than these deletions on small tables.
    struct EraseAll: PostgresPreparedStatement {
        static let sql = """
            WITH erased_messages AS (DELETE FROM messages), erased AS (DELETE FROM dialogs RETURNING 1) \
            SELECT count(*) FROM erased
            """
        typealias Row = Int64
        func makeBindings() throws -> PostgresBindings { PostgresBindings() }
        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int64.self) }
    }
}

extension Dialog {
    /// The dialog of `rows` of ``PostgresRawSQL/ReadDialog`` (or `nil` for none).
    static func postgresRaw(id: Int64, rows: [PostgresRawSQL.ReadDialog.Row]) -> Dialog? {
        guard let first = rows.first else { return nil }
        var messages: [Message] = []
        messages.reserveCapacity(rows.count)
        for r in rows {
            guard let messageId = r.1, let date = r.2, let text = r.3, let sender = r.4, let receiver = r.5,
                let type = r.6, let incoming = r.7, let read = r.8
            else { continue }
            messages.append(
                Message(
                    uniqueId: messageId, dialogId: id, date: Date(timeIntervalSince1970: date), text: text,
                    senderId: sender, receiverId: receiver, type: Int(type), isIncoming: incoming, isRead: read))
        }
        return Dialog(uniqueId: id, isPinned: first.0, messages: messages)
    }
}
