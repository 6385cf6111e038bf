/// When a committed write reaches the disk.
public enum Durability: String, Sendable, Hashable, CaseIterable, Codable {
    /// Every commit is on disk before the call returns: fsync (F_FULLFSYNC where
    /// it exists); SQLite `synchronous=FULL`; LMDB's default flags; files written
    /// to a temporary file, synced, renamed, and their directory synced.
    case full
    /// Nothing is synced: SQLite `synchronous=OFF`, LMDB `MDB_NOSYNC`, files not
    /// synced. A crash of the process loses nothing committed; a crash of the
    /// operating system or a power loss may lose recent commits and, as SQLite and
    /// LMDB document for these settings, may damage the store.
    case none
}
