import DAOCore
import Foundation
import PostgresStorage
import Synchronization
import TestSupport
import Testing

/// A cluster of its own (scripts/postgres.sh), for a test that restarts the
/// server: the shared server of DAO_POSTGRES_URL serves other tests meanwhile.
final class OwnCluster {
    let directory: URL
    let url: String

    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "scripts/postgres.sh")
    }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "dao-restart-\(UUID().uuidString)")
        var environment = ProcessInfo.processInfo.environment
        environment["DAO_POSTGRES_DIR"] = directory.path
        environment["DAO_POSTGRES_PORT"] = nil
        let output = try Self.run(["bash", Self.script.path, "postgres"], environment: environment)
        guard let url = output.split(separator: "\n").last.map(String.init), url.hasPrefix("postgres://") else {
            throw StorageError(.io, .open, message: "the cluster did not start: \(output)")
        }
        self.url = url
    }

    /// `pg_ctl` on the cluster (`restart -m immediate`).
    func control(_ arguments: [String]) throws {
        try Self.run([directory.appending(path: "ctl").path] + arguments, environment: ProcessInfo.processInfo.environment)
    }

    deinit {
        do {
            try Self.run(["bash", Self.script.path, "postgres-stop", directory.path], environment: ProcessInfo.processInfo.environment)
        } catch {
            print("the test cluster in \(directory.path) was not stopped: \(error)")
        }
    }

    @discardableResult
    static func run(_ command: [String], environment: [String: String]) throws -> String {
        let result = try runCommand(command, environment: environment)
        guard result.status == 0 else {
            throw StorageError(
                .io, .open, message: "\(command.joined(separator: " ")) failed with status \(result.status): \(result.output)")
        }
        return result.output
    }
}

@Suite(.enabled(if: Server.url != nil, "DAO_POSTGRES_URL names no server"))
struct RestartTests {
    /// The server restarts (`pg_ctl restart -m immediate`: every backend
    /// killed, crash recovery) while a writer runs: the calls in flight fail
    /// with a typed error, the pool reconnects by itself, and every write
    /// that returned is there afterwards.
    @Test func aServerRestartMidRunLosesNothingCommitted() throws {
        let cluster = try OwnCluster()
        var configuration = try PostgresConfiguration(url: cluster.url)
        configuration.schema = "restart"
        configuration.poolSize = 2
        configuration.connectTimeout = .seconds(5)
        let database = try PostgresStore(configuration)
        let gauges = try database.storage(for: GaugeRecord.self)
        let returned = Mutex<[Int64]>([])
        let failures = Mutex<[StorageError]>([])
        let others = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        Thread {
            var id: Int64 = 0
            let deadline = Date().addingTimeInterval(60)
            while !stop.load(ordering: .relaxed), Date() < deadline {
                id += 1
                do {
                    try gauges.persist(GaugeRecord(id: id, label: "g\(id)", reading: Double(id), taken: Date(), note: nil))
                    returned.withLock { $0.append(id) }
                } catch let error as StorageError {
                    failures.withLock { $0.append(error) }
                    Thread.sleep(forTimeInterval: 0.02)
                } catch {
                    others.withLock { $0.append("\(error)") }
                }
            }
            done.signal()
        }.start()
        func waitFor(_ count: Int) {
            let deadline = Date().addingTimeInterval(30)
            while returned.withLock({ $0.count }) < count, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        }
        waitFor(20)
        let beforeRestart = returned.withLock { $0.count }
        try cluster.control(["restart", "-m", "immediate"])
        waitFor(beforeRestart + 40)
        stop.store(true, ordering: .relaxed)
        done.wait()

        let written = returned.withLock { $0 }
        #expect(written.count >= beforeRestart + 40, "the writer did not go on after the restart")
        #expect(others.withLock { $0 }.isEmpty, "untyped errors: \(others.withLock { $0 })")
        // The calls the restart caught failed as lost connections (or a server refusing connections while it recovers).
        let untyped = failures.withLock { $0 }.filter { $0.kind != .io }
        #expect(untyped.isEmpty, "\(untyped.map { "\($0.kind): \($0.message) \($0.context ?? "") \(String(describing: $0.underlying))" })")
        let stored = Set(try gauges.readAll().map(\.id))
        #expect(Set(written).isSubset(of: stored))
        try database.close()
    }
}
