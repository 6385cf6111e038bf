import DAOCore
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import StorageBenchKit

@Suite struct ExecutorTests {
    static func job() throws -> IterationJob {
        IterationJob(
            backend: "memory", size: try BenchSize(dialogs: 4, messagesPerDialog: 2), seed: 42, durability: .none,
            operations: BenchOperation.workload)
    }

    @Test func theWorkerRunsAJobAndReportsItsPeakMemory() throws {
        let job = try Self.job()
        let json = try Worker.run(
            jobJSON: String(decoding: try JSONEncoder().encode(job), as: UTF8.self), registry: TestBackends.registry)
        let result = try JSONDecoder().decode(IterationResult.self, from: Data(json.utf8))
        #expect(result.job == job)
        #expect(result.error == nil)
        #expect(result.measurements.count == 8)
        #expect((result.peakRSSBytes ?? 0) > 0)
    }

    @Test func theWorkerRefusesAMalformedJobOrAnUnknownBackend() throws {
        #expect(throws: ConfigurationError.self) { try Worker.run(jobJSON: "{", registry: TestBackends.registry) }
        var job = try Self.job()
        job.backend = "nope"
        let json = String(decoding: try JSONEncoder().encode(job), as: UTF8.self)
        #expect(throws: ConfigurationError.self) { try Worker.run(jobJSON: json, registry: TestBackends.registry) }
    }

    @Test func aSubprocessResultIsReadFromStandardOutput() throws {
        try withTemporaryDirectory { directory in
            let job = try Self.job()
            let expected = IterationResult(
                job: job, measurements: [OperationMeasurement(operation: .persist, seconds: 0.5, units: 8)],
                bytesOnDisk: 10, peakRSSBytes: 20)
            let file = directory.appendingPathComponent("result.json")
            try JSONEncoder().encode(expected).write(to: file)
            // `sh -c 'cat FILE' sh JOB`: the job's JSON arrives as $1 and is ignored.
            let executor = SubprocessExecutor(
                executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", "cat '\(file.path)'", "sh"])
            #expect(try executor.run(job) == expected)
        }
    }

    @Test func aFailingOrGarbledWorkerGivesAnErrorResult() throws {
        let job = try Self.job()
        let exits = SubprocessExecutor(executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", "exit 3", "sh"])
        let failed = try exits.run(job)
        #expect(failed.error == "the worker process exited with status 3")
        #expect(failed.measurements.isEmpty)
        let garbles = SubprocessExecutor(
            executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", "echo not json", "sh"])
        #expect(try garbles.run(job).error?.hasPrefix("the worker's result could not be read") == true)
    }

    /// A timed worker hashes with Swift's fixed seed when asked: the scripted
    /// worker reports the variable it was started with as its error.
    @Test func timedWorkersGetTheFixedHashSeedWhenAsked() throws {
        let job = try Self.job()
        let script = #"printf '{"job":%s,"measurements":[],"error":"%s"}' "$1" "${SWIFT_DETERMINISTIC_HASHING:-unset}""#
        func seen(fixed: Bool, stepped: Bool = false) throws -> [String?] {
            let executor = SubprocessExecutor(
                executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", script, "sh"], stepsGroups: stepped,
                fixedHashSeed: fixed)
            return try executor.run(group: [job, job]).map(\.error)
        }
        #expect(try seen(fixed: true) == ["1", "1"])
        #expect(try seen(fixed: true, stepped: true) == ["1", "1"])
        let inherited = ProcessInfo.processInfo.environment["SWIFT_DETERMINISTIC_HASHING"] ?? "unset"
        #expect(try seen(fixed: false) == [inherited, inherited])
    }

    /// A worker under callgrind starts with the same environment and working
    /// directory whoever starts it: the allocator's state when the workload
    /// begins, and with it the instructions counted, follow both.
    @Test func callgrindWorkersGetAFixedEnvironment() {
        let short = Callgrind.environment(from: ["PATH": "/bin", "PWD": "/a", "TMPDIR": "/t"])
        let long = Callgrind.environment(from: [
            "PATH": "/usr/local/bin:/usr/bin:/bin", "PWD": "/a/much/longer/path", "TMPDIR": "/t", "MAKELEVEL": "1",
        ])
        #expect(short == ["SWIFT_DETERMINISTIC_HASHING": "1", "TMPDIR": "/t"])
        #expect(long == short)
        #expect(Callgrind.environment(from: ["HOME": "/root"]) == ["SWIFT_DETERMINISTIC_HASHING": "1"])
        // The server's URL passes, so that the server backends are registered in the worker too.
        #expect(
            Callgrind.environment(from: ["HOME": "/root", "DAO_POSTGRES_URL": "postgres://u@h/d"])
                == ["SWIFT_DETERMINISTIC_HASHING": "1", "DAO_POSTGRES_URL": "postgres://u@h/d"])
    }

    #if os(Linux)
    /// What a worker under callgrind is started with, seen by a scripted
    /// `valgrind` that reports its own environment and working directory as
    /// the result's error.
    @Test func callgrindWorkersStartWithThatEnvironmentInTheRootDirectory() throws {
        try withTemporaryDirectory { directory in
            let valgrind = directory.appendingPathComponent("valgrind")
            let script = #"""
                #!/bin/sh
                for last; do :; done
                printf '{"job":%s,"measurements":[],"error":"%s|%s"}' "$last" "$(tr '\0' ' ' < /proc/$$/environ)" "$(pwd)"
                """#
            try writeExecutable(script, to: valgrind)
            var job = try Self.job()
            job.countsInstructions = true
            let executor = SubprocessExecutor(
                executable: URL(fileURLWithPath: "/bin/true"), callgrind: Callgrind(valgrind: valgrind))
            let seen = try #require(try executor.run(job).error).split(separator: "|").map(String.init)
            #expect(seen.count == 2)
            let variables = seen.first?.split(separator: " ").map(String.init).sorted()
            let expected = Callgrind.environment().map { "\($0.key)=\($0.value)" }.sorted()
            #expect(variables == expected)
            #expect(seen.last == "/")
        }
    }
    #endif

    /// Two scripted workers (`sh`) stepped through real pipes: each logs the
    /// steps it is let take, in the order they happen, then prints its result.
    @Test func aGroupsWorkersRunInStepThroughTheirPipes() throws {
        try withTemporaryDirectory { directory in
            let log = directory.appendingPathComponent("log")
            var jobs: [IterationJob] = []
            for name in ["a", "b", "c"] {
                var job = try Self.job()
                job.backend = name
                jobs.append(job)
                let result = IterationResult(
                    job: job, measurements: [OperationMeasurement(operation: .persist, seconds: 0.5, units: 8)])
                try JSONEncoder().encode(result).write(to: directory.appendingPathComponent("result-\(name)"))
            }
            // $1 is the job's JSON, $2 --stepped. `c` dies after its first
            // step; a `stop` skips the step.
            let script = """
                case "$1" in *'"backend":"a"'*) n=a ;; *'"backend":"b"'*) n=b ;; *) n=c ;; esac
                [ "$2" = --stepped ] || exit 9
                for step in "persist 0" "read-all 0" "read-all 1"; do
                  echo "step $step"
                  read word; [ "$word" = stop ] && { echo "$n stops at $step" >> '\(log.path)'; continue; }
                  [ "$word" = go ] || exit 8
                  echo "$n $step" >> '\(log.path)'
                  [ $n = c ] && exit 3
                done
                cat '\(directory.path)/result-'$n
                echo
                """
            let executor = SubprocessExecutor(
                executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", script, "sh"], stepsGroups: true)
            let results = try executor.run(group: jobs)
            #expect(results.map(\.job.backend) == ["a", "b", "c"])
            #expect(results[0].error == nil && results[0].measurements.count == 1)
            #expect(results[1].error == nil && results[1].measurements.count == 1)
            #expect(results[2].error == "the worker process exited with status 3")
            let steps = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
            #expect(
                steps == [
                    "a persist 0", "b persist 0", "c persist 0",
                    "a read-all 0", "b read-all 0",
                    // `c` has gone: a further run is taken by all or none.
                    "b stops at read-all 1", "a stops at read-all 1",
                ])
            // Without stepping, the same group runs one worker after another.
            let sequential = SubprocessExecutor(
                executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", "exit 4", "sh"])
            #expect(try sequential.run(group: jobs).map(\.error) == Array(repeating: "the worker process exited with status 4", count: 3))
        }
    }
}
