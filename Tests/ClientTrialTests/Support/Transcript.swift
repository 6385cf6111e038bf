import DAOCore
import Testing

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

/// Records an issue for each line in which a backend's transcript differs
/// from the first one's, and for each transcript of another length; returns
/// the first transcript (for the checks of what it must say).
@discardableResult
func expectSameTranscripts(
    _ transcripts: [(backend: String, lines: [String])], sourceLocation: SourceLocation = #_sourceLocation
) -> [String] {
    guard let (firstName, first) = transcripts.first else { return [] }
    for (name, lines) in transcripts.dropFirst() {
        #expect(lines.count == first.count, "\(name) answered \(lines.count) steps, \(firstName) \(first.count)",
                sourceLocation: sourceLocation)
        for (index, line) in lines.enumerated() where index >= first.count || line != first[index] {
            Issue.record(
                "line \(index): \(name) says \"\(line)\", \(firstName) says \"\(index < first.count ? first[index] : "-")\"",
                sourceLocation: sourceLocation)
        }
    }
    return first
}
