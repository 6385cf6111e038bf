import DialogGraph

/// A subject that works on memory of its own rather than on plain objects:
/// the C references (`sqlite-c`, `lmdb-c`), which write from C structs and
/// read into them.
///
/// For such a subject the harness times the work alone, as a C program
/// times it: what the subject will be handed to write is converted before
/// the first timed region (``prepareInputs(_:)``); its plain reads hold their
/// answers in its own memory until the harness takes them as plain objects
/// after the timed region, and checks them as it checks any subject's
/// answers; its borrowing reads fold each record into the ``ReadDigest``
/// themselves, as a borrowing read's closure does, and the harness checks
/// the digest. The ``WorkloadSubject`` reads stay (the checks between
/// operations use them).
public protocol HoldingSubject: WorkloadSubject {
    /// Converts the graphs the run will write into the subject's memory,
    /// before the first timed region. A write handed an array converted
    /// here (the same array, not an equal one) writes its converted copy;
    /// another is converted in the call.
    /// - Throws: when there is no memory for them.
    func prepareInputs(_ inputs: [[Dialog]]) throws

    /// `read-all`, its answer held.
    /// - Throws: when the engine fails.
    func holdAll() throws

    /// `read-by-id` of dialog `id`, its answer (when there is one) held
    /// after those held before; returns whether there was one.
    /// - Throws: when the engine fails.
    func holdDialog(id: Int64) throws -> Bool

    /// `query` of dialog `id`, its answer held after those held before.
    /// - Throws: when the engine fails.
    func holdUnreadMessages(dialogId id: Int64) throws

    /// The dialogs held (read-all's, or each lookup's in order) as plain
    /// objects; the subject holds them no longer.
    /// - Throws: when there is no memory for them.
    func takeHeldDialogs() throws -> [Dialog]

    /// Each query's answer held, in order, as plain objects; the subject
    /// holds them no longer.
    func takeHeldMessages() -> [[Message]]

    /// `read-all-borrowing`: every dialog with its messages folded into
    /// `digest`, in id order.
    /// - Throws: when the engine fails.
    func foldAll(into digest: inout ReadDigest) throws

    /// `read-by-id-borrowing`: dialog `id` folded into `digest`, if there is
    /// one; returns whether there was.
    /// - Throws: when the engine fails.
    func foldDialog(id: Int64, into digest: inout ReadDigest) throws -> Bool

    /// `query-borrowing`: the unread messages of dialog `id` folded into
    /// `digest`, newest first.
    /// - Throws: when the engine fails.
    func foldUnreadMessages(dialogId id: Int64, into digest: inout ReadDigest) throws
}
