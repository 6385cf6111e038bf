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

    /// Whether `record` meets the predicate.
    ///
    /// - Throws: ``StorageError`` when the predicate itself throws.
    @inlinable
    public func matches(_ record: Record) throws -> Bool {
        guard let predicate else { return true }
        do {
            return try predicate.evaluate(record)
        } catch {
            throw StorageError(
                .invalidArgument, .read, entity: Record.entity.name,
                message: "the predicate could not be evaluated", underlying: error)
        }
    }

    /// Answers the query in memory over `records`: filter, sort (descriptors, then
    /// primary key), limit. Adapters that evaluate predicates in memory call this;
    /// so does every adapter for the part of a predicate it cannot compile.
    ///
    /// - Throws: ``StorageError`` when the predicate throws or the limit is negative.
    public func apply(to records: some Sequence<Record>) throws -> [Record] {
        try validate()
        var matched: [Record] = []
        for record in records where try matches(record) {
            matched.append(record)
        }
        matched = Self.sorted(matched, by: sortedBy)
        if let limit, matched.count > limit {
            matched.removeSubrange(limit...)
        }
        return matched
    }

    /// `records` in the order of `descriptors`, ties broken by primary key.
    public static func sorted(_ records: [Record], by descriptors: [SortDescriptor<Record>]) -> [Record] {
        let keyPath = Record.entity.primaryKeyPath
        return records.sorted { lhs, rhs in
            for descriptor in descriptors {
                switch descriptor.compare(lhs, rhs) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return lhs[keyPath: keyPath] < rhs[keyPath: keyPath]
        }
    }
}
