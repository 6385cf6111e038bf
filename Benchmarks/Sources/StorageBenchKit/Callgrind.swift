import Foundation

/// Runs a worker under valgrind's callgrind and reads back, for each operation,
/// the instructions executed and the allocations made inside its timed regions.
///
/// The worker writes a dump at both edges of each timed region
/// (``TimedRegion``): the one at its end, described by the operation's name,
/// holds the region's costs; the one at its start holds everything since the
/// last region and is skipped. Everything outside the timed regions
/// (generating the data, the correctness checks, the process's start and
/// end) is not counted, neither its instructions nor its allocations. The counts do not depend on the machine's load, only on the code,
/// the libraries and the processor's instruction set; hashing is made
/// deterministic (`SWIFT_DETERMINISTIC_HASHING=1`) and the worker's
/// environment is the same whoever starts it (``environment(from:)``), so
/// that two runs of the same binary count the same.
public struct Callgrind: Sendable {
    /// The `valgrind` program.
    public let valgrind: URL
    /// The worker program to run under it instead of the executor's, or `nil`
    /// for the executor's own (see ``prepare(executable:in:)``).
    public let program: URL?

    /// Callgrind run by `valgrind`, on `program` (or the executor's program).
    public init(valgrind: URL, program: URL? = nil) {
        self.valgrind = valgrind
        self.program = program
    }

    /// Finds valgrind and writes a copy of `executable` without its debug
    /// information into `directory`, to run under callgrind: valgrind 3.19 (the
    /// one of Debian 12) cannot read the DWARF 5 of recent Swift toolchains and
    /// gives up, and instruction counts do not depend on debug information.
    /// - Throws: ``ConfigurationError`` when valgrind or objcopy is missing or the copy fails.
    public static func prepare(executable: URL, in directory: URL) throws -> Callgrind {
        let valgrind = try find()
        guard let objcopy = findProgram(["objcopy", "llvm-objcopy"]) else {
            throw ConfigurationError(
                "--instructions needs objcopy (binutils) to strip the worker's debug information; "
                    + "install it with `scripts/setup.sh instructions`")
        }
        let copy = directory.appendingPathComponent("storage-bench-worker")
        let process = Process()
        process.executableURL = objcopy
        process.arguments = ["--strip-debug", executable.path, copy.path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw ConfigurationError("\(objcopy.path) --strip-debug \(executable.path) failed with status \(process.terminationStatus)")
        }
        return Callgrind(valgrind: valgrind.valgrind, program: copy)
    }

    /// The allocator entry points whose calls are counted as allocations.
    public static let allocators: Set<String> = [
        "malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign", "valloc",
        "pvalloc",
    ]

    /// Finds `valgrind` on `PATH`.
    /// - Throws: ``ConfigurationError`` when it is not installed.
    public static func find() throws -> Callgrind {
        guard let valgrind = findProgram(["valgrind"]) else {
            throw ConfigurationError(
                "--instructions needs valgrind, which is not on PATH; install it with `scripts/setup.sh instructions`")
        }
        return Callgrind(valgrind: valgrind)
    }

    /// The first of `names` found on `PATH`.
    static func findProgram(_ names: [String]) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for name in names {
            for directory in path.split(separator: ":") {
                let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            }
        }
        return nil
    }

    /// Whether this binary can count instructions: it was built with valgrind's
    /// headers (`valgrind/callgrind.h`), so its client requests are real.
    public static var isBuiltIn: Bool { TimedRegion.canCountInstructions }

    /// The valgrind arguments that run a program writing its dumps to `outputBase`.N.
    func arguments(outputBase: URL) -> [String] {
        [
            "--tool=callgrind", "--collect-atstart=yes", "--compress-strings=no", "--compress-pos=no",
            "--callgrind-out-file=\(outputBase.path)",
            // valgrind's own messages would mix with the worker's progress.
            "--log-file=\(outputBase.path)-valgrind.log",
        ]
    }

    /// The environment of a worker under callgrind: deterministic hashing,
    /// the caller's `TMPDIR` (where the stores are made) and the PostgreSQL
    /// server's URL (`DAO_POSTGRES_URL`, which registers the server
    /// backends), nothing else.
    ///
    /// Not the caller's whole environment: the process's start copies every
    /// variable onto its stack and into its heap (Foundation's
    /// `ProcessInfo`, the argument parser), so the allocator's free lists
    /// and the buffers' alignments when the workload starts follow the
    /// environment's size, and with them the instructions `malloc` and
    /// `memcpy` execute inside the timed regions. One variable 86
    /// characters longer moved GRDB's `query` by 0.19% and its `erase-all`
    /// by 0.30%, while the same environment gave the same count to the
    /// instruction; two shells (another working directory, another `PATH`,
    /// `make`'s variables) would count differently for the same code.
    /// The working directory is fixed too (``workingDirectory``).
    static func environment(
        from parent: [String: String] = ProcessInfo.processInfo.environment
    ) -> [String: String] {
        var environment = ["SWIFT_DETERMINISTIC_HASHING": "1"]
        if let temporary = parent["TMPDIR"] { environment["TMPDIR"] = temporary }
        if let server = parent["DAO_POSTGRES_URL"] { environment["DAO_POSTGRES_URL"] = server }
        return environment
    }

    /// The working directory of a worker under callgrind: `/`, whatever the
    /// caller's. The process's start keeps its path as well; started from
    /// a directory with a longer path, GRDB's `erase-all` counted 0.25%
    /// more instructions with everything else the same.
    static let workingDirectory = URL(fileURLWithPath: "/", isDirectory: true)

    /// The costs of one dump.
    public struct Dump: Sendable, Hashable {
        /// The dump's description: the operation's name for a dump the worker
        /// asked for, or callgrind's own trigger text.
        public var name: String
        /// Instructions executed (`Ir`).
        public var instructions: Int64
        /// Calls to ``allocators``.
        public var allocations: Int64
    }

    /// Parses one callgrind output file (written with `--compress-strings=no`).
    /// - Throws: ``ConfigurationError`` when it has no totals line.
    public static func parse(_ text: String) throws -> Dump {
        var name = ""
        var instructions: Int64?
        var allocations: Int64 = 0
        var eventIndex = 0
        var calleeIsAllocator = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("cfn=") {
                // Names the callee of the next `calls=` line.
                calleeIsAllocator = allocators.contains(functionName(line.dropFirst(4)))
            } else if line.hasPrefix("fn=") {
                calleeIsAllocator = false
            } else if line.hasPrefix("calls=") {
                if calleeIsAllocator, let count = Int64(line.dropFirst(6).prefix { $0 != " " }) {
                    allocations += count
                }
            } else if line.hasPrefix("desc: Trigger: ") {
                let trigger = line.dropFirst("desc: Trigger: ".count)
                let request = "Client Request: "
                name = trigger.hasPrefix(request) ? String(trigger.dropFirst(request.count)) : String(trigger)
            } else if line.hasPrefix("events:") {
                let events = line.dropFirst("events:".count).split(separator: " ")
                eventIndex = events.firstIndex(of: "Ir") ?? 0
            } else if line.hasPrefix("totals:") || line.hasPrefix("summary:") {
                let values = line.split(separator: " ").dropFirst()
                if let value = values.dropFirst(eventIndex).first.flatMap({ Int64($0) }) { instructions = value }
            }
        }
        guard let instructions else { throw ConfigurationError("a callgrind dump has no totals line") }
        return Dump(name: name, instructions: instructions, allocations: allocations)
    }

    /// A function name from a `cfn=` line, without callgrind's `'2` recursion
    /// suffix or a `@@GLIBC` version.
    static func functionName(_ text: Substring) -> String {
        var name = text.trimmingCharacters(in: .whitespaces)
        if let quote = name.firstIndex(of: "'") { name = String(name[..<quote]) }
        if let at = name.firstIndex(of: "@") { name = String(name[..<at]) }
        return name
    }

    /// Reads every dump callgrind wrote to `outputBase`.N and returns the
    /// instructions and allocations of each operation that has one: the sum
    /// of its dumps (one per timed region). Dumps of other names (the costs
    /// between regions, ``TimedRegion/gapDumpName``) are skipped.
    /// - Throws: when a dump cannot be read or parsed.
    static func readDumps(outputBase: URL) throws -> [String: Dump] {
        let directory = outputBase.deletingLastPathComponent()
        let prefix = outputBase.lastPathComponent + "."
        var dumps: [String: Dump] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasPrefix(prefix) {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            let dump = try parse(text)
            guard BenchOperation(rawValue: dump.name) != nil else { continue }
            if var sum = dumps[dump.name] {
                sum.instructions += dump.instructions
                sum.allocations += dump.allocations
                dumps[dump.name] = sum
            } else {
                dumps[dump.name] = dump
            }
        }
        return dumps
    }
}
