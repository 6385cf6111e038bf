import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What ``runCommand(_:environment:)`` saw: the exit status and the standard output.
public struct CommandResult: Sendable {
    /// The exit status, or 128 + the signal that ended the command.
    public let status: Int32
    /// Everything the command wrote to its standard output.
    public let output: String
}

/// Runs `arguments` (looked up on `PATH`) to its end, with standard error
/// passed through, and returns its status and standard output.
///
/// Spawned and reaped with `posix_spawnp` and `waitpid` rather than
/// Foundation's `Process`, whose `waitUntilExit()` on Linux can miss the exit
/// of a child that started a daemon (a `pg_ctl start`), leaving the caller
/// waiting on a zombie. The command gets standard input and error and a pipe
/// for its output, and no other file descriptor of this process.
/// - Throws: `POSIXError` when the command cannot be started.
public func runCommand(_ arguments: [String], environment: [String: String]) throws -> CommandResult {
    var pipe: [Int32] = [0, 0]
    guard Glibc.pipe(&pipe) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
    // Nothing else of this process reaches the command: a daemon it starts
    // would otherwise hold this process's sockets open (its connections to
    // that very server) for as long as the daemon runs.
    // Without /proc (not Linux) the command inherits what is not close-on-exec.
    let open: [String]
    do {
        open = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
    } catch {
        open = []
    }
    for descriptor in open.compactMap({ Int32($0) }) where descriptor > 2 {
        posix_spawn_file_actions_addclose(&actions, descriptor)
    }
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
    }
    var pid: pid_t = 0
    let spawned = posix_spawnp(&pid, arguments[0], &actions, nil, argv, envp)
    close(pipe[1])
    guard spawned == 0 else {
        close(pipe[0])
        throw POSIXError(.init(rawValue: spawned) ?? .EIO)
    }
    var output = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(pipe[0], &buffer, buffer.count)
        if count > 0 {
            output += buffer[..<count]
        } else if count == 0 || errno != EINTR {
            break
        }
    }
    close(pipe[0])
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 {
        guard errno == EINTR else { throw POSIXError(.init(rawValue: errno) ?? .ECHILD) }
    }
    // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as functions.
    let signal = status & 0x7f
    let exitStatus = signal == 0 ? (status >> 8) & 0xff : 128 + signal
    return CommandResult(status: exitStatus, output: String(decoding: output, as: UTF8.self))
}
