import ArgumentParser
import DAOCore
import Foundation
import StorageBenchKit

/// `storage-bench async-cost`: the `async` form of a DAO call beside its
/// synchronous form, one client (docs/CONCURRENCY.md, "What the async form costs").
struct AsyncCostCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "async-cost",
        abstract: "Time (or, under callgrind, count) read-by-id and persist-single through the DAO, synchronous and awaited.",
        discussion: """
            Each backend gets a fresh store loaded with --dialogs dialogs; then CALLS synchronous reads by \
            key, CALLS awaited ones, CALLS synchronous single persists and CALLS awaited ones, each a region. \
            Under callgrind (scripts/async-cost.sh) every region writes a dump of its instructions; \
            otherwise each region's time per call is printed.
            """
    )

    @Option(help: "Comma-separated DAO backends (\(LoadBackendRegistry.standard.names.joined(separator: ", "))), or all.")
    var backends = "sqlite,lmdb"

    @Option(parsing: .unconditional, help: "Dialogs stored before the regions run (1 to 1000000).")
    var dialogs = 100

    @Option(name: .customLong("messages-per-dialog"), parsing: .unconditional, help: "Messages of each dialog (0 to 10000).")
    var messagesPerDialog = 10

    @Option(parsing: .unconditional, help: "Calls per region (1 to 1000000).")
    var calls = 200

    @Option(help: "full or none.")
    var durability = "none"

    func validate() throws {
        try validating {
            try checkOption("--dialogs", dialogs, in: 1...1_000_000)
            try checkOption("--messages-per-dialog", messagesPerDialog, in: 0...10_000)
            try checkOption("--calls", calls, in: 1...1_000_000)
            _ = try parseDurability(durability)
        }
        _ = try LoadBackendRegistry.standard.select(backends)
    }

    func run() throws {
        let chosen = try LoadBackendRegistry.standard.select(backends)
        let (dialogs, messagesPerDialog, calls) = (dialogs, messagesPerDialog, calls)
        let durability = try validating { try parseDurability(self.durability) }
        let regions = try waitForTask {
            try await AsyncCost.run(
                backends: chosen, dialogs: dialogs, messagesPerDialog: messagesPerDialog, calls: calls,
                durability: durability)
        }
        var lines = ["backend,operation,api,calls,microseconds_per_call"]
        for region in regions {
            lines.append(
                "\(region.backend),\(region.operation),\(region.api),\(region.calls),"
                    + String(format: "%.3f", region.seconds / Double(region.calls) * 1e6))
        }
        print(lines.joined(separator: "\n"))
    }
}
