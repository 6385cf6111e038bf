import DAOCore
import Foundation
import TestSupport
import Testing

@testable import StorageBenchKit

@Suite struct ExecutorTests {
    static func job() throws -> IterationJob {
        IterationJob(
            backend: "memory", size: try BenchSize(dialogs: 4, messagesPerDialog: 2), seed: 42, durability: .none,
            operations: BenchOperation.allCases)
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
}
