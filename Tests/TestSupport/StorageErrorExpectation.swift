import DAOCore
import Testing

/// Runs `body`, expecting it to throw a ``StorageError``, and returns it
/// (recording an issue when it returns or throws something else).
@discardableResult
public func expectStorageError(
    _ kind: StorageError.Kind? = nil, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) -> StorageError? {
    do {
        try body()
        Issue.record("expected a StorageError\(kind.map { " (\($0))" } ?? ""), but the call returned. \(comment?.rawValue ?? "")",
                     sourceLocation: sourceLocation)
        return nil
    } catch let error as StorageError {
        if let kind, error.kind != kind {
            Issue.record("expected \(kind), got \(error)", sourceLocation: sourceLocation)
        }
        return error
    } catch {
        Issue.record("expected a StorageError, got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
