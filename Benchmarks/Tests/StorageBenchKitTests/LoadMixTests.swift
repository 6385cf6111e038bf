import DAOCore
import DialogGraph
import Foundation
import Testing

@testable import StorageBenchKit

@Suite("Load mixes: the built-in files and refused ones")
struct LoadMixTests {
    /// A valid mix file's fields, to change one at a time.
    static var valid: [String: Any] {
        [
            "name": "mine", "dialogs": 50, "messagesPerDialog": 4,
            "operations": ["read": 0.75, "update": 0.25], "distribution": "uniform", "clients": [1, 2],
        ]
    }

    static func parse(_ object: [String: Any], file: String = "mine.json") throws -> LoadMix {
        try LoadMix.parse(try JSONSerialization.data(withJSONObject: object), file: file)
    }

    static func refusal(_ object: [String: Any]) -> LoadMixError? {
        do {
            _ = try parse(object)
            return nil
        } catch let error as LoadMixError {
            return error
        } catch {
            return LoadMixError(file: "", field: "", reason: "not a LoadMixError: \(error)")
        }
    }

    @Test func theBuiltInMixesHaveYCSBsProportionsAndDistributions() throws {
        let mixes = try LoadMix.select("all")
        #expect(mixes.map(\.name) == LoadMix.builtInNames)
        let byName = Dictionary(uniqueKeysWithValues: mixes.map { ($0.name, $0) })
        #expect(byName["ycsb-a"]?.operations == [.read: 0.5, .update: 0.5])
        #expect(byName["ycsb-b"]?.operations == [.read: 0.95, .update: 0.05])
        #expect(byName["ycsb-c"]?.operations == [.read: 1])
        #expect(byName["ycsb-d"]?.operations == [.read: 0.95, .insert: 0.05])
        #expect(byName["ycsb-d"]?.distribution == .latest)
        #expect(byName["ycsb-e"]?.operations == [.scan: 0.95, .insert: 0.05])
        #expect(byName["ycsb-e"]?.scanLength == 100)
        #expect(byName["ycsb-f"]?.operations == [.read: 0.5, .readModifyWrite: 0.5])
        for name in ["ycsb-a", "ycsb-b", "ycsb-c", "ycsb-e", "ycsb-f"] {
            #expect(byName[name]?.distribution == .zipfian, "\(name)")
            #expect(byName[name]?.zipfianTheta == 0.99, "\(name)")
        }
        let chat = try #require(byName["chat"])
        #expect(chat.operations == [.page: 1])
        #expect(chat.pageSize == 50)
        #expect(chat.writer?.operations == [.append: 1])
        #expect(chat.observers > 0)
    }

    @Test func aValidFileIsRead() throws {
        let mix = try Self.parse(Self.valid)
        #expect(mix.name == "mine")
        #expect(mix.dialogs == 50 && mix.messagesPerDialog == 4)
        #expect(mix.clients == [1, 2])
        #expect(mix.operations == [.read: 0.75, .update: 0.25])
        #expect(mix.seed == 42)
        #expect(mix.targetRate == nil && mix.writer == nil)
    }

    @Test func anUnknownFieldIsRefusedByName() throws {
        var object = Self.valid
        object["thraeds"] = 4
        let error = try #require(Self.refusal(object))
        #expect(error.file == "mine.json")
        #expect(error.field == "thraeds")
        #expect(error.description.contains("mine.json") && error.description.contains("thraeds"))
        var writer = Self.valid
        writer["writer"] = ["operations": ["append": 1], "distribution": "uniform", "rate": 5]
        #expect(Self.refusal(writer)?.field == "writer.rate")
    }

    @Test func proportionsThatDoNotAddUpToOneAreRefused() throws {
        var object = Self.valid
        object["operations"] = ["read": 0.5, "update": 0.25]
        let error = try #require(Self.refusal(object))
        #expect(error.field == "operations")
        #expect(error.reason.contains("0.75"))
        object["operations"] = ["read": 0.9, "update": 0.2]
        #expect(Self.refusal(object)?.field == "operations")
        object["operations"] = ["read": 1.5, "update": -0.5]
        #expect(Self.refusal(object)?.field == "operations.read")
    }

    @Test func anUnknownDistributionIsRefused() throws {
        var object = Self.valid
        object["distribution"] = "pareto"
        let error = try #require(Self.refusal(object))
        #expect(error.field == "distribution")
        #expect(error.reason.contains("pareto") && error.reason.contains("zipfian"))
    }

    @Test func anUnknownOperationIsRefused() throws {
        var object = Self.valid
        object["operations"] = ["read": 0.5, "delete": 0.5]
        let error = try #require(Self.refusal(object))
        #expect(error.field == "operations.delete")
        #expect(error.reason.contains("unknown operation"))
    }

    @Test func zeroClientsAreRefused() throws {
        var object = Self.valid
        object["clients"] = [1, 0]
        let error = try #require(Self.refusal(object))
        #expect(error.field == "clients[1]")
        object["clients"] = [Int]()
        #expect(Self.refusal(object)?.field == "clients")
    }

    @Test func wrongTypesAndMissingFieldsAreRefusedByName() {
        var object = Self.valid
        object["dialogs"] = "many"
        #expect(Self.refusal(object)?.field == "dialogs")
        object = Self.valid
        object["dialogs"] = true
        #expect(Self.refusal(object)?.field == "dialogs")
        object = Self.valid
        object.removeValue(forKey: "operations")
        #expect(Self.refusal(object)?.field == "operations")
        object = Self.valid
        object["zipfianTheta"] = 1.0
        #expect(Self.refusal(object)?.field == "zipfianTheta")
        #expect((try? LoadMix.parse(Data("[1]".utf8), file: "list.json")) == nil)
    }

    @Test func aMixFileIsReadFromDisk() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("load-mix-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("mine.json")
        try JSONSerialization.data(withJSONObject: Self.valid).write(to: url)
        #expect(try LoadMix.select(url.path).map(\.name) == ["mine"])
        var bad = Self.valid
        bad["operations"] = ["read": 2]
        try JSONSerialization.data(withJSONObject: bad).write(to: url)
        #expect(throws: LoadMixError.self) { try LoadMix.select(url.path) }
        #expect(throws: LoadMixError.self) { try LoadMix.select("ycsb-z") }
    }
}

@Suite("Key choice: YCSB's zipfian, scrambled and latest generators")
struct KeyChooserTests {
    @Test func zipfianItemsFollowTheirProbabilities() {
        let items: Int64 = 100
        let generator = ZipfianGenerator(items: items, theta: 0.99)
        var random = SplitMix64(seed: 7)
        var counts = [Int](repeating: 0, count: Int(items))
        let draws = 200_000
        for _ in 0..<draws {
            let unit = Double(random.next() >> 11) * 0x1p-53
            counts[Int(generator.item(unit: unit))] += 1
        }
        let zeta = (1...items).reduce(0.0) { $0 + 1 / pow(Double($1), 0.99) }
        // Items 0 and 1 are exact in Gray's method; the rest approximate.
        for item in 0..<2 {
            let expected = 1 / pow(Double(item + 1), 0.99) / zeta
            let observed = Double(counts[item]) / Double(draws)
            #expect(abs(observed - expected) < 0.01, "item \(item): \(observed) vs \(expected)")
        }
        #expect(counts[0] > counts[1] && counts[1] > counts[5] && counts[5] > counts[50])
    }

    @Test func theSameSeedChoosesTheSameDialogs() {
        for distribution in KeyDistribution.allCases {
            var a = KeyChooser(distribution: distribution, count: 1000, theta: 0.99)
            var b = KeyChooser(distribution: distribution, count: 1000, theta: 0.99)
            var ra = SplitMix64(seed: 3)
            var rb = SplitMix64(seed: 3)
            let first = (0..<500).map { _ in a.next(&ra, latest: 1000) }
            let second = (0..<500).map { _ in b.next(&rb, latest: 1000) }
            #expect(first == second, "\(distribution)")
            #expect(first.allSatisfy { (1...1000).contains($0) }, "\(distribution)")
        }
    }

    @Test func scrambledZipfianHasHotDialogsSpreadOverTheKeys() {
        var chooser = KeyChooser(distribution: .zipfian, count: 1000, theta: 0.99)
        var random = SplitMix64(seed: 11)
        var counts: [Int64: Int] = [:]
        for _ in 0..<100_000 { counts[chooser.next(&random, latest: 1000), default: 0] += 1 }
        let hottest = counts.sorted { $0.value > $1.value }.prefix(10).map(\.key)
        // The ten hottest take far more than the 1% they would take uniformly
        // (YCSB's ten hottest items of 10¹⁰ take about 11%), and are not 1…10.
        let share = Double(hottest.reduce(0) { $0 + (counts[$1] ?? 0) }) / 100_000
        #expect(share > 0.08, "\(share)")
        #expect(Set(hottest) != Set(1...10))
        #expect(KeyChooser.hottest(5, distribution: .zipfian, count: 1000).first == hottest.first)
    }

    @Test func latestPrefersTheNewestDialogs() {
        var chooser = KeyChooser(distribution: .latest, count: 1000, theta: 0.99)
        var random = SplitMix64(seed: 5)
        var newest = 0
        for _ in 0..<10_000 where chooser.next(&random, latest: 1200) > 1150 { newest += 1 }
        // 50 of 1200 dialogs (4%) get far more than 4% of the reads.
        #expect(newest > 5000, "\(newest)")
        var sawGrowth = false
        for _ in 0..<1000 where chooser.next(&random, latest: 1300) > 1200 { sawGrowth = true }
        #expect(sawGrowth)
    }
}

@Suite("Load runs: DAO backends under a mix")
struct LoadRunTests {
    static func mix(_ operations: [String: Double], distribution: String = "uniform", extra: [String: Any] = [:]) throws -> LoadMix {
        var object: [String: Any] = [
            "name": "test", "dialogs": 40, "messagesPerDialog": 6, "operations": operations,
            "distribution": distribution, "scanLength": 4, "pageSize": 3,
        ]
        for (key, value) in extra { object[key] = value }
        return try LoadMix.parse(try JSONSerialization.data(withJSONObject: object), file: "test.json")
    }

    static func run(_ mix: LoadMix, backends: [String], clients: [Int], operations: Int?, rate: Double? = nil, duration: Double? = nil) async throws -> [LoadRunResult] {
        let chosen = try LoadBackendRegistry.standard.select(backends.joined(separator: ","))
        return await LoadSweep.run(
            LoadSweepOptions(
                mixes: [mix], backends: chosen, clients: clients, durationSeconds: duration, operationCount: operations,
                targetRate: rate, warmupSeconds: 0, durability: .none),
            progress: { _ in })
    }

    /// Every operation, on every DAO backend, with a fixed number of
    /// operations: each backend counts the same operations and reads and
    /// writes the same rows (the seed fixes every choice). Two mixes, so that
    /// no count depends on how clients interleave: appends change what a
    /// dialog read returns, so they run beside pages and scans that read
    /// fewer messages than any dialog holds.
    @Test(arguments: [
        ["read": 0.4, "update": 0.2, "scan": 0.2, "read-modify-write": 0.2],
        ["page": 0.5, "scan": 0.3, "append": 0.2],
    ])
    func everyBackendDoesTheSameWork(_ operations: [String: Double]) async throws {
        let mix = try Self.mix(operations)
        let results = try await Self.run(mix, backends: ["json", "plist", "sqlite", "lmdb"], clients: [1, 3], operations: 300)
        #expect(results.count == 8)
        for result in results {
            #expect(result.failure == nil, "\(result.backend): \(result.failure ?? "")")
            let all = try #require(result.all)
            #expect(all.operations == 300, "\(result.backend) \(result.clients)")
            #expect(all.errors == 0, "\(result.backend): \(all.firstError ?? "")")
            #expect(all.throughput > 0 && all.p50 > 0 && all.p99 >= all.p50 && all.max >= all.p999)
            #expect(Set(result.figures.map(\.operation)) == Set(operations.keys).union(["all"]))
            #expect(all.intendedP99 == nil)
        }
        for clients in [1, 3] {
            let runs = results.filter { $0.clients == clients }
            for operation in Array(operations.keys) + ["all"] {
                let rows = runs.map { $0.figures.first { $0.operation == operation }?.rows ?? -1 }
                #expect(Set(rows).count == 1, "\(operation) at \(clients): \(rows)")
            }
        }
        // A scan reads up to scanLength (4) of a dialog's 6 messages.
        let scan = try #require(results[0].figures.first { $0.operation == "scan" })
        #expect(scan.rows == scan.operations * 4)
    }

    @Test func insertsTakeNewIdsAndLatestReadsThem() async throws {
        let mix = try Self.mix(["read": 0.5, "insert": 0.5], distribution: "latest")
        let results = try await Self.run(mix, backends: ["sqlite", "lmdb"], clients: [2], operations: 200)
        for result in results {
            let all = try #require(result.all)
            #expect(all.errors == 0, "\(result.backend): \(all.firstError ?? "")")
            let insert = try #require(result.figures.first { $0.operation == "insert" })
            #expect(insert.rows == insert.operations * 7)
        }
    }

    @Test func aTargetRateGivesLatenciesFromTheIntendedStart() async throws {
        let mix = try Self.mix(["read": 1])
        let results = try await Self.run(mix, backends: ["lmdb"], clients: [2], operations: 100, rate: 1000)
        let all = try #require(results.first?.all)
        let intended = try #require(all.intendedP99)
        #expect(intended >= all.p50)
        #expect(try #require(all.intendedMax) >= all.max * 0.99)
        // 100 operations at 1000/s take about 0.1 s, not as fast as they can.
        #expect(try #require(results.first).seconds >= 0.09)
    }

    @Test func aDurationRunStopsOnTime() async throws {
        let mix = try Self.mix(["read": 0.9, "update": 0.1])
        let results = try await Self.run(mix, backends: ["sqlite"], clients: [2], operations: nil, duration: 0.3)
        let result = try #require(results.first)
        #expect(result.seconds >= 0.3 && result.seconds < 2, "\(result.seconds)")
        #expect((result.all?.operations ?? 0) > 0)
    }

    /// The chat mix: the writer appends beside the readers' pages. (Its
    /// observers' snapshots arrive on Swift's cooperative pool, which the
    /// test runner's parallel tests can hold for longer than a run lasts:
    /// scripts/check-load-csv.py checks them in CI's load run instead.)
    @Test func theChatMixsWriterAppendsBesideTheReaders() async throws {
        let mix = try Self.mix(
            ["page": 1], distribution: "zipfian",
            extra: ["writer": ["operations": ["append": 1], "distribution": "zipfian"], "observers": 3])
        let results = try await Self.run(mix, backends: ["sqlite", "lmdb"], clients: [2], operations: 200)
        for result in results {
            #expect(result.all?.errors == 0, "\(result.all?.firstError ?? "")")
            #expect(result.figures.first { $0.operation == "page" }?.operations == 200)
            // The writer runs as many operations as one client.
            #expect(result.figures.first { $0.operation == "append" }?.operations == 100)
            #expect(result.observerSnapshots != nil)
        }
    }

    @Test func theReportHasARowPerOperationAndFitsTheTerminal() async throws {
        let mix = try Self.mix(["read": 0.5, "update": 0.5])
        let results = try await Self.run(mix, backends: ["json", "lmdb"], clients: [1, 2], operations: 50)
        let rows = LoadReport.rows(results)
        #expect(rows.count == 2 * 2 * 3)
        let csv = try CSV.parse(LoadReport.csv(rows))
        #expect(csv.first == LoadReportRow.header)
        #expect(csv.count == rows.count + 1)
        #expect(csv.dropFirst().allSatisfy { $0.count == LoadReportRow.header.count })
        let summary = LoadReport.summaryLegend + LoadReport.summary(rows)
        for line in summary.split(separator: "\n") { #expect(line.count <= 100, "\(line)") }
        #expect(summary.contains("lmdb") && summary.contains("json"))
        let detailed = LoadReport.detailed(rows)
        for line in detailed.split(separator: "\n") { #expect(line.count <= 100, "\(line)") }
        #expect(detailed.contains("read") && detailed.contains("update"))
        let json = try LoadReport.json(rows)
        #expect(json.contains("\"throughputPerSecond\""))
    }

    @Test func eachYCSBMixTakesOneTitleLineAtLargeSizes() async throws {
        // make bench's screen counts on one line per mix title: at D=100,000 ×
        // M=100, durability full and a 10-second run, each YCSB mix's title fits
        // in 100 columns (the chat mix, with its writer and observers, wraps).
        let mix = try Self.mix(["read": 0.5, "update": 0.5])
        let results = try await Self.run(mix, backends: ["lmdb"], clients: [1, 2], operations: 20)
        let template = LoadReport.rows(results)
        var rows: [LoadReportRow] = []
        for builtIn in try LoadMix.select("all") where builtIn.name.hasPrefix("ycsb-") {
            rows += template.map { row in
                var row = row
                row.mix = builtIn.name
                row.mixDescription = builtIn.proportionsDescription
                row.dialogs = 100_000
                row.messagesPerDialog = 100
                row.durability = "full"
                row.seconds = 10.25
                return row
            }
        }
        let summary = LoadReport.summary(rows)
        for name in LoadMix.builtInNames where name.hasPrefix("ycsb-") {
            let titles = summary.split(separator: "\n").filter { $0.hasPrefix("\(name) (") }
            #expect(titles.count == 1, "\(name): \(titles)")
            #expect(titles.allSatisfy { $0.count <= 100 && $0.hasSuffix(", 10.2 s") }, "\(titles)")
        }
        #expect(summary.split(separator: "\n").allSatisfy { $0.count <= 100 })
    }

    @Test func aBackendThatFailsIsCountedAndTheOthersRun() async throws {
        let mix = try Self.mix(["read": 1])
        let failing = LoadBackend(name: "broken") { _, _ in
            throw StorageError(.engine, .open, message: "this backend always fails to open")
        }
        let working = try LoadBackendRegistry.standard.select("lmdb")
        let results = await LoadSweep.run(
            LoadSweepOptions(
                mixes: [mix], backends: [failing] + working, clients: [1], durationSeconds: nil, operationCount: 20,
                targetRate: nil, warmupSeconds: 0, durability: .none),
            progress: { _ in })
        #expect(results.count == 2)
        #expect(results[0].failure?.contains("always fails") == true)
        #expect(results[0].errorCount == 1)
        #expect(results[1].all?.operations == 20)
    }
}
