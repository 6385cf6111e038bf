// The workload of WORKLOAD.md in plain C on libsqlite3 and liblmdb: the
// harness's C reference backends (`sqlite-c`, `lmdb-c`), what the DAO's reads
// are measured against by instructions.
//
// Each engine is used the plainest fast way: every statement prepared once
// and reused; one transaction per call; on LMDB, big-endian composite keys
// (dialog id, then message id), so that a dialog's messages are one cursor
// range; answers materialized into the structs below (each text copied into
// a buffer of its own), which the caller releases. The schema and the bytes
// stored are those of the raw Swift references (`sqlite-raw`, `lmdb-raw`).
//
// Every function that can fail returns 0 on success and an error code
// otherwise (the engine's, or CREF_ERROR_* below), with the reason in
// `cref_error_message`.
#ifndef CREFERENCE_H
#define CREFERENCE_H

#include <stddef.h>
#include <stdint.h>

/// A message, as the workload's `Message`.
typedef struct {
    int64_t id;
    int64_t dialog_id;
    /// Seconds since 1970.
    double date;
    /// UTF-8 bytes, NUL-terminated, owned by the struct's holder (`malloc`).
    char *text;
    /// The text's length in bytes, without the NUL.
    int32_t text_length;
    int32_t type;
    int64_t sender_id;
    int64_t receiver_id;
    uint8_t is_incoming;
    uint8_t is_read;
} cref_message;

/// A dialog with its messages, as the workload's `Dialog`.
typedef struct {
    int64_t id;
    uint8_t is_pinned;
    cref_message *messages;
    size_t count;
    size_t capacity;
} cref_dialog;

/// A growing array of dialogs (read-all's answer).
typedef struct {
    cref_dialog *items;
    size_t count;
    size_t capacity;
} cref_dialogs;

/// A growing array of messages (a query's answer).
typedef struct {
    cref_message *items;
    size_t count;
    size_t capacity;
} cref_messages;

/// A growing array of query answers (the answers a run of queries holds).
typedef struct {
    cref_messages *items;
    size_t count;
    size_t capacity;
} cref_message_lists;

/// The harness's read digest (StorageBenchKit's `ReadDigest`), folded the
/// same way over the structs: every dialog and message lent, field by field,
/// in order.
typedef struct {
    uint64_t value;
    int64_t dialogs;
    int64_t messages;
} cref_digest;

/// The engines.
typedef enum { CREF_SQLITE = 1, CREF_LMDB = 2 } cref_engine;

/// What `cref_count` counts.
typedef enum { CREF_COUNT_DIALOGS = 0, CREF_COUNT_MESSAGES = 1, CREF_COUNT_UNREAD = 2 } cref_count_kind;

/// Errors of this library's own (the engines' codes are returned as they are).
enum {
    /// Out of memory.
    CREF_ERROR_MEMORY = -1001,
    /// The store holds something the workload never writes (a message of a
    /// missing dialog, an entry of the wrong size).
    CREF_ERROR_DATA = -1002,
    /// A row or value the engine should have given was missing.
    CREF_ERROR_MISSING = -1003,
};

/// An open store (one SQLite connection, or one LMDB environment).
typedef struct cref_store cref_store;

/// Opens a new store in `directory` (which exists and is empty) on `engine`,
/// creating the schema: durable commits (`synchronous=FULL`; LMDB's default
/// flags) when `durable` is 1, none (`synchronous=OFF`; `MDB_NOSYNC`) when 0.
/// Returns 0 and sets `*store`, or an error code with the reason in `error`
/// (`error_size` bytes at most, NUL-terminated).
int cref_open(cref_engine engine, const char *directory, int durable, cref_store **store, char *error,
              size_t error_size);

/// Closes the store and releases it.
void cref_close(cref_store *store);

/// The reason of the last failed call on `store`.
const char *cref_error_message(const cref_store *store);

/// The settings in force, read back from the engine, as one line.
const char *cref_settings(const cref_store *store);

/// `persist`: inserts `count` dialogs with their messages, in one transaction.
int cref_persist(cref_store *store, const cref_dialog *dialogs, size_t count);

/// `update`: writes `count` dialogs with their messages again, replacing what
/// is stored under their ids, in one transaction.
int cref_update(cref_store *store, const cref_dialog *dialogs, size_t count);

/// `read-all`: every dialog with its messages, ordered by id, appended to
/// `out` (empty), in one read transaction.
int cref_read_all(cref_store *store, cref_dialogs *out);

/// `read-by-id`: the dialog `id` with its messages into `out` (zeroed first),
/// in one read transaction; `*found` says whether there was one.
int cref_read_dialog(cref_store *store, int64_t id, cref_dialog *out, int *found);

/// `query`: the unread messages of dialog `id`, newest first (ties by id),
/// appended to `out` (empty), in one read transaction.
int cref_read_unread(cref_store *store, int64_t id, cref_messages *out);

/// `read-by-id` with the answer appended to `held` when there is one: what
/// a run of lookups keeps until it is checked.
int cref_hold_dialog(cref_store *store, int64_t id, cref_dialogs *held, int *found);

/// `query` with the answer appended to `held`.
int cref_hold_unread(cref_store *store, int64_t id, cref_message_lists *held);

/// `erase-by-id`: erases the dialogs with `ids` and their messages, in one
/// transaction; `*erased` is the number of dialogs that were there.
int cref_erase(cref_store *store, const int64_t *ids, size_t count, int64_t *erased);

/// `erase-all`: erases every dialog and message, in one transaction;
/// `*erased` is the number of dialogs there were.
int cref_erase_all(cref_store *store, int64_t *erased);

/// The number of dialogs, messages, or unread messages stored (for the checks).
int cref_count(cref_store *store, cref_count_kind kind, int64_t *count);

/// Folds a dialog and its messages into `digest`.
void cref_digest_dialog(cref_digest *digest, const cref_dialog *dialog);

/// Folds a message into `digest`.
void cref_digest_message(cref_digest *digest, const cref_message *message);

/// The borrowing reads: each the plain read into structs, every record
/// folded into `digest` in order, then released, all inside the call.
int cref_fold_all(cref_store *store, cref_digest *digest);
/// See `cref_fold_all`; `*found` says whether the dialog was there.
int cref_fold_dialog(cref_store *store, int64_t id, cref_digest *digest, int *found);
/// See `cref_fold_all`.
int cref_fold_unread(cref_store *store, int64_t id, cref_digest *digest);

/// A copy of `length` bytes at `bytes` with a NUL after them (`malloc`), or NULL.
char *cref_copy_text(const char *bytes, size_t length);

/// Releases the texts and the message array of `dialog`, and zeroes it.
void cref_dialog_free(cref_dialog *dialog);

/// Releases every dialog of `dialogs` and the array, and zeroes it.
void cref_dialogs_free(cref_dialogs *dialogs);

/// Releases the texts of `messages` and the array, and zeroes it.
void cref_messages_free(cref_messages *messages);

/// Releases every answer of `lists` and the array, and zeroes it.
void cref_message_lists_free(cref_message_lists *lists);

#endif
