/// Hears the results of an observed query the way a table view wants them:
/// once whole, then as batch updates by index.
///
/// ```swift
/// final class MessagesTable: ResultsDelegate {
///     var rows: [Message] = []
///     func initial(_ results: [Message]) { rows = results; reloadData() }
///     func update(_ results: [Message], deletions: [Int], insertions: [Int], modifications: [Int]) {
///         for index in deletions.reversed() { rows.remove(at: index) }
///         for index in insertions { rows.insert(results[index], at: index) }
///         for index in modifications { rows[index] = results[index] }
///         performBatchUpdates(deletions, insertions, modifications)
///     }
/// }
/// ```
@MainActor
public protocol ResultsDelegate<Element>: AnyObject {
    /// The plain object type of the results.
    associatedtype Element: Plain
    /// The first results.
    func initial(_ results: [Element])
    /// The results changed: `deletions` are indexes in the previous results,
    /// `insertions` and `modifications` indexes in `results`, all ascending.
    func update(_ results: [Element], deletions: [Int], insertions: [Int], modifications: [Int])
    /// Reading the results failed; no more calls follow.
    func failed(_ error: any Error)
}

extension ResultsDelegate {
    /// Ignores the error.
    public func failed(_ error: any Error) {}
}

/// Drives a ``ResultsDelegate`` from an ``Observation``, on the main actor:
/// the callback shape of the same observation, for code that prefers it.
///
/// ```swift
/// let controller = ResultsController(messages.observe(where: #Predicate { $0.dialogId == 7 }))
/// controller.start(delegate: table)
/// // …
/// controller.stop()
/// ```
@MainActor
public final class ResultsController<Element: Plain> {
    private let observation: Observation<Element>
    /// The task of the last start, kept after a stop so that ``finished()`` can wait for it.
    private var task: Task<Void, Never>?
    private var running = false

    /// Creates a controller for `observation`; nothing happens until ``start(delegate:)``.
    public init(_ observation: Observation<Element>) {
        self.observation = observation
    }

    /// Starts observing and calls `delegate` (held weakly) with the first
    /// results, then with each change. Stops a previous start.
    public func start<D: ResultsDelegate>(delegate: D) where D.Element == Element {
        stop()
        let observation = observation
        running = true
        task = Task { [weak delegate] in
            do {
                for try await snapshot in observation {
                    guard let delegate else { return }
                    if let changes = snapshot.changes {
                        delegate.update(
                            snapshot.results, deletions: changes.deletions, insertions: changes.insertions,
                            modifications: changes.modifications)
                    } else {
                        delegate.initial(snapshot.results)
                    }
                }
            } catch {
                delegate?.failed(error)
            }
        }
    }

    /// Stops observing; the delegate hears nothing more.
    public func stop() {
        task?.cancel()
        running = false
    }

    /// Whether the observation was started and not stopped.
    public var isRunning: Bool { running }

    /// Waits until the last observation started has ended (stopped, failed, or
    /// its store closed) and let go of the store.
    public func finished() async {
        await task?.value
    }
}
