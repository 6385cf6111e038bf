import Foundation

/// A thread of one load client's own, which its task prefers as its executor
/// (`TaskGroup.addTask(executorPreference:)`, SE-0417): the client task's
/// code runs there and resumes there after each `await`, as a server's task
/// does on its event loop. So the clients' turns do not depend on what else
/// holds Swift's cooperative pool (the test runner's parallel tests held it
/// for minutes), while the calls themselves take the library's path: a read
/// in place on this thread, a write on the store's writer thread.
///
/// `@unchecked Sendable`: `jobs` and `stopping` are read and written only with
/// `condition` locked.
final class ClientThread: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopping = false

    /// Starts the thread; it runs until ``stop()`` and its last job.
    init() {
        let thread = Thread { [self] in loop() }
        thread.stackSize = 1 << 20
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the thread end once its queue is empty.
    func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        var batch: [UnownedJob] = []
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            swap(&batch, &jobs)
            condition.unlock()
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
            batch.removeAll(keepingCapacity: true)
        }
    }
}
