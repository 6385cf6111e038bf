#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

#include <sqlite3.h>

/// Turns SQLite's enforcement of foreign keys on (`on` = 1) or off (0) for
/// `db` (`sqlite3_db_config` is variadic, which Swift cannot call). Returns
/// whether enforcement is on afterwards, or -1 when SQLite refused.
static inline int csqlite_set_foreign_keys(sqlite3 *db, int on) {
    int state = -1;
    if (sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_FKEY, on, &state) != SQLITE_OK) return -1;
    return state;
}

#endif
