// The workload in plain C on libsqlite3 and liblmdb (see CReference.h).
#include "CReference.h"

#include <lmdb.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cref_store {
    cref_engine engine;
    char error[512];
    char settings[256];
    // SQLite: one connection, every statement prepared once.
    sqlite3 *db;
    sqlite3_stmt *begin_read, *begin_write, *commit, *rollback;
    sqlite3_stmt *insert_dialog, *insert_message, *upsert_dialog, *upsert_message;
    sqlite3_stmt *select_dialog, *select_messages_of_dialog, *select_unread, *select_all_dialogs, *select_all_messages;
    sqlite3_stmt *delete_dialog, *delete_messages_of_dialog, *delete_all_messages, *delete_all_dialogs;
    sqlite3_stmt *count_dialogs, *count_messages, *count_unread;
    // LMDB: one environment, two databases.
    MDB_env *env;
    MDB_dbi dialogs_db, messages_db;
};

// MARK: - Errors and memory

static int fail(cref_store *s, int code, const char *format, ...) __attribute__((format(printf, 3, 4)));
static int fail(cref_store *s, int code, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(s->error, sizeof s->error, format, arguments);
    va_end(arguments);
    return code;
}

const char *cref_error_message(const cref_store *store) { return store->error; }

const char *cref_settings(const cref_store *store) { return store->settings; }

char *cref_copy_text(const char *bytes, size_t length) {
    char *text = malloc(length + 1);
    if (!text) return NULL;
    if (length) memcpy(text, bytes, length);
    text[length] = 0;
    return text;
}

/// The next message slot of `*items` (grown by doubling), or NULL without memory.
static cref_message *push_message(cref_message **items, size_t *count, size_t *capacity) {
    if (*count == *capacity) {
        size_t grown = *capacity ? *capacity * 2 : 16;
        cref_message *moved = realloc(*items, grown * sizeof(cref_message));
        if (!moved) return NULL;
        *items = moved;
        *capacity = grown;
    }
    return &(*items)[(*count)++];
}

static cref_dialog *push_dialog(cref_dialogs *dialogs) {
    if (dialogs->count == dialogs->capacity) {
        size_t grown = dialogs->capacity ? dialogs->capacity * 2 : 64;
        cref_dialog *moved = realloc(dialogs->items, grown * sizeof(cref_dialog));
        if (!moved) return NULL;
        dialogs->items = moved;
        dialogs->capacity = grown;
    }
    cref_dialog *dialog = &dialogs->items[dialogs->count++];
    memset(dialog, 0, sizeof *dialog);
    return dialog;
}

void cref_dialog_free(cref_dialog *dialog) {
    for (size_t i = 0; i < dialog->count; i++) free(dialog->messages[i].text);
    free(dialog->messages);
    memset(dialog, 0, sizeof *dialog);
}

void cref_dialogs_free(cref_dialogs *dialogs) {
    for (size_t i = 0; i < dialogs->count; i++) cref_dialog_free(&dialogs->items[i]);
    free(dialogs->items);
    memset(dialogs, 0, sizeof *dialogs);
}

void cref_messages_free(cref_messages *messages) {
    for (size_t i = 0; i < messages->count; i++) free(messages->items[i].text);
    free(messages->items);
    memset(messages, 0, sizeof *messages);
}

// MARK: - The digest (StorageBenchKit's ReadDigest, the same fold)

static inline void mix(cref_digest *digest, uint64_t word) {
    uint64_t value = (digest->value ^ word) * 0x9E3779B97F4A7C15ULL;
    digest->value = value ^ (value >> 29);
}

void cref_digest_message(cref_digest *digest, const cref_message *m) {
    digest->messages += 1;
    mix(digest, (uint64_t)m->id);
    mix(digest, (uint64_t)m->dialog_id);
    mix(digest, (uint64_t)(int64_t)round(m->date * 1000));
    const unsigned char *text = (const unsigned char *)m->text;
    uint64_t length = (uint64_t)m->text_length;
    uint64_t first = length ? text[0] : 0, last = length ? text[length - 1] : 0;
    mix(digest, length << 16 | first << 8 | last);
    mix(digest, (uint64_t)m->sender_id);
    mix(digest, (uint64_t)m->receiver_id);
    mix(digest, (uint64_t)(int64_t)m->type << 2 | (m->is_incoming ? 2u : 0u) | (m->is_read ? 1u : 0u));
}

void cref_digest_dialog(cref_digest *digest, const cref_dialog *dialog) {
    digest->dialogs += 1;
    mix(digest, (uint64_t)dialog->id);
    mix(digest, dialog->is_pinned ? 1 : 0);
    for (size_t i = 0; i < dialog->count; i++) cref_digest_message(digest, &dialog->messages[i]);
}

// MARK: - SQLite

#define MESSAGE_COLUMNS "id, dialog_id, date, text, sender_id, receiver_id, type, is_incoming, is_read"

static int sq_fail(cref_store *s, int code, const char *what) {
    return fail(s, code, "sqlite: %s: %s (%d)", what, sqlite3_errmsg(s->db), code);
}

static int sq_exec(cref_store *s, const char *sql) {
    char *message = NULL;
    int code = sqlite3_exec(s->db, sql, NULL, NULL, &message);
    if (code != SQLITE_OK) {
        fail(s, code, "sqlite: %s: %s", sql, message ? message : sqlite3_errmsg(s->db));
        sqlite3_free(message);
    }
    return code;
}

static int sq_prepare(cref_store *s, const char *sql, sqlite3_stmt **statement) {
    int code = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, statement, NULL);
    return code == SQLITE_OK ? 0 : sq_fail(s, code, sql);
}

/// Runs a statement that returns no row, and resets it.
static int sq_run(cref_store *s, sqlite3_stmt *statement) {
    int code = sqlite3_step(statement);
    sqlite3_reset(statement);
    return code == SQLITE_DONE ? 0 : sq_fail(s, code, sqlite3_sql(statement));
}

/// Steps a query: 1 with a row, 0 when done, a negative code on failure
/// (the engine's, negated, with the reason set).
static int sq_step(cref_store *s, sqlite3_stmt *statement) {
    int code = sqlite3_step(statement);
    if (code == SQLITE_ROW) return 1;
    if (code == SQLITE_DONE) return 0;
    sq_fail(s, code, sqlite3_sql(statement));
    return -code;
}

/// Ends a transaction: COMMIT after success, ROLLBACK (whose own failure
/// leaves the transaction open, and the next BEGIN says so) after a failure.
static int sq_end(cref_store *s, int code) {
    if (code == 0) return sq_run(s, s->commit);
    sqlite3_step(s->rollback);
    sqlite3_reset(s->rollback);
    return code;
}

static void sq_read_message(sqlite3_stmt *statement, cref_message *m, int *failed) {
    m->id = sqlite3_column_int64(statement, 0);
    m->dialog_id = sqlite3_column_int64(statement, 1);
    m->date = sqlite3_column_double(statement, 2);
    const unsigned char *text = sqlite3_column_text(statement, 3);
    int length = sqlite3_column_bytes(statement, 3);
    m->text = cref_copy_text(text ? (const char *)text : "", text ? (size_t)length : 0);
    m->text_length = text ? length : 0;
    m->sender_id = sqlite3_column_int64(statement, 4);
    m->receiver_id = sqlite3_column_int64(statement, 5);
    m->type = sqlite3_column_int(statement, 6);
    m->is_incoming = (uint8_t)(sqlite3_column_int(statement, 7) != 0);
    m->is_read = (uint8_t)(sqlite3_column_int(statement, 8) != 0);
    if (!m->text) *failed = 1;
}

static int sq_open(cref_store *s, const char *directory, int durable) {
    char path[4096];
    snprintf(path, sizeof path, "%s/store.sqlite", directory);
    int code = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (code != SQLITE_OK) return s->db ? sq_fail(s, code, path) : fail(s, code, "sqlite: open %s", path);
    if ((code = sq_exec(s, "PRAGMA journal_mode = WAL"))) return code;
    if ((code = sq_exec(s, durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = OFF"))) return code;
    if ((code = sq_exec(s, "PRAGMA foreign_keys = ON"))) return code;
    sqlite3_busy_timeout(s->db, 5000);
    code = sq_exec(s, "BEGIN IMMEDIATE;"
                      "CREATE TABLE dialogs(id INTEGER PRIMARY KEY, is_pinned INTEGER NOT NULL);"
                      "CREATE TABLE messages(id INTEGER PRIMARY KEY,"
                      " dialog_id INTEGER NOT NULL REFERENCES dialogs(id) ON DELETE CASCADE,"
                      " date REAL NOT NULL, text TEXT NOT NULL, sender_id INTEGER NOT NULL,"
                      " receiver_id INTEGER NOT NULL, type INTEGER NOT NULL,"
                      " is_incoming INTEGER NOT NULL, is_read INTEGER NOT NULL);"
                      "CREATE INDEX messages_dialog_id_date ON messages(dialog_id, date);"
                      "COMMIT;");
    if (code) return code;
    struct {
        sqlite3_stmt **statement;
        const char *sql;
    } statements[] = {
        {&s->begin_read, "BEGIN"},
        {&s->begin_write, "BEGIN IMMEDIATE"},
        {&s->commit, "COMMIT"},
        {&s->rollback, "ROLLBACK"},
        {&s->insert_dialog, "INSERT INTO dialogs(id, is_pinned) VALUES (?, ?)"},
        {&s->insert_message, "INSERT INTO messages(" MESSAGE_COLUMNS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"},
        {&s->upsert_dialog, "INSERT INTO dialogs(id, is_pinned) VALUES (?, ?) "
                            "ON CONFLICT(id) DO UPDATE SET is_pinned = excluded.is_pinned"},
        {&s->upsert_message, "INSERT INTO messages(" MESSAGE_COLUMNS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                             "ON CONFLICT(id) DO UPDATE SET dialog_id = excluded.dialog_id, date = excluded.date,"
                             " text = excluded.text, sender_id = excluded.sender_id,"
                             " receiver_id = excluded.receiver_id, type = excluded.type,"
                             " is_incoming = excluded.is_incoming, is_read = excluded.is_read"},
        {&s->select_dialog, "SELECT id, is_pinned FROM dialogs WHERE id = ?"},
        {&s->select_messages_of_dialog, "SELECT " MESSAGE_COLUMNS " FROM messages WHERE dialog_id = ? ORDER BY date"},
        {&s->select_unread,
         "SELECT " MESSAGE_COLUMNS " FROM messages WHERE dialog_id = ? AND is_read = 0 ORDER BY date DESC"},
        {&s->select_all_dialogs, "SELECT id, is_pinned FROM dialogs ORDER BY id"},
        {&s->select_all_messages, "SELECT " MESSAGE_COLUMNS " FROM messages ORDER BY id"},
        {&s->delete_dialog, "DELETE FROM dialogs WHERE id = ?"},
        // Before the dialog: SQLite runs ON DELETE CASCADE as a trigger
        // program, slower per row than a plain DELETE of the same rows.
        {&s->delete_messages_of_dialog, "DELETE FROM messages WHERE dialog_id = ?"},
        {&s->delete_all_messages, "DELETE FROM messages"},
        {&s->delete_all_dialogs, "DELETE FROM dialogs"},
        {&s->count_dialogs, "SELECT count(*) FROM dialogs"},
        {&s->count_messages, "SELECT count(*) FROM messages"},
        {&s->count_unread, "SELECT count(*) FROM messages WHERE is_read = 0"},
    };
    for (size_t i = 0; i < sizeof statements / sizeof statements[0]; i++)
        if ((code = sq_prepare(s, statements[i].sql, statements[i].statement))) return code;
    // The settings read back: journal mode, synchronous, foreign keys, version.
    static const char *const levels[] = {"OFF", "NORMAL", "FULL", "EXTRA"};
    char journal[32] = "?", level[16] = "?", keys[8] = "?";
    const char *pragmas[] = {"PRAGMA journal_mode", "PRAGMA synchronous", "PRAGMA foreign_keys"};
    for (int i = 0; i < 3; i++) {
        sqlite3_stmt *pragma = NULL;
        if (sqlite3_prepare_v2(s->db, pragmas[i], -1, &pragma, NULL) != SQLITE_OK) continue;
        if (sqlite3_step(pragma) == SQLITE_ROW) {
            const char *text = (const char *)sqlite3_column_text(pragma, 0);
            int number = sqlite3_column_int(pragma, 0);
            if (i == 0 && text) snprintf(journal, sizeof journal, "%s", text);
            if (i == 1 && number >= 0 && number < 4) snprintf(level, sizeof level, "%s", levels[number]);
            if (i == 2) snprintf(keys, sizeof keys, "%s", number ? "ON" : "OFF");
        }
        sqlite3_finalize(pragma);
    }
    snprintf(s->settings, sizeof s->settings, "journal_mode=%s synchronous=%s foreign_keys=%s sqlite=%s", journal,
             level, keys, sqlite3_libversion());
    return 0;
}

static void sq_close(cref_store *s) {
    sqlite3_stmt *all[] = {
        s->begin_read, s->begin_write, s->commit, s->rollback, s->insert_dialog, s->insert_message,
        s->upsert_dialog, s->upsert_message, s->select_dialog, s->select_messages_of_dialog, s->select_unread,
        s->select_all_dialogs, s->select_all_messages, s->delete_dialog, s->delete_messages_of_dialog,
        s->delete_all_messages, s->delete_all_dialogs, s->count_dialogs, s->count_messages, s->count_unread,
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sqlite3_finalize(all[i]);
    sqlite3_close_v2(s->db);
}

static int sq_write(cref_store *s, const cref_dialog *dialogs, size_t count, int upsert) {
    sqlite3_stmt *d = upsert ? s->upsert_dialog : s->insert_dialog;
    sqlite3_stmt *m = upsert ? s->upsert_message : s->insert_message;
    int code = sq_run(s, s->begin_write);
    if (code) return code;
    for (size_t i = 0; i < count && !code; i++) {
        sqlite3_bind_int64(d, 1, dialogs[i].id);
        sqlite3_bind_int(d, 2, dialogs[i].is_pinned);
        code = sq_run(s, d);
        for (size_t j = 0; j < dialogs[i].count && !code; j++) {
            const cref_message *message = &dialogs[i].messages[j];
            sqlite3_bind_int64(m, 1, message->id);
            sqlite3_bind_int64(m, 2, message->dialog_id);
            sqlite3_bind_double(m, 3, message->date);
            sqlite3_bind_text(m, 4, message->text, message->text_length, SQLITE_STATIC);
            sqlite3_bind_int64(m, 5, message->sender_id);
            sqlite3_bind_int64(m, 6, message->receiver_id);
            sqlite3_bind_int(m, 7, message->type);
            sqlite3_bind_int(m, 8, message->is_incoming);
            sqlite3_bind_int(m, 9, message->is_read);
            code = sq_run(s, m);
        }
    }
    sqlite3_clear_bindings(m);  // SQLITE_STATIC text must not stay bound past the caller's
    return sq_end(s, code);
}

static int sq_read_all(cref_store *s, cref_dialogs *out) {
    int code = sq_run(s, s->begin_read);
    if (code) return code;
    int row, failed = 0;
    while ((row = sq_step(s, s->select_all_dialogs)) == 1) {
        cref_dialog *dialog = push_dialog(out);
        if (!dialog) { failed = 1; break; }
        dialog->id = sqlite3_column_int64(s->select_all_dialogs, 0);
        dialog->is_pinned = (uint8_t)(sqlite3_column_int(s->select_all_dialogs, 1) != 0);
    }
    sqlite3_reset(s->select_all_dialogs);
    if (row < 0) return sq_end(s, -row);
    // Messages in rowid order; each goes to its dialog, found by binary search
    // in the ordered ids, with a fast path for a run of one dialog.
    cref_dialog *current = NULL;
    while (!failed && (row = sq_step(s, s->select_all_messages)) == 1) {
        int64_t id = sqlite3_column_int64(s->select_all_messages, 1);
        if (!current || current->id != id) {
            size_t low = 0, high = out->count;
            while (low < high) {
                size_t middle = low + (high - low) / 2;
                if (out->items[middle].id < id) low = middle + 1; else high = middle;
            }
            if (low == out->count || out->items[low].id != id) {
                sqlite3_reset(s->select_all_messages);
                return sq_end(s, fail(s, CREF_ERROR_DATA, "sqlite: read-all: a message of dialog %lld, which "
                                      "does not exist", (long long)id));
            }
            current = &out->items[low];
        }
        cref_message *message = push_message(&current->messages, &current->count, &current->capacity);
        if (!message) { failed = 1; break; }
        sq_read_message(s->select_all_messages, message, &failed);
    }
    sqlite3_reset(s->select_all_messages);
    if (failed) return sq_end(s, fail(s, CREF_ERROR_MEMORY, "read-all: out of memory"));
    return sq_end(s, row < 0 ? -row : 0);
}

/// The dialog `id` into `out`, inside a transaction.
static int sq_dialog(cref_store *s, int64_t id, cref_dialog *out, int *found) {
    memset(out, 0, sizeof *out);
    sqlite3_bind_int64(s->select_dialog, 1, id);
    int row = sq_step(s, s->select_dialog);
    if (row == 1) {
        out->id = sqlite3_column_int64(s->select_dialog, 0);
        out->is_pinned = (uint8_t)(sqlite3_column_int(s->select_dialog, 1) != 0);
    }
    sqlite3_reset(s->select_dialog);
    *found = row == 1;
    if (row != 1) return row < 0 ? -row : 0;
    sqlite3_bind_int64(s->select_messages_of_dialog, 1, id);
    int failed = 0;
    while ((row = sq_step(s, s->select_messages_of_dialog)) == 1) {
        cref_message *message = push_message(&out->messages, &out->count, &out->capacity);
        if (!message) { failed = 1; break; }
        sq_read_message(s->select_messages_of_dialog, message, &failed);
        if (failed) break;
    }
    sqlite3_reset(s->select_messages_of_dialog);
    if (failed) return fail(s, CREF_ERROR_MEMORY, "read-by-id: out of memory");
    return row < 0 ? -row : 0;
}

static int sq_read_dialog(cref_store *s, int64_t id, cref_dialog *out, int *found) {
    int code = sq_run(s, s->begin_read);
    if (code) return code;
    return sq_end(s, sq_dialog(s, id, out, found));
}

static int sq_read_unread(cref_store *s, int64_t id, cref_messages *out) {
    int code = sq_run(s, s->begin_read);
    if (code) return code;
    sqlite3_bind_int64(s->select_unread, 1, id);
    int row, failed = 0;
    while ((row = sq_step(s, s->select_unread)) == 1) {
        cref_message *message = push_message(&out->items, &out->count, &out->capacity);
        if (!message) { failed = 1; break; }
        sq_read_message(s->select_unread, message, &failed);
        if (failed) break;
    }
    sqlite3_reset(s->select_unread);
    if (failed) return sq_end(s, fail(s, CREF_ERROR_MEMORY, "query: out of memory"));
    return sq_end(s, row < 0 ? -row : 0);
}

static int sq_erase(cref_store *s, const int64_t *ids, size_t count, int64_t *erased) {
    int code = sq_run(s, s->begin_write);
    if (code) return code;
    *erased = 0;
    for (size_t i = 0; i < count && !code; i++) {
        sqlite3_bind_int64(s->delete_messages_of_dialog, 1, ids[i]);
        code = sq_run(s, s->delete_messages_of_dialog);
        if (code) break;
        sqlite3_bind_int64(s->delete_dialog, 1, ids[i]);
        code = sq_run(s, s->delete_dialog);
        if (!code) *erased += sqlite3_changes(s->db);
    }
    return sq_end(s, code);
}

/// Both tables emptied with foreign keys off (set outside the transaction,
/// as SQLite requires), so that SQLite frees their pages whole rather than
/// deleting row by row.
static int sq_erase_all(cref_store *s, int64_t *erased) {
    int state = -1;
    if (sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_FKEY, 0, &state) != SQLITE_OK || state != 0)
        return sq_fail(s, SQLITE_ERROR, "foreign keys off");
    int code = sq_run(s, s->begin_write);
    if (!code) {
        code = sq_run(s, s->delete_all_messages);
        if (!code) code = sq_run(s, s->delete_all_dialogs);
        if (!code) *erased = sqlite3_changes(s->db);
        code = sq_end(s, code);
    }
    if (sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_FKEY, 1, &state) != SQLITE_OK || state != 1)
        return code ? code : sq_fail(s, SQLITE_ERROR, "foreign keys on");
    return code;
}

static int sq_count(cref_store *s, cref_count_kind kind, int64_t *count) {
    sqlite3_stmt *statement = kind == CREF_COUNT_DIALOGS   ? s->count_dialogs
                              : kind == CREF_COUNT_MESSAGES ? s->count_messages
                                                            : s->count_unread;
    int row = sq_step(s, statement);
    if (row == 1) *count = sqlite3_column_int64(statement, 0);
    sqlite3_reset(statement);
    if (row == 1) return 0;
    return row < 0 ? -row : fail(s, CREF_ERROR_MISSING, "sqlite: a count gave no row");
}

// MARK: - LMDB
//
// "dialogs": key the dialog id (8 bytes, big-endian); value is_pinned (1 byte).
// "messages": key the dialog id then the message id (8 + 8 bytes,
// big-endian); value date (f64), sender, receiver (i64), type (i32),
// is_incoming, is_read (1 byte each) in native byte order, then the text.

#define FIXED_BYTES 30

static int lm_fail(cref_store *s, int code, const char *what) {
    return fail(s, code, "lmdb: %s: %s (%d)", what, mdb_strerror(code), code);
}

/// Whether `code` is one of this library's own errors (its reason already set).
static int own(int code) { return code <= CREF_ERROR_MEMORY && code >= CREF_ERROR_MISSING; }

static inline void put_be64(unsigned char *p, uint64_t v) {
    for (int i = 7; i >= 0; i--) {
        p[i] = (unsigned char)v;
        v >>= 8;
    }
}

static inline uint64_t get_be64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

static int lm_open(cref_store *s, const char *directory, int durable) {
    int code = mdb_env_create(&s->env);
    if (code) return lm_fail(s, code, "mdb_env_create");
    if ((code = mdb_env_set_maxdbs(s->env, 2))) return lm_fail(s, code, "mdb_env_set_maxdbs");
    if ((code = mdb_env_set_mapsize(s->env, (size_t)4 << 30))) return lm_fail(s, code, "mdb_env_set_mapsize");
    if ((code = mdb_env_open(s->env, directory, durable ? 0 : MDB_NOSYNC, 0644))) return lm_fail(s, code, directory);
    MDB_txn *txn;
    if ((code = mdb_txn_begin(s->env, NULL, 0, &txn))) return lm_fail(s, code, "mdb_txn_begin");
    if ((code = mdb_dbi_open(txn, "dialogs", MDB_CREATE, &s->dialogs_db)) ||
        (code = mdb_dbi_open(txn, "messages", MDB_CREATE, &s->messages_db))) {
        mdb_txn_abort(txn);
        return lm_fail(s, code, "mdb_dbi_open");
    }
    if ((code = mdb_txn_commit(txn))) return lm_fail(s, code, "mdb_txn_commit");
    unsigned int flags = 0;
    mdb_env_get_flags(s->env, &flags);
    snprintf(s->settings, sizeof s->settings, "flags=%s mapsize=%zu lmdb=%s", (flags & MDB_NOSYNC) ? "NOSYNC" : "none",
             (size_t)4 << 30, mdb_version(NULL, NULL, NULL));
    return 0;
}

static int lm_write(cref_store *s, const cref_dialog *dialogs, size_t count, int upsert) {
    (void)upsert;  // a put replaces what is stored under its key
    MDB_txn *txn;
    int code = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (code) return lm_fail(s, code, "mdb_txn_begin");
    unsigned char key[16];
    size_t room = 4096;
    unsigned char *value = malloc(room);
    if (!value) {
        mdb_txn_abort(txn);
        return fail(s, CREF_ERROR_MEMORY, "write: out of memory");
    }
    for (size_t i = 0; i < count && !code; i++) {
        const cref_dialog *d = &dialogs[i];
        put_be64(key, (uint64_t)d->id);
        unsigned char pinned = d->is_pinned;
        MDB_val k = {8, key}, v = {1, &pinned};
        if ((code = mdb_put(txn, s->dialogs_db, &k, &v, 0))) { lm_fail(s, code, "mdb_put dialog"); break; }
        for (size_t j = 0; j < d->count; j++) {
            const cref_message *m = &d->messages[j];
            size_t size = FIXED_BYTES + (size_t)m->text_length;
            if (size > room) {
                unsigned char *grown = realloc(value, size);
                if (!grown) { code = fail(s, CREF_ERROR_MEMORY, "write: out of memory"); break; }
                value = grown;
                room = size;
            }
            put_be64(key + 8, (uint64_t)m->id);
            memcpy(value + 0, &m->date, 8);
            memcpy(value + 8, &m->sender_id, 8);
            memcpy(value + 16, &m->receiver_id, 8);
            memcpy(value + 24, &m->type, 4);
            value[28] = m->is_incoming;
            value[29] = m->is_read;
            if (m->text_length) memcpy(value + FIXED_BYTES, m->text, (size_t)m->text_length);
            MDB_val mk = {16, key}, mv = {size, value};
            if ((code = mdb_put(txn, s->messages_db, &mk, &mv, 0))) { lm_fail(s, code, "mdb_put message"); break; }
        }
    }
    free(value);
    if (code) {
        mdb_txn_abort(txn);
        return code;
    }
    // mdb_txn_commit frees the transaction whether it succeeds or not.
    if ((code = mdb_txn_commit(txn))) return lm_fail(s, code, "mdb_txn_commit");
    return 0;
}

/// Decodes a message entry into `m`; fails on an entry too short for its fields.
static int lm_message(cref_store *s, const MDB_val *k, const MDB_val *v, cref_message *m) {
    if (k->mv_size != 16 || v->mv_size < FIXED_BYTES) {
        memset(m, 0, sizeof *m);
        return fail(s, CREF_ERROR_DATA, "lmdb: a message entry of %zu + %zu bytes", k->mv_size, v->mv_size);
    }
    const unsigned char *key = k->mv_data, *value = v->mv_data;
    m->dialog_id = (int64_t)get_be64(key);
    m->id = (int64_t)get_be64(key + 8);
    memcpy(&m->date, value + 0, 8);
    memcpy(&m->sender_id, value + 8, 8);
    memcpy(&m->receiver_id, value + 16, 8);
    memcpy(&m->type, value + 24, 4);
    m->is_incoming = value[28] != 0;
    m->is_read = value[29] != 0;
    m->text_length = (int32_t)(v->mv_size - FIXED_BYTES);
    m->text = cref_copy_text((const char *)value + FIXED_BYTES, (size_t)m->text_length);
    return m->text ? 0 : fail(s, CREF_ERROR_MEMORY, "out of memory");
}

static int lm_read_all(cref_store *s, cref_dialogs *out) {
    MDB_txn *txn;
    MDB_cursor *cursor;
    MDB_val k, v;
    int code = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    if (code) return lm_fail(s, code, "mdb_txn_begin");
    if ((code = mdb_cursor_open(txn, s->dialogs_db, &cursor))) {
        mdb_txn_abort(txn);
        return lm_fail(s, code, "mdb_cursor_open");
    }
    for (code = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); code == 0; code = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 8 || v.mv_size != 1) {
            code = fail(s, CREF_ERROR_DATA, "lmdb: read-all: a dialog entry of the wrong size");
            break;
        }
        cref_dialog *dialog = push_dialog(out);
        if (!dialog) { code = fail(s, CREF_ERROR_MEMORY, "read-all: out of memory"); break; }
        dialog->id = (int64_t)get_be64(k.mv_data);
        dialog->is_pinned = *(const unsigned char *)v.mv_data != 0;
    }
    mdb_cursor_close(cursor);
    if (code != MDB_NOTFOUND) {
        mdb_txn_abort(txn);
        return own(code) ? code : lm_fail(s, code, "mdb_cursor_get dialogs");
    }
    // Both databases are ordered by dialog id: merge.
    if ((code = mdb_cursor_open(txn, s->messages_db, &cursor))) {
        mdb_txn_abort(txn);
        return lm_fail(s, code, "mdb_cursor_open");
    }
    size_t index = 0;
    for (code = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); code == 0; code = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 16) {
            code = fail(s, CREF_ERROR_DATA, "lmdb: read-all: a message key of %zu bytes", k.mv_size);
            break;
        }
        int64_t id = (int64_t)get_be64(k.mv_data);
        while (index < out->count && out->items[index].id < id) index++;
        if (index == out->count || out->items[index].id != id) {
            code = fail(s, CREF_ERROR_DATA, "lmdb: read-all: a message of dialog %lld, which does not exist",
                        (long long)id);
            break;
        }
        cref_dialog *dialog = &out->items[index];
        cref_message *message = push_message(&dialog->messages, &dialog->count, &dialog->capacity);
        if (!message) { code = fail(s, CREF_ERROR_MEMORY, "read-all: out of memory"); break; }
        if ((code = lm_message(s, &k, &v, message))) break;
    }
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    if (code != MDB_NOTFOUND) return own(code) ? code : lm_fail(s, code, "mdb_cursor_get messages");
    return 0;
}

/// Scans dialog `id`'s range of messages, every one or the unread only
/// (skipped before they are decoded), appending them.
static int lm_scan(cref_store *s, MDB_cursor *cursor, int64_t id, int unread_only, cref_message **items,
                   size_t *count, size_t *capacity) {
    unsigned char start[16];
    put_be64(start, (uint64_t)id);
    put_be64(start + 8, 0);
    MDB_val k = {16, start}, v;
    int code;
    for (code = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE); code == 0;
         code = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
        if (k.mv_size < 8 || get_be64(k.mv_data) != (uint64_t)id) break;
        if (v.mv_size < FIXED_BYTES)
            return fail(s, CREF_ERROR_DATA, "lmdb: a message entry of %zu + %zu bytes", k.mv_size, v.mv_size);
        if (unread_only && ((const unsigned char *)v.mv_data)[29]) continue;
        cref_message *message = push_message(items, count, capacity);
        if (!message) return fail(s, CREF_ERROR_MEMORY, "out of memory");
        if ((code = lm_message(s, &k, &v, message))) {
            (*count)--;
            return code;
        }
    }
    return code == 0 || code == MDB_NOTFOUND ? 0 : lm_fail(s, code, "mdb_cursor_get");
}

static int lm_read_dialog(cref_store *s, int64_t id, cref_dialog *out, int *found) {
    memset(out, 0, sizeof *out);
    *found = 0;
    MDB_txn *txn;
    MDB_cursor *cursor;
    int code = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    if (code) return lm_fail(s, code, "mdb_txn_begin");
    unsigned char key[8];
    put_be64(key, (uint64_t)id);
    MDB_val k = {8, key}, v;
    code = mdb_get(txn, s->dialogs_db, &k, &v);
    if (code == MDB_NOTFOUND) {
        mdb_txn_abort(txn);
        return 0;
    }
    if (code || v.mv_size != 1) {
        mdb_txn_abort(txn);
        return code ? lm_fail(s, code, "mdb_get dialog") : fail(s, CREF_ERROR_DATA, "lmdb: a dialog entry of the wrong size");
    }
    out->id = id;
    out->is_pinned = *(const unsigned char *)v.mv_data != 0;
    *found = 1;
    if ((code = mdb_cursor_open(txn, s->messages_db, &cursor))) {
        mdb_txn_abort(txn);
        return lm_fail(s, code, "mdb_cursor_open");
    }
    code = lm_scan(s, cursor, id, 0, &out->messages, &out->count, &out->capacity);
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    return code;
}

static int lm_read_unread(cref_store *s, int64_t id, cref_messages *out) {
    MDB_txn *txn;
    MDB_cursor *cursor;
    int code = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    if (code) return lm_fail(s, code, "mdb_txn_begin");
    if ((code = mdb_cursor_open(txn, s->messages_db, &cursor))) {
        mdb_txn_abort(txn);
        return lm_fail(s, code, "mdb_cursor_open");
    }
    code = lm_scan(s, cursor, id, 1, &out->items, &out->count, &out->capacity);
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    if (code) return code;
    // The range comes in id order: reversed, messages written in date order
    // are newest first already, and the insertion sort (date descending,
    // ties by id) only checks them.
    cref_message *items = out->items;
    size_t n = out->count;
    for (size_t i = 0; i < n / 2; i++) {
        cref_message swap = items[i];
        items[i] = items[n - 1 - i];
        items[n - 1 - i] = swap;
    }
    for (size_t i = 1; i < n; i++) {
        cref_message moving = items[i];
        size_t j = i;
        while (j > 0 && (items[j - 1].date < moving.date ||
                         (items[j - 1].date == moving.date && items[j - 1].id > moving.id))) {
            items[j] = items[j - 1];
            j--;
        }
        items[j] = moving;
    }
    return 0;
}

static int lm_erase(cref_store *s, const int64_t *ids, size_t count, int64_t *erased) {
    MDB_txn *txn;
    MDB_cursor *cursor;
    int code = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (code) return lm_fail(s, code, "mdb_txn_begin");
    if ((code = mdb_cursor_open(txn, s->messages_db, &cursor))) {
        mdb_txn_abort(txn);
        return lm_fail(s, code, "mdb_cursor_open");
    }
    *erased = 0;
    for (size_t i = 0; i < count && !code; i++) {
        unsigned char key[16];
        put_be64(key, (uint64_t)ids[i]);
        put_be64(key + 8, 0);
        MDB_val k = {8, key}, v;
        code = mdb_del(txn, s->dialogs_db, &k, NULL);
        if (code == 0) {
            *erased += 1;
        } else if (code != MDB_NOTFOUND) {
            lm_fail(s, code, "mdb_del dialog");
            break;
        }
        k.mv_size = 16;
        k.mv_data = key;
        for (code = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE); code == 0;
             code = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
            if (k.mv_size < 8 || get_be64(k.mv_data) != (uint64_t)ids[i]) break;
            // After a delete, MDB_NEXT yields the entry that followed it.
            if ((code = mdb_cursor_del(cursor, 0))) break;
        }
        if (code == MDB_NOTFOUND) code = 0;
        if (code) lm_fail(s, code, "mdb_cursor_del");
    }
    mdb_cursor_close(cursor);
    if (code) {
        mdb_txn_abort(txn);
        return code;
    }
    if ((code = mdb_txn_commit(txn))) return lm_fail(s, code, "mdb_txn_commit");
    return 0;
}

static int lm_erase_all(cref_store *s, int64_t *erased) {
    MDB_txn *txn;
    MDB_stat stat;
    int code = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (code) return lm_fail(s, code, "mdb_txn_begin");
    if ((code = mdb_stat(txn, s->dialogs_db, &stat)) || (code = mdb_drop(txn, s->messages_db, 0)) ||
        (code = mdb_drop(txn, s->dialogs_db, 0))) {
        mdb_txn_abort(txn);
        return lm_fail(s, code, "erase-all");
    }
    *erased = (int64_t)stat.ms_entries;
    if ((code = mdb_txn_commit(txn))) return lm_fail(s, code, "mdb_txn_commit");
    return 0;
}

static int lm_count(cref_store *s, cref_count_kind kind, int64_t *count) {
    MDB_txn *txn;
    int code = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    if (code) return lm_fail(s, code, "mdb_txn_begin");
    if (kind != CREF_COUNT_UNREAD) {
        MDB_stat stat;
        code = mdb_stat(txn, kind == CREF_COUNT_DIALOGS ? s->dialogs_db : s->messages_db, &stat);
        mdb_txn_abort(txn);
        if (code) return lm_fail(s, code, "mdb_stat");
        *count = (int64_t)stat.ms_entries;
        return 0;
    }
    MDB_cursor *cursor;
    if ((code = mdb_cursor_open(txn, s->messages_db, &cursor))) {
        mdb_txn_abort(txn);
        return lm_fail(s, code, "mdb_cursor_open");
    }
    MDB_val k, v;
    int64_t unread = 0;
    for (code = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); code == 0; code = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
        if (v.mv_size < FIXED_BYTES) {
            code = fail(s, CREF_ERROR_DATA, "lmdb: a message entry of %zu bytes", v.mv_size);
            break;
        }
        if (!((const unsigned char *)v.mv_data)[29]) unread++;
    }
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    if (code != MDB_NOTFOUND) return own(code) ? code : lm_fail(s, code, "mdb_cursor_get");
    *count = unread;
    return 0;
}

// MARK: - The public functions

int cref_open(cref_engine engine, const char *directory, int durable, cref_store **store, char *error,
              size_t error_size) {
    *store = NULL;
    cref_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(error, error_size, "out of memory");
        return CREF_ERROR_MEMORY;
    }
    s->engine = engine;
    int code = engine == CREF_SQLITE ? sq_open(s, directory, durable) : lm_open(s, directory, durable);
    if (code) {
        snprintf(error, error_size, "%s", s->error);
        cref_close(s);
        return code;
    }
    *store = s;
    return 0;
}

void cref_close(cref_store *store) {
    if (!store) return;
    if (store->engine == CREF_SQLITE) {
        sq_close(store);
    } else if (store->env) {
        mdb_env_close(store->env);
    }
    free(store);
}

int cref_persist(cref_store *s, const cref_dialog *dialogs, size_t count) {
    return s->engine == CREF_SQLITE ? sq_write(s, dialogs, count, 0) : lm_write(s, dialogs, count, 0);
}

int cref_update(cref_store *s, const cref_dialog *dialogs, size_t count) {
    return s->engine == CREF_SQLITE ? sq_write(s, dialogs, count, 1) : lm_write(s, dialogs, count, 1);
}

int cref_read_all(cref_store *s, cref_dialogs *out) {
    return s->engine == CREF_SQLITE ? sq_read_all(s, out) : lm_read_all(s, out);
}

int cref_read_dialog(cref_store *s, int64_t id, cref_dialog *out, int *found) {
    return s->engine == CREF_SQLITE ? sq_read_dialog(s, id, out, found) : lm_read_dialog(s, id, out, found);
}

int cref_read_unread(cref_store *s, int64_t id, cref_messages *out) {
    return s->engine == CREF_SQLITE ? sq_read_unread(s, id, out) : lm_read_unread(s, id, out);
}

int cref_erase(cref_store *s, const int64_t *ids, size_t count, int64_t *erased) {
    return s->engine == CREF_SQLITE ? sq_erase(s, ids, count, erased) : lm_erase(s, ids, count, erased);
}

int cref_erase_all(cref_store *s, int64_t *erased) {
    return s->engine == CREF_SQLITE ? sq_erase_all(s, erased) : lm_erase_all(s, erased);
}

int cref_count(cref_store *s, cref_count_kind kind, int64_t *count) {
    return s->engine == CREF_SQLITE ? sq_count(s, kind, count) : lm_count(s, kind, count);
}

int cref_hold_dialog(cref_store *s, int64_t id, cref_dialogs *held, int *found) {
    cref_dialog *slot = push_dialog(held);
    if (!slot) return fail(s, CREF_ERROR_MEMORY, "read-by-id: out of memory");
    int code = cref_read_dialog(s, id, slot, found);
    if (code || !*found) {
        cref_dialog_free(slot);
        held->count--;
    }
    return code;
}

int cref_hold_unread(cref_store *s, int64_t id, cref_message_lists *held) {
    if (held->count == held->capacity) {
        size_t grown = held->capacity ? held->capacity * 2 : 64;
        cref_messages *moved = realloc(held->items, grown * sizeof(cref_messages));
        if (!moved) return fail(s, CREF_ERROR_MEMORY, "query: out of memory");
        held->items = moved;
        held->capacity = grown;
    }
    cref_messages *slot = &held->items[held->count++];
    memset(slot, 0, sizeof *slot);
    int code = cref_read_unread(s, id, slot);
    if (code) {
        cref_messages_free(slot);
        held->count--;
    }
    return code;
}

void cref_message_lists_free(cref_message_lists *lists) {
    for (size_t i = 0; i < lists->count; i++) cref_messages_free(&lists->items[i]);
    free(lists->items);
    memset(lists, 0, sizeof *lists);
}

int cref_fold_all(cref_store *s, cref_digest *digest) {
    cref_dialogs all = {0};
    int code = cref_read_all(s, &all);
    if (!code)
        for (size_t i = 0; i < all.count; i++) cref_digest_dialog(digest, &all.items[i]);
    cref_dialogs_free(&all);
    return code;
}

int cref_fold_dialog(cref_store *s, int64_t id, cref_digest *digest, int *found) {
    cref_dialog dialog;
    int code = cref_read_dialog(s, id, &dialog, found);
    if (!code && *found) cref_digest_dialog(digest, &dialog);
    cref_dialog_free(&dialog);
    return code;
}

int cref_fold_unread(cref_store *s, int64_t id, cref_digest *digest) {
    cref_messages unread = {0};
    int code = cref_read_unread(s, id, &unread);
    if (!code)
        for (size_t i = 0; i < unread.count; i++) cref_digest_message(digest, &unread.items[i]);
    cref_messages_free(&unread);
    return code;
}
