import DialogGraph

/// A subject that wraps another and hands it every call it does not
/// implement itself: a wrapper that counts, times or changes some calls
/// writes only those.
///
/// ```swift
/// final class CountingReads: ForwardingSubject {
///     let inner: DAOSubject
///     var reads = 0
///     init(_ inner: DAOSubject) { self.inner = inner }
///     func read(dialogId id: Int64) throws -> Dialog? {
///         reads += 1
///         return try inner.read(dialogId: id)
///     }
/// }
/// ```
///
/// The borrowing reads are forwarded too, so a wrapped subject's own
/// borrowing path is the one measured.
public protocol ForwardingSubject: WorkloadSubject {
    /// The subject calls are handed to.
    associatedtype Inner: WorkloadSubject
    /// The subject calls are handed to.
    var inner: Inner { get }
}

extension ForwardingSubject {
    public var settingsDescription: String { inner.settingsDescription }
    public func persist(_ dialogs: [Dialog]) throws { try inner.persist(dialogs) }
    public func update(_ dialogs: [Dialog]) throws { try inner.update(dialogs) }
    public func persistSingle(_ dialog: Dialog) throws { try inner.persistSingle(dialog) }
    public func readAll() throws -> [Dialog] { try inner.readAll() }
    public func read(dialogId id: Int64) throws -> Dialog? { try inner.read(dialogId: id) }
    public func unreadMessages(dialogId id: Int64) throws -> [Message] { try inner.unreadMessages(dialogId: id) }
    public func prepareBorrowingReads() throws { try inner.prepareBorrowingReads() }
    public func forEachDialog(_ body: (borrowing Dialog) throws -> Void) throws { try inner.forEachDialog(body) }
    public func withDialog(id: Int64, _ body: (borrowing Dialog) throws -> Void) throws -> Bool {
        try inner.withDialog(id: id, body)
    }
    public func forEachUnreadMessage(dialogId id: Int64, _ body: (borrowing Message) throws -> Void) throws {
        try inner.forEachUnreadMessage(dialogId: id, body)
    }
    public func viewAll(into digest: inout ReadDigest) throws { try inner.viewAll(into: &digest) }
    public func viewDialog(id: Int64, into digest: inout ReadDigest) throws -> Bool {
        try inner.viewDialog(id: id, into: &digest)
    }
    public func viewUnreadMessages(dialogId id: Int64, into digest: inout ReadDigest) throws {
        try inner.viewUnreadMessages(dialogId: id, into: &digest)
    }
    public func erase(dialogIds ids: [Int64]) throws -> Int { try inner.erase(dialogIds: ids) }
    public func eraseAll() throws -> Int { try inner.eraseAll() }
    public func read(dialogIds ids: [Int64]) throws -> [Dialog] { try inner.read(dialogIds: ids) }
    public func dialogCount() throws -> Int { try inner.dialogCount() }
    public func messageCount() throws -> Int { try inner.messageCount() }
    public func unreadMessageCount() throws -> Int { try inner.unreadMessageCount() }
    public func bytesStoredElsewhere() throws -> Int64? { try inner.bytesStoredElsewhere() }
}
