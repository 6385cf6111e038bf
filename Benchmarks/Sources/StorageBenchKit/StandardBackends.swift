import DAOCore
import FileStorage
import Foundation
import LMDBStorage
import SQLiteStorage

extension BackendRegistry {
    /// The backends of this package, one line each, in report order.
    ///
    /// Each adapter names its raw reference backend (`json-raw`, `plist-raw`,
    /// `sqlite-raw`, `lmdb-raw`, in the StorageBenchReference target), which the
    /// report divides its throughput by when the run has it. The file stores
    /// write a small delta per `persist-single` call, so every call is timed;
    /// `json-raw` and `plist-raw` rewrite both documents per call, so only
    /// their first 10 are.
    public static let standard = BackendRegistry([
        Backend("json", reference: "json-raw") { try FileStore(directory: $0, format: .json, durability: $1) },
        Backend("plist", reference: "plist-raw") { try FileStore(directory: $0, format: .propertyList, durability: $1) },
        Backend("sqlite", reference: "sqlite-raw") { try SQLiteDatabase(path: $0.appendingPathComponent("store.sqlite"), durability: $1) },
        Backend("lmdb", reference: "lmdb-raw") { try LMDBEnvironment(directory: $0, durability: $1) },
    ])
}
