import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The iterations of one paired group (a backend beside its reference) run in
/// worker processes started together and stepped in turn: each worker
/// generates its data, then stops before each operation, and before each
/// further in-place run of an operation (a read; `erase-all` and `update`,
/// whose store is put back untimed inside the step), until its parent lets it go. The parent lets one worker at a time take one step, the earliest step
/// first (in workload order, then by run), the group's order for a run 0,
/// the reverse for a run 1, and so on. A further in-place run is taken by
/// every worker of the group or by none: once one worker has moved on from
/// an operation (its own count or time budget reached, or it failed), the
/// others are told to stop there too, so that a backend and its reference
/// take the median of the same number of runs, cold first run included
/// alike, and pool the same number of runs into their latency percentiles.
/// So the two halves of a paired ratio
/// are measured one right after the other, milliseconds to seconds apart
/// rather than a whole iteration apart, while each backend keeps a process,
/// a heap and memory figures of its own; no two steps ever overlap, so no
/// worker times its work while another works.
///
/// The protocol, on the worker's standard input and output: the worker
/// writes `step OPERATION RUN` and waits for a line `go`, or `stop` (only for
/// a RUN above 0: no further run of that operation); after its last step
/// it writes its ``IterationResult`` as one line of JSON and exits.
public enum SteppedWorkers {
    /// One worker as the scheduler sees it.
    protocol Channel: AnyObject {
        /// The worker's next line (a step it waits at, or its result), or
        /// `nil` when its output ended.
        func nextLine() -> String?
        /// Lets the worker take its step.
        /// - Throws: when the worker cannot be told (it has gone).
        func go() throws
        /// Tells the worker waiting before a further in-place run not to
        /// take it (it goes on to its next operation).
        /// - Throws: when the worker cannot be told (it has gone).
        func stop() throws
    }

    /// Where a worker stands: waiting at a step, or finished with its last line.
    enum State: Equatable {
        case step(BenchOperation, Int)
        case finished(String?)

        init(line: String?) {
            guard let line else {
                self = .finished(nil)
                return
            }
            let parts = line.split(separator: " ")
            if parts.count == 3, parts[0] == "step", let operation = BenchOperation(rawValue: String(parts[1])),
                let run = Int(parts[2]), run >= 0
            {
                self = .step(operation, run)
            } else {
                self = .finished(line)
            }
        }
    }

    /// Steps `channels` (in the group's order) until every worker has
    /// finished; returns each one's last line (its result), `nil` when its
    /// output ended without one. A further run (RUN above 0) goes ahead only
    /// when every worker of the group waits at that same step; otherwise the
    /// ones that wait there are told to stop.
    static func schedule(_ channels: [any Channel]) -> [String?] {
        var states = channels.map { State(line: $0.nextLine()) }
        func key(_ state: State) -> (Int, Int)? {
            guard case .step(let operation, let run) = state else { return nil }
            return (BenchOperation.allCases.firstIndex(of: operation) ?? 0, run)
        }
        while let earliest = states.compactMap(key).min(by: { $0 < $1 }) {
            var turn = states.indices.filter { key(states[$0]).map { $0 == earliest } ?? false }
            if earliest.1 % 2 == 1 { turn.reverse() }
            // The steps are taken earliest first, so a worker that is not at
            // this step has gone past it: it has taken all the runs it will.
            let together = earliest.1 == 0 || turn.count == states.count
            for index in turn {
                do {
                    if together { try channels[index].go() } else { try channels[index].stop() }
                    states[index] = State(line: channels[index].nextLine())
                } catch {
                    states[index] = .finished(nil)
                }
            }
        }
        return states.map { state in
            if case .finished(let line) = state { return line }
            return nil
        }
    }

    /// Runs `jobs` (one paired group, in the round's order) in stepped
    /// workers: `executable` started with `arguments`, the job's JSON and
    /// `--stepped`, in `environment` (`nil`: this process's). Returns their
    /// results in the order of `jobs`.
    /// - Throws: when a worker cannot be started.
    static func run(
        _ jobs: [IterationJob], executable: URL, arguments: [String], environment: [String: String]? = nil
    ) throws -> [IterationResult] {
        // A worker that dies leaves a closed pipe: writing to it must fail
        // with EPIPE, not end this process.
        signal(SIGPIPE, SIG_IGN)
        let encoder = JSONEncoder()
        var workers: [ProcessChannel] = []
        defer {
            for worker in workers { worker.close() }
        }
        for job in jobs {
            let process = Process()
            process.executableURL = executable
            process.arguments = arguments + [String(decoding: try encoder.encode(job), as: UTF8.self), "--stepped"]
            if let environment { process.environment = environment }
            let output = Pipe()
            let input = Pipe()
            process.standardOutput = output
            process.standardInput = input
            // Standard error is inherited: the worker shows its progress and errors there.
            try process.run()
            workers.append(ProcessChannel(process: process, input: input, output: output))
        }
        let lines = schedule(workers)
        var results: [IterationResult] = []
        for (index, job) in jobs.enumerated() {
            let worker = workers[index]
            worker.close()
            worker.process.waitUntilExit()
            guard worker.process.terminationReason == .exit, worker.process.terminationStatus == 0,
                let line = lines[index]
            else {
                let how = worker.process.terminationReason == .exit ? "exited with status" : "was killed by signal"
                results.append(IterationResult(job: job, error: "the worker process \(how) \(worker.process.terminationStatus)"))
                continue
            }
            do {
                results.append(try JSONDecoder().decode(IterationResult.self, from: Data(line.utf8)))
            } catch {
                results.append(IterationResult(job: job, error: "the worker's result could not be read: \(error)"))
            }
        }
        return results
    }

    /// The worker's side: says which step it is at, on standard output, and
    /// waits for `go` (true) or, before a further run, `stop` (false) on
    /// standard input.
    /// - Throws: ``ConfigurationError`` when the parent closed standard input
    ///   or said something else.
    @Sendable static func waitForTurn(_ operation: BenchOperation, _ run: Int) throws -> Bool {
        FileHandle.standardOutput.write(Data("step \(operation.rawValue) \(run)\n".utf8))
        guard let line = readLine() else {
            throw ConfigurationError("the parent stopped stepping this worker before \(operation.rawValue)")
        }
        if line == "go" { return true }
        if line == "stop", run > 0 { return false }
        throw ConfigurationError("the parent said '\(line)' instead of go before \(operation.rawValue) run \(run)")
    }

    /// A worker process behind two pipes.
    final class ProcessChannel: Channel {
        let process: Process
        let input: Pipe
        let output: Pipe
        private var buffer = Data()
        private var closed = false

        init(process: Process, input: Pipe, output: Pipe) {
            self.process = process
            self.input = input
            self.output = output
        }

        func nextLine() -> String? {
            while true {
                if let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    return line
                }
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty {
                    guard !buffer.isEmpty else { return nil }
                    defer { buffer.removeAll() }
                    return String(decoding: buffer, as: UTF8.self)
                }
                buffer.append(chunk)
            }
        }

        func go() throws {
            try input.fileHandleForWriting.write(contentsOf: Data("go\n".utf8))
        }

        func stop() throws {
            try input.fileHandleForWriting.write(contentsOf: Data("stop\n".utf8))
        }

        /// Closes the worker's standard input (it ends at its next step, if any).
        func close() {
            guard !closed else { return }
            closed = true
            do {
                try input.fileHandleForWriting.close()
            } catch {
                FileHandle.standardError.write(Data("storage-bench: could not close a worker's input: \(error)\n".utf8))
            }
        }
    }
}
