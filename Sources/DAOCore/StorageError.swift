/// The one error every storage throws: what failed, on which entity and file,
/// and what the engine said.
///
/// It prints as one sentence, for example:
///
/// ```text
/// persist 'messages' failed (constraint): FOREIGN KEY constraint failed
///   [SQLite 787] at /tmp/store.sqlite; INSERT INTO "messages" ...
/// ```
public struct StorageError: Error, Sendable, CustomStringConvertible {
    /// The class of failure, for code that reacts to errors.
    public enum Kind: String, Sendable, Hashable {
        /// Reading or writing a file or directory failed (the path says which).
        case io
        /// Stored bytes are not what the store wrote: a truncated, garbage or
        /// foreign file, a size or checksum that does not match, a stored
        /// value or document whose layout the store cannot read. Never a
        /// record type refusing a value (that is ``decoding``).
        case corrupt
        /// The stored schema, or a record's `Codable` keys, do not match the
        /// record's ``Entity`` declaration.
        case schemaMismatch
        /// A record could not be encoded.
        case encoding
        /// A stored record could not be decoded into its type: the type's own
        /// `init(from:)` or `init(fields:)` threw (whatever it threw, a
        /// `DecodingError` too, kept as ``StorageError/underlying``), or a
        /// stored value is not of the type the record reads.
        case decoding
        /// A constraint held by the store refused the write (unique key,
        /// foreign key to a missing parent).
        case constraint
        /// The call's arguments cannot be carried out (a negative limit, say).
        case invalidArgument
        /// The store was opened read-only, or the file cannot be written.
        case readOnly
        /// The store is locked by another connection or process.
        case busy
        /// The disk or the store's map is full.
        case full
        /// A translator refused a record or a plain object.
        case translation
        /// Any other failure reported by the engine (the engine code says which).
        case engine
        /// The store was closed (``Store/close()``): every call after it, through
        /// the store or any of its storages, fails with this kind.
        case closed
    }

    /// The storage operation that failed.
    public enum Operation: String, Sendable, Hashable {
        case open, persist, read, count, erase, translate, close
    }

    /// The class of failure.
    public var kind: Kind
    /// The operation that failed.
    public var operation: Operation
    /// The entity the operation was working on, when there is one.
    public var entity: String?
    /// The file or directory involved, when there is one.
    public var path: String?
    /// The engine's own result code (an SQLite extended result code, an LMDB or
    /// errno code), when there is one.
    public var engineCode: Int32?
    /// What went wrong, in words: the engine's message or the adapter's.
    public var message: String
    /// The statement or key involved (SQL text, an LMDB database name).
    public var context: String?
    /// The error that caused this one (a `DecodingError`, a POSIX error), if any.
    public var underlying: (any Error)?
    /// For a ``Kind/schemaMismatch`` between a store and a record type: every
    /// difference, the same on every backend (also named in ``message``).
    /// Empty for other errors.
    public var schemaChanges: [SchemaChange] = []

    /// Creates an error.
    public init(
        _ kind: Kind,
        _ operation: Operation,
        entity: String? = nil,
        path: String? = nil,
        engineCode: Int32? = nil,
        message: String,
        context: String? = nil,
        underlying: (any Error)? = nil
    ) {
        self.kind = kind
        self.operation = operation
        self.entity = entity
        self.path = path
        self.engineCode = engineCode
        self.message = message
        self.context = context
        self.underlying = underlying
    }

    public var description: String {
        var text = operation.rawValue
        if let entity { text += " '\(entity)'" }
        text += " failed (\(kind.rawValue)): \(message)"
        if let engineCode { text += " [code \(engineCode)]" }
        if let path { text += " at \(path)" }
        if let context { text += "; \(context)" }
        if let underlying { text += "; caused by: \(underlying)" }
        return text
    }

    /// The same error with `entity`, `path` and `operation` filled in where the
    /// thrower left them empty; used by layers that know more than the thrower.
    public func with(operation: Operation? = nil, entity: String? = nil, path: String? = nil) -> StorageError {
        var copy = self
        if let operation { copy.operation = operation }
        if copy.entity == nil { copy.entity = entity }
        if copy.path == nil { copy.path = path }
        return copy
    }
}
