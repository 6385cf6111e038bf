import DAOCore
import Foundation
import StorageBenchKit

extension BackendRegistry {
    /// The reference backends: GRDB used as its documentation shows (`grdb`,
    /// measured against `sqlite-raw` like the DAO's `sqlite`), and each engine's
    /// C API used directly (`sqlite-raw`, `lmdb-raw`), the limit a Swift program
    /// can reach on it; the same in plain C (`sqlite-c`, `lmdb-c`,
    /// ``CReferenceSubject``), what the DAO's reads are measured against by
    /// instructions; Foundation's JSON and property-list encoders writing the
    /// file stores' documents directly (`json-raw`, `plist-raw`). The DAO backends of ``standard`` name the raw ones as
    /// their ``Backend/reference``.
    public static let reference = BackendRegistry([
        Backend(name: "grdb", reference: "sqlite-raw", role: .thirdParty, subject: { try GRDBSubject(directory: $0, durability: $1) }),
        Backend(name: "sqlite-raw", subject: { try SQLiteRawSubject(directory: $0, durability: $1) }),
        Backend(name: "lmdb-raw", subject: { try LMDBRawSubject(directory: $0, durability: $1) }),
        Backend(name: "sqlite-c", subject: { try CReferenceSubject(engine: .sqlite, directory: $0, durability: $1) }),
        Backend(name: "lmdb-c", subject: { try CReferenceSubject(engine: .lmdb, directory: $0, durability: $1) }),
        Backend(name: "json-raw", singleCallLimit: 10, subject: {
            FoundationDocumentSubject(directory: $0, format: .json, durability: $1)
        }),
        Backend(name: "plist-raw", singleCallLimit: 10, subject: {
            FoundationDocumentSubject(directory: $0, format: .propertyList, durability: $1)
        }),
    ])

    /// The backends `storage-bench` runs: those of ``standard``, each followed by
    /// the reference backends that measure it (its raw engine, and the other
    /// backends measured against that engine), so that a report shows them side
    /// by side.
    public static let withReferences = standard.followed(by: reference)

    /// The backends on a PostgreSQL server: `postgres`, the library's adapter
    /// through the DAO (``ThrowawaySchemaStore``), and its reference
    /// `postgres-raw` (postgres-nio with hand-written SQL,
    /// ``PostgresRawSubject``), each iteration in a schema of its own on
    /// `server` (a malformed URL's error, which each then fails with at open).
    public static func postgres(_ server: Result<PostgresServer, any Error>) -> BackendRegistry {
        BackendRegistry([
            Backend("postgres", reference: "postgres-raw") { _, durability in
                try ThrowawaySchemaStore(server: server.get(), durability: durability)
            },
            Backend(name: "postgres-raw", subject: { _, durability in
                try PostgresRawSubject(server: server.get(), durability: durability)
            })
        ])
    }

    /// The backends `storage-bench run` offers: ``withReferences``, then the
    /// server backends (``postgres(_:)``) when `DAO_POSTGRES_URL` names a
    /// server (`--postgres-url` sets it for the run and its workers).
    public static var withServers: BackendRegistry {
        let server = Result { try PostgresServer.fromEnvironment() }
        switch server {
        case .success(nil): return withReferences
        case .success(let found?): return BackendRegistry(withReferences.backends + postgres(.success(found)).backends)
        case .failure(let error): return BackendRegistry(withReferences.backends + postgres(.failure(error)).backends)
        }
    }

    /// This registry with each backend of `references` placed right after the
    /// first backend that it is the reference of, or that shares its reference;
    /// the rest at the end.
    public func followed(by references: BackendRegistry) -> BackendRegistry {
        var ordered: [Backend] = []
        var placed: Set<String> = []
        for backend in backends {
            ordered.append(backend)
            guard let engine = backend.reference else { continue }
            for candidate in references.backends where !placed.contains(candidate.name) {
                if candidate.name == engine || candidate.reference == engine {
                    ordered.append(candidate)
                    placed.insert(candidate.name)
                }
            }
        }
        ordered += references.backends.filter { !placed.contains($0.name) }
        return BackendRegistry(ordered)
    }
}
