import DAOCore
import Foundation

/// One subject the harness can benchmark: a name and how to open a
/// ``WorkloadSubject`` in a directory with a durability.
///
/// Any adapter that conforms to ``Store`` (and so hands out ``Storage``s) can be
/// benchmarked through the ``DAO`` by registering one of these:
///
/// ```swift
/// Backend("json", singleCallLimit: 20) { directory, durability in
///     try FileStore(directory: directory, format: .json, durability: durability)
/// }
/// ```
///
/// A reference implementation that does not go through the DAO (an engine's C
/// API used directly, another library) registers its ``WorkloadSubject`` with
/// ``init(name:singleCallLimit:reference:subject:)``:
///
/// ```swift
/// Backend(name: "sqlite-raw", subject: { directory, durability in
///     try SQLiteRawSubject(directory: directory, durability: durability)
/// })
/// ```
public struct Backend: Sendable {
    /// The name used on the command line and in reports (`sqlite`, `json`, …).
    public let name: String
    /// What the backend is to a reader of a report: a choice a user can make,
    /// an engine used directly, or another library measured for comparison.
    public let role: BackendRole
    /// For a store that rewrites a whole file per call: how many of the
    /// `persist-single` calls are timed (the rest are persisted in one untimed
    /// call, so the store holds the same data afterwards), or `nil` to time all.
    public let singleCallLimit: Int?
    /// The backend this one is measured against in the `ratio_to_raw` column
    /// (for an adapter, the plain use of its engine, e.g. `sqlite-raw`), or `nil`.
    public let reference: String?
    /// Opens (creating if missing) the subject inside `directory`, which exists and is empty.
    public let open: @Sendable (_ directory: URL, _ durability: Durability) throws -> any WorkloadSubject

    /// Declares a backend that runs the workload through the ``DAO`` on a ``Store``.
    ///
    /// - Parameters:
    ///   - name: the backend's name: lowercase letters, digits and `-`.
    ///   - singleCallLimit: the number of `persist-single` calls to time, or `nil` for all.
    ///   - reference: the backend whose throughput the report divides this one's by, or `nil`.
    ///   - open: opens a store in a fresh, empty directory with a durability.
    public init(
        _ name: String,
        singleCallLimit: Int? = nil,
        reference: String? = nil,
        open: @escaping @Sendable (_ directory: URL, _ durability: Durability) throws -> any Store
    ) {
        self.init(
            name: name, singleCallLimit: singleCallLimit, reference: reference, role: .choice,
            subject: { directory, durability in try DAOSubject(store: open(directory, durability)) })
    }

    /// Declares a backend that runs the workload through its own ``WorkloadSubject``.
    ///
    /// - Parameters:
    ///   - name: the backend's name: lowercase letters, digits and `-`.
    ///   - singleCallLimit: the number of `persist-single` calls to time, or `nil` for all.
    ///   - reference: the backend whose throughput the report divides this one's by, or `nil`.
    ///   - role: what the backend is to a reader (default ``BackendRole/raw``: a
    ///     reference that uses an engine directly).
    ///   - subject: opens the subject in a fresh, empty directory with a durability.
    public init(
        name: String,
        singleCallLimit: Int? = nil,
        reference: String? = nil,
        role: BackendRole = .raw,
        subject: @escaping @Sendable (_ directory: URL, _ durability: Durability) throws -> any WorkloadSubject
    ) {
        self.name = name
        self.role = role
        self.singleCallLimit = singleCallLimit
        self.reference = reference
        self.open = subject
    }
}

/// What a backend is to a reader of a report. Summaries and the HTML report
/// rank only the choices; `compare` never lets a third-party library decide
/// its exit status.
public enum BackendRole: String, Sendable, Hashable, Codable, CaseIterable {
    /// A backend a user of this package can choose (an adapter through the DAO).
    case choice
    /// An engine's API used directly: the limit the choice on it is measured against.
    case raw
    /// Another library on the same engine, measured for comparison (GRDB).
    case thirdParty = "third-party"

    /// The role a report without a `role` column implies for `backend`:
    /// `known` first (a registry's roles), then `-raw` names as ``raw``,
    /// the rest as ``choice``.
    public static func inferred(for backend: String, known: [String: BackendRole] = [:]) -> BackendRole {
        if let role = known[backend] { return role }
        return backend.hasSuffix("-raw") ? .raw : .choice
    }
}

/// The backends a harness run may choose from, in their report order.
public struct BackendRegistry: Sendable {
    /// The registered backends, in the order reports and tables show them.
    public private(set) var backends: [Backend]

    /// A registry of `backends`.
    /// - Precondition: names are unique.
    public init(_ backends: [Backend]) {
        self.backends = []
        for backend in backends { register(backend) }
    }

    /// Adds `backend`, replacing a registered backend of the same name.
    public mutating func register(_ backend: Backend) {
        if let index = backends.firstIndex(where: { $0.name == backend.name }) {
            backends[index] = backend
        } else {
            backends.append(backend)
        }
    }

    /// The names of the registered backends, in order.
    public var names: [String] { backends.map(\.name) }

    /// Each registered backend's role, by name.
    public var roles: [String: BackendRole] {
        Dictionary(backends.map { ($0.name, $0.role) }, uniquingKeysWith: { first, _ in first })
    }

    /// The backend named `name`, or `nil`.
    public func backend(named name: String) -> Backend? {
        backends.first { $0.name == name }
    }

    /// The backends named in `list` (a comma-separated list of names, or `all`),
    /// in registry order.
    ///
    /// - Throws: ``ConfigurationError`` naming an unknown or missing backend.
    public func select(_ list: String) throws -> [Backend] {
        let names = try parseList(list, option: "--backends")
        if names == ["all"] { return backends }
        for name in names where backend(named: name) == nil {
            throw ConfigurationError(
                "unknown backend '\(name)' in --backends; known: \(self.names.joined(separator: ", ")) or all")
        }
        return backends.filter { names.contains($0.name) }
    }
}
