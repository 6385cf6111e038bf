import Foundation

/// What to read: the records where a predicate holds, in an order, up to a limit.
///
/// Results come sorted by the sort descriptors and then by primary key, so every
/// adapter returns the same records in the same order. With no predicate every
/// record matches; with no limit all matches are returned.
public struct Query<Record: DAOCore.Record>: Sendable {
    /// The condition a record must meet, or `nil` for every record.
    public var predicate: Predicate<Record>?
    /// The order of the results, before the primary-key tie-break.
    public var sortedBy: [SortDescriptor<Record>]
    /// The maximum number of results, or `nil` for all of them.
    public var limit: Int?

    /// Creates a query.
    public init(
        where predicate: Predicate<Record>? = nil,
        sortedBy: [SortDescriptor<Record>] = [],
        limit: Int? = nil
    ) {
        self.predicate = predicate
        self.sortedBy = sortedBy
        self.limit = limit
    }

    /// Checks the limit.
    ///
    /// - Throws: ``StorageError`` of kind ``StorageError/Kind/invalidArgument`` for a negative limit.
    public func validate() throws {
        if let limit, limit < 0 {
            throw StorageError(
                .invalidArgument, .read, entity: Record.entity.name, message: "the limit is \(limit); it must be 0 or more")
        }
    }

    /// Whether `record` meets the predicate, with the library's semantics (see
    /// ``QueryPlan``; to test many records, plan once and call
    /// ``QueryPlan/matches(_:)``).
    ///
    /// - Throws: ``StorageError`` when the predicate itself throws.
    public func matches(_ record: Record) throws -> Bool {
        try QueryPlan(Query(where: predicate)).matches(record)
    }

    /// Answers the query in memory over `records`: filter, sort (descriptors, then
    /// primary key), limit, with the library's semantics (``QueryPlan/finish(_:filtered:)``).
    ///
    /// - Throws: ``StorageError`` when the predicate throws or the limit is negative.
    public func apply(to records: some Sequence<Record>) throws -> [Record] {
        try QueryPlan(self).finish(Array(records), filtered: false)
    }

    /// `records` in the order of `descriptors`, ties broken by primary key
    /// (``SortPlan``).
    public static func sorted(_ records: [Record], by descriptors: [SortDescriptor<Record>]) -> [Record] {
        SortPlan(descriptors).sorted(records)
    }
}
