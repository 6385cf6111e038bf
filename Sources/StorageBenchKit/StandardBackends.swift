import DAOCore
import FileStorage
import Foundation
import LMDBStorage
import SQLiteStorage

extension BackendRegistry {
    /// The backends of this package, one line each, in report order.
    ///
    /// The whole-file stores rewrite their document on every call, so only the
    /// first 10 `persist-single` calls are timed for them (reports say so). The
    /// SQLite and LMDB adapters name their engine's raw reference backend
    /// (`sqlite-raw`, `lmdb-raw`, in the StorageBenchReference target), which the
    /// report divides their throughput by when the run has it.
    public static let standard = BackendRegistry([
        Backend("json", singleCallLimit: 10) { try FileStore(directory: $0, format: .json, durability: $1) },
        Backend("plist", singleCallLimit: 10) { try FileStore(directory: $0, format: .propertyList, durability: $1) },
        Backend("sqlite", reference: "sqlite-raw") { try SQLiteDatabase(path: $0.appendingPathComponent("store.sqlite"), durability: $1) },
        Backend("lmdb", reference: "lmdb-raw") { try LMDBEnvironment(directory: $0, durability: $1) },
    ])
}
