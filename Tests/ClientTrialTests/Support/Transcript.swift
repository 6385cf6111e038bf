import DAOCore

/// Appends `step: answer` to a transcript, or `step: kind` when `body`
/// throws a `StorageError` (any other error is marked untyped), so that the
/// transcripts of the backends can be compared line by line.
func noteStep(_ step: String, in lines: inout [String], _ body: () throws -> String) {
    do {
        lines.append("\(step): \(try body())")
    } catch let error as StorageError {
        lines.append("\(step): \(error.kind)")
    } catch {
        lines.append("\(step): untyped \(type(of: error))")
    }
}
